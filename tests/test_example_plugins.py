"""The example plugin distributions of plugins/, installed, used through the public API.

These tests run only when the distributions are installed (``pip install ./plugins/NAME``, as
CI does): boostlib must then find them through their entry points, by name, exactly as a user
gets them. Otherwise they are skipped (they fail instead when BOOSTLIB_REQUIRE_EXAMPLE_PLUGINS
is set, as in CI).
"""
import os
from importlib import metadata

import numpy as np
import pytest

from optional_imports import importorskip

import boostlib
from boostlib import BoostClassifier, BoostRegressor, registry
from boostlib.frontend.cli import main
from boostlib.testing import check_plugin

PLUGINS = {  # distribution: (module, kind, registered name)
    "boostlib-huber": ("boostlib_huber", "loss", "boostlib_huber"),
    "boostlib-bayesian-bootstrap": ("boostlib_bayesian_bootstrap", "sampler",
                                    "bayesian_bootstrap"),
}


def _require(dist):
    """The plugin's module; skip when it is not installed (fail under CI's switch)."""
    module, _, _ = PLUGINS[dist]
    missing = pytest.fail if os.environ.get("BOOSTLIB_REQUIRE_EXAMPLE_PLUGINS") else pytest.skip
    try:
        metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        missing(f"{dist} is not installed (pip install ./plugins/{dist})")
    if registry.autoload_disabled():
        missing("BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD is set")
    return importorskip(module)


@pytest.fixture
def huber():
    return _require("boostlib-huber")


@pytest.fixture
def bayesian_bootstrap():
    return _require("boostlib-bayesian-bootstrap")


@pytest.mark.parametrize("dist", sorted(PLUGINS))
def test_discovered_through_entry_points(dist, capsys):
    module = _require(dist)
    _, kind, name = PLUGINS[dist]
    assert registry.load_failures() == []
    entry = next(e for e in registry.entries(kind) if e.name == name)
    assert (entry.distribution, entry.version) == (dist, metadata.version(dist))
    assert main(["plugins"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.split()[:1] == [name])
    assert f"{dist} {metadata.version(dist)}" in line and "entry point" in line
    check_plugin(module)


def _outliers(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    f = 2 * np.sin(X[:, 0]) + X[:, 1] * X[:, 2] - np.abs(X[:, 3])
    y = f + rng.normal(0, 0.3, n)
    bad = rng.random(n) < 0.1
    y[bad] += rng.standard_cauchy(bad.sum()) * 30
    return X, y, f


@pytest.mark.parametrize("grow_policy", ["symmetric", "depthwise"])
def test_huber_regressor_resists_outliers(huber, grow_policy):
    X, y, _ = _outliers(4000, 0)
    Xt, yt, ft = _outliers(2000, 1)
    params = {"n_estimators": 120, "max_depth": 4, "grow_policy": grow_policy,
              "random_state": 0}
    robust = BoostRegressor(loss="boostlib_huber", loss_params={"delta": 1.0}, **params)
    robust.fit(X, y, eval_set=[(Xt, yt)])
    plain = BoostRegressor(loss="mse", **params).fit(X, y)
    assert isinstance(robust.loss_, huber.HuberLoss)
    assert "boostlib_huber" in robust.evals_result_["valid_0"]
    rmse = {m: float(np.sqrt(np.mean((model.predict(Xt) - ft) ** 2)))
            for m, model in (("huber", robust), ("mse", plain))}
    assert rmse["huber"] < 0.5 and rmse["huber"] * 5 < rmse["mse"], rmse


def test_bayesian_bootstrap_classifier(bayesian_bootstrap, higgs):
    X, y, Xt, yt = higgs
    params = {"n_estimators": 60, "random_state": 0}
    bagged = BoostClassifier(sampler="bayesian_bootstrap", **params).fit(X, y)
    again = BoostClassifier(sampler="bayesian_bootstrap", n_jobs=1, **params).fit(X, y)
    np.testing.assert_array_equal(bagged.predict_proba(Xt), again.predict_proba(Xt))
    plain = BoostClassifier(**params).fit(X, y)
    p, q = bagged.predict_proba(Xt)[:, 1], plain.predict_proba(Xt)[:, 1]

    def logloss(prob):
        return -np.mean(yt * np.log(prob) + (1 - yt) * np.log(1 - prob))

    assert logloss(p) < logloss(q) + 0.02          # no worse than without bagging
    assert not np.array_equal(p, q)


def test_plugins_combine_with_each_other_and_the_builtins(huber, bayesian_bootstrap):
    X, y, f = _outliers(2000, 2)
    for update in boostlib.available("update"):
        rf = {"learning_rate": 1.0} if update == "rf" else {}   # averaged, not shrunk
        model = BoostRegressor(loss="boostlib_huber", sampler="bayesian_bootstrap",
                               sampler_params={"temperature": 0.5}, update=update,
                               n_estimators=30, random_state=1, **rf).fit(X, y)
        # A random forest fits every tree to the Huber gradients at the starting score,
        # clipped at the outliers' scale, so it recovers f less closely (0.80; the
        # built-in huber loss's forest: 0.80 too; mse's: 0.03).
        assert np.corrcoef(model.predict(X), f)[0, 1] > (0.75 if update == "rf" else 0.9), \
            update


def test_a_plugin_metric_by_name_from_the_api_and_the_command_line(huber, tmp_path, caplog):
    """The example distribution's metric "boostlib_huber", found through its entry point, is
    recorded by name through the estimators and through `boostlib train --eval-metric`."""
    assert "boostlib_huber" in registry.available("metric")
    X, y, _ = _outliers(1500, 0)
    model = BoostRegressor(n_estimators=30, eval_metric=["boostlib_huber", "rmse"],
                           random_state=0)
    model.fit(X[:1000], y[:1000], eval_set=[(X[1000:], y[1000:])])
    curves = model.evals_result_["valid_0"]
    assert list(curves) == ["mse", "boostlib_huber", "rmse"]
    assert len(curves["boostlib_huber"]) == 30
    assert curves["boostlib_huber"][-1] == pytest.approx(
        boostlib.create("metric", "boostlib_huber")(y[1000:], model.predict(X[1000:])),
        rel=1e-12)
    data = tmp_path / "train.csv"
    np.savetxt(data, np.column_stack([X, y]), delimiter=",", comments="",
               header=",".join([f"x{j}" for j in range(X.shape[1])] + ["y"]))
    with caplog.at_level("INFO", logger="boostlib"):     # (logging is configured in pytest)
        assert main(["train", str(data), "--target", "y", "--task", "regression",
                     "--eval-fraction", "0.2", "--eval-metric", "boostlib_huber",
                     "--n-estimators", "20", "--verbose", "5",
                     "--output", str(tmp_path / "m.json")]) == 0
    assert "valid_0 boostlib_huber=" in caplog.text
    params = boostlib.load_model(tmp_path / "m.json").get_params()
    assert params["eval_metric"] == "boostlib_huber"
