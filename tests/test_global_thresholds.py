"""The samplers' thresholds over the rows of several workers (boostlib.builtin.global_thresholds)
and the distributed paths of the GOSS and MVS samplers, on workers simulated by threads
(tests/reference/thread_collective.py), against the one-array answers: np.sort for the k-th
largest, the one-machine kernel and tests/reference/samplers.py for MVS."""
from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from boostlib._kernels import _order_stats, _sampling
from boostlib.builtin import global_thresholds as gt
from boostlib.builtin.samplers import GOSSSampler, MVSSampler
from boostlib.plugin.collective import LOCAL
from reference import samplers as ref
from reference.thread_collective import run_group, run_workers, split_rows

SETTINGS = settings(max_examples=40, deadline=None)

#: (bins per refinement, values per gather): the defaults, and tiny ones that make even a
#: few scores go through many refinement rounds, ties and one-pattern ranges.
SEARCHES = [(gt.BINS, gt.GATHER_VALUES), (4, 6), (2, 1)]

score_values = st.one_of(
    st.just(0.0), st.sampled_from([0.5, 1.0, 2.0, 1.0 + 2.0 ** -52, 5e-324, 1e300]),
    st.floats(0.0, 1e3, allow_nan=False, allow_infinity=False),
    st.floats(0.0, 1e-300, allow_nan=False, allow_infinity=False))


@st.composite
def worker_scores(draw, max_rows=120):
    """Scores and their split over 1-4 workers (contiguous parts, some possibly empty)."""
    s = draw(hnp.arrays(np.float64, st.integers(1, max_rows), elements=score_values))
    w = draw(st.integers(1, 4))
    cuts = sorted(draw(st.lists(st.integers(0, s.size), min_size=w - 1, max_size=w - 1)))
    edges = [0, *cuts, s.size]
    return s, [s[edges[i]:edges[i + 1]] for i in range(w)]


@contextmanager
def search(bins, gather):
    with mock.patch.object(gt, "BINS", bins), mock.patch.object(gt, "GATHER_VALUES", gather):
        yield


# -- k-th largest -----------------------------------------------------------------------------
@SETTINGS
@given(worker_scores(), st.floats(0.0, 1.2), st.sampled_from(SEARCHES))
def test_kth_largest_is_the_sorted_value(data, rank, params):
    s, parts = data
    k = max(1, int(rank * s.size))
    with search(*params):
        got = run_workers(lambda c, x: gt.kth_largest(x, k, c), parts)
    exact = np.sort(s)[::-1][min(k, s.size) - 1]
    assert got == [exact] * len(parts)
    assert np.count_nonzero(s >= got[0]) >= min(k, s.size)


def test_kth_largest_edge_cases():
    def kth(parts, k):
        got = run_workers(lambda c, x: gt.kth_largest(np.asarray(x, float), k, c), parts)
        assert len(set(got)) == 1
        return got[0]

    assert kth([[], [3.0, 1.0, 2.0], []], 2) == 2.0           # workers without rows
    assert kth([[0.0, 0.0], [0.0]], 2) == 0.0                  # all zero
    assert kth([[4.0, 4.0], [4.0]], 1) == 4.0                  # all equal
    assert kth([[1.0, 5.0], [0.5]], 3) == 0.5                  # k = n: the minimum
    assert kth([[1.0, 5.0], [0.5]], 10) == 0.5                 # k > n: the minimum
    assert kth([[1.0, 0.0], [0.0, 2.0]], 3) == 0.0             # among the zeros
    assert kth([[1.0, -0.0], [2.0]], 3) == 0.0                 # -0.0 is a zero
    assert gt.kth_largest(np.array([3.0, 1.0, 2.0]), 1, LOCAL) == 3.0
    with pytest.raises(ValueError, match="k=0"):
        gt.kth_largest(np.ones(3), 0)
    with pytest.raises(ValueError, match="no worker"):
        run_workers(lambda c, x: gt.kth_largest(x, 1, c), [np.empty(0), np.empty(0)])


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_bad_scores_raise_on_every_worker(bad):
    parts = [np.array([1.0, bad]), np.array([2.0]), np.empty(0)]
    for fn in (lambda c, x: gt.kth_largest(x, 1, c), lambda c, x: gt.mvs_threshold(x, 1.0, c)):
        errors = []

        def record(c, x, fn=fn):
            try:
                fn(c, x)
            except ValueError as exc:
                errors.append(exc)

        run_workers(record, parts)
        assert len(errors) == len(parts)


# -- MVS --------------------------------------------------------------------------------------
@SETTINGS
@given(worker_scores(), st.floats(0.001, 1.5), st.sampled_from(SEARCHES))
def test_mvs_threshold_matches_the_kernel(data, fraction, params):
    s, parts = data
    target = fraction * s.size
    with search(*params):
        got = run_workers(lambda c, x: gt.mvs_threshold(x, target, c), parts)
    assert len(set(got)) == 1
    mu, n_pos = got[0], np.count_nonzero(s)
    if n_pos == 0:
        assert mu == 0.0
    elif target >= n_pos:
        assert mu == s[s > 0].min()
    else:
        exact = _order_stats.mvs_threshold(s, target, np.empty(s.size))
        assert mu == pytest.approx(exact, rel=1e-9)
        assert mu == pytest.approx(ref.mvs_threshold(s, target), rel=1e-9)
        if 1e-290 < mu < np.inf:         # (a subnormal mu is too coarse to solve it)
            assert np.minimum(1.0, s / mu).sum() == pytest.approx(target, rel=1e-6)


def test_mvs_threshold_edge_cases():
    def mvs(parts, target):
        got = run_workers(lambda c, x: gt.mvs_threshold(np.asarray(x, float), target, c), parts)
        assert len(set(got)) == 1
        return got[0]

    assert mvs([[0.0, 0.0], [], [0.0]], 1.0) == 0.0            # no positive score
    assert mvs([[0.0, 3.0], [], [2.0, 0.0]], 2.0) == 2.0        # target = #positive
    assert mvs([[0.0, 3.0], [], [2.0, 0.0]], 3.5) == 2.0        # target > #positive
    assert mvs([[2.0, 2.0], [2.0, 2.0]], 2.0) == 4.0            # all equal: p = 1/2
    assert mvs([[1.0, 1.0], [1.0, 2.0]], 1.0) == 5.0            # above every score
    # one worker with all-zero scores, the others' answer unchanged
    s = np.random.default_rng(0).exponential(size=500)
    assert mvs([np.zeros(300), s[:200], s[200:]], 100.0) == pytest.approx(
        _order_stats.mvs_threshold(s, 100.0, np.empty(s.size)), rel=1e-12)
    with pytest.raises(ValueError, match="target"):
        gt.mvs_threshold(np.ones(3), 0.0)


# -- rounds -----------------------------------------------------------------------------------
@pytest.mark.parametrize("ties", [False, True])
def test_few_rounds(ties):
    rng = np.random.default_rng(1)
    s = np.abs(rng.normal(size=200_000) * rng.normal(size=200_000))
    s[rng.random(s.size) < 0.05] = 0.0
    k = s.size // 5
    if ties:                                   # the k-th largest in a large tie group
        s[rng.random(s.size) < 0.1] = 0.5
        k = np.count_nonzero(s > 0.5) + 1000
    parts = [s[p] for p in split_rows(s.size, 4, seed=2)]
    got, rounds = run_group(lambda c, x: gt.kth_largest(x, k, c), parts)
    assert got[0] == np.sort(s)[::-1][k - 1] and rounds <= 4
    target = 0.3 * s.size
    got, rounds = run_group(lambda c, x: gt.mvs_threshold(x, target, c), parts)
    assert got[0] == pytest.approx(_order_stats.mvs_threshold(s, target, np.empty(s.size)),
                                   rel=1e-12)
    assert rounds <= 4


# -- the samplers on several workers ----------------------------------------------------------
def _derivatives(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    g = np.where(rng.random(n) < 0.05, rng.normal(0.0, 5.0, n), rng.normal(0.0, 0.1, n))
    g[rng.random(n) < 0.02] = 0.0
    return g, rng.uniform(0.1, 2.0, n)


def _distributed(make, g, h, parts, seed, iteration=50, method="sample"):
    """Each worker's sampler on its rows: the union of the samples, in global row ids (or
    the concatenated ``probabilities``)."""
    def work(c, rows):
        sampler = make()
        sampler.begin(SimpleNamespace(collective=c, n_rows=rows.size, n_threads=1,
                                      learning_rate=0.1, n_iterations=100))
        if method == "probabilities":
            return sampler.probabilities(g[rows], h[rows])
        rng = np.random.default_rng([seed, c.rank])
        return rows, sampler.sample(g[rows], h[rows], rng, iteration)

    out = run_workers(work, parts)
    if method == "probabilities":
        return np.concatenate(out)
    if any(res is None for _, res in out):
        assert all(res is None for _, res in out)
        return None
    idx = np.concatenate([rows[res.indices] for rows, res in out])
    w = np.concatenate([np.ones(res.indices.size) if res.weights is None else res.weights
                        for _, res in out])
    return idx, w


def _parts(n, n_workers, empty=False):
    parts = split_rows(n, n_workers, seed=n_workers)
    return parts + [np.arange(0)] if empty else parts


@pytest.mark.parametrize("n_workers,empty", [(2, False), (4, True)])
def test_goss_distributed_top_rows_and_counts(n_workers, empty):
    g, h = _derivatives()
    n = g.size
    top, rest, other_k, weight = ref.goss_split(np.abs(g * h), 0.2, 0.1)
    single = GOSSSampler(top_rate=0.2, other_rate=0.1).sample(
        g, h, np.random.default_rng(0), 50)
    sizes = []
    for seed in range(3):
        idx, w = _distributed(lambda: GOSSSampler(top_rate=0.2, other_rate=0.1), g, h,
                              _parts(n, n_workers, empty), seed)
        assert np.unique(idx).size == idx.size
        is_top = np.isin(idx, top)
        np.testing.assert_array_equal(np.sort(idx[is_top]), top)     # every top row
        np.testing.assert_array_equal(w[is_top], 1.0)
        assert np.isin(idx[~is_top], rest).all()
        np.testing.assert_allclose(w[~is_top], weight, rtol=1e-15)   # one factor for all
        sizes.append(idx.size)
    # the single-machine sample: the same top rows and the same size, exactly
    np.testing.assert_array_equal(np.intersect1d(single.indices, top), top)
    assert sizes == [single.indices.size] * 3 == [top.size + other_k] * 3


def test_goss_distributed_draw_is_uniform_over_all_rest_rows():
    # The other rows are a uniform subset of every worker's rest rows: each rest row is
    # drawn with probability other_k / n_rest, whichever worker holds it.
    g, h = _derivatives(1200, seed=3)
    top, rest, other_k, _ = ref.goss_split(np.abs(g * h), 0.2, 0.1)
    parts = [np.arange(0, 200), np.arange(200, 1200)]          # uneven workers
    draws = 150
    hits = np.zeros(g.size)
    for seed in range(draws):
        idx, _ = _distributed(lambda: GOSSSampler(top_rate=0.2, other_rate=0.1), g, h,
                              parts, seed)
        hits[idx] += 1
    p = other_k / rest.size
    for rows in parts:                       # each worker's share of the draw, 4 s.e.
        mine = np.intersect1d(rows, rest)
        expected = draws * p * mine.size
        assert abs(hits[mine].sum() - expected) <= 4 * np.sqrt(expected) + 1


def test_goss_distributed_no_sampling_cases():
    g, h = _derivatives(600)
    parts = _parts(g.size, 3)
    # all scores tied: every row, on every worker
    assert _distributed(lambda: GOSSSampler(0.3), np.ones(600), np.ones(600), parts, 0) is None
    # warm-up iterations
    assert _distributed(lambda: GOSSSampler(0.3), g, h, parts, 0, iteration=2) is None


@pytest.mark.parametrize("mvs_reg", [None, 0.5])
def test_mvs_distributed_probabilities_match_one_machine(mvs_reg):
    # mu and the adaptive lambda come from every worker's rows
    g, h = _derivatives()
    parts = _parts(g.size, 3, empty=True)
    single = MVSSampler(0.2, mvs_reg=mvs_reg)
    single.begin(SimpleNamespace(learning_rate=0.1, n_rows=g.size, n_iterations=100))
    p = single.probabilities(g, h)
    got = _distributed(lambda: MVSSampler(0.2, mvs_reg=mvs_reg), g, h, parts, 0,
                       method="probabilities")
    np.testing.assert_allclose(got, p, rtol=1e-9)
    assert got.sum() == pytest.approx(0.2 * g.size, rel=1e-9)


def test_mvs_distributed_sample_size_and_weights():
    g, h = _derivatives()
    parts = _parts(g.size, 4, empty=True)
    single = MVSSampler(0.2)
    single.begin(SimpleNamespace(learning_rate=0.1, n_rows=g.size, n_iterations=100))
    p = single.probabilities(g, h)
    sizes = []
    for seed in range(10):
        idx, w = _distributed(lambda: MVSSampler(0.2), g, h, parts, seed)
        assert np.unique(idx).size == idx.size
        keep = np.ceil(p[idx] * 2.0 ** 32) * 2.0 ** -32      # the draw's probabilities
        np.testing.assert_allclose(w, 1.0 / keep, rtol=1e-9)
        sizes.append(idx.size)
    # expected size 0.2 n, standard deviation at most sqrt(0.2 n): 4 s.e. of the mean
    assert abs(np.mean(sizes) - 0.2 * g.size) <= 4 * np.sqrt(0.2 * g.size / len(sizes))


def test_mvs_distributed_edge_cases():
    n = 900
    parts = _parts(n, 3, empty=True)
    # no positive score anywhere: uniform, weight 1 / subsample
    idx, w = _distributed(lambda: MVSSampler(0.3), np.zeros(n), np.zeros(n), parts, 0)
    np.testing.assert_allclose(w, 1.0 / _sampling.keep_probability(0.3))
    assert abs(idx.size - 0.3 * n) <= 4 * np.sqrt(0.3 * 0.7 * n)
    # fewer positive scores than subsample * n: all of them, weight 1
    g = np.zeros(n)
    g[::10] = np.arange(1.0, n // 10 + 1)
    idx, w = _distributed(lambda: MVSSampler(0.3, mvs_reg=0.0), g, np.ones(n), parts, 0)
    np.testing.assert_array_equal(np.sort(idx), np.flatnonzero(g))
    np.testing.assert_array_equal(w, 1.0)


def test_mvs_distributed_sample_is_never_empty():
    # subsample * n below 1: the global draw is often empty, then one row is drawn over all
    # workers' rows (by one worker)
    g, h = _derivatives(1000, seed=4)
    parts = _parts(g.size, 3, empty=True)
    for seed in range(20):
        idx, w = _distributed(lambda: MVSSampler(0.0005), g, h, parts, seed)
        assert idx.size >= 1 and np.all(w > 0) and np.all(np.isfinite(w))


def test_local_fit_keeps_the_local_path():
    # a context without a collective, or with the one-machine one: the same sample as today
    g, h = _derivatives(3000)
    for cls in (GOSSSampler, MVSSampler):
        a, b = cls(0.3), cls(0.3)
        a.begin(SimpleNamespace(learning_rate=0.1, n_rows=g.size, n_iterations=100))
        b.begin(SimpleNamespace(learning_rate=0.1, n_rows=g.size, n_iterations=100,
                                collective=LOCAL, n_threads=1))
        ra = a.sample(g, h, np.random.default_rng(5), 50)
        rb = b.sample(g, h, np.random.default_rng(5), 50)
        np.testing.assert_array_equal(ra.indices, rb.indices)
        np.testing.assert_array_equal(ra.weights, rb.weights)
        assert b._bracket.last is not None            # the local search ran
