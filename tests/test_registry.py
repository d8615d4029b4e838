"""The plugin registry: built-ins registered through the public hooks, lookups, errors."""
import importlib
import sys

import numpy as np
import pytest

import boostlib
from boostlib import PluginError, hookspecs, registry
from boostlib.api import SampleResult, Sampler, UpdateRule, hookimpl
from boostlib.builtin.losses import LogLoss, MSELoss


def test_builtins_available():
    assert {"logloss", "mse", "sla"} <= set(boostlib.available("loss"))
    assert "uniform" in boostlib.available("sampler")
    assert "sgb" in boostlib.available("update")
    with pytest.raises(ValueError, match="kind='losses' is invalid"):
        boostlib.available("losses")


def test_builtins_come_from_the_same_hooks_as_third_parties():
    providers = {e.name: e.provider for e in registry.entries("loss")}
    assert providers["logloss"] == "boostlib.builtin.losses"


def test_create_builds_instances_with_params():
    sla = boostlib.create("loss", "sla", {"scale": 0.5})
    assert sla.scale == 0.5
    s = boostlib.create("sampler", "uniform", subsample=0.3)
    assert s.subsample == 0.3
    inst = MSELoss()
    assert boostlib.create("loss", inst) is inst
    with pytest.raises(PluginError, match="loss_params must be empty"):
        boostlib.create("loss", inst, {"a": 1})
    names = ", ".join(boostlib.available("loss"))   # installed plugins may add more
    assert {"logloss", "mse", "sla"} <= set(names.split(", "))
    with pytest.raises(PluginError, match=f"available: {names}$"):
        boostlib.create("loss", "nope")


class _DuplicateLoss:
    @hookimpl
    def boostlib_add_losses(self):
        return {"logloss": LogLoss}


def test_duplicate_name_names_both_providers(temp_plugin):
    with pytest.raises(PluginError, match="loss 'logloss' is registered twice: by "
                                          "boostlib.builtin.losses and by dup_plugin"):
        temp_plugin(_DuplicateLoss(), "dup_plugin")
    assert "logloss" in boostlib.available("loss")   # registry left unchanged


def test_registering_a_plugin_twice_is_a_plugin_error(temp_plugin):
    plugin = _NotALossTwice()
    temp_plugin(plugin, "first_name")
    with pytest.raises(PluginError, match="cannot register plugin 'second_name'"):
        registry.register_plugin(plugin, "second_name")
    assert "twice_loss" in boostlib.available("loss")    # the first registration stands


class _NotALossTwice:
    @hookimpl
    def boostlib_add_losses(self):
        return {"twice_loss": LogLoss}


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
    with pytest.raises(PluginError, match="loss 'nan_loss' returned a gradient with 1 non-finite"):
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


# -- API versions ----------------------------------------------------------------------------
class _Versioned:
    def __init__(self, version):
        self.BOOSTLIB_API_VERSION = version

    @hookimpl
    def boostlib_add_updates(self):
        return {"half_step_v": HalfStep}


def test_supported_api_version_is_accepted(temp_plugin):
    assert 1 in hookspecs.SUPPORTED_API_VERSIONS
    temp_plugin(_Versioned(hookspecs.API_VERSION), "versioned")
    assert "half_step_v" in boostlib.available("update")


@pytest.mark.parametrize("version, message", [
    (99, ("plugin future_plugin was written for boostlib plugin API version 99, but boostlib "
          ".* supports 1: upgrade boostlib")),
    (0, "written for boostlib plugin API version 0.*upgrade the plugin"),
    ("1", "BOOSTLIB_API_VERSION='1' is invalid; expected an int"),
    (True, "BOOSTLIB_API_VERSION=True is invalid"),
])
def test_incompatible_api_version_is_refused(temp_plugin, version, message):
    with pytest.raises(PluginError, match=message):
        temp_plugin(_Versioned(version), "future_plugin")
    assert "half_step_v" not in boostlib.available("update")


# -- entry points, for real: distributions found by importlib.metadata -------------------------
_FAKE_LOSS = """
    from boostlib.api import hookimpl
    from boostlib.builtin.losses import MSELoss

    BOOSTLIB_API_VERSION = {version}

    class FakeMSE(MSELoss):
        name = "fake_mse"

    @hookimpl
    def boostlib_add_losses():
        return {{"fake_mse": FakeMSE}}
"""


def test_entry_point_is_discovered_with_its_distribution(fake_distribution):
    fake_distribution("boostlib-fake", "1.2.3", {"fake": "fake_loss_mod"},
                      {"fake_loss_mod": _FAKE_LOSS.format(version=1)})
    assert "fake_mse" in boostlib.available("loss")
    entry = next(e for e in registry.entries("loss") if e.name == "fake_mse")
    assert (entry.plugin, entry.distribution, entry.version) == ("fake", "boostlib-fake",
                                                                 "1.2.3")
    assert entry.provider == "fake (boostlib-fake 1.2.3)"
    builtin = next(e for e in registry.entries("loss") if e.name == "mse")
    assert (builtin.distribution, builtin.version) == ("boostlib", boostlib.__version__)
    assert registry.load_failures() == []
    X = np.random.default_rng(0).normal(size=(200, 3))
    model = boostlib.BoostRegressor(loss="fake_mse", n_estimators=3).fit(X, X[:, 0])
    assert type(model.loss_).__name__ == "FakeMSE"


@pytest.mark.parametrize("shadow_first", [True, False])
def test_distribution_found_twice_counts_once(fake_distribution, tmp_path_factory,
                                              monkeypatch, shadow_first):
    # Two copies of one distribution on sys.path: the first one found is the one imports
    # use, so only its entry points count, even when the other copy is the one declaring
    # them (its directory name is what tells the copies apart: its metadata is not read).
    fake_distribution("boostlib-fake", "1.2.3", {"fake": "fake_loss_mod"},
                      {"fake_loss_mod": _FAKE_LOSS.format(version=1)})
    other = tmp_path_factory.mktemp("other_copy")
    info = other / "boostlib_fake-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: boostlib-fake\nVersion: 2.0\n")
    if shadow_first:
        monkeypatch.syspath_prepend(str(other))
    else:
        monkeypatch.setattr(sys, "path", sys.path + [str(other)])
    importlib.invalidate_caches()
    registry.reset()
    assert ("fake_mse" in boostlib.available("loss")) is not shadow_first
    assert registry.load_failures() == []


def test_entry_point_with_incompatible_api_version_is_refused(fake_distribution):
    fake_distribution("boostlib-future", "9.0", {"future": "future_loss_mod"},
                      {"future_loss_mod": _FAKE_LOSS.format(version=2)})
    with pytest.warns(RuntimeWarning, match="entry point 'future' \\(future_loss_mod\\) of "
                                            "boostlib-future 9.0 was refused: plugin future "
                                            "\\(boostlib-future 9.0\\) was written for "
                                            "boostlib plugin API version 2"):
        names = boostlib.available("loss")
    assert "fake_mse" not in names and "mse" in names
    assert len(registry.load_failures()) == 1


_NO_HOOKS = """
    def boostlib_add_losses():    # forgot @hookimpl
        return {}
"""
_UNKNOWN_HOOK = """
    from boostlib.api import hookimpl

    @hookimpl
    def boostlib_add_lossez():
        return {}
"""
_NOT_A_MAPPING = """
    from boostlib.api import hookimpl

    @hookimpl
    def boostlib_add_samplers():
        return ["uniform2"]
"""


def test_broken_entry_points_are_reported_and_left_out(fake_distribution):
    fake_distribution("boostlib-broken", "0.1", {
        "missing": "no_such_module_anywhere",
        "no_hooks": "no_hooks_mod",
        "unknown_hook": "unknown_hook_mod",
        "not_a_mapping": "not_a_mapping_mod",
    }, {"no_hooks_mod": _NO_HOOKS, "unknown_hook_mod": _UNKNOWN_HOOK,
        "not_a_mapping_mod": _NOT_A_MAPPING})
    with pytest.warns(RuntimeWarning) as caught:
        assert boostlib.available("sampler")   # boostlib itself keeps working
    failures = registry.load_failures()
    assert len(failures) == 4 and len(caught) == 4
    text = "\n".join(failures)
    assert "entry point 'missing' (no_such_module_anywhere) of boostlib-broken 0.1 failed " \
           "to load: ModuleNotFoundError" in text
    assert "no_hooks (boostlib-broken 0.1) implements no boostlib hook" in text
    assert "implements boostlib_add_lossez(), which is not a boostlib hook" in text
    assert "boostlib_add_samplers() must return a mapping name -> factory, got list" in text
    boostlib.BoostRegressor(n_estimators=2).fit(np.eye(4), np.arange(4.0))


def test_same_entry_point_name_in_two_distributions(fake_distribution):
    fake_distribution("dist-a", "1.0", {"plugin": "plugin_a_mod"},
                      {"plugin_a_mod": _FAKE_LOSS.format(version=1)})
    fake_distribution("dist-b", "2.0", {"plugin": "plugin_b_mod"},
                      {"plugin_b_mod": _FAKE_LOSS.format(version=1).replace("fake_mse",
                                                                            "other_mse")})
    by_name = {e.name: e for e in registry.entries("loss")}
    a, b = by_name["fake_mse"], by_name["other_mse"]
    assert (a.distribution, b.distribution) == ("dist-a", "dist-b")
    # Both load; whichever comes second is registered under a distribution-qualified name.
    assert {a.plugin, b.plugin} in ({"plugin", "dist-b:plugin"}, {"plugin", "dist-a:plugin"})


def test_entry_point_cannot_replace_a_builtin(fake_distribution):
    fake_distribution("boostlib-hijack", "0.1", {"hijack": "hijack_mod"},
                      {"hijack_mod": _FAKE_LOSS.format(version=1).replace('"fake_mse"',
                                                                          '"mse"')})
    with pytest.raises(PluginError, match=r"loss 'mse' is registered twice: by "
                                          r"boostlib.builtin.losses and by hijack "
                                          r"\(boostlib-hijack 0.1\)"):
        boostlib.available("loss")


def test_autoload_can_be_disabled(fake_distribution, monkeypatch):
    fake_distribution("boostlib-fake", "1.2.3", {"fake": "fake_loss_mod"},
                      {"fake_loss_mod": _FAKE_LOSS.format(version=1)})
    monkeypatch.setenv("BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD", "1")
    registry.reset()
    assert registry.autoload_disabled()
    assert "fake_mse" not in boostlib.available("loss")
    assert registry.load_failures() == []
    monkeypatch.setenv("BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD", "0")
    registry.reset()
    assert "fake_mse" in boostlib.available("loss")


def test_available_without_a_kind_lists_every_kind():
    every = boostlib.available()
    assert list(every) == list(registry.KINDS)
    for kind, names in every.items():
        assert names == boostlib.available(kind) == sorted(names)
    assert {"logloss", "mse"} <= set(every["loss"]) and "sgb" in every["update"]
    assert "uniform" in every["sampler"] and "auc" in every["metric"]
    assert isinstance(boostlib.available("loss"), list)     # one kind: unchanged


def test_init_parameters_do_not_parse_builtin_signatures(monkeypatch):
    """A plugin class without its own constructor has no parameters, read without
    ``inspect.signature``: CPython before 3.11.8 parses a built-in's text signature in a
    way that fails in concurrent threads (trainings in threads read their plugins')."""
    import inspect

    from boostlib.plugin.registry import init_parameters

    class Plain:
        pass

    class WithArgs:
        def __init__(self, alpha, beta=None):
            self.alpha, self.beta = alpha, beta

    assert [p.name for p in init_parameters(WithArgs)] == ["alpha", "beta"]

    def no_parsing(obj, *args, **kwargs):
        raise AssertionError(f"inspect.signature({obj!r}) called")

    monkeypatch.setattr(inspect, "signature", no_parsing)
    assert init_parameters(Plain) == []
    assert init_parameters(dict) == []
