"""The vector-leaf kernels (``boostlib._kernels._vector``) against the slow references of
``tests/reference/vector.py``: histograms summed row by row, and splits found by
partitioning every node's rows for every candidate."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from boostlib._kernels import _partition, _vector
from reference import vector as ref


@st.composite
def problems(draw):
    """Binned rows, nodes, and small-integer derivatives (their float sums are exact in any
    order, so kernel and reference agree exactly)."""
    n = draw(st.integers(0, 40))
    n_features = draw(st.integers(1, 4))
    K = draw(st.integers(1, 4))
    nbnm = np.array([draw(st.integers(1, 5)) for _ in range(n_features)], dtype=np.int32)
    X = np.array([[draw(st.integers(0, int(nb))) for nb in nbnm] for _ in range(n)],
                 dtype=np.uint8).reshape(n, n_features)
    n_nodes = draw(st.integers(1, 3))
    node = np.array([draw(st.integers(0, n_nodes - 1)) for _ in range(n)], dtype=np.int32)
    g = np.array([[draw(st.integers(-4, 4)) for _ in range(K)] for _ in range(n)],
                 dtype=np.float32).reshape(n, K)
    h = np.array([[draw(st.sampled_from([0, 1, 2, 3])) for _ in range(K)] for _ in range(n)],
                 dtype=np.float32).reshape(n, K)
    return X, nbnm, node, n_nodes, g, h


def _interleave(g, h):
    gh = np.empty((g.shape[0], 2 * g.shape[1]), dtype=np.float32)
    gh[:, 0::2], gh[:, 1::2] = g, h
    return gh


def _offsets(nbnm):
    return np.concatenate([[0], np.cumsum(nbnm + 1)]).astype(np.int32)


@settings(max_examples=150, deadline=None)
@given(problems(), st.booleans(), st.booleans(), st.integers(1, 3), st.booleans())
def test_histograms_equal_the_row_by_row_sums(problem, counted, subset, n_threads, listed):
    X, nbnm, node, n_nodes, g, h = problem
    offsets = _offsets(nbnm)
    gh = _interleave(g, h)
    slot_of_node = np.arange(n_nodes, dtype=np.int32)
    slot_of_node[-1] = -1 if n_nodes > 1 else 0      # a node without a slot is skipped
    n_slots = int(slot_of_node.max()) + 1
    rows = np.empty(0, dtype=np.int32)
    X_all = X
    if subset and X.shape[0]:      # the fitted rows are a subset of a larger matrix
        X_all = np.vstack([X, X[::-1]])
        rows = np.arange(X.shape[0], dtype=np.int32)
    expected = ref.build_histograms(X_all, rows, node, slot_of_node, gh, offsets, n_slots,
                                    counted)
    hist = np.full((n_slots, int(offsets[-1]), gh.shape[1] + counted), np.nan)
    args = ()
    if listed:
        lst = np.empty(node.size, dtype=np.int32)
        counts = np.empty(-(-node.size // _partition.LIST_BLOCK_ROWS), dtype=np.int32)
        for blk in range(counts.size):      # the rows of slotted nodes, block by block
            lo = blk * _partition.LIST_BLOCK_ROWS
            hi = min(lo + _partition.LIST_BLOCK_ROWS, node.size)
            kept = [p for p in range(lo, hi) if slot_of_node[node[p]] >= 0]
            counts[blk] = len(kept)
            lst[lo:lo + len(kept)] = kept
        args = (lst, counts)
    _vector.build_histograms(X_all, rows, node, slot_of_node, gh, offsets, hist, n_threads,
                             *args)
    np.testing.assert_array_equal(hist, expected)


@settings(max_examples=150, deadline=None)
@given(problems(), st.booleans(), st.sampled_from([0.0, 1.0, 0.5]),
       st.sampled_from([0.0, 1.0, 2.0]), st.sampled_from([0.0, 1e-3, 2.0]),
       st.integers(1, 3), st.booleans())
def test_the_split_is_the_best_candidate_of_the_brute_force(problem, counted, l2, msl, mcw,
                                                            n_threads, masked):
    X, nbnm, node, n_nodes, g, h = problem
    K = g.shape[1]
    offsets = _offsets(nbnm)
    slots = np.arange(n_nodes, dtype=np.int32)
    hist = ref.build_histograms(X, np.empty(0, np.int32), node, slots, _interleave(g, h),
                                offsets, n_nodes, counted)
    allowed = None
    if masked:
        allowed = np.zeros(nbnm.size, dtype=np.uint8)
        allowed[::2] = 1
    gain_sum = np.empty((int(offsets[-1]), 2))
    n_valid = np.empty((int(offsets[-1]), 2), dtype=np.int32)
    f, b, d, gain = _vector.find_split(hist, slots, offsets, nbnm, K, l2, msl, mcw,
                                       np.empty((0, 256)), gain_sum, n_valid, n_threads,
                                       allowed)
    cands = ref.find_split([np.flatnonzero(node == k) for k in range(n_nodes)], X,
                           g.astype(np.float64), h.astype(np.float64), nbnm, l2, msl, mcw,
                           counted, allowed)
    for c in cands:     # every candidate's sum, not only the chosen one
        assert n_valid[offsets[c.f] + c.b, c.d] == c.n_valid
        assert gain_sum[offsets[c.f] + c.b, c.d] == pytest.approx(c.gain, rel=1e-12,
                                                                  abs=1e-9)
    eligible = [c for c in cands if c.n_valid > 0 and c.gain > 1e-9]
    if not eligible:
        assert f == -1
        return
    best = max(c.gain for c in eligible)
    assert f >= 0
    assert gain == pytest.approx(best, rel=1e-12)
    first = next(c for c in cands if c.n_valid > 0 and c.gain == pytest.approx(best,
                                                                              rel=1e-12))
    assert (f, b, d) == (first.f, first.b, first.d)     # ties: the first in scan order


def test_noise_moves_the_choice_to_the_noisiest_candidate():
    X = np.array([[0, 0], [1, 1], [0, 1], [1, 0]], dtype=np.uint8)
    nbnm = np.array([1, 1], dtype=np.int32)
    offsets = _offsets(nbnm)
    g = np.array([[1, -1], [-1, 1], [1, 1], [-1, -1]], dtype=np.float32)
    h = np.ones_like(g)
    hist = ref.build_histograms(X, np.empty(0, np.int32), np.zeros(4, np.int32),
                                np.zeros(1, np.int32), _interleave(g, h), offsets, 1, True)
    noise = np.zeros((2, 256))
    noise[1, 0] = 100.0
    gain_sum = np.empty((4, 2))
    n_valid = np.empty((4, 2), dtype=np.int32)
    f, b, d, gain = _vector.find_split(hist, np.zeros(1, np.int32), offsets, nbnm, 2, 0.0,
                                       0.0, 0.0, noise, gain_sum, n_valid, 1)
    assert (f, b) == (1, 0)
    assert gain == pytest.approx(gain_sum[offsets[1], d])


@pytest.mark.parametrize("bad", ["channels", "offsets", "slot"])
def test_bad_layouts_are_refused(bad):
    X = np.zeros((3, 1), dtype=np.uint8)
    nbnm = np.array([1], dtype=np.int32)
    offsets = _offsets(nbnm)
    gh = np.ones((3, 4), dtype=np.float32)
    hist = np.empty((1, 2, 6 if bad == "channels" else 5))
    if bad == "offsets":
        offsets = np.array([0, 3], dtype=np.int32)
    slot_of_node = np.array([1 if bad == "slot" else 0], dtype=np.int32)
    with pytest.raises(ValueError):
        _vector.build_histograms(X, np.empty(0, np.int32), np.zeros(3, np.int32),
                                 slot_of_node, gh, offsets, hist, 1)


@settings(deadline=None, max_examples=60)
@given(n=st.integers(0, 400), K=st.integers(1, 6), n_nodes=st.integers(1, 9),
       seed=st.integers(0, 2 ** 32 - 1), layout=st.sampled_from(["rows", "outputs"]))
def test_node_sums_match_the_row_by_row_sums(n, K, n_nodes, seed, layout):
    rng = np.random.default_rng(seed)
    node = rng.integers(0, n_nodes, n).astype(np.int32)
    g = rng.normal(size=(n, K)) if layout == "rows" else np.asfortranarray(rng.normal(size=(n, K)))
    h = rng.uniform(0.0, 2.0, (n, K))
    out = np.full((n_nodes, 2 * K + 1), np.nan)
    _vector.node_sums(node, g, h, out)
    np.testing.assert_array_equal(out, ref.node_sums(node, g, h, n_nodes))


def test_node_sums_refuse_node_ids_out_of_range():
    g = np.zeros((2, 2))
    with pytest.raises(ValueError, match="node id out of range"):
        _vector.node_sums(np.array([0, 3], dtype=np.int32), g, g, np.empty((3, 5)))
    with pytest.raises(ValueError, match="inconsistent shapes"):
        _vector.node_sums(np.array([0, 1], dtype=np.int32), g, g, np.empty((3, 4)))
