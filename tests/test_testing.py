"""boostlib.testing: the conformance helpers pass every built-in and catch broken plugins."""
import random
import types

import numpy as np
import pytest

from boostlib import create, registry
from boostlib.api import Loss, Sampler, SampleResult, UpdateRule, hookimpl
from boostlib.builtin.losses import LogLoss, MSELoss, SLALoss
from boostlib.builtin.samplers import UniformSampler
from boostlib.testing import check_loss, check_plugin, check_sampler, check_update_rule
from boostlib.builtin.updates import SGB


def _builtin(kind):
    return [e.name for e in registry.entries(kind) if e.plugin in registry.BUILTIN_PLUGINS]


# -- the built-ins conform ---------------------------------------------------------------------
@pytest.mark.parametrize("name", _builtin("loss"))
def test_builtin_losses_pass(name):
    check_loss(create("loss", name))


@pytest.mark.parametrize("scale", [0.05, 0.1, 1.0])
def test_sla_passes_at_several_scales(scale):
    check_loss(SLALoss(scale=scale), seed=3)


def test_check_loss_accepts_user_data():
    y = np.array([0.0, 1.0, 1.0, 0.0])
    check_loss(LogLoss(), y=y, raw=np.array([-3.0, 0.5, 2.0, 0.1]))


@pytest.mark.parametrize("subsample", [0.3, 1.0])
@pytest.mark.parametrize("name", _builtin("sampler"))
def test_builtin_samplers_pass(name, subsample):
    check_sampler(create("sampler", name, subsample=subsample))


#: training parameters a built-in update rule needs in the kit (rf refuses a fit without
#: sampling and with a learning rate other than 1)
KIT_PARAMS = {"rf": {"learning_rate": 1.0, "subsample": 0.632}}


@pytest.mark.parametrize("name", _builtin("update"))
def test_builtin_update_rules_pass(name):
    check_update_rule(name, params=KIT_PARAMS.get(name))
    check_update_rule(create("update", name), params=KIT_PARAMS.get(name))


@pytest.mark.parametrize("module", registry.BUILTIN_PLUGINS)
def test_builtin_modules_pass_check_plugin(module):
    import importlib

    found = check_plugin(importlib.import_module(module), require_api_version=False,
                         check_params={k: {"params": v} for k, v in KIT_PARAMS.items()})
    assert sum(len(v) for v in found.values()) >= 1


# -- broken losses are caught ------------------------------------------------------------------
class WrongSign(MSELoss):
    name = "wrong_sign"

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        super().gradient_hessian(y, raw, gradient, hessian, n_threads)
        gradient *= -1.0   # CatBoost's convention (negated derivative) by mistake


class DoubledHessian(LogLoss):
    name = "doubled_hessian"

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        super().gradient_hessian(y, raw, gradient, hessian, n_threads)
        hessian *= 2.0


class Rebinds(MSELoss):
    name = "rebinds"

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        # Rebinding the names leaves the caller's buffers untouched (a classic slip).
        gradient = raw - y            # noqa: F841
        hessian = np.ones_like(raw)   # noqa: F841


class ReturnsPair(MSELoss):
    """Returning the pair instead of writing in place is accepted (it costs allocations)."""

    name = "returns_pair"

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        return raw - y, np.ones_like(raw)


class ReturnsBadPair(MSELoss):
    name = "returns_bad_pair"

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        return raw - y, np.ones(3)


class MutatesRaw(MSELoss):
    name = "mutates_raw"

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        raw -= y
        gradient[:] = raw
        hessian[:] = 1.0


class Noisy(MSELoss):
    name = "noisy"

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        super().gradient_hessian(y, raw, gradient, hessian, n_threads)
        gradient += np.random.default_rng().normal(0, 1e-3, raw.shape)


class AcceptsNaN(MSELoss):
    name = "accepts_nan"

    def validate_target(self, y):
        return np.asarray(y, dtype=np.float64)


class AcceptsAnyLabel(LogLoss):
    name = "any_label"

    def validate_target(self, y):
        return Loss.validate_target(self, y)


class UndeclaredNegativeHessian(SLALoss):
    name = "undeclared"
    hessian_can_be_negative = False


class IgnoresWeights(MSELoss):
    name = "ignores_weights"

    def init_raw(self, y, sample_weight):
        return float(np.mean(y))


class ScalarLoss(MSELoss):
    name = "scalar_loss"

    def loss(self, y, raw):
        return float(np.mean(0.5 * (raw - y) ** 2))


class Overflows(MSELoss):
    name = "overflows"

    def transform(self, raw):
        with np.errstate(over="ignore"):
            return np.exp(np.asarray(raw) ** 2)


class WrongLink(MSELoss):
    name = "wrong_link"
    link = "log"                # but transform is the identity


class UnknownLink(MSELoss):
    name = "unknown_link"
    link = "probit"


@pytest.mark.parametrize("loss, message", [
    (WrongSign(), (r"loss 'wrong_sign' \(.*WrongSign\): gradient does not match central "
                   r"finite differences")),
    (DoubledHessian(), ("loss 'doubled_hessian'.*hessian does not match central finite "
                        "differences of the gradient")),
    (Rebinds(), "left 256 of 256 entries of the gradient buffer unwritten"),
    (ReturnsBadPair(), r"returned a hessian that is not a float array of shape \(256,\)"),
    (MutatesRaw(), "gradient_hessian tried to modify y or raw, which are read-only"),
    (Noisy(), "different results when called twice"),
    (AcceptsNaN(), "accepted a NaN target"),
    (AcceptsAnyLabel(), "accepted the label 2.0"),
    (UndeclaredNegativeHessian(), "hessian is negative at .* hessian_can_be_negative is False"),
    (IgnoresWeights(), "rows of weight 0 must not count"),
    (ScalarLoss(), r"loss\(y, raw\) must return a numpy array"),
    (Overflows(), r"transform is not finite at raw scores \+-50"),
    (WrongLink(), r"loss 'wrong_link'.*transform\(raw\) disagrees with link='log' at row 0"),
    (UnknownLink(), r"link='probit' is invalid; expected None or one of \['identity'"),
])
def test_broken_losses_are_caught(loss, message):
    with pytest.raises(AssertionError, match=message):
        check_loss(loss)


def test_a_loss_returning_its_derivatives_passes():
    check_loss(ReturnsPair())


def test_bad_hessian_floor_is_caught():
    loss = SLALoss()
    loss.hessian_floor = 0.0
    with pytest.raises(AssertionError, match="hessian_floor must be a finite number > 0"):
        check_loss(loss)


# -- broken samplers are caught ----------------------------------------------------------------
class _Returns(Sampler):
    """Returns a fixed function of n and rng."""

    name = "fixed"

    def __init__(self, make, subsample=1.0):
        super().__init__(subsample)
        self.make = make

    def sample(self, gradient, hessian, rng, iteration):
        return self.make(gradient.shape[0], rng)


def _idx(*values, dtype=np.int32):
    return np.array(values, dtype=dtype)


class ModifiesGradient(UniformSampler):
    name = "modifies_gradient"

    def sample(self, gradient, hessian, rng, iteration):
        np.abs(gradient, out=gradient)
        return super().sample(gradient, hessian, rng, iteration)


class GlobalRandom(UniformSampler):
    name = "global_random"

    def sample(self, gradient, hessian, rng, iteration):
        keep = np.random.random(gradient.shape[0]) < self.subsample
        keep[0] = True
        return SampleResult(np.flatnonzero(keep).astype(np.int32))


class PythonRandom(UniformSampler):
    name = "python_random"

    def sample(self, gradient, hessian, rng, iteration):
        return SampleResult(_idx(random.randrange(gradient.shape[0])))


class OwnGenerator(UniformSampler):
    name = "own_generator"

    def __init__(self, subsample=1.0):
        super().__init__(subsample)
        self.rng = np.random.default_rng()

    def sample(self, gradient, hessian, rng, iteration):
        return super().sample(gradient, hessian, self.rng, iteration)


class Stateful(UniformSampler):
    """Keeps a counter across calls and never resets it."""

    name = "stateful"

    def __init__(self, subsample=1.0):
        super().__init__(subsample)
        self.calls = 0

    def sample(self, gradient, hessian, rng, iteration):
        self.calls += 1
        n = gradient.shape[0]
        return SampleResult(_idx(self.calls % n))


@pytest.mark.parametrize("sampler, message", [
    (_Returns(lambda n, rng: SampleResult(_idx(*range(n))[::-1].copy())),
     "sampler 'fixed'.*must be sorted and unique"),
    (_Returns(lambda n, rng: SampleResult(_idx(0, 0, *range(1, n)))), "sorted and unique"),
    (_Returns(lambda n, rng: SampleResult(_idx(0, n))), r"out of range \[0, "),
    (_Returns(lambda n, rng: SampleResult(_idx(-1, 0))), "out of range"),
    (_Returns(lambda n, rng: SampleResult(_idx(0, dtype=np.int64))), "dtype int32, got int64"),
    (_Returns(lambda n, rng: SampleResult(_idx())), "indices are empty"),
    (_Returns(lambda n, rng: [0]), "must return None or a boostlib.api.SampleResult"),
    (_Returns(lambda n, rng: SampleResult(_idx(0), np.array([-1.0]))), "non-negative"),
    (_Returns(lambda n, rng: SampleResult(_idx(0), np.array([np.inf]))), "must be finite"),
    (_Returns(lambda n, rng: SampleResult(_idx(0), np.array([0.0]))), "all zero"),
    (_Returns(lambda n, rng: SampleResult(_idx(0), np.ones(2))), "aligned with indices"),
    (_Returns(lambda n, rng: SampleResult(_idx(0), np.ones(1, np.float32))),
     "dtype float64, got float32"),
    (ModifiesGradient(0.5), "tried to modify the gradient or hessian, which are read-only"),
    (GlobalRandom(0.5), "global random state"),
    (PythonRandom(0.5), "global random state"),
    (OwnGenerator(0.5), "not deterministic"),
    (Stateful(0.5), "not deterministic"),
])
def test_broken_samplers_are_caught(sampler, message):
    with pytest.raises(AssertionError, match=message):
        check_sampler(sampler)


# -- broken update rules are caught ------------------------------------------------------------
class Leaky(UpdateRule):
    """Shrinks its step every iteration but keeps the counter across fits (no begin)."""

    name = "leaky"

    def __init__(self):
        self.steps = 0

    def step(self, ctx):
        self.steps += 1
        g, h = ctx.gradients()
        ctx.add_tree(ctx.fit_tree(g, h, ctx.sample(g, h)), ctx.learning_rate / self.steps)


class Bypass(UpdateRule):
    """Adds trees to the model behind the context's back."""

    name = "bypass"

    def step(self, ctx):
        g, h = ctx.gradients()
        tree = ctx.fit_tree(g, h)
        ctx.add_tree(tree, ctx.learning_rate)
        ctx.ensemble.add(tree, ctx.learning_rate)


class Idle(SGB):
    name = "idle"

    def step(self, ctx):
        g, h = ctx.gradients()
        ctx.add_tree(ctx.fit_tree(g, h), 0.0)


@pytest.mark.parametrize("rule, message", [
    (Leaky(), ("update rule 'leaky'.*fitting again with the same random_state gave a "
               "different model")),
    (Bypass(), "differs from the running one"),
    (Idle(), "is not below the constant model's"),
])
def test_broken_update_rules_are_caught(rule, message):
    with pytest.raises(AssertionError, match=message):
        check_update_rule(rule)


def test_a_leaky_rule_fixed_with_begin_passes():
    class Fixed(Leaky):
        name = "fixed_leaky"

        def begin(self, ctx):
            self.steps = 0

    check_update_rule(Fixed())


# -- check_plugin ------------------------------------------------------------------------------
def _plugin(**attrs):
    module = types.ModuleType("some_plugin")
    module.__dict__.update(attrs)
    return module


@hookimpl
def _good_losses():
    return {"wrong_sign": WrongSign}


def test_check_plugin_runs_component_checks():
    plugin = _plugin(BOOSTLIB_API_VERSION=1, boostlib_add_losses=_good_losses)
    with pytest.raises(AssertionError, match="loss 'wrong_sign'.*gradient does not match"):
        check_plugin(plugin)
    assert check_plugin(plugin, run_checks=False) == {"loss": ["wrong_sign"], "sampler": [],
                                                       "update": [], "metric": []}


def test_check_plugin_reports_registration_problems():
    def unmarked():
        return {"mse2": MSELoss}

    @hookimpl
    def upper():
        return {"Mse": MSELoss}

    @hookimpl
    def not_a_loss():
        return {"thing": dict}

    @hookimpl
    def boostlib_add_lossez():
        return {}

    cases = [
        (_plugin(boostlib_add_losses=_good_losses), "declares no BOOSTLIB_API_VERSION"),
        (_plugin(BOOSTLIB_API_VERSION=2, boostlib_add_losses=_good_losses),
         "written for boostlib plugin API version 2"),
        (_plugin(BOOSTLIB_API_VERSION=1, boostlib_add_losses=unmarked),
         "implements no boostlib hook"),
        (_plugin(BOOSTLIB_API_VERSION=1, boostlib_add_losses=upper),
         "loss name 'Mse' must be a lower_snake_case identifier"),
        (_plugin(BOOSTLIB_API_VERSION=1, boostlib_add_losses=not_a_loss),
         "returned dict, not a boostlib.api.Loss"),
        (_plugin(BOOSTLIB_API_VERSION=1, boostlib_add_lossez=boostlib_add_lossez),
         r"implements boostlib_add_lossez\(\), which is not a boostlib hook"),
    ]
    for plugin, message in cases:
        with pytest.raises(AssertionError, match=f"plugin some_plugin: .*{message}"):
            check_plugin(plugin)


@pytest.mark.parametrize("defect", ["derivatives", "value"])
def test_check_loss_compares_the_fused_method_with_the_separate_ones(defect):
    """A loss's gradient_hessian_loss must write gradient_hessian's derivatives, bit for bit,
    and return mean_loss's value."""
    class Fused(LogLoss):
        name = "fused_" + defect

        def gradient_hessian_loss(self, y, raw, gradient, hessian, weight=None, n_threads=1):
            value = super().gradient_hessian_loss(y, raw, gradient, hessian, weight, n_threads)
            if defect == "derivatives":
                gradient[0] = np.nextafter(gradient[0], np.inf)
                return value
            return value + 0.01

    with pytest.raises(AssertionError, match="gradient_hessian_loss"):
        check_loss(Fused())


def test_a_subclass_overriding_the_derivatives_is_not_fused():
    """A loss that overrides gradient_hessian (or mean_loss, or loss) but inherits the
    built-in's gradient_hessian_loss is trained and checked with its own methods."""
    from boostlib.plugin.checks import fuses_loss

    class Renamed(LogLoss):
        name = "renamed"

    assert fuses_loss(LogLoss()) and fuses_loss(Renamed())
    assert not fuses_loss(DoubledHessian()) and not fuses_loss(MSELoss())
