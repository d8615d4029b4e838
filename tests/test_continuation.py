"""Continued training (issue 27): ``train(..., init_model=)`` and the estimators'
``warm_start``.

What is promised (``docs/training_controls.md``):

* continuing a fit of ``n`` iterations by ``m`` gives the model of one fit of ``n + m``,
  bit for bit (trees, coefficients, predictions, validation curves) for ``sgb``, and, with
  an int ``random_state`` and the model in memory, also with sampling, column sampling and
  split noise: the random streams go on from where the first fit left them;
* a model read from a file does not carry its streams: its continuation draws new ones (the
  same every time, never the first fit's again);
* ``sglb`` continues its shrink schedule and scale history (equal to one fit up to the
  rounding of the starting scores); the accelerated rules restart their momentum (``agbm``
  continued = ``agbmr`` restarting where the first fit ended);
* the model's bin borders, tree kind and loss are kept; mismatches are refused by name;
* ``best_iteration`` counts every iteration, ``evals_result`` holds the new ones only.
"""
import dataclasses
import io

import numpy as np
import pytest

from optional_imports import importorskip

from boostlib import (BoostClassifier, BoostRanker, BoostRegressor, Dataset, Model,
                      train)
from boostlib.api import Sampler
from boostlib.callbacks import ProgressBar
from boostlib.engine.params import DEFAULTS
from boostlib.engine.trees import GROW_POLICIES

POLICIES = tuple(GROW_POLICIES)          # symmetric, depthwise, lossguide


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.03] = np.nan
    Z = np.nan_to_num(X)
    y = 2 * Z[:, 0] - Z[:, 1] ** 2 + Z[:, 2] * Z[:, 3] + 0.1 * rng.normal(size=n)
    return X, y


X, Y = _data()
XV, YV = _data(150, seed=1)
Y_BIN = (Y > np.median(Y)).astype(float)
YV_BIN = (YV > np.median(Y)).astype(float)
Y_MULTI = np.digitize(Y, np.quantile(Y, [0.3, 0.6])).astype(float)
YV_MULTI = np.digitize(YV, np.quantile(Y, [0.3, 0.6])).astype(float)
TARGETS = {"mse": (Y, YV), "logloss": (Y_BIN, YV_BIN), "multiclass": (Y_MULTI, YV_MULTI)}

#: randomness every continuation must carry on exactly (with an int random_state, in memory)
RANDOM = {"subsample": {"subsample": 0.6}, "goss": {"sampler": "goss", "subsample": 0.5},
          "mvs": {"sampler": "mvs", "subsample": 0.5}, "noise": {"random_strength": 1.0}}
if "colsample_bytree" in DEFAULTS:
    RANDOM["colsample"] = {"colsample_bytree": 0.6, "colsample_bynode": 0.8}


def _params(policy="symmetric", loss="mse", **extra):
    return {"grow_policy": policy, "max_depth": 3, "loss": loss, "random_state": 0, **extra}


def _sets(loss, valid=True):
    y, yv = TARGETS[loss]
    train_set = Dataset(X, y)
    return train_set, ([Dataset(XV, yv, reference=train_set)] if valid else [])


def _fit(n, loss="mse", policy="symmetric", init_model=None, valid=True, **extra):
    """A fit of ``n`` iterations, on fresh Datasets (nothing cached between fits)."""
    train_set, valid_sets = _sets(loss, valid)
    return train({**_params(policy, loss, **extra), "n_estimators": n}, train_set,
                 valid_sets=valid_sets, init_model=init_model)


def _trees_equal(a, b):
    if len(a) != len(b):
        return False
    for s, t in zip(a, b):
        for f in dataclasses.fields(s):
            x, y = getattr(s, f.name), getattr(t, f.name)
            same = np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
            if not same:
                return False
    return True


def assert_same_model(a: Model, b: Model):
    """Bit for bit: trees, coefficients, bias, scale history and predictions."""
    assert a.n_trees == b.n_trees
    assert _trees_equal(a.ensemble.scalar_trees(), b.ensemble.scalar_trees())
    assert np.array_equal(a.ensemble.coef, b.ensemble.coef)
    assert np.array_equal(np.atleast_1d(a.ensemble.bias), np.atleast_1d(b.ensemble.bias))
    assert a.ensemble.scale_history == b.ensemble.scale_history
    assert np.array_equal(a.predict(XV, raw=True), b.predict(XV, raw=True))


# -- SGB: bit for bit -------------------------------------------------------------------------
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("loss", list(TARGETS))
def test_sgb_continuation_is_one_fit_bit_for_bit(loss, policy):
    whole = _fit(12, loss, policy)
    first = _fit(5, loss, policy)
    more = _fit(7, loss, policy, init_model=first)
    assert_same_model(more, whole)
    assert more.n_iterations == whole.n_iterations == 12
    # the validation curves go on exactly; evals_result holds the new iterations only
    for name, curve in whole.evals_result["valid_0"].items():
        assert more.evals_result["valid_0"][name] == curve[5:]
    assert more.evals_result["train"][loss] == whole.evals_result["train"][loss][5:]
    assert more.best_iteration == whole.best_iteration
    # the model continued is left as it was
    assert first.n_trees == 5 and first.n_iterations == 5


@pytest.mark.parametrize("policy", POLICIES)
def test_continuation_of_a_continuation(policy):
    whole = _fit(9, "logloss", policy)
    a = _fit(3, "logloss", policy)
    b = _fit(2, "logloss", policy, init_model=a)
    c = _fit(4, "logloss", policy, init_model=b)
    assert_same_model(c, whole)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("what", list(RANDOM))
def test_random_streams_continue_in_memory(what, policy):
    """Samplers, split noise and column sampling draw what one longer fit draws."""
    extra = RANDOM[what]
    whole = _fit(10, "logloss", policy, **extra)
    more = _fit(6, "logloss", policy, init_model=_fit(4, "logloss", policy, **extra), **extra)
    assert_same_model(more, whole)


class _Recorder(Sampler):
    """Records one draw of its stream per iteration; samples every row."""

    name = "recorder"

    def __init__(self):
        super().__init__()
        self.draws = []

    def sample(self, gradient, hessian, rng, iteration):
        self.draws.append((iteration, int(rng.integers(2 ** 62))))
        return None


def _recorded(n, init_model=None, random_state=0):
    rec = _Recorder()
    model = train({**_params(), "n_estimators": n, "sampler": rec,
                   "random_state": random_state}, Dataset(X, Y), init_model=init_model)
    return model, rec.draws


def test_sampler_stream_continues_not_restarts(tmp_path):
    _, whole = _recorded(8)
    first, head = _recorded(3)
    assert head == whole[:3]
    _, tail = _recorded(5, init_model=first)
    assert tail == whole[3:]                      # numbered and drawn as in one fit
    # a model from a file has no stream states: new draws, never the first fit's again
    first.save(tmp_path / "m.json")
    loaded = Model.load(tmp_path / "m.json")
    assert loaded.random_streams is None
    _, from_file = _recorded(5, init_model=loaded)
    _, again = _recorded(5, init_model=Model.load(tmp_path / "m.json"))
    assert from_file == again                     # deterministic under random_state
    assert [i for i, _ in from_file] == [3, 4, 5, 6, 7]
    values = {d for _, d in from_file}
    assert not values & {d for _, d in whole}
    # another random_state: the recorded states are not used
    _, other = _recorded(5, init_model=first, random_state=1)
    assert not {d for _, d in other} & {d for _, d in whole}


@pytest.mark.parametrize("policy", POLICIES)
def test_continuing_a_loaded_model_is_exact_without_randomness(tmp_path, policy):
    first = _fit(4, "multiclass", policy)
    first.save(tmp_path / "m.json")
    more = _fit(5, "multiclass", policy, init_model=Model.load(tmp_path / "m.json"))
    assert_same_model(more, _fit(9, "multiclass", policy))


def test_sampled_continuation_of_a_loaded_model_is_not_one_fit(tmp_path):
    first = _fit(4, **RANDOM["subsample"])
    first.save(tmp_path / "m.json")
    a = _fit(4, init_model=Model.load(tmp_path / "m.json"), **RANDOM["subsample"])
    b = _fit(4, init_model=Model.load(tmp_path / "m.json"), **RANDOM["subsample"])
    assert_same_model(a, b)
    whole = _fit(8, **RANDOM["subsample"])
    assert not np.array_equal(a.predict(XV), whole.predict(XV))


# -- bin borders ----------------------------------------------------------------------------
def test_continuation_bins_with_the_models_borders():
    first = _fit(3)
    X2 = X * 3.0 + 1.0                           # other data: other quantiles
    more = train({**_params(), "n_estimators": 3}, Dataset(X2, Y), init_model=first)
    assert more.ensemble.bin_mapper is first.ensemble.bin_mapper
    fresh = train({**_params(), "n_estimators": 3}, Dataset(X2, Y))
    assert not all(np.array_equal(a, b) for a, b in
                   zip(fresh.ensemble.bin_mapper.borders_, first.ensemble.bin_mapper.borders_))


@pytest.mark.parametrize("policy", POLICIES)
def test_categorical_and_sparse_data_continue_exactly(policy):
    pd = importorskip("pandas")
    sparse = importorskip("scipy.sparse")
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.normal(size=400),
                          "c": pd.Categorical(rng.choice(list("pqrstuvw"), 400)),
                          "b": rng.normal(size=400)})
    target = frame.a.to_numpy() + frame.c.cat.codes.to_numpy() % 3 + 0.1 * rng.normal(size=400)
    Xs = sparse.random(400, 30, density=0.05, random_state=1, format="csr")
    ys = np.asarray(Xs.sum(axis=1)).ravel()
    for data, y in ((frame, target), (Xs, ys)):
        p = _params(policy)
        whole = train({**p, "n_estimators": 9}, Dataset(data, y))
        first = train({**p, "n_estimators": 4}, Dataset(data, y))
        more = train({**p, "n_estimators": 5}, Dataset(data, y), init_model=first)
        assert _trees_equal(more.ensemble.scalar_trees(), whole.ensemble.scalar_trees())
        assert np.array_equal(more.predict(data), whole.predict(data))


# -- rules with state -------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ("symmetric", "depthwise"))
@pytest.mark.parametrize("mode", ("constant", "decreasing"))
def test_sglb_continues_its_shrinkage(policy, mode):
    """The shrink factor depends on the iteration only: the continuation applies the
    factors of iterations n .. n+m-1 and extends the scale history. The scores it starts from
    are the model's prediction, which rounds differently from the running scores of one fit
    (they were shrunk in place): equal up to rounding."""
    extra = {"update": "sglb", "update_params": {"model_shrink_mode": mode}}
    whole = _fit(12, policy=policy, **extra)
    more = _fit(7, policy=policy, init_model=_fit(5, policy=policy, **extra), **extra)
    assert more.n_trees == 12
    assert [m for m, _ in more.ensemble.scale_history] == \
        [m for m, _ in whole.ensemble.scale_history]
    assert np.allclose([f for _, f in more.ensemble.scale_history],
                       [f for _, f in whole.ensemble.scale_history], rtol=0, atol=0)
    assert np.allclose(more.ensemble.coef, whole.ensemble.coef, rtol=1e-12)
    assert np.allclose(more.predict(XV), whole.predict(XV), rtol=1e-9, atol=1e-12)
    assert np.allclose(more.predict_virtual_ensembles(XV, 3),
                       whole.predict_virtual_ensembles(XV, 3), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("policy", ("symmetric", "depthwise"))
def test_agbm_continuation_restarts_its_momentum(policy):
    """AGBM's momentum model h, counter m and carried error are not in the model: a
    continuation starts them afresh (h = f, m = 0), which is AGBMR's restart. So AGBM
    continued after n iterations is AGBMR with restart=n (up to the rounding of the
    starting scores), not one AGBM fit."""
    agbm = {"update": "agbm"}
    first = _fit(6, policy=policy, **agbm)
    assert first.n_iterations == 6 and first.n_trees == 11
    more = _fit(4, policy=policy, init_model=first, **agbm)
    assert more.n_iterations == 10
    restarted = _fit(10, policy=policy, update="agbmr", update_params={"restart": 6})
    assert more.n_trees == restarted.n_trees == 11 + 7
    assert np.allclose(more.predict(XV), restarted.predict(XV), rtol=1e-9, atol=1e-12)
    one_fit = _fit(10, policy=policy, **agbm)
    assert not np.allclose(more.predict(XV), one_fit.predict(XV), rtol=1e-6)


def test_vagbm_continues_from_the_model():
    first = _fit(5, update="vagbm")
    more = _fit(3, init_model=first, update="vagbm")
    assert more.n_trees == 8 and more.n_iterations == 8
    assert np.mean((more.predict(X) - Y) ** 2) < np.mean((first.predict(X) - Y) ** 2)


# -- iterations, early stopping, callbacks ----------------------------------------------------
def test_early_stopping_counts_every_iteration():
    whole = _fit(60, learning_rate=0.5, early_stopping_rounds=3)
    stop = whole.best_iteration
    assert stop < 59                                   # it stopped early
    first = _fit(10, learning_rate=0.5)
    more = _fit(50, init_model=first, learning_rate=0.5, early_stopping_rounds=3)
    assert more.best_iteration == stop
    assert more.n_trees == more.n_iterations == stop + 1
    assert len(more.evals_result["valid_0"]["mse"]) == stop + 3 + 1 - 10
    assert_same_model(more, whole)


def test_callbacks_see_the_global_iteration_numbers():
    seen = []
    out = io.StringIO()
    train({**_params(), "n_estimators": 3}, Dataset(X, Y),
          init_model=_fit(4), callbacks=[lambda info: seen.append(
              (info.iteration, info.n_iterations, info.first_iteration)),
              ProgressBar(stream=out, period=1)])
    assert seen == [(4, 7, 4), (5, 7, 4), (6, 7, 4)]
    assert "iteration 5/7" in out.getvalue() and "iteration 7/7" in out.getvalue()


def test_params_may_change_for_the_new_trees():
    first = _fit(4)
    more = _fit(3, init_model=first, learning_rate=0.3, max_depth=2)
    assert np.array_equal(more.ensemble.coef[:4], first.ensemble.coef)
    assert np.array_equal(more.ensemble.coef[4:], [0.3] * 3)
    assert more.params["learning_rate"] == 0.3


def test_inherited_settings():
    first = train({"n_estimators": 2, "grow_policy": "depthwise", "max_bins": 31,
                   "loss": "quantile", "loss_params": {"alpha": 0.3}}, Dataset(X, Y))
    more = train({"n_estimators": 2}, Dataset(X, Y), init_model=first)
    assert more.params["grow_policy"] == "depthwise" and more.params["max_bins"] == 31
    assert more.loss_spec == first.loss_spec


# -- validation -------------------------------------------------------------------------------
@pytest.mark.parametrize("change, words", [
    ({"loss": "mse"}, "loss='mse' differs"),
    ({"loss_params": {"alpha": 0.7}}, "loss_params="),
    ({"grow_policy": "depthwise"}, "grow_policy='depthwise' differs"),
    ({"max_bins": 63}, "max_bins=63 differs"),
])
def test_other_settings_are_refused_by_name(change, words):
    first = train({"n_estimators": 2, "loss": "quantile", "loss_params": {"alpha": 0.3}},
                  Dataset(X, Y))
    with pytest.raises(ValueError) as info:
        train({"n_estimators": 2, **change}, Dataset(X, Y), init_model=first)
    assert words in str(info.value), str(info.value)


def test_other_outputs_features_or_data_are_refused():
    multi = _fit(2, "multiclass", valid=False)
    with pytest.raises(ValueError, match="3 output"):
        train({"n_estimators": 2, "loss_params": {"n_classes": 4}}, Dataset(X, Y_MULTI),
              init_model=multi)
    with pytest.raises(ValueError, match="loss='logloss' differs"):
        train({"n_estimators": 2, "loss": "logloss"}, Dataset(X, Y_BIN), init_model=multi)
    with pytest.raises(ValueError, match="4 features; init_model was trained on 5"):
        train({"n_estimators": 2}, Dataset(X[:, :4], Y), init_model=_fit(2))
    named = train({"n_estimators": 2}, Dataset(X, Y, feature_names=list("abcde")))
    with pytest.raises(ValueError, match="feature names"):
        train({"n_estimators": 2}, Dataset(X, Y, feature_names=list("abcdf")),
              init_model=named)
    with pytest.raises(ValueError, match="categorical features"):
        train({"n_estimators": 2}, Dataset(np.abs(np.nan_to_num(X)).round(), Y,
                                           categorical_features=[0]), init_model=_fit(2))
    with pytest.raises(TypeError, match="init_model="):
        train({"n_estimators": 2}, Dataset(X, Y), init_model="model.json")


# -- estimators: warm_start -------------------------------------------------------------------
def _est(cls, n, **extra):
    return cls(n_estimators=n, max_depth=3, random_state=0, **extra)


def assert_same_estimator(a, b, X_=XV):
    assert_same_model(a.model_, b.model_)
    assert np.array_equal(a.predict(X_), b.predict(X_))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
def test_warm_start_adds_trees_like_one_fit(task, policy):
    cls, y = {"regression": (BoostRegressor, Y), "binary": (BoostClassifier, Y_BIN),
              "multiclass": (BoostClassifier, Y_MULTI)}[task]
    extra = dict(grow_policy=policy, subsample=0.7)
    warm = _est(cls, 4, warm_start=True, **extra).fit(X, y)
    warm.set_params(n_estimators=9).fit(X, y)
    assert_same_estimator(warm, _est(cls, 9, **extra).fit(X, y))
    assert warm.model_.params["n_estimators"] == 9


def test_warm_start_ranker():
    groups = [40] * 10
    y = np.digitize(Y, np.quantile(Y, [0.5, 0.8])).astype(int)
    warm = _est(BoostRanker, 3, warm_start=True).fit(X, y, group=groups)
    warm.set_params(n_estimators=6).fit(X, y, group=groups)
    assert_same_estimator(warm, _est(BoostRanker, 6).fit(X, y, group=groups))


def test_warm_start_with_the_same_or_fewer_estimators():
    """scikit-learn's GradientBoosting: the same n_estimators fits nothing, fewer is an
    error."""
    warm = _est(BoostRegressor, 5, warm_start=True).fit(X, Y)
    model = warm.model_
    assert warm.fit(X, Y).model_ is model
    with pytest.raises(ValueError, match=r"n_estimators=3 must be at least the 5 iterations"):
        warm.set_params(n_estimators=3).fit(X, Y)
    # without warm_start, a new model
    warm.set_params(warm_start=False, n_estimators=3).fit(X, Y)
    assert warm.n_trees_ == 3


@pytest.mark.parametrize("name, value", [("loss", "mse"), ("loss_params", {"alpha": 0.7}),
                                         ("grow_policy", "depthwise"), ("max_bins", 63)])
def test_warm_start_refuses_a_changed_model_parameter(name, value):
    warm = _est(BoostRegressor, 3, warm_start=True, loss="quantile",
                loss_params={"alpha": 0.3}).fit(X, Y)
    warm.set_params(n_estimators=5, **{name: value})
    with pytest.raises(ValueError) as info:
        warm.fit(X, Y)
    assert str(info.value).startswith(f"{name}=") and "warm_start" in str(info.value)


def test_warm_start_applies_other_changes_to_the_new_trees():
    warm = _est(BoostRegressor, 3, warm_start=True).fit(X, Y)
    warm.set_params(n_estimators=5, learning_rate=0.05, max_depth=2).fit(X, Y)
    assert np.array_equal(warm.ensemble_.coef, [0.1] * 3 + [0.05] * 2)
    assert all(t.depth == 2 for t in warm.ensemble_.trees[3:])


def test_warm_start_classifier_keeps_its_classes():
    warm = _est(BoostClassifier, 3, warm_start=True).fit(X, Y_MULTI)
    part = Y_MULTI < 2                              # a batch without class 2
    warm.set_params(n_estimators=5).fit(X[part], Y_MULTI[part])
    assert warm.classes_.tolist() == [0.0, 1.0, 2.0] and warm.model_.n_outputs == 3
    with pytest.raises(ValueError, match="not seen in the training data"):
        warm.set_params(n_estimators=7).fit(X, Y_MULTI + 1)
    with pytest.raises(ValueError, match="features"):
        warm.set_params(n_estimators=7).fit(X[:, :4], Y_MULTI)


def test_warm_start_with_class_weight():
    a = _est(BoostClassifier, 3, warm_start=True, class_weight="balanced").fit(X, Y_MULTI)
    a.set_params(n_estimators=6).fit(X, Y_MULTI)
    assert_same_estimator(a, _est(BoostClassifier, 6, class_weight="balanced").fit(X, Y_MULTI))


def test_warm_start_after_early_stopping_counts_the_kept_iterations():
    est = _est(BoostRegressor, 200, warm_start=True, learning_rate=0.5,
               early_stopping_rounds=3).fit(X, Y, eval_set=[(XV, YV)])
    kept = est.model_.n_iterations
    assert kept == est.best_iteration_ + 1 < 200
    est.set_params(n_estimators=kept + 4, early_stopping_rounds=None).fit(X, Y)
    assert est.n_trees_ == kept + 4 and est.best_iteration_ == kept + 3


def test_warm_start_from_a_model_file(tmp_path):
    import boostlib

    est = _est(BoostRegressor, 4, warm_start=True).fit(X, Y)
    est.save_model(tmp_path / "m.json")
    loaded = boostlib.load_model(tmp_path / "m.json")
    assert loaded.warm_start is True
    loaded.set_params(n_estimators=7).fit(X, Y)
    assert_same_estimator(loaded, _est(BoostRegressor, 7).fit(X, Y))


def test_warm_start_is_validated_and_cloned():
    from sklearn.base import clone

    with pytest.raises(ValueError, match="warm_start='yes' is invalid"):
        BoostRegressor(warm_start="yes").fit(X, Y)
    warm = _est(BoostRegressor, 3, warm_start=True).fit(X, Y)
    twin = clone(warm)
    assert twin.get_params() == warm.get_params() and not hasattr(twin, "model_")
