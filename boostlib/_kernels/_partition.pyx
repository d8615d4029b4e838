"""Row partition: each fitted row carries the id of the node it sits in.

Growth is level by level. ``apply_level`` (depthwise) and ``apply_level_oblivious`` move
every row one level down; ``node_sums`` gives the final per-node sums of the leaf values,
``leaf_values`` the leaves' values from them and ``subtree_sums`` the split nodes' sums of
their leaves'.
"""
import numpy as np

from cython.parallel cimport prange
from libc.float cimport DBL_MAX

from libc.stdint cimport uint32_t

from .common cimport (bin_t, idx_t, block_stop, copy_row, LIST_BLOCK, WalkNode, CAT_SPLIT,
                     in_set, leaf_value, sets_pointer, partition_segment, row_threads)

LIST_BLOCK_ROWS = LIST_BLOCK    # the block length of row lists, for Python callers

cdef extern from *:
    """
    #ifndef BOOSTLIB_DEBUG
    #define BOOSTLIB_DEBUG 0
    #endif
    """
    bint BOOSTLIB_DEBUG   # 1 in the debug build (setup.py defines it)


cdef int _check_rows(const idx_t[::1] rows, Py_ssize_t n_total) except -1:
    """Row ids must be sorted and in ``[0, n_total)``: the release build checks the ends
    (O(1), enough for sorted ids), the debug build every id and the order."""
    cdef Py_ssize_t p, n = rows.shape[0]
    if n == 0:
        return 0
    if not (0 <= rows[0] and rows[n - 1] < n_total):
        raise ValueError("row id out of range")
    if BOOSTLIB_DEBUG:
        for p in range(n):
            if not 0 <= rows[p] < n_total or (p > 0 and rows[p] <= rows[p - 1]):
                raise ValueError("row ids must be sorted, unique and in range")
    return 0


def apply_level(const bin_t[:, ::1] X_binned, const idx_t[::1] rows, idx_t[::1] node_of_row,
                const idx_t[::1] split_feature, const idx_t[::1] split_bin,
                const unsigned char[::1] nan_right, const idx_t[::1] left_child,
                const idx_t[::1] right_child, int missing_bin, int n_threads,
                const idx_t[::1] slot_of_node=None, idx_t[::1] listed=None,
                idx_t[::1] block_counts=None, const uint32_t[:, ::1] cat_sets=None):
    """Send each row to the child of its node (rows of unsplit nodes stay where they are).

    Parameters
    ----------
    X_binned : IN uint8 (n_features, n_rows_total), feature-major binned data. Each row reads
        one byte of its node's split feature: a level touches only the columns of its
        splits (1 column at the root), where a row-major pass streams the whole matrix.
    rows : IN int32 (n_fit,) training-row ids of the fitted rows, sorted and unique.
    node_of_row : IN/OUT int32 (n_fit,) node id of each fitted row.
    split_feature, split_bin, nan_right, left_child, right_child : IN per node id; a node
        with ``left_child < 0`` is not split at this level.
    missing_bin : bin of missing values.
    n_threads : OpenMP threads (parallel over rows).
    slot_of_node, listed, block_counts : optional, together
        Also list the rows whose *new* node has a histogram slot (``slot_of_node[node] >=
        0``, one entry per node id), for :func:`build_histograms` of the next level: the
        positions ``p`` of block ``b`` (rows ``b * LIST_BLOCK`` up to the next block, in
        order) go to ``listed[b * LIST_BLOCK:]`` (OUT int32, ``n_fit`` entries) and their
        number to ``block_counts[b]`` (OUT int32, one per block). The histogram pass then
        visits only those rows; skipping the others row by row costs a mispredicted branch
        on every other row.
    cat_sets : IN uint32 (n_sets, 8), optional
        The bin sets of the categorical splits (``nan_right == 2``, ``split_bin`` = set).
    """
    cdef Py_ssize_t n = rows.shape[0]
    cdef Py_ssize_t p, blk, stop
    cdef idx_t node, n_nodes = split_feature.shape[0]
    cdef int b, go_right
    if node_of_row.shape[0] != n:
        raise ValueError("node_of_row must be aligned with rows")
    cdef idx_t[:, ::1] child
    cdef idx_t[::1] feat, thr, nan_side
    child, feat, thr, nan_side = _node_tables(X_binned.shape[0], split_feature, split_bin,
                                              nan_right, left_child, right_child, cat_sets)
    cdef const uint32_t* sets = sets_pointer(cat_sets)
    _check_rows(rows, X_binned.shape[1])
    cdef bint listing = _check_listing(n, n_nodes, slot_of_node, listed, block_counts)
    if BOOSTLIB_DEBUG:
        for p in range(n):
            if not 0 <= node_of_row[p] < n_nodes:
                raise IndexError("node id out of range")
    cdef Py_ssize_t n_blocks = (n + LIST_BLOCK - 1) // LIST_BLOCK
    with nogil:
        for blk in prange(n_blocks, schedule="static", num_threads=n_threads):
            stop = block_stop(blk, LIST_BLOCK, n)
            for p in range(blk * LIST_BLOCK, stop):
                node = node_of_row[p]   # unsplit nodes are their own children: branch-free
                b = X_binned[feat[node], rows[p]]
                if nan_side[node] == CAT_SPLIT:
                    go_right = 1 - in_set(sets, thr[node], b)
                else:
                    go_right = ((b > thr[node]) & (b != missing_bin)) | (
                        (b == missing_bin) & nan_side[node])
                node_of_row[p] = child[node, go_right]
            if listing:
                block_counts[blk] = _list_block(&node_of_row[0], &slot_of_node[0],
                                                blk * LIST_BLOCK, stop, &listed[0])


cdef inline idx_t _list_block(const idx_t* node_of_row, const idx_t* slot_of_node,
                              Py_ssize_t start, Py_ssize_t stop,
                              idx_t* listed) noexcept nogil:
    """List the positions ``start:stop`` whose node has a slot at ``listed[start:]``
    (branch-free; a second pass over the block, still in cache, so the partition's own loop
    stays free of the dependent stores); return their number."""
    cdef Py_ssize_t p, cnt = 0
    for p in range(start, stop):
        listed[start + cnt] = <idx_t> p
        cnt += slot_of_node[node_of_row[p]] >= 0
    return <idx_t> cnt


cdef bint _check_listing(Py_ssize_t n, Py_ssize_t n_nodes, const idx_t[::1] slot_of_node,
                         idx_t[::1] listed, idx_t[::1] block_counts) except -1:
    """Whether a partition kernel lists the rows of slotted nodes (and the arrays fit)."""
    given = (slot_of_node is not None) + (listed is not None) + (block_counts is not None)
    if given == 0:
        return False
    if given != 3:
        raise ValueError("slot_of_node, listed and block_counts go together")
    if slot_of_node.shape[0] != n_nodes:
        raise ValueError(f"slot_of_node must have one entry per node ({n_nodes})")
    if listed.shape[0] != n or block_counts.shape[0] != (n + LIST_BLOCK - 1) // LIST_BLOCK:
        raise ValueError(f"listed must have {n} entries and block_counts one per block of "
                         f"{LIST_BLOCK} rows")
    return True


def _node_tables(Py_ssize_t n_features, const idx_t[::1] split_feature,
                 const idx_t[::1] split_bin, const unsigned char[::1] nan_right,
                 const idx_t[::1] left_child, const idx_t[::1] right_child,
                 const uint32_t[:, ::1] cat_sets=None):
    """Per-node tables of a branch-free walk: children (an unsplit node is both its own
    children), split feature (0 when unsplit), split bin (a categorical split: its set)
    and NaN side (``CAT_SPLIT`` for a categorical split)."""
    cdef Py_ssize_t k, n_nodes = split_feature.shape[0]
    if (split_bin.shape[0] != n_nodes or nan_right.shape[0] != n_nodes
            or left_child.shape[0] != n_nodes or right_child.shape[0] != n_nodes
            or n_nodes == 0):
        raise ValueError("per-node arrays must have the same, non-zero length")
    child = np.empty((n_nodes, 2), dtype=np.int32)
    feat = np.zeros(n_nodes, dtype=np.int32)
    thr = np.zeros(n_nodes, dtype=np.int32)
    nan_side = np.zeros(n_nodes, dtype=np.int32)
    for k in range(n_nodes):
        if left_child[k] >= 0:
            if not (0 <= split_feature[k] < n_features and 0 <= left_child[k] < n_nodes
                    and 0 <= right_child[k] < n_nodes):
                raise ValueError("invalid tree: split feature or child out of range")
            child[k, 0] = left_child[k]
            child[k, 1] = right_child[k]
            feat[k] = split_feature[k]
            thr[k] = split_bin[k]
            nan_side[k] = nan_right[k] != 0
            if nan_right[k] == CAT_SPLIT:
                if cat_sets is None or not 0 <= split_bin[k] < cat_sets.shape[0]:
                    raise ValueError("invalid tree: a categorical split without its set")
                nan_side[k] = CAT_SPLIT
            elif nan_right[k] > 1:
                raise ValueError("invalid tree: nan_right must be 0, 1 or 2")
        else:
            child[k, 0] = k
            child[k, 1] = k
    return child, feat, thr, nan_side


def apply_level_oblivious(const bin_t[:, ::1] X_binned, const idx_t[::1] rows,
                          idx_t[::1] node_of_row, int feature, int split_bin,
                          int nan_right, int level, int missing_bin, int n_threads,
                          const idx_t[::1] slot_of_node=None, idx_t[::1] listed=None,
                          idx_t[::1] block_counts=None, const uint32_t[:, ::1] cat_sets=None):
    """Oblivious level: ``node |= right << level`` for every row.

    Parameters
    ----------
    X_binned : IN uint8 (n_features, n_rows_total), feature-major (one sequential column).
    rows, node_of_row : as in :func:`apply_level` (nodes below ``2**level`` on entry).
    feature, split_bin, nan_right : the level's split.
    level : the bit to set.
    missing_bin : bin of missing values.
    n_threads : OpenMP threads (parallel over rows).
    slot_of_node, listed, block_counts : optional, as in :func:`apply_level`, with
        ``slot_of_node`` over the ``2**(level + 1)`` leaves after this level.
    cat_sets : IN uint32 (n_sets, 8), optional: with ``nan_right == 2`` the split is
        categorical, and ``split_bin`` names its set.
    """
    cdef Py_ssize_t n = rows.shape[0]
    cdef Py_ssize_t p, blk, stop
    cdef int b, bit
    cdef const bin_t* xf
    cdef const uint32_t* sets = sets_pointer(cat_sets)
    cdef bint categorical = nan_right == CAT_SPLIT
    if categorical and (sets == NULL or not 0 <= split_bin < cat_sets.shape[0]):
        raise ValueError("a categorical split needs its set")
    if node_of_row.shape[0] != n:
        raise ValueError("node_of_row must be aligned with rows")
    if not 0 <= feature < X_binned.shape[0] or not 0 <= level < 31:
        raise ValueError("feature or level out of range")
    _check_rows(rows, X_binned.shape[1])
    cdef bint listing = _check_listing(n, 1 << (level + 1) if slot_of_node is not None else 0,
                                       slot_of_node, listed, block_counts)
    if BOOSTLIB_DEBUG and listing:
        for p in range(n):
            if not 0 <= node_of_row[p] < (1 << level):
                raise IndexError("node id out of range")
    xf = &X_binned[feature, 0]
    cdef Py_ssize_t n_blocks = (n + LIST_BLOCK - 1) // LIST_BLOCK
    with nogil:
        for blk in prange(n_blocks, schedule="static", num_threads=n_threads):
            stop = block_stop(blk, LIST_BLOCK, n)
            if categorical:
                for p in range(blk * LIST_BLOCK, stop):
                    node_of_row[p] |= (1 - in_set(sets, split_bin, xf[rows[p]])) << level
            else:
                for p in range(blk * LIST_BLOCK, stop):
                    b = xf[rows[p]]
                    bit = nan_right if b == missing_bin else (b > split_bin)
                    node_of_row[p] |= bit << level
            if listing:
                block_counts[blk] = _list_block(&node_of_row[0], &slot_of_node[0],
                                                blk * LIST_BLOCK, stop, &listed[0])


def node_sums(const idx_t[::1] node_of_row, const double[::1] gradient,
              const double[::1] hessian, double[:, ::1] out):
    """Per-node sums of gradient, hessian and row count.

    Parameters
    ----------
    node_of_row, gradient, hessian : IN aligned arrays over the fitted rows.
    out : OUT (n_nodes, 3), overwritten.
    """
    cdef Py_ssize_t n = node_of_row.shape[0]
    cdef Py_ssize_t p, k
    cdef idx_t node
    if gradient.shape[0] != n or hessian.shape[0] != n or out.shape[1] != 3:
        raise ValueError("node_sums: arrays of inconsistent shapes")
    for p in range(n):
        if not 0 <= node_of_row[p] < out.shape[0]:
            raise ValueError("node id out of range")
    with nogil:
        for k in range(out.shape[0]):
            out[k, 0] = 0.0
            out[k, 1] = 0.0
            out[k, 2] = 0.0
        for p in range(n):
            node = node_of_row[p]
            out[node, 0] += gradient[p]
            out[node, 1] += hessian[p]
            out[node, 2] += 1.0


def leaf_values(const double[::1] G, const double[::1] H, const double[::1] count,
                double l2, double[::1] out):
    """``out[k] = -G[k] / (H[k] + l2)``, or 0 where ``count[k]`` is 0 or ``H[k] + l2`` is
    not positive (``common.leaf_value``: the formula ``grow_tree`` uses too).

    Parameters
    ----------
    G, H, count : IN float64 (n,) per-leaf sums of gradient, hessian and rows.
    l2 : L2 regularisation.
    out : OUT float64 (n,).
    """
    cdef Py_ssize_t n = G.shape[0], k
    if H.shape[0] != n or count.shape[0] != n or out.shape[0] != n:
        raise ValueError("G, H, count and out must have the same length")
    with nogil:
        for k in range(n):
            out[k] = leaf_value(G[k], H[k], count[k], l2)


def subtree_sums(const idx_t[::1] left, const idx_t[::1] right, double[::1] total):
    """Every split node's sum of its leaves' values, in place: ``total[k]`` becomes
    ``total[left[k]] + total[right[k]]`` for each split node ``k`` (``left[k] >= 0``)
    reached from the root (node 0), children before their parents; the leaves keep theirs.

    Parameters
    ----------
    left, right : IN int32 (n_nodes,) children of each node, -1 at leaves; node ids in any
        order (a breadth-first walk from the root orders them).
    total : IN/OUT float64 (n_nodes,) the leaves' values; split nodes' entries are
        overwritten.
    """
    cdef Py_ssize_t n = left.shape[0], head = 0, tail = 1, q
    cdef idx_t k
    if right.shape[0] != n or total.shape[0] != n:
        raise ValueError("left, right and total must have one entry per node")
    if n == 0:
        return
    order_a = np.empty(n, dtype=np.int32)
    cdef idx_t[::1] order = order_a
    order[0] = 0
    while head < tail:              # breadth-first: every node after its parent
        k = order[head]
        head += 1
        if left[k] < 0:
            continue
        if tail + 2 > n or not (0 < left[k] < n and 0 < right[k] < n):
            raise ValueError(f"node {k}: children ({left[k]}, {right[k]}) are not the "
                             "nodes of a tree")
        order[tail] = left[k]
        order[tail + 1] = right[k]
        tail += 2
    for q in range(tail - 1, -1, -1):
        k = order[q]
        if left[k] >= 0:
            total[k] = total[left[k]] + total[right[k]]


def gather_rows(const bin_t[:, ::1] X_rows, const idx_t[::1] rows, bin_t[:, ::1] out,
                int n_threads, const double[::1] gradient=None, const double[::1] hessian=None,
                float[::1] gradient32=None, float[::1] hessian32=None):
    """Copy the binned rows ``rows`` of ``X_rows`` into the first ``len(rows)`` rows of ``out``
    (and, in the same pass, the float32 copies of the fitted rows' derivatives).

    A sampled tree builds its histograms on this compact copy: reading half the rows of the
    full matrix still touches nearly every cache line (a row is ``n_features`` bytes), the
    copy does not.

    Parameters
    ----------
    X_rows : IN uint8 (n_rows_total, n_features), row-major binned data.
    rows : IN int32 (k,) sorted, unique row ids in ``[0, n_rows_total)``; empty: copy no
        rows (only the derivatives, e.g. when every row is fitted).
    out : OUT uint8 (>= k, n_features).
    n_threads : OpenMP threads (parallel over rows).
    gradient, hessian : IN float64, optional (with ``gradient32`` and ``hessian32``)
        Derivatives aligned with the fitted rows (``k`` of them, or any number when ``rows``
        is empty).
    gradient32, hessian32 : OUT float32, aligned with ``gradient``: their values rounded to
        float32 (what the histogram kernel reads).
    """
    cdef Py_ssize_t k = rows.shape[0]
    cdef Py_ssize_t n_features = X_rows.shape[1]
    cdef Py_ssize_t p, m = 0
    cdef bint convert = gradient is not None
    if convert:
        if hessian is None or gradient32 is None or hessian32 is None:
            raise ValueError("gradient, hessian, gradient32 and hessian32 go together")
        m = gradient.shape[0]
        if (hessian.shape[0] != m or gradient32.shape[0] != m or hessian32.shape[0] != m
                or (k and m != k)):
            raise ValueError("the derivatives and their float32 copies must be aligned with "
                             "rows")
    elif not (hessian is None and gradient32 is None and hessian32 is None):
        raise ValueError("gradient, hessian, gradient32 and hessian32 go together")
    if out.shape[0] < k or out.shape[1] != n_features:
        raise ValueError("out must have at least len(rows) rows and n_features columns")
    _check_rows(rows, X_rows.shape[0])
    if n_features == 0:
        k = 0
    with nogil:
        if k and convert:
            for p in prange(k, schedule="static", num_threads=n_threads):
                copy_row(&out[p, 0], &X_rows[rows[p], 0], n_features)
                gradient32[p] = <float> gradient[p]
                hessian32[p] = <float> hessian[p]
        elif k:
            for p in prange(k, schedule="static", num_threads=n_threads):
                copy_row(&out[p, 0], &X_rows[rows[p], 0], n_features)
        elif convert:
            for p in prange(m, schedule="static", num_threads=row_threads(m, n_threads)):
                gradient32[p] = <float> gradient[p]
                hessian32[p] = <float> hessian[p]


def gather_sample(const bin_t[:, ::1] X_rows, const idx_t[::1] rows,
                  const double[::1] weights, const double[::1] gradient,
                  const double[::1] hessian, bin_t[:, ::1] out, double[::1] g, double[::1] h,
                  float[::1] g32, float[::1] h32, int n_threads):
    """Everything a tree fitted on a sample reads, in one pass over the sample: the binned
    rows (as :func:`gather_rows`), the weighted derivatives ``gradient[rows] * weights`` (as
    ``_sampling.gather_scaled_pair``, bit for bit) and their float32 copies.

    The same pass checks the sample (what ``_sampling.sample_defects`` does, for the sampler's
    rows, in a separate pass otherwise): a row id out of range is not read (row 0 is, in its
    place), and the defects are returned for the caller to report; the outputs are then
    meaningless.

    Parameters
    ----------
    X_rows : IN uint8 (n_rows_total, n_features), row-major binned data.
    rows : IN int32 (k,) row ids, expected sorted, unique and in ``[0, n_rows_total)``.
    weights : IN float64 (k,), expected finite and >= 0, or empty for weight 1.
    gradient, hessian : IN float64 (n_rows_total,).
    out : OUT uint8 (>= k, n_features).
    g, h : OUT float64 (k,) the weighted derivatives; g32, h32 : OUT float32 (k,) their
        values rounded to float32.
    n_threads : OpenMP threads (parallel over rows).

    Returns
    -------
    int
        0, or a sum of flags as ``_sampling.sample_defects`` returns them: 1 if a row id is
        outside ``[0, n_rows_total)``, 2 if the ids are not strictly increasing, 4 if a weight
        is negative, NaN or infinite.
    """
    cdef Py_ssize_t k = rows.shape[0], n = X_rows.shape[0], n_features = X_rows.shape[1]
    cdef Py_ssize_t p, n_range = 0, n_order = 0, n_weight = 0
    cdef idx_t r
    cdef double gv, hv, w
    cdef bint weighted = weights.shape[0] != 0, bad
    if (gradient.shape[0] != n or hessian.shape[0] != n or g.shape[0] != k
            or h.shape[0] != k or g32.shape[0] != k or h32.shape[0] != k
            or (weighted and weights.shape[0] != k)):
        raise ValueError("gradient and hessian must have one value per row of X_rows, and g, "
                         "h, g32, h32 (and weights, unless empty) one per sampled row")
    if out.shape[0] < k or out.shape[1] != n_features:
        raise ValueError("out must have at least len(rows) rows and n_features columns")
    if k and n == 0:
        return 1
    with nogil:
        for p in prange(k, schedule="static", num_threads=n_threads):
            r = rows[p]
            bad = <size_t>r >= <size_t>n    # negative ids wrap around to huge ones
            n_range += bad
            n_order += (p > 0) & (rows[p - (p > 0)] >= r)     # row 0: compared with itself
            r = 0 if bad else r             # never read outside the data
            if n_features:                  # (no row to take the address of otherwise)
                copy_row(&out[p, 0], &X_rows[r, 0], n_features)
            if weighted:
                w = weights[p]
                n_weight += 1 - ((w >= 0.0) & (w <= DBL_MAX))
                gv = gradient[r] * w
                hv = hessian[r] * w
            else:
                gv = gradient[r]
                hv = hessian[r]
            g[p] = gv
            h[p] = hv
            g32[p] = <float>gv
            h32[p] = <float>hv
    return (n_range > 0) + 2 * (n_order > 0) + 4 * (n_weight > 0)


def leaves_depthwise(const bin_t[:, ::1] X_rows, const idx_t[::1] split_feature,
                     const idx_t[::1] split_bin, const unsigned char[::1] nan_right,
                     const idx_t[::1] left_child, const idx_t[::1] right_child,
                     const idx_t[::1] missing_of_feature,
                     idx_t[::1] out, int n_threads, const idx_t[::1] known_rows=None,
                     const idx_t[::1] known_leaves=None, const uint32_t[:, ::1] cat_sets=None):
    """Leaf node id of every row of a depthwise tree, in one pass over row-major data.

    Each row is walked from the root to its leaf reading only its own ``n_features`` bytes
    (one cache line). The walk is branch-free: leaves point to themselves, and every row
    takes exactly ``depth`` steps, each choosing the child by arithmetic, so the CPU never
    mispredicts the path (a branchy walk costs about as much as the prediction pass it
    replaces). Rows are walked 32 at a time, so their independent chains of loads overlap,
    over a packed copy of the tree (:func:`_walk_tables`).

    Parameters
    ----------
    X_rows : IN uint8 (n_rows, n_features), row-major binned data.
    split_feature, split_bin, nan_right, left_child, right_child : IN the tree's node arrays
        (``left_child < 0`` for leaves; children have larger ids than their parent).
    missing_of_feature : IN int32 (n_features,) the bin of missing values of each feature
        in ``X_rows``, above all its other bins (the grower's row-major matrix holds them at
        ``n_bins_nonmissing[f]``).
    out : OUT int32 (n_rows,) leaf node ids.
    n_threads : OpenMP threads (parallel over rows).
    known_rows, known_leaves : IN int32 (k,), optional
        Rows whose leaves are already known (sorted, unique; e.g. the sample the tree was
        grown on) and those leaves: they are copied, and only the other rows are walked.
    cat_sets : IN uint32 (n_sets, 8), optional: the sets of the categorical splits.
    """
    if out.shape[0] != X_rows.shape[0]:
        raise ValueError("out must hold one entry per row")
    _walk_rows(X_rows, split_feature, split_bin, nan_right, left_child, right_child,
               missing_of_feature, n_threads, known_rows, known_leaves, out, None, 0.0, None,
               cat_sets)


def add_depthwise(const bin_t[:, ::1] X_rows, const idx_t[::1] split_feature,
                  const idx_t[::1] split_bin, const unsigned char[::1] nan_right,
                  const idx_t[::1] left_child, const idx_t[::1] right_child,
                  const idx_t[::1] missing_of_feature,
                  const double[::1] value, double coef, double[::1] raw, int n_threads,
                  const idx_t[::1] known_rows=None, const idx_t[::1] known_leaves=None,
                  const uint32_t[:, ::1] cat_sets=None):
    """``raw[i] += coef * value[leaf(i)]`` for every row ``i``: the walk of
    :func:`leaves_depthwise` adding each row's leaf value as it lands, with no leaf array
    written and read back. Each row gets the same product and one addition, so ``raw`` ends
    bit-identical to ``add_leaf_values`` over the leaves :func:`leaves_depthwise` gives.

    Parameters
    ----------
    X_rows, split_feature, split_bin, nan_right, left_child, right_child,
    missing_of_feature : As :func:`leaves_depthwise`.
    value : IN float64 per node id.
    coef : the tree's coefficient.
    raw : IN/OUT float64 (n_rows,).
    n_threads : OpenMP threads.
    known_rows, known_leaves : As :func:`leaves_depthwise` (those rows are not walked).
    cat_sets : As :func:`leaves_depthwise`.
    """
    if raw.shape[0] != X_rows.shape[0]:
        raise ValueError("raw must hold one entry per row")
    if value.shape[0] != split_feature.shape[0]:
        raise ValueError("value must hold one entry per node")
    _walk_rows(X_rows, split_feature, split_bin, nan_right, left_child, right_child,
               missing_of_feature, n_threads, known_rows, known_leaves, None, value, coef, raw,
               cat_sets)


cdef _walk_rows(const bin_t[:, ::1] X_rows, const idx_t[::1] split_feature,
                const idx_t[::1] split_bin, const unsigned char[::1] nan_right,
                const idx_t[::1] left_child, const idx_t[::1] right_child,
                const idx_t[::1] missing_of_feature,
                int n_threads, const idx_t[::1] known_rows, const idx_t[::1] known_leaves,
                idx_t[::1] out, const double[::1] value, double coef, double[::1] raw,
                const uint32_t[:, ::1] cat_sets):
    """Both walks: leaf ids to ``out``, or (``raw`` given) ``coef * value[leaf]`` added to
    ``raw``; rows in ``known_rows`` take ``known_leaves`` instead of a walk."""
    cdef Py_ssize_t n = X_rows.shape[0], n_nodes = split_feature.shape[0]
    cdef Py_ssize_t p, depth
    cdef bint known = known_rows is not None
    cdef bint adding = raw is not None
    cdef int bad = 0
    if known != (known_leaves is not None) or (
            known and known_rows.shape[0] != known_leaves.shape[0]):
        raise ValueError("known_rows and known_leaves go together, with the same length")
    if n == 0:
        return
    cdef idx_t[:, ::1] packed
    cdef idx_t[::1] orig_id
    packed, orig_id, depth = _walk_tables(missing_of_feature, split_feature,
                                          split_bin, nan_right, left_child, right_child,
                                          cat_sets)
    cdef const uint32_t* sets = sets_pointer(cat_sets)
    cdef unsigned char[::1] is_known
    if known:
        _check_rows(known_rows, n)
        with nogil:
            for p in prange(known_leaves.shape[0], schedule="static", num_threads=n_threads):
                bad += not (0 <= known_leaves[p] < n_nodes)
        if bad:
            raise ValueError("known leaf id out of range")
        is_known = np.zeros(n, dtype=np.uint8)
    else:
        is_known = np.zeros(1, dtype=np.uint8)      # unused
    cdef Py_ssize_t n_groups = (n + WALK - 1) // WALK
    with nogil:
        if known and adding:
            for p in prange(known_rows.shape[0], schedule="static", num_threads=n_threads):
                is_known[known_rows[p]] = 1
                raw[known_rows[p]] += coef * value[known_leaves[p]]
        elif known:
            for p in prange(known_rows.shape[0], schedule="static", num_threads=n_threads):
                is_known[known_rows[p]] = 1
                out[known_rows[p]] = known_leaves[p]
        for p in prange(n_groups, schedule="static", num_threads=n_threads):
            _walk_group(&X_rows[0, 0], X_rows.shape[1], p * WALK,
                        WALK if (p + 1) * WALK <= n else n - p * WALK, depth,
                        <const WalkNode*> &packed[0, 0], &orig_id[0], sets,
                        &is_known[0] if known else NULL,
                        &raw[0] if adding else NULL, &value[0] if adding else NULL, coef,
                        NULL if adding else &out[0])


def _walk_tables(const idx_t[::1] missing_of_feature, const idx_t[::1] split_feature,
                 const idx_t[::1] split_bin, const unsigned char[::1] nan_right,
                 const idx_t[::1] left_child, const idx_t[::1] right_child,
                 const uint32_t[:, ::1] cat_sets=None):
    """The tree as :func:`_walk_group` walks it: ``(packed, orig_id, depth)``.

    ``packed`` holds one :c:type:`WalkNode` per node (as int32 ``(n_nodes, 4)``), renumbered
    breadth-first so that every node's two children are consecutive (``right = left + 1``);
    ``orig_id`` maps the new ids back. A leaf is its own left child and never goes right
    (threshold ``INT32_MAX``). ``upper`` is the largest bin that goes right: the feature's
    missing bin (``missing_of_feature``, above all its other bins) when missing values go
    right, one less when they go left; a categorical split has ``upper`` -1 and its set in
    ``threshold``.
    """
    cdef Py_ssize_t n_features = missing_of_feature.shape[0]
    cdef Py_ssize_t k, q, head = 0, n_nodes = split_feature.shape[0], depth = 0
    cdef idx_t[:, ::1] child
    cdef idx_t[::1] feat, thr, nan_side
    child, feat, thr, nan_side = _node_tables(n_features, split_feature, split_bin,
                                              nan_right, left_child, right_child, cat_sets)
    for k in range(n_nodes):            # children after parents: no cycle, finite depth
        if left_child[k] >= 0 and not (k < left_child[k] and k < right_child[k]):
            raise ValueError("invalid tree: a child id not above its parent's")
    packed_arr = np.zeros((n_nodes, 4), dtype=np.int32)
    orig_arr = np.zeros(n_nodes, dtype=np.int32)
    cdef idx_t[:, ::1] packed = packed_arr
    cdef idx_t[::1] orig_id = orig_arr
    cdef idx_t[::1] node_depth = np.zeros(n_nodes, dtype=np.int32)
    cdef Py_ssize_t tail = 1            # queue of original ids, in new-id order
    orig_id[0] = 0
    while head < tail:
        k = orig_id[head]
        if left_child[k] < 0:
            packed[head, 0] = 0
            packed[head, 1] = <idx_t> head
            packed[head, 2] = 2147483647
            packed[head, 3] = 0
        else:
            if tail + 2 > n_nodes:
                raise ValueError("invalid tree: a node reached twice")
            packed[head, 0] = feat[k]
            packed[head, 1] = <idx_t> tail
            packed[head, 2] = thr[k]
            if nan_side[k] == CAT_SPLIT:
                packed[head, 3] = -1
            elif not thr[k] < missing_of_feature[feat[k]] <= 255:
                raise ValueError("invalid tree: a split bin at or above its feature's "
                                 "missing bin")
            else:
                packed[head, 3] = missing_of_feature[feat[k]] - (nan_side[k] == 0)
            for q in range(2):
                orig_id[tail + q] = child[k, q]
                node_depth[tail + q] = node_depth[head] + 1
                if node_depth[tail + q] > depth:
                    depth = node_depth[tail + q]
            tail += 2
        head += 1
    return packed_arr[:tail], orig_arr[:tail], depth


cdef enum:
    WALK = 32       # rows walked together: independent dependency chains overlap


cdef inline void _walk_group(const bin_t* X, Py_ssize_t n_features, Py_ssize_t start,
                             Py_ssize_t count, Py_ssize_t depth, const WalkNode* nodes,
                             const idx_t* orig_id, const uint32_t* sets,
                             const unsigned char* skip,
                             double* raw, const double* value, double coef,
                             idx_t* out) noexcept nogil:
    """Walk rows ``start .. start + count`` (count <= WALK) down ``depth`` levels at once,
    except the rows flagged in ``skip`` (when not NULL). Per level and row: one 16-byte
    node, one byte of the row, and the child by arithmetic. Each row's leaf id goes to
    ``out``, or, when ``raw`` is not NULL, ``coef * value[leaf]`` is added to ``raw``."""
    cdef idx_t node[WALK]
    cdef const bin_t* row[WALK]
    cdef Py_ssize_t row_id[WALK]
    cdef Py_ssize_t j, level, m = 0
    cdef int b
    cdef const WalkNode* nd
    for j in range(count):              # the rows to walk, compacted without branches
        row_id[m] = start + j
        row[m] = X + (start + j) * n_features
        m += 1 if skip == NULL else 1 - skip[start + j]
    for j in range(m):
        node[j] = 0
    for level in range(depth):
        for j in range(m):
            nd = nodes + node[j]
            b = row[j][nd.feature]
            if nd.upper < 0:
                node[j] = nd.left + 1 - in_set(sets, nd.threshold, b)
            else:
                node[j] = nd.left + ((b > nd.threshold) & (b <= nd.upper))
    if raw != NULL:
        for j in range(m):
            raw[row_id[j]] += coef * value[orig_id[node[j]]]
    else:
        for j in range(m):
            out[row_id[j]] = orig_id[node[j]]


def split_segment(const bin_t[:, ::1] X_binned, const idx_t[::1] rows, idx_t[::1] order,
                  Py_ssize_t start, Py_ssize_t stop, int feature, int split_bin,
                  int nan_right, int missing_bin, idx_t[::1] scratch,
                  const uint32_t[:, ::1] cat_sets=None):
    """Split one leaf's rows (leaf-wise growth): a stable partition of ``order[start:stop]``,
    the rows going left first, in one pass. Returns the number going left.

    Parameters
    ----------
    X_binned : IN uint8 (n_features, n_rows_total), feature-major binned data.
    rows : IN int32 (n_fit,) training-row ids of the fitted rows.
    order : IN/OUT int32: positions into ``rows``; ``order[start:stop]`` are the leaf's.
    start, stop : the leaf's segment.
    feature, split_bin, nan_right : the split (``nan_right == 2``: categorical, and
        ``split_bin`` names the row of ``cat_sets`` holding the bins sent left).
    missing_bin : bin of missing values.
    scratch : OUT int32, at least ``stop - start`` entries (work space).
    cat_sets : IN uint32 (n_sets, 8), optional.
    """
    cdef Py_ssize_t i, n_left
    cdef const uint32_t* sets = sets_pointer(cat_sets)
    cdef bint categorical = nan_right == CAT_SPLIT
    if not 0 <= start <= stop <= order.shape[0] or scratch.shape[0] < stop - start:
        raise ValueError("the segment must lie in order, and scratch must hold it")
    if not 0 <= feature < X_binned.shape[0]:
        raise ValueError("feature out of range")
    if categorical and (sets == NULL or not 0 <= split_bin < cat_sets.shape[0]):
        raise ValueError("a categorical split needs its set")
    if BOOSTLIB_DEBUG:
        for i in range(start, stop):
            if not 0 <= order[i] < rows.shape[0] or not 0 <= rows[order[i]] < X_binned.shape[1]:
                raise IndexError("position or row out of range")
    if start == stop:
        return 0
    with nogil:
        n_left = partition_segment(&X_binned[feature, 0], &rows[0], &order[0], start, stop,
                                   split_bin, nan_right, missing_bin, sets, &scratch[0])
    return n_left
