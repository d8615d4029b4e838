"""boostlib-huber: the loss's formulas, its conformance, discovery and training through boostlib."""
from importlib import metadata

import boostlib_huber
import numpy as np
import pytest
from boostlib_huber import HuberLoss, weighted_median

import boostlib
from boostlib import BoostRegressor, registry
from boostlib.testing import check_loss, check_plugin


def test_plugin_conforms():
    assert check_plugin(boostlib_huber) == {"loss": ["boostlib_huber"], "sampler": [],
                                            "update": [], "metric": ["boostlib_huber"]}


@pytest.mark.parametrize("delta", [1e-3, 0.3, 1.0, 25.0, 1e12])
@pytest.mark.parametrize("seed", [0, 1])
def test_derivatives_match_finite_differences(delta, seed):
    check_loss(HuberLoss(delta=delta), seed=seed)


def test_formulas_inside_and_outside_delta():
    loss = HuberLoss(delta=0.5)
    y = np.zeros(5)
    raw = np.array([-2.0, -0.5, 0.1, 0.5, 3.0])
    g, h = np.empty(5), np.empty(5)
    assert loss.gradient_hessian(y, raw, g, h) is None
    np.testing.assert_array_equal(g, [-0.5, -0.5, 0.1, 0.5, 0.5])
    np.testing.assert_array_equal(h, [0.0, 1.0, 1.0, 1.0, 0.0])   # the exact hessian
    np.testing.assert_allclose(loss.loss(y, raw), [0.875, 0.125, 0.005, 0.125, 1.375])
    np.testing.assert_array_equal(loss.transform(raw), raw)


def test_newton_leaves_get_a_positive_hessian_floor():
    assert HuberLoss.hessian_can_be_negative
    assert HuberLoss().hessian_floor == 0.1
    assert HuberLoss(hessian_floor=1.0).hessian_floor == 1.0


@pytest.mark.parametrize("params, message", [
    ({"delta": 0}, "delta=0 is invalid"),
    ({"delta": float("inf")}, "delta=inf is invalid"),
    ({"delta": "1"}, "delta='1' is invalid"),
    ({"hessian_floor": 0.0}, "hessian_floor=0.0 is invalid"),
    ({"hessian_floor": 2.0}, "hessian_floor=2.0 is invalid"),
])
def test_invalid_parameters(params, message):
    with pytest.raises(ValueError, match=f"loss 'boostlib_huber': {message}"):
        HuberLoss(**params)


def test_init_raw_is_the_best_constant():
    rng = np.random.default_rng(0)
    y = np.concatenate([rng.normal(size=999), [1e6]])
    assert HuberLoss(delta=1e12).init_raw(y, None) == pytest.approx(np.mean(y), rel=1e-12)
    c = HuberLoss(delta=1.0).init_raw(y, None)
    grid = c + np.linspace(-1e-3, 1e-3, 21)
    values = [HuberLoss(delta=1.0).loss(y, np.full_like(y, v)).sum() for v in grid]
    assert np.argmin(values) == 10          # c minimises the total loss on a fine grid
    assert abs(c - np.median(y)) < 0.05     # and the outlier barely moves it
    w = rng.random(1000)
    cw = HuberLoss(delta=1.0).init_raw(y, w)
    d = np.dot(w, np.clip(cw - y, -1.0, 1.0))
    assert abs(d) < 1e-9 * w.sum()          # weighted first-order condition


def test_weighted_median():
    y = np.array([3.0, 1.0, 2.0, 10.0])
    assert weighted_median(y) == 2.5
    assert weighted_median(y, np.ones(4)) == 2.5
    assert weighted_median(y, np.array([1.0, 1.0, 1.0, 0.0])) == 2.0
    assert weighted_median(y, np.array([0.0, 0.0, 0.0, 5.0])) == 10.0


def _installed() -> bool:
    try:
        metadata.distribution("boostlib-huber")
    except metadata.PackageNotFoundError:
        return False
    return not registry.autoload_disabled()


@pytest.mark.skipif(not _installed(), reason="boostlib-huber is not installed (pip install .) "
                                             "or BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD is set")
def test_found_through_its_entry_point():
    entry = next(e for e in registry.entries("loss") if e.name == "boostlib_huber")
    assert (entry.distribution, entry.version) == ("boostlib-huber", boostlib_huber.__version__)
    assert entry.plugin == "boostlib_huber"
    assert isinstance(boostlib.create("loss", "boostlib_huber", {"delta": 2.0}), HuberLoss)


@pytest.fixture
def huber_available():
    """The loss by name: from the entry point, or registered in-process from the source tree."""
    name = None
    if "boostlib_huber" not in boostlib.available("loss"):
        name = registry.register_plugin(boostlib_huber, "boostlib_huber_tests")
    yield
    if name:
        registry.unregister_plugin(name)


def _outlier_data(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    f = 2 * np.sin(X[:, 0]) + X[:, 1] ** 2 - X[:, 2]
    y = f + rng.normal(0, 0.3, n)
    bad = rng.random(n) < 0.1
    y[bad] += rng.standard_cauchy(bad.sum()) * 50
    return X, y, f


def test_huber_is_robust_where_mse_is_not(huber_available):
    X, y, _ = _outlier_data()
    Xt, _, ft = _outlier_data(seed=1)
    params = {"n_estimators": 150, "max_depth": 4, "random_state": 0}
    huber = BoostRegressor(loss="boostlib_huber", loss_params={"delta": 1.0}, **params).fit(X, y)
    mse = BoostRegressor(loss="mse", **params).fit(X, y)
    err_huber = np.sqrt(np.mean((huber.predict(Xt) - ft) ** 2))
    err_mse = np.sqrt(np.mean((mse.predict(Xt) - ft) ** 2))
    assert err_huber < 0.5 < 5 * err_huber < err_mse


def test_huge_delta_trains_the_mse_model(huber_available):
    X, _, f = _outlier_data()
    params = {"n_estimators": 30, "max_depth": 5, "random_state": 0, "n_jobs": 1}
    huber = BoostRegressor(loss="boostlib_huber", loss_params={"delta": 1e12}, **params).fit(X, f)
    mse = BoostRegressor(loss="mse", **params).fit(X, f)
    np.testing.assert_allclose(huber.predict(X), mse.predict(X), rtol=0, atol=1e-9)


@pytest.mark.parametrize("leaf_estimation", ["newton", "gradient"])
@pytest.mark.parametrize("grow_policy", ["symmetric", "depthwise"])
def test_trains_with_every_tree_and_leaf_setting(huber_available, leaf_estimation,
                                                 grow_policy):
    X, y, f = _outlier_data(n=1000)
    model = BoostRegressor(loss="boostlib_huber", n_estimators=40, grow_policy=grow_policy,
                           leaf_estimation=leaf_estimation,
                           random_state=0).fit(X, y, eval_set=[(X, y)])
    curve = model.evals_result_["valid_0"]["boostlib_huber"]
    assert curve[-1] < curve[0]
    assert np.corrcoef(model.predict(X), f)[0, 1] > 0.9


def test_the_metric_is_the_mean_loss(huber_available):
    from boostlib_huber import HuberMetric

    rng = np.random.default_rng(0)
    y, pred, w = rng.normal(size=50) * 3, rng.normal(size=50) * 3, rng.random(50)
    metric = boostlib.create("metric", "boostlib_huber", {"delta": 0.7})
    assert isinstance(metric, HuberMetric)
    expected = np.average(HuberLoss(0.7).loss(y, pred), weights=w)
    assert metric(y, pred, w) == pytest.approx(expected, rel=1e-12)


def test_the_metric_is_recorded_and_drives_early_stopping(huber_available):
    X, y, _ = _outlier_data()
    model = BoostRegressor(n_estimators=300, eval_metric="boostlib_huber",
                           early_stopping_rounds=10,
                           random_state=0).fit(X[:2000], y[:2000],
                                               eval_set=[(X[2000:], y[2000:])])
    curve = model.evals_result_["valid_0"]["boostlib_huber"]
    assert model.best_iteration_ == int(np.argmin(curve))
    assert curve[model.best_iteration_] == pytest.approx(
        boostlib.create("metric", "boostlib_huber")(y[2000:], model.predict(X[2000:])), rel=1e-12)

