"""Every model training accepts saves and loads back, or training refuses its parameters at
the start (``docs/reliability.md``): the limits a model file holds (``MAX_TREES`` trees,
``MAX_TREE_BYTES`` of trees) are checked for the largest model the parameters allow before
the first tree is grown.

The property test lowers both limits so that models of small data reach them: training
either refuses at the start, naming the parameters, or gives a model within them that saves
and loads back predicting bit-identically.
"""
from __future__ import annotations

import time
from typing import Any, List

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from boostlib import BoostRegressor, Dataset, Model, load_model, train
from boostlib.engine import params as engine_params
from boostlib.engine.callbacks import Callback
from boostlib.engine.trees import TreeGroup, kind_of


class _Began(Callback):
    """Records whether training reached its first iteration."""

    def __init__(self) -> None:
        self.began = False

    def on_fit_begin(self, info: Any) -> None:
        self.began = True


def _scalar_trees(model: Model) -> List[Any]:
    return [s for t in model.ensemble.trees for s in (t.trees if isinstance(t, TreeGroup)
                                                      else [t])]


def _tree_bytes(model: Model) -> int:
    """Bytes of the model's trees in a model file, from the arrays' sizes and the types
    ``docs/model_files.md`` gives the fields (int32, uint8 ``nan_right``, float64)."""
    total = 0
    for tree in _scalar_trees(model):
        for field in kind_of(tree.policy).fields:
            arr = getattr(tree, field)
            if arr is not None:
                total += arr.size * (1 if field == "nan_right" else
                                     8 if field in ("gain", "value", "cover",
                                                    "linear_weight", "linear_mean") else 4)
    return total


def _data(n_rows: int, n_classes: int, categorical: bool):
    rng = np.random.default_rng(n_rows)
    X = rng.normal(size=(n_rows, 3))
    X[rng.random(X.shape) < 0.05] = np.nan
    if categorical:
        X[:, 2] = rng.integers(0, 40, n_rows)
    score = np.nan_to_num(X[:, 0]) + np.sin(3 * np.nan_to_num(X[:, 1])) \
        + 0.3 * rng.normal(size=n_rows)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1])) \
        if n_classes else score
    return X, y.astype(np.float64)


_PARAMS = st.fixed_dictionaries({
    "grow_policy": st.sampled_from(["symmetric", "depthwise", "lossguide"]),
    "max_depth": st.integers(1, 30),
    "max_leaves": st.sampled_from([2, 7, 31, 300, 5000]),
    "n_estimators": st.integers(1, 12),
    "min_samples_leaf": st.sampled_from([1, 2, 5, 40]),
    "update": st.sampled_from(["sgb", "sglb", "agbm"]),
    "subsample": st.sampled_from([1.0, 0.6]),
    "learning_rate": st.sampled_from([0.1, 0.5]),
    "linear_leaves": st.booleans(),
})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=_PARAMS, n_rows=st.sampled_from([30, 150, 400]),
       n_classes=st.sampled_from([0, 0, 3]), categorical=st.booleans(),
       max_tree_bytes=st.one_of(st.none(), st.integers(1 << 9, 1 << 21)),
       max_trees=st.sampled_from([6, 30, None]))
def test_training_refuses_at_the_start_or_gives_a_model_that_saves(
        tmp_path_factory, params, n_rows, n_classes, categorical, max_tree_bytes, max_trees):
    params = dict(params, random_state=0, n_jobs=1)
    if params["grow_policy"] == "symmetric":
        params["max_depth"] = min(params["max_depth"], 12)     # 2**depth leaves each
    if params["grow_policy"] != "lossguide":
        del params["max_leaves"]
    if n_classes:
        params["loss"] = "multiclass"
    X, y = _data(n_rows, n_classes, categorical)
    began = _Began()
    with pytest.MonkeyPatch.context() as patch:
        if max_tree_bytes is not None:
            patch.setattr(engine_params, "MAX_TREE_BYTES", max_tree_bytes)
        if max_trees is not None:
            patch.setattr(engine_params, "MAX_TREES", max_trees)
        limit_bytes, limit_trees = engine_params.MAX_TREE_BYTES, engine_params.MAX_TREES
        try:
            model = train(params, Dataset(X, y, categorical_features=[2] if categorical
                                          else None), callbacks=[began])
        except ValueError as exc:
            assert not began.began, f"refused after training began: {exc}"
            assert str(exc).startswith(f"n_estimators={params['n_estimators']}"), str(exc)
            event("refused at the start")
            return
    event("saved and loaded back")
    assert len(_scalar_trees(model)) <= limit_trees
    assert _tree_bytes(model) <= limit_bytes
    path = tmp_path_factory.mktemp("model") / "model.json"
    model.save(path)
    loaded = Model.load(path)
    assert np.array_equal(loaded.predict(X, raw=True), model.predict(X, raw=True))


def test_item_2_is_refused_at_the_start_naming_its_parameters():
    """Issue 54, item 2: ``max_depth=16`` symmetric trees hold 65,536 leaves (1 MiB) each, so
    700 of them exceed the 640 MiB of trees a model file holds: refused before any tree is
    grown, naming the parameters (600 of them fit, and save)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 20))
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"n_estimators=700 symmetric trees \(max_depth=16: "
                                         r"65536 leaves, 1 MiB each\) could take 700.2 MiB, "
                                         r"more than a model file holds \(MAX_TREE_BYTES = "
                                         r"640 MiB of trees\): lower n_estimators or "
                                         r"max_depth"):
        BoostRegressor(max_depth=16, n_estimators=700, max_bins=32).fit(X, X[:, 0])
    assert time.perf_counter() - start < 5.0


def test_trees_of_many_categorical_splits_save_and_load(tmp_path):
    """A leaf-wise tree of more than 256 categorical splits names sets beyond 255 (a split's
    ``bin`` is the index of its set): the loader held every ``bin`` to 255, so such a model
    trained, and could not be saved."""
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 250, size=(3000, 2))
    effect = rng.normal(size=(2, 250))
    y = effect[0][codes[:, 0]] * effect[1][codes[:, 1]]
    model = BoostRegressor(n_estimators=1, grow_policy="lossguide", max_leaves=3000,
                           max_depth=30, categorical_features=[0, 1], min_data_per_group=1,
                           cat_smooth=0.0, cat_l2=0.0, max_cat_threshold=255,
                           random_state=0).fit(codes.astype(float), y)
    tree = model.model_.ensemble.trees[0]
    assert tree.cat_sets.shape[0] > 256
    model.save_model(tmp_path / "m.json")
    X = codes.astype(float)
    assert np.array_equal(load_model(tmp_path / "m.json").predict(X), model.predict(X))


#: The most bytes of JSON around one tree's blocks in a model file: the keys and quotes of
#: a depthwise tree (106), base64 padding (up to 3 characters for each of its 9 blocks), its
#: term's coefficient (25: "-1.2345678901234567e-308,"), scale-history entry (34) and
#: ``{"outputs":[]},`` (15)
TREE_JSON = 106 + 27 + 25 + 34 + 15


@pytest.mark.parametrize("params", [
    dict(grow_policy="depthwise", loss="multiclass", update="sglb"),
    dict(grow_policy="symmetric", max_depth=2),
    dict(grow_policy="lossguide", max_leaves=5, update="agbm"),
])
def test_the_trees_a_model_may_have_leave_room_in_a_file(params):
    """``MAX_TREE_BYTES`` keeps the file of every model training accepts within
    ``MAX_FILE_BYTES``: the trees' blocks (4/3 of their bytes in base64) and at most
    ``TREE_JSON`` bytes around each tree leave 64 MiB for the rest of the file (borders,
    names, labels, parameters, curves)."""
    from boostlib.io import model_files

    X, y = _data(150, 3 if params.get("loss") == "multiclass" else 0, True)
    model = train({**params, "n_estimators": 8, "random_state": 0},
                  Dataset(X, y, categorical_features=[2]))
    part = model_files.model_document(model)["model"]
    text = model_files.encode({k: part[k] for k in ("trees", "coefficients", "scale_history")})
    assert len(text) <= 4 / 3 * _tree_bytes(model) + TREE_JSON * len(_scalar_trees(model))
    assert 4 / 3 * engine_params.MAX_TREE_BYTES + TREE_JSON * engine_params.MAX_TREES \
        <= model_files.MAX_FILE_BYTES - (64 << 20)
