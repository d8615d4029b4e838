"""boostlib-bayesian-bootstrap: weights, conformance, discovery, training through boostlib."""
import inspect
from importlib import metadata

import boostlib_bayesian_bootstrap
import numpy as np
import pytest
from boostlib_bayesian_bootstrap import BayesianBootstrap

import boostlib
from boostlib import BoostRegressor, registry
from boostlib.api import Sampler
from boostlib.testing import check_plugin, check_sampler


def test_plugin_conforms():
    found = check_plugin(boostlib_bayesian_bootstrap)
    assert found == {"loss": [], "sampler": ["bayesian_bootstrap"], "update": [], "metric": []}


@pytest.mark.parametrize("temperature", [0.0, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("subsample", [1.0, 0.4])
def test_sampler_conforms(subsample, temperature):
    check_sampler(BayesianBootstrap(subsample=subsample, temperature=temperature))


def _draw(sampler, n=200_000, seed=0):
    g = np.zeros(n)
    return sampler.sample(g, np.ones(n), np.random.default_rng(seed), 0)


def test_every_row_is_kept_with_exponential_weights():
    res = _draw(BayesianBootstrap())
    np.testing.assert_array_equal(res.indices, np.arange(200_000, dtype=np.int32))
    w = res.weights
    assert w.dtype == np.float64 and w.min() >= 0
    assert abs(w.mean() - 1.0) < 0.01 and abs(w.var() - 1.0) < 0.03   # Exp(1)


def test_temperature_shapes_the_weights():
    # E[E^t] = Gamma(t + 1) for E ~ Exp(1): 2 for t = 2, sqrt(pi)/2 for t = 0.5
    assert abs(_draw(BayesianBootstrap(temperature=2.0)).weights.mean() - 2.0) < 0.05
    half = _draw(BayesianBootstrap(temperature=0.5)).weights
    assert abs(half.mean() - np.sqrt(np.pi) / 2) < 0.01
    assert half.std() < _draw(BayesianBootstrap(temperature=1.0)).weights.std()
    assert _draw(BayesianBootstrap(temperature=0.0)) is None      # weight 1 everywhere


def test_subsample_drops_rows_then_weights_the_rest():
    res = _draw(BayesianBootstrap(subsample=0.3, temperature=0.0))
    assert abs(res.indices.size / 200_000 - 0.3) < 0.01
    np.testing.assert_array_equal(res.weights, 1.0)
    tiny = BayesianBootstrap(subsample=0.01).sample(np.zeros(3), np.ones(3),
                                                    np.random.default_rng(5), 0)
    assert tiny.indices.size >= 1


def test_draws_depend_only_on_the_generator():
    a, b = _draw(BayesianBootstrap(), seed=7), _draw(BayesianBootstrap(), seed=7)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert not np.array_equal(a.weights, _draw(BayesianBootstrap(), seed=8).weights)


@pytest.mark.parametrize("params, message", [
    ({"temperature": -1.0}, "temperature=-1.0 is invalid"),
    ({"temperature": float("nan")}, "temperature=nan is invalid"),
    ({"temperature": True}, "temperature=True is invalid"),
    ({"subsample": 0.0}, "subsample=0.0 is invalid"),
])
def test_invalid_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        BayesianBootstrap(**params)


def _installed() -> bool:
    try:
        metadata.distribution("boostlib-bayesian-bootstrap")
    except metadata.PackageNotFoundError:
        return False
    return not registry.autoload_disabled()


@pytest.mark.skipif(not _installed(), reason="boostlib-bayesian-bootstrap is not installed "
                                             "or BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD is set")
def test_found_through_its_entry_point():
    entry = next(e for e in registry.entries("sampler") if e.name == "bayesian_bootstrap")
    assert entry.distribution == "boostlib-bayesian-bootstrap"
    assert entry.version == boostlib_bayesian_bootstrap.__version__
    sampler = boostlib.create("sampler", "bayesian_bootstrap", {"temperature": 2.0},
                              subsample=1.0)
    assert isinstance(sampler, BayesianBootstrap) and sampler.temperature == 2.0


@pytest.fixture
def sampler_available():
    """The sampler by name: from the entry point, or registered in-process from the source."""
    name = None
    if "bayesian_bootstrap" not in boostlib.available("sampler"):
        name = registry.register_plugin(boostlib_bayesian_bootstrap, "bayesian_bootstrap_tests")
    yield
    if name:
        registry.unregister_plugin(name)


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return X, X[:, 0] - 2 * np.abs(X[:, 1]) + 0.5 * rng.normal(size=n)


def test_trains_reproducibly_through_the_estimator(sampler_available):
    X, y = _data()
    params = {"sampler": "bayesian_bootstrap", "n_estimators": 40, "random_state": 3}
    a = BoostRegressor(n_jobs=1, **params).fit(X, y)
    b = BoostRegressor(n_jobs=2, **params).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    plain = BoostRegressor(n_estimators=40, random_state=3).fit(X, y)
    assert not np.array_equal(a.predict(X), plain.predict(X))
    assert np.corrcoef(a.predict(X), plain.predict(X))[0, 1] > 0.95
    cold = BoostRegressor(sampler="bayesian_bootstrap", sampler_params={"temperature": 0.0},
                          n_estimators=40, random_state=3).fit(X, y)
    np.testing.assert_array_equal(cold.predict(X), plain.predict(X))


@pytest.mark.skipif("leaf_values" not in inspect.signature(Sampler.__init__).parameters,
                    reason="this boostlib has no leaf_values option")
def test_catboost_mode_leaf_values_on_all_rows(sampler_available):
    X, y = _data()
    models = {mode: BoostRegressor(sampler="bayesian_bootstrap",
                                   sampler_params={"leaf_values": mode},
                                   n_estimators=20, random_state=0).fit(X, y)
              for mode in ("sample", "all")}
    pred = {mode: m.predict(X) for mode, m in models.items()}
    assert np.isfinite(pred["all"]).all()
    assert not np.array_equal(pred["all"], pred["sample"])   # same structures, other leaves
