"""The quantile losses (``quantile``, ``l1``) and leaf renewal: derivatives against finite
differences, the start and the renewed leaves as exact weighted quantiles (against a slow
per-leaf reference), renewal wired into ``sgb`` only, calibrated coverage, robustness, every
sampler and update rule, model files."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from boostlib import BoostRegressor, PluginError, create, load_model, registry
from boostlib.api import Loss
from boostlib.builtin.quantile import L1Loss, QuantileLoss, leaf_quantiles, weighted_quantile
from boostlib.builtin.updates import SGB
from boostlib.frontend.estimator_files import dumps, loads
from boostlib.testing import check_loss

LOSSES = [("quantile", {}), ("quantile", {"alpha": 0.1}), ("quantile", {"alpha": 0.9}),
          ("l1", {})]


def _pinball(y, c, alpha, w=None):
    d = y - c
    return float(np.average(np.maximum(alpha * d, (alpha - 1.0) * d), weights=w))


def _reference_quantile(v, w, alpha):
    """Slow definition: the midpoint of the first sorted value whose cumulative weight
    reaches ``alpha W`` and the first that exceeds it (all-zero weights: unweighted)."""
    w = np.ones(v.size) if w is None or w.sum() <= 0 else w
    order = np.argsort(v, kind="stable")
    v, c = v[order], np.cumsum(w[order])
    t = alpha * c[-1]
    lo = v[np.argmax(c >= t)]
    hi = v[np.argmax(c > t)] if np.any(c > t) else v[-1]
    return lo if lo == hi else 0.5 * lo + 0.5 * hi     # the midpoint of x and x is x


# -- the loss functions --------------------------------------------------------------------------
@pytest.mark.parametrize("name,params", LOSSES)
def test_conformance_and_finite_differences(name, params):
    """check_loss: gradients match finite differences of the loss (random points are away
    from the kink y == z), the hessian is the exact 0, floored at 1 for Newton leaves."""
    loss = registry.create("loss", name, params)
    rng = np.random.default_rng(0)
    check_loss(loss)
    check_loss(loss, y=rng.normal(0, 3, 300), raw=rng.normal(0, 3, 300), seed=1)
    assert loss.hessian_can_be_negative and loss.hessian_floor == 1.0 and loss.renews_leaves


@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.75])
def test_gradient_values_and_the_tie_convention(alpha):
    y = np.array([1.0, 1.0, 1.0])
    z = np.array([0.0, 1.0, 2.0])           # y above, at, below the prediction
    g, h = np.empty(3), np.empty(3)
    QuantileLoss(alpha).gradient_hessian(y, z, g, h)
    np.testing.assert_array_equal(g, [-alpha, 1.0 - alpha, 1.0 - alpha])   # LightGBM's tie
    np.testing.assert_array_equal(h, 0.0)
    np.testing.assert_allclose(QuantileLoss(alpha).loss(y, z), [alpha, 0.0, 1.0 - alpha])
    L1Loss().gradient_hessian(y, z, g, h)
    np.testing.assert_array_equal(g, [-1.0, 0.0, 1.0])
    np.testing.assert_array_equal(L1Loss().loss(y, z), [1.0, 0.0, 1.0])
    # away from the kink the gradient is the one-sided difference of the loss
    eps = 1e-6
    zz = np.array([0.5, 1.5])
    yy = np.ones(2)
    for loss in (QuantileLoss(alpha), L1Loss()):
        g2, h2 = np.empty(2), np.empty(2)
        loss.gradient_hessian(yy, zz, g2, h2)
        fd = (loss.loss(yy, zz + eps) - loss.loss(yy, zz - eps)) / (2 * eps)
        np.testing.assert_allclose(g2, fd, rtol=1e-6)


def test_newton_leaves_see_a_hessian_of_one():
    """Floored at 1 and weighted, as LightGBM's constant hessian."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 2)), rng.normal(size=200)
    w = rng.uniform(0.5, 2.0, 200)
    from boostlib.engine.context import BoostingContext
    seen = {}
    original = BoostingContext.fit_tree

    def spy(self, gradient, hessian, sample=None, **kw):
        seen["h"] = np.array(hessian)
        return original(self, gradient, hessian, sample, **kw)
    BoostingContext.fit_tree = spy
    try:
        BoostRegressor(loss="quantile", n_estimators=1).fit(X, y, sample_weight=w)
    finally:
        BoostingContext.fit_tree = original
    np.testing.assert_array_equal(seen["h"], w)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.5, 1.5, float("nan"), "0.5", True, None])
def test_bad_alpha_is_named(bad):
    with pytest.raises(ValueError, match=r"loss 'quantile': alpha=.* is invalid; expected a "
                                         r"number in the open interval \(0, 1\)"):
        registry.create("loss", "quantile", {"alpha": bad})
    with pytest.raises(ValueError, match="alpha="):
        BoostRegressor(loss="quantile", loss_params={"alpha": bad}).fit(np.zeros((4, 1)),
                                                                         np.arange(4.0))


def test_l1_takes_no_alpha():
    with pytest.raises(PluginError, match="alpha"):
        registry.create("loss", "l1", {"alpha": 0.3})


# -- the start: an exact weighted quantile -------------------------------------------------------
_dyadic = st.integers(0, 8).map(lambda k: k / 4.0)      # exact sums: no rounding ties
_values = hnp.arrays(np.float64, st.integers(1, 25),          # ties from the sampled values
                     elements=st.sampled_from([-3.0, -1.0, 0.0, 0.5, 2.0, 7.0])
                     | st.floats(-50, 50))


@settings(max_examples=150, deadline=None)
@given(y=_values, alpha=st.sampled_from([0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.37]),
       data=st.data())
def test_the_start_minimises_the_weighted_pinball_loss(y, alpha, data):
    """init_raw is a minimiser: no candidate (every target value) nor neighbour does
    better, and it matches the slow definition; ties and zero weights included."""
    w = data.draw(st.none() | hnp.arrays(np.float64, y.size, elements=_dyadic))
    if w is not None and w.sum() == 0:
        w[0] = 1.0
    z = QuantileLoss(alpha).init_raw(y, w)
    assert z == _reference_quantile(y, w, alpha)
    best = min(_pinball(y, c, alpha, w) for c in y)
    scale = 1e-12 * (1.0 + np.abs(y).max())
    assert _pinball(y, z, alpha, w) <= best + scale
    for c in (z - 1e-3, z + 1e-3):
        assert _pinball(y, z, alpha, w) <= _pinball(y, c, alpha, w) + scale
    if w is not None:           # zero-weight rows do not count
        keep = w > 0
        assert z == weighted_quantile(y[keep], alpha, w[keep])


@settings(max_examples=80, deadline=None)
@given(y=_values, data=st.data())
def test_the_l1_start_is_the_weighted_median(y, data):
    w = data.draw(st.none() | hnp.arrays(np.float64, y.size, elements=st.floats(0.1, 5.0)))
    z = L1Loss().init_raw(y, w)
    if w is None:
        assert z == np.median(y)
    mean = [np.average(np.abs(y - c), weights=w) for c in y]
    assert np.average(np.abs(y - z), weights=w) <= min(mean) + 1e-9 * (1 + np.abs(y).max())


def test_weighted_quantile_examples():
    assert weighted_quantile(np.array([3.0, 1.0, 2.0]), 0.5) == 2.0
    assert weighted_quantile(np.array([1.0, 2.0, 3.0, 4.0]), 0.5) == 2.5     # np.median
    assert weighted_quantile(np.array([1.0, 2.0, 3.0, 4.0]), 0.9) == 4.0
    assert weighted_quantile(np.array([1.0, 2.0, 3.0, 4.0]), 0.25) == 1.5
    assert weighted_quantile(np.array([1.0, 2.0, 3.0]), 0.5, np.array([1.0, 0.0, 1.0])) == 2.0
    assert weighted_quantile(np.array([1.0, 2.0, 3.0]), 0.5, np.array([0.0, 0.0, 5.0])) == 3.0
    assert weighted_quantile(np.array([5.0]), 0.1) == 5.0


# -- renew_leaves against a slow per-leaf reference ----------------------------------------------
@st.composite
def _leaf_problems(draw):
    n = draw(st.integers(1, 40))
    n_leaves = draw(st.integers(1, 6))
    one_leaf = draw(st.booleans())
    leaf = np.zeros(n, np.intp) if one_leaf else draw(
        hnp.arrays(np.intp, n, elements=st.integers(0, n_leaves - 1)))
    y = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([-1.0, 0.0, 2.5])
                        | st.floats(-100, 100)))
    raw = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0])
                          | st.floats(-10, 10)))
    w = draw(st.none() | hnp.arrays(np.float64, n, elements=_dyadic))
    alpha = draw(st.sampled_from([0.1, 0.5, 0.9]) | st.floats(0.01, 0.99))
    return y, raw, w, leaf, n_leaves, alpha


@settings(max_examples=200, deadline=None)
@given(problem=_leaf_problems())
def test_renew_leaves_matches_a_slow_per_leaf_reference(problem):
    y, raw, w, leaf, n_leaves, alpha = problem
    out = QuantileLoss(alpha).renew_leaves(y, raw, w, leaf, n_leaves)
    assert out.shape == (n_leaves,) and out.dtype == np.float64
    residual = y - raw
    for k in range(n_leaves):
        rows = leaf == k
        if not rows.any():
            assert out[k] == 0.0
            continue
        wk = None if w is None else w[rows]
        assert out[k] == _reference_quantile(residual[rows], wk, alpha), k
        if wk is None or wk.sum() > 0:          # and it minimises the leaf's loss
            best = min(_pinball(residual[rows], c, alpha, wk) for c in residual[rows])
            assert _pinball(residual[rows], out[k], alpha, wk) <= best + 1e-9 * (
                1 + np.abs(residual).max())
    l1 = L1Loss().renew_leaves(y, raw, w, leaf, n_leaves)
    np.testing.assert_array_equal(l1, QuantileLoss(0.5).renew_leaves(y, raw, w, leaf,
                                                                        n_leaves))


@settings(max_examples=60, deadline=None)
@given(problem=_leaf_problems(), scale=st.floats(0.01, 100.0))
def test_renew_leaves_with_any_positive_weights_minimises(problem, scale):
    """Arbitrary float weights (cumulative sums then round): still a minimiser."""
    y, raw, _, leaf, n_leaves, alpha = problem
    w = scale * np.random.default_rng(leaf.size).uniform(0.01, 1.0, leaf.size)
    out = QuantileLoss(alpha).renew_leaves(y, raw, w, leaf, n_leaves)
    residual = y - raw
    for k in np.unique(leaf):
        rows = leaf == k
        best = min(_pinball(residual[rows], c, alpha, w[rows]) for c in residual[rows])
        got = _pinball(residual[rows], out[k], alpha, w[rows])
        assert got <= best + 1e-9 * (1 + best + np.abs(residual).max())


def test_renew_leaves_refuses_bad_leaves():
    with pytest.raises(ValueError, match="leaf indices must lie in"):
        leaf_quantiles(np.zeros(3), 0.5, None, np.array([0, 1, 3]), 3)
    with pytest.raises(ValueError, match="same length"):
        leaf_quantiles(np.zeros(3), 0.5, None, np.array([0, 1]), 3)


# -- renewal in training -------------------------------------------------------------------------
class RecordingSGB(SGB):
    """``sgb`` that records, for every tree, what the slow reference needs."""

    name = "sgb"

    def __init__(self):
        self.records = []

    def step(self, ctx):
        gradient, hessian = ctx.gradients()
        sample = ctx.sample(gradient, hessian)
        tree = ctx.fit_tree(gradient, hessian, sample)
        before = tree.value.copy()
        raw = np.array(ctx.raw)
        ctx.renew_leaves(tree, sample)
        self.records.append((tree, before, tree.value.copy(), raw, sample,
                             getattr(ctx.sampler, "leaf_values", "sample")))
        ctx.add_tree(tree, ctx.learning_rate)


def _heteroscedastic(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = 2.0 * X[:, 0] + np.sin(2 * X[:, 1]) + (0.5 + np.abs(X[:, 2])) * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("sampler,params", [(None, {}), ("uniform", {}), ("goss", {}),
                                            ("mvs", {}), ("mvs", {"leaf_values": "all"})])
@pytest.mark.parametrize("alpha", [0.2, 0.5])
def test_sgb_renews_every_tree_to_the_weighted_leaf_quantiles(sampler, params, alpha):
    """Each renewed leaf is the weighted alpha-quantile of the residuals of its rows (the
    sample with user x sampling weights, or every row with "all"); unreached leaves keep
    their Newton value."""
    from boostlib.engine.context import BoostingContext
    X, y = _heteroscedastic(800)
    w = np.random.default_rng(1).uniform(0.0, 2.0, y.size)
    w[::7] = 0.0
    rule = RecordingSGB()
    grower = {}
    original = BoostingContext.__init__

    def keep(self, *a, **kw):
        original(self, *a, **kw)
        grower["g"] = self.grower
    BoostingContext.__init__ = keep
    try:
        BoostRegressor(loss="quantile", loss_params={"alpha": alpha}, n_estimators=8,
                       max_depth=3, grow_policy="depthwise", update=rule, sampler=sampler,
                       subsample=0.5 if sampler else 1.0, sampler_params=params,
                       random_state=0).fit(X, y, sample_weight=w)
    finally:
        BoostingContext.__init__ = original
    assert len(rule.records) == 8
    for tree, before, after, raw, sample, leaf_values in rule.records:
        if sample is None or leaf_values == "all":
            rows, sw = np.arange(y.size), np.ones(y.size)
        else:
            rows = sample.indices
            sw = np.ones(rows.size) if sample.weights is None else sample.weights
        node = grower["g"].apply(tree, rows.astype(np.int32))
        weight = w[rows] * sw
        residual = y[rows] - raw[rows]
        leaves = np.flatnonzero(tree.left < 0)
        for k in leaves:
            mine = (node == k) & (weight > 0)
            if mine.any():
                assert after[k] == _reference_quantile(residual[mine], weight[mine], alpha)
            else:
                assert after[k] == before[k]


def test_symmetric_leaves_that_share_a_value_are_renewed_as_one():
    X, y = _heteroscedastic(600)
    rule = RecordingSGB()
    BoostRegressor(loss="l1", n_estimators=5, max_depth=4, min_samples_leaf=60,
                   grow_policy="symmetric", update=rule, random_state=0).fit(X, y)
    shared = 0
    for tree, before, after, *_ in rule.records:
        # the leaves of one node (tree.value_group: its first leaf) shared a Newton value
        # and share the renewed one
        group = tree.value_group
        for g in np.unique(group):
            assert np.unique(before[group == g]).size == 1
            assert np.unique(after[group == g]).size == 1
        shared += np.count_nonzero(group != np.arange(group.size))
    assert shared > 0           # min_samples_leaf left some leaves unsplit


def test_the_first_tree_adds_learning_rate_times_the_leaf_quantiles():
    """End to end through predictions: one tree, raw = bias + lr * quantile of the
    residuals y - bias of the rows in its leaf."""
    X, y = _heteroscedastic(1000, seed=3)
    w = np.random.default_rng(3).uniform(0.2, 3.0, y.size)
    lr = 0.3
    model = BoostRegressor(loss="quantile", loss_params={"alpha": 0.8}, n_estimators=1,
                           max_depth=2, learning_rate=lr, grow_policy="depthwise",
                           random_state=0).fit(X, y, sample_weight=w)
    bias = weighted_quantile(y, 0.8, w)
    raw = model.model_.predict(X, raw=True)
    values = np.unique(raw)
    assert values.size == 4                 # one per leaf
    for v in values:
        rows = raw == v
        want = bias + lr * _reference_quantile(y[rows] - bias, w[rows], 0.8)
        assert v == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_renewal_is_what_the_other_rules_skip():
    """sgb's first tree differs from a plain Newton step; sglb's is the Newton step."""
    X, y = _heteroscedastic(500)
    for update, renewed in (("sgb", True), ("sglb", False), ("agbm", False)):
        params = {"diffusion_temperature": float("inf")} if update == "sglb" else {}
        model = BoostRegressor(loss="l1", n_estimators=1, max_depth=2, update=update,
                               update_params=params, learning_rate=1.0, random_state=0)
        model.fit(X, y)
        step = model.model_.predict(X, raw=True) - np.median(y)
        # a Newton step of sign gradients moves at most 1 (before the learning rate)
        assert (np.abs(step).max() > 1.0) == renewed, update


def test_renew_leaves_is_a_no_op_for_other_losses():
    X, y = _heteroscedastic(300)
    a = BoostRegressor(n_estimators=5, random_state=0).fit(X, y).predict(X)
    b = BoostRegressor(n_estimators=5, update=RecordingSGB(), random_state=0).fit(X, y)
    np.testing.assert_array_equal(a, b.predict(X))


class _BadRenewal(QuantileLoss):
    name = "bad_renewal"

    def __init__(self, out):
        super().__init__(0.5)
        self.out = out

    def renew_leaves(self, y, raw, weight, leaf, n_leaves):
        if self.out == "raise":
            raise RuntimeError("boom")
        if self.out == "modify":
            y[0] = 1.0
        return self.out(n_leaves) if callable(self.out) else self.out


@pytest.mark.parametrize("out,match", [
    (lambda n: np.zeros(n + 1), r"renew_leaves returned float64 values of shape \(\d+,\)"),
    (lambda n: np.full(n, np.nan), r"renew_leaves returned \d+ non-finite leaf values"),
    (lambda n: [0.0] * n, r"renew_leaves returned list"),
    ("raise", r"loss 'bad_renewal' raised RuntimeError in renew_leaves at iteration 0"),
    ("modify", r"read-only")])
def test_a_broken_renewal_is_named(out, match):
    X, y = _heteroscedastic(200)
    with pytest.raises((PluginError, RuntimeError, ValueError), match=match) as info:
        BoostRegressor(loss=_BadRenewal(out), n_estimators=2).fit(X, y)
    assert "bad_renewal" in str(info.value)


def test_renew_leaves_must_come_before_add_tree_on_the_fitted_sample():
    X, y = _heteroscedastic(200)

    class Late(SGB):
        name = "late"

        def step(self, ctx):
            g, h = ctx.gradients()
            sample = ctx.sample(g, h)
            tree = ctx.fit_tree(g, h, sample)
            ctx.add_tree(tree, ctx.learning_rate)
            ctx.renew_leaves(tree, sample)

    class OtherSample(SGB):
        name = "other_sample"

        def step(self, ctx):
            g, h = ctx.gradients()
            sample = ctx.sample(g, h)
            tree = ctx.fit_tree(g, h, sample)
            ctx.renew_leaves(tree, None)

    with pytest.raises(ValueError, match="renew_leaves was called after add_tree"):
        BoostRegressor(loss="l1", update=Late(), n_estimators=2).fit(X, y)
    with pytest.raises(ValueError, match="another sample than the one the tree was fitted"):
        BoostRegressor(loss="l1", update=OtherSample(), sampler="uniform", subsample=0.5,
                       n_estimators=2).fit(X, y)


def test_scores_stay_exact_after_renewal(monkeypatch):
    """The context's running scores agree with fresh predictions (full checks compare them
    every iteration), for sampled depthwise fits whose other rows are walked."""
    monkeypatch.setenv("BOOSTLIB_PLUGIN_CHECKS", "full")
    X, y = _heteroscedastic(700)
    for policy in ("depthwise", "symmetric"):
        model = BoostRegressor(loss="quantile", loss_params={"alpha": 0.7}, n_estimators=10,
                               sampler="goss", subsample=0.5, grow_policy=policy,
                               random_state=0)
        model.fit(X, y, eval_set=[(X[:100], y[:100])])
        final = model.evals_result_["valid_0"]["quantile"][-1]
        pred = model.predict(X[:100])
        assert final == pytest.approx(_pinball(y[:100], pred, 0.7), rel=1e-9)


# -- what the models learn -----------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.1, 0.9])
@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
def test_coverage_is_near_alpha_on_held_out_data(alpha, policy):
    X, y = _heteroscedastic(8000, seed=5)
    tr, te = slice(0, 5000), slice(5000, None)
    model = BoostRegressor(loss="quantile", loss_params={"alpha": alpha}, n_estimators=100,
                           max_depth=4, min_samples_leaf=20, grow_policy=policy,
                           random_state=0).fit(X[tr], y[tr])
    pred = model.predict(X[te])
    coverage = np.mean(y[te] <= pred)
    assert abs(coverage - alpha) < 0.03, coverage
    constant = weighted_quantile(y[tr], alpha)
    assert _pinball(y[te], pred, alpha) < 0.7 * _pinball(y[te], constant, alpha)


@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
def test_l1_beats_mse_on_mae_with_heavy_tailed_noise(policy):
    rng = np.random.default_rng(7)
    n = 6000
    X = rng.normal(size=(n, 4))
    y = 2.0 * X[:, 0] + X[:, 1] ** 2 + rng.standard_t(1.2, n)      # near-Cauchy noise
    tr, te = slice(0, 4500), slice(4500, None)
    common = dict(n_estimators=150, max_depth=4, grow_policy=policy, random_state=0)
    l1 = BoostRegressor(loss="l1", **common).fit(X[tr], y[tr]).predict(X[te])
    mse = BoostRegressor(loss="mse", **common).fit(X[tr], y[tr]).predict(X[te])
    mae = create("metric", "mae")
    assert mae(y[te], l1) < 0.9 * mae(y[te], mse)


SAMPLERS = [(None, {}), ("uniform", {}), ("goss", {}), ("mvs", {}),
            ("mvs", {"leaf_values": "all"})]


@pytest.mark.parametrize("update", ["sgb", "sglb", "agbm", "agbmr", "vagbm"])
@pytest.mark.parametrize("sampler,sampler_params", SAMPLERS)
def test_every_sampler_and_update_rule_trains_quantile_and_l1(update, sampler, sampler_params):
    """Renewing (sgb) or first-order (the others): clearly better than the constant on
    held-out data. The momentum rules (agbm, vagbm) overshoot these non-smooth losses after
    their best iteration, so the fits stop early on a validation set, as they would be used."""
    X, y = _heteroscedastic(1600, seed=11)
    tr, va, te = slice(0, 1000), slice(1000, 1300), slice(1300, None)
    for name, alpha in (("quantile", 0.8), ("l1", 0.5)):
        params = {"alpha": alpha} if name == "quantile" else {}
        model = BoostRegressor(loss=name, loss_params=params, n_estimators=120, max_depth=3,
                               update=update, sampler=sampler,
                               subsample=0.5 if sampler else 1.0,
                               sampler_params=sampler_params, early_stopping_rounds=15,
                               random_state=0)
        pred = model.fit(X[tr], y[tr], eval_set=[(X[va], y[va])]).predict(X[te])
        assert np.all(np.isfinite(pred))
        constant = weighted_quantile(y[tr], alpha)
        got, base = _pinball(y[te], pred, alpha), _pinball(y[te], constant, alpha)
        assert got < 0.8 * base, (name, update, sampler, sampler_params, got / base)


# -- model files ---------------------------------------------------------------------------------
@pytest.mark.parametrize("by_instance", [False, True])
def test_model_files_keep_alpha(tmp_path, by_instance):
    X, y = _heteroscedastic(300)
    loss = QuantileLoss(alpha=0.85) if by_instance else "quantile"
    params = None if by_instance else {"alpha": 0.85}
    model = BoostRegressor(loss=loss, loss_params=params, n_estimators=5,
                           random_state=0).fit(X, y)
    path = tmp_path / "model.json"
    model.save_model(path)
    loaded = load_model(path)
    assert loaded.loss_.alpha == 0.85 and loaded.loss_.name == "quantile"
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    again = loads(dumps(model))
    assert again.loss_.alpha == 0.85
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    l1 = loads(dumps(BoostRegressor(loss="l1", n_estimators=3).fit(X, y)))
    assert isinstance(l1.loss_, L1Loss)


def test_the_loss_interface_defaults():
    assert Loss.renews_leaves is False
    assert registry.create("loss", "mse").renews_leaves is False
    with pytest.raises(NotImplementedError, match="does not implement renew_leaves"):
        Loss.renew_leaves(registry.create("loss", "mse"), np.zeros(1), np.zeros(1), None,
                          np.zeros(1, np.intp), 1)
