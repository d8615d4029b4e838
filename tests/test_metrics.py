"""Evaluation metrics: every built-in agrees with scikit-learn's function of the same meaning
(weights and ties included), and the registry, parameters and task checks behave."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from optional_imports import importorskip

from boostlib import registry
from boostlib.api import Metric

sk = importorskip("sklearn.metrics")

TOL = 1e-9
BUILTIN = ["logloss", "multi_logloss", "auc", "accuracy", "error", "rmse", "mae", "r2",
           "quantile", "poisson", "gamma", "tweedie"]


def test_builtins_are_registered_metrics():
    assert set(BUILTIN) <= set(registry.available("metric"))
    for name in BUILTIN:
        metric = registry.create("metric", name)
        assert isinstance(metric, Metric) and metric.name == name
        assert metric.reads in ("raw", "response", "class")


@st.composite
def _case(draw, kind):
    n = draw(st.integers(2, 60))
    weighted = draw(st.booleans())
    w = draw(hnp.arrays(np.float64, n, elements=st.floats(0.1, 5.0))) if weighted else None
    if kind == "binary":
        y = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0])))
        y[0], y[1] = 0.0, 1.0                     # both classes
        # few distinct values: many ties
        pred = draw(hnp.arrays(np.float64, n, elements=st.sampled_from(
            [0.05, 0.2, 0.2000000001, 0.5, 0.7, 0.95])))
    elif kind == "multiclass":
        k = draw(st.integers(2, 5))
        y = draw(hnp.arrays(np.float64, n, elements=st.integers(0, k - 1).map(float)))
        raw = draw(hnp.arrays(np.float64, (n, k), elements=st.floats(-3, 3)))
        pred = np.exp(raw) / np.exp(raw).sum(axis=1, keepdims=True)
    else:
        y = draw(hnp.arrays(np.float64, n, elements=st.floats(0.1, 50)))
        pred = draw(hnp.arrays(np.float64, n, elements=st.floats(0.1, 50)))
    return y, pred, w


def _close(got, want):
    assert got == pytest.approx(want, rel=TOL, abs=TOL)


@settings(max_examples=150, deadline=None)
@given(_case("binary"))
def test_binary_metrics_equal_sklearn(case):
    y, p, w = case
    _close(registry.create("metric", "logloss")(y, p, w), sk.log_loss(y, p, sample_weight=w))
    _close(registry.create("metric", "auc")(y, np.log(p / (1 - p)), w),
           sk.roc_auc_score(y, p, sample_weight=w))
    _close(registry.create("metric", "auc")(y, p, w), sk.roc_auc_score(y, p, sample_weight=w))
    cls = (p > 0.5).astype(float)
    _close(registry.create("metric", "accuracy")(y, cls, w),
           sk.accuracy_score(y, cls, sample_weight=w))
    _close(registry.create("metric", "error")(y, cls, w),
           1 - sk.accuracy_score(y, cls, sample_weight=w))


@settings(max_examples=100, deadline=None)
@given(_case("multiclass"))
def test_multiclass_logloss_equals_sklearn(case):
    y, p, w = case
    labels = np.arange(p.shape[1])
    _close(registry.create("metric", "multi_logloss")(y, p, w),
           sk.log_loss(y, p, sample_weight=w, labels=labels))


@settings(max_examples=150, deadline=None)
@given(_case("regression"), st.floats(0.05, 0.95), st.sampled_from([0.0, 1.0, 1.2, 1.5, 2.0,
                                                                      3.0]))
def test_regression_metrics_equal_sklearn(case, alpha, power):
    y, p, w = case
    _close(registry.create("metric", "rmse")(y, p, w),
           np.sqrt(sk.mean_squared_error(y, p, sample_weight=w)))
    _close(registry.create("metric", "mae")(y, p, w),
           sk.mean_absolute_error(y, p, sample_weight=w))
    if np.all(y == y[0]):       # scikit-learn's rounded mean can give -4e33 here; exact: 0
        assert registry.create("metric", "r2")(y, p, w) == float(np.all(p == y))
    else:
        _close(registry.create("metric", "r2")(y, p, w), sk.r2_score(y, p, sample_weight=w))
    _close(registry.create("metric", "quantile", {"alpha": alpha})(y, p, w),
           sk.mean_pinball_loss(y, p, alpha=alpha, sample_weight=w))
    _close(registry.create("metric", "poisson")(y, p, w),
           sk.mean_poisson_deviance(y, p, sample_weight=w))
    _close(registry.create("metric", "gamma")(y, p, w),
           sk.mean_gamma_deviance(y, p, sample_weight=w))
    _close(registry.create("metric", "tweedie", {"variance_power": power})(y, p, w),
           sk.mean_tweedie_deviance(y, p, power=power, sample_weight=w))


def test_auc_of_a_single_class_and_task_checks_are_named():
    with pytest.raises(ValueError, match="auc.*both classes"):
        registry.create("metric", "auc")([1, 1], [0.2, 0.3])
    with pytest.raises(ValueError, match="'auc' needs a classifier"):
        registry.create("metric", "auc").check_task(1, False)
    with pytest.raises(ValueError, match="'auc' is for two classes"):
        registry.create("metric", "auc").check_task(3, True)
    with pytest.raises(ValueError, match="alpha"):
        registry.create("metric", "quantile", {"alpha": 1.5})
    with pytest.raises(ValueError, match="sample_weight"):
        registry.create("metric", "rmse")([1.0, 2.0], [1.0, 2.0], [1.0, -1.0])
    with pytest.raises(ValueError, match="shape"):
        registry.create("metric", "rmse")([1.0, 2.0], [1.0, 2.0, 3.0])
