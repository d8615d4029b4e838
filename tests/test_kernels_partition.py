"""Differential tests of the row-partition kernels against explicit per-row loops."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from boostlib._kernels import _partition
from reference import kernels as ref
from reference.strategies import KERNEL_SETTINGS, binned_data, make_binned, random_tree


@st.composite
def fitted_rows(draw, data):
    """Sorted, unique row ids (never empty), like a sampler's output, or every row."""
    if draw(st.booleans()):
        return np.arange(data.n_rows, dtype=np.int32)
    keep = draw(hnp.arrays(np.bool_, data.n_rows))
    rows = np.flatnonzero(keep).astype(np.int32)
    return rows if rows.size else np.array([data.n_rows - 1], np.int32)


@st.composite
def level_case(draw):
    """A depthwise level: nodes ``0..n_nodes-1``, some of which are split into fresh child
    ids; each fitted row sits in one of the nodes."""
    data = draw(binned_data(max_rows=80, max_features=3))
    rows = draw(fitted_rows(data))
    n_old = draw(st.integers(1, 5))
    split = draw(hnp.arrays(np.bool_, n_old))
    n_nodes = n_old + 2 * int(split.sum())
    feature = np.full(n_nodes, -1, np.int32)
    split_bin = np.zeros(n_nodes, np.int32)
    nan_right = np.zeros(n_nodes, np.uint8)
    left = np.full(n_nodes, -1, np.int32)
    right = np.full(n_nodes, -1, np.int32)
    nxt = n_old
    for k in np.flatnonzero(split):
        f = draw(st.integers(0, data.n_features - 1))
        feature[k] = f
        split_bin[k] = draw(st.integers(0, int(data.nbnm[f]) - 1))
        nan_right[k] = draw(st.integers(0, 1))
        left[k], right[k] = nxt, nxt + 1
        nxt += 2
    node = draw(hnp.arrays(np.int32, rows.size, elements=st.integers(0, n_old - 1)))
    return data, rows, node, feature, split_bin, nan_right, left, right


@KERNEL_SETTINGS
@given(case=level_case(), n_threads=st.sampled_from([1, 2, 3]))
def test_apply_level_matches_loop(case, n_threads):
    data, rows, node, feature, split_bin, nan_right, left, right = case
    expected = ref.apply_level(data.X_rows, rows, node, feature, split_bin, nan_right, left,
                               right, data.missing_bin)
    got = node.copy()
    _partition.apply_level(data.X_binned, rows, got, feature, split_bin, nan_right, left, right,
                           data.missing_bin, n_threads)
    np.testing.assert_array_equal(got, expected)


@KERNEL_SETTINGS
@given(data=binned_data(max_rows=80, max_features=3), pick=st.data(),
       n_threads=st.sampled_from([1, 2, 3]))
def test_apply_level_oblivious_matches_loop(data, pick, n_threads):
    rows = pick.draw(fitted_rows(data))
    level = pick.draw(st.integers(0, 30))
    node = pick.draw(hnp.arrays(np.int32, rows.size,
                                elements=st.integers(0, (1 << min(level, 30)) - 1)))
    f = pick.draw(st.integers(0, data.n_features - 1))
    b = pick.draw(st.integers(0, int(data.nbnm[f]) - 1))
    d = pick.draw(st.integers(0, 1))
    expected = ref.apply_level_oblivious(data.X_binned, rows, node, f, b, d, level,
                                         data.missing_bin)
    got = node.copy()
    _partition.apply_level_oblivious(data.X_binned, rows, got, f, b, d, level,
                                     data.missing_bin, n_threads)
    np.testing.assert_array_equal(got, expected)


def test_apply_level_oblivious_builds_leaf_index_bits():
    """Three levels: leaf = sum right_l << l; missing follows nan_right."""
    X = np.array([[0, 1, 3], [2, 0, 1], [3, 3, 0], [1, 2, 3]], np.uint8)   # 3 == missing
    data = make_binned(X, [3, 3, 3], 3)
    rows = np.arange(4, dtype=np.int32)
    node = np.zeros(4, np.int32)
    splits = [(0, 0, 1), (1, 1, 0), (2, 0, 1)]
    for level, (f, b, d) in enumerate(splits):
        _partition.apply_level_oblivious(data.X_binned, rows, node, f, b, d, level, 3, 2)
    # row 0: f0=0 left, f1=1 left, f2 missing -> right(1): 0b100
    # row 1: f0=2 right, f1=0 left, f2=1 right: 0b101
    # row 2: f0 missing -> right, f1 missing -> left, f2=0 left: 0b001
    # row 3: f0=1 right, f1=2 right, f2 missing -> right: 0b111
    np.testing.assert_array_equal(node, [4, 5, 1, 7])


def test_apply_level_with_rows_subset_and_unsplit_nodes():
    X = np.array([[0], [1], [2], [1], [2]], np.uint8)      # 2 == missing
    data = make_binned(X, [2], 2)
    rows = np.array([1, 2, 4], np.int32)
    node = np.array([0, 0, 1], np.int32)
    # node 0 split at bin 0 with NaN left -> children 2, 3; node 1 not split
    feature = np.array([0, -1, -1, -1], np.int32)
    split_bin = np.zeros(4, np.int32)
    nan_right = np.zeros(4, np.uint8)
    left = np.array([2, -1, -1, -1], np.int32)
    right = np.array([3, -1, -1, -1], np.int32)
    _partition.apply_level(data.X_binned, rows, node, feature, split_bin, nan_right, left,
                           right, 2, 1)
    np.testing.assert_array_equal(node, [3, 2, 1])


@KERNEL_SETTINGS
@given(n=st.integers(0, 60), n_nodes=st.integers(1, 8), pick=st.data())
def test_node_sums_matches_reference(n, n_nodes, pick):
    node = pick.draw(hnp.arrays(np.int32, n, elements=st.integers(0, n_nodes - 1)))
    fl = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)
    g = pick.draw(hnp.arrays(np.float64, n, elements=st.floats(-1e6, 1e6, **fl)))
    h = pick.draw(hnp.arrays(np.float64, n, elements=st.floats(0, 1e6, **fl)))
    out = np.full((n_nodes, 3), np.nan)
    _partition.node_sums(node, g, h, out)
    expected = ref.node_sums(node, g, h, n_nodes)
    np.testing.assert_array_equal(out[:, 2], expected[:, 2])
    atol = 1e-13 * (np.abs(g).sum() + np.abs(h).sum()) + 1e-300
    np.testing.assert_allclose(out[:, :2], expected[:, :2], rtol=1e-12, atol=atol)


def test_node_sums_rejects_bad_node_ids():
    with pytest.raises(ValueError):
        _partition.node_sums(np.array([0, 3], np.int32), np.zeros(2), np.zeros(2),
                             np.empty((3, 3)))


@KERNEL_SETTINGS
@given(n=st.integers(0, 40), l2=st.sampled_from([0.0, 1e-300, 1.0, 3.5]), pick=st.data())
def test_leaf_values_match_reference(n, l2, pick):
    """Bit for bit, zero and negative denominators, empty leaves, NaN and infinite sums
    included."""
    sums = st.one_of(st.floats(-1e6, 1e6), st.sampled_from([0.0, -0.0, -1.0, -l2, np.nan,
                                                             np.inf, -np.inf, 1e308]))
    G = pick.draw(hnp.arrays(np.float64, n, elements=sums))
    H = pick.draw(hnp.arrays(np.float64, n, elements=sums))
    count = pick.draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0, 7.0])))
    out = np.full(n, np.nan)
    _partition.leaf_values(G, H, count, l2, out)
    with np.errstate(all="ignore"):
        expected = ref.leaf_values(G, H, count, l2)
    assert np.array_equal(out.view(np.uint64), expected.view(np.uint64))


def test_leaf_values_rejects_unequal_lengths():
    with pytest.raises(ValueError, match="same length"):
        _partition.leaf_values(np.zeros(2), np.zeros(2), np.zeros(3), 1.0, np.empty(2))


@KERNEL_SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n_splits=st.integers(0, 30), pick=st.data())
def test_subtree_sums_matches_reference(seed, n_splits, pick):
    # ids permuted: children may come before their parents
    left, right = random_tree(np.random.default_rng(seed), n_splits, shuffle=True)
    fl = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)
    values = pick.draw(hnp.arrays(np.float64, left.size, elements=st.floats(-1e6, 1e6, **fl)))
    total = np.where(left < 0, values, 0.0)
    _partition.subtree_sums(left, right, total)
    # each sum is its children's, as the recursion adds them: the same floats
    np.testing.assert_array_equal(total, ref.subtree_sums(left, right, values))


def test_subtree_sums_rejects_what_is_not_a_tree():
    one = np.zeros(1)
    _partition.subtree_sums(np.array([-1], np.int32), np.array([-1], np.int32), one)
    assert one[0] == 0.0            # a lone leaf keeps its value
    for left, right in (([1, -1], [5, -1]),         # a child out of range
                        ([1, 0, -1], [2, 2, -1]),   # a cycle back to the root
                        ([1, 2, -1], [2, 2, -1])):  # a node reached twice
        with pytest.raises(ValueError, match="not the nodes of a tree"):
            _partition.subtree_sums(np.array(left, np.int32), np.array(right, np.int32),
                                    np.zeros(len(left)))
    with pytest.raises(ValueError, match="one entry per node"):
        _partition.subtree_sums(np.array([-1], np.int32), np.array([-1], np.int32),
                                np.zeros(2))


# --------------------------------------------------------------------------------------------
# row lists: the positions of rows whose new node has a histogram slot, by fixed blocks
# --------------------------------------------------------------------------------------------

BLOCK = _partition.LIST_BLOCK_ROWS


def _check_list(listed, counts, expected_listed, expected_counts):
    np.testing.assert_array_equal(counts, expected_counts)
    for b, c in enumerate(expected_counts):
        np.testing.assert_array_equal(listed[b * BLOCK:b * BLOCK + c],
                                      expected_listed[b * BLOCK:b * BLOCK + c])


def _list_buffers(n):
    return np.full(n, -7, np.int32), np.full(-(-n // BLOCK), -7, np.int32)


@KERNEL_SETTINGS
@given(case=level_case(), n_threads=st.sampled_from([1, 2, 3]), pick=st.data())
def test_apply_level_lists_rows_of_slotted_nodes(case, n_threads, pick):
    data, rows, node, feature, split_bin, nan_right, left, right = case
    slot = pick.draw(hnp.arrays(np.int32, feature.size, elements=st.integers(-1, 3)))
    expected = ref.apply_level(data.X_rows, rows, node, feature, split_bin, nan_right, left,
                               right, data.missing_bin)
    got = node.copy()
    listed, counts = _list_buffers(rows.size)
    _partition.apply_level(data.X_binned, rows, got, feature, split_bin, nan_right, left, right,
                           data.missing_bin, n_threads, slot, listed, counts)
    np.testing.assert_array_equal(got, expected)
    _check_list(listed, counts, *ref.row_list(expected, slot, BLOCK))


@KERNEL_SETTINGS
@given(data=binned_data(max_rows=80, max_features=3), pick=st.data(),
       n_threads=st.sampled_from([1, 2, 3]))
def test_apply_level_oblivious_lists_rows_of_slotted_leaves(data, pick, n_threads):
    rows = pick.draw(fitted_rows(data))
    level = pick.draw(st.integers(0, 4))
    node = pick.draw(hnp.arrays(np.int32, rows.size, elements=st.integers(0, (1 << level) - 1)))
    f = pick.draw(st.integers(0, data.n_features - 1))
    b = pick.draw(st.integers(0, int(data.nbnm[f]) - 1))
    d = pick.draw(st.integers(0, 1))
    slot = pick.draw(hnp.arrays(np.int32, 2 << level, elements=st.integers(-1, 3)))
    expected = ref.apply_level_oblivious(data.X_binned, rows, node, f, b, d, level,
                                         data.missing_bin)
    got = node.copy()
    listed, counts = _list_buffers(rows.size)
    _partition.apply_level_oblivious(data.X_binned, rows, got, f, b, d, level,
                                     data.missing_bin, n_threads, slot, listed, counts)
    np.testing.assert_array_equal(got, expected)
    _check_list(listed, counts, *ref.row_list(expected, slot, BLOCK))


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_row_lists_span_several_blocks(n_threads):
    """Blocks of LIST_BLOCK rows, a partial last block, an empty block and a full one."""
    rng = np.random.default_rng(5)
    n = 3 * BLOCK + 17
    X = rng.integers(0, 4, size=(n, 2)).astype(np.uint8)
    X[BLOCK:2 * BLOCK, 0] = 0              # block 1: every row goes left (no slot)
    X[2 * BLOCK:3 * BLOCK, 0] = 3          # block 2: every row goes right (slot 0)
    data = make_binned(X, [4, 4], 4)
    rows = np.arange(n, dtype=np.int32)
    feature = np.array([0, -1, -1], np.int32)
    split_bin = np.array([1, 0, 0], np.int32)
    nan_right = np.zeros(3, np.uint8)
    left, right = np.array([1, -1, -1], np.int32), np.array([2, -1, -1], np.int32)
    slot = np.array([-1, -1, 0], np.int32)
    node = np.zeros(n, np.int32)
    listed, counts = _list_buffers(n)
    _partition.apply_level(data.X_binned, rows, node, feature, split_bin, nan_right, left, right,
                           4, n_threads, slot, listed, counts)
    exp_listed, exp_counts = ref.row_list(node, slot, BLOCK)
    assert exp_counts[1] == 0 and exp_counts[2] == BLOCK and 0 < exp_counts[3] <= 17
    _check_list(listed, counts, exp_listed, exp_counts)
    node = np.zeros(n, np.int32)
    listed, counts = _list_buffers(n)
    _partition.apply_level_oblivious(data.X_binned, rows, node, 0, 1, 0, 0, 4, n_threads,
                                     np.array([-1, 0], np.int32), listed, counts)
    _check_list(listed, counts, *ref.row_list(node, np.array([-1, 0]), BLOCK))


def test_row_list_arguments_are_checked():
    data = make_binned(np.zeros((5, 1), np.uint8), [1], 1)
    rows = np.arange(5, dtype=np.int32)
    tree = (np.array([0, -1, -1], np.int32), np.zeros(3, np.int32), np.zeros(3, np.uint8),
            np.array([1, -1, -1], np.int32), np.array([2, -1, -1], np.int32))
    slot = np.array([-1, 0, -1], np.int32)
    listed, counts = _list_buffers(5)
    bad = [dict(slot=slot, listed=listed, counts=None),                 # not together
           dict(slot=slot[:2], listed=listed, counts=counts),           # slots per node
           dict(slot=slot, listed=listed[:4], counts=counts),           # one per row
           dict(slot=slot, listed=listed, counts=np.zeros(2, np.int32))]   # one per block
    for a in bad:
        with pytest.raises(ValueError):
            _partition.apply_level(data.X_binned, rows, np.zeros(5, np.int32), *tree, 1, 1,
                                   a["slot"], a["listed"], a["counts"])
    with pytest.raises(ValueError):
        _partition.apply_level_oblivious(data.X_binned, rows, np.zeros(5, np.int32), 0, 0, 0,
                                         1, 1, 1, np.zeros(2, np.int32), listed, counts)
