"""Differential tests of the prediction kernels (and Ensemble) against explicit traversal."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from boostlib._kernels import _predictor
from boostlib.engine.binning import BinMapper
from boostlib.engine.ensemble import Ensemble
from boostlib.engine.trees import DepthwiseTree, ObliviousTree
from reference import kernels as ref
from reference.strategies import KERNEL_SETTINGS, binned_data

FL = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def oblivious_tree(draw, nbnm, max_depth=6):
    depth = draw(st.integers(0, max_depth))
    feature = [draw(st.integers(0, len(nbnm) - 1)) for _ in range(depth)]
    bins = [draw(st.integers(0, int(nbnm[f]) - 1)) for f in feature]
    nan_right = [draw(st.integers(0, 1)) for _ in range(depth)]
    value = draw(hnp.arrays(np.float64, 1 << depth, elements=st.floats(-100, 100, **FL)))
    return ObliviousTree(feature=np.array(feature, np.int32), bin=np.array(bins, np.int32),
                         nan_right=np.array(nan_right, np.uint8), gain=np.zeros(depth),
                         value=value)


@st.composite
def depthwise_tree(draw, nbnm, max_nodes=15):
    """A random binary tree whose children always have larger ids than their parent."""
    feature, bins, nanr, left, right = [-1], [0], [0], [-1], [-1]
    frontier = [0]
    while frontier and len(feature) + 2 <= max_nodes and draw(st.integers(0, 3)) > 0:
        k = frontier.pop(draw(st.integers(0, len(frontier) - 1)))
        f = draw(st.integers(0, len(nbnm) - 1))
        feature[k], bins[k], nanr[k] = f, draw(st.integers(0, int(nbnm[f]) - 1)), draw(
            st.integers(0, 1))
        left[k], right[k] = len(feature), len(feature) + 1
        for _ in range(2):
            frontier.append(len(feature))
            feature.append(-1), bins.append(0), nanr.append(0), left.append(-1)
            right.append(-1)
    n = len(feature)
    value = draw(hnp.arrays(np.float64, n, elements=st.floats(-100, 100, **FL)))
    return DepthwiseTree(feature=np.array(feature, np.int32), bin=np.array(bins, np.int32),
                         nan_right=np.array(nanr, np.uint8), left=np.array(left, np.int32),
                         right=np.array(right, np.int32), gain=np.zeros(n), value=value)


def random_tree(rng, policy, nbnm, size=4):
    """A seeded random tree (oblivious of depth ``size``, or depthwise with ``size``
    splits)."""
    def split():
        f = int(rng.integers(len(nbnm)))
        return f, int(rng.integers(nbnm[f])), int(rng.integers(2))

    if policy == "symmetric":
        fs, bs, ds = zip(*[split() for _ in range(size)]) if size else ((), (), ())
        return ObliviousTree(feature=np.array(fs, np.int32), bin=np.array(bs, np.int32),
                             nan_right=np.array(ds, np.uint8), gain=np.zeros(size),
                             value=rng.normal(size=1 << size))
    n = 1 + 2 * size
    feature, bins, nanr = np.full(n, -1, np.int32), np.zeros(n, np.int32), np.zeros(n, np.uint8)
    left, right = np.full(n, -1, np.int32), np.full(n, -1, np.int32)
    leaves = [0]
    for j in range(size):
        k = leaves.pop(int(rng.integers(len(leaves))))
        feature[k], bins[k], nanr[k] = split()
        left[k], right[k] = 1 + 2 * j, 2 + 2 * j
        leaves += [1 + 2 * j, 2 + 2 * j]
    return DepthwiseTree(feature=feature, bin=bins, nan_right=nanr, left=left, right=right,
                         gain=np.zeros(n), value=rng.normal(size=n))


def _ensemble(policy, missing_bin, bias=0.0):
    bm = BinMapper(max_bins=missing_bin)
    return Ensemble(bm, policy, bias=bias)


@KERNEL_SETTINGS
@given(data=binned_data(max_rows=60), policy=st.sampled_from(["symmetric", "depthwise"]),
       pick=st.data(), n_threads=st.sampled_from([1, 2]))
def test_add_trees_binned_matches_traversal(data, policy, pick, n_threads):
    make = oblivious_tree if policy == "symmetric" else depthwise_tree
    trees = pick.draw(st.lists(make(data.nbnm), min_size=0, max_size=4))
    coef = pick.draw(hnp.arrays(np.float64, len(trees), elements=st.floats(-2, 2, **FL)))
    start = pick.draw(hnp.arrays(np.float64, data.n_rows, elements=st.floats(-5, 5, **FL)))
    ens = _ensemble(policy, data.missing_bin)
    out = start.copy()
    ens.add_trees_binned(data.X_binned, out, trees, coef, n_threads)   # out += ...
    expected = start + ref.predict_trees_binned(data.X_binned, trees, coef, data.missing_bin)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
@pytest.mark.parametrize("max_bins", [2, 3, 255])
def test_prediction_across_row_blocks(policy, max_bins):
    """More rows than one block of 512, several threads; bias and coefficients."""
    rng = np.random.default_rng(max_bins)
    n_rows = 1300
    nbnm = np.array([max_bins, 1, max(1, max_bins // 2)], np.int32)
    X = np.stack([rng.integers(0, nb, n_rows) for nb in nbnm])
    X[rng.random(X.shape) < 0.15] = max_bins
    X = np.ascontiguousarray(X.astype(np.uint8))
    trees = [random_tree(rng, policy, nbnm, size) for size in (0, 1, 3, 5, 6)]
    coef = rng.normal(size=5)
    ens = _ensemble(policy, max_bins, bias=0.75)
    for t, c in zip(trees, coef):
        ens.add(t, c)
    expected = ref.predict_trees_binned(X, trees, coef, max_bins, bias=0.75)
    for n_threads in (1, 2, 3):
        np.testing.assert_allclose(ens.predict_binned(X, n_threads), expected, rtol=1e-12,
                                   atol=1e-12)


def test_oblivious_leaf_index_is_sum_of_right_bits():
    # depth 3; leaf values = their own index, so the prediction *is* the leaf index
    tree = ObliviousTree(feature=np.array([0, 1, 0], np.int32), bin=np.array([0, 1, 1], np.int32),
                         nan_right=np.array([1, 0, 1], np.uint8), gain=np.zeros(3),
                         value=np.arange(8.0))
    X = np.array([[0, 0], [1, 2], [2, 2], [3, 3], [3, 0]], np.uint8).T   # 3 == missing
    X = np.ascontiguousarray(X)
    ens = _ensemble("symmetric", 3)
    ens.add(tree, 1.0)
    # row (0,0): 0|0|0 = 0; (1,2): 1|2|0 = 3; (2,2): 1|2|4 = 7;
    # (nan,nan): 1|0|4 = 5; (nan,0): 1|0|4 = 5
    np.testing.assert_array_equal(ens.predict_binned(X), [0, 3, 7, 5, 5])


def test_depthwise_nan_follows_nan_right():
    tree = DepthwiseTree(feature=np.array([0, 1, -1, -1, -1], np.int32),
                         bin=np.array([1, 0, 0, 0, 0], np.int32),
                         nan_right=np.array([0, 1, 0, 0, 0], np.uint8),
                         left=np.array([1, 3, -1, -1, -1], np.int32),
                         right=np.array([2, 4, -1, -1, -1], np.int32),
                         gain=np.zeros(5), value=np.array([9.0, 9.0, 2.0, 3.0, 4.0]))
    X = np.ascontiguousarray(np.array([[1, 0], [2, 0], [4, 0], [0, 4], [4, 4]], np.uint8).T)
    ens = _ensemble("depthwise", 4)
    ens.add(tree, 1.0)
    # NaN in feature 0 goes left (nan_right=0), NaN in feature 1 goes right
    np.testing.assert_array_equal(ens.predict_binned(X), [3.0, 2.0, 3.0, 4.0, 4.0])


@st.composite
def raw_problem(draw):
    """A raw float matrix (with NaN), a BinMapper fitted on it, and rows to predict that
    include unseen values, exact borders and NaN."""
    max_bins = draw(st.sampled_from([2, 3, 4, 16, 255]))
    n_rows = draw(st.integers(1, 60))
    n_features = draw(st.integers(1, 3))
    X = draw(hnp.arrays(np.float64, (n_rows, n_features),
                        elements=st.one_of(st.floats(-1e3, 1e3, **FL),
                                           st.sampled_from([0.0, 1.0, 2.5, np.nan]))))
    bm = BinMapper(max_bins=max_bins).fit(X)
    extra = [np.nan, -1e9, 1e9, 0.0]
    for b in bm.borders_:
        extra += list(b[:20]) + list(np.nextafter(b[:20], np.inf))
    n_new = draw(st.integers(1, 40))
    idx = draw(hnp.arrays(np.int64, (n_new, n_features), elements=st.integers(0, len(extra) - 1)))
    X_new = np.vstack([X, np.asarray(extra)[idx]])
    return bm, X_new


@KERNEL_SETTINGS
@given(problem=raw_problem(), policy=st.sampled_from(["symmetric", "depthwise"]),
       pick=st.data(), bias=st.floats(-3, 3, **FL))
def test_predict_raw_matches_threshold_traversal(problem, policy, pick, bias):
    """Ensemble.predict_raw on raw floats == traversal with x <= BinMapper.threshold going
    left and NaN following nan_right."""
    bm, X = problem
    make = oblivious_tree if policy == "symmetric" else depthwise_tree
    trees = pick.draw(st.lists(make(bm.n_bins_nonmissing_), min_size=1, max_size=3))
    coef = pick.draw(hnp.arrays(np.float64, len(trees), elements=st.floats(-2, 2, **FL)))
    ens = Ensemble(bm, policy, bias=bias)
    for t, c in zip(trees, coef):
        ens.add(t, c)
    expected = ref.predict_trees_raw(X, trees, coef, bm.threshold, bias=bias)
    np.testing.assert_allclose(ens.predict_raw(X), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ens.predict_raw(X, n_threads=2), expected, rtol=1e-12,
                               atol=1e-12)


def test_empty_ensemble_predicts_bias():
    bm = BinMapper(max_bins=3).fit(np.array([[0.0], [1.0]]))
    ens = Ensemble(bm, "symmetric", bias=-1.5)
    np.testing.assert_array_equal(ens.predict_raw(np.array([[0.0], [np.nan]])), [-1.5, -1.5])


@KERNEL_SETTINGS
@given(n_total=st.integers(1, 80), pick=st.data(), coef=st.floats(-3, 3, **FL),
       n_threads=st.sampled_from([1, 2]))
def test_add_leaf_values_matches_loop(n_total, pick, coef, n_threads):
    keep = pick.draw(hnp.arrays(np.bool_, n_total))
    rows = np.flatnonzero(keep).astype(np.int32)
    n_nodes = pick.draw(st.integers(1, 7))
    node = pick.draw(hnp.arrays(np.int32, rows.size, elements=st.integers(0, n_nodes - 1)))
    value = pick.draw(hnp.arrays(np.float64, n_nodes, elements=st.floats(-10, 10, **FL)))
    raw = pick.draw(hnp.arrays(np.float64, n_total, elements=st.floats(-10, 10, **FL)))
    expected = raw.copy()
    for p in range(rows.size):
        expected[rows[p]] += coef * value[node[p]]
    got = raw.copy()
    _predictor.add_leaf_values(got, rows, node, value, coef, n_threads)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_add_leaf_values_rejects_bad_ids_before_writing(n_threads):
    raw = np.arange(6.0)
    rows, node, value = np.arange(6, dtype=np.int32), np.zeros(6, np.int32), np.ones(2)
    for bad_rows, bad_node in ((rows, np.array([0, 0, 0, 0, 0, 2], np.int32)),
                               (np.array([0, 1, 2, 3, 4, 6], np.int32), node),
                               (rows, np.array([0, 0, -1, 0, 0, 0], np.int32))):
        with pytest.raises(ValueError, match="out of range"):
            _predictor.add_leaf_values(raw, bad_rows, bad_node, value, 1.0, n_threads)
        np.testing.assert_array_equal(raw, np.arange(6.0))     # untouched


def test_malformed_trees_are_rejected():
    X = np.zeros((1, 4), np.uint8)
    out = np.zeros(4)
    i32 = lambda *v: np.array(v, np.int32)  # noqa: E731
    with pytest.raises(ValueError):   # depth 1 needs 2 leaves
        _predictor.predict_oblivious(X, i32(0), i32(0), np.zeros(1, np.uint8), i32(0, 1),
                                     np.zeros(3), i32(0, 3), np.ones(1), 2, out,
                                     np.empty(4, np.int32), 1)
    with pytest.raises(ValueError):   # child id not after its parent
        _predictor.predict_depthwise(X, i32(0, -1, -1), i32(0, 0, 0), np.zeros(3, np.uint8),
                                     i32(0, -1, -1), i32(2, -1, -1), np.zeros(3), i32(0, 3),
                                     np.ones(1), 2, out, 1)
    with pytest.raises(ValueError):   # split feature out of range
        _predictor.predict_depthwise(X, i32(5, -1, -1), i32(0, 0, 0), np.zeros(3, np.uint8),
                                     i32(1, -1, -1), i32(2, -1, -1), np.zeros(3), i32(0, 3),
                                     np.ones(1), 2, out, 1)


def missing_of(data):
    """Every feature's missing bin in ``data.X_rows`` (the walks take one per feature)."""
    return np.full(data.n_features, data.missing_bin, np.int32)


@KERNEL_SETTINGS
@given(binned_data(max_rows=60, max_features=4), st.data(), st.sampled_from([1, 2]))
def test_leaves_depthwise_matches_traversal(data, draw, n_threads):
    # The row-major leaf kernel the context uses after fitting a depthwise tree on a sample.
    from boostlib._kernels import _partition

    tree = draw.draw(depthwise_tree(data.nbnm))
    out = np.empty(data.n_rows, np.int32)
    _partition.leaves_depthwise(data.X_rows, tree.feature, tree.bin, tree.nan_right,
                                tree.left, tree.right, missing_of(data), out, n_threads)
    expected = [ref.depthwise_leaf_binned(data.X_rows[i], tree.feature, tree.bin,
                                          tree.nan_right, tree.left, tree.right,
                                          data.missing_bin) for i in range(data.n_rows)]
    np.testing.assert_array_equal(out, expected)


@KERNEL_SETTINGS
@given(binned_data(max_rows=80, max_features=4), st.data(), st.sampled_from([1, 2]))
def test_leaves_depthwise_walks_only_unknown_rows(data, draw, n_threads):
    # With known (rows, leaves) the known rows get the given leaves as they are (here any
    # node id, not necessarily the true leaf, to see they are copied) and only the other rows
    # are walked.
    from boostlib._kernels import _partition

    tree = draw.draw(depthwise_tree(data.nbnm))
    keep = draw.draw(hnp.arrays(np.bool_, data.n_rows))
    rows = np.flatnonzero(keep).astype(np.int32)
    given_leaves = draw.draw(hnp.arrays(np.int32, rows.size,
                                        elements=st.integers(0, tree.feature.size - 1)))
    out = np.full(data.n_rows, -7, np.int32)
    _partition.leaves_depthwise(data.X_rows, tree.feature, tree.bin, tree.nan_right,
                                tree.left, tree.right, missing_of(data), out, n_threads,
                                rows, given_leaves)
    expected = np.array([ref.depthwise_leaf_binned(data.X_rows[i], tree.feature, tree.bin,
                                                   tree.nan_right, tree.left, tree.right,
                                                   data.missing_bin)
                         for i in range(data.n_rows)], dtype=np.int32)
    expected[rows] = given_leaves
    np.testing.assert_array_equal(out, expected)


@KERNEL_SETTINGS
@given(binned_data(max_rows=80, max_features=4), st.data(), st.sampled_from([1, 2]),
       st.booleans())
def test_add_depthwise_adds_the_leaf_values_bit_identically(data, draw, n_threads, with_known):
    # The walk that adds each row's value as it lands (sampled depthwise fits update the
    # training scores with it): the same raw scores, bit for bit, as adding the values of the
    # reference leaves (the known rows' given leaves) one row at a time.
    from boostlib._kernels import _partition

    tree = draw.draw(depthwise_tree(data.nbnm))
    value = draw.draw(hnp.arrays(np.float64, tree.feature.size,
                                 elements=st.floats(-1e3, 1e3, allow_subnormal=True)))
    coef = draw.draw(st.floats(-2.0, 2.0))
    raw0 = draw.draw(hnp.arrays(np.float64, data.n_rows, elements=st.floats(-1e3, 1e3)))
    leaves = np.array([ref.depthwise_leaf_binned(data.X_rows[i], tree.feature, tree.bin,
                                                 tree.nan_right, tree.left, tree.right,
                                                 data.missing_bin)
                       for i in range(data.n_rows)], dtype=np.int32)
    known = (None, None)
    if with_known:
        rows = np.flatnonzero(draw.draw(hnp.arrays(np.bool_, data.n_rows))).astype(np.int32)
        given = draw.draw(hnp.arrays(np.int32, rows.size,
                                     elements=st.integers(0, tree.feature.size - 1)))
        leaves[rows] = given
        known = (rows, given)
    expected = raw0.copy()
    for i in range(data.n_rows):
        expected[i] += coef * value[leaves[i]]
    raw = raw0.copy()
    _partition.add_depthwise(data.X_rows, tree.feature, tree.bin, tree.nan_right, tree.left,
                             tree.right, missing_of(data), value, coef, raw, n_threads,
                             *known)
    assert raw.tobytes() == expected.tobytes()


def test_add_depthwise_rejects_bad_arguments():
    from boostlib._kernels import _partition

    X = np.zeros((3, 2), np.uint8)
    tree = (np.array([0, -1, -1], np.int32), np.zeros(3, np.int32), np.zeros(3, np.uint8),
            np.array([1, -1, -1], np.int32), np.array([2, -1, -1], np.int32))
    miss = np.full(X.shape[1], 255, np.int32)
    with pytest.raises(ValueError, match="one entry per row"):
        _partition.add_depthwise(X, *tree, miss, np.zeros(3), 1.0, np.zeros(2), 1)
    with pytest.raises(ValueError, match="one entry per node"):
        _partition.add_depthwise(X, *tree, miss, np.zeros(2), 1.0, np.zeros(3), 1)
    with pytest.raises(ValueError, match="leaf id"):
        _partition.add_depthwise(X, *tree, miss, np.zeros(3), 1.0, np.zeros(3), 1,
                                 np.array([0], np.int32), np.array([3], np.int32))


def test_leaves_depthwise_rejects_bad_known_rows():
    from boostlib._kernels import _partition

    X = np.zeros((3, 2), np.uint8)
    tree = (np.array([0, -1, -1], np.int32), np.zeros(3, np.int32), np.zeros(3, np.uint8),
            np.array([1, -1, -1], np.int32), np.array([2, -1, -1], np.int32))
    out = np.empty(3, np.int32)
    rows = np.array([0, 2], np.int32)
    miss = np.full(X.shape[1], 255, np.int32)
    with pytest.raises(ValueError, match="go together"):
        _partition.leaves_depthwise(X, *tree, miss, out, 1, rows, None)
    with pytest.raises(ValueError, match="go together"):
        _partition.leaves_depthwise(X, *tree, miss, out, 1, rows, np.zeros(1, np.int32))
    with pytest.raises(ValueError, match="row id"):
        _partition.leaves_depthwise(X, *tree, miss, out, 1, np.array([0, 3], np.int32),
                                    np.zeros(2, np.int32))
    with pytest.raises(ValueError, match="leaf id"):
        _partition.leaves_depthwise(X, *tree, miss, out, 1, rows, np.array([1, 3], np.int32))


def test_leaves_depthwise_rejects_malformed_trees():
    from boostlib._kernels import _partition

    X = np.zeros((3, 2), np.uint8)
    one = np.zeros(1, np.int32)
    with pytest.raises(ValueError, match="invalid tree"):       # a child pointing back: cycle
        _partition.leaves_depthwise(X, np.zeros(3, np.int32), np.zeros(3, np.int32),
                                    np.zeros(3, np.uint8), np.array([1, 0, -1], np.int32),
                                    np.array([2, -1, -1], np.int32), np.full(2, 255, np.int32),
                                    np.empty(3, np.int32),
                                    1)
    with pytest.raises(ValueError, match="invalid tree"):       # feature out of range
        _partition.leaves_depthwise(X, np.array([5, -1, -1], np.int32), np.zeros(3, np.int32),
                                    np.zeros(3, np.uint8), np.array([1, -1, -1], np.int32),
                                    np.array([2, -1, -1], np.int32), np.full(2, 255, np.int32),
                                    np.empty(3, np.int32),
                                    1)
    with pytest.raises(ValueError, match="out must"):
        _partition.leaves_depthwise(X, one * -1, one, np.zeros(1, np.uint8), one - 1, one - 1,
                                    np.full(2, 255, np.int32), np.empty(2, np.int32), 1)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_leaves_depthwise_children_in_any_order(n_threads):
    """Children need only come after their parent: not consecutive, right before left, ids
    out of breadth-first order (the kernel renumbers them and maps the leaves back)."""
    from boostlib._kernels import _partition

    rng = np.random.default_rng(3)
    X = rng.integers(0, 6, size=(200, 2)).astype(np.uint8)     # 5 == missing
    i32 = lambda *v: np.array(v, np.int32)
    # node 0: f0 <= 2 ? node 3 : node 1;  node 1: f1 <= 1 ? node 5 : node 2; nodes 2, 3,
    # 4 (unreachable), 5 are leaves
    tree = (i32(0, 1, -1, -1, -1, -1), i32(2, 1, 0, 0, 0, 0), np.array([1, 0, 0, 0, 0, 0],
                                                                        np.uint8),
            i32(3, 5, -1, -1, -1, -1), i32(1, 2, -1, -1, -1, -1))
    out = np.empty(200, np.int32)
    _partition.leaves_depthwise(X, *tree, np.full(2, 5, np.int32), out, n_threads)
    expected = [ref.depthwise_leaf_binned(X[i], *tree, 5) for i in range(200)]
    np.testing.assert_array_equal(out, expected)
    assert set(out.tolist()) == {2, 3, 5}


def test_leaves_depthwise_rejects_a_child_with_two_parents():
    from boostlib._kernels import _partition

    i32 = lambda *v: np.array(v, np.int32)
    # node 2 is a child of both node 0 and node 1
    with pytest.raises(ValueError, match="invalid tree"):
        _partition.leaves_depthwise(np.zeros((3, 1), np.uint8), i32(0, 0, -1, -1),
                                    i32(0, 0, 0, 0), np.zeros(4, np.uint8), i32(1, 2, -1, -1),
                                    i32(2, 3, -1, -1), np.full(1, 255, np.int32),
                                    np.empty(3, np.int32), 1)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_predict_depthwise_children_in_any_order(n_threads):
    """The prediction walk renumbers every tree as the leaf walk does: children not
    consecutive, right before left, an unreachable node; 1100 rows (blocks of 512 and a
    partial group of 32); a single-leaf tree between two split ones."""
    rng = np.random.default_rng(11)
    n = 1100
    X = np.ascontiguousarray(rng.integers(0, 6, size=(2, n)).astype(np.uint8))   # 5: missing
    i32 = lambda *v: np.array(v, np.int32)
    odd = DepthwiseTree(feature=i32(0, 1, -1, -1, -1, -1), bin=i32(2, 1, 0, 0, 0, 0),
                        nan_right=np.array([1, 0, 0, 0, 0, 0], np.uint8),
                        left=i32(3, 5, -1, -1, -1, -1), right=i32(1, 2, -1, -1, -1, -1),
                        gain=np.zeros(6), value=np.array([9.0, 9.0, 1.5, -2.0, 100.0, 0.25]))
    leaf = DepthwiseTree(feature=i32(-1), bin=i32(0), nan_right=np.zeros(1, np.uint8),
                         left=i32(-1), right=i32(-1), gain=np.zeros(1), value=np.array([3.0]))
    trees, coef = [odd, leaf, odd], np.array([1.0, 0.5, -2.0])
    ens = _ensemble("depthwise", 5)
    out = np.zeros(n)
    ens.add_trees_binned(X, out, trees, coef, n_threads)
    expected = ref.predict_trees_binned(X, trees, coef, 5)
    np.testing.assert_array_equal(out, expected)
    # out = v - 2 v + 0.5 * 3 for the leaf values v of nodes 2, 3 and 5 (node 4 unreachable)
    assert set(out.tolist()) == {0.0, 3.5, 1.25}


@KERNEL_SETTINGS
@given(data=binned_data(min_rows=60, max_rows=700, max_features=6), pick=st.data(),
       n_threads=st.sampled_from([1, 2]))
def test_depthwise_walk_of_many_rows_matches_traversal(data, pick, n_threads):
    """Groups of 64 rows (the AVX2 build walks them 8 to a vector), the rows after the last
    whole group, blocks of 512, bins up to 255 and the missing bin, trees up to 20 splits:
    the same sums as explicit traversal, bit for bit."""
    trees = pick.draw(st.lists(depthwise_tree(data.nbnm, max_nodes=41), min_size=1,
                               max_size=4))
    coef = pick.draw(hnp.arrays(np.float64, len(trees), elements=st.floats(-2, 2, **FL)))
    ens = _ensemble("depthwise", data.missing_bin)
    out = np.zeros(data.n_rows)
    ens.add_trees_binned(data.X_binned, out, trees, coef, n_threads)
    np.testing.assert_array_equal(
        out, ref.predict_trees_binned(data.X_binned, trees, coef, data.missing_bin))


@pytest.mark.parametrize("n_rows", [1, 63, 64, 200, 1100])
def test_trees_with_categorical_splits_walk_among_numeric_ones(n_rows):
    """A tree with a categorical split takes the scalar walk between trees that take the
    vector one; every tree's rows land where explicit routing sends them."""
    rng = np.random.default_rng(n_rows)
    X = np.ascontiguousarray(rng.integers(0, 9, size=(3, n_rows)).astype(np.uint8))  # 8: NaN
    i32 = lambda *v: np.array(v, np.int32)
    numeric = dict(feature=i32(1, 2, -1, -1, -1), split_bin=i32(4, 1, 0, 0, 0),
                   nan_right=np.array([1, 0, 0, 0, 0], np.uint8), left=i32(1, 3, -1, -1, -1),
                   right=i32(2, 4, -1, -1, -1), value=np.array([0.0, 0.0, 1.0, 2.0, 4.0]))
    categorical = dict(feature=i32(0, -1, -1), split_bin=i32(0, 0, 0),
                       nan_right=np.array([2, 0, 0], np.uint8), left=i32(1, -1, -1),
                       right=i32(2, -1, -1), value=np.array([0.0, 8.0, 16.0]))
    cat_sets = np.zeros((1, 8), np.uint32)
    cat_sets[0, 0] = (1 << 1) | (1 << 3) | (1 << 7)      # bins 1, 3 and 7 go left
    parts = [numeric, categorical, numeric]
    arrays = {k: np.concatenate([p[k] for p in parts]) for k in numeric}
    tables = _predictor.walk_pack(3, node_offset=i32(0, 5, 8, 13), missing_bin=8,
                                  cat_sets=cat_sets, **arrays)
    assert tables["numeric"].tolist() == [1, 0, 1]
    coef = np.array([1.0, 0.5, -0.25])
    x0, x1, x2 = X.astype(np.int64)
    tree_numeric = np.where((x1 > 4) & (x1 != 8) | (x1 == 8), 1.0,
                            np.where((x2 > 1) & (x2 != 8), 4.0, 2.0))
    tree_categorical = np.where(np.isin(x0, [1, 3, 7]), 8.0, 16.0)
    want = 1.0 * tree_numeric + 0.5 * tree_categorical - 0.25 * tree_numeric
    for n_threads in (1, 2):
        got = np.zeros(n_rows)
        _predictor.predict_walk(X, coef=coef, out=got, n_threads=n_threads, **tables)
        np.testing.assert_array_equal(got, want)


def test_walk_tables_are_packed_once_for_matrices_of_their_width():
    """walk_pack + predict_walk is predict_depthwise; the tables refuse other widths."""
    rng = np.random.default_rng(5)
    feature = np.array([1, -1, 0, -1, -1], np.int32)
    split_bin = np.array([3, 0, 5, 0, 0], np.int32)
    nan_right = np.array([1, 0, 0, 0, 0], np.uint8)
    left = np.array([1, -1, 3, -1, -1], np.int32)
    right = np.array([2, -1, 4, -1, -1], np.int32)
    value = rng.normal(size=5)
    offset = np.array([0, 5], np.int32)
    X = rng.integers(0, 9, size=(2, 100)).astype(np.uint8)
    X[0, :10] = 255
    coef = np.array([0.5])
    want = np.zeros(100)
    _predictor.predict_depthwise(X, feature, split_bin, nan_right, left, right, value, offset,
                                 coef, 255, want, 1)
    tables = _predictor.walk_pack(2, feature, split_bin, nan_right, left, right, value,
                                  offset, 255)
    for n_threads in (1, 2):
        got = np.zeros(100)
        _predictor.predict_walk(X, coef=coef, out=got, n_threads=n_threads, **tables)
        assert np.array_equal(got, want)
    with pytest.raises(ValueError, match="packed for 2"):
        _predictor.predict_walk(np.zeros((3, 4), np.uint8), coef=coef, out=np.zeros(4),
                                n_threads=1, **tables)


def test_model_tables_follow_the_model():
    """Predictions use tables kept across calls; adding trees or rescaling refreshes them."""
    from boostlib import BoostRegressor
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] - X[:, 1] ** 2
    for policy in ("symmetric", "depthwise"):
        model = BoostRegressor(n_estimators=5, grow_policy=policy, warm_start=True,
                               random_state=0).fit(X, y)
        first = model.predict(X)
        assert np.array_equal(model.predict(X[:1]), first[:1])
        model.set_params(n_estimators=10).fit(X, y)
        fresh = BoostRegressor(n_estimators=10, grow_policy=policy, random_state=0).fit(X, y)
        assert np.array_equal(model.predict(X), fresh.predict(X))
        ensemble = model.model_.ensemble
        before = model.predict(X)
        ensemble.scale(0.5)                       # mse: the prediction is the raw score
        assert np.allclose(model.predict(X), 0.5 * before, rtol=1e-12, atol=1e-12)
