"""Differential tests of the split-finding kernels against a brute force over all
``(feature, bin, nan direction)`` candidates."""
import contextlib

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from boostlib._kernels import _splitting
from reference import kernels as ref
from reference.strategies import (KERNEL_SETTINGS, TWO_CHANNELS, binned_data, gradients,
                                  make_binned, split_params)


def no_noise(n_bins):
    return np.empty((0, n_bins))


NO_CATS = np.empty(0, np.uint8)
CAT_PARAMS = np.array([10.0, 10.0, 10.0, 32.0])


def node_split(hist, nbnm, mb, l2, msl, mcw, noise=None, n_threads=1):
    """Kernel ``find_split_nodes`` on one node given as a dense ``(n_features, n_bins, ch)``
    histogram; returns (result, scratch)."""
    hist = np.ascontiguousarray(hist)
    scratch = np.full((1, hist.shape[0], 4), np.nan)
    out = np.full((1, 7), np.nan)
    nz = np.empty((0, hist.shape[0], hist.shape[1])) if noise is None else noise[None]
    _splitting.find_split_nodes(ref.compact_hist(hist[None], nbnm, mb), np.zeros(1, np.int32),
                                ref.hist_offsets(nbnm), np.asarray(nbnm, np.int32), NO_CATS,
                                CAT_PARAMS, l2, msl, mcw, np.ascontiguousarray(nz), scratch,
                                out, n_threads)
    f = int(out[0, 0])
    res = (-1, -1, 0, 0.0) if f < 0 else (f, int(out[0, 1]), int(out[0, 2]), out[0, 3])
    return res, scratch[0]


def level_split(hist, slots, nbnm, mb, l2, msl, mcw, noise=None, n_threads=1):
    """Kernel ``find_split_level`` on dense histograms; returns (result, gain_sum,
    n_valid), the last two as dense (n_features, 2, n_bins) arrays (the kernel's are in the
    histogram's layout; NaN and -7 where a feature has no such bin)."""
    hist = np.ascontiguousarray(hist)
    n_features, n_bins = hist.shape[1], hist.shape[2]
    offsets = ref.hist_offsets(nbnm)
    flat_gain = np.full((offsets[-1], 2), np.nan)
    flat_valid = np.full((offsets[-1], 2), -7, dtype=np.int32)
    res = _splitting.find_split_level(ref.compact_hist(hist, nbnm, mb),
                                      np.asarray(slots, np.int32), offsets,
                                      np.asarray(nbnm, np.int32), NO_CATS, CAT_PARAMS, l2, msl,
                                      mcw, no_noise(n_bins) if noise is None else noise,
                                      flat_gain, flat_valid, n_threads)
    gain_sum = np.full((n_features, 2, n_bins), np.nan)
    n_valid = np.full((n_features, 2, n_bins), -7, dtype=np.int32)
    for f in range(n_features):
        k = int(offsets[f + 1] - offsets[f])
        gain_sum[f, :, :k] = flat_gain[offsets[f]:offsets[f + 1]].T
        n_valid[f, :, :k] = flat_valid[offsets[f]:offsets[f + 1]].T
    return res, gain_sum, n_valid


def split_stats(hist, slots, f, b, d, nbnm, mb, left, right):
    """Kernel ``split_stats`` of threshold split ``(f, b, d)`` on dense histograms."""
    nbnm = np.asarray(nbnm, np.int32)
    _splitting.split_stats(ref.compact_hist(hist, nbnm, mb), np.asarray(slots, np.int32),
                           int(ref.hist_offsets(nbnm)[f]), int(nbnm[f]), np.empty(0, np.int32),
                           b, d, left, right)


def hist_of(data, g, h, node=None, n_nodes=1):
    node = np.zeros(data.n_rows, np.int32) if node is None else node
    return ref.build_histograms(data.X_rows, np.empty(0, np.int32), node,
                                np.arange(n_nodes, dtype=np.int32), g, h, n_nodes, data.n_bins)


@st.composite
def node_case(draw, max_rows=50, missing=None, sparse_hessian=None):
    data = draw(binned_data(max_rows=max_rows, missing=missing))
    exact = draw(st.booleans())
    g, h = draw(gradients(data.n_rows, exact=exact, sparse_hessian=sparse_hessian))
    l2, msl, mcw = draw(split_params(exact))
    noise_std = draw(st.sampled_from([0.0, 0.0, 0.1, 10.0]))
    noise = None
    if noise_std > 0:
        noise = draw(hnp.arrays(np.float64, (data.n_features, data.n_bins),
                                elements=st.floats(-1, 1))) * noise_std
    return data, g, h, exact, (l2, msl, mcw), noise


# --------------------------------------------------------------------------------------------
# find_split_node
# --------------------------------------------------------------------------------------------


@KERNEL_SETTINGS
@given(case=node_case())
def test_find_split_node_matches_brute_force(case):
    data, g, h, exact, (l2, msl, mcw), noise = case
    hist = hist_of(data, g, h)[0]
    res, scratch = node_split(hist, data.nbnm, data.missing_bin, l2, msl, mcw, noise)
    best, cands = ref.find_split_node(hist, data.nbnm, data.missing_bin, l2, msl, mcw, noise)
    err = ref.choice_is_consistent(res, best, cands, exact, noise=noise)
    assert err is None, err
    # scratch: per-feature best (score, bin, nan_right, gain), bin -1 without a candidate
    for f in range(data.n_features):
        cf = [c for c in cands if c.f == f]
        ok = [c for c in cf if c.valid and c.gain > 0]
        if noise is None:
            bf = ref.best_by_score(ok, lambda c: c.gain)
        else:
            bf = ref.best_by_score(ok, lambda c: c.gain + noise[c.f, c.b])
        b = int(scratch[f, 1])
        kf = (f if b >= 0 else -1, b, int(scratch[f, 2]), scratch[f, 3])
        err = ref.choice_is_consistent(kf, bf, cf, exact, noise=noise)
        assert err is None, f"feature {f}: {err}"
    # independent of n_threads
    for n_threads in (2, 3):
        assert node_split(hist, data.nbnm, data.missing_bin, l2, msl, mcw, noise,
                          n_threads)[0] == res


def test_find_split_node_hand_computed():
    # one feature, bins 0, 1, missing; l2 = 1
    X = np.array([[0], [1], [2]], np.uint8)
    data = make_binned(X, [2], 2)
    g = np.array([-1.0, 1.0, 5.0])
    h = np.array([1.0, 1.0, 1.0])
    hist = hist_of(data, g, h)[0]
    res, _ = node_split(hist, [2], 2, 1.0, 1, 0.0)
    # candidates: b=0,d=0: L{-1,5} R{1}; b=0,d=1: L{-1} R{1,5}; b=1,d=1: L{-1,1} R{5}
    parent = 25 / 4
    gains = {(0, 0, 0): 16 / 3 + 1 / 2 - parent, (0, 0, 1): 1 / 2 + 36 / 3 - parent,
             (0, 1, 1): 0 / 2 + 25 / 2 - parent}
    # (0, 0, 1) and (0, 1, 1) tie exactly at 6.25: the smaller bin wins
    assert gains[(0, 0, 1)] == gains[(0, 1, 1)] == 6.25 > gains[(0, 0, 0)]
    assert res == (0, 0, 1, 6.25)


def test_zero_valid_splits():
    X = np.array([[0, 3, 0], [1, 3, 0], [2, 3, 4], [1, 3, 4]], np.uint8)
    data = make_binned(X, [3, 4, 1], 4)
    g = np.array([1.0, -2.0, 3.0, -4.0])
    h = np.ones(4)
    hist = hist_of(data, g, h)[0]
    none = (-1, -1, 0, 0.0)
    # all-zero gradients: every gain is 0, nothing is strictly positive
    assert node_split(hist_of(data, np.zeros(4), h)[0], data.nbnm, 4, 1.0, 1, 0.0)[0] == none
    # min_samples_leaf larger than half the rows
    assert node_split(hist, data.nbnm, 4, 1.0, 3, 0.0)[0] == none
    # min_child_weight larger than any child's hessian
    assert node_split(hist, data.nbnm, 4, 1.0, 1, 3.5)[0] == none
    # only constant features (feature 1: one bin, no missing)
    assert node_split(hist[1:2], data.nbnm[1:2], 4, 1.0, 1, 0.0)[0] == none
    # one row
    one = make_binned(np.array([[1, 4]], np.uint8), [3, 2], 4)
    assert node_split(hist_of(one, [2.0], [1.0])[0], one.nbnm, 4, 1.0, 1, 0.0)[0] == none
    # ... and the level kernel agrees
    hist_all = hist_of(data, g, h)
    assert level_split(hist_all, [0], data.nbnm, 4, 1.0, 3, 0.0)[0] == none
    assert level_split(hist_all[:, 1:2].copy(), [0], data.nbnm[1:2], 4, 1.0, 1, 0.0)[0] == none


def test_missing_only_split_of_a_constant_feature():
    """nb == 1 with missing values: the only split is non-missing left / missing right."""
    X = np.array([[0], [2], [0], [2]], np.uint8)
    data = make_binned(X, [1], 2)
    g = np.array([1.0, -1.0, 1.0, -1.0])
    hist = hist_of(data, g, np.ones(4))[0]
    res, _ = node_split(hist, [1], 2, 1.0, 1, 0.0)
    assert res[:3] == (0, 0, 1)
    assert res[3] == pytest.approx(4 / 3 + 4 / 3, rel=1e-14)
    res, _, _ = level_split(hist[None], [0], [1], 2, 1.0, 1, 0.0)
    assert res[:3] == (0, 0, 1)


@pytest.mark.parametrize("n_threads", [1, 2, 4])
def test_documented_tie_breaking(n_threads):
    # features 0..3 identical (one per thread): the smallest feature wins; bin 1 is empty so
    # splits at bin 0 and 1 are the same partition: the smaller bin wins; no missing value so
    # both directions tie: nan_right = 0.
    col = np.array([0, 0, 2, 2, 3, 0], np.uint8)
    X = np.stack([col] * 4, axis=1)
    data = make_binned(X, [4] * 4, 7)
    g = np.array([-2.0, -1.0, 3.0, 2.0, 2.0, -1.5])
    hist = hist_of(data, g, np.ones(6))
    res, _ = node_split(hist[0], data.nbnm, 7, 1.0, 1, 0.0, n_threads=n_threads)
    assert res[:3] == (0, 0, 0)
    res, _, _ = level_split(hist, [0], data.nbnm, 7, 1.0, 1, 0.0, n_threads=n_threads)
    assert res[:3] == (0, 0, 0)


def test_tiny_gain_beside_a_large_parent_score():
    # Candidates are screened without a division, with a relative margin: a gain of 4e-12
    # of the parent's score is still found, and its gain computed from the fractions.
    data = make_binned(np.array([[0], [1]], np.uint8), [2], 2)
    hist = hist_of(data, np.array([5e5 + 1.0, 5e5 - 1.0]), np.ones(2))[0]
    res, _ = node_split(hist, [2], 2, 0.0, 1, 0.0)
    assert res[:3] == (0, 0, 0)
    assert res[3] == pytest.approx(2.0, rel=1e-3)


@pytest.mark.parametrize("seed", range(20))
def test_sparse_histograms_match_brute_force(seed):
    # few rows over 255 bins: most bins empty, which the search skips
    rng = np.random.default_rng(seed)
    n, nb = int(rng.integers(1, 40)), 255
    X = rng.integers(0, nb, (n, 3)).astype(np.uint8)
    X[rng.random((n, 3)) < 0.2] = nb            # some missing values
    data = make_binned(X, [nb] * 3, nb)
    g, h = rng.normal(size=n), rng.uniform(0.1, 1.0, n)
    hist = hist_of(data, g, h)[0]
    res, _ = node_split(hist, data.nbnm, nb, 1.0, 1, 1e-3)
    best, cands = ref.find_split_node(hist, data.nbnm, nb, 1.0, 1, 1e-3)
    err = ref.choice_is_consistent(res, best, cands, False)
    assert err is None, err


def test_noise_ranks_but_is_not_reported():
    X = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], np.uint8)
    data = make_binned(X, [2, 2], 2)
    g = np.array([-3.0, 3.0, -1.0, 1.5])
    hist = hist_of(data, g, np.ones(4))[0]
    res, _ = node_split(hist, [2, 2], 2, 1.0, 1, 0.0)
    assert res[0] == 0
    noise = np.zeros((2, 3))
    noise[1, 0] = 100.0                          # pushes feature 1 ahead
    res2, _ = node_split(hist, [2, 2], 2, 1.0, 1, 0.0, noise)
    best, cands = ref.find_split_node(hist, [2, 2], 2, 1.0, 1, 0.0)
    by = {(c.f, c.b, c.d): c for c in cands}
    assert res2[:3] == (1, 0, 0)
    assert res2[3] == pytest.approx(by[(1, 0, 0)].gain, rel=1e-14)
    # noise can't make a candidate with a zero gain eligible
    noise = np.full((2, 3), -1.0)
    noise[1, 0] = 1e6
    res3, _ = node_split(hist_of(data, np.zeros(4), np.ones(4))[0], [2, 2], 2, 1.0, 1, 0.0,
                         noise)
    assert res3[0] == -1


# --------------------------------------------------------------------------------------------
# find_split_level
# --------------------------------------------------------------------------------------------


def check_level_sums(cands, gain_sum, n_valid):
    """The kernel's counts are exact; its summed gains are within rounding of the
    brute force's, relative to the magnitudes of the feature's gains (a feature whose
    leaves use few of many bins sums their gains' changes), and 0 where no leaf is valid."""
    scale = {}
    for c in cands:
        scale[c.f] = scale.get(c.f, 0.0) + c.mag
    for c in cands:
        assert n_valid[c.f, c.d, c.b] == c.n_valid, c
        if c.n_valid == 0:
            assert gain_sum[c.f, c.d, c.b] == 0.0, c
        assert abs(gain_sum[c.f, c.d, c.b] - c.gain) <= 1e-9 * max(scale[c.f], 1e-300), (
            c, gain_sum[c.f, c.d, c.b])


@st.composite
def level_case(draw, **kw):
    data, g, h, exact, params, noise = draw(node_case(max_rows=60, **kw))
    n_nodes = draw(st.integers(1, 4))
    node = draw(hnp.arrays(np.int32, data.n_rows, elements=st.integers(0, n_nodes - 1)))
    slots = draw(st.permutations(range(n_nodes)))
    slots = slots[:draw(st.integers(1, n_nodes))]
    return data, g, h, exact, params, noise, node, n_nodes, np.array(slots, np.int32)


@KERNEL_SETTINGS
@given(case=level_case())
def test_find_split_level_matches_brute_force(case):
    data, g, h, exact, (l2, msl, mcw), noise, node, n_nodes, slots = case
    hist = hist_of(data, g, h, node, n_nodes)
    res, gain_sum, n_valid = level_split(hist, slots, data.nbnm, data.missing_bin, l2, msl,
                                         mcw, noise)
    best, cands = ref.find_split_level([hist[s] for s in slots], data.nbnm, data.missing_bin,
                                       l2, msl, mcw, noise)
    err = ref.choice_is_consistent(res, best, cands, exact, noise=noise)
    assert err is None, err
    check_level_sums(cands, gain_sum, n_valid)
    for n_threads in (2, 3):
        assert level_split(hist, slots, data.nbnm, data.missing_bin, l2, msl, mcw, noise,
                           n_threads)[0] == res


@st.composite
def many_bins_level_case(draw):
    """A level of 1-8 leaves of 2-120 rows over 64-255 bins per feature (some features
    copies of others, so that candidates tie exactly): most leaves use few of their bins."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_rows = draw(st.integers(2, 120))
    n_leaves = draw(st.integers(1, 8))
    mb = 255
    n_own = draw(st.integers(1, 3))
    nbnm = rng.integers(64, mb + 1, n_own)
    X = rng.integers(0, nbnm, (n_rows, n_own))
    if draw(st.booleans()):
        X = np.where(rng.random(X.shape) < 0.2, mb, X)
    copies = draw(st.lists(st.integers(0, n_own - 1), max_size=2))
    X = np.column_stack([X] + [X[:, j] for j in copies])
    nbnm = np.concatenate([nbnm, nbnm[copies]]).astype(np.int32)
    data = make_binned(X, nbnm, mb)
    exact = draw(st.booleans())
    g, h = draw(gradients(n_rows, exact=exact))
    l2, msl, mcw = draw(split_params(exact))
    noise = None
    if draw(st.integers(0, 3)) == 0:
        noise = rng.uniform(-1, 1, (data.n_features, data.n_bins))
    node = rng.integers(0, n_leaves, n_rows).astype(np.int32)
    slots = rng.permutation(n_leaves).astype(np.int32)
    return data, g, h, (l2, msl, mcw), noise, node, slots


@KERNEL_SETTINGS
@given(case=many_bins_level_case(), two_channels=st.booleans())
def test_find_split_level_is_the_leaf_by_leaf_choice(case, two_channels):
    """Leaves that use few of many bins are summed by their gains' changes; the choice and
    its gain are still those of the leaf-by-leaf sums, bit for bit, ties included."""
    if two_channels and not TWO_CHANNELS:
        two_channels = False
    data, g, h, (l2, msl, mcw), noise, node, slots = case
    hist = hist_of(data, g, h, node, len(slots))
    if two_channels:
        msl = 0
        kernel_hist = np.ascontiguousarray(hist[..., :2])
    else:
        kernel_hist = hist
    res, gain_sum, n_valid = level_split(kernel_hist, slots, data.nbnm, data.missing_bin, l2,
                                         msl, mcw, noise)
    expected = ref.level_choice_in_leaf_order(
        [hist[s] for s in slots], data.nbnm, data.missing_bin, l2, msl, mcw,
        count_channel=not two_channels, noise=noise)
    assert res == expected
    if not two_channels:
        _, cands = ref.find_split_level([hist[s] for s in slots], data.nbnm,
                                        data.missing_bin, l2, msl, mcw, noise)
        check_level_sums(cands, gain_sum, n_valid)
    assert level_split(kernel_hist, slots, data.nbnm, data.missing_bin, l2, msl, mcw, noise,
                       2)[0] == res


@pytest.mark.parametrize("scale", [1e-170, 1.0, 1e160])
def test_find_split_level_sparse_leaves_extreme_gains(scale):
    """Gains that underflow, or overflow to inf (so their changes are not finite): still the
    leaf-by-leaf choice."""
    rng = np.random.default_rng(3)
    hist = np.zeros((6, 4, 256, 3))        # 6 leaves of 8 rows over 200 bins
    for k in range(6):
        for f in range(3):
            for b in rng.integers(0, 200, 8):
                hist[k, f, b] += (rng.normal() * scale, 1.0, 1.0)
        hist[k, 3] = hist[k, 0]             # a copy: exact ties
    nbnm = np.full(4, 200, np.int32)
    slots = np.arange(6, dtype=np.int32)
    res, _, _ = level_split(hist, slots, nbnm, 255, 1.0, 1, 1e-3)
    assert res == ref.level_choice_in_leaf_order(list(hist), nbnm, 255, 1.0, 1, 1e-3)
    if scale == 1.0:
        assert res[0] >= 0


def test_level_gain_sums_only_valid_leaves():
    # leaf 0: 4 rows, the split at bin 0 is valid; leaf 1: 1 row, never valid
    X = np.array([[0], [0], [1], [1], [0]], np.uint8)
    data = make_binned(X, [2], 2)
    g = np.array([-1.0, -1.0, 1.0, 1.0, 7.0])
    node = np.array([0, 0, 0, 0, 1], np.int32)
    hist = hist_of(data, g, np.ones(5), node, 2)
    res, gain_sum, n_valid = level_split(hist, [0, 1], [2], 2, 0.0, 1, 1e-3)
    assert res[:3] == (0, 0, 0)
    assert res[3] == pytest.approx(4 / 2 + 4 / 2 - 0.0, rel=1e-14)
    assert n_valid[0, 0, 0] == 1 and n_valid[0, 1, 0] == 1
    assert gain_sum[0, 0, 0] == res[3]
    # a candidate valid in no leaf can't be chosen: leaf 1 alone
    assert level_split(hist, [1], [2], 2, 0.0, 1, 1e-3)[0] == (-1, -1, 0, 0.0)


# --------------------------------------------------------------------------------------------
# find_split_nodes (a level of a depthwise tree in one call)
# --------------------------------------------------------------------------------------------


def nodes_split(hist, slots, nbnm, missing_bin, l2, msl, mcw, noise=None, n_threads=1):
    k = len(slots)
    noise3 = (np.empty((0, hist.shape[1], hist.shape[2])) if noise is None
              else np.ascontiguousarray(noise, np.float64))
    out = np.full((k, 7), np.nan)
    _splitting.find_split_nodes(ref.compact_hist(hist, nbnm, missing_bin),
                                np.asarray(slots, np.int32), ref.hist_offsets(nbnm),
                                np.asarray(nbnm, np.int32), NO_CATS, CAT_PARAMS, l2, msl, mcw,
                                noise3, np.empty((k, hist.shape[1], 4)), out, n_threads)
    return out


@KERNEL_SETTINGS
@given(case=level_case(), two_channels=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_find_split_nodes_matches_brute_force_node_by_node(case, two_channels, seed):
    """Every node's split is the brute force's choice, and (feature, bin, direction, gain,
    child counts, missing flag) equal find_split_node + split_stats bit for bit."""
    data, g, h, exact, (l2, msl, mcw), noise, node, n_nodes, slots = case
    hist = hist_of(data, g, h, node, n_nodes)
    if two_channels:
        hist, msl, mcw = np.ascontiguousarray(hist[..., :2]), 0, max(mcw, 1e-3)
    noise3 = None
    if noise is not None:        # a different noise table per node
        rng = np.random.default_rng(seed)
        noise3 = np.stack([noise * rng.uniform(0.5, 2.0) for _ in slots])
    out = nodes_split(hist, slots, data.nbnm, data.missing_bin, l2, msl, mcw, noise3)
    for j, s in enumerate(slots):
        nz = None if noise3 is None else noise3[j]
        res, _ = node_split(hist[s], data.nbnm, data.missing_bin, l2, msl, mcw, nz)
        f, b, d, gain = int(out[j, 0]), int(out[j, 1]), int(out[j, 2]), out[j, 3]
        assert (f, b, d, gain) == res
        if f < 0:
            continue
        hist3 = hist_of(data, g, h, node, n_nodes)[s]
        best, cands = ref.find_split_node(hist3, data.nbnm, data.missing_bin, l2,
                                          1 if two_channels else msl, mcw, nz)
        err = ref.choice_is_consistent(res, best, cands, exact, noise=nz)
        assert err is None, err
        left, right = np.empty((1, 3)), np.empty((1, 3))
        split_stats(hist, np.array([s], np.int32), f, b, d, data.nbnm, data.missing_bin,
                    left, right)
        assert (out[j, 4], out[j, 5]) == (left[0, 2], right[0, 2])
        miss = hist[s, f, data.missing_bin]
        has = miss[2] > 0 if hist.shape[3] == 3 else (miss[0] != 0 or miss[1] != 0)
        assert out[j, 6] == float(has)
    for n_threads in (2, 3):
        again = nodes_split(hist, slots, data.nbnm, data.missing_bin, l2, msl, mcw, noise3,
                            n_threads)
        assert np.array_equal(again, out, equal_nan=True)


def test_find_split_nodes_checks_shapes():
    hist = np.zeros((2, 3, 4, 3))
    nbnm = np.array([3, 3, 3], np.int32)
    with pytest.raises(ValueError, match="slot out of range"):
        nodes_split(hist, [2], nbnm, 3, 1.0, 1, 1e-3)
    with pytest.raises(ValueError, match="noise must have shape"):
        nodes_split(hist, [0, 1], nbnm, 3, 1.0, 1, 1e-3, np.zeros((1, 3, 4)))
    out = nodes_split(hist, [0, 1], nbnm, 3, 1.0, 1, 1e-3)     # all-zero: no split anywhere
    assert np.all(out[:, 0] == -1)


# --------------------------------------------------------------------------------------------
# the vectorised scan of unbounded candidates against the scalar scan
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def scalar_scan():
    """Every numeric candidate takes the scalar scan inside this block."""
    previous = _splitting.use_vector_scan(False)
    try:
        yield
    finally:
        _splitting.use_vector_scan(*previous)


@contextlib.contextmanager
def vector_scan():
    """Every numeric candidate, whatever its feature's bins, takes the vectorised scan
    inside this block (by default features of few bins take the scalar one)."""
    previous = _splitting.use_vector_scan(True, 0)
    try:
        yield
    finally:
        _splitting.use_vector_scan(*previous)


def both_scans(hist, slots, nbnm, missing_bin, l2, msl, mcw):
    with vector_scan():
        vector = nodes_split(hist, slots, nbnm, missing_bin, l2, msl, mcw)
    with scalar_scan():
        scalar = nodes_split(hist, slots, nbnm, missing_bin, l2, msl, mcw)
    return vector, scalar


@KERNEL_SETTINGS
@given(case=level_case(), two_channels=st.booleans())
def test_vector_scan_chooses_as_the_scalar_scan(case, two_channels):
    """Small histograms (one row, constant features, missing values, all-zero gradients,
    zero hessians): both scans give every node the same result, bit for bit."""
    data, g, h, exact, (l2, msl, mcw), _, node, n_nodes, slots = case
    hist = hist_of(data, g, h, node, n_nodes)
    if two_channels:       # the scan's short validity test: hessians alone
        hist, msl, mcw = np.ascontiguousarray(hist[..., :2]), 0, max(mcw, 1e-3)
    vector, scalar = both_scans(hist, slots, data.nbnm, data.missing_bin, l2, msl, mcw)
    assert np.array_equal(vector, scalar, equal_nan=True)


@pytest.mark.parametrize("seed", range(16))
def test_vector_scan_on_wide_histograms(seed):
    """Up to 255 bins a feature (bins in use across 64-bit words), nodes from 1 to 5,000
    rows, exact ties (dyadic gradients), zero hessians, all-zero gradients and every
    validity setting: both scans agree bit for bit."""
    rng = np.random.default_rng(seed)
    nbnm = np.array([255, 200, 64, 65, 130, 1, 128], np.int32)
    n = int(rng.choice([1, 40, 600, 5000]))
    X = np.column_stack([rng.integers(0, nb, n) for nb in nbnm]).astype(np.uint8)
    X[rng.random(X.shape) < rng.choice([0.0, 0.1])] = 255
    data = make_binned(X, nbnm, 255)
    kind = seed % 4
    g = rng.integers(-4, 5, n) / 4.0 if kind == 0 else rng.normal(size=n)
    if kind == 1:
        g[:] = 0.0
    h = rng.uniform(0.0, 0.25, n)
    if kind == 2:
        h[rng.random(n) < 0.5] = 0.0
    node = rng.integers(0, 3, n).astype(np.int32)
    hist = hist_of(data, g, h, node, 3)
    slots = np.arange(3, dtype=np.int32)
    for l2, msl, mcw in [(1.0, 1, 1e-3), (0.0, 3, 0.5), (10.0, 20, 0.0), (0.5, 1, 2.0)]:
        vector, scalar = both_scans(hist, slots, nbnm, 255, l2, msl, mcw)
        assert np.array_equal(vector, scalar, equal_nan=True), (l2, msl, mcw)
        two = np.ascontiguousarray(hist[..., :2])
        vector, scalar = both_scans(two, slots, nbnm, 255, l2, 0, max(mcw, 1e-3))
        assert np.array_equal(vector, scalar, equal_nan=True), (l2, mcw)


@pytest.mark.parametrize("grow_policy", ["depthwise", "lossguide"])
@pytest.mark.parametrize("min_samples_leaf", [1, 5])
def test_vector_scan_grows_the_same_trees(grow_policy, min_samples_leaf):
    """Whole fits (the compiled tree loop, whose children test only their parent's bins in
    use): both scans give the same model, bit for bit."""
    from boostlib import BoostRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6))
    X[:, 4] = np.round(X[:, 4])
    X[:, 5] = X[:, 5] > 0.8            # binary: few bins, the scalar scan by default
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) * 2 + np.sin(np.nan_to_num(X[:, 1]) * 3)
         + np.nan_to_num(X[:, 5]) + rng.normal(size=3000))

    def predictions():
        model = BoostRegressor(grow_policy=grow_policy, n_estimators=15, max_depth=6,
                               max_leaves=40 if grow_policy == "lossguide" else None,
                               min_samples_leaf=min_samples_leaf, random_state=0)
        return model.fit(X, y).predict(X)

    with vector_scan():
        vector = predictions()
    with scalar_scan():
        scalar = predictions()
    assert np.array_equal(vector, scalar)
    assert np.array_equal(predictions(), scalar)    # the default: by the features' bins


# --------------------------------------------------------------------------------------------
# split_stats
# --------------------------------------------------------------------------------------------


@KERNEL_SETTINGS
@given(case=level_case(), pick=st.data())
def test_split_stats_matches_reference(case, pick):
    data, g, h, exact, params, noise, node, n_nodes, slots = case
    hist = hist_of(data, g, h, node, n_nodes)
    f = pick.draw(st.integers(0, data.n_features - 1))
    b = pick.draw(st.integers(0, int(data.nbnm[f]) - 1))
    d = pick.draw(st.integers(0, 1))
    left = np.full((slots.size, 3), np.nan)
    right = np.full((slots.size, 3), np.nan)
    split_stats(hist, slots, f, b, d, data.nbnm, data.missing_bin, left, right)
    scale = np.sum(np.abs(np.asarray(g, np.float32), dtype=np.float64)) + np.sum(
        np.abs(np.asarray(h, np.float32), dtype=np.float64))
    for k, s in enumerate(slots):
        lref, rref = ref.child_sums(hist[s, f], int(data.nbnm[f]), data.missing_bin, b, d)
        np.testing.assert_allclose(left[k], lref, rtol=1e-12, atol=1e-13 * scale)
        np.testing.assert_allclose(right[k], rref, rtol=1e-12, atol=1e-13 * scale)
        assert left[k, 2] == lref[2] and right[k, 2] == rref[2]


# --------------------------------------------------------------------------------------------
# count-free (2-channel) histograms, where the kernels offer them
# --------------------------------------------------------------------------------------------

needs_two_channels = pytest.mark.skipif(not TWO_CHANNELS,
                                        reason="no count-free histogram mode in this build")


@needs_two_channels
@KERNEL_SETTINGS
@given(case=level_case(missing=True), zero_h_feature=st.integers(-1, 3))
def test_two_channel_split_finding_equals_counted(case, zero_h_feature):
    """Without the count channel (min_samples_leaf=0, min_child_weight > 0, as the module
    docstring requires) the kernels must pick the split the brute force picks with counts
    and min_samples_leaf=1 (a child with hessian >= min_child_weight > 0 is never empty).

    ``zero_h_feature``: the rows missing in that feature get a zero hessian (rows of a
    saturated logloss have h == 0 and g == +-1), an input where hessians can't stand in for
    counts."""
    data, g, h, exact, (l2, _, mcw), noise, node, n_nodes, slots = case
    if 0 <= zero_h_feature < data.n_features:
        h = np.where(data.X_rows[:, zero_h_feature] == data.missing_bin, 0.0, h)
    mcw = max(mcw, 1e-3)
    hist3 = hist_of(data, g, h, node, n_nodes)
    hist2 = np.ascontiguousarray(hist3[..., :2])
    res, _ = node_split(hist2[slots[0]], data.nbnm, data.missing_bin, l2, 0, mcw, noise)
    best, cands = ref.find_split_node(hist3[slots[0]], data.nbnm, data.missing_bin, l2, 1,
                                      mcw, noise)
    err = ref.choice_is_consistent(res, best, cands, exact, noise=noise)
    assert err is None, "find_split_node, 2 channels: " + err
    res, _, _ = level_split(hist2, slots, data.nbnm, data.missing_bin, l2, 0, mcw, noise)
    best, cands = ref.find_split_level([hist3[s] for s in slots], data.nbnm,
                                       data.missing_bin, l2, 1, mcw, noise)
    err = ref.choice_is_consistent(res, best, cands, exact, noise=noise)
    assert err is None, "find_split_level, 2 channels: " + err


@needs_two_channels
def test_two_channel_missing_rows_with_zero_hessian():
    """Missing rows whose hessians are 0 (e.g. a saturated logloss) still move gradient:
    sending them right is a different split from sending them left."""
    X = np.array([[0], [1], [2]], np.uint8)        # row 2 is missing
    data = make_binned(X, [2], 2)
    g = np.array([-1.0, 1.0, 5.0])
    h = np.array([1.0, 1.0, 0.0])
    hist3 = hist_of(data, g, h)
    hist2 = np.ascontiguousarray(hist3[..., :2])
    # with counts: (0, 0, nan_right=1), gain 1/2 + 36/2 - 25/3
    expected = 0.5 + 18.0 - 25.0 / 3.0
    res3, _ = node_split(hist3[0], [2], 2, 1.0, 1, 1e-3)
    assert res3[:3] == (0, 0, 1) and res3[3] == pytest.approx(expected, rel=1e-14)
    res2, _ = node_split(hist2[0], [2], 2, 1.0, 0, 1e-3)
    assert res2[:3] == (0, 0, 1) and res2[3] == pytest.approx(expected, rel=1e-14)
    lres2, _, _ = level_split(hist2, [0], [2], 2, 1.0, 0, 1e-3)
    assert lres2[:3] == (0, 0, 1) and lres2[3] == pytest.approx(expected, rel=1e-14)
