"""Model files: exact round trips, validation of hostile files, pickling."""
import copy
import functools
import json
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRegressor, ModelFileError, load_model
from boostlib.api import Loss, hookimpl
from boostlib.builtin.losses import LogLoss, SLALoss
from boostlib.frontend.estimator_files import (dumps, estimator_from_dict, estimator_to_dict,
                                               loads)
from boostlib.io.model_files import FORMAT_VERSION

from model_documents import as_blocks, as_lists, encode


def _data(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


X, Y = _data()
X_TEST, _ = _data(100, seed=1)


def _fit(cls=BoostClassifier, **params):
    target = Y if cls is BoostClassifier else np.nan_to_num(X[:, 1]) + Y
    base = dict(n_estimators=8, max_depth=3, random_state=0, n_jobs=1)
    return cls(**{**base, **params}).fit(X, target, eval_set=[(X[:50], target[:50])])


def _round_trip(model, tmp_path):
    path = tmp_path / "model.json"
    model.save_model(path)
    return load_model(path)


def _outputs(model, X):
    if isinstance(model, BoostClassifier):
        return [model.decision_function(X), model.predict_proba(X), model.predict(X)]
    return [model.predict(X)]


# -- exact round trips -------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [BoostClassifier, BoostRegressor])
@pytest.mark.parametrize("policy", ["symmetric", "depthwise", "lossguide"])
def test_loaded_model_predicts_bit_identically(tmp_path, cls, policy):
    model = _fit(cls, grow_policy=policy, max_depth=4, n_estimators=15)
    loaded = _round_trip(model, tmp_path)
    assert type(loaded) is cls
    for a, b in zip(_outputs(model, X_TEST), _outputs(loaded, X_TEST)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert loaded.get_params() == model.get_params()
    assert loaded.n_trees_ == model.n_trees_ and loaded.n_features_in_ == 4
    assert np.array_equal(loaded.feature_importances_, model.feature_importances_)
    assert loaded.best_iteration_ == model.best_iteration_
    assert loaded.evals_result_ == model.evals_result_


@pytest.mark.parametrize("mode", ["constant", "decreasing"])
def test_sglb_virtual_ensembles_survive_a_round_trip(tmp_path, mode):
    """The shrink history is saved, so a loaded SGLB model gives the same virtual-ensemble
    members (earlier states of the chain); a model whose coefficients were rewritten (AGBM)
    saves none and keeps refusing."""
    model = _fit(update="sglb", n_estimators=20,
                 update_params={"diffusion_temperature": 100.0, "model_shrink_rate": 0.3,
                                "model_shrink_mode": mode})
    loaded = _round_trip(model, tmp_path)
    assert loaded.ensemble_.scale_history == model.ensemble_.scale_history
    assert len(model.ensemble_.scale_history) >= 19
    assert np.array_equal(model.predict_virtual_ensembles(X_TEST, 5),
                          loaded.predict_virtual_ensembles(X_TEST, 5))
    agbm = _round_trip(_fit(update="agbm", n_estimators=6), tmp_path)
    assert agbm.ensemble_.scale_history is None
    with pytest.raises(ValueError, match="earlier states cannot be recovered"):
        agbm.predict_virtual_ensembles(X_TEST, 2)


@pytest.mark.parametrize("update, extra", [
    ("dart", {"update_params": {"rate_drop": 0.3, "skip_drop": 0.0, "normalize_type": "tree"}}),
    ("rf", {"learning_rate": 1.0, "subsample": 0.632, "colsample_bynode": 0.8})])
def test_dart_and_forest_models_round_trip(tmp_path, update, extra):
    """Their rewritten coefficients are plain coefficients: the loaded model predicts the
    same, bit for bit, and keeps its parameters (no scale history, as after AGBM)."""
    model = _fit(update=update, n_estimators=12, **extra)
    loaded = _round_trip(model, tmp_path)
    for a, b in zip(_outputs(model, X_TEST), _outputs(loaded, X_TEST)):
        assert np.array_equal(a, b)
    assert loaded.get_params() == model.get_params()
    assert loaded.ensemble_.coef.tobytes() == model.ensemble_.coef.tobytes()
    assert loaded.ensemble_.scale_history is None


def test_floats_round_trip_exactly(tmp_path):
    model = _fit(grow_policy="depthwise")
    loaded = _round_trip(model, tmp_path)
    a, b = model.ensemble_, loaded.ensemble_
    assert a.bias == b.bias and a.coef.tobytes() == b.coef.tobytes()
    for fa, fb in zip(a.bin_mapper.borders_, b.bin_mapper.borders_):
        assert fa.tobytes() == fb.tobytes()
    for ta, tb in zip(a.trees, b.trees):
        for key in ("feature", "bin", "nan_right", "left", "right", "gain", "value"):
            x, y = getattr(ta, key), getattr(tb, key)
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
    # awkward doubles survive JSON text exactly
    values = [0.1, 1 / 3, 5e-324, 1.7976931348623157e308, -2.2250738585072014e-308]
    assert json.loads(json.dumps(values)) == values


@pytest.mark.parametrize("labels", [np.array(["M", "R"]), np.array([-1, 1]),
                                    np.array([False, True]), np.array([1.0, 2.0]),
                                    np.array(["rock", "mine"], dtype=object)])
def test_class_labels_round_trip(tmp_path, labels):
    model = BoostClassifier(n_estimators=3, random_state=0).fit(X, labels[Y])
    loaded = _round_trip(model, tmp_path)
    assert loaded.classes_.dtype == model.classes_.dtype
    assert np.array_equal(loaded.classes_, model.classes_)
    assert np.array_equal(loaded.predict(X_TEST), model.predict(X_TEST))


def test_loss_parameters_and_instances(tmp_path):
    by_name = _fit(loss="sla", loss_params={"scale": 0.3}, leaf_estimation="gradient")
    doc = estimator_to_dict(by_name)
    assert doc["loss"] == {"name": "sla", "params": {"scale": 0.3}}
    instance = _fit(loss=SLALoss(scale=0.25))
    doc = estimator_to_dict(instance)
    assert doc["loss"] == {"name": "sla", "params": {"scale": 0.25}}
    assert doc["params"]["loss"] == "sla"
    loaded = _round_trip(instance, tmp_path)
    assert loaded.loss == "sla" and loaded.loss_.scale == 0.25
    assert np.array_equal(loaded.predict_proba(X_TEST), instance.predict_proba(X_TEST))


def test_plugin_instances_are_stored_by_name():
    from boostlib.builtin.samplers import GOSSSampler
    from boostlib.builtin.updates import SGB

    model = _fit(loss=LogLoss(), sampler=GOSSSampler(subsample=0.5), update=SGB(),
                 random_state=np.random.default_rng(0))
    params = estimator_to_dict(model)["params"]
    assert (params["loss"], params["sampler"], params["update"]) == ("logloss", "goss", "sgb")
    assert params["random_state"] is None   # not JSON data
    loaded = loads(dumps(model))
    assert np.array_equal(loaded.decision_function(X_TEST), model.decision_function(X_TEST))


def test_numpy_scalars_in_parameters_are_saved_as_numbers():
    model = BoostClassifier(n_estimators=np.int64(3), learning_rate=np.float64(0.2),
                            loss="sla", loss_params={"scale": np.float64(0.5)}).fit(X, Y)
    loaded = loads(dumps(model))
    assert loaded.get_params()["n_estimators"] == 3 and loaded.learning_rate == 0.2
    assert loaded.loss_params == {"scale": 0.5} and loaded.loss_.scale == 0.5


def test_unregistered_sampler_instance_is_stored_by_its_name():
    from boostlib.builtin.samplers import UniformSampler

    class Halves(UniformSampler):
        name = "halves_for_test"

    model = _fit(sampler=Halves(subsample=0.5))
    with pytest.warns(UserWarning, match="names the sampler 'halves_for_test', which is not "
                                         "installed"):
        loaded = loads(dumps(model))
    assert loaded.sampler == "halves_for_test"
    assert np.array_equal(loaded.predict_proba(X_TEST), model.predict_proba(X_TEST))


class _Scaled(Loss):
    name = "scaled_mse_for_test"

    def __init__(self, factor=1.0):
        self.factor = factor

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        gradient[:] = raw - y
        hessian[:] = 1.0

    def loss(self, y, raw):
        return 0.5 * (raw - y) ** 2

    def transform(self, raw):
        return self.factor * raw


class _ScaledPlugin:
    @hookimpl
    def boostlib_add_losses(self):
        return {"scaled_mse_for_test": _Scaled}


def test_plugin_loss_recreated_and_missing_plugin_fails(temp_plugin, tmp_path):
    from boostlib import registry

    name = temp_plugin(_ScaledPlugin(), "scaled_for_test")
    model = _fit(BoostRegressor, loss="scaled_mse_for_test", loss_params={"factor": 2.0})
    text = dumps(model)
    loaded = loads(text)
    assert loaded.loss_.factor == 2.0
    assert np.array_equal(loaded.predict(X_TEST), model.predict(X_TEST))
    registry.unregister_plugin(name)
    try:
        with pytest.raises(ModelFileError, match="needs the loss 'scaled_mse_for_test', which "
                                                 "is not installed"):
            loads(text)
    finally:
        temp_plugin(_ScaledPlugin(), "scaled_for_test_again")


def test_unregistered_loss_instance_cannot_be_saved():
    class Local(_Scaled):
        name = "local_loss"

    model = BoostRegressor(n_estimators=2, loss=Local()).fit(X, np.nan_to_num(X[:, 0]))
    with pytest.raises(ModelFileError, match="not a registered plugin"):
        dumps(model)


def test_unfitted_model_cannot_be_saved(tmp_path):
    from boostlib._compat import NotFittedError

    with pytest.raises(NotFittedError):
        BoostClassifier().save_model(tmp_path / "m.json")


def test_pandas_feature_names_survive(tmp_path):
    pd = importorskip("pandas")
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    model = BoostClassifier(n_estimators=3, random_state=0).fit(df, Y)
    loaded = _round_trip(model, tmp_path)
    assert list(loaded.feature_names_in_) == ["a", "b", "c", "d"]
    assert loaded.feature_names_in_.dtype == object
    test = pd.DataFrame(X_TEST, columns=["a", "b", "c", "d"])
    assert np.array_equal(loaded.predict_proba(test), model.predict_proba(test))
    with pytest.raises(ValueError, match="feature names should match"):
        loaded.predict(test[["d", "c", "b", "a"]])


def test_pickle_and_joblib_round_trip(tmp_path):
    model = _fit(grow_policy="depthwise")
    model.predict(X_TEST)                      # fills the prediction cache
    again = pickle.loads(pickle.dumps(model))
    assert np.array_equal(again.predict_proba(X_TEST), model.predict_proba(X_TEST))
    joblib = importorskip("joblib")
    joblib.dump(model, tmp_path / "m.joblib")
    again = joblib.load(tmp_path / "m.joblib")
    assert np.array_equal(again.predict_proba(X_TEST), model.predict_proba(X_TEST))
    assert again.get_params() == model.get_params()


def test_file_is_versioned_json(tmp_path):
    model = _fit()
    model.save_model(tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["format"] == "boostlib-model" and doc["format_version"] == FORMAT_VERSION
    assert doc["estimator"] == "BoostClassifier" and doc["classes"]["values"] == [0, 1]
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]   # no temporary file left


# -- hostile and broken files ------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _doc(policy="depthwise", cls=BoostClassifier):
    return estimator_to_dict(_fit(cls, grow_policy=policy, n_estimators=3))


def _edit(policy, change, version=FORMAT_VERSION):
    """The document of a small model, changed by ``change`` with its trees' arrays and
    borders as JSON arrays, as a file of ``version`` (4: arrays; 6: binary blocks)."""
    doc = as_lists(copy.deepcopy(_doc(policy)))
    if version == 4:
        doc["format_version"] = 4
        del doc["encoding"]                 # (from version 7 on)
    change(doc)
    return doc if version == 4 else as_blocks(doc)


def _set_tree(key, index, value, tree=0):
    def change(doc):
        doc["model"]["trees"][tree][key][index] = value
    return change


def _set_border(value):
    def change(doc):
        doc["bins"]["borders"][1][0] = value
    return change


def _nested(depth):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


def _cycle(doc):
    tree = doc["model"]["trees"][0]
    inner = [k for k, c in enumerate(tree["left"]) if c > 0]
    tree["left"][inner[-1]] = 0


def _shared(doc):
    tree = doc["model"]["trees"][0]
    tree["right"][0] = tree["left"][0]


def _unsorted(doc):
    b = doc["bins"]["borders"][0]
    b[0], b[1] = b[1], b[0]


def _many_features(doc):
    doc["n_features"] = 200_000
    doc["bins"]["borders"] = [[] for _ in range(200_000)]
    doc["feature_names"] = None


HOSTILE = {
    "version 2": (lambda d: d.update(format_version=FORMAT_VERSION + 1), "newer boostlib"),
    "version as text": (lambda d: d.update(format_version="1"), "format version '1'"),
    "not a model": (lambda d: d.update(format="xgboost"), "not a boostlib model file"),
    "missing field": (lambda d: d.pop("bins"), "missing field 'bins'"),
    "unknown field": (lambda d: d.update(extra=1), r"unknown field\(s\) \['extra'\]"),
    "cycle": (_cycle, "after its parent"),
    "shared node": (_shared, "after its parent|several parents"),
    "feature out of range": (_set_tree("feature", 0, 4), r"feature\[0\]: 4 is out of range"),
    "negative child": (_set_tree("left", 0, -5), r"left\[0\]: -5 is out of range"),
    "child out of range": (_set_tree("right", 0, 10_000), r"right\[0\]: 10000 is out of"),
    "bin out of range": (_set_tree("bin", 0, 255), r"bin\[0\]: bin 255 is out of range"),
    "nan_right 3": (_set_tree("nan_right", 0, 3), r"nan_right\[0\]: 3 is out of range"),
    "categorical split without its set": (_set_tree("nan_right", 0, 2),
                                          r"bin\[0\]: categorical split names set"),
    "bool as int": (_set_tree("feature", 0, True), "expected integers, found a boolean"),
    "value as text": (_set_tree("value", 0, "1.0"), "expected numbers, found a string"),
    "huge leaf": (_set_tree("value", -1, 1e308), "raw scores could exceed"),
    "huge integer": (_set_tree("left", 0, 10 ** 30), "integers must be in"),
    "negative gain": (_set_tree("gain", 0, -1.0), r"gain\[0\]: split gains are non-neg"),
    "huge gains": (lambda d: [t["gain"].__setitem__(0, 1e300) for t in d["model"]["trees"]],
                   "split gains add up"),
    "unsorted borders": (_unsorted, "strictly increasing"),
    "too many borders": (lambda d: d["bins"].update(max_bins=2), r"at most 1 allowed|0 to max_bins - 1 = 1 allowed"),
    "many features": (_many_features, "far more than the 0 borders"),
    "wrong classes": (lambda d: d["classes"].update(values=[0, 0]), "distinct labels"),
    "label type": (lambda d: d["classes"].update(dtype="<U99999999"), "not a supported"),
    "regression loss": (lambda d: d["loss"].update(name="mse"), "not a classification"),
    "unknown loss": (lambda d: d["loss"].update(name="nope"), "not installed"),
    "bad loss params": (lambda d: d["loss"].update(params={"x": 1}), "rejected its param"),
    "huge n_jobs": (lambda d: d["params"].update(n_jobs=10 ** 6), r"n_jobs: 1000000 is out"),
    "bad param": (lambda d: d["params"].update(max_depth=0), "max_depth=0 is invalid"),
    "unknown param": (lambda d: d["params"].update(colour=1), r"unknown parameter\(s\)"),
    "deep params": (lambda d: d["params"].update(loss_params={"a": _nested(900)}),
                    "nested more than 32 levels"),
    "deep loss params": (lambda d: d["loss"].update(params={"a": _nested(900)}),
                         "nested more than 32 levels"),
    "names count": (lambda d: d.update(feature_names=["a"]), "has 1 names for 4 features"),
    "coefficients": (lambda d: d["model"]["coefficients"].pop(), "has 2 entries for 3 trees"),
    "estimator": (lambda d: d.update(estimator="os.system"), "is not one of \\['BoostClassifier'"),
    "scale factor 0": (lambda d: d["model"].update(scale_history=[[1, 0.0]]),
                       r"scale_history\[0\]\[1\]: a scale factor must be in"),
    "scale tree count": (lambda d: d["model"].update(scale_history=[[2, 0.5], [1, 0.5]]),
                         r"scale_history\[1\]\[0\]: 1 is out of range \[2, 3\]"),
    "scale pair": (lambda d: d["model"].update(scale_history=[[1]]), "expected \\[n_trees"),
}


#: the cases that binary blocks cannot hold (an int32 block has no booleans, text or 10**30),
#: or that only files of borders as arrays are refused for (many features without borders)
ARRAYS_ONLY = {"bool as int", "value as text", "huge integer", "many features"}


@pytest.mark.parametrize("version", [4, FORMAT_VERSION])
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_documents_are_refused(case, version):
    if version == FORMAT_VERSION and case in ARRAYS_ONLY:
        pytest.skip("binary blocks cannot hold this value, or hold it at its cost")
    change, match = HOSTILE[case]
    with pytest.raises(ModelFileError, match=match):
        loads(json.dumps(_edit("depthwise", change, version)))


def _set_block(key, value):
    def change(doc):
        doc["model"]["trees"][0][key] = value
    return change


def _spoil(key, text):
    """The first characters of the first tree's block ``key`` replaced by ``text``."""
    def change(doc):
        tree = doc["model"]["trees"][0]
        tree[key] = text + tree[key][len(text):]
    return change


HOSTILE_BLOCKS = {
    "array for a block": (_set_block("gain", [0.0, 1.0]), r"gain: expected a binary block"),
    "length": (_set_block("value", "AAAAAAA"), "multiple of 4 characters, got 7"),
    "partial entry": (_set_block("value", "AAAAAAA="),
                      "5 bytes are not a whole number of <f8 entries"),
    "one entry short": (_set_block("left", encode([-1, -1], "left")),
                        r"left: has 2 entries; expected \d+, one per node"),
    "not base64": (_spoil("value", "*"), "not a valid base64 block"),
    "not ascii": (_spoil("value", "é"), "not a valid base64 block"),
    "padding inside": (_spoil("bin", "AA=="), "not a valid base64 block"),
    "a set of 7 words": (_set_block("cat_sets", encode([0] * 7, "cat_sets")),
                         "7 words; a category set is 8 words"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_BLOCKS))
def test_hostile_blocks_are_refused(case):
    """Binary blocks (format 5) are checked before they are decoded: a string of base64 of
    the field's type and the tree's size."""
    change, match = HOSTILE_BLOCKS[case]
    doc = copy.deepcopy(_doc("depthwise"))
    change(doc)
    with pytest.raises(ModelFileError, match=match):
        loads(json.dumps(doc))


def test_oblivious_tree_shapes():
    def deep(doc):
        tree = doc["model"]["trees"][0]
        tree["feature"] = [0] * 40

    with pytest.raises(ModelFileError, match=r"feature: has 40 entries, at most 30"):
        estimator_from_dict(_edit("symmetric", deep))
    with pytest.raises(ModelFileError, match="a tree of depth 3 has 8 leaves"):
        estimator_from_dict(_edit("symmetric",
                                  lambda d: d["model"]["trees"][0]["value"].pop()))


@pytest.mark.parametrize("text, match", [
    (b"", "not valid JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply|not valid JSON"),
    (b'{"a": 1, "a": 2}', "duplicate key"),
    (b'{"x": NaN}', "NaN is not allowed"),
    (b"[1, 2]", "expected a JSON object"),
    (b"1" * 5000, "not valid JSON"),
])
def test_bad_json_is_refused(text, match):
    with pytest.raises(ModelFileError, match=match):
        loads(text)


def test_truncated_file_and_io_errors(tmp_path):
    text = dumps(_fit())
    for cut in (1, len(text) // 2, len(text) - 2):
        with pytest.raises(ModelFileError, match="not valid JSON"):
            loads(text[:cut])
    with pytest.raises(ModelFileError, match="cannot read model file .*No such file"):
        load_model(tmp_path / "missing.json")
    with pytest.raises(ModelFileError, match="cannot read model file"):
        load_model(tmp_path)
    assert issubclass(ModelFileError, ValueError)


def test_non_finite_values_in_a_document_are_refused():
    doc = _edit("symmetric", _set_tree("value", 0, float("nan")))
    with pytest.raises(ModelFileError, match="expected a finite number"):
        estimator_from_dict(doc)
    doc = _edit("symmetric", _set_border(float("-inf")))
    with pytest.raises(ModelFileError, match="expected a finite number"):
        estimator_from_dict(doc)


# -- fuzzing -----------------------------------------------------------------------------------
def _paths(obj, prefix=()):
    yield prefix
    items = obj.items() if isinstance(obj, dict) else \
        enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        yield from _paths(value, prefix + (key,))


_JSON_VALUES = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, 1, 2, -1, 3, 7, 254, 255, 256, 2 ** 31,
                                               -2 ** 31, 10 ** 20]),
    st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 5e-324, 0.0, -0.0]), st.text(max_size=5),
    st.lists(st.integers(-2, 10), max_size=6), st.dictionaries(st.text(max_size=3),
                                                               st.integers(), max_size=2))


@st.composite
def _mutated(draw):
    policy = draw(st.sampled_from(["symmetric", "depthwise"]))
    cls = draw(st.sampled_from([BoostClassifier, BoostRegressor]))
    doc = copy.deepcopy(_doc(policy, cls))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        op = draw(st.sampled_from(["replace", "replace", "delete", "swap"]))
        if op == "delete":
            del parent[path[-1]]
        elif op == "swap" and isinstance(parent[path[-1]], list) and parent[path[-1]]:
            items = parent[path[-1]]
            i, j = draw(st.integers(0, len(items) - 1)), draw(st.integers(0, len(items) - 1))
            items[i], items[j] = items[j], items[i]
        else:
            parent[path[-1]] = draw(_JSON_VALUES)
        if not isinstance(doc, dict):
            break
    text = json.dumps(doc).encode()
    tail = draw(st.sampled_from(["none", "truncate", "flip"]))
    if tail == "truncate":
        text = text[:draw(st.integers(0, len(text)))]
    elif tail == "flip":
        data = bytearray(text)
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        text = bytes(data)
    return text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated())
def test_fuzzed_model_files_load_or_fail_cleanly(text):
    try:
        model = loads(text)
    except ModelFileError:
        return
    for out in _outputs(model, X_TEST):
        assert out.shape[0] == X_TEST.shape[0]
        if out.dtype.kind == "f":
            assert np.all(np.isfinite(out))
    assert np.all(np.isfinite(model.feature_importances_))


@pytest.mark.parametrize("history", [[[1, 1e-300], [2, 1e-300]], [[1, 1e300], [2, 1e300]],
                                     [[1, 1e-150], [2, 1e-150]], [[3, 1e-250]]])
def test_scale_histories_whose_past_states_cannot_be_recovered_are_refused(history):
    """Virtual ensembles divide by the product of later scale factors: a file whose product
    leaves [1e-200, 1e200] for a state they read (at least half the trees), or whose
    recovered state could exceed 1e300, would predict inf or zeros, so it is refused, naming
    the entry; states they never read do not matter."""
    def change(doc):
        doc["model"]["scale_history"] = history

    with pytest.raises(ModelFileError, match=r"model\.scale_history\[\d\].*1e\+200"):
        loads(json.dumps(_edit("symmetric", change)))
    history[:] = [[0, 1e-150], [0, 1e-150]]             # only the 0-tree state: never read
    assert loads(json.dumps(_edit("symmetric", change))).ensemble_.scale_history == \
        [(0, 1e-150), (0, 1e-150)]


def test_an_ensemble_forgets_a_history_whose_states_would_underflow():
    model = _fit(BoostRegressor, update="sglb", n_estimators=4)
    ensemble = model.ensemble_
    assert len(ensemble.scale_history) == 4
    ensemble.scale(1e-150)
    ensemble.forget_unrecoverable_states()
    assert ensemble.scale_history is not None
    ensemble.scale(1e-150)               # the states read would need a factor of 1e300
    ensemble.forget_unrecoverable_states()
    assert ensemble.scale_history is None
    with pytest.raises(ValueError, match="earlier states cannot be recovered"):
        model.predict_virtual_ensembles(X_TEST, 2)


def test_a_file_that_would_not_load_back_is_not_written(tmp_path):
    """save validates the document as load does, before writing: a label longer than
    files accept is refused at save time, naming the field, and nothing is written."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    long_label = "x" * 20_000
    y = np.where(X[:, 0] > 0, long_label, "short")
    model = BoostClassifier(n_estimators=2, random_state=0).fit(X, y)
    path = tmp_path / "m.json"
    with pytest.raises(ModelFileError, match=r"would not load back.*classes"):
        model.save_model(path)
    assert not path.exists() and not list(tmp_path.iterdir())


@pytest.mark.parametrize("n_jobs", [2.0, 1e300, 0, True, 5000])
def test_n_jobs_that_files_refuse_are_refused_at_fit(n_jobs):
    X = np.random.default_rng(0).normal(size=(40, 2))
    with pytest.raises(ValueError, match=r"n_jobs=.* is invalid"):
        BoostClassifier(n_estimators=2, n_jobs=n_jobs).fit(X, X[:, 0] > 0)


def test_depthwise_trees_deeper_than_training_allows_are_refused():
    """A chain of 40 splits (training stops at max_depth 30) would make prediction walk 40
    nodes per row: files are held to the same limit, named."""
    def chain(doc):
        n = 81                                   # 40 split nodes, each with a leaf child
        tree = doc["model"]["trees"][0]
        tree["feature"] = [0 if k % 2 == 0 and k < 80 else -1 for k in range(n)]
        tree["bin"] = [0] * n
        tree["nan_right"] = [0] * n
        tree["left"] = [k + 1 if k % 2 == 0 and k < 80 else -1 for k in range(n)]
        tree["right"] = [k + 2 if k % 2 == 0 and k < 80 else -1 for k in range(n)]
        tree["gain"] = [0.0] * n
        tree["value"] = [0.0] * n
        tree["cat_sets"] = []

    with pytest.raises(ModelFileError, match=r"40 levels deep; at most 30"):
        loads(json.dumps(_edit("depthwise", chain)))


def test_symmetric_depth_is_limited_by_its_leaf_table():
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(ValueError, match=r"max_depth=17 is too deep for symmetric trees"):
        BoostClassifier(max_depth=17).fit(X, X[:, 0] > 0)
    BoostClassifier(max_depth=17, grow_policy="depthwise", n_estimators=1).fit(X, X[:, 0] > 0)
