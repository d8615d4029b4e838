"""SGLB (update="sglb"): the testable properties S1-S8 of ``papers/algorithms.md`` section 7.

Every expected value below comes from a formula of the SGLB paper (Algorithm 2, the AR(1) law
of the constant model) or from CatBoost's measured noise scale, never from the code under test.
"""
import math

import numpy as np
import pytest

from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRegressor
from boostlib.engine.random_streams import seed_sequence, stream_rng
from boostlib.api import UpdateRule
from boostlib.builtin.sglb import SGLB

Z9995 = 3.2905267314918945         # standard normal 0.9995 quantile


def chi2_quantile(p_z: float, k: int) -> float:
    """Wilson-Hilferty approximation of the chi-square quantile (z-score ``p_z``, ``k`` dof);
    relative error below 0.1% for k >= 100."""
    return k * (1.0 - 2.0 / (9 * k) + p_z * math.sqrt(2.0 / (9 * k))) ** 3


def assert_std_in_chi2_ci(values: np.ndarray, sigma: float) -> None:
    """``values`` ~ N(0, sigma^2) iid: sigma lies in the 99.9% chi-square interval of the
    sample (the mean is known to be 0). With 400 draws the interval is about +-15% of
    sigma^2, so a misplaced factor (N for W_leaf, a missing sqrt(2), lr for sqrt(lr))
    fails it."""
    k = values.size
    ss = float(np.sum(values ** 2))
    lo, hi = ss / chi2_quantile(Z9995, k), ss / chi2_quantile(-Z9995, k)
    assert lo <= sigma ** 2 <= hi, (f"sigma^2={sigma ** 2:.4g} outside the 99.9% CI "
                                    f"[{lo:.4g}, {hi:.4g}] of {k} draws")


class Trace(SGLB):
    """SGLB that keeps a copy of the training scores after every iteration."""

    def begin(self, ctx):
        super().begin(ctx)
        self.raws = []

    def step(self, ctx):
        super().step(ctx)
        self.raws.append(np.array(ctx.raw))


class ShrunkSGB(UpdateRule):
    """The S1 reference: SGB whose whole model is multiplied by ``1 - gamma*eps`` before each
    tree is added, written with the context only."""

    name = "shrunk_sgb"

    def __init__(self, gamma):
        self.gamma = gamma

    def step(self, ctx):
        g, h = ctx.gradients()
        tree = ctx.fit_tree(g, h, ctx.sample(g, h))
        ctx.scale_model(1.0 - self.gamma * ctx.learning_rate)
        ctx.add_tree(tree, ctx.learning_rate)


def _data(n=400, p=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=n)
    return X, y


def _same_model(a, b):
    ea, eb = a.ensemble_, b.ensemble_
    assert ea.bias == eb.bias and np.array_equal(ea.coef, eb.coef)
    for ta, tb in zip(ea.trees, eb.trees):
        for f in ta.__dataclass_fields__:
            assert np.array_equal(getattr(ta, f), getattr(tb, f)), f


# -- S1: no noise, no shrink == SGB; no noise + shrink == SGB with the shrink -----------------
@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
@pytest.mark.parametrize("sampler", [None, "uniform", "goss", "mvs"])
def test_s1_infinite_temperature_without_shrink_is_sgb(policy, sampler):
    X, y = _data()
    kw = dict(n_estimators=12, grow_policy=policy, max_depth=3, random_state=3,
              sampler=sampler, subsample=0.5 if sampler else 1.0, random_strength=0.5)
    sgb = BoostRegressor(**kw).fit(X, y)
    sglb = BoostRegressor(update="sglb", update_params={"diffusion_temperature": math.inf,
                                                        "model_shrink_rate": 0.0}, **kw).fit(X, y)
    _same_model(sgb, sglb)
    assert np.array_equal(sgb.predict(X), sglb.predict(X))


@pytest.mark.parametrize("mode_rate", [("constant", 0.3)])
def test_s1_infinite_temperature_with_shrink_is_shrunk_sgb(mode_rate):
    X, y = _data()
    mode, rate = mode_rate
    kw = dict(n_estimators=10, max_depth=3, random_state=1, sampler="mvs", subsample=0.6)
    ref = BoostRegressor(update=ShrunkSGB(rate), **kw).fit(X, y)
    m = BoostRegressor(update="sglb", update_params={"diffusion_temperature": math.inf,
                                                     "model_shrink_rate": rate,
                                                     "model_shrink_mode": mode}, **kw).fit(X, y)
    _same_model(ref, m)


# -- S2: the shrink recursion, and the exported model equals the training scores ---------------
@pytest.mark.parametrize("mode", ["constant", "decreasing"])
def test_s2_shrink_recursion_matches_scalar_reference(mode):
    """Constant features: every tree is one leaf, so the model is a scalar chain
    ``F <- s_t F + eps * (-(sum (F - y)) / (N + lambda))`` (MSE, gradient leaves)."""
    n, eps, lam, gamma, iters = 60, 0.3, 2.0, 0.4, 25
    y = np.random.default_rng(0).normal(2.0, 1.0, size=n)
    X = np.ones((n, 2))
    rule = Trace(diffusion_temperature=math.inf, model_shrink_rate=gamma, model_shrink_mode=mode)
    m = BoostRegressor(n_estimators=iters, learning_rate=eps, l2_regularization=lam,
                       leaf_estimation="gradient", update=rule).fit(X, y)
    F, factors = y.mean(), []
    for t in range(iters):
        s = 1.0 - gamma * eps if mode == "constant" else (1.0 if t == 0 else 1.0 - gamma / t)
        F = s * F - eps * (n * F - y.sum()) / (n + lam)
        factors.append(s)
        assert rule.raws[t][0] == pytest.approx(F, rel=1e-12)
    assert m.predict(X[:1])[0] == pytest.approx(F, rel=1e-12)
    np.testing.assert_allclose(m.predict(X), rule.raws[-1], rtol=1e-12)
    # tree k's coefficient is eps times every shrink applied after it was added
    later = [float(np.prod(factors[k + 1:])) for k in range(iters)]
    np.testing.assert_allclose(m.ensemble_.coef, eps * np.array(later), rtol=1e-12)
    assert m.ensemble_.bias == pytest.approx(y.mean() * np.prod(factors), rel=1e-12)
    curve = m.evals_result_["train"]["mse"]
    assert curve[-1] == pytest.approx(0.5 * np.mean((F - y) ** 2), rel=1e-10)


# -- S3: the leaf-noise scale ------------------------------------------------------------------
def _one_tree_leaves(n, seed, T, lr, lam, weight=1.0, loss="mse", y=None,
                     leaf_estimation="gradient"):
    """Depth-1 tree on a binary feature (30% ones): the structure is fixed."""
    x = (np.arange(n) % 10 < 3).astype(float)
    X = x[:, None]
    y = np.zeros(n) if y is None else y
    est = BoostClassifier if loss == "logloss" else BoostRegressor
    m = est(n_estimators=1, max_depth=1, learning_rate=lr, l2_regularization=lam,
            leaf_estimation=leaf_estimation, loss=loss, update="sglb",
            update_params={"diffusion_temperature": T, "model_shrink_rate": 0.0},
            random_state=seed).fit(X, y, sample_weight=np.full(n, weight))
    tree = m.ensemble_.trees[0]
    out = m.ensemble_.coef[0] * tree.value if tree.feature.size else None
    counts = np.array([np.sum(x == 0), np.sum(x == 1)])
    return out, counts, m


def _leaf_draws(k, n, T, lr, lam, **kw):
    """Leaf values of the first ``k`` seeds whose tree has the split. With g = 0 the split
    exists only when the structure noise gives it a positive gain; the leaf noise comes from
    another stream, so keeping those seeds does not bias it (S5)."""
    draws, seed = [], 0
    while len(draws) < k:
        out = _one_tree_leaves(n, seed, T, lr, lam, **kw)[0]
        if out is not None:
            draws.append(out)
        seed += 1
    assert seed < 2 * k
    return np.array(draws)


@pytest.mark.parametrize("n,weight", [(400, 1.0), (4000, 1.0), (400, 2.0)])
def test_s3_leaf_noise_std_is_the_formula_in_the_leaf_weight(n, weight):
    """std(leaf) = sqrt(2 lr / T) / sqrt(W_leaf + lambda): the leaf's weight, not N."""
    T, lr, lam = 2.0, 0.5, 3.0
    leaves = _leaf_draws(400, n, T, lr, lam, weight=weight)
    counts = _one_tree_leaves(n, 0, T, lr, lam, weight)[1]
    for leaf, count in enumerate(counts):
        sigma = math.sqrt(2 * lr / T) / math.sqrt(weight * count + lam)
        assert_std_in_chi2_ci(leaves[:, leaf], sigma)


def test_s3_newton_leaves_use_the_hessian_not_zero_noise():
    """Newton leaves get noise ``sqrt(2 lr / T) / sqrt(H_leaf + lambda)`` (CatBoost's CPU code
    drops it); the noiseless part is removed by subtracting the T = inf model."""
    n, T, lr, lam = 400, 1.0, 0.5, 1.0
    y = (np.arange(n) % 4 == 0).astype(float)      # p = 0.25 at the bias
    clean = _one_tree_leaves(n, 0, math.inf, lr, lam, loss="logloss", y=y,
                             leaf_estimation="newton")[0]
    noise = _leaf_draws(400, n, T, lr, lam, loss="logloss", y=y,
                        leaf_estimation="newton") - clean
    counts = _one_tree_leaves(n, 0, T, lr, lam)[1]
    for leaf, count in enumerate(counts):
        H = count * 0.25 * 0.75
        assert_std_in_chi2_ci(noise[:, leaf], math.sqrt(2 * lr / T) / math.sqrt(H + lam))


def test_s3_leaf_noise_agrees_with_catboost():
    """CatBoost (Gradient leaves, random_strength=0, T = beta/N), side by side: its leaf noise
    (Langevin model minus the same model without Langevin) has the same std as ours."""
    catboost = importorskip("catboost")
    n, T, lr, lam, draws = 400, 1.0, 0.5, 3.0, 100
    x = (np.arange(n) % 10 < 3).astype(float)
    X = x[:, None]
    y = np.random.default_rng(0).normal(size=n)
    grid = np.array([[0.0], [1.0]])

    def fit(seed, langevin):
        extra = dict(langevin=True, diffusion_temperature=T, model_shrink_rate=0.0) \
            if langevin else {}
        cb = catboost.CatBoostRegressor(
            iterations=1, depth=1, learning_rate=lr, l2_leaf_reg=lam,
            leaf_estimation_method="Gradient", leaf_estimation_iterations=1,
            random_strength=0, bootstrap_type="No", boost_from_average=False,
            random_seed=seed, verbose=0, thread_count=1,
            allow_writing_files=False, **extra)
        return cb.fit(X, y).predict(grid)

    clean = fit(0, False)
    theirs = np.array([fit(seed, True) - clean for seed in range(draws)])
    ours = _leaf_draws(draws, n, T, lr, lam)
    for leaf, count in enumerate([np.sum(x == 0), np.sum(x == 1)]):
        sigma = math.sqrt(2 * lr / T) / math.sqrt(count + lam)
        assert_std_in_chi2_ci(theirs[:, leaf], sigma)
        assert_std_in_chi2_ci(ours[:, leaf], sigma)


# -- S4: the structure noise changes which split wins ------------------------------------------
def _first_split_features(seeds, **params):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 6))
    y = X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.normal(size=2000)
    feats = []
    for s in seeds:
        m = BoostRegressor(n_estimators=1, max_depth=1, learning_rate=0.1, update="sglb",
                           update_params={"model_shrink_rate": 0.0, **params},
                           random_state=s).fit(X, y)
        feats.append(int(m.ensemble_.trees[0].feature[0]))
    return np.array(feats)


def test_s4_structure_noise_makes_split_features_uniform_when_it_dominates():
    feats = _first_split_features(range(60), diffusion_temperature=1e-6)
    counts = np.bincount(feats, minlength=6)
    stat = float(np.sum((counts - 10.0) ** 2 / 10.0))
    assert stat < 20.52, f"split features far from uniform: {counts}"     # chi2(5) 0.999
    assert (counts > 0).sum() >= 5


def test_s4_no_structure_noise_means_identical_structures():
    assert set(_first_split_features(range(8), diffusion_temperature=math.inf)) == {0}
    # tiny T but structure noise off: the leaf noise alone never moves the first split
    assert set(_first_split_features(range(8), diffusion_temperature=1e-6,
                                     structure_noise=False)) == {0}


# -- S5: independent noise streams -------------------------------------------------------------
def test_s5_leaf_noise_does_not_depend_on_the_structure_noise():
    """One possible structure (a binary feature, depth 1) and a target that always splits:
    the leaf values are bitwise the same with and without the structure noise, and the leaf
    noise is uncorrelated with the structure noise that was drawn."""
    n, T, lr, lam = 400, 1.0, 0.5, 3.0
    x = (np.arange(n) % 10 < 3).astype(float)
    y = 2.0 * x + np.random.default_rng(0).normal(size=n)

    def leaves(seed, T, structure_noise=True):
        m = BoostRegressor(n_estimators=1, max_depth=1, learning_rate=lr, l2_regularization=lam,
                           leaf_estimation="gradient", update="sglb", random_state=seed,
                           update_params={"diffusion_temperature": T, "model_shrink_rate": 0.0,
                                          "structure_noise": structure_noise}).fit(x[:, None], y)
        tree = m.ensemble_.trees[0]
        assert list(tree.feature) == [0]
        return m.ensemble_.coef[0] * tree.value

    clean = leaves(0, math.inf)
    noise, struct_sums = [], []
    for seed in range(300):
        with_noise = leaves(seed, T)
        assert np.array_equal(with_noise, leaves(seed, T, structure_noise=False))
        zeta = stream_rng(seed_sequence(seed), "structure_noise").standard_normal(n)
        noise.append(with_noise[1] - clean[1])
        struct_sums.append(zeta[x == 1].sum())
    r = np.corrcoef(noise, struct_sums)[0, 1]
    assert abs(r) < 4 / math.sqrt(300)


# -- S6: the exact stationary law of the constant model ----------------------------------------
@pytest.mark.parametrize("eps,gamma", [(0.5, 1.0), (0.25, 1.0)])
def test_s6_constant_model_chain_has_the_gibbs_moments(eps, gamma):
    """Depth-0 trees, MSE, lambda = 0: ``F' = (1 - eps(1+gamma)) F + eps ybar
    - sqrt(2 eps / beta) xi`` with ``beta = T N``; stationary mean ``ybar / (1+gamma)`` and
    variance ``(2 eps / beta) / (1 - phi^2)``."""
    n, T, iters, burn = 40, 0.05, 10_000, 200
    y = np.random.default_rng(1).normal(size=n)
    y += 2.0 - y.mean()                          # ybar = 2 exactly
    rule = Trace(diffusion_temperature=T, model_shrink_rate=gamma)
    BoostRegressor(n_estimators=iters, learning_rate=eps, l2_regularization=0.0,
                   leaf_estimation="gradient", update=rule, random_state=0,
                   n_jobs=1).fit(np.zeros((n, 1)), y)
    F = np.array([r[0] for r in rule.raws])[burn:]
    phi = 1.0 - eps * (1.0 + gamma)
    beta = T * n
    var = (2 * eps / beta) / (1 - phi ** 2)
    mean = 2.0 / (1.0 + gamma)
    se_mean = math.sqrt(var / F.size * (1 + phi) / (1 - phi))
    assert abs(F.mean() - mean) < 4 * se_mean
    assert F.var() == pytest.approx(var, rel=0.05)
    # the Gibbs law's variance 1/(beta (1+gamma)) is the eps -> 0 limit of the above
    assert var * (1 - phi ** 2) / (2 * eps) == pytest.approx(1 / beta)


# -- S7: empty leaves, infinite temperatures, weights ----------------------------------------
@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
def test_s7_empty_leaves_stay_zero_under_langevin_noise(policy):
    """Leaf values computed on rows that miss some leaves (the ``value_rows`` path CatBoost-
    style sampling uses): a leaf no row reaches is exactly 0 with leaf noise on, the others
    are noisy Newton steps."""
    from boostlib.engine.binning import BinMapper
    from boostlib.engine.grower import GrowParams, TreeGrower

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 1))
    bm = BinMapper(max_bins=16).fit(X)
    Xr = bm.transform(X, layout="row")
    grower = TreeGrower(np.ascontiguousarray(Xr.T), bm.n_bins_nonmissing_, bm.missing_bin,
                        policy, GrowParams(max_depth=1, l2_regularization=1.0))
    rows = np.arange(200, dtype=np.int32)
    g = np.where(X[:, 0] > 0, 1.0, -1.0)
    h = np.ones(200)
    tree, _ = grower.grow(rows, g, h, leaf_noise_scale=5.0, leaf_rng=np.random.default_rng(1))
    assert tree.n_leaves() == 2
    left_rows = rows[X[:, 0] < np.min(X[X[:, 0] > 0, 0]) - 1e-9][:50]   # one side only
    tree2, node = grower.grow(rows, g, h, leaf_noise_scale=5.0,
                              leaf_rng=np.random.default_rng(1), value_rows=left_rows,
                              value_gradient=g[left_rows], value_hessian=h[left_rows])
    reached = np.unique(node)
    assert reached.size == 1
    leaves = np.flatnonzero(tree2.left < 0) if policy == "depthwise" else np.arange(2)
    empty = [leaf for leaf in leaves if leaf not in reached]
    assert len(empty) == 1 and tree2.value[empty[0]] == 0.0
    assert tree2.value[reached[0]] != 0.0


@pytest.mark.parametrize("T", [math.inf, 1e300, 1e-20])
def test_s7_extreme_temperatures_give_finite_models(T):
    X, y = _data(n=200)
    m = BoostRegressor(n_estimators=5, update="sglb",
                       update_params={"diffusion_temperature": T}).fit(X, y)
    assert np.all(np.isfinite(m.predict(X)))


# -- S8: virtual ensembles -------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["constant", "decreasing"])
def test_s8_virtual_ensemble_members_are_the_training_states(mode):
    X, y = _data(n=300)
    rule = Trace(diffusion_temperature=50.0, model_shrink_rate=0.5 if mode == "constant"
                 else 0.2, model_shrink_mode=mode)
    m = BoostRegressor(n_estimators=40, update=rule, random_state=2).fit(X, y)
    K = 4
    members = m.predict_virtual_ensembles(X, n_members=K)
    period = 40 // (2 * K)
    assert members.shape == (300, K)
    for k in range(K):
        last = 40 - (K - 1 - k) * period                  # trees in member k
        np.testing.assert_allclose(members[:, k], rule.raws[last - 1], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(members[:, -1], m.predict(X), rtol=1e-12)


def test_s8_without_shrink_members_are_truncated_models():
    X, y = _data(n=300)
    kw = dict(update="sglb", update_params={"diffusion_temperature": math.inf,
                                            "model_shrink_rate": 0.0}, random_state=0)
    m = BoostClassifier(n_estimators=30, **kw).fit(X, y > 0.5)
    members = m.predict_virtual_ensembles(X, n_members=3)
    for k, trees in enumerate([20, 25, 30]):
        short = BoostClassifier(n_estimators=trees, **kw).fit(X, y > 0.5)
        np.testing.assert_allclose(members[:, k], short.predict_proba(X)[:, 1], rtol=1e-12)
    with pytest.raises(ValueError, match="n_members=16 needs a model of at least 32 trees"):
        m.predict_virtual_ensembles(X, n_members=16)
    with pytest.raises(ValueError, match="n_members=0 is invalid"):
        m.predict_virtual_ensembles(X, n_members=0)


def test_virtual_ensembles_refuse_rewritten_coefficients():
    X, y = _data(n=100)
    m = BoostRegressor(n_estimators=10).fit(X, y)
    m.ensemble_.coef = m.ensemble_.coef * 2.0           # what a coefficient-rewriting rule does
    with pytest.raises(ValueError, match="earlier states cannot be recovered"):
        m.predict_virtual_ensembles(X, n_members=2)


# -- posterior sampling, every loss and sampler, determinism, parameters --------------------
def test_posterior_sampling_sets_catboost_defaults():
    X, y = _data(n=250)
    rule = SGLB(posterior_sampling=True)
    BoostRegressor(n_estimators=4, update=rule).fit(X, y)
    assert rule.temperature_ == 250.0 and rule.shrink_rate_ == 1 / 500
    assert rule.noise_scale_ == pytest.approx(math.sqrt(2 / (0.1 * 250)))
    default = SGLB()
    BoostRegressor(n_estimators=2, update=default).fit(X, y)
    assert default.temperature_ == 1e4 and default.shrink_rate_ == 1e-3
    decreasing = SGLB(model_shrink_mode="decreasing")
    BoostRegressor(n_estimators=2, update=decreasing).fit(X, y)
    assert decreasing.shrink_rate_ == 1e-2


@pytest.mark.parametrize("loss", ["logloss", "sla", "mse"])
@pytest.mark.parametrize("sampler", [None, "uniform", "goss", "mvs"])
def test_sglb_trains_with_every_loss_and_sampler(loss, sampler):
    X, y = _data(n=500)
    est = BoostRegressor if loss == "mse" else BoostClassifier
    target = y if loss == "mse" else (y > np.median(y)).astype(int)
    m = est(n_estimators=30, max_depth=3, loss=loss, sampler=sampler,
            subsample=0.5 if sampler else 1.0, update="sglb",
            leaf_estimation="gradient" if loss == "sla" else "newton",
            update_params={"diffusion_temperature": 1e4}, random_state=0).fit(X, target)
    curve = m.evals_result_["train"][loss]
    assert np.all(np.isfinite(curve)) and curve[-1] < curve[0]


@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
def test_sglb_is_reproducible_whatever_n_jobs(policy):
    X, y = _data(n=1000)
    kw = dict(n_estimators=8, grow_policy=policy, sampler="mvs", subsample=0.5,
              random_strength=0.3, update="sglb", update_params={"diffusion_temperature": 10.0})
    a = BoostRegressor(n_jobs=1, random_state=4, **kw).fit(X, y)
    b = BoostRegressor(n_jobs=2, random_state=4, **kw).fit(X, y)
    _same_model(a, b)
    c = BoostRegressor(n_jobs=2, random_state=5, **kw).fit(X, y)
    assert not np.array_equal(a.predict(X), c.predict(X))


@pytest.mark.parametrize("params,match", [
    ({"diffusion_temperature": 0}, "diffusion_temperature=0 is invalid; expected a number > 0"),
    ({"diffusion_temperature": float("nan")}, "diffusion_temperature=nan is invalid"),
    ({"diffusion_temperature": "hot"}, "diffusion_temperature='hot' is invalid"),
    ({"model_shrink_rate": -1}, "model_shrink_rate=-1 is invalid; expected a number >= 0"),
    ({"model_shrink_rate": 1.5, "model_shrink_mode": "decreasing"},
     "invalid in decreasing mode"),
    ({"model_shrink_rate": 20.0}, "times learning_rate=0.1 must be < 1"),
    ({"model_shrink_mode": "linear"}, "model_shrink_mode='linear' is invalid"),
    ({"structure_noise": "yes"}, "structure_noise='yes' is invalid"),
    ({"posterior_sampling": True, "diffusion_temperature": 5.0},
     "posterior_sampling=True sets diffusion_temperature itself"),
    ({"posterior_sampling": True, "model_shrink_mode": "decreasing"},
     "needs model_shrink_mode='constant'"),
    ({"temperature": 3.0}, "temperature"),
    ({"diffusion_temperature": 1e-300}, "diffusion_temperature=1e-300 is too small"),
])
def test_bad_parameters_are_named(params, match):
    X, y = _data(n=50)
    with pytest.raises(ValueError, match=match):
        BoostRegressor(n_estimators=2, update="sglb", update_params=params).fit(X, y)


def test_structure_noise_variance_follows_the_hessian_and_sampling_weights():
    """Per-row noise ``c sqrt(h_i / w_i) zeta'_i`` on the sampled rows: once the sampler's
    weight multiplies it, a leaf's noise sum has variance ``c^2 sum_sampled w_i h_i`` (the
    sampled hessian sum), and unsampled rows keep their gradient."""
    from boostlib.api import SampleResult
    from boostlib.builtin.sglb import structure_gradient

    rng = np.random.default_rng(0)
    n, c, reps = 50, 1.7, 4000
    g = rng.normal(size=n)
    h = rng.uniform(0.5, 3.0, size=n)
    rows = np.arange(0, n, 2, dtype=np.int32)
    w = rng.uniform(1.0, 4.0, size=rows.size)
    sums, full_sums = [], []
    draw = np.random.default_rng(1)
    for _ in range(reps):
        out = structure_gradient(g, h, SampleResult(rows, w), c, draw)
        assert np.array_equal(out[1::2], g[1::2])
        sums.append(np.sum(w * (out[rows] - g[rows])))
        full_sums.append(np.sum(structure_gradient(g, h, None, c, draw) - g))
    expected = c ** 2 * np.sum(w * h[rows])
    # the sample variance of 4000 normals is within 10% of sigma^2 (> 6 SE)
    assert np.var(sums) == pytest.approx(expected, rel=0.1)
    assert np.var(full_sums) == pytest.approx(c ** 2 * h.sum(), rel=0.1)
