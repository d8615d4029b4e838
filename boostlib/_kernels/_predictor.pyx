"""Prediction from binned features, for packed ensembles of oblivious or depthwise trees.

Rows are processed in blocks so the block's binned features stay in cache while every tree
is applied to it; each row's sum runs over the trees in order, so the output does not depend
on ``n_threads``. A row goes right at a split ``(f, b, nan_right)`` when its bin is ``> b``,
or, for the missing bin, when ``nan_right``; at a categorical split (``nan_right == 2``),
when its bin is not in the split's set (row ``split_bin`` of ``cat_sets``).
"""
from cython.parallel cimport prange, threadid

import numpy as np

from libc.stdint cimport uint32_t
from libc.string cimport memcpy

from .common cimport (bin_t, idx_t, block_stop, row_threads, WalkNode, CAT_SPLIT, in_set,
                      sets_pointer)
from ._partition import _walk_tables

cdef extern from "simd_walk.h" nogil:
    int BOOSTLIB_SIMD_WALK          # 1 where the compiler targets AVX2
    int BOOSTLIB_SIMD_WALK_ROWS     # rows of one simd_walk64 call
    void simd_walk64(const bin_t* X, int log_stride, int start, int depth,
                     const uint32_t* word, const idx_t* left, const double* value, double c,
                     double* out)

cdef enum:
    LOG_BLOCK = 9
    BLOCK = 1 << LOG_BLOCK
    WALK = 32       # rows a depthwise walk takes together: their chains of loads overlap


def predict_oblivious(const bin_t[:, ::1] X_binned, const idx_t[::1] split_feature,
                      const idx_t[::1] split_bin, const unsigned char[::1] nan_right,
                      const idx_t[::1] split_offset, const double[::1] leaf_value,
                      const idx_t[::1] leaf_offset, const double[::1] coef, int missing_bin,
                      double[::1] out, idx_t[::1] scratch, int n_threads,
                      const uint32_t[:, ::1] cat_sets=None):
    """Add ``sum_t coef[t] * tree_t(x)`` to ``out`` for oblivious trees.

    Parameters
    ----------
    X_binned : IN uint8 (n_features, n_rows).
    split_feature, split_bin, nan_right : IN, the levels of all trees concatenated; tree
        ``t`` owns entries ``split_offset[t]:split_offset[t+1]`` (level 0 first).
    leaf_value : IN, the leaves of all trees; tree ``t`` owns
        ``leaf_offset[t]:leaf_offset[t+1]`` (2**depth values). Leaf index = sum of
        ``right_l << l`` over levels ``l``.
    coef : IN float64 (n_trees,).
    missing_bin : bin of missing values.
    out : IN/OUT float64 (n_rows,).
    scratch : int32 (n_rows,) work space.
    n_threads : OpenMP threads (parallel over blocks of rows).
    cat_sets : IN uint32 (n_sets, 8), optional: the sets of the categorical levels.
    """
    cdef const uint32_t* sets = sets_pointer(cat_sets)
    cdef Py_ssize_t n_rows = X_binned.shape[1]
    cdef Py_ssize_t n_trees = coef.shape[0]
    cdef Py_ssize_t n_blocks = (n_rows + BLOCK - 1) // BLOCK
    cdef Py_ssize_t blk, t, l, r, start, stop, lo_s, lo_l
    cdef idx_t thr
    cdef int b, nr
    cdef double c
    cdef const bin_t* xf
    _check_pack(split_offset, n_trees, split_feature.shape[0])
    _check_pack(leaf_offset, n_trees, leaf_value.shape[0])
    if out.shape[0] != n_rows or scratch.shape[0] < n_rows:
        raise ValueError("out and scratch must have n_rows entries")
    for t in range(n_trees):
        if leaf_offset[t + 1] - leaf_offset[t] != (1 << (split_offset[t + 1] - split_offset[t])):
            raise ValueError("an oblivious tree of depth d needs 2**d leaves")
    for t in range(split_feature.shape[0]):
        if not 0 <= split_feature[t] < X_binned.shape[0]:
            raise ValueError("split feature out of range")
        if nan_right[t] == CAT_SPLIT and not (sets != NULL
                                              and 0 <= split_bin[t] < cat_sets.shape[0]):
            raise ValueError("a categorical split without its set")
    with nogil:
        for blk in prange(n_blocks, schedule="static", num_threads=n_threads):
            start = blk * BLOCK
            stop = block_stop(blk, BLOCK, n_rows)
            for t in range(n_trees):
                for r in range(start, stop):
                    scratch[r] = 0
                lo_s = split_offset[t]
                for l in range(split_offset[t + 1] - lo_s):
                    xf = &X_binned[split_feature[lo_s + l], 0]
                    thr = split_bin[lo_s + l]
                    nr = nan_right[lo_s + l]
                    if nr == CAT_SPLIT:
                        for r in range(start, stop):
                            scratch[r] |= (1 - in_set(sets, thr, xf[r])) << l
                        continue
                    for r in range(start, stop):
                        # Branch-free (vectorisable): the missing bin is above every
                        # threshold, so it goes right exactly when nan_right.
                        b = xf[r]
                        scratch[r] |= ((b > thr) & ((b != missing_bin) | nr)) << l
                c = coef[t]
                lo_l = leaf_offset[t]
                for r in range(start, stop):
                    out[r] += c * leaf_value[lo_l + scratch[r]]


def predict_depthwise(const bin_t[:, ::1] X_binned, const idx_t[::1] feature,
                      const idx_t[::1] split_bin, const unsigned char[::1] nan_right,
                      const idx_t[::1] left, const idx_t[::1] right,
                      const double[::1] value, const idx_t[::1] node_offset,
                      const double[::1] coef, int missing_bin, double[::1] out,
                      int n_threads, const uint32_t[:, ::1] cat_sets=None):
    """Add ``sum_t coef[t] * tree_t(x)`` to ``out`` for depthwise trees: :func:`walk_pack`
    then :func:`predict_walk` (a model predicted many times packs once).

    Parameters
    ----------
    X_binned : IN uint8 (n_features, n_rows).
    feature, split_bin, nan_right, left, right, value : IN node arrays of all trees
        concatenated; tree ``t`` owns ``node_offset[t]:node_offset[t+1]`` and its root is the
        first. ``left``/``right`` are indices within the tree (-1 for a leaf).
    coef : IN float64 (n_trees,).
    missing_bin : bin of missing values.
    out : IN/OUT float64 (n_rows,).
    n_threads : OpenMP threads (parallel over blocks of rows).
    cat_sets : IN uint32 (n_sets, 8), optional: the sets of the categorical splits of all
        trees (a categorical node's ``split_bin`` indexes it).
    """
    walk = walk_pack(X_binned.shape[0], feature, split_bin, nan_right, left, right, value,
                     node_offset, missing_bin, cat_sets)
    predict_walk(X_binned, coef=coef, out=out, n_threads=n_threads, **walk)


def walk_pack(Py_ssize_t n_features, const idx_t[::1] feature, const idx_t[::1] split_bin,
              const unsigned char[::1] nan_right, const idx_t[::1] left,
              const idx_t[::1] right, const double[::1] value, const idx_t[::1] node_offset,
              int missing_bin, const uint32_t[:, ::1] cat_sets=None):
    """Depthwise trees packed for :func:`predict_walk`.

    Each tree is packed as ``_partition._walk_tables`` packs it (one 16-byte node per level,
    breadth-first, children consecutive, branch-free), with the value of every packed node.
    For the vector walk (``simd_walk.h``) a tree without categorical splits, over fewer than
    65,536 features, also has each node's split in one 32-bit word (``node_word``) and its
    left child in ``node_left``. Packing rejects malformed trees (children out of range or
    not after their parent, split features out of range).

    Parameters are those of :func:`predict_depthwise`; ``n_features`` is the number of
    rows of the binned matrices it will predict.

    Returns
    -------
    dict
        The keyword arguments of :func:`predict_walk` besides the rows, coefficients,
        output and threads: ``packed`` int32 (n_nodes, 4), ``packed_value``,
        ``packed_offset`` (n_trees + 1), ``depth`` (n_trees,), ``node_word`` uint32 and
        ``node_left`` int32 (n_nodes,), ``numeric`` uint8 (n_trees,: 1 when the tree has
        its words), ``n_features`` and ``cat_sets``.
    """
    cdef Py_ssize_t n_trees = node_offset.shape[0] - 1
    if n_trees < 0:
        raise ValueError("node_offset needs n_trees + 1 entries")
    _check_pack(node_offset, n_trees, feature.shape[0])
    missing_of_feature = np.full(n_features, missing_bin, dtype=np.int32)
    tables = [_walk_tables(missing_of_feature, feature[lo:hi], split_bin[lo:hi],
                           nan_right[lo:hi], left[lo:hi], right[lo:hi], cat_sets)
              for lo, hi in zip(node_offset[:n_trees], node_offset[1:n_trees + 1])]
    packed = (np.concatenate([tb[0] for tb in tables]) if n_trees
              else np.zeros((0, 4), dtype=np.int32))
    packed_value = (np.concatenate(
        [np.asarray(value[lo:hi])[tb[1]] for tb, lo, hi in
         zip(tables, node_offset[:n_trees], node_offset[1:n_trees + 1])]) if n_trees
        else np.zeros(0))
    packed_offset = np.concatenate(
        [[0], np.cumsum([tb[0].shape[0] for tb in tables])]).astype(np.int32)
    depth = np.array([tb[2] for tb in tables], dtype=np.int32)
    numeric = np.array([n_features < 65536 and not (tb[0][:, 3] < 0).any() for tb in tables],
                       dtype=np.uint8)
    # a leaf (threshold INT32_MAX) gets threshold 255 and upper 0: it never goes right
    leaf = packed[:, 2] == 2147483647
    node_word = np.where(leaf, 255, (packed[:, 0].astype(np.uint32) << 16)
                         | (packed[:, 3].astype(np.uint32) & 255) << 8
                         | (packed[:, 2].astype(np.uint32) & 255)).astype(np.uint32)
    sets = (np.zeros((0, 8), dtype=np.uint32) if cat_sets is None
            else np.ascontiguousarray(cat_sets))
    return dict(packed=packed, packed_value=packed_value, packed_offset=packed_offset,
                depth=depth, node_word=node_word, node_left=np.ascontiguousarray(packed[:, 1]),
                numeric=numeric, n_features=n_features, cat_sets=sets)


def predict_walk(const bin_t[:, ::1] X_binned, const idx_t[:, ::1] packed,
                 const double[::1] packed_value, const idx_t[::1] packed_offset,
                 const idx_t[::1] depth, const uint32_t[::1] node_word,
                 const idx_t[::1] node_left, const unsigned char[::1] numeric,
                 Py_ssize_t n_features, const double[::1] coef, double[::1] out,
                 int n_threads, const uint32_t[:, ::1] cat_sets=None):
    """Add ``sum_t coef[t] * tree_t(x)`` to ``out`` for trees packed by :func:`walk_pack`.

    Each block of rows is copied feature-major into a per-thread buffer, a power of two of
    bytes a feature (``BLOCK``, or fewer for fewer rows), then every tree is walked over it.
    In the AVX2 build, a tree without categorical splits is walked 64 rows at a time, 8 to a
    vector (``simd_walk.h``); the other trees, the rows left over and the baseline build
    walk 32 rows at a time. The rows of a group go through each level together, so their
    chains of loads overlap. Each row's sum runs over the trees in order, one product and
    one addition a tree, so the result depends neither on ``n_threads`` nor on the build.

    Parameters
    ----------
    X_binned : IN uint8 (n_features, n_rows).
    packed, packed_value, packed_offset, depth, node_word, node_left, numeric, n_features,
    cat_sets : IN, from :func:`walk_pack`.
    coef : IN float64 (n_trees,).
    out : IN/OUT float64 (n_rows,).
    n_threads : OpenMP threads (parallel over blocks of rows).
    """
    cdef const uint32_t* sets = sets_pointer(cat_sets)
    cdef Py_ssize_t n_rows = X_binned.shape[1]
    cdef Py_ssize_t n_trees = coef.shape[0]
    cdef Py_ssize_t n_blocks = (n_rows + BLOCK - 1) // BLOCK
    cdef Py_ssize_t blk, t, f, r, n, start, base
    cdef int log_stride = 0
    cdef bin_t* buf
    if X_binned.shape[0] != n_features:
        raise ValueError(f"X_binned has {X_binned.shape[0]} features; the trees were packed "
                         f"for {n_features}")
    _check_pack(packed_offset, n_trees, packed.shape[0])
    if (depth.shape[0] != n_trees or numeric.shape[0] != n_trees or packed.shape[1] != 4
            or packed_value.shape[0] != packed.shape[0]
            or node_word.shape[0] != packed.shape[0]
            or node_left.shape[0] != packed.shape[0]):
        raise ValueError("packed tables and coef disagree")
    if out.shape[0] != n_rows:
        raise ValueError("out must have n_rows entries")
    if n_rows == 0 or n_trees == 0:
        return
    n_threads = max(1, min(n_threads, n_blocks))     # one block: no thread to start
    while (1 << log_stride) < min(n_rows, BLOCK):
        log_stride += 1
    # per thread: a block's bins, and 3 readable bytes after them for the 4-byte gathers
    cdef bin_t[:, ::1] blocks = np.zeros((n_threads, (n_features << log_stride) + 4),
                                         dtype=np.uint8)
    with nogil:
        for blk in prange(n_blocks, schedule="static", num_threads=n_threads):
            start = blk * BLOCK
            n = block_stop(blk, BLOCK, n_rows) - start
            buf = &blocks[threadid(), 0]
            for f in range(n_features):
                memcpy(buf + (f << log_stride), &X_binned[f, start], n)
            for t in range(n_trees):
                base = packed_offset[t]
                r = 0
                if BOOSTLIB_SIMD_WALK and numeric[t]:
                    while r + BOOSTLIB_SIMD_WALK_ROWS <= n:
                        simd_walk64(buf, log_stride, r, depth[t], &node_word[base],
                                    &node_left[base], &packed_value[base], coef[t],
                                    &out[start + r])
                        r = r + BOOSTLIB_SIMD_WALK_ROWS
                while r < n:
                    _walk_add(buf, 1 << log_stride, r, min(WALK, n - r), depth[t],
                              <const WalkNode*> &packed[base, 0], &packed_value[base],
                              coef[t], sets, &out[start])
                    r = r + WALK


cdef inline void _walk_add(const bin_t* X, Py_ssize_t stride, Py_ssize_t start,
                           Py_ssize_t count, Py_ssize_t depth, const WalkNode* nodes,
                           const double* value, double c, const uint32_t* sets,
                           double* out) noexcept nogil:
    """``out[r] += c * value[leaf(r)]`` for rows ``start .. start + count`` (count <= WALK)
    of a feature-major matrix of ``stride`` bytes a feature, walked ``depth`` levels
    together, branch-free."""
    cdef idx_t node[WALK]
    cdef Py_ssize_t j, level
    cdef int b
    cdef const WalkNode* nd
    for j in range(count):
        node[j] = 0
    for level in range(depth):
        for j in range(count):
            nd = nodes + node[j]
            b = X[nd.feature * stride + start + j]
            if nd.upper < 0:
                node[j] = nd.left + 1 - in_set(sets, nd.threshold, b)
            else:
                node[j] = nd.left + ((b > nd.threshold) & (b <= nd.upper))
    for j in range(count):
        out[start + j] += c * value[node[j]]


cdef _check_pack(const idx_t[::1] offset, Py_ssize_t n_trees, Py_ssize_t n_items):
    cdef Py_ssize_t t
    if offset.shape[0] != n_trees + 1 or offset[0] != 0 or offset[n_trees] != n_items:
        raise ValueError("offsets must have n_trees + 1 entries from 0 to the item count")
    for t in range(n_trees):
        if offset[t + 1] < offset[t]:
            raise ValueError("offsets must be non-decreasing")


def add_leaf_values(double[::1] raw, const idx_t[::1] rows, const idx_t[::1] node_of_row,
                    const double[::1] value, double coef, int n_threads):
    """``raw[rows[p]] += coef * value[node_of_row[p]]`` (training predictions, no traversal).

    Parameters
    ----------
    raw : IN/OUT float64 (n_rows_total,).
    rows, node_of_row : IN int32, aligned.
    value : IN float64 per node id.
    coef : the tree's coefficient.
    n_threads : OpenMP threads (parallel over rows; each row is written once).
    """
    cdef Py_ssize_t n = rows.shape[0], n_raw = raw.shape[0], n_nodes = value.shape[0]
    cdef Py_ssize_t p
    cdef int bad = 0
    if node_of_row.shape[0] != n:
        raise ValueError("rows and node_of_row must be aligned")
    n_threads = row_threads(n, n_threads)
    with nogil:                        # every id is checked before any score changes
        for p in prange(n, schedule="static", num_threads=n_threads):
            # (a negative id is a huge unsigned one: two comparisons without branches)
            bad |= (<size_t> rows[p] >= <size_t> n_raw) | (<size_t> node_of_row[p]
                                                           >= <size_t> n_nodes)
    if bad:
        raise ValueError("row or node id out of range")
    with nogil:
        for p in prange(n, schedule="static", num_threads=n_threads):
            raw[rows[p]] += coef * value[node_of_row[p]]
