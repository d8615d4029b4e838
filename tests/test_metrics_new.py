"""The metrics ``average_precision``, ``f1``, ``auc_ovr``, ``auc_ovo``, ``mape`` and
``huber``: equal to scikit-learn's functions (weights, ties, one-class edge cases), to the
slow references of ``tests/reference/metrics.py``, and usable in a fit."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRegressor, create, registry
from boostlib.builtin.metrics import average_precision
from boostlib.testing import check_metric
from reference import metrics as ref

sk = importorskip("sklearn.metrics")

TOL = 1e-9
NEW = ["average_precision", "f1", "auc_ovr", "auc_ovo", "mape", "huber"]


def _close(got, want):
    assert got == pytest.approx(want, rel=TOL, abs=TOL)


def _quiet(fn, *args, **kwargs):
    """scikit-learn's value without its warnings (undefined recall, F-score)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.mark.parametrize("name", NEW)
def test_registered_and_conforming(name):
    assert name in registry.available("metric")
    metric = create("metric", name)
    assert metric.name == name
    check_metric(metric)


def test_directions_and_inputs():
    read = {n: (create("metric", n).reads, create("metric", n).higher_is_better) for n in NEW}
    assert read == {"average_precision": ("raw", True), "f1": ("class", True),
                    "auc_ovr": ("response", True), "auc_ovo": ("response", True),
                    "mape": ("response", False), "huber": ("response", False)}


# -- strategies ----------------------------------------------------------------------------------
_WEIGHT = st.one_of(st.floats(0.1, 5.0), st.sampled_from([0.0, 1.0, 2.0]))


@st.composite
def binary_case(draw, one_class=None):
    """Labels (both classes, unless ``one_class`` is 0 or 1), scores with many ties (or
    none), optional weights (some 0)."""
    n = draw(st.integers(2, 40))
    if one_class is None:
        y = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0])))
        y[0], y[1] = 0.0, 1.0
    else:
        y = np.full(n, float(one_class))
    values = st.sampled_from([-2.0, -0.5, 0.0, 0.5, 0.5000000001, 3.0]) \
        if draw(st.booleans()) else st.floats(-20, 20)
    score = draw(hnp.arrays(np.float64, n, elements=values))
    w = draw(hnp.arrays(np.float64, n, elements=_WEIGHT)) if draw(st.booleans()) else None
    if w is not None and not w.sum() > 0:
        w[0] = 1.0
    return y, score, w


@st.composite
def multiclass_case(draw):
    """Class indices with every class present, softmax probabilities of raw scores from a
    few values (rows with equal raw scores tie), optional positive weights."""
    k = draw(st.integers(3, 5))
    n = draw(st.integers(k, 40))
    y = draw(hnp.arrays(np.float64, n, elements=st.integers(0, k - 1).map(float)))
    y[:k] = np.arange(k)
    values = st.sampled_from([-1.0, 0.0, 0.5, 2.0]) if draw(st.booleans()) \
        else st.floats(-4, 4)
    raw = draw(hnp.arrays(np.float64, (n, k), elements=values))
    p = np.exp(raw - raw.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    w = draw(hnp.arrays(np.float64, n, elements=st.floats(0.1, 5.0))) \
        if draw(st.booleans()) else None
    return y, p, w


# -- binary --------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(binary_case())
def test_average_precision_equals_sklearn_and_the_reference(case):
    y, score, w = case
    got = create("metric", "average_precision")(y, score, w)
    _close(got, _quiet(sk.average_precision_score, y, score, sample_weight=w))
    _close(got, ref.average_precision(y == 1, score.tolist(), w))
    # the probabilities' order is the scores': the same value, unless sigmoid rounds ties
    assert 0.0 <= got <= 1.0


@settings(max_examples=200, deadline=None)
@given(binary_case())
def test_f1_equals_sklearn_and_the_reference(case):
    y, score, w = case
    cls = (score > 0.5).astype(np.float64)
    got = create("metric", "f1")(y, cls, w)
    _close(got, _quiet(sk.f1_score, y, cls, sample_weight=w))
    _close(got, ref.f1(y.tolist(), cls.tolist(), w))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([0, 1]).flatmap(lambda c: binary_case(one_class=c)))
def test_one_class_values_are_sklearns(case):
    """Only negatives: AP 0.0 (recall undefined; scikit-learn warns and returns 0.0), F1 0.0
    unless something is predicted positive (then too: no true positive). Only positives:
    AP 1.0, F1 the usual value. The same as scikit-learn's, which warns."""
    y, score, w = case
    ap = create("metric", "average_precision")(y, score, w)
    _close(ap, _quiet(sk.average_precision_score, y, score, sample_weight=w))
    assert ap == pytest.approx(1.0 if y[0] == 1 else 0.0, abs=1e-12)
    cls = (score > 0.5).astype(np.float64)
    _close(create("metric", "f1")(y, cls, w), _quiet(sk.f1_score, y, cls, sample_weight=w))
    nothing = np.zeros_like(y)
    if y[0] == 0:
        assert create("metric", "f1")(y, nothing, w) == 0.0 == \
            _quiet(sk.f1_score, y, nothing, sample_weight=w)


def test_average_precision_by_hand():
    # ranked 0.9 (+), 0.5 (-), 0.5 (+), 0.2 (-): thresholds 0.9 -> P 1, R 1/2; 0.5 -> P 2/3,
    # R 1 (the tie shares one threshold)
    y = np.array([1.0, 0.0, 1.0, 0.0])
    s = np.array([0.9, 0.5, 0.5, 0.2])
    assert create("metric", "average_precision")(y, s) == pytest.approx(0.5 + 0.5 * 2 / 3)
    assert average_precision(y == 1, s, None) == pytest.approx(5 / 6)
    # zero-weight rows do not count, wherever they rank
    w = np.array([1.0, 0.0, 1.0, 1.0])
    assert create("metric", "average_precision")(y, s, w) == 1.0


# -- multiclass ----------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(multiclass_case())
def test_auc_ovr_equals_sklearn_and_the_reference(case):
    y, p, w = case
    got = create("metric", "auc_ovr")(y, p, w)
    _close(got, sk.roc_auc_score(y, p, multi_class="ovr", average="macro", sample_weight=w))
    _close(got, ref.auc_ovr(y.tolist(), p.tolist(), w))


@settings(max_examples=100, deadline=None)
@given(multiclass_case())
def test_auc_ovo_equals_sklearn_and_the_reference(case):
    """Without weights: scikit-learn's ovo. With weights (which scikit-learn refuses for
    ovo): the macro mean over pairs of scikit-learn's weighted binary AUCs."""
    y, p, w = case
    got = create("metric", "auc_ovo")(y, p, w)
    _close(got, ref.auc_ovo(y.tolist(), p.tolist(), w))
    if w is None:
        _close(got, sk.roc_auc_score(y, p, multi_class="ovo", average="macro"))
    else:
        k = p.shape[1]
        pairs = []
        for a in range(k):
            for b in range(a + 1, k):
                rows = (y == a) | (y == b)
                pairs.append(0.5 * (
                    sk.roc_auc_score(y[rows] == a, p[rows, a], sample_weight=w[rows])
                    + sk.roc_auc_score(y[rows] == b, p[rows, b], sample_weight=w[rows])))
        _close(got, np.mean(pairs))
        # equal weights change nothing
        _close(create("metric", "auc_ovo")(y, p, np.full(y.size, 2.5)),
               sk.roc_auc_score(y, p, multi_class="ovo"))


@pytest.mark.parametrize("name", ["auc_ovr", "auc_ovo"])
def test_multiclass_auc_refuses_a_missing_class_and_bad_tasks(name):
    p = np.full((4, 3), 1 / 3)
    metric = create("metric", name)
    with pytest.raises(ValueError, match=f"'{name}': class 2 of 3 does not occur"):
        metric([0.0, 1.0, 1.0, 0.0], p)
    with pytest.raises(ValueError, match="class 1 of 3 does not occur"):
        metric([0.0, 1.0, 2.0, 0.0], p, [1.0, 0.0, 1.0, 1.0])     # only with weight 0
    with pytest.raises(ValueError):      # scikit-learn refuses it too
        sk.roc_auc_score([0, 1, 1, 0], p, multi_class="ovr")
    with pytest.raises(ValueError, match="class indices 0 .. 2"):
        metric([0.0, 1.0, 3.0, 2.0], p)
    with pytest.raises(ValueError, match="needs class probabilities"):
        metric([0.0, 1.0], [0.2, 0.7])
    with pytest.raises(ValueError, match="more than two classes"):
        metric.check_task(1, True)
    with pytest.raises(ValueError, match="needs a classifier"):
        metric.check_task(3, False)


def test_binary_metrics_refuse_other_tasks():
    for name in ("average_precision", "f1"):
        with pytest.raises(ValueError, match="is for two classes"):
            create("metric", name).check_task(3, True)
        with pytest.raises(ValueError, match="needs a classifier"):
            create("metric", name).check_task(1, False)
    with pytest.raises(ValueError, match="regression metric"):
        create("metric", "huber").check_task(1, True)


# -- regression ----------------------------------------------------------------------------------
@st.composite
def regression_case(draw):
    n = draw(st.integers(1, 40))
    values = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -3.0]), st.floats(-1e3, 1e3))
    y = draw(hnp.arrays(np.float64, n, elements=values))
    pred = draw(hnp.arrays(np.float64, n, elements=values))
    w = draw(hnp.arrays(np.float64, n, elements=st.floats(0.1, 5.0))) \
        if draw(st.booleans()) else None
    return y, pred, w


@settings(max_examples=200, deadline=None)
@given(regression_case())
def test_mape_equals_sklearn(case):
    """Targets of 0 included: scikit-learn divides by max(|y|, machine epsilon)."""
    y, pred, w = case
    got = create("metric", "mape")(y, pred, w)
    want = sk.mean_absolute_percentage_error(y, pred, sample_weight=w)
    assert got == pytest.approx(want, rel=TOL, abs=TOL)


@settings(max_examples=200, deadline=None)
@given(regression_case(), st.sampled_from([1e-3, 0.5, 0.9, 3.0, 1e6]))
def test_huber_metric_equals_the_reference_and_sklearns_loss(case, alpha):
    """There is no public scikit-learn Huber metric; its ``HuberLoss`` (of gradient boosting,
    private) has the same pointwise definition, with ``delta`` for ``alpha``."""
    y, pred, w = case
    got = create("metric", "huber", {"alpha": alpha})(y, pred, w)
    _close(got, ref.mean([ref.huber_loss(p - t, alpha) for t, p in zip(y, pred)], w))
    try:
        from sklearn._loss.loss import HuberLoss
    except ImportError:
        return
    pointwise = HuberLoss(delta=alpha).loss(y_true=y, raw_prediction=pred)
    _close(got, np.average(pointwise, weights=w))


def test_huber_metric_parameters():
    assert create("metric", "huber").alpha == 0.9
    for bad in (0, -1.0, float("inf"), "1", True):
        with pytest.raises(ValueError, match="metric 'huber': alpha="):
            create("metric", "huber", {"alpha": bad})


# -- in a fit ------------------------------------------------------------------------------------
def test_new_metrics_are_recorded_in_fits():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 4))
    y = (X[:, 0] + rng.normal(size=1200) > 0).astype(int)
    clf = BoostClassifier(n_estimators=15, eval_metric=["average_precision", "f1"],
                          random_state=0).fit(X[:800], y[:800], eval_set=[(X[800:], y[800:])])
    curves = clf.evals_result_["valid_0"]
    p = clf.predict_proba(X[800:])[:, 1]
    _close(curves["average_precision"][-1], sk.average_precision_score(y[800:], p))
    _close(curves["f1"][-1], sk.f1_score(y[800:], clf.predict(X[800:])))
    y3 = np.digitize(X[:, 0] + 0.5 * rng.normal(size=1200), [-0.5, 0.5])
    clf3 = BoostClassifier(n_estimators=15, eval_metric=["auc_ovr", "auc_ovo"],
                           random_state=0).fit(X[:800], y3[:800],
                                               eval_set=[(X[800:], y3[800:])])
    p3 = clf3.predict_proba(X[800:])
    _close(clf3.evals_result_["valid_0"]["auc_ovr"][-1],
           sk.roc_auc_score(y3[800:], p3, multi_class="ovr"))
    _close(clf3.evals_result_["valid_0"]["auc_ovo"][-1],
           sk.roc_auc_score(y3[800:], p3, multi_class="ovo"))
    target = X[:, 0] * 3 + 10 + rng.normal(size=1200)
    reg = BoostRegressor(n_estimators=15, eval_metric=["mape", "huber"], random_state=0)
    reg.fit(X[:800], target[:800], eval_set=[(X[800:], target[800:])])
    _close(reg.evals_result_["valid_0"]["mape"][-1],
           sk.mean_absolute_percentage_error(target[800:], reg.predict(X[800:])))
