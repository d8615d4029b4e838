"""The built-in row samplers: differential tests against tests/reference/samplers.py and the
properties of algorithms.md section 7 (B1-B2, M1-M7, G1-G5), by Monte Carlo with stated
tolerances (4 standard errors, fixed seeds)."""
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

from boostlib import create
from boostlib.builtin.samplers import GOSSSampler, MVSSampler, UniformSampler
from reference import samplers as ref
from reference.strategies import KERNEL_SETTINGS

grad_values = st.one_of(st.just(0.0), st.sampled_from([-1.0, 0.5, 2.0]),
                        st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False))


@st.composite
def derivatives(draw, max_rows=80):
    n = draw(st.integers(1, max_rows))
    g = draw(hnp.arrays(np.float64, n, elements=grad_values))
    h = draw(hnp.arrays(np.float64, n, elements=st.one_of(
        st.just(0.0), st.just(1.0), st.floats(0.0, 10.0))))
    return g, h


def _began(sampler, learning_rate=0.1):
    sampler.begin(SimpleNamespace(learning_rate=learning_rate, n_rows=0, n_iterations=0))
    return sampler


def _heavy_tailed(n=20000, seed=0):
    """95% N(0, 0.1^2) and 5% N(0, 5^2) gradients, unit hessians (algorithms.md M5)."""
    rng = np.random.default_rng(seed)
    heavy = rng.random(n) < 0.05
    g = np.where(heavy, rng.normal(0.0, 5.0, n), rng.normal(0.0, 0.1, n))
    return g, np.ones(n)


def _mc(sampler, g, h, draws, seed=1):
    """Per draw: sample size, sum w*g, sum w*h, sum w."""
    rng = np.random.default_rng(seed)
    out = np.empty((draws, 4))
    for k in range(draws):
        res = sampler.sample(g, h, rng, 100)
        w = np.ones(res.indices.size) if res.weights is None else res.weights
        i = res.indices
        out[k] = (i.size, np.dot(w, g[i]), np.dot(w, h[i]), w.sum())
    return out


def _within_4se(samples, expected):
    se = samples.std(ddof=1) / np.sqrt(samples.size)
    assert abs(samples.mean() - expected) <= 4 * se + 1e-9 * abs(expected), \
        (samples.mean(), expected, se)


# -- registry and parameters ----------------------------------------------------------------
def test_builtin_samplers_are_registered():
    for name, cls in (("uniform", UniformSampler), ("goss", GOSSSampler), ("mvs", MVSSampler)):
        s = create("sampler", name, {"leaf_values": "all"}, subsample=0.4)
        assert isinstance(s, cls) and s.subsample == 0.4 and s.leaf_values == "all"


@pytest.mark.parametrize("name,params,match", [
    ("uniform", {"subsample": 0.0}, "subsample=0.0"),
    ("uniform", {"leaf_values": "both"}, "leaf_values='both'"),
    ("goss", {"top_rate": 1.5}, "top_rate=1.5"),
    ("goss", {"other_rate": 0.0}, "other_rate=0.0"),
    ("goss", {"top_rate": 0.7, "other_rate": 0.6}, "sum <= 1"),
    ("goss", {"subsample": 0.5, "top_rate": 0.2, "other_rate": 0.1}, "contradicts"),
    ("goss", {"score": "h"}, "score='h'"),
    ("goss", {"warmup": "yes"}, "warmup='yes'"),
    ("mvs", {"mvs_reg": -1.0}, "mvs_reg=-1.0"),
    ("mvs", {"mvs_reg": float("inf")}, "mvs_reg=inf"),
])
def test_bad_parameters_name_the_parameter(name, params, match):
    cls = {"uniform": UniformSampler, "goss": GOSSSampler, "mvs": MVSSampler}[name]
    with pytest.raises(ValueError, match=match):
        cls(**params)


def test_goss_rates_from_subsample():
    s = GOSSSampler(subsample=0.3)
    assert (s.top_rate, s.other_rate) == pytest.approx((0.2, 0.1))     # LightGBM's defaults
    s = GOSSSampler(subsample=0.5, top_rate=0.1)
    assert (s.top_rate, s.other_rate) == pytest.approx((0.1, 0.4))
    s = GOSSSampler(top_rate=0.2, other_rate=0.1)
    assert (s.top_rate, s.other_rate) == (0.2, 0.1)


@pytest.mark.parametrize("cls", [UniformSampler, GOSSSampler, MVSSampler])
def test_subsample_one_means_no_sampling(cls):
    g, h = _heavy_tailed(500)
    assert _began(cls(subsample=1.0)).sample(g, h, np.random.default_rng(0), 50) is None


# -- differential tests ---------------------------------------------------------------------
@KERNEL_SETTINGS
@given(st.integers(1, 200), st.floats(0.01, 0.99), st.integers(0, 2**32 - 1))
def test_uniform_matches_reference(n, s, seed):
    res = UniformSampler(s).sample(np.zeros(n), np.ones(n), np.random.default_rng(seed), 0)
    u = ref.sampler_uniforms(np.random.default_rng(seed), n)
    idx, _ = ref.bernoulli_select(np.full(n, s), u)
    if idx.size:
        np.testing.assert_array_equal(res.indices, idx)
    else:
        assert res.indices.size == 1
    assert res.weights is None


@KERNEL_SETTINGS
@given(derivatives(), st.floats(0.01, 0.99), st.one_of(st.none(), st.floats(0.0, 100.0)),
       st.integers(0, 2**32 - 1))
def test_mvs_matches_reference(gh, s, lam, seed):
    g, h = gh
    sampler = _began(MVSSampler(s, mvs_reg=lam), learning_rate=0.3)
    score = ref.mvs_score(g, h, lam, learning_rate=0.3)
    p = ref.mvs_probabilities(score, s)
    np.testing.assert_allclose(sampler.probabilities(g, h), p, rtol=1e-9, atol=1e-12)
    res = sampler.sample(g, h, np.random.default_rng(seed), 0)
    assert res.indices.dtype == np.int32 and np.all(np.diff(res.indices) > 0)
    assert res.indices.size >= 1
    assert np.all(res.weights > 0) and np.all(np.isfinite(res.weights))
    # p exactly 0 or 1 and the uniform fallback do not depend on float rounding: compare the
    # draw with the reference given the same uniforms.
    u = ref.sampler_uniforms(np.random.default_rng(seed), g.size)
    pi = np.ceil(p * 2.0 ** 32) * 2.0 ** -32        # the draw's steps are 2**-32
    idx, w = ref.bernoulli_select(pi, u)
    assume(idx.size > 0 and np.all(np.abs(u - p) > 1e-9))
    np.testing.assert_array_equal(res.indices, idx)
    np.testing.assert_allclose(res.weights, w, rtol=1e-9)


def test_mvs_adaptive_lambda_with_tiny_hessians():
    # hypothesis found it: the adaptive lambda overflows for one tiny hessian among zeros; the
    # sampler must still rank by sqrt(g^2 + lambda h^2), which is finite (see mvs_scores).
    g = np.array([0.5] * 5 + [2.0] + [0.5] * 5 + [2.0] + [0.5] * 5 + [0.0])
    h = np.zeros(g.size)
    h[2] = 3.29183146e-257
    sampler = _began(MVSSampler(0.3), learning_rate=0.3)
    assert sampler.regularization(g, h) == np.inf
    p = ref.mvs_probabilities(ref.mvs_score(g, h, None, learning_rate=0.3), 0.3)
    np.testing.assert_allclose(sampler.probabilities(g, h), p, rtol=1e-9)
    assert p[2] == 1.0                   # the row with the hessian dominates the score
    res = sampler.sample(g, h, np.random.default_rng(0), 0)
    assert 2 in res.indices and np.all(np.isfinite(res.weights))


@KERNEL_SETTINGS
@given(derivatives(max_rows=120), st.floats(0.01, 0.5), st.floats(0.01, 0.5),
       st.sampled_from(["gh", "g"]), st.integers(0, 2**32 - 1))
def test_goss_matches_reference(gh, a, b, key, seed):
    g, h = gh
    res = GOSSSampler(top_rate=a, other_rate=b, score=key, warmup=False).sample(
        g, h, np.random.default_rng(seed), 0)
    score = np.abs(g * h) if key == "gh" else np.abs(g)
    top, rest, other_k, weight = ref.goss_split(score, a, b)
    if res is None:                 # nothing left to sample: every row, weight 1
        assert top.size + other_k >= g.size or rest.size == 0
        return
    assert np.all(np.diff(res.indices) > 0)
    chosen = set(res.indices.tolist())
    assert set(top.tolist()) <= chosen
    np.testing.assert_array_equal(res.weights[np.isin(res.indices, top)], 1.0)
    drawn = np.setdiff1d(res.indices, top)
    assert drawn.size == other_k and set(drawn.tolist()) <= set(rest.tolist())
    if other_k:
        np.testing.assert_allclose(res.weights[np.isin(res.indices, drawn)], weight)


# -- Bernoulli (B1, B2) ---------------------------------------------------------------------
def test_uniform_expected_size_and_sums():
    g, h = _heavy_tailed(2000)
    out = _mc(UniformSampler(0.3), g, h, draws=2000)
    _within_4se(out[:, 0], 0.3 * g.size)                       # B1
    _within_4se(out[:, 1] / 0.3, g.sum())                      # B2 (1/s reweighting)
    _within_4se(out[:, 2], 0.3 * h.sum())                      # weight 1: s times the sum


# -- MVS (M1-M7) ----------------------------------------------------------------------------
def test_mvs_catboost_oracle():
    # M1: g = sqrt(i^2 - 1), h = 1, lambda = 1 gives scores i; s = 0.75 gives mu = 11.
    i = np.tile(np.arange(1.0, 21.0), 128)
    sampler = MVSSampler(0.75, mvs_reg=1.0)
    p = sampler.probabilities(np.sqrt(i * i - 1.0), np.ones(i.size))
    np.testing.assert_allclose(p, np.minimum(1.0, i / 11.0), rtol=1e-12)
    res = sampler.sample(np.sqrt(i * i - 1.0), np.ones(i.size), np.random.default_rng(0), 0)
    w = res.weights
    big = i[res.indices] >= 11
    np.testing.assert_array_equal(w[big], 1.0)
    # the weights invert p rounded up to a multiple of 2**-32: within 2**-32 / p of 1 / p
    np.testing.assert_allclose(w[~big], 11.0 / i[res.indices][~big], rtol=11 * 2.0 ** -32)
    assert np.all(w[~big] <= 11.0 / i[res.indices][~big])
    assert np.all(np.isin(np.flatnonzero(i >= 11), res.indices))


@pytest.mark.parametrize("lam", [None, 0.0, 0.5])
def test_mvs_probabilities_sum_and_monotone(lam):
    # M2
    g, h = _heavy_tailed(5000)
    h = h + np.random.default_rng(3).random(g.size)
    for s in (0.05, 0.3, 0.8):
        sampler = _began(MVSSampler(s, mvs_reg=lam))
        p = sampler.probabilities(g, h)
        assert p.sum() == pytest.approx(s * g.size, rel=1e-9)
        assert np.all((p > 0) & (p <= 1))
        r = ref.mvs_score(g, h, lam, learning_rate=0.1)
        order = np.argsort(r, kind="stable")
        assert np.all(np.diff(p[order]) >= -1e-15)


def test_mvs_horvitz_thompson_unbiased():
    # M3: E[sum w g] = sum g, E[sum w h] = sum h, E[sum w] = N.
    g, h = _heavy_tailed(3000)
    h = h * np.random.default_rng(5).uniform(0.1, 2.0, g.size)
    out = _mc(_began(MVSSampler(0.2)), g, h, draws=2000)
    _within_4se(out[:, 1], g.sum())
    _within_4se(out[:, 2], h.sum())
    _within_4se(out[:, 3], g.size)
    _within_4se(out[:, 0], 0.2 * g.size)                       # expected sample size


def test_mvs_variance_below_uniform_analytically():
    # M4: with lambda = 0, sum g^2 (1/p - 1) <= sum g^2 (1/s - 1); equal iff all |g| equal.
    g, h = _heavy_tailed(4000)
    for s in (0.05, 0.2, 0.5):
        p = MVSSampler(s, mvs_reg=0.0).probabilities(g, h)
        assert np.sum(g * g * (1 / p - 1)) < np.sum(g * g * (1 / s - 1))
    g_eq = np.full(100, -0.7)
    p = MVSSampler(0.3, mvs_reg=0.0).probabilities(g_eq, np.ones(100))
    assert np.sum(g_eq ** 2 * (1 / p - 1)) == pytest.approx(np.sum(g_eq ** 2 * (1 / 0.3 - 1)))


def test_mvs_split_score_variance_beats_uniform_and_goss():
    # M5 and the slides' claim, with each sampler's default settings at the same rate 0.1
    # (GOSS: top 5% + 5% of the rest); uniform with Horvitz-Thompson weights 1/s.
    g, h = _heavy_tailed(20000)
    left = np.random.default_rng(7).random(g.size) < 0.5

    def split_score(idx, w):
        sides = left[idx]
        gl, hl = np.dot(w[sides], g[idx][sides]), np.dot(w[sides], h[idx][sides])
        gr, hr = np.dot(w[~sides], g[idx][~sides]), np.dot(w[~sides], h[idx][~sides])
        return gl * gl / hl + gr * gr / hr

    variances = {}
    for name, sampler in (("uniform", UniformSampler(0.1)), ("mvs", MVSSampler(0.1)),
                          ("goss", GOSSSampler(0.1, warmup=False, top_rate=0.05))):
        _began(sampler)
        rng = np.random.default_rng(11)
        scores = []
        for _ in range(500):
            res = sampler.sample(g, h, rng, 100)
            w = np.full(res.indices.size, 10.0) if res.weights is None else res.weights
            scores.append(split_score(res.indices, w))
        variances[name] = np.var(scores)
    assert variances["mvs"] < 0.5 * variances["uniform"], variances
    assert variances["mvs"] < 0.8 * variances["goss"], variances


def test_mvs_degenerate_cases():
    # M6: all scores equal -> p = s; all zero -> uniform fallback, no NaN; s = 1 -> None;
    # N*s < 1 -> still one row.
    n = 1000
    p = MVSSampler(0.25, mvs_reg=0.0).probabilities(np.full(n, 3.0), np.ones(n))
    np.testing.assert_allclose(p, 0.25)
    res = MVSSampler(0.25, mvs_reg=0.0).sample(np.zeros(n), np.zeros(n),
                                               np.random.default_rng(0), 0)
    assert np.all(res.weights == 4.0) and 150 < res.indices.size < 350
    res = MVSSampler(0.25).sample(np.zeros(n), np.ones(n), np.random.default_rng(0), 0)
    assert np.all(np.isfinite(res.weights))
    for seed in range(20):
        res = MVSSampler(0.0005).sample(*_heavy_tailed(100, seed), np.random.default_rng(seed), 0)
        assert res.indices.size >= 1 and np.all(np.isfinite(res.weights))
    # fewer positive scores than the target: those rows, weight 1
    g = np.zeros(n)
    g[:10] = 1.0
    res = MVSSampler(0.5, mvs_reg=0.0).sample(g, np.ones(n), np.random.default_rng(0), 0)
    np.testing.assert_array_equal(res.indices, np.arange(10))
    np.testing.assert_array_equal(res.weights, 1.0)


def test_mvs_lambda_limits():
    # M7: lambda -> inf makes MVS uniform; lambda = 0 makes p proportional to |g| below mu.
    g, h = _heavy_tailed(5000)
    p = MVSSampler(0.3, mvs_reg=1e12).probabilities(g, h)
    assert np.max(np.abs(p - 0.3)) < 1e-3
    p = MVSSampler(0.3, mvs_reg=0.0).probabilities(g, h)
    below = p < 1
    ratio = p[below] / np.abs(g[below])
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)


# -- GOSS (G1-G5) ---------------------------------------------------------------------------
def test_goss_exact_counts_and_weights():
    # G1: distinct scores -> exactly top_k unweighted rows + other_k rows of weight
    # (N - top_k) / other_k; every top row present.
    n = 1003
    g = np.random.default_rng(0).permutation(np.arange(1.0, n + 1))
    sampler = GOSSSampler(top_rate=0.2, other_rate=0.1, warmup=False)
    top_k, other_k = int(n * 0.2), int(n * 0.1)
    top = np.argsort(-g)[:top_k]
    for seed in range(5):
        res = sampler.sample(g, np.ones(n), np.random.default_rng(seed), 0)
        assert res.indices.size == top_k + other_k
        assert np.all(np.isin(top, res.indices))
        assert np.sum(res.weights == 1.0) == top_k
        np.testing.assert_allclose(res.weights[res.weights != 1.0], (n - top_k) / other_k)


def test_goss_horvitz_thompson_unbiased():
    # G2
    g, h = _heavy_tailed(3000)
    h = h * np.random.default_rng(5).uniform(0.1, 2.0, g.size)
    out = _mc(GOSSSampler(top_rate=0.1, other_rate=0.1, warmup=False), g, h, draws=2000)
    _within_4se(out[:, 1], g.sum())
    _within_4se(out[:, 2], h.sum())
    assert np.all(out[:, 0] == 300 + 300)


def test_goss_ties_keep_every_tied_row():
    # G3: all scores equal -> every row, weight 1 (no sampling); ties at the threshold go
    # to the top set and the draw comes from the strictly smaller scores.
    n = 400
    sampler = GOSSSampler(top_rate=0.1, other_rate=0.1, warmup=False)
    assert sampler.sample(np.full(n, 0.5), np.ones(n), np.random.default_rng(0), 0) is None
    g = np.where(np.arange(n) < 100, 2.0, np.linspace(0.0, 1.0, n))   # 100 rows tied at top
    res = sampler.sample(g, np.ones(n), np.random.default_rng(0), 0)
    assert np.all(np.isin(np.arange(100), res.indices))
    assert res.indices.size == 100 + 40
    np.testing.assert_allclose(res.weights[100:], 300 / 40)


def test_goss_warmup_follows_learning_rate():
    # G4: iterations < int(1 / learning_rate) are not sampled.
    g, h = _heavy_tailed(1000)
    rng = np.random.default_rng(0)
    sampler = _began(GOSSSampler(subsample=0.3), learning_rate=0.25)
    assert [sampler.sample(g, h, rng, it) is None for it in range(6)] == [True] * 4 + [False] * 2
    no_warmup = _began(GOSSSampler(subsample=0.3, warmup=False), learning_rate=0.25)
    assert no_warmup.sample(g, h, rng, 0) is not None


def test_goss_score_key():
    # G5: for constant hessians |g| and |g*h| give the same sample; otherwise they differ.
    g, _ = _heavy_tailed(2000)
    h1 = np.full(g.size, 0.7)
    a = GOSSSampler(0.3, warmup=False, score="gh").sample(g, h1, np.random.default_rng(1), 0)
    b = GOSSSampler(0.3, warmup=False, score="g").sample(g, h1, np.random.default_rng(1), 0)
    np.testing.assert_array_equal(a.indices, b.indices)
    h2 = np.random.default_rng(2).uniform(0.0, 1.0, g.size)
    a = GOSSSampler(0.3, warmup=False, score="gh").sample(g, h2, np.random.default_rng(1), 0)
    b = GOSSSampler(0.3, warmup=False, score="g").sample(g, h2, np.random.default_rng(1), 0)
    assert not np.array_equal(a.indices, b.indices)


@pytest.mark.parametrize("cls", [UniformSampler, GOSSSampler, MVSSampler])
def test_samplers_do_not_modify_inputs_and_are_deterministic(cls):
    g, h = _heavy_tailed(3000)
    g0, h0 = g.copy(), h.copy()
    a = _began(cls(0.3)).sample(g, h, np.random.default_rng(9), 20)
    b = _began(cls(0.3)).sample(g, h, np.random.default_rng(9), 20)
    np.testing.assert_array_equal(g, g0)
    np.testing.assert_array_equal(h, h0)
    np.testing.assert_array_equal(a.indices, b.indices)
    if a.weights is not None:
        np.testing.assert_array_equal(a.weights, b.weights)


# -- thresholds sought near the last iteration's ----------------------------------------------
def _threshold_guess_runs(cls, **params):
    """A sampler drawing on slowly moving derivatives (its threshold guess then hits), a jump
    in scale (it misses), and a fresh sampler's draws on the same inputs (no guess)."""
    g, h = _heavy_tailed(4000, seed=3)
    steps = [(g * (1 + 0.0005 * k), h) for k in range(4)] + [(50.0 * g, h), (50.0 * g, h)]
    guessed = _began(cls(0.4, **params))
    out = []
    for k, (gk, hk) in enumerate(steps):
        a = guessed.sample(gk, hk, np.random.default_rng(k), 5)
        b = _began(cls(0.4, **params)).sample(gk, hk, np.random.default_rng(k), 5)
        out.append((a, b))
    return guessed._bracket, out


def test_goss_threshold_guess_gives_the_same_sample():
    # The k-th largest found near the last one is the k-th largest: the sample is the same,
    # bit for bit, as without a guess, whether the guess hit or missed.
    bracket, runs = _threshold_guess_runs(GOSSSampler, warmup=False)
    assert bracket.hits >= 4 and bracket.misses >= 1
    for a, b in runs:
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.weights, b.weights)


def test_mvs_threshold_guess_gives_the_same_sample():
    # mu found near the last one equals the full kernel's to rounding (a plain float sum
    # against an exact one): same rows for these draws, weights equal to 1e-12.
    bracket, runs = _threshold_guess_runs(MVSSampler)
    assert bracket.hits >= 4 and bracket.misses >= 1
    for a, b in runs:
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_allclose(a.weights, b.weights, rtol=1e-12)


def test_threshold_guess_width_and_reset():
    from boostlib.builtin.samplers import _Bracket
    b = _Bracket()
    assert b.bounds() is None
    assert b.find(lambda lo, hi: pytest.fail("no guess yet"), lambda: 2.0) == 2.0
    lo, hi = b.bounds()
    assert (lo, hi) == pytest.approx((2.0 / 1.001, 2.0 * 1.001))
    assert b.find(lambda lo, hi: 2.02, lambda: pytest.fail("the guess hit")) == 2.02
    assert b.width == pytest.approx(4 * 0.01)            # four times the last move
    assert b.find(lambda lo, hi: np.nan, lambda: 20.0) == 20.0
    assert (b.hits, b.misses, b.width) == (1, 1, b.MAX_WIDTH)
    b.find(lambda lo, hi: 0.0, lambda: 0.0)               # a zero threshold: no guess after
    assert b.bounds() is None
    b.reset()
    assert (b.last, b.hits, b.misses, b.width) == (None, 0, 0, b.MIN_WIDTH)
    s = _began(GOSSSampler(0.4, warmup=False))
    s.sample(*_heavy_tailed(500), np.random.default_rng(0), 5)
    assert s._bracket.last is not None
    _began(s)                                              # a new fit forgets the last one
    assert s._bracket.last is None
