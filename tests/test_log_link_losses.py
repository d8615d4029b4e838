"""The log-link regression losses (poisson, gamma, tweedie): derivatives against finite
differences, the best constant in closed form, their domains, and fits that beat mse on
data of their distribution."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from boostlib import BoostRegressor, registry
from boostlib.testing import check_loss

LOSSES = [("poisson", {}), ("gamma", {}), ("tweedie", {"variance_power": 1.2}),
          ("tweedie", {"variance_power": 1.5}), ("tweedie", {"variance_power": 1.9})]


def _targets(name, rng, n):
    return rng.gamma(2.0, 1.5, n) if name == "gamma" else rng.poisson(2.0, n).astype(float)


@pytest.mark.parametrize("name,params", LOSSES)
def test_conformance_and_finite_differences(name, params):
    rng = np.random.default_rng(0)
    check_loss(registry.create("loss", name, params), y=_targets(name, rng, 256),
               raw=rng.normal(0.0, 1.0, 256))


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(LOSSES), y=hnp.arrays(np.float64, st.integers(1, 30),
                                                  elements=st.floats(0.01, 50.0)),
       weighted=st.booleans())
def test_the_start_is_the_best_constant(case, y, weighted):
    """init_raw = log(weighted mean of y): the weighted gradient sum vanishes there, and the
    mean loss is no lower a little to either side."""
    name, params = case
    loss = registry.create("loss", name, params)
    w = np.linspace(0.5, 2.0, y.size) if weighted else None
    z = loss.init_raw(y, w)
    assert z == pytest.approx(np.log(np.average(y, weights=w)), rel=1e-12, abs=1e-12)
    g, h = np.empty(y.size), np.empty(y.size)
    loss.gradient_hessian(y, np.full(y.size, z), g, h)
    scale = np.average(np.abs(g) + np.abs(y), weights=w)
    assert abs(np.average(g, weights=w)) <= 1e-9 * scale
    assert np.all(h >= 0)

    def mean(c):
        return np.average(loss.loss(y, np.full(y.size, c)), weights=w)
    assert mean(z) <= min(mean(z - 1e-3), mean(z + 1e-3)) + 1e-12 * abs(mean(z))


def test_domains_and_parameters_are_named():
    with pytest.raises(ValueError, match="'gamma' needs targets > 0"):
        registry.create("loss", "gamma").validate_target(np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="'poisson' needs targets >= 0"):
        registry.create("loss", "poisson").validate_target(np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="needs some target > 0"):
        registry.create("loss", "tweedie").validate_target(np.zeros(3))
    with pytest.raises(ValueError, match="variance_power=2.5 is invalid"):
        registry.create("loss", "tweedie", {"variance_power": 2.5})
    with pytest.raises(ValueError, match="classification loss|regression"):
        from boostlib import BoostClassifier
        BoostClassifier(loss="poisson").fit(np.zeros((4, 1)), [0, 1, 0, 1])


@pytest.mark.parametrize("name,params,metric", [
    ("poisson", {}, "poisson"), ("gamma", {}, "gamma"),
    ("tweedie", {"variance_power": 1.5}, "tweedie")])
@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
def test_fits_learn_their_mean_structure(name, params, metric, policy):
    """Well below the best constant's deviance, and positive predictions exp(raw)."""
    rng = np.random.default_rng(1)
    n = 6000
    X = rng.normal(size=(n, 5))
    mu = np.exp(0.6 * X[:, 0] - 0.4 * X[:, 1])
    y = rng.gamma(2.0, mu / 2.0) if name == "gamma" else rng.poisson(mu).astype(float)
    if name == "tweedie":
        y = np.where(rng.random(n) < 0.3, 0.0, rng.gamma(2.0, mu / 2.0))
    tr, te = slice(0, 4500), slice(4500, n)
    common = dict(n_estimators=100, max_depth=4, grow_policy=policy, random_state=0)
    model = BoostRegressor(loss=name, loss_params=params, **common).fit(X[tr], y[tr])
    pred = model.predict(X[te])
    assert np.all(pred > 0)
    np.testing.assert_allclose(pred, np.exp(model.model_.predict(X[te], raw=True)),
                               rtol=1e-15)
    deviance = registry.create("metric", metric, params if name == "tweedie" else None)
    constant = np.full(pred.size, np.mean(y[tr]))
    assert deviance(y[te], pred) < 0.85 * deviance(y[te], constant)


@pytest.mark.parametrize("update", ["sgb", "sglb", "agbm", "agbmr"])
@pytest.mark.parametrize("sampler", [None, "uniform", "goss", "mvs"])
@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
def test_every_sampler_and_update_rule_trains_every_log_link_loss(update, sampler, policy):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(600, 4))
    mu = np.exp(0.5 * X[:, 0])
    targets = {"poisson": rng.poisson(mu).astype(float), "gamma": rng.gamma(2.0, mu / 2.0),
               "tweedie": np.where(rng.random(600) < 0.3, 0.0, rng.gamma(2.0, mu / 2.0))}
    for name, y in targets.items():
        model = BoostRegressor(n_estimators=6, loss=name, update=update, sampler=sampler,
                               subsample=0.5 if sampler else 1.0, grow_policy=policy,
                               random_state=0).fit(X, y)
        pred = model.predict(X)
        assert np.all(np.isfinite(pred)) and np.all(pred > 0), (name, update, sampler)
