"""Differential tests of ``build_histograms`` against ``np.add.at``."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from boostlib._kernels import _histogram, _partition
from reference import kernels as ref
from reference.strategies import (KERNEL_SETTINGS, TWO_CHANNELS, binned_data, gradients,
                                  make_binned)


def kernel_hist(data, rows, node, slot_of_node, g, h, n_slots, n_threads, n_channels=3,
                fill=np.nan, listing=(None, None)):
    """The kernel's histograms, laid out per feature, returned dense ``(n_slots,
    n_features, n_bins, channels)`` to compare with the reference."""
    offsets = ref.hist_offsets(data.nbnm)
    hist = np.full((n_slots, int(offsets[-1]), n_channels), fill)
    # the kernel reads each feature's missing values at its own bin nbnm[f]
    X_rows = np.minimum(data.X_rows, data.nbnm.astype(np.uint8)[None, :])
    _histogram.build_histograms(X_rows, np.ascontiguousarray(rows, dtype=np.int32),
                                np.ascontiguousarray(node, dtype=np.int32),
                                np.ascontiguousarray(slot_of_node, dtype=np.int32),
                                np.ascontiguousarray(g, dtype=np.float32),
                                np.ascontiguousarray(h, dtype=np.float32), offsets, hist,
                                n_threads, *listing)
    return ref.dense_hist(hist, data.nbnm, data.missing_bin)


def assert_hist_close(got, expected, g, h):
    """Counts exactly; sums to a relative 1e-12 of the absolute sums involved."""
    assert got.shape == expected.shape
    if got.shape[-1] == 3:
        np.testing.assert_array_equal(got[..., 2], expected[..., 2])
    scale_g = float(np.sum(np.abs(np.asarray(g, np.float32), dtype=np.float64))) + 1e-300
    scale_h = float(np.sum(np.abs(np.asarray(h, np.float32), dtype=np.float64))) + 1e-300
    np.testing.assert_allclose(got[..., 0], expected[..., 0], rtol=1e-12, atol=1e-13 * scale_g)
    np.testing.assert_allclose(got[..., 1], expected[..., 1], rtol=1e-12, atol=1e-13 * scale_h)


@st.composite
def hist_case(draw):
    data = draw(binned_data(max_rows=60))
    n = data.n_rows
    use_subset = draw(st.booleans())
    if use_subset:
        keep = draw(hnp.arrays(np.bool_, n))
        rows = np.flatnonzero(keep).astype(np.int32)
        if rows.size == 0:
            rows = np.array([n - 1], np.int32)   # an empty array would mean "all rows"
    else:
        rows = np.empty(0, np.int32)          # identity
    n_fit = rows.size if use_subset else n
    g, h = draw(gradients(n_fit))
    n_nodes = draw(st.integers(1, 6))
    node = draw(hnp.arrays(np.int32, n_fit, elements=st.integers(0, n_nodes - 1)))
    slot_of_node = draw(hnp.arrays(np.int32, n_nodes, elements=st.integers(-1, n_nodes - 1)))
    n_slots = int(max(slot_of_node.max(), -1)) + 1 + draw(st.integers(0, 2))
    return data, rows, node, slot_of_node, g, h, n_slots


@KERNEL_SETTINGS
@given(case=hist_case())
def test_histograms_match_add_at(case):
    data, rows, node, slot_of_node, g, h, n_slots = case
    expected = ref.build_histograms(data.X_rows, rows, node, slot_of_node, g, h, n_slots,
                                    data.n_bins)
    got1 = kernel_hist(data, rows, node, slot_of_node, g, h, n_slots, 1)
    assert_hist_close(got1, expected, g, h)     # also: every slot overwritten (NaN fill)
    # The result does not depend on the number of threads (bit for bit).
    for n_threads in (2, 3):
        got = kernel_hist(data, rows, node, slot_of_node, g, h, n_slots, n_threads)
        np.testing.assert_array_equal(got, got1)


@st.composite
def wide_hist_case(draw):
    """Histograms of 2.1-2.7 MB a slot with 2 channels, 3.2-4 MB with 3 (700 features of
    190-245 bins, and 5 constant ones), built slot by slot in tiles of features by 1 and 2
    threads, and row by row by 4."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_features = 705
    n = draw(st.integers(1, 120))
    nbnm = rng.permutation(np.r_[rng.integers(190, 246, 700), np.ones(5, np.int64)])
    X = (rng.random((n, n_features)) * (nbnm + 1)).astype(np.int64)   # value nbnm: missing
    data = make_binned(np.where(X == nbnm, 255, X), nbnm, 255)
    rows = (np.sort(rng.choice(n, draw(st.integers(1, n)), replace=False)).astype(np.int32)
            if draw(st.booleans()) else np.empty(0, np.int32))
    n_fit = rows.size or n
    g, h = draw(gradients(n_fit))
    n_nodes = draw(st.integers(1, 5))
    node = rng.integers(0, n_nodes, n_fit).astype(np.int32)
    slot_of_node = rng.permutation(n_nodes).astype(np.int32)
    slot_of_node[rng.random(n_nodes) < 0.3] = -1
    n_slots = int(max(slot_of_node.max(), 0)) + 1
    return data, rows, node, slot_of_node, g, h, n_slots


@KERNEL_SETTINGS
@given(case=wide_hist_case(), two_channels=st.booleans(), listed=st.booleans())
def test_wide_histograms_in_tiles_match_add_at(case, two_channels, listed):
    """Wide histograms are built slot by slot in tiles of features: the same sums, bit for
    bit, as row by row (4 threads here), and as the reference."""
    data, rows, node, slot_of_node, g, h, n_slots = case
    n_ch = 2 if two_channels and TWO_CHANNELS else 3
    slot_bytes = int(ref.hist_offsets(data.nbnm)[-1]) * n_ch * 8
    tiled = [slot_bytes > n * _histogram.SLOT_SPLIT_BYTES for n in (1, 2, 3, 4)]
    assert tiled[0] and tiled[1] and not tiled[3]
    listing = (None, None)
    if listed:
        order, counts = ref.row_list(node, slot_of_node, _partition.LIST_BLOCK_ROWS)
        listing = (np.where(order < 0, 0, order).astype(np.int32), counts.astype(np.int32))
    expected = ref.build_histograms(data.X_rows, rows, node, slot_of_node, g, h, n_slots,
                                    data.n_bins)[..., :n_ch]
    got = [kernel_hist(data, rows, node, slot_of_node, g, h, n_slots, n_threads, n_ch,
                       listing=listing) for n_threads in (1, 2, 3, 4)]
    assert_hist_close(got[0], expected, g, h)
    for other in got[1:]:
        np.testing.assert_array_equal(other, got[0])


@KERNEL_SETTINGS
@given(case=hist_case(), pick=st.data())
def test_listed_rows_give_the_same_histograms(case, pick):
    """Visiting only the listed rows (as the partition lists them) changes no bit."""
    data, rows, node, slot_of_node, g, h, n_slots = case
    listed, counts = ref.row_list(node, slot_of_node, _partition.LIST_BLOCK_ROWS)
    listed = np.where(listed < 0, pick.draw(st.integers(-5, 5)), listed).astype(np.int32)
    for n_threads in (1, 2, 3):
        plain = kernel_hist(data, rows, node, slot_of_node, g, h, n_slots, n_threads)
        got = kernel_hist(data, rows, node, slot_of_node, g, h, n_slots, n_threads,
                          listing=(listed, counts.astype(np.int32)))
        np.testing.assert_array_equal(got, plain)


def test_listed_rows_across_blocks_and_bad_lists():
    rng = np.random.default_rng(2)
    block = _partition.LIST_BLOCK_ROWS
    n = 2 * block + 5
    data = make_binned(rng.integers(0, 5, size=(n, 3)).astype(np.uint8), [5, 5, 5], 5)
    node = rng.integers(0, 3, n).astype(np.int32)
    slot = np.array([1, -1, 0], np.int32)
    g, h = rng.normal(size=n), rng.random(n)
    listed, counts = ref.row_list(node, slot, block)
    listing = (np.where(listed < 0, 0, listed).astype(np.int32), counts.astype(np.int32))
    rows = np.empty(0, np.int32)
    plain = kernel_hist(data, rows, node, slot, g, h, 2, 2)
    np.testing.assert_array_equal(kernel_hist(data, rows, node, slot, g, h, 2, 2,
                                              listing=listing), plain)
    assert_hist_close(plain, ref.build_histograms(data.X_rows, rows, node, slot, g, h, 2,
                                                  data.n_bins), g, h)
    for bad in [(listing[0], None), (listing[0][:-1], listing[1]),
                (listing[0], listing[1][:-1]), (listing[0], listing[1] + block)]:
        with pytest.raises(ValueError):
            kernel_hist(data, rows, node, slot, g, h, 2, 1, listing=bad)


@pytest.mark.skipif(not TWO_CHANNELS, reason="no count-free histogram mode in this build")
@KERNEL_SETTINGS
@given(case=hist_case())
def test_two_channel_histograms_match_add_at(case):
    data, rows, node, slot_of_node, g, h, n_slots = case
    expected = ref.build_histograms(data.X_rows, rows, node, slot_of_node, g, h, n_slots,
                                    data.n_bins)[..., :2]
    got = kernel_hist(data, rows, node, slot_of_node, g, h, n_slots, 2, n_channels=2)
    assert_hist_close(got, expected, g, h)


@KERNEL_SETTINGS
@given(data=binned_data(max_rows=50), seed=st.integers(0, 2**32 - 1))
def test_identity_rows_equal_explicit_rows(data, seed):
    rng = np.random.default_rng(seed)
    g = rng.normal(size=data.n_rows)
    h = rng.random(data.n_rows)
    node = np.zeros(data.n_rows, np.int32)
    slot = np.zeros(1, np.int32)
    a = kernel_hist(data, np.empty(0, np.int32), node, slot, g, h, 1, 2)
    b = kernel_hist(data, np.arange(data.n_rows), node, slot, g, h, 1, 2)
    np.testing.assert_array_equal(a, b)


def test_float32_inputs_are_accumulated_in_float64():
    """1e8 + 1 - 1e8 is 0 in float32 arithmetic, 1 in float64."""
    data = make_binned(np.zeros((3, 1), np.uint8), [1], 2)
    g = np.array([1e8, 1.0, -1e8])
    h = np.array([1.0, 2.0 ** -30, 1.0])
    got = kernel_hist(data, np.empty(0), np.zeros(3), np.zeros(1), g, h, 1, 1)
    assert got[0, 0, 0, 0] == 1.0
    assert got[0, 0, 0, 1] == 2.0 + 2.0 ** -30
    assert got[0, 0, 0, 2] == 3.0
    # and g is rounded to float32 *before* summing (the documented input type)
    g = np.array([0.1, 0.2])
    data = make_binned(np.zeros((2, 1), np.uint8), [1], 2)
    got = kernel_hist(data, np.empty(0), np.zeros(2), np.zeros(1), g, np.ones(2), 1, 1)
    assert got[0, 0, 0, 0] == float(np.float32(0.1)) + float(np.float32(0.2))


@pytest.mark.parametrize("max_bins", [2, 3, 255])
def test_edge_cases_one_row_constant_missing_zero_gradients(max_bins):
    # one row, missing
    data = make_binned(np.array([[max_bins]], np.uint8), [1], max_bins)
    got = kernel_hist(data, np.empty(0), [0], [0], [0.0], [0.0], 1, 1)
    expected = np.zeros((1, 1, max_bins + 1, 3))
    expected[0, 0, max_bins, 2] = 1.0
    np.testing.assert_array_equal(got, expected)
    # constant feature (every row in bin max_bins - 1), all-zero gradients, weights
    X = np.full((5, 2), max_bins - 1, np.uint8)
    X[:, 1] = [0, max_bins, 0, max_bins, max_bins]
    data = make_binned(X, [max_bins, 1], max_bins)
    w = np.array([0.5, 1.0, 2.0, 4.0, 8.0])
    got = kernel_hist(data, np.empty(0), np.zeros(5), [0], np.zeros(5), 0.25 * w, 1, 2)
    assert np.all(got[..., 0] == 0.0)
    assert got[0, 0, max_bins - 1, 1] == 0.25 * w.sum()
    assert got[0, 1, 0, 1] == 0.25 * (w[0] + w[2])
    assert got[0, 1, max_bins, 1] == 0.25 * (w[1] + w[3] + w[4])
    assert got[0, 1, max_bins, 2] == 3.0


def test_rows_subset_and_skipped_nodes():
    X = np.array([[0, 1], [1, 1], [2, 0], [1, 3], [0, 3]], np.uint8)
    data = make_binned(X, [3, 2], 3)
    rows = np.array([1, 3, 4])
    node = np.array([0, 1, 0])
    g = np.array([1.0, 10.0, 100.0])
    h = np.array([2.0, 20.0, 200.0])
    got = kernel_hist(data, rows, node, [1, -1], g, h, 2, 2)
    expected = np.zeros((2, 2, 4, 3))
    expected[1, 0, 1] = [1.0, 2.0, 1.0]      # row 1 (node 0 -> slot 1)
    expected[1, 0, 0] = [100.0, 200.0, 1.0]  # row 4
    expected[1, 1, 1] = [1.0, 2.0, 1.0]
    expected[1, 1, 3] = [100.0, 200.0, 1.0]  # missing bin
    np.testing.assert_array_equal(got, expected)   # slot 0 has no node: zeros


def test_rejects_inconsistent_lengths():
    data = make_binned(np.zeros((3, 1), np.uint8), [1], 2)
    with pytest.raises(ValueError):
        kernel_hist(data, np.empty(0), np.zeros(2), [0], np.zeros(2), np.zeros(2), 1, 1)
    with pytest.raises(ValueError):
        kernel_hist(data, [0, 1], np.zeros(2), [0], np.zeros(3), np.zeros(3), 1, 1)
    with pytest.raises(ValueError):
        kernel_hist(data, np.empty(0), np.zeros(3), [1], np.zeros(3), np.zeros(3), 1, 1)


@pytest.mark.parametrize("n_channels", [2, 3])
def test_wide_histograms_interleave_slots_with_the_same_sums(n_channels):
    """Slots whose histogram exceeds the grouping threshold (here 20 features x 256 bins)
    are built interleaved, row by row; narrow ones slot by slot. Both give the reference
    sums, whatever the threads."""
    rng = np.random.default_rng(5)
    n = 3000
    for n_bins_used in (255, 3):
        X = rng.integers(0, n_bins_used, (n, 20)).astype(np.uint8)
        X[rng.random((n, 20)) < 0.05] = 255
        data = make_binned(X, [n_bins_used] * 20, 255)
        node = rng.integers(0, 6, n).astype(np.int32)
        slot = np.array([0, 1, -1, 2, 3, 4], np.int32)
        g, h = rng.normal(size=n), rng.random(n)
        rows = np.empty(0, np.int32)
        want = ref.build_histograms(data.X_rows, rows, node, slot, g, h, 5, data.n_bins)
        got = kernel_hist(data, rows, node, slot, g, h, 5, 1, n_channels=n_channels)
        assert_hist_close(got, want[..., :n_channels], g, h)
        for n_threads in (2, 3):
            np.testing.assert_array_equal(
                kernel_hist(data, rows, node, slot, g, h, 5, n_threads, n_channels=n_channels),
                got)


@KERNEL_SETTINGS
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(0, 4), n_carried=st.integers(0, 3),
       width=st.sampled_from([(1, 2), (5, 3), (3000, 2), (9000, 3)]),
       n_threads=st.integers(1, 3))
def test_subtract_siblings_matches_numpy(seed, m, n_carried, width, n_threads):
    """Each larger child is its parent minus the smaller child, each carried node a copy of
    its slot, bit for bit (slots of up to 27,000 values: several blocks each)."""
    rng = np.random.default_rng(seed)
    n_parents = 5
    parents = rng.normal(size=(n_parents,) + width) * 10.0 ** rng.integers(-3, 4)
    parent_slots = rng.integers(0, n_parents, m).astype(np.int32)
    carried = rng.integers(0, n_parents, n_carried).astype(np.int32)
    children = np.full((2 * m + n_carried + 1,) + width, np.nan)
    children[:m] = rng.normal(size=(m,) + width)
    expected = children.copy()
    for j, s in enumerate(parent_slots):
        expected[m + j] = parents[s] - children[j]
    for j, s in enumerate(carried):
        expected[2 * m + j] = parents[s]
    _histogram.subtract_siblings(parents, parent_slots, carried, children, n_threads)
    np.testing.assert_array_equal(children.view(np.uint64), expected.view(np.uint64))


def test_subtract_siblings_refuses_bad_slots():
    parents = np.zeros((2, 4, 2))
    children = np.zeros((3, 4, 2))
    one = np.array([0], np.int32)
    none = np.empty(0, np.int32)
    with pytest.raises(ValueError, match="parent slot"):
        _histogram.subtract_siblings(parents, np.array([2], np.int32), none, children, 1)
    with pytest.raises(ValueError, match="carried slot"):
        _histogram.subtract_siblings(parents, one, np.array([-1], np.int32), children, 1)
    with pytest.raises(ValueError, match="children must have"):
        _histogram.subtract_siblings(parents, one, one, children[:2], 1)
    with pytest.raises(ValueError, match="children must have"):
        _histogram.subtract_siblings(parents, one, none, np.zeros((3, 4, 3)), 1)
