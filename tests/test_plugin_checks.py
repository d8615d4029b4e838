"""Validation at the plugin boundary: every misbehaviour is an error naming the plugin."""
import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRegressor
from boostlib.plugin.checks import ENV, level
from boostlib.api import Loss, SampleResult, Sampler, UpdateRule
from boostlib.builtin.losses import LogLoss, MSELoss
from boostlib.registry import PluginError


def _fit(binary_data, **kw):
    X, y = binary_data
    return BoostClassifier(n_estimators=3, random_state=0, **kw).fit(X, y)


class ReturningLoss(LogLoss):
    """Returns its derivatives instead of writing them (allowed when well-formed)."""

    name = "returning"

    def __init__(self, make):
        self.make = make

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        g, h = np.empty_like(raw), np.empty_like(raw)
        super().gradient_hessian(y, raw, g, h, n_threads)
        return self.make(g, h)


def test_a_loss_may_return_well_formed_derivatives(binary_data):
    a = _fit(binary_data, loss=ReturningLoss(lambda g, h: (g, h)))
    b = _fit(binary_data, loss="logloss")
    np.testing.assert_array_equal(a.predict_proba(binary_data[0]),
                                  b.predict_proba(binary_data[0]))


@pytest.mark.parametrize("make,match", [
    (lambda g, h: (g[:-1], h), r"gradient that is a float64 array of shape \(599,\)"),
    (lambda g, h: (g, h.astype(np.int64)), "hessian that is a int64 array"),
    (lambda g, h: (g, list(h)), "hessian that is a list"),
    (lambda g, h: g, "must write into the arrays"),
    (lambda g, h: (g, np.where(np.arange(g.size) == 7, np.inf, h)), "hessian with 1 non-finite"),
    (lambda g, h: (np.where(np.arange(g.size) % 100 == 3, np.nan, g), h),
     "gradient with 6 non-finite"),
    (lambda g, h: (np.full(g.size, 1e306), h), "gradient with values whose sum overflows"),
])
def test_malformed_derivatives_name_the_loss(binary_data, make, match):
    with pytest.raises(PluginError, match="loss 'returning'.*" + match):
        _fit(binary_data, loss=ReturningLoss(make))


class LazyLoss(MSELoss):
    """Forgets to write the last row."""

    name = "lazy"

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        gradient[:-1] = raw[:-1] - y[:-1]
        hessian[:] = 1.0


def test_full_checks_catch_unwritten_entries(monkeypatch):
    monkeypatch.setenv(ENV, "full")
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(PluginError, match="loss 'lazy' returned a gradient with 1 non-finite"):
        BoostRegressor(loss=LazyLoss(), n_estimators=2).fit(X, X[:, 0])


class Meddler(MSELoss):
    """Tries to change the training scores it is handed."""

    name = "meddler"

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        raw += 1.0


def test_losses_get_read_only_scores_and_targets():
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(ValueError, match="read-only"):
        BoostRegressor(loss=Meddler(), n_estimators=2).fit(X, X[:, 0])


class BadPointwise(LogLoss):
    name = "bad_pointwise"
    mean_loss = Loss.mean_loss      # the default reduction, which goes through loss()

    def loss(self, y, raw):
        return np.zeros(3)


class NaNMeanLoss(LogLoss):
    name = "nan_mean"

    def mean_loss(self, y, raw, weight=None, n_threads=1):
        return float("nan")


def test_pointwise_loss_shape_is_checked(binary_data):
    X, y = binary_data
    with pytest.raises(PluginError, match=r"loss 'bad_pointwise': loss\(\) returned shape"):
        BoostClassifier(loss=BadPointwise(), n_estimators=2).fit(X, y, eval_set=[(X, y)])


def test_mean_loss_must_be_finite(binary_data):
    X, y = binary_data
    with pytest.raises(PluginError, match="loss 'nan_mean': mean loss on the training set at "
                                          "iteration 0 is nan"):
        BoostClassifier(loss=NaNMeanLoss(), n_estimators=2).fit(X, y)


class ScriptedSampler(Sampler):
    name = "scripted"

    def __init__(self, result):
        super().__init__(0.5)
        self.result = result

    def sample(self, gradient, hessian, rng, iteration):
        return self.result(gradient.size)


@pytest.mark.parametrize("result,match", [
    (lambda n: (np.arange(n),), "must return a boostlib.api.SampleResult"),
    (lambda n: SampleResult(np.arange(n, dtype=float)), "1-D integer index array"),
    (lambda n: SampleResult(np.empty(0, np.int32)), "empty sample"),
    (lambda n: SampleResult(np.array([0, n], np.int32)), "out of"),
    (lambda n: SampleResult(np.array([-1, 2], np.int32)), "out of"),
    (lambda n: SampleResult(np.array([4, 2], np.int32)), "not sorted and unique"),
    (lambda n: SampleResult(np.array([2, 2], np.int32)), "not sorted and unique"),
    (lambda n: SampleResult(np.array([1, 2], np.int32), np.array([1.0, -1.0])), "negative"),
    (lambda n: SampleResult(np.array([1, 2], np.int32), np.array([1.0, np.nan])),
     "non-finite"),
    (lambda n: SampleResult(np.array([1, 2], np.int32), np.array([1, 2])), "not a float"),
    (lambda n: SampleResult(np.array([1, 2], np.int32), np.ones(3)), "aligned"),
])
def test_malformed_samples_name_the_sampler(binary_data, result, match):
    with pytest.raises(PluginError, match="sampler 'scripted'.*" + match):
        _fit(binary_data, sampler=ScriptedSampler(result))


@pytest.mark.parametrize("result,match", [
    # defects in the middle of a long sample (the compiled pass, over several blocks), and
    # with int64 rows or float32 weights (the NumPy pass)
    (lambda n: SampleResult(_long(n, 70000)), "not sorted and unique"),
    (lambda n: SampleResult(_long(n, 70000).astype(np.int64)), "not sorted and unique"),
    (lambda n: SampleResult(_long(n, None), np.where(np.arange(n) == 65537, np.inf, 1.0)),
     "non-finite"),
    (lambda n: SampleResult(_long(n, None), np.where(np.arange(n) == 5, -0.5, 1.0)
                            .astype(np.float32)), "negative"),
    (lambda n: SampleResult(np.where(np.arange(n) == n - 1, n, np.arange(n)).astype(np.int32)),
     "out of"),
])
def test_defects_deep_in_long_samples_are_found(binary_data, result, match):
    X, y = binary_data
    big = (np.tile(X, (300, 1)), np.tile(y, 300))      # 180000 rows: several blocks
    with pytest.raises(PluginError, match="sampler 'scripted'.*" + match):
        _fit(big, sampler=ScriptedSampler(result))


@pytest.mark.parametrize("fit_kw", [{}, {"random_strength": 1.0},
                                    {"sampler_params": {"leaf_values": "all"}},
                                    {"grow_policy": "depthwise"}])
@pytest.mark.parametrize("result,match", [
    (lambda n: SampleResult(np.array([1, n + 5], np.int32)), "out of"),
    (lambda n: SampleResult(np.array([3, 1], np.int32)), "not sorted and unique"),
    (lambda n: SampleResult(np.array([1, 2], np.int32), np.array([1.0, np.inf])),
     "non-finite"),
])
def test_sample_defects_are_found_on_every_fitting_path(binary_data, fit_kw, result, match):
    # The entries are checked when the tree is fitted on the sample: by the pass that gathers
    # it (int32 rows, float64 weights, no split noise), else by a pass of their own first.
    sampler_params = fit_kw.pop("sampler_params", None)
    sampler = ScriptedSampler(result)
    if sampler_params:
        sampler.leaf_values = sampler_params["leaf_values"]
    with pytest.raises(PluginError, match="sampler 'scripted'.*" + match):
        _fit(binary_data, sampler=sampler, **fit_kw)


class HandMadeSample(UpdateRule):
    """Fits its trees on a sample of its own making (not the sampler's)."""

    name = "hand_made"

    def __init__(self, make):
        self.make = make

    def step(self, ctx):
        g, h = ctx.gradients()
        ctx.add_tree(ctx.fit_tree(g, h, self.make(g.size)), ctx.learning_rate)


@pytest.mark.parametrize("make,match", [
    (lambda n: SampleResult(np.array([5, 2], np.int32)), "not sorted and unique"),
    (lambda n: SampleResult(np.array([-1, 2], np.int64)), "out of"),
    (lambda n: SampleResult(np.array([1, 2], np.int32), np.array([1.0, -2.0])), "negative"),
    (lambda n: SampleResult(np.empty(0, np.int32)), "empty sample"),
    (lambda n: np.arange(n), "not a boostlib.api.SampleResult"),
])
def test_a_sample_an_update_rule_makes_is_checked_and_names_the_rule(binary_data, make, match):
    # Samples that do not come from the sampler reach the same checks before any kernel reads
    # them; the error names the update rule that passed them.
    with pytest.raises(PluginError, match="update rule 'hand_made'.*" + match):
        _fit(binary_data, update=HandMadeSample(make))


def test_a_valid_hand_made_sample_fits_on_its_rows(binary_data):
    X, y = binary_data
    rows = np.arange(0, y.size, 2, dtype=np.int32)
    model = _fit(binary_data, update=HandMadeSample(lambda n: SampleResult(rows)))
    assert np.all(np.isfinite(model.predict_proba(X)))


def _long(n, repeat_at):
    """Every row, in order, except that row ``repeat_at`` repeats its predecessor."""
    rows = np.arange(n, dtype=np.int32)
    if repeat_at is not None and repeat_at < n:
        rows[repeat_at] = rows[repeat_at - 1]
    return rows


class InPlaceSampler(Sampler):
    name = "in_place"

    def sample(self, gradient, hessian, rng, iteration):
        gradient *= 2.0


def test_samplers_get_read_only_derivatives(binary_data):
    with pytest.raises(ValueError, match="read-only"):
        _fit(binary_data, sampler=InPlaceSampler(0.5))


class Sneaky(UpdateRule):
    """Adds a tree to the model behind the context's back (scores not updated)."""

    name = "sneaky"

    def step(self, ctx):
        g, h = ctx.gradients()
        tree = ctx.fit_tree(g, h)
        ctx.add_tree(tree, ctx.learning_rate)
        ctx.ensemble.coef[-1] *= 2.0


def test_full_checks_catch_an_inconsistent_model(binary_data, monkeypatch):
    _fit(binary_data, update=Sneaky())               # fast checks: not detectable cheaply
    monkeypatch.setenv(ENV, "full")
    with pytest.raises(PluginError, match="update rule 'sneaky' left the model inconsistent "
                                          "at iteration 0"):
        _fit(binary_data, update=Sneaky())


def test_check_level_from_environment(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert level() == "fast"
    monkeypatch.setenv(ENV, "FULL")
    assert level() == "full"
    monkeypatch.setenv(ENV, "paranoid")
    with pytest.raises(ValueError, match="BOOSTLIB_PLUGIN_CHECKS='paranoid' is invalid"):
        level()
