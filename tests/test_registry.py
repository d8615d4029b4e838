"""The plugin registry: built-ins registered through the public hooks, lookups, errors."""
import numpy as np
import pytest

import boostlib
from boostlib import PluginError, registry
from boostlib.api import SampleResult, Sampler, UpdateRule, hookimpl
from boostlib.losses import LogLoss, MSELoss


def test_builtins_available():
    assert {"logloss", "mse", "sla"} <= set(boostlib.available("loss"))
    assert "uniform" in boostlib.available("sampler")
    assert "sgb" in boostlib.available("update")
    with pytest.raises(ValueError, match="kind='losses' is invalid"):
        boostlib.available("losses")


def test_builtins_come_from_the_same_hooks_as_third_parties():
    providers = {e.name: e.provider for e in registry.entries("loss")}
    assert providers["logloss"] == "boostlib.losses"


def test_create_builds_instances_with_params():
    sla = boostlib.create("loss", "sla", {"scale": 0.5})
    assert sla.scale == 0.5
    s = boostlib.create("sampler", "uniform", subsample=0.3)
    assert s.subsample == 0.3
    inst = MSELoss()
    assert boostlib.create("loss", inst) is inst
    with pytest.raises(PluginError, match="loss_params must be empty"):
        boostlib.create("loss", inst, {"a": 1})
    with pytest.raises(PluginError, match="available: logloss, mse, sla"):
        boostlib.create("loss", "nope")


class _DuplicateLoss:
    @hookimpl
    def boostlib_add_losses(self):
        return {"logloss": LogLoss}


def test_duplicate_name_names_both_providers(temp_plugin):
    with pytest.raises(PluginError, match="loss 'logloss' is registered twice: by "
                                          "boostlib.losses and by dup_plugin"):
        temp_plugin(_DuplicateLoss(), "dup_plugin")
    assert "logloss" in boostlib.available("loss")   # registry left unchanged


class _NotALoss:
    @hookimpl
    def boostlib_add_losses(self):
        return {"fake": lambda: object()}


def test_factory_returning_wrong_type(temp_plugin):
    temp_plugin(_NotALoss(), "fake_plugin")
    with pytest.raises(PluginError, match="loss 'fake' \\(from fake_plugin\\) returned object"):
        boostlib.create("loss", "fake")


class _BadName:
    @hookimpl
    def boostlib_add_samplers(self):
        return {"Bad Name": object}


def test_invalid_name_rejected(temp_plugin):
    with pytest.raises(PluginError, match="plugin bad_names: sampler name 'Bad Name'"):
        temp_plugin(_BadName(), "bad_names")


class NaNLoss(LogLoss):
    name = "nan_loss"

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        super().gradient_hessian(y, raw, gradient, hessian, n_threads)
        gradient[0] = np.nan


class BadSampler(Sampler):
    name = "bad_sampler"

    def sample(self, gradient, hessian, rng, iteration):
        return SampleResult(indices=np.array([3, 1], dtype=np.int32))


class _Broken:
    @hookimpl
    def boostlib_add_losses(self):
        return {"nan_loss": NaNLoss}

    @hookimpl
    def boostlib_add_samplers(self):
        return {"bad_sampler": BadSampler}


def test_misbehaving_plugins_reported_by_name(temp_plugin, binary_data):
    X, y = binary_data
    temp_plugin(_Broken(), "broken")
    with pytest.raises(PluginError, match="loss 'nan_loss' returned non-finite gradients"):
        boostlib.BoostClassifier(loss="nan_loss", n_estimators=2).fit(X, y)
    with pytest.raises(PluginError, match="sampler 'bad_sampler' returned indices .* not "
                                          "sorted and unique"):
        boostlib.BoostClassifier(sampler="bad_sampler", n_estimators=2).fit(X, y)


class HalfStep(UpdateRule):
    """A third-party style rule: SGB with half the learning rate."""

    name = "half_step"

    def step(self, ctx):
        g, h = ctx.gradients()
        ctx.add_tree(ctx.fit_tree(g, h, ctx.sample(g, h)), 0.5 * ctx.learning_rate)


class _HalfPlugin:
    @hookimpl
    def boostlib_add_updates(self):
        return {"half_step": HalfStep}


def test_third_party_update_rule_is_wired_in(temp_plugin, binary_data):
    X, y = binary_data
    temp_plugin(_HalfPlugin(), "half")
    a = boostlib.BoostClassifier(update="half_step", n_estimators=10, learning_rate=0.2,
                                 random_state=0).fit(X, y)
    b = boostlib.BoostClassifier(update="sgb", n_estimators=10, learning_rate=0.1,
                                 random_state=0).fit(X, y)
    assert np.array_equal(a.decision_function(X), b.decision_function(X))
