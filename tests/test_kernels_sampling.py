"""Differential tests of the sampling kernels (counter-based draws, MVS and GOSS thresholds and
selections, row gathering)."""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

from boostlib._kernels import _order_stats, _partition, _sampling
from reference import samplers as ref
from reference.strategies import KERNEL_SETTINGS, binned_data

# Scores with zeros, heavy ties and a wide dynamic range.
score_values = st.one_of(st.just(0.0), st.sampled_from([1.0, 2.0, 3.0]),
                         st.floats(1e-8, 1e8, allow_nan=False, allow_infinity=False))


@st.composite
def threshold_case(draw):
    n = draw(st.integers(1, 120))
    score = draw(hnp.arrays(np.float64, n, elements=score_values))
    n_pos = int(np.count_nonzero(score))
    assume(n_pos >= 1)
    frac = draw(st.floats(1e-3, 0.999))
    target = frac * n_pos
    assume(0 < target < n_pos)
    return score, target


@KERNEL_SETTINGS
@given(threshold_case())
def test_mvs_threshold_matches_sort_reference(case):
    score, target = case
    mu = _order_stats.mvs_threshold(score, target, np.empty(score.size))
    assert mu == pytest.approx(ref.mvs_threshold(score, target), rel=1e-9)
    assert np.minimum(1.0, score / mu).sum() == pytest.approx(target, rel=1e-9)


def test_mvs_threshold_large_and_adversarial_inputs():
    rng = np.random.default_rng(0)
    # Heavy tails across many buckets, one score per bucket (powers of 2), every score in
    # one bucket (ties; near-equal values), subnormal scores.
    cases = [np.abs(rng.standard_cauchy(20000)), 2.0 ** -np.arange(200.0),
             np.repeat([1.0, 5.0, 7.0], 1000), rng.pareto(0.5, 5000) + 1e-12,
             1.0 + 1e-3 * rng.random(5000), rng.random(3000) * 1e-310]
    for score in cases:
        for frac in (0.01, 0.3, 0.5, 0.9):
            target = frac * np.count_nonzero(score)
            mu = _order_stats.mvs_threshold(score, target, np.empty(score.size))
            assert mu == pytest.approx(ref.mvs_threshold(score, target), rel=1e-9)


def test_mvs_threshold_catboost_oracle():
    # algorithms.md M1 (CatBoost's unit test): scores 1..20 tiled, s = 0.75 gives mu = 11.
    score = np.tile(np.arange(1.0, 21.0), 128)
    assert _order_stats.mvs_threshold(score, 0.75 * score.size, np.empty(score.size)) == 11.0


@pytest.mark.parametrize("n_threads", [2, 3])
def test_order_stats_do_not_depend_on_the_thread_count(n_threads):
    # Each thread's chunk of rows has its own tables; the sums are exact, so any split
    # merges to the same totals and the same answers, bit for bit.
    rng = np.random.default_rng(n_threads)
    for score in (np.abs(rng.standard_cauchy(300_001)), rng.random(70_000) * 1e-310,
                  np.where(rng.random(100_000) < 0.3, 0.0, rng.exponential(size=100_000))):
        target = 0.37 * np.count_nonzero(score)
        mu1 = _order_stats.mvs_threshold(score, target, np.empty(score.size), 1)
        assert _order_stats.mvs_threshold(score, target, np.empty(score.size), n_threads) == mu1
        assert mu1 == pytest.approx(ref.mvs_threshold(score, target), rel=1e-12)
        for k in (1, 17, score.size // 3, score.size):
            v = _order_stats.kth_largest(score, k, np.empty(score.size), n_threads)
            assert v == np.sort(score)[::-1][k - 1]


@KERNEL_SETTINGS
@given(hnp.arrays(np.float64, st.integers(1, 150),
                  elements=st.one_of(score_values, st.just(-0.0),
                                     st.floats(0.0, 1e-300, allow_subnormal=True))),
       st.data())
def test_kth_largest_matches_sort(score, data):
    k = data.draw(st.integers(1, score.size))
    v = _order_stats.kth_largest(score, k, np.empty(score.size), data.draw(st.sampled_from([1, 2])))
    assert v == np.sort(score)[::-1][k - 1]


@pytest.mark.parametrize("kind", ["one_bucket", "one_digit", "ties", "zeros", "subnormal"])
def test_kth_largest_narrows_large_buckets_exactly(kind):
    # More than RADIX_MIN (4096) candidates in the k-th largest's bucket: radix steps over the
    # lower bits narrow them before the quickselect. Values in one bucket ([1, 1.0625)), in
    # one 12-bit digit of it too (the next step narrows), with ties, with zeros (and -0.0),
    # and subnormals: every rank, the sorted answer.
    rng = np.random.default_rng(len(kind))
    n = 30_000
    if kind == "one_bucket":
        score = 1.0 + rng.random(n) / 16.0
    elif kind == "one_digit":
        score = 1.0 + rng.random(n) * 2.0 ** -20
    elif kind == "ties":
        score = 1.0 + rng.integers(0, 7, n) * 2.0 ** -40
    elif kind == "zeros":
        score = np.where(rng.random(n) < 0.5, -0.0, 0.0)
        score[:10] = 1e-320
    else:
        score = rng.random(n) * 1e-310
    expected = np.sort(score)[::-1]
    for k in (1, 2, 4097, n // 3, n // 2 + 1, n - 1, n):
        for n_threads in (1, 2):
            v = _order_stats.kth_largest(score, k, np.empty(n), n_threads)
            assert v == expected[k - 1], (kind, k)


@pytest.mark.parametrize("kind", ["spread", "ties", "zeros", "one_bucket"])
def test_kth_largest_rest_counts_match_goss_rest_counts(kind):
    # The k-th largest's optional per-block counts of the scores below it (what GOSS needs)
    # equal goss_rest_counts at that threshold: across blocks of 65536 rows (with a partial
    # last one), for ranks whose threshold ties, is zero, or sits in a crowded bucket.
    rng = np.random.default_rng(3)
    n = 2 * _sampling.BLOCK_ROWS + 12_345
    score = {"spread": rng.exponential(size=n),
             "ties": rng.integers(0, 4, n).astype(float),
             "zeros": np.where(rng.random(n) < 0.6, np.where(rng.random(n) < 0.5, -0.0, 0.0),
                               rng.random(n)),
             "one_bucket": 1.0 + rng.random(n) / 16.0}[kind]
    nb = -(-n // _sampling.BLOCK_ROWS)
    for k in (1, 1000, n // 3, n // 2, n - 5, n):
        for n_threads in (1, 2):
            rest = np.full(nb, -1, np.int64)
            v = _order_stats.kth_largest(score, k, np.empty(n), n_threads, rest)
            assert v == np.sort(score)[::-1][k - 1]
            np.testing.assert_array_equal(rest, _sampling.goss_rest_counts(score, v, 1))
    with pytest.raises(ValueError, match="one count per block"):
        _order_stats.kth_largest(score, 1, np.empty(n), 1, np.empty(nb + 1, np.int64))


# -- the thresholds near a guess ---------------------------------------------------------------
bracket_factors = st.sampled_from([0.5, 0.9, 0.999, 1.0, 1.001, 1.1, 2.0])


@KERNEL_SETTINGS
@given(hnp.arrays(np.float64, st.integers(1, 150),
                  elements=st.one_of(score_values, st.just(-0.0))),
       st.data(), bracket_factors, bracket_factors)
def test_kth_largest_near_is_exact_or_nan(score, data, f_lo, f_hi):
    # Inside the bracket: the k-th largest and the blocks' counts below it, as the full
    # kernel; outside: NaN, never a wrong value. Brackets around the answer, on it (a tie at
    # lo or hi), beside it, and around arbitrary scores.
    k = data.draw(st.integers(1, score.size))
    expected = np.sort(score)[::-1][k - 1]
    centre = data.draw(st.sampled_from([expected, float(np.max(score)), 1.0]))
    assume(centre > 0)
    lo, hi = centre * min(f_lo, f_hi), centre * max(f_lo, f_hi)
    rest = np.full(1, -1, np.int64)
    v = _order_stats.kth_largest_near(score, k, lo, hi, np.empty(score.size),
                                      data.draw(st.sampled_from([1, 2])), rest)
    if lo <= expected < hi:
        assert v == expected
        np.testing.assert_array_equal(rest, _sampling.goss_rest_counts(score, v, 1))
    else:
        assert np.isnan(v) and rest[0] == -1


@KERNEL_SETTINGS
@given(threshold_case(), bracket_factors, bracket_factors, st.sampled_from([1, 2]))
def test_mvs_threshold_near_matches_reference_or_is_nan(case, f_lo, f_hi, n_threads):
    # Strictly inside the bracket: the reference mu (to rounding; the full kernel's sum is
    # exact, this one's a fixed-order float sum); outside: NaN.
    score, target = case
    mu = ref.mvs_threshold(score, target)
    lo, hi = mu * min(f_lo, f_hi), mu * max(f_lo, f_hi)
    got = _order_stats.mvs_threshold_near(score, target, lo, hi, np.empty(score.size),
                                          n_threads)
    if lo < mu * (1 - 1e-9) and mu * (1 + 1e-9) < hi:
        assert got == pytest.approx(mu, rel=1e-12)
    elif mu < lo * (1 - 1e-9) or hi * (1 + 1e-9) < mu:
        assert np.isnan(got)
    else:                               # mu on an edge, to rounding: either answer is right
        assert np.isnan(got) or got == pytest.approx(mu, rel=1e-12)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_near_thresholds_across_blocks_do_not_depend_on_the_thread_count(n_threads):
    # Several blocks of 65536 rows (a partial last one), four partial sums per block: the
    # answers are the same for any thread count, the k-th largest equal to the full kernel's
    # with the same rest counts, mu equal to the reference's to rounding.
    rng = np.random.default_rng(7)
    n = 3 * _sampling.BLOCK_ROWS + 777
    nb = -(-n // _sampling.BLOCK_ROWS)
    for score in (np.abs(rng.standard_cauchy(n)), np.where(rng.random(n) < 0.3, 0.0,
                                                              rng.exponential(size=n))):
        for k in (1, n // 3, n // 2):              # positive answers (a bracket is > 0)
            v = _order_stats.kth_largest(score, k, np.empty(n), 1)
            rest1, rest = np.empty(nb, np.int64), np.empty(nb, np.int64)
            assert _order_stats.kth_largest_near(score, k, v / 1.01, v * 1.01, np.empty(n), 1,
                                                 rest1) == v
            assert _order_stats.kth_largest_near(score, k, v / 1.01, v * 1.01, np.empty(n),
                                                 n_threads, rest) == v
            np.testing.assert_array_equal(rest, rest1)
            np.testing.assert_array_equal(rest, _sampling.goss_rest_counts(score, v, 1))
        target = 0.37 * np.count_nonzero(score)
        mu = ref.mvs_threshold(score, target)
        got1 = _order_stats.mvs_threshold_near(score, target, mu / 1.01, mu * 1.01,
                                               np.empty(n), 1)
        assert got1 == pytest.approx(mu, rel=1e-12)
        assert _order_stats.mvs_threshold_near(score, target, mu / 1.01, mu * 1.01,
                                               np.empty(n), n_threads) == got1


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_near_thresholds_reject_bad_scores_and_brackets(bad):
    score = np.array([1.0, 2.0, bad, 3.0])
    with pytest.raises(ValueError, match="finite and non-negative"):
        _order_stats.kth_largest_near(score, 1, 1.5, 2.5, np.empty(4))
    with pytest.raises(ValueError, match="finite and non-negative"):
        _order_stats.mvs_threshold_near(score, 1.0, 1.5, 2.5, np.empty(4))
    ok = np.array([1.0, 2.0, 3.0])
    for lo, hi in ((0.0, 1.0), (2.0, 1.0), (1.0, np.inf), (np.nan, 1.0)):
        with pytest.raises(ValueError, match="bracket"):
            _order_stats.kth_largest_near(ok, 1, lo, hi, np.empty(3))
        with pytest.raises(ValueError, match="bracket"):
            _order_stats.mvs_threshold_near(ok, 1.0, lo, hi, np.empty(3))
    with pytest.raises(ValueError, match="k=4"):
        _order_stats.kth_largest_near(ok, 4, 1.0, 2.0, np.empty(3))
    with pytest.raises(ValueError, match="target"):
        _order_stats.mvs_threshold_near(ok, 0.0, 1.0, 2.0, np.empty(3))
    assert np.isnan(_order_stats.mvs_threshold_near(np.empty(0), 1.0, 1.0, 2.0, np.empty(0)))


@pytest.mark.parametrize("score,k", [(np.array([1.0, -1.0]), 1), (np.array([1.0, np.nan]), 1),
                                     (np.array([1.0, np.inf]), 1), (np.array([1.0, 2.0]), 0),
                                     (np.array([1.0, 2.0]), 3)])
def test_kth_largest_rejects_bad_input(score, k):
    with pytest.raises(ValueError):
        _order_stats.kth_largest(score, k, np.empty(score.size))


@pytest.mark.parametrize("score,target", [
    (np.array([1.0, -1.0]), 1.0), (np.array([1.0, np.nan]), 1.0),
    (np.array([1.0, np.inf]), 1.0), (np.array([1.0, 2.0]), 2.0),
    (np.array([0.0, 2.0]), 1.0), (np.array([1.0, 2.0]), 0.0), (np.zeros(0), 1.0)])
def test_mvs_threshold_rejects_bad_input(score, target):
    with pytest.raises(ValueError):
        _order_stats.mvs_threshold(score, target, np.empty(score.size))


@KERNEL_SETTINGS
@given(threshold_case(), st.integers(0, 2**64 - 1))
def test_mvs_select_matches_reference(case, seed):
    score, target = case
    mu = ref.mvs_threshold(score, target)
    rows = np.empty(score.size, np.int32)
    w = np.empty(score.size)
    got_rows, got_w = _sampling.mvs_select(score, mu, seed, rows, w)
    idx, weight = ref.mvs_select(score, mu, ref.splitmix64_uniforms(seed, score.size))
    assert got_rows.dtype == np.int32 and got_w.dtype == np.float64
    np.testing.assert_array_equal(got_rows, idx)
    np.testing.assert_array_equal(got_w, weight)
    assert np.all(got_w[score[got_rows] >= mu] == 1.0)


# -- the counter-based uniforms -------------------------------------------------------------
@KERNEL_SETTINGS
@given(st.integers(0, 2**64 - 1), st.integers(0, 300), st.integers(0, 2**40))
def test_uniforms_match_splitmix64_reference(seed, n, start):
    for threads in (1, 2):
        out = _sampling.uniforms(seed, np.empty(n), start, threads)
        np.testing.assert_array_equal(out, ref.splitmix64_uniforms(seed, n, start))


def test_uniforms_known_values_and_law():
    # SplitMix64 seeded with 1234567: the published reference outputs (Rosetta Code,
    # "Pseudo-random numbers/Splitmix64": 6457827717110365317, 3203168211198807973, ...).
    # Rows 2q and 2q + 1 take the high and the low 32 bits of output q.
    first = [0x599ED017FB08FC85, 0x2C73F08458540FA5, 0x883EBCE5A3F27C77]
    u = _sampling.uniforms(1234567, np.empty(6))
    halves = [h for x in first for h in (x >> 32, x & 0xFFFFFFFF)]
    np.testing.assert_array_equal(u, [h * 2.0 ** -32 for h in halves])
    np.testing.assert_array_equal(_sampling.uniforms(1234567, np.empty(3), 3), u[3:])
    u = _sampling.uniforms(2024, np.empty(1_000_000), 0, 2)
    assert u.min() >= 0.0 and u.max() < 1.0
    counts = np.bincount((u * 100).astype(int), minlength=100)
    chi2 = ((counts - 1e4) ** 2 / 1e4).sum()
    assert chi2 < 180.0                        # 99.99th percentile of chi2(99) is ~157
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 5e-3       # 5 SE of lag-1 correlation
    # a different seed is a different stream
    assert np.corrcoef(u[:1000], _sampling.uniforms(2025, np.empty(1000)))[0, 1] < 0.15


@KERNEL_SETTINGS
@given(st.integers(0, 300), st.floats(0.0, 1.0), st.integers(0, 2**64 - 1))
def test_bernoulli_select_matches_reference(n, p, seed):
    got = _sampling.bernoulli_select(p, seed, np.full(n, -1, np.int32))
    idx, _ = ref.bernoulli_select(np.full(n, p), ref.splitmix64_uniforms(seed, n))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, idx)


def test_bernoulli_keep_probability_and_ends():
    # The draws are multiples of 2**-32: p is rounded up to one, by less than 2**-32.
    for p in (0.0, 1e-12, 0.1, 0.5, 1.0 - 1e-12, 1.0):
        q = _sampling.keep_probability(p)
        assert p <= q < p + 2.0 ** -32 and (q * 2 ** 32).is_integer()
    assert _sampling.keep_probability(2.0 ** -32) == 2.0 ** -32
    assert _sampling.bernoulli_select(0.0, 7, np.empty(70_001, np.int32)).size == 0
    np.testing.assert_array_equal(_sampling.bernoulli_select(1.0, 7, np.empty(70_001, np.int32)),
                                  np.arange(70_001))
    for bad in (-0.1, 1.5, np.nan):
        with pytest.raises(ValueError, match="must be in"):
            _sampling.bernoulli_select(bad, 7, np.empty(3, np.int32))
        with pytest.raises(ValueError, match="must be in"):
            _sampling.keep_probability(bad)


def test_mvs_select_weights_are_the_inverse_keep_probabilities():
    # Scores far below mu are kept with probability 2**-32 (the smallest draw step), not
    # score / mu, and must then weigh 2**32, not mu / score: pi * weight == 1 for every row,
    # so the weighted sums stay unbiased however small the scores are.
    score = np.array([1e-30, 0.5, 2.0 ** -33, 3.0, 1.0, 0.999999999, 7.0])
    pi = ref.mvs_inclusion(score, 1.0)
    assert pi[0] == pi[2] == 2.0 ** -32 and pi[1] == 0.5 and np.all(pi[3:5] == 1.0)
    assert 0.999999999 <= pi[5] < 0.999999999 + 2.0 ** -32
    big = np.tile(score, 60_000)
    for seed in range(3):
        rows, w = _sampling.mvs_select(big, 1.0, seed, np.empty(big.size, np.int32),
                                       np.empty(big.size), 2)
        np.testing.assert_array_equal(w, 1.0 / ref.mvs_inclusion(big[rows], 1.0))
        assert np.all(w[big[rows] >= 1.0] == 1.0) and w.max() <= 2.0 ** 32
    # a mu so small that 2**32 / mu overflows: the same probabilities, scaled in range
    tiny = big * 2.0 ** -1000
    rows, w = _sampling.mvs_select(tiny, 2.0 ** -1000, 5, np.empty(big.size, np.int32),
                                   np.empty(big.size), 2)
    ref_rows, ref_w = ref.mvs_select(big, 1.0, ref.splitmix64_uniforms(5, big.size))
    np.testing.assert_array_equal(rows, ref_rows)
    np.testing.assert_array_equal(w, ref_w)


@KERNEL_SETTINGS
@given(binned_data(max_rows=60, max_features=5), st.data())
def test_gather_rows_matches_fancy_indexing(data, draw):
    keep = draw.draw(hnp.arrays(np.bool_, data.n_rows))
    rows = np.flatnonzero(keep).astype(np.int32)
    out = np.full((data.n_rows + 2, data.n_features), 7, np.uint8)
    _partition.gather_rows(data.X_rows, rows, out, 2)
    np.testing.assert_array_equal(out[:rows.size], data.X_rows[rows])
    assert np.all(out[rows.size:] == 7)


@KERNEL_SETTINGS
@given(binned_data(max_rows=60, max_features=5), st.data(), st.sampled_from([1, 2, 3]))
def test_gather_rows_converts_the_derivatives_in_the_same_pass(data, draw, n_threads):
    """With the derivatives: the float32 copies are exactly ``astype(float32)`` (rounding,
    overflow to inf, NaN), with the rows or without them (empty ``rows``: every row)."""
    keep = draw.draw(hnp.arrays(np.bool_, data.n_rows))
    rows = np.flatnonzero(keep).astype(np.int32)
    if draw.draw(st.booleans()):
        rows = np.empty(0, np.int32)
    m = rows.size or data.n_rows
    floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
    g = draw.draw(hnp.arrays(np.float64, m, elements=floats))
    h = draw.draw(hnp.arrays(np.float64, m, elements=floats))
    out = np.full((data.n_rows + 2, data.n_features), 7, np.uint8)
    g32, h32 = np.full(m, 9, np.float32), np.full(m, 9, np.float32)
    _partition.gather_rows(data.X_rows, rows, out, n_threads, g, h, g32, h32)
    np.testing.assert_array_equal(out[:rows.size], data.X_rows[rows])
    assert np.all(out[rows.size:] == 7)
    with np.errstate(over="ignore"):            # overflow to inf is the expected rounding
        np.testing.assert_array_equal(g32, g.astype(np.float32))
        np.testing.assert_array_equal(h32, h.astype(np.float32))


@pytest.mark.parametrize("n_features", list(range(0, 41)))
def test_gather_kernels_copy_rows_of_every_width(n_features):
    """Rows of 16 to 32 bytes are copied as two overlapping halves, others by memcpy: every
    width copies exactly its row, and nothing past it (the rows after the last stay 7)."""
    rng = np.random.default_rng(n_features)
    X = rng.integers(0, 256, (50, n_features), dtype=np.uint8)
    rows = np.flatnonzero(rng.random(50) < 0.6).astype(np.int32)
    k = rows.size
    for kernel in ("gather_rows", "gather_sample"):
        out = np.full((k + 2, n_features), 7, np.uint8)
        if kernel == "gather_rows":
            _partition.gather_rows(X, rows, out, 2)
        else:
            g = np.zeros(50)
            assert _partition.gather_sample(X, rows, np.empty(0), g, g, out, np.empty(k),
                                            np.empty(k), np.empty(k, np.float32),
                                            np.empty(k, np.float32), 2) == 0
        np.testing.assert_array_equal(out[:k], X[rows])
        assert np.all(out[k:] == 7)


def test_gather_rows_derivative_arguments_are_checked():
    X = np.zeros((3, 2), np.uint8)
    rows, out = np.array([0, 2], np.int32), np.empty((3, 2), np.uint8)
    d, f = np.zeros(2), np.zeros(2, np.float32)
    for args in [(d, None, f, f), (d, d, f, None), (None, None, f, None),
                 (d, d, np.zeros(3, np.float32), f), (np.zeros(3), np.zeros(3),
                                                      np.zeros(3, np.float32),
                                                      np.zeros(3, np.float32))]:
        with pytest.raises(ValueError):
            _partition.gather_rows(X, rows, out, 1, *args)


@KERNEL_SETTINGS
@given(st.integers(1, 80), st.data(), st.sampled_from([1, 2, 3]))
def test_gather_scaled_pair_matches_indexing(n, draw, n_threads):
    keep = draw.draw(hnp.arrays(np.bool_, n))
    rows = np.flatnonzero(keep).astype(np.int32)
    fl = st.floats(-1e300, 1e300)
    a = draw.draw(hnp.arrays(np.float64, n, elements=fl))
    b = draw.draw(hnp.arrays(np.float64, n, elements=fl))
    w = (draw.draw(hnp.arrays(np.float64, rows.size, elements=st.floats(0, 1e3)))
         if draw.draw(st.booleans()) else np.empty(0))
    out_a, out_b = np.full(rows.size, np.nan), np.full(rows.size, np.nan)
    _sampling.gather_scaled_pair(a, b, rows, w, out_a, out_b, n_threads)
    scale = w if w.size else 1.0
    np.testing.assert_array_equal(out_a, a[rows] * scale)
    np.testing.assert_array_equal(out_b, b[rows] * scale)
    if rows.size:
        with pytest.raises(ValueError, match="aligned"):
            _sampling.gather_scaled_pair(a, b[:-1], rows, w, out_a, out_b, n_threads)
        with pytest.raises(ValueError, match="row id"):
            _sampling.gather_scaled_pair(a[:rows[-1]], b[:rows[-1]], rows, w, out_a, out_b,
                                         n_threads)


@KERNEL_SETTINGS
@given(binned_data(max_rows=60, max_features=5), st.data(), st.sampled_from([1, 2, 3]))
def test_gather_sample_matches_indexing(data, draw, n_threads):
    """One pass for a sampled tree's inputs: the binned rows, ``g[rows] * w`` and
    ``h[rows] * w`` (empty ``w``: the values themselves), bit for bit, and their float32
    copies exactly ``astype(float32)`` (overflow to inf, NaN)."""
    keep = draw.draw(hnp.arrays(np.bool_, data.n_rows))
    rows = np.flatnonzero(keep).astype(np.int32)
    k = rows.size
    floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
    g = draw.draw(hnp.arrays(np.float64, data.n_rows, elements=floats))
    h = draw.draw(hnp.arrays(np.float64, data.n_rows, elements=floats))
    w = (draw.draw(hnp.arrays(np.float64, k, elements=st.floats(0, 1e300)))
         if draw.draw(st.booleans()) else np.empty(0))
    out = np.full((data.n_rows + 2, data.n_features), 7, np.uint8)
    g64, h64 = np.full(k, 5.0), np.full(k, 5.0)
    g32, h32 = np.full(k, 9, np.float32), np.full(k, 9, np.float32)
    assert _partition.gather_sample(data.X_rows, rows, w, g, h, out, g64, h64, g32, h32,
                                    n_threads) == 0
    np.testing.assert_array_equal(out[:k], data.X_rows[rows])
    assert np.all(out[k:] == 7)
    with np.errstate(over="ignore", invalid="ignore"):
        eg, eh = (g[rows] * w, h[rows] * w) if w.size else (g[rows], h[rows])
        assert g64.tobytes() == eg.tobytes() and h64.tobytes() == eh.tobytes()
        np.testing.assert_array_equal(g32, eg.astype(np.float32))
        np.testing.assert_array_equal(h32, eh.astype(np.float32))


def test_gather_sample_arguments_are_checked():
    X = np.zeros((3, 2), np.uint8)
    rows, out = np.array([0, 2], np.int32), np.empty((3, 2), np.uint8)
    d3, d2, f2 = np.zeros(3), np.zeros(2), np.zeros(2, np.float32)
    for args in [(np.empty(0), d2, d3, out, d2, d2, f2, f2),       # gradient not per row
                 (np.empty(0), d3, d3, out, d3, d2, f2, f2),       # g not per sampled row
                 (np.ones(3), d3, d3, out, d2, d2, f2, f2),        # weights misaligned
                 (np.empty(0), d3, d3, np.empty((1, 2), np.uint8), d2, d2, f2, f2)]:
        with pytest.raises(ValueError):
            _partition.gather_sample(X, rows, *args, 1)
    # a row out of range is reported (flag 1), not read
    assert _partition.gather_sample(X, np.array([0, 3], np.int32), np.empty(0), d3, d3, out,
                                    d2, d2, f2, f2, 1) == 1


@KERNEL_SETTINGS
@given(rows=hnp.arrays(np.int32, st.integers(0, 50), elements=st.integers(-3, 60)),
       weighted=st.booleans(), pick=st.data(), n_threads=st.sampled_from([1, 2, 3]))
def test_gather_sample_reports_the_defects_sample_defects_finds(rows, weighted, pick,
                                                                n_threads):
    # The pass that gathers a sample checks it too: the same flags as the reference (and as
    # sample_defects), never reading outside the data; with no defect, the gathered values.
    rows = np.sort(rows) if pick.draw(st.booleans()) else rows
    weights = pick.draw(hnp.arrays(np.float64, rows.size, elements=st.floats(
        -1.0, 1e308) | st.sampled_from([np.nan, np.inf, -np.inf, -0.0, 5e-324]))
    ) if weighted else np.empty(0)
    n, k = 50, rows.size
    X = np.arange(2 * n, dtype=np.uint8).reshape(n, 2)
    g, h = np.arange(n, dtype=np.float64), np.ones(n)
    out = np.empty((k, 2), np.uint8)
    g64, h64 = np.empty(k), np.empty(k)
    g32, h32 = np.empty(k, np.float32), np.empty(k, np.float32)
    flags = _partition.gather_sample(X, rows, weights, g, h, out, g64, h64, g32, h32, n_threads)
    assert flags == _defects_reference(rows, weights, n)
    if flags == 0:
        np.testing.assert_array_equal(out, X[rows])
        np.testing.assert_array_equal(g64, g[rows] * weights if weighted else g[rows])


def test_gather_rows_rejects_out_of_range_rows():
    X = np.zeros((3, 2), np.uint8)
    with pytest.raises(ValueError, match="row id"):
        _partition.gather_rows(X, np.array([0, 3], np.int32), np.empty((3, 2), np.uint8), 1)
    with pytest.raises(ValueError, match="out must"):
        _partition.gather_rows(X, np.array([0, 1], np.int32), np.empty((1, 2), np.uint8), 1)


@pytest.mark.parametrize("n", [1, 65536, 65537, 200_003])
def test_block_parallel_kernels_match_reference_for_any_thread_count(n):
    # The selection, score and sum kernels work on fixed blocks of 65536 rows in parallel: same
    # output for 1 and 2 threads, equal to the sequential reference, across block edges.
    rng = np.random.default_rng(n)
    g, h = rng.normal(size=n), rng.random(n)
    score = np.where(rng.random(n) < 0.2, 0.0, np.abs(g))
    mu = float(np.quantile(score, 0.7)) or 1.0
    u = ref.splitmix64_uniforms(99, n)
    idx, weight = ref.mvs_select(score, mu, u)
    b_idx, _ = ref.bernoulli_select(np.full(n, 0.3), u)
    threshold = float(np.quantile(score, 0.6))
    rest = np.add.reduceat(score < threshold, np.arange(0, n, ref.GOSS_BLOCK)).astype(np.int64)
    take = rng.multivariate_hypergeometric(rest, int(0.3 * rest.sum()))
    factor = rest.sum() / take.sum() if take.sum() else 1.0
    g_idx, g_weight = ref.goss_select(score, threshold, u, take)
    for threads in (1, 2):
        rows, w = np.empty(n, np.int32), np.empty(n)
        got_rows, got_w = _sampling.mvs_select(score, mu, 99, rows, w, threads)
        np.testing.assert_array_equal(got_rows, idx)
        np.testing.assert_array_equal(got_w, weight)
        np.testing.assert_array_equal(_sampling.bernoulli_select(0.3, 99, rows, threads), b_idx)
        np.testing.assert_array_equal(_sampling.goss_rest_counts(score, threshold, threads), rest)
        got_rows, got_w = _sampling.goss_select(score, threshold, rest, take, factor, 99,
                                                threads)
        np.testing.assert_array_equal(got_rows, g_idx)
        np.testing.assert_array_equal(got_w, g_weight)
        sums = _sampling.abs_sums(g, h - 0.5, threads)
        assert sums == _sampling.abs_sums(g, h - 0.5, 1)
        assert sums[0] == pytest.approx(np.abs(g).sum(), rel=1e-12)
        assert sums[1] == pytest.approx(np.abs(h - 0.5).sum(), rel=1e-12)
        assert sums[2] == pytest.approx(np.minimum(h - 0.5, 0).sum(), rel=1e-12)
        assert _sampling.abs_sums(g, h, threads)[2] == 0.0
        out = np.empty(n)
        assert _sampling.mvs_scores(g, h, np.sqrt(0.3), 1.0, out, threads) == \
            np.count_nonzero(out)
        np.testing.assert_allclose(out, ref.mvs_score(g, h, 0.3), rtol=1e-15)
        assert _sampling.mvs_scores(g, h, 0.1 * np.abs(g).sum(), np.abs(h).sum(), out,
                                    threads) == np.count_nonzero(out)
        np.testing.assert_allclose(out, ref.mvs_score(g, h, None, 0.1), rtol=1e-14)


def test_mvs_scores_stay_finite_when_adaptive_lambda_overflows():
    # hypothesis found it: one hessian of 3e-257 among zeros makes the adaptive lambda
    # (0.3 * sum|g| / sum|h|)^2 overflow; the scores must stay finite (h / sum|h| <= 1).
    g = np.array([0.5] * 5 + [2.0, 0.5, 0.0])
    h = np.array([0.0, 0.0, 3.29e-257, 0.0, 0.0, 0.0, 0.0, 0.0])
    out = np.empty(g.size)
    for norm in (np.abs(h).sum(), 5e-324):           # the reciprocal of 5e-324 overflows
        hh = h if norm != 5e-324 else np.where(h > 0, 5e-324, 0.0)
        n_pos = _sampling.mvs_scores(g, hh, 0.3 * np.abs(g).sum(), norm, out)
        assert n_pos == 7 and np.all(np.isfinite(out))
        np.testing.assert_allclose(out, ref.mvs_score(g, hh, None, 0.3), rtol=1e-14)
    with pytest.raises(ValueError, match="h_norm"):
        _sampling.mvs_scores(g, h, 1.0, 0.0, out)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_mvs_scores_neither_underflow_nor_overflow(n_threads):
    """hypothesis found it: gradients of 7e-230 squared underflow to 0, so those rows got
    score 0 (never drawn) where |g| = 7e-230; gradients above ~1e154 squared overflow,
    though the score is finite. The kernel takes the root as m * sqrt(1 + (s/m)^2)."""
    g = np.array([-7.05e-230, 7.05e-230, 0.0, 420.8, 3e-320, 1e200, -1e300, 2.0])
    h = np.array([0.0, 1e-240, 0.0, 0.0, 0.0, 1e200, 0.0, 2.0])
    out = np.empty(g.size)
    for h_scale, h_norm in ((0.0, 1.0), (1.0, 1.0), (0.5, 3.0)):
        n_pos = _sampling.mvs_scores(g, h, h_scale, h_norm, out, n_threads)
        expected = np.hypot(g, h_scale * (h / h_norm))
        assert n_pos == 7
        np.testing.assert_allclose(out, expected, rtol=4e-16, atol=0)
    np.testing.assert_array_equal(out[[0, 1, 4]] > 0, True)


@KERNEL_SETTINGS
@given(st.integers(1, 150), st.integers(0, 2**32 - 1), st.floats(0.0, 1.0))
def test_goss_select_matches_sequential_reference(n, seed, frac):
    rng = np.random.default_rng(seed)
    score = rng.choice([0.0, 1.0, 2.0, 3.0], n) * rng.integers(1, 3, n)   # many ties
    threshold = float(np.sort(score)[::-1][max(0, n // 3 - 1)])
    n_rest = int(np.count_nonzero(score < threshold))
    other_k = int(frac * n_rest)
    rest = _sampling.goss_rest_counts(score, threshold)
    assert rest.tolist() == [n_rest]
    take = np.array([other_k], np.int64)
    factor = n_rest / other_k if other_k else 1.0
    got_rows, got_w = _sampling.goss_select(score, threshold, rest, take, factor, seed)
    idx, weight = ref.goss_select(score, threshold, ref.splitmix64_uniforms(seed, n), take)
    np.testing.assert_array_equal(got_rows, idx)
    np.testing.assert_array_equal(got_w, weight)
    assert np.count_nonzero(got_w != 1.0) == (other_k if other_k and n_rest != other_k else 0)


def test_goss_select_rejects_bad_take():
    score = np.arange(10.0)
    with pytest.raises(ValueError, match="one count per block"):
        _sampling.goss_select(score, 5.0, np.array([5], np.int64), np.array([1, 1], np.int64),
                              1.0, 0)
    with pytest.raises(ValueError, match=r"take\[0\]=6 must be in \[0, 5\]"):
        _sampling.goss_select(score, 5.0, np.array([5], np.int64), np.array([6], np.int64),
                              1.0, 0)
    with pytest.raises(ValueError, match=r"rest\[0\]=11 must be in \[0, 10\]"):
        _sampling.goss_select(score, 5.0, np.array([11], np.int64), np.array([6], np.int64),
                              1.0, 0)


@pytest.mark.parametrize("n, wrong", [(10, 4), (10, 6), (3000, 900), (3000, 1100),
                                      (200_000, 50)])
def test_goss_select_detects_a_wrong_rest_count_without_writing_past_its_output(n, wrong):
    # Each block writes straight to its place in the output, sized from rest and take: a
    # count that disagrees with the scores (here 1000 or 5 of n rows are below threshold 5 in
    # the first block) must be reported, never written past. The debug build recounts rest
    # before drawing: the same error, from the recount.
    score = np.where(np.arange(n) < min(n, 1000) // 2, 0.0, 10.0)
    rest = _sampling.goss_rest_counts(score, 5.0)
    assert rest[0] != wrong
    rest[0] = wrong
    take = np.minimum(rest, 2)
    with pytest.raises(ValueError, match="rest must be the blocks' counts"):
        _sampling.goss_select(score, 5.0, rest, take, 1.0, 0, 2)


def _defects_reference(rows, weights, n_rows):
    rows = np.asarray(rows, np.int64)
    flags = int(bool(np.any((rows < 0) | (rows >= n_rows))))
    flags |= 2 * int(bool(np.any(np.diff(rows) <= 0)))
    if weights.size:
        flags |= 4 * int(bool(np.any(~np.isfinite(weights) | (weights < 0))))
    return flags


@KERNEL_SETTINGS
@given(rows=hnp.arrays(np.int32, st.integers(0, 50), elements=st.integers(-3, 60)),
       weighted=st.booleans(), pick=st.data(), n_threads=st.sampled_from([1, 2, 3]))
def test_sample_defects_matches_reference(rows, weighted, pick, n_threads):
    rows = np.sort(rows) if pick.draw(st.booleans()) else rows
    weights = pick.draw(hnp.arrays(np.float64, rows.size, elements=st.floats(
        -1.0, 1e308) | st.sampled_from([np.nan, np.inf, -np.inf, -0.0, 5e-324]))
    ) if weighted else np.empty(0)
    assert (_sampling.sample_defects(rows, weights, 50, n_threads)
            == _defects_reference(rows, weights, 50))


@pytest.mark.parametrize("n_threads", [1, 2])
def test_sample_defects_across_blocks(n_threads):
    n = 3 * 65536 + 11
    rows = np.arange(n, dtype=np.int32)
    w = np.ones(n)
    assert _sampling.sample_defects(rows, w, n, n_threads) == 0
    for at in (65535, 65536, 2 * 65536 + 3, n - 1):       # a repeat on and off block edges
        bad = rows.copy()
        bad[at] = bad[at - 1]
        assert _sampling.sample_defects(bad, w, n, n_threads) == 2
    assert _sampling.sample_defects(rows, w, n - 1, n_threads) == 1
    bad_w = w.copy()
    bad_w[65536] = -0.0            # -0.0 is a valid (zero) weight
    assert _sampling.sample_defects(rows, bad_w, n, n_threads) == 0
    bad_w[65536] = np.nan
    assert _sampling.sample_defects(rows, bad_w, n, n_threads) == 4
    with pytest.raises(ValueError, match="aligned"):
        _sampling.sample_defects(rows, w[:-1], n, n_threads)
