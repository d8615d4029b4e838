"""``class_weight`` of BoostClassifier (issue 27): row weights from the class, multiplying
``sample_weight``; ``"balanced"`` is scikit-learn's ``n_samples / (n_classes * bincount)``.

The weights are row weights and nothing else, so a model fitted with ``class_weight`` is
bit for bit the model fitted with the equivalent ``sample_weight``. Validation sets are not
reweighted (LightGBM's semantics). The parameter goes through ``get_params`` / ``clone`` and
model files (a dict keyed by labels of any savable type).
"""
import dataclasses
import json

import numpy as np
import pytest

from optional_imports import importorskip

import boostlib
from boostlib import BoostClassifier, BoostRanker, BoostRegressor, ModelFileError
from boostlib.engine.trees import GROW_POLICIES
from boostlib.frontend import estimator_files

sklearn = importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.utils.class_weight import compute_sample_weight  # noqa: E402

POLICIES = tuple(GROW_POLICIES)          # symmetric, depthwise, lossguide


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.03] = np.nan
    score = 1.5 * np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) ** 2 + rng.normal(size=n)
    return X, score


X, SCORE = _data()
Y_BIN = np.where(SCORE > 1.0, "pos", "neg")                  # imbalanced, string labels
Y_MULTI = np.digitize(SCORE, [-1.5, 0.5, 1.5])               # 4 classes, ints, imbalanced


def _fit(y, policy="symmetric", fit=None, **params):
    base = dict(n_estimators=6, max_depth=3, grow_policy=policy, random_state=0)
    return BoostClassifier(**{**base, **params}).fit(X, y, **(fit or {}))


def _trees_equal(a, b):
    if len(a) != len(b):
        return False
    for s, t in zip(a, b):
        for f in dataclasses.fields(s):
            x, y = getattr(s, f.name), getattr(t, f.name)
            if isinstance(x, np.ndarray) and not np.array_equal(x, y):
                return False
            if not isinstance(x, np.ndarray) and x != y:
                return False
    return True


def assert_same_model(a, b):
    """Bit for bit: trees, coefficients, bias and predictions."""
    ea, eb = a.ensemble_, b.ensemble_
    assert _trees_equal(ea.scalar_trees(), eb.scalar_trees())
    assert np.array_equal(ea.coef, eb.coef)
    assert np.array_equal(np.atleast_1d(ea.bias), np.atleast_1d(eb.bias))
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))


# -- the weights -------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("y", [Y_BIN, Y_MULTI], ids=["binary", "multiclass"])
def test_balanced_is_the_equivalent_sample_weight_bit_for_bit(y, policy):
    balanced = _fit(y, policy, class_weight="balanced")
    by_rows = BoostClassifier(n_estimators=6, max_depth=3, grow_policy=policy,
                              random_state=0).fit(
        X, y, sample_weight=compute_sample_weight("balanced", y))
    assert_same_model(balanced, by_rows)
    assert not np.array_equal(balanced.predict_proba(X), _fit(y, policy).predict_proba(X))


def test_balanced_formula_is_scikit_learns():
    from boostlib.engine.class_weights import class_row_weights

    classes, index = np.unique(Y_MULTI, return_inverse=True)
    rows = class_row_weights("balanced", classes, index.astype(float))
    counts = np.bincount(index)
    assert np.array_equal(rows, (Y_MULTI.size / (classes.size * counts.astype(float)))[index])
    assert np.array_equal(rows, compute_sample_weight("balanced", Y_MULTI))


@pytest.mark.parametrize("policy", POLICIES)
def test_class_weight_multiplies_sample_weight(policy):
    sw = np.random.default_rng(1).uniform(0.5, 2.0, size=X.shape[0])
    both = _fit(Y_BIN, policy, class_weight="balanced", fit={"sample_weight": sw})
    product = BoostClassifier(n_estimators=6, max_depth=3, grow_policy=policy,
                              random_state=0).fit(
        X, Y_BIN, sample_weight=sw * compute_sample_weight("balanced", Y_BIN))
    assert_same_model(both, product)


@pytest.mark.parametrize("policy", POLICIES)
def test_dict_keyed_by_the_original_labels(policy):
    weighted = _fit(Y_BIN, policy, class_weight={"pos": 4.0})     # "neg" left out: 1
    rows = np.where(Y_BIN == "pos", 4.0, 1.0)
    plain = BoostClassifier(n_estimators=6, max_depth=3, grow_policy=policy,
                            random_state=0).fit(X, Y_BIN, sample_weight=rows)
    assert_same_model(weighted, plain)
    # the weighted class is predicted more often
    assert np.mean(weighted.predict(X) == "pos") > np.mean(_fit(Y_BIN, policy).predict(X)
                                                          == "pos")


@pytest.mark.parametrize("policy", POLICIES)
def test_multiclass_dict(policy):
    weights = {0: 2.0, 3: 0.5, np.int64(1): 3.0}          # numpy keys match too; 2 -> 1
    weighted = _fit(Y_MULTI, policy, class_weight=weights)
    rows = np.array([2.0, 3.0, 1.0, 0.5])[Y_MULTI]
    plain = BoostClassifier(n_estimators=6, max_depth=3, grow_policy=policy,
                            random_state=0).fit(X, Y_MULTI, sample_weight=rows)
    assert_same_model(weighted, plain)
    assert weighted.model_.n_outputs == 4


def test_bool_and_float_labels():
    y_bool = SCORE > 1.0
    a = _fit(y_bool, class_weight={True: 3.0})
    b = BoostClassifier(n_estimators=6, max_depth=3, random_state=0).fit(
        X, y_bool, sample_weight=np.where(y_bool, 3.0, 1.0))
    assert_same_model(a, b)
    y_float = Y_MULTI.astype(float)
    c = _fit(y_float, class_weight={2.0: 5.0})
    d = BoostClassifier(n_estimators=6, max_depth=3, random_state=0).fit(
        X, y_float, sample_weight=np.where(y_float == 2.0, 5.0, 1.0))
    assert_same_model(c, d)


def test_eval_sets_are_not_reweighted():
    """LightGBM's semantics: class_weight weighs the training rows only; the recorded
    validation loss is the unweighted mean (eval_sample_weight weighs validation rows)."""
    Xe, scores = _data(200, seed=5)
    ye = np.where(scores > 1.0, "pos", "neg")
    clf = _fit(Y_BIN, class_weight="balanced", fit={"eval_set": [(Xe, ye)]})
    p = clf.predict_proba(Xe)[:, 1]
    t = (ye == "pos").astype(float)
    unweighted = -np.mean(t * np.log(p) + (1 - t) * np.log(1 - p))
    assert clf.evals_result_["valid_0"]["logloss"][-1] == pytest.approx(unweighted, rel=1e-9)
    # the training curve is the class-weighted mean loss
    raw = clf.decision_function(X)
    w = compute_sample_weight("balanced", Y_BIN)
    tt = (Y_BIN == "pos").astype(float)
    losses = np.logaddexp(0.0, raw) - tt * raw
    assert clf.evals_result_["train"]["logloss"][-1] == pytest.approx(
        np.sum(w * losses) / np.sum(w), rel=1e-9)


# -- validation ---------------------------------------------------------------------------
@pytest.mark.parametrize("value, error, words", [
    ({"nope": 1.0}, ValueError, "not classes of y"),
    ({"pos": 0.0}, ValueError, "finite number > 0"),
    ({"pos": -1.0}, ValueError, "finite number > 0"),
    ({"pos": float("nan")}, ValueError, "finite number > 0"),
    ({"pos": float("inf")}, ValueError, "finite number > 0"),
    ({"pos": True}, ValueError, "finite number > 0"),
    ({"pos": "2"}, ValueError, "finite number > 0"),
    ("balance", ValueError, "'balanced'"),
    (["pos", 2.0], TypeError, "dict"),
    (2.0, TypeError, "dict"),
])
def test_bad_class_weight_is_refused_naming_it(value, error, words):
    with pytest.raises(error) as info:
        _fit(Y_BIN, class_weight=value)
    assert "class_weight" in str(info.value) and words in str(info.value), str(info.value)


def test_int_key_is_not_a_string_label():
    with pytest.raises(ValueError, match=r"class_weight names label\(s\) 1 that"):
        _fit(Y_BIN, class_weight={1: 2.0})


def test_bad_value_is_refused_before_the_data_is_read():
    with pytest.raises(ValueError, match="class_weight"):
        BoostClassifier(class_weight="nope").fit(None, None)


def test_only_the_classifier_has_class_weight():
    assert "class_weight" in BoostClassifier().get_params()
    for cls in (BoostRegressor, BoostRanker):
        assert "class_weight" not in cls().get_params()
        with pytest.raises(TypeError, match="class_weight"):
            cls(class_weight="balanced")


# -- scikit-learn conventions -------------------------------------------------------------
def test_get_params_set_params_and_clone():
    clf = BoostClassifier(class_weight={"pos": 2.0}, n_estimators=4, max_depth=2)
    params = clf.get_params()
    assert params["class_weight"] == {"pos": 2.0} and params["n_estimators"] == 4
    twin = clone(clf)
    assert twin.get_params() == params and twin is not clf
    twin.set_params(class_weight="balanced")
    assert twin.class_weight == "balanced" and clf.class_weight == {"pos": 2.0}
    assert "class_weight={'pos': 2.0}" in repr(clf)
    assert_same_model(clone(clf).set_params(random_state=0).fit(X, Y_BIN),
                      _fit(Y_BIN, max_depth=2, n_estimators=4, class_weight={"pos": 2.0}))


def test_unknown_constructor_argument_names_the_classifier():
    with pytest.raises(TypeError, match=r"^BoostClassifier.__init__\(\) got an unexpected "
                                        r"keyword argument 'bogus'"):
        BoostClassifier(bogus=1)


# -- model files ----------------------------------------------------------------------------
@pytest.mark.parametrize("y, weights", [
    (Y_BIN, {"pos": 3.0, "neg": 0.5}),
    (Y_MULTI, {0: 2.0, 3: 1.5}),
    (SCORE > 1.0, {True: 2.5}),
    (Y_MULTI.astype(float), {1.0: 2.0, 2.0: 0.25}),
    (Y_BIN, "balanced"),
    (Y_BIN, None),
], ids=["str", "int", "bool", "float", "balanced", "none"])
def test_model_file_round_trip(tmp_path, y, weights):
    clf = _fit(y, class_weight=weights)
    path = tmp_path / "m.json"
    clf.save_model(path)
    back = boostlib.load_model(path)
    assert back.get_params() == clf.get_params()
    assert back.class_weight == weights
    if isinstance(weights, dict):       # the labels keep their type
        assert [type(k) for k in back.class_weight] == [type(k) for k in weights]
    assert np.array_equal(back.predict_proba(X), clf.predict_proba(X))
    # refitting from the loaded parameters gives the same model
    assert_same_model(clone(back).fit(X, y), clf)
    stored = json.loads(path.read_text())["params"]["class_weight"]
    if isinstance(weights, dict):
        assert stored == [[k, v] for k, v in weights.items()]
    else:
        assert stored == weights


def test_model_file_with_numpy_keys(tmp_path):
    clf = _fit(Y_MULTI, class_weight={np.int64(2): 2.0})
    back = estimator_files.loads(estimator_files.dumps(clf))
    assert back.class_weight == {2: 2.0} and type(next(iter(back.class_weight))) is int


def _document(weights, estimator="BoostClassifier"):
    clf = _fit(Y_BIN) if estimator == "BoostClassifier" else \
        BoostRegressor(n_estimators=2).fit(X, SCORE)
    doc = estimator_files.estimator_to_dict(clf)
    doc["params"]["class_weight"] = weights
    return doc


@pytest.mark.parametrize("weights, estimator, words", [
    ([["pos", 0.0]], "BoostClassifier", "weight > 0"),
    ([["pos", 1.0], ["pos", 2.0]], "BoostClassifier", "repeats the label"),
    ([["pos"]], "BoostClassifier", "[label, weight] pair"),
    ({"pos": 1.0}, "BoostClassifier", "array of [label, weight] pairs"),
    ("even", "BoostClassifier", "array of [label, weight] pairs"),
    ([["nope", 1.0]], "BoostClassifier", "not among the classes"),
    ([["pos", 1.0]], "BoostRegressor", "only a BoostClassifier"),
])
def test_model_file_class_weight_is_validated(weights, estimator, words):
    with pytest.raises(ModelFileError) as info:
        estimator_files.estimator_from_dict(_document(weights, estimator))
    assert "class_weight" in str(info.value) and words in str(info.value), str(info.value)
