"""The built-in ``huber`` loss (LightGBM's, ``alpha`` its delta): derivatives against finite
differences, the exact formulas, the best constant, training, and no clash with the example
plugin ``boostlib_huber``."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from boostlib import BoostRegressor, create, load_model, registry
from boostlib.builtin.losses import HuberLoss
from boostlib.testing import check_loss


@pytest.mark.parametrize("alpha", [1e-3, 0.3, 0.9, 25.0, 1e12])
@pytest.mark.parametrize("seed", [0, 1])
def test_derivatives_match_finite_differences(alpha, seed):
    check_loss(create("loss", "huber", {"alpha": alpha}), seed=seed)


def test_formulas_inside_and_outside_alpha():
    loss = create("loss", "huber", {"alpha": 0.5})
    assert isinstance(loss, HuberLoss) and create("loss", "huber").alpha == 0.9
    y = np.zeros(5)
    raw = np.array([-2.0, -0.5, 0.1, 0.5, 3.0])
    g, h = np.empty(5), np.empty(5)
    assert loss.gradient_hessian(y, raw, g, h) is None
    np.testing.assert_array_equal(g, [-0.5, -0.5, 0.1, 0.5, 0.5])
    np.testing.assert_array_equal(h, [0.0, 1.0, 1.0, 1.0, 0.0])     # the exact hessian
    np.testing.assert_allclose(loss.loss(y, raw), [0.875, 0.125, 0.005, 0.125, 1.375])
    np.testing.assert_array_equal(loss.transform(raw), raw)
    # Newton leaves see max(h, 1) = 1 on every row: LightGBM's constant hessian
    assert loss.hessian_can_be_negative and loss.hessian_floor == 1.0
    assert loss.link == "identity"


@pytest.mark.parametrize("bad", [0, -0.5, float("inf"), float("nan"), "1", True, None])
def test_invalid_alpha_is_named(bad):
    with pytest.raises(ValueError, match="loss 'huber': alpha="):
        create("loss", "huber", {"alpha": bad})


def _total(y, c, alpha, w):
    r = np.abs(c - y)
    return float(np.sum(w * np.where(r <= alpha, 0.5 * r * r, alpha * (r - 0.5 * alpha))))


@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 30),
                  elements=st.one_of(st.floats(-100, 100), st.sampled_from([0.0, 1.0, 5.0]))),
       st.sampled_from([1e-3, 0.5, 0.9, 4.0, 1e9]), st.booleans(), st.randoms())
def test_init_raw_minimises_the_weighted_loss(y, alpha, weighted, rnd):
    """The start solves the first-order condition, and no point of a fine grid around it,
    nor any target value, has a smaller weighted total."""
    w = np.array([rnd.choice([0.0, 0.3, 1.0, 2.5]) for _ in y]) if weighted else None
    if w is not None and not w.sum() > 0:
        w[0] = 1.0
    ww = np.ones_like(y) if w is None else w
    c = create("loss", "huber", {"alpha": alpha}).init_raw(y, w)
    scale = max(1.0, float(np.max(np.abs(y))))
    best = _total(y, c, alpha, ww)
    candidates = np.concatenate([y[ww > 0], c + scale * np.linspace(-1e-3, 1e-3, 41)])
    assert all(best <= _total(y, v, alpha, ww) * (1 + 1e-12) + 1e-12 for v in candidates)


def test_init_raw_limits():
    rng = np.random.default_rng(0)
    y = np.concatenate([rng.normal(size=999), [1e6]])
    assert create("loss", "huber", {"alpha": 1e12}).init_raw(y, None) == \
        pytest.approx(np.mean(y), rel=1e-12)
    assert abs(create("loss", "huber", {"alpha": 1.0}).init_raw(y, None) - np.median(y)) < 0.05


def _outlier_data(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    f = 2 * np.sin(X[:, 0]) + X[:, 1] ** 2 - X[:, 2]
    y = f + rng.normal(0, 0.3, n)
    bad = rng.random(n) < 0.1
    y[bad] += rng.standard_cauchy(bad.sum()) * 50
    return X, y, f


def test_huber_is_robust_where_mse_is_not(tmp_path):
    X, y, _ = _outlier_data()
    Xt, _, ft = _outlier_data(seed=1)
    params = {"n_estimators": 150, "max_depth": 4, "random_state": 0}
    huber = BoostRegressor(loss="huber", loss_params={"alpha": 1.0}, eval_metric="huber",
                           **params).fit(X, y, eval_set=[(Xt, ft)])
    mse = BoostRegressor(loss="mse", **params).fit(X, y)
    err_huber = np.sqrt(np.mean((huber.predict(Xt) - ft) ** 2))
    err_mse = np.sqrt(np.mean((mse.predict(Xt) - ft) ** 2))
    assert err_huber < 0.5 < 5 * err_huber < err_mse
    # the metric named like the loss takes the loss's curve; its alpha is its own parameter
    # (default 0.9), not the loss's
    curve = huber.evals_result_["valid_0"]["huber"]
    assert curve[-1] == pytest.approx(create("metric", "huber")(ft, huber.predict(Xt)),
                                      rel=1e-12)
    huber.save_model(tmp_path / "huber.json")
    loaded = load_model(tmp_path / "huber.json")
    assert loaded.loss_.alpha == 1.0
    np.testing.assert_array_equal(loaded.predict(Xt), huber.predict(Xt))


def test_huge_alpha_trains_the_mse_model():
    X, _, f = _outlier_data()
    params = {"n_estimators": 30, "max_depth": 5, "random_state": 0, "n_jobs": 1}
    huber = BoostRegressor(loss="huber", loss_params={"alpha": 1e12}, **params).fit(X, f)
    mse = BoostRegressor(loss="mse", **params).fit(X, f)
    np.testing.assert_allclose(huber.predict(X), mse.predict(X), rtol=0, atol=1e-9)


def test_the_example_plugin_does_not_clash():
    """The example distribution registers ``boostlib_huber``; both load side by side."""
    import os
    import sys

    src = os.path.join(os.path.dirname(__file__), "..", "plugins", "boostlib-huber", "src")
    sys.path.insert(0, src)
    try:
        import boostlib_huber
    finally:
        sys.path.remove(src)
    # Installed (as CI's plugin run does), it is registered through its entry point already.
    installed = "boostlib_huber" in registry.available("loss")
    name = None if installed else registry.register_plugin(boostlib_huber,
                                                           "boostlib_huber_clash_test")
    try:
        assert {"huber", "boostlib_huber"} <= set(registry.available("loss"))
        assert {"huber", "boostlib_huber"} <= set(registry.available("metric"))
        assert isinstance(create("loss", "huber"), HuberLoss)
        assert type(create("loss", "boostlib_huber")).__name__ == "HuberLoss"
        assert type(create("loss", "boostlib_huber")) is not HuberLoss
    finally:
        if name is not None:
            registry.unregister_plugin(name)
