"""Differential tests of the sampling kernels (MVS threshold and selection, row gathering)."""
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra import numpy as hnp

from boostlib._kernels import _partition, _sampling
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
    mu = _sampling.mvs_threshold(score, target, np.empty(score.size))
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
            mu = _sampling.mvs_threshold(score, target, np.empty(score.size))
            assert mu == pytest.approx(ref.mvs_threshold(score, target), rel=1e-9)


def test_mvs_threshold_catboost_oracle():
    # algorithms.md M1 (CatBoost's unit test): scores 1..20 tiled, s = 0.75 gives mu = 11.
    score = np.tile(np.arange(1.0, 21.0), 128)
    assert _sampling.mvs_threshold(score, 0.75 * score.size, np.empty(score.size)) == 11.0


@pytest.mark.parametrize("score,target", [
    (np.array([1.0, -1.0]), 1.0), (np.array([1.0, np.nan]), 1.0),
    (np.array([1.0, np.inf]), 1.0), (np.array([1.0, 2.0]), 2.0),
    (np.array([0.0, 2.0]), 1.0), (np.array([1.0, 2.0]), 0.0)])
def test_mvs_threshold_rejects_bad_input(score, target):
    with pytest.raises(ValueError):
        _sampling.mvs_threshold(score, target, np.empty(score.size))


@KERNEL_SETTINGS
@given(threshold_case(), st.integers(0, 2**32 - 1))
def test_mvs_select_matches_reference(case, seed):
    score, target = case
    mu = ref.mvs_threshold(score, target)
    u = np.random.default_rng(seed).random(score.size)
    rows = np.empty(score.size, np.int32)
    w = np.empty(score.size)
    k = _sampling.mvs_select(score, mu, u, rows, w)
    idx, weight = ref.bernoulli_select(np.minimum(1.0, score / mu), u)
    np.testing.assert_array_equal(rows[:k], idx)
    np.testing.assert_array_equal(w[:k], weight)
    assert np.all(w[:k][score[rows[:k]] >= mu] == 1.0)


@KERNEL_SETTINGS
@given(binned_data(max_rows=60, max_features=5), st.data())
def test_gather_rows_matches_fancy_indexing(data, draw):
    keep = draw.draw(hnp.arrays(np.bool_, data.n_rows))
    rows = np.flatnonzero(keep).astype(np.int32)
    out = np.full((data.n_rows + 2, data.n_features), 7, np.uint8)
    _partition.gather_rows(data.X_rows, rows, out, 2)
    np.testing.assert_array_equal(out[:rows.size], data.X_rows[rows])
    assert np.all(out[rows.size:] == 7)


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
    u = rng.random(n)
    idx, weight = ref.bernoulli_select(np.minimum(1.0, score / mu), u)
    for threads in (1, 2):
        rows, w = np.empty(n, np.int32), np.empty(n)
        k = _sampling.mvs_select(score, mu, u, rows, w, threads)
        np.testing.assert_array_equal(rows[:k], idx)
        np.testing.assert_array_equal(w[:k], weight)
        sa, sb = _sampling.abs_sums(g, h, threads)
        assert (sa, sb) == _sampling.abs_sums(g, h, 1)
        assert sa == pytest.approx(np.abs(g).sum(), rel=1e-12)
        out = np.empty(n)
        assert _sampling.mvs_scores(g, h, 0.3, out, threads) == np.count_nonzero(out)
        np.testing.assert_allclose(out, ref.mvs_score(g, h, 0.3), rtol=1e-15)


@KERNEL_SETTINGS
@given(st.integers(1, 150), st.integers(0, 2**32 - 1), st.floats(0.0, 1.0))
def test_goss_select_matches_sequential_reference(n, seed, frac):
    rng = np.random.default_rng(seed)
    score = rng.choice([0.0, 1.0, 2.0, 3.0], n) * rng.integers(1, 3, n)   # many ties
    threshold = float(np.sort(score)[::-1][max(0, n // 3 - 1)])
    n_rest = int(np.count_nonzero(score < threshold))
    other_k = int(frac * n_rest)
    u = rng.random(n)
    rows, w = np.empty(n, np.int32), np.empty(n)
    k = _sampling.goss_select(score, threshold, u, n_rest, other_k, rows, w)
    idx, weight = ref.goss_select(score, threshold, u, other_k)
    np.testing.assert_array_equal(rows[:k], idx)
    np.testing.assert_array_equal(w[:k], weight)
    assert np.count_nonzero(w[:k] != 1.0) == (other_k if other_k and n_rest != other_k else 0)
