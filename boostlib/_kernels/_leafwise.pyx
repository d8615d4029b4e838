"""Leaf-wise (best-first) growth of a whole tree in one call.

:class:`boostlib.engine.trees.lossguide.LossguideKind` grows leaf-wise trees with a Python
loop over the split, partition and histogram kernels, which handles every case. A split
there costs a few dozen microseconds of Python and call overhead, about what the kernels
themselves cost on small data. :func:`grow_tree` runs the same loop compiled, for the
common case: no column rules per node, no split noise, a dense matrix, one machine
(categorical features, a column sample per tree and monotone constraints included). It takes the same decisions in the same order from the same sums, so
the trees are identical (``tests/test_kernels_leafwise.py``).
"""
from cython.parallel cimport parallel, prange, threadid
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy, memset

import numpy as np

from .common cimport bin_t, idx_t, int64_t, uint32_t, uint64_t, CH_C, CAT_SPLIT, SET_WORDS, \
    add_row, add_listed, barrier, entry_parts, fill_defaults, goes_right, leaf_value, \
    team_size, partition_segment, prefetch, MAX_PARTS, PREFETCH_ROWS
from ._histogram cimport check_entries, check_expand_tables, entries_histogram, \
    expand_features
from ._splitting cimport (CatParams, USE_WORDS, _cat_params, _cat_best, _check_layout,
                          cat_result, cat_set_bits, _feature_best, pick_feature, fewest_bins,
                          feature_sums, numeric_result, threshold_sums)

cdef extern from *:
    """
    #ifndef BOOSTLIB_DEBUG
    #define BOOSTLIB_DEBUG 0
    #endif
    """
    bint BOOSTLIB_DEBUG   # 1 in the debug build (setup.py defines it)

cdef extern from "math.h" nogil:
    double INFINITY
    bint isfinite(double)

cdef enum:
    # Below these sizes a parallel region costs more than it saves: a histogram of fewer
    # rows x columns plus its bins x channels (zeroed and subtracted), and a search of fewer
    # bins (leaves x features' bins), take one thread (columns, bins: those kept).
    PARALLEL_CELLS = 4096
    PARALLEL_BINS = 1024
    # A leaf's rows are partitioned by up to one thread per this many of them (a stable
    # partition is unique: the threads change nothing), by at most MAX_PARTITION_THREADS.
    PARALLEL_PARTITION_ROWS = 1024
    MAX_PARTITION_THREADS = 64
    # The leaves' bins in use (a bit per bin and feature, for the split search) are kept
    # when they take at most this many bytes.
    MAX_MASK_BYTES = 1 << 26


ctypedef struct Leaf:
    idx_t node          # node id in the tree
    idx_t slot          # histogram slot (-1: none, the leaf will not be split)
    Py_ssize_t start    # segment of the position array
    Py_ssize_t stop
    int depth
    double split[7]     # the search's result (find_split_nodes' ``out`` row); [0] < 0: none
    unsigned char* dead # per feature: 1 if not searched in this leaf (and its subtree): no
                        # threshold leaves min_samples_leaf rows a side, or (prune_features)
                        # no split of positive gain in an ancestor
    uint64_t* in_use    # per feature, USE_WORDS words: a superset of its nonzero bins (the
                        # search's ``in_use``); NULL: not kept
    double lo           # monotone constraints: the interval the leaf's value is kept in
    double hi


ctypedef struct Source:
    # What grow_tree's histograms are summed from (see its X_pos, gradient, hessian and
    # entries).
    const bin_t* X_pos      # dense rows by position, row_bytes a row (unused with entries)
    Py_ssize_t row_bytes
    const idx_t* rows       # the training row of each position (read by entries)
    const float* gradient   # by position
    const float* hessian
    const idx_t* hoff       # the histogram's column layout: n_cols columns
    Py_ssize_t n_cols
    const int64_t* es       # entries (NULL: dense rows), over n_entry_rows training rows
    const idx_t* eb
    const idx_t* da
    Py_ssize_t n_entry_rows
    double* tot             # entries: the rows' total (3), and the parts' work space
    double* spare
    int n_threads


cdef inline bint _too_small(const Leaf* leaf, Py_ssize_t min_split_rows) noexcept nogil:
    # Whether ``leaf`` has too few rows to be split (see grow_tree's ``min_split_rows``).
    return leaf.stop - leaf.start < min_split_rows


cdef inline void _subtract(double* hp, const double* hs, const idx_t* offsets,
                           const idx_t* features, Py_ssize_t i0, Py_ssize_t i1,
                           Py_ssize_t n_ch) noexcept nogil:
    # ``hp -= hs`` over the bins of ``features[i0:i1]`` (a larger child's histogram from
    # its parent's and its smaller sibling's).
    cdef Py_ssize_t u, q
    for u in range(i0, i1):
        for q in range(offsets[features[u]] * n_ch, offsets[features[u] + 1] * n_ch):
            hp[q] = hp[q] - hs[q]


cdef void _node_histogram(const Source* s, const idx_t* order, Py_ssize_t start,
                          Py_ssize_t stop, const idx_t* lst, Py_ssize_t n_list,
                          Py_ssize_t kept_bins, Py_ssize_t n_ch, double* hb, double* hp,
                          const idx_t* offsets) noexcept nogil:
    """The histogram ``hb`` (``s``'s column layout, ``n_ch`` channels) of the rows at the
    positions ``order[start:stop]`` (ascending), in the columns ``lst[:n_list]`` (ascending;
    their features have ``kept_bins`` bins); with ``hp`` (the columns then being the
    features, of layout ``offsets``), ``hp -= hb`` over them too: the larger sibling's
    histogram from its parent's. Each bin adds its rows in their order, on any number of
    threads."""
    cdef Py_ssize_t m = stop - start, u, c, f0, f1, q, p, pf, nc
    cdef const idx_t* hoff = s.hoff
    if s.es != NULL:
        # a row's entries span every column: all are summed, and the listed ones alone
        # get their default bins
        entries_histogram(s.es, s.eb, s.rows, order, start, stop, s.gradient, s.hessian,
                          hb, s.tot, hoff[s.n_cols], n_ch,
                          entry_parts(m, s.es[s.n_entry_rows], s.n_entry_rows,
                                      hoff[s.n_cols]), s.spare, s.n_threads)
        for u in range(n_list):
            fill_defaults(hb, s.tot, hoff, s.da, lst[u], lst[u] + 1, n_ch)
        if hp != NULL:
            _subtract(hp, hb, offsets, lst, 0, n_list, n_ch)
        return
    nc = s.n_threads if s.n_threads < n_list else n_list
    if nc < 1 or m * n_list + kept_bins * n_ch < PARALLEL_CELLS:
        nc = 1
    for c in prange(nc, schedule="static", num_threads=nc):
        f0 = c * n_list // nc       # the chunk's columns: lst[f0:f1]
        f1 = (c + 1) * n_list // nc
        for u in range(f0, f1):
            for q in range(hoff[lst[u]] * n_ch, hoff[lst[u] + 1] * n_ch):
                hb[q] = 0.0
        for q in range(start, stop):
            if q + PREFETCH_ROWS < stop:
                pf = order[q + PREFETCH_ROWS]
                prefetch(s.X_pos + pf * s.row_bytes)
                prefetch(&s.gradient[pf])
                prefetch(&s.hessian[pf])
            p = order[q]
            if n_list == s.n_cols:      # every column: lst[u] == u
                add_row(s.X_pos + p * s.row_bytes, hb, hoff, f0, f1, n_ch, s.gradient[p],
                        s.hessian[p])
            else:
                add_listed(s.X_pos + p * s.row_bytes, hb, hoff, lst, f0, f1, n_ch,
                           s.gradient[p], s.hessian[p])
        if hp != NULL:
            _subtract(hp, hb, offsets, lst, f0, f1, n_ch)


cdef void _spread_counts(double* h, const double* counts, Py_ssize_t n_bins) noexcept nogil:
    """Bins of 2 channels packed at ``h`` spread to 3 in place, each with its count from
    ``counts`` (from the last bin down: a bin's 3 slots never hold an unread one's 2)."""
    cdef Py_ssize_t j
    cdef double g, hh
    for j in range(n_bins - 1, -1, -1):
        g = h[2 * j]
        hh = h[2 * j + 1]
        h[3 * j] = g
        h[3 * j + 1] = hh
        h[3 * j + 2] = counts[j]


cdef bint _count_feasible(const double* hf, Py_ssize_t nb, double C,
                          double min_samples_leaf) noexcept nogil:
    """Whether some threshold of a feature (3 channels, ``nb`` bins then the missing bin,
    at ``hf``) leaves at least ``min_samples_leaf`` rows on each side, either way the
    missing rows go: every candidate ``_feature_best`` may take is among these.

    Row counts are exact and a child's count on either side of a threshold is at most its
    parent's, so a feature without such a threshold has none in the node's descendants
    either: the search skips it there (LightGBM skips such "unsplittable" features too)."""
    cdef double cm = hf[nb * 3 + CH_C], cl = 0.0
    cdef Py_ssize_t b
    for b in range(nb):
        cl = cl + hf[b * 3 + CH_C]
        if b < nb - 1 and cl + cm >= min_samples_leaf and C - cl - cm >= min_samples_leaf:
            return True
        if cm != 0.0 and cl >= min_samples_leaf and C - cl >= min_samples_leaf:
            return True
    return False


cdef inline double _clipped_value(double G, double H, double l2, double lo,
                                  double hi) noexcept nogil:
    """The Newton value ``-G / (H + l2)`` clipped to ``[lo, hi]`` (``bounded_value``)."""
    cdef double v = -G / (H + l2)
    if v < lo:
        v = lo
    if v > hi:
        v = hi
    return v


cdef void _child_bounds(const double* hf, Py_ssize_t n_ch, Py_ssize_t nb, Py_ssize_t b,
                        int d, int mono, double l2, Leaf* parent, Leaf* left,
                        Leaf* right) noexcept nogil:
    """The value intervals of the children of ``parent``'s split at bin ``b`` (missing rows
    right when ``d``) of a feature constrained ``mono`` (its histogram at ``hf``), as
    ``NodeRules.split`` sets them: with ``mono``, they meet at the midpoint of the two
    children's clipped values, each sum taken in ``_splitting.split_stats``' order."""
    cdef double sums[4]     # gl, hl, gr, hr
    cdef Py_ssize_t c
    cdef double wl, wr, mid
    cdef double lo = parent.lo, hi = parent.hi
    left.lo = lo
    left.hi = hi
    right.lo = lo
    right.hi = hi
    if mono == 0:
        return
    for c in range(2):
        threshold_sums(hf, n_ch, nb, b, d, c, &sums[c], &sums[2 + c])
    wl = _clipped_value(sums[0], sums[1], l2, lo, hi)
    wr = _clipped_value(sums[2], sums[3], l2, lo, hi)
    mid = 0.5 * (wl + wr)
    if mono > 0:
        left.hi = mid
        right.lo = mid
    else:
        left.lo = mid
        right.hi = mid


ctypedef struct Search:
    # What the split search of a leaf reads, the same for every leaf of a tree.
    double* h0                  # the histogram slots
    Py_ssize_t slot_stride      # doubles per slot
    Py_ssize_t n_ch
    const idx_t* offsets
    const idx_t* nbnm
    Py_ssize_t n_features
    Py_ssize_t f_min            # the feature a leaf's sums are read from (node_sums')
    double l2
    double msl
    double mcw
    bint prune_gainless         # prune_features: no positive gain here, none in the subtree
    Py_ssize_t min_split_rows   # a leaf of fewer rows has no split (both sides too small)
    const signed char* monotone # per feature -1, 0, +1; NULL: no monotone constraint
    const unsigned char* is_cat     # NULL: no categorical feature
    CatParams cp
    double* totals              # work space: (2, 3)
    double* scratch             # work space: (2, n_features, 4)
    int n_threads
    const unsigned char* allowed    # (k, n_features) of this search: 1 where a leaf may
                                    # split (column rules per node); NULL: every feature


cdef Py_ssize_t _kept_features(const unsigned char* dead, Py_ssize_t n_features,
                               Py_ssize_t f_min, const idx_t* offsets, idx_t* kept,
                               Py_ssize_t* kept_bins) noexcept nogil:
    """The features a leaf whose ``dead`` features these are keeps histograms of, for
    itself and its subtree (where they stay dead), into ``kept`` (ascending): the live
    ones and ``f_min`` (its sums are read there). Returns their number, and their bins in
    ``kept_bins``. The others' bins of the leaf's histogram slot are never read."""
    cdef Py_ssize_t f, n = 0, bins = 0
    for f in range(n_features):
        if not dead[f] or f == f_min:
            kept[n] = <idx_t> f
            n += 1
            bins += offsets[f + 1] - offsets[f]
    kept_bins[0] = bins
    return n


cdef Py_ssize_t _kept_columns(const idx_t* kept, Py_ssize_t n_kept, const idx_t* column_of,
                              Py_ssize_t n_cols, unsigned char* mark,
                              idx_t* columns) noexcept nogil:
    """The bundled columns that hold the ``kept`` features, and the first column (whose
    bins sum to the node's total, for default bins), into ``columns`` (ascending)."""
    cdef Py_ssize_t i, c, n = 0
    memset(mark, 0, n_cols)
    mark[0] = 1
    for i in range(n_kept):
        mark[column_of[kept[i]]] = 1
    for c in range(n_cols):
        if mark[c]:
            columns[n] = <idx_t> c
            n += 1
    return n


cdef inline void _search_one(const Search* s, Leaf** leaves, Py_ssize_t k, const idx_t* kept,
                             Py_ssize_t t) noexcept nogil:
    """:func:`_search`'s search of one (feature, leaf) pair, ``t``: feature ``kept[t // k]``
    in ``leaves[t % k]``, into the scratch."""
    cdef Py_ssize_t i = t // k, n_features = s.n_features, n_ch = s.n_ch
    cdef Py_ssize_t j = t - i * k
    cdef Py_ssize_t f = kept[i]
    cdef double* best = s.scratch + 4 * (j * n_features + f)
    cdef const double* hf = s.h0 + leaves[j].slot * s.slot_stride + s.offsets[f] * n_ch
    if (leaves[j].dead[f] or (s.allowed != NULL and not s.allowed[j * n_features + f])
            or _too_small(leaves[j], s.min_split_rows)):
        best[1] = -1.0
    elif s.is_cat != NULL and s.is_cat[f]:
        _cat_best(hf, n_ch, s.nbnm[f], s.l2, s.msl, s.mcw, s.cp, NULL, best)
        if s.prune_gainless and best[1] < 0:
            leaves[j].dead[f] = 1
    else:
        _feature_best(hf, n_ch, s.nbnm[f], s.totals + 3 * j, s.l2, s.msl, s.mcw, NULL,
                      best, leaves[j].lo, leaves[j].hi,
                      s.monotone[f] if s.monotone != NULL else 0,
                      leaves[j].in_use + USE_WORDS * f if leaves[j].in_use != NULL
                      else NULL)
        if s.prune_gainless and best[1] < 0:
            leaves[j].dead[f] = 1
        elif (n_ch == 3 and s.msl > 0.0 and best[1] < 0
              and not _count_feasible(hf, s.nbnm[f], s.totals[3 * j + 2], s.msl)):
            leaves[j].dead[f] = 1


cdef void _search(const Search* s, Leaf** leaves, Py_ssize_t k, const idx_t* kept,
                  Py_ssize_t n_kept, Py_ssize_t kept_bins) noexcept nogil:
    """Best split of each of ``leaves[:k]`` (``split``), as ``find_split_nodes`` finds it,
    then the direction of missing values unseen in training as the Python loop sets it
    (the side with more rows). Only the ``n_kept`` features ``kept`` are read
    (:func:`_kept_features` of the leaves' common dead features; ``kept_bins``: their
    bins). A feature ``dead`` in a leaf, or not ``allowed`` in this search, is not
    searched, nor is any feature of a leaf of fewer than ``min_split_rows`` rows; a
    numeric one newly found without a threshold of ``min_samples_leaf`` rows a
    side becomes dead in it (with the count channel: ``n_ch == 3``), and with
    ``prune_gainless`` any feature without a split of positive gain does. A categorical
    split is reported as ``find_split_nodes`` reports it: (set size, direction) for (bin,
    nan_right)."""
    cdef Py_ssize_t t, j, f, n_features = s.n_features, n_ch = s.n_ch, n_searched = 0
    cdef Leaf* leaf
    cdef const double* hf
    cdef double* best
    for j in range(k):
        if not _too_small(leaves[j], s.min_split_rows):
            n_searched += 1
            feature_sums(s.h0 + leaves[j].slot * s.slot_stride, n_ch, s.offsets, s.nbnm,
                         s.f_min, s.totals + 3 * j)
    if n_searched * kept_bins < PARALLEL_BINS:
        for t in range(k * n_kept):     # (a parallel region of one thread costs 0.4 us)
            _search_one(s, leaves, k, kept, t)
    else:
        for t in prange(k * n_kept, schedule="static", num_threads=s.n_threads):
            _search_one(s, leaves, k, kept, t)
    for j in range(k):
        leaf = leaves[j]
        f = pick_feature(s.scratch + 4 * n_features * j, n_kept, kept)
        if f < 0:
            leaf.split[0] = -1.0
            continue
        hf = s.h0 + leaf.slot * s.slot_stride + s.offsets[f] * n_ch
        best = s.scratch + 4 * (n_features * j + f)
        if s.is_cat != NULL and s.is_cat[f]:
            cat_result(hf, n_ch, s.nbnm[f], s.cp, best, f, leaf.split)
            continue
        numeric_result(hf, n_ch, s.nbnm[f], best, f, leaf.split)
        if leaf.split[6] == 0.0:       # no missing rows seen: they follow the majority
            leaf.split[2] = 1.0 if leaf.split[5] > leaf.split[4] else 0.0


cdef int _draw_allowed(object draw, Py_ssize_t parent, Py_ssize_t feature, Py_ssize_t left,
                      Py_ssize_t right, Py_ssize_t n_features, Search* s,
                      list held) noexcept with gil:
    """``s.allowed`` = ``draw(parent, feature, left, right)``, the features each leaf of the
    next search may split on: the root (``parent`` -1) or the two children of ``parent``'s
    split on ``feature`` (``held[0]`` keeps the array). Returns -1 with the exception in
    ``held[1]``."""
    cdef const unsigned char[:, ::1] view
    cdef Py_ssize_t k = 1 if parent < 0 else 2
    try:
        allowed = np.ascontiguousarray(draw(parent, feature, left, right), dtype=np.uint8)
        if allowed.shape != (k, n_features):
            raise ValueError(f"node_features({parent}, {feature}, {left}, {right}) gave "
                             f"shape {allowed.shape}, expected ({k}, {n_features})")
        view = allowed
        held[0] = allowed
        s.allowed = &view[0, 0]
        return 0
    except BaseException as exc:        # raised once the tree's memory is freed
        held[1] = exc
        return -1


cdef class GrowSettings:
    """What :func:`grow_tree` reads unchanged from tree to tree of a fit: the binned data
    and its histogram layout, the bundle and entry tables, the split search's parameters.
    Made once per fit (``boostlib.engine.trees.compiled``); its own arguments are checked
    here, once.

    Parameters
    ----------
    X_binned : IN uint8 (n_features, n_rows_total), feature-major binned data (the
        partition reads the split feature at ``rows[p]``).
    offsets, n_bins_nonmissing : IN int32, the histogram layout (see ``_histogram``).
    l2 : the search's l2 regularisation, as ``_splitting.find_split_nodes`` takes it.
    max_depth : the trees' depth limit (>= 1).
    missing_bin : bin of missing values in ``X_binned``.
    n_threads : OpenMP threads (split search and histograms, over features: the result does
        not depend on them).
    column_offsets, source, default_at, others, others_start : optional, together
        With bundles of sparse features (:mod:`boostlib.engine.bundling`): the column
        layout of ``X_pos``'s histograms, and the tables that expand them into the features'
        (``_histogram.expand_bundles``).
    is_cat, cat_params : optional, together
        Categorical features (uint8 per feature) and their search parameters, as
        ``_splitting.find_split_nodes`` takes them.
    entry_start, entry_bins, entry_default : optional, together
        Sparse rows, as ``_histogram.build_histograms`` takes them, indexed by training row
        (``rows[p]``); ``X_pos`` then has no columns and one row per training row.
    prune_features : bool
        A feature without a split of positive gain in a leaf is not searched again in that
        leaf's subtree (LightGBM's rule; see ``GrowParams.prune_features``).
    monotone : IN int8 (n_features,), optional
        Monotone constraints (-1, 0, +1 per feature); the trees then need ``node_bounds``.
    min_split_rows : int
        A leaf of fewer rows has no split (the grower passes ``2 * min_samples_leaf``: each
        side needs ``min_samples_leaf`` rows): it is not searched, its histogram is built
        only when its sibling needs it for the subtraction, and a split whose children both
        have fewer rows calls no ``node_features``. The tree is the one grown searching
        them. Counts are the leaves' rows here, so on one machine only.
    """

    cdef const bin_t[:, ::1] X_binned
    cdef const idx_t[::1] offsets
    cdef const idx_t[::1] n_bins_nonmissing
    cdef readonly double l2
    cdef readonly int max_depth
    cdef readonly int missing_bin
    cdef readonly int n_threads
    cdef const idx_t[::1] column_offsets
    cdef const Py_ssize_t[::1] source
    cdef const Py_ssize_t[::1] default_at
    cdef const Py_ssize_t[::1] others
    cdef const Py_ssize_t[::1] others_start
    cdef const unsigned char[::1] is_cat
    cdef const double[::1] cat_params
    cdef const int64_t[::1] entry_start
    cdef const idx_t[::1] entry_bins
    cdef const idx_t[::1] entry_default
    cdef readonly bint prune_features
    cdef const signed char[::1] monotone
    cdef readonly Py_ssize_t min_split_rows

    def __init__(self, const bin_t[:, ::1] X_binned, const idx_t[::1] offsets,
                 const idx_t[::1] n_bins_nonmissing, double l2, int max_depth,
                 int missing_bin, int n_threads, *, const idx_t[::1] column_offsets=None,
                 const Py_ssize_t[::1] source=None, const Py_ssize_t[::1] default_at=None,
                 const Py_ssize_t[::1] others=None,
                 const Py_ssize_t[::1] others_start=None,
                 const unsigned char[::1] is_cat=None, const double[::1] cat_params=None,
                 const int64_t[::1] entry_start=None, const idx_t[::1] entry_bins=None,
                 const idx_t[::1] entry_default=None, bint prune_features=False,
                 const signed char[::1] monotone=None, Py_ssize_t min_split_rows=0):
        cdef Py_ssize_t n_features = X_binned.shape[0], n_cols
        if offsets.shape[0] != n_features + 1 or n_bins_nonmissing.shape[0] != n_features:
            raise ValueError("offsets and n_bins_nonmissing must match the features")
        if is_cat is not None and is_cat.shape[0]:
            if cat_params is None:
                raise ValueError("is_cat needs cat_params")
            _cat_params(cat_params)
        _check_layout(offsets[n_features], offsets, n_bins_nonmissing,
                      is_cat if is_cat is not None else np.empty(0, np.uint8), n_features)
        if column_offsets is not None:
            n_cols = column_offsets.shape[0] - 1
            if (source is None or default_at is None or others is None
                    or others_start is None or n_cols < 1):
                raise ValueError("column_offsets needs source, default_at, others and "
                                 "others_start, as expand_bundles takes them")
            check_expand_tables(column_offsets[n_cols], offsets[n_features], source,
                                default_at, others, others_start, column_offsets[1])
        if entry_start is None and (entry_bins is not None or entry_default is not None):
            raise ValueError("entry_start, entry_bins and entry_default go together")
        if max_depth < 1:
            raise ValueError("max_depth >= 1 is needed")
        if monotone is not None and monotone.shape[0] != n_features:
            raise ValueError("monotone needs one entry per feature")
        self.X_binned = X_binned
        self.offsets = offsets
        self.n_bins_nonmissing = n_bins_nonmissing
        self.l2 = l2
        self.max_depth = max_depth
        self.missing_bin = missing_bin
        self.n_threads = n_threads
        self.column_offsets = column_offsets
        self.source = source
        self.default_at = default_at
        self.others = others
        self.others_start = others_start
        self.is_cat = is_cat
        self.cat_params = cat_params
        self.entry_start = entry_start
        self.entry_bins = entry_bins
        self.entry_default = entry_default
        self.prune_features = prune_features
        self.monotone = monotone
        self.min_split_rows = min_split_rows


def grow_tree(GrowSettings settings not None, const idx_t[::1] rows,
              const bin_t[:, ::1] X_pos, const float[::1] gradient,
              const float[::1] hessian, double[:, :, ::1] hist, double min_samples_leaf,
              double min_child_weight, int max_leaves, idx_t[::1] node_of_row, *,
              bint level_order=False, const unsigned char[::1] skip_features=None,
              double[:, ::1] node_bounds=None, object node_features=None,
              const double[::1] value_gradient=None, const double[::1] value_hessian=None,
              double[:, ::1] node_sums=None, double[:, ::1] node_values=None,
              bint build_root=False, const double[::1] root_counts=None):
    """Grow one leaf-wise tree: the leaf whose best split gains most is split next, until
    the tree has ``max_leaves`` leaves, no leaf has a split of positive gain, or those that
    do are at ``max_depth``.

    Parameters
    ----------
    settings : GrowSettings
        What stays the same through the fit (the binned data, the layout and tables, the
        search's parameters).
    rows : IN int32 (n_fit,) training-row ids of the fitted rows.
    X_pos : IN uint8 (n_fit, n_columns), the fitted rows' binned data by position,
        row-major, as ``_histogram.build_histograms`` reads it: the features, each one's
        missing values at bin ``n_bins_nonmissing[f]``, or with bundles the bundled columns.
    gradient, hessian : IN float32 (n_fit,) by position, weights applied.
    hist : IN/OUT float64 (n_slots, offsets[-1], 2 or 3), at least
        :func:`slots_needed` slots: slot 0 holds the root's histogram (unless
        ``build_root``); the others are work space.
    min_samples_leaf, min_child_weight : as ``_splitting.find_split_nodes`` takes them
        (``min_samples_leaf`` 0 without a count channel; they may change from tree to tree).
    max_leaves : the tree's leaf limit (>= 2).
    node_of_row : OUT int32 (n_fit,) the leaf (node id) of each position.
    level_order : bool
        Number the nodes as level-wise growth does (``DepthwiseKind.grow``): level by level,
        the children of the level's split nodes in the order of that level, a level's order
        being the smaller child then the larger of each split. With ``max_leaves =
        2**max_depth`` the tree is then the depthwise tree, node for node. By default node
        ``2t+1`` and ``2t+2`` are the children of the ``t``-th split.
    skip_features : IN uint8 (n_features,), optional
        Features not searched anywhere in this tree (1), as a column sample drawn for the
        tree (``colsample_bytree``) leaves out.
    node_features : callable, optional
        ``node_features(parent, feature, left, right)`` gives uint8 (k, n_features): the
        features each of the ``k`` leaves the loop searches next may split on (1), as
        column samples per node (``colsample_bynode``) and interaction constraints allow
        them. It is called before each search: the root's (``-1, -1, 0, -1``, k = 1) and
        each split's children's (the split node, its feature and the children's node ids,
        k = 2, left then right), in the order the Python loop searches them, so it draws
        the same samples.
    node_bounds : OUT float64 (2 * min(max_leaves, n_fit) - 1, 2) at least, with the
        settings' ``monotone`` (and only then)
        The interval each node's value is kept in, as the Python loops' ``NodeRules`` keeps
        them (see ``_splitting._feature_best``), in the nodes' order (``level_order``
        included).
    value_gradient, value_hessian, node_sums : optional, together
        IN float64 (n_fit,) by position, and OUT float64 (2 * min(max_leaves, n_fit) - 1,
        3) at least: each node's sums of the two and its rows, as
        ``_partition.node_sums`` gives them for ``node_of_row`` (bit for bit: a leaf's rows
        are added in the order of their positions; split nodes get zeros), taken in the
        pass that writes ``node_of_row``.
    node_values : OUT float64 (2, 2 * min(max_leaves, n_fit) - 1) at least, optional (with
        ``node_sums``)
        Row 0: each node's value from its sums, ``-G / (H + l2)`` as
        ``_partition.leaf_values`` gives it (0 at split nodes); row 1: its cover, the rows
        of its leaves (added as ``_partition.subtree_sums`` adds them).
    build_root : bool
        Build the root's histogram (slot 0) here, from every fitted row, as
        ``_histogram.build_histograms`` and ``expand_bundles`` build it. Then the tree is
        grown only when the sums of the first feature's bins are finite; None is returned
        when they are not (float32 derivatives too large).
    root_counts : IN float64 (offsets[-1],), optional (with ``build_root`` and 3 channels)
        The root's row count in each bin (those of every tree fitted on every row): only the
        gradient and hessian are then summed, a third less work.

    Returns
    -------
    feature, bin, nan_right, left, right, gain, cat_sets : the node arrays (node 0 the
        root; ``left < 0`` for leaves; ``feature`` -1 and ``gain`` 0 at leaves) and the
        sets of the categorical splits (uint32 (n_sets, 8); such a split has ``nan_right``
        ``CAT_SPLIT`` and its set's row as ``bin``), in the Python loop's order: the order
        the splits were taken, or with ``level_order`` the level-wise loop's; None when
        ``build_root`` found the root's sums not finite.
    """
    cdef const bin_t[:, ::1] X_binned = settings.X_binned
    cdef const idx_t[::1] offsets = settings.offsets
    cdef const idx_t[::1] n_bins_nonmissing = settings.n_bins_nonmissing
    cdef double l2 = settings.l2
    cdef int max_depth = settings.max_depth
    cdef int missing_bin = settings.missing_bin
    cdef int n_threads = settings.n_threads
    cdef const idx_t[::1] column_offsets = settings.column_offsets
    cdef const Py_ssize_t[::1] source = settings.source
    cdef const Py_ssize_t[::1] default_at = settings.default_at
    cdef const Py_ssize_t[::1] others = settings.others
    cdef const Py_ssize_t[::1] others_start = settings.others_start
    cdef const unsigned char[::1] is_cat = settings.is_cat
    cdef const double[::1] cat_params = settings.cat_params
    cdef const int64_t[::1] entry_start = settings.entry_start
    cdef const idx_t[::1] entry_bins = settings.entry_bins
    cdef const idx_t[::1] entry_default = settings.entry_default
    cdef bint prune_features = settings.prune_features
    cdef const signed char[::1] monotone = settings.monotone
    cdef Py_ssize_t min_split_rows = settings.min_split_rows
    cdef Py_ssize_t n_fit = rows.shape[0]
    cdef Py_ssize_t n_features = X_binned.shape[0]
    cdef Py_ssize_t n_ch = hist.shape[2]
    cdef Py_ssize_t slot_stride = hist.shape[1] * n_ch
    cdef Py_ssize_t max_nodes
    cdef Py_ssize_t i, j, c, q, n_left, mid, n_nodes = 1, n_leaves = 1
    cdef Py_ssize_t root_ch, n_cols = n_features, n_slots = hist.shape[0]
    cdef bint overflow = False
    cdef bint bundled = column_offsets is not None
    cdef const idx_t* hoff = &offsets[0]
    cdef double* hc = NULL
    cdef idx_t free_slot = 1
    cdef int best, small_is_right
    cdef bint big_splits
    cdef idx_t k
    cdef double* h0
    cdef double* hs
    cdef double* hp
    cdef double* hb
    cdef Leaf* bl
    cdef Leaf* pair[2]
    cdef Leaf* small
    cdef Leaf* big
    cdef Search search
    cdef Py_ssize_t n_sets = 0
    cdef bint sparse = entry_start is not None
    cdef const int64_t* es = NULL
    cdef const idx_t* eb = NULL
    cdef const idx_t* da = NULL
    cdef double* tot = NULL
    cdef double* spare = NULL
    cdef Py_ssize_t f, n_kept, kept_bins = 0, n_list
    cdef double acc
    cdef const idx_t* lst
    if skip_features is not None and skip_features.shape[0] != n_features:
        raise ValueError("skip_features needs one entry per feature")
    search.is_cat = NULL
    if is_cat is not None and is_cat.shape[0]:      # (the settings checked them)
        search.cp = _cat_params(cat_params)
        search.is_cat = &is_cat[0]
    if bundled:
        n_cols = column_offsets.shape[0] - 1
        hoff = &column_offsets[0]
    if sparse:
        check_entries(entry_start, entry_bins, entry_default, X_pos,
                      column_offsets if bundled else offsets)
        if X_pos.shape[0] != X_binned.shape[1]:
            raise ValueError("with entries, X_pos must have a row per training row")
        es = &entry_start[0]
        eb = &entry_bins[0] if entry_bins.shape[0] else NULL
        da = &entry_default[0]
    if not (n_fit == gradient.shape[0] == hessian.shape[0] == node_of_row.shape[0]) or (
            not sparse and (X_pos.shape[0] != n_fit or X_pos.shape[1] != n_cols)):
        raise ValueError("rows, X_pos, gradient, hessian and node_of_row must be aligned")
    if hist.shape[1] != offsets[n_features] or not 2 <= n_ch <= 3:
        raise ValueError("hist must have shape (n_slots, offsets[-1], 2 or 3)")
    if max_leaves < 2:
        raise ValueError("max_leaves >= 2 is needed")
    if hist.shape[0] < slots_needed(max_depth, max_leaves, n_fit):
        raise ValueError(f"hist needs {slots_needed(max_depth, max_leaves, n_fit)} slots")
    if max_leaves > n_fit:      # every leaf holds a row: no more leaves than rows
        max_leaves = <int> n_fit if n_fit > 1 else 2
    max_nodes = 2 * max_leaves - 1
    if (monotone is None) != (node_bounds is None) or (monotone is not None and (
            monotone.shape[0] != n_features or node_bounds.shape[0] < max_nodes
            or node_bounds.shape[1] != 2)):
        raise ValueError("monotone (one entry per feature) and node_bounds (2 * max_leaves "
                         "- 1 rows of 2, max_leaves at most the rows) go together")
    cdef bint want_sums = node_sums is not None
    if not (value_gradient is None) == (value_hessian is None) == (not want_sums) or (
            want_sums and (value_gradient.shape[0] != n_fit or value_hessian.shape[0] != n_fit
                           or node_sums.shape[0] < max_nodes or node_sums.shape[1] != 3)):
        raise ValueError("value_gradient and value_hessian (a value per position) and "
                         "node_sums (2 * max_leaves - 1 rows of 3, max_leaves at most the "
                         "rows) go together")
    cdef bint want_values = node_values is not None
    if want_values and (not want_sums or node_values.shape[0] != 2
                        or node_values.shape[1] < max_nodes):
        raise ValueError("node_values needs node_sums and 2 rows of 2 * max_leaves - 1")
    cdef const double* counts = NULL
    if root_counts is not None:
        if not build_root or n_ch != 3 or root_counts.shape[0] != offsets[n_features]:
            raise ValueError("root_counts needs build_root, 3 channels and a count per bin")
        counts = &root_counts[0]
    if n_features == 0 or n_fit == 0:
        raise ValueError("growing a tree needs rows and features")
    if rows[0] < 0 or rows[n_fit - 1] >= X_binned.shape[1]:
        raise ValueError("row id out of range")
    if BOOSTLIB_DEBUG:
        for i in range(n_fit):
            if not 0 <= rows[i] < X_binned.shape[1]:
                raise IndexError("row id out of range")
            for j in range(X_pos.shape[1]):
                if X_pos[i, j] >= hoff[j + 1] - hoff[j]:
                    raise IndexError("bin out of range")
    # the node arrays, in two blocks (filled below: numpy's fills cost microseconds)
    feature_a, bin_a, left_a, right_a = np.empty((4, max_nodes), dtype=np.int32)
    nan_a, small_a = np.empty((2, max_nodes), dtype=np.uint8)
    gain_a = np.empty(max_nodes, dtype=np.float64)
    cdef unsigned char[::1] small_right = small_a
    cdef idx_t[::1] feature = feature_a, split_bin = bin_a, left = left_a, right = right_a
    cdef unsigned char[::1] nan_right = nan_a
    cdef double[::1] gain = gain_a
    for i in range(max_nodes):          # every node a leaf until split
        feature[i] = -1
        split_bin[i] = 0
        left[i] = -1
        right[i] = -1
        nan_right[i] = 0
        small_right[i] = 0
        gain[i] = 0.0
    sets_a = np.zeros((max_leaves, SET_WORDS), dtype=np.uint32)
    cdef uint32_t[:, ::1] sets = sets_a
    # The call's work space, in one block freed with the leaves: the search's totals and
    # scratch, the bundled columns' histogram, then the tables of Py_ssize_t, idx_t and
    # bytes (numpy arrays for each cost several microseconds a tree on small data).
    cdef Py_ssize_t n_hc = column_offsets[n_cols] * n_ch if bundled else 0
    # (with entries: the parts of a histogram, see _histogram.entries_histogram)
    cdef Py_ssize_t n_spare = (MAX_PARTS - 1) * (hoff[n_cols] * n_ch + 3) if sparse else 0
    cdef Py_ssize_t n_owner = (max(column_offsets[n_cols], offsets[n_features]) if bundled
                               else 0)
    cdef char* work = <char*> malloc((9 + 8 * n_features + n_hc + n_spare) * sizeof(double)
                                     + (n_features + n_owner) * sizeof(Py_ssize_t)
                                     + (2 * n_fit + 2 * n_features + n_cols) * sizeof(idx_t)
                                     + n_cols)
    cdef Leaf* store = <Leaf*> malloc(max_leaves * sizeof(Leaf))
    cdef Leaf** leaves = <Leaf**> malloc(max_leaves * sizeof(Leaf*))
    cdef unsigned char* dead = <unsigned char*> calloc(max_leaves * n_features, 1)
    cdef Py_ssize_t mask_words = n_features * USE_WORDS
    cdef bint keep_masks = max_leaves * mask_words * sizeof(uint64_t) <= MAX_MASK_BYTES
    cdef uint64_t* masks = NULL
    if keep_masks:
        masks = <uint64_t*> malloc(max_leaves * mask_words * sizeof(uint64_t))
    if (work == NULL or store == NULL or leaves == NULL or dead == NULL
            or (keep_masks and masks == NULL)):
        free(work)
        free(store)
        free(leaves)
        free(dead)
        free(masks)
        raise MemoryError()
    cdef double* totals = <double*> work                # (2, 3)
    cdef double* scratch = totals + 6                   # (2, n_features, 4)
    tot = scratch + 8 * n_features                      # 3: the rows' total, from entries
    if bundled:
        hc = tot + 3
    spare = tot + 3 + n_hc
    cdef Py_ssize_t* default_of = <Py_ssize_t*> (spare + n_spare)
    cdef Py_ssize_t* owner = default_of + n_features
    cdef idx_t* order = <idx_t*> (owner + n_owner)     # the positions, leaf by leaf
    cdef idx_t* scratch_rows = order + n_fit
    # The features a split's children keep histograms of (_kept_features), and the
    # columns built for them: the bundled columns that hold them, the features themselves
    # unbundled (with entries, whose rows span every column, all are built, and these
    # alone get their default bins).
    cdef idx_t* kept = scratch_rows + n_fit
    cdef idx_t* column_of = kept + n_features
    cdef idx_t* columns_v = column_of + n_features
    cdef unsigned char* column_mark = <unsigned char*> (columns_v + n_cols)
    for i in range(n_fit):
        order[i] = <idx_t> i
    for f in range(n_features):
        column_of[f] = 0
        default_of[f] = -1
    if bundled:
        # each feature's column: that of its bins copied from one (the first column when
        # none is); each bundled feature's row in default_at
        for c in range(n_cols):         # column bin -> column
            for q in range(column_offsets[c], column_offsets[c + 1]):
                owner[q] = c
        for f in range(n_features):
            for q in range(offsets[f], offsets[f + 1]):
                if source[q] >= 0:
                    column_of[f] = <idx_t> owner[source[q]]
                    break
        for f in range(n_features):     # feature bin -> feature
            for q in range(offsets[f], offsets[f + 1]):
                owner[q] = f
        for i in range(default_at.shape[0]):
            default_of[owner[default_at[i]]] = i
    cdef Source src
    src.X_pos = &X_pos[0, 0] if X_pos.shape[0] and X_pos.shape[1] else NULL
    src.row_bytes = X_pos.shape[1]
    src.rows = &rows[0]
    src.gradient = &gradient[0]
    src.hessian = &hessian[0]
    src.hoff = hoff
    src.n_cols = n_cols
    src.es = es
    src.eb = eb
    src.da = da
    src.n_entry_rows = X_pos.shape[0]
    src.tot = tot
    src.spare = spare
    src.n_threads = n_threads
    # expand_features' tables
    cdef const Py_ssize_t* ex_default_at = NULL
    cdef const Py_ssize_t* ex_others = NULL
    cdef const Py_ssize_t* ex_others_start = NULL
    if bundled and default_at.shape[0]:
        ex_default_at = &default_at[0]
        ex_others_start = &others_start[0]
    if bundled and others.shape[0]:
        ex_others = &others[0]
    cdef bint root_ok = True
    search.h0 = &hist[0, 0, 0]
    search.slot_stride = slot_stride
    search.n_ch = n_ch
    search.offsets = &offsets[0]
    search.nbnm = &n_bins_nonmissing[0]
    search.n_features = n_features
    search.f_min = fewest_bins(&n_bins_nonmissing[0], n_features)
    search.l2 = l2
    search.msl = min_samples_leaf
    search.mcw = min_child_weight
    search.prune_gainless = prune_features
    search.min_split_rows = min_split_rows
    search.monotone = &monotone[0] if monotone is not None and n_features else NULL
    search.totals = totals
    search.scratch = scratch
    search.n_threads = n_threads
    search.allowed = NULL
    cdef bint per_node = node_features is not None
    cdef bint failed = False
    cdef list held = [None, None]       # the allowed features of the search, an exception
    with nogil:
        h0 = search.h0
        # The leaves, in the Python loop's list order (the first of equal gains is split):
        # ``leaves[i]`` point into ``store``; a split leaf's entry is reused by its left
        # child, and a new entry taken for the right one.
        store[0].node = 0
        store[0].slot = 0
        store[0].start = 0
        store[0].stop = n_fit
        store[0].depth = 0
        store[0].split[0] = -1.0
        store[0].dead = dead
        if skip_features is not None and n_features:     # dead from the root down
            memcpy(dead, &skip_features[0], n_features)
        store[0].in_use = masks
        store[0].lo = -INFINITY
        store[0].hi = INFINITY
        if search.monotone != NULL:
            node_bounds[0, 0] = -INFINITY
            node_bounds[0, 1] = INFINITY
        if masks != NULL:       # the root's bins in use: unknown
            memset(masks, 0xFF, mask_words * sizeof(uint64_t))
        leaves[0] = &store[0]
        if build_root:
            # slot 0 from every row and column; with the counts, the gradient and hessian
            # packed in 2 channels, then spread around them
            root_ch = 2 if counts != NULL else n_ch
            for f in range(n_features):
                kept[f] = <idx_t> f
            for c in range(n_cols):
                columns_v[c] = <idx_t> c
            _node_histogram(&src, order, 0, n_fit, columns_v if bundled else kept, n_cols,
                            offsets[n_features], root_ch, hc if bundled else h0, NULL,
                            &offsets[0])
            if bundled:
                expand_features(hc, h0, root_ch, &offsets[0], kept, n_features, &source[0],
                                default_of, ex_default_at, default_at.shape[0], ex_others,
                                ex_others_start, others.shape[0], column_offsets[1])
            if counts != NULL:
                _spread_counts(h0, counts, offsets[n_features])
            # every row is in one bin of the first feature: the float64 sums there of its
            # float32 derivatives cannot overflow, so they are finite exactly when these are
            acc = 0.0
            for q in range(offsets[1]):
                acc = acc + h0[q * n_ch] + h0[q * n_ch + 1]
            root_ok = isfinite(acc)
        if root_ok and per_node and _draw_allowed(node_features, -1, -1, 0, -1, n_features,
                                                  &search, held) < 0:
            failed = True
        elif root_ok:
            n_kept = _kept_features(dead, n_features, search.f_min, &offsets[0], kept,
                                    &kept_bins)
            _search(&search, leaves, 1, kept, n_kept, kept_bins)
        while root_ok and not failed and n_leaves < max_leaves:
            best = -1
            for i in range(n_leaves):
                if leaves[i].split[0] >= 0 and (
                        best < 0 or leaves[i].split[3] > leaves[best].split[3]):
                    best = <int> i
            if best < 0:
                break
            bl = leaves[best]
            k = bl.node
            feature[k] = <idx_t> bl.split[0]
            split_bin[k] = <idx_t> bl.split[1]
            nan_right[k] = <unsigned char> bl.split[2]
            gain[k] = bl.split[3]
            if search.is_cat != NULL and search.is_cat[feature[k]]:
                # (set size, direction): the set, from the leaf's histogram (still in its
                # slot), stored as the tree's next one
                cat_set_bits(h0 + bl.slot * slot_stride + offsets[feature[k]] * n_ch, n_ch,
                             n_bins_nonmissing[feature[k]], search.cp, nan_right[k],
                             split_bin[k], missing_bin, &sets[n_sets, 0])
                split_bin[k] = <idx_t> n_sets
                nan_right[k] = CAT_SPLIT
                n_sets += 1
            left[k] = <idx_t> n_nodes
            right[k] = <idx_t> (n_nodes + 1)
            n_nodes += 2
            n_left = _partition(&X_binned[feature[k], 0], &rows[0], order, bl.start,
                                bl.stop, split_bin[k], nan_right[k], missing_bin,
                                &sets[0, 0], scratch_rows, n_threads)
            mid = bl.start + n_left
            # the list without ``bl``, then its two children
            for i in range(best, n_leaves - 1):
                leaves[i] = leaves[i + 1]
            pair[0] = bl
            pair[1] = &store[n_leaves]
            small_is_right = bl.split[5] < bl.split[4]
            small_right[k] = small_is_right
            pair[1].node = right[k]
            pair[1].start = mid
            pair[1].stop = bl.stop
            pair[1].depth = bl.depth + 1
            pair[1].slot = -1
            pair[1].split[0] = -1.0
            pair[1].dead = dead + n_leaves * n_features      # the parent's dead features
            memcpy(pair[1].dead, bl.dead, n_features)
            pair[1].in_use = NULL
            if masks != NULL:   # the parent's bins in use hold the child's
                pair[1].in_use = masks + n_leaves * mask_words
                memcpy(pair[1].in_use, bl.in_use, mask_words * sizeof(uint64_t))
            # the children's value intervals (bl is pair[0]: both are set before either
            # is read); without monotone constraints, the root's (-inf, inf) throughout
            _child_bounds(h0 + bl.slot * slot_stride + offsets[feature[k]] * n_ch, n_ch,
                          n_bins_nonmissing[feature[k]], split_bin[k], nan_right[k],
                          0 if search.monotone == NULL or nan_right[k] == CAT_SPLIT
                          else search.monotone[feature[k]], l2, bl, pair[0], pair[1])
            if search.monotone != NULL:
                node_bounds[left[k], 0] = pair[0].lo
                node_bounds[left[k], 1] = pair[0].hi
                node_bounds[right[k], 0] = pair[1].lo
                node_bounds[right[k], 1] = pair[1].hi
            pair[0].node = left[k]
            pair[0].stop = mid
            pair[0].depth = bl.depth + 1
            pair[0].split[0] = -1.0
            leaves[n_leaves - 1] = pair[0]
            leaves[n_leaves] = pair[1]
            n_leaves += 1
            if (pair[0].depth >= max_depth or n_leaves >= max_leaves
                    or (_too_small(pair[0], min_split_rows)
                        and _too_small(pair[1], min_split_rows))):
                pair[0].slot = -1
                continue        # the children will not be split: no histograms needed
            # the smaller child's histogram from its rows, the larger's by subtraction
            small = pair[1] if small_is_right else pair[0]
            big = pair[0] if small_is_right else pair[1]
            if free_slot >= n_slots:    # slots_needed() bounds this: never, unless it is wrong
                overflow = True
                break
            big.slot = pair[0].slot
            small.slot = free_slot
            free_slot += 1
            # (the larger child's histogram only when it may be split)
            big_splits = not _too_small(big, min_split_rows)
            hs = h0 + small.slot * slot_stride
            hp = h0 + big.slot * slot_stride
            hb = hc if bundled else hs      # the histogram over X_pos's columns
            n_kept = _kept_features(bl.dead, n_features, search.f_min, &offsets[0], kept,
                                    &kept_bins)
            if bundled:
                lst = columns_v
                n_list = _kept_columns(kept, n_kept, column_of, n_cols, column_mark, columns_v)
            else:
                lst = kept
                n_list = n_kept
            _node_histogram(&src, order, small.start, small.stop, lst, n_list, kept_bins, n_ch,
                            hb, hp if not bundled and big_splits else NULL, &offsets[0])
            if bundled:
                expand_features(hc, hs, n_ch, &offsets[0], kept, n_kept, &source[0],
                                default_of, ex_default_at, default_at.shape[0], ex_others,
                                ex_others_start, others.shape[0], column_offsets[1])
                if big_splits:
                    _subtract(hp, hs, &offsets[0], kept, 0, n_kept, n_ch)
            if per_node and _draw_allowed(node_features, k, feature[k], left[k], right[k],
                                          n_features, &search, held) < 0:
                failed = True
                break
            _search(&search, pair, 2, kept, n_kept, kept_bins)
        if want_sums:
            _leaf_sums(leaves, n_leaves, n_nodes, order, &value_gradient[0],
                       &value_hessian[0], &node_sums[0, 0], &node_of_row[0])
        else:
            for i in range(n_leaves):
                for q in range(leaves[i].start, leaves[i].stop):
                    node_of_row[order[q]] = leaves[i].node
    free(work)          # nothing in the block above raises
    free(store)
    free(leaves)
    free(dead)
    free(masks)
    if failed:
        raise held[1]
    if not root_ok:
        return None
    if overflow:
        raise RuntimeError("grow_tree ran out of histogram slots (a bug: slots_needed is "
                           "too small)")
    if level_order:
        _renumber(feature_a[:n_nodes], bin_a[:n_nodes], nan_a[:n_nodes], left_a[:n_nodes],
                  right_a[:n_nodes], gain_a[:n_nodes], small_right[:n_nodes], node_of_row,
                  sets_a[:n_sets], node_bounds[:n_nodes] if node_bounds is not None
                  else np.empty((0, 2)), node_sums[:n_nodes] if want_sums
                  else np.empty((0, 3)))
    if want_values:     # children after their parents in either numbering
        for i in range(n_nodes - 1, -1, -1):
            node_values[0, i] = leaf_value(node_sums[i, 0], node_sums[i, 1], node_sums[i, 2],
                                           l2)
            node_values[1, i] = (node_sums[i, 2] if left[i] < 0 else
                                 node_values[1, left[i]] + node_values[1, right[i]])
    return (feature_a[:n_nodes], bin_a[:n_nodes], nan_a[:n_nodes], left_a[:n_nodes],
            right_a[:n_nodes], gain_a[:n_nodes], sets_a[:n_sets])


cdef inline Py_ssize_t _partition(const bin_t* column, const idx_t* rows, idx_t* order,
                                  Py_ssize_t start, Py_ssize_t stop, int split_bin,
                                  int nan_right, int missing_bin, const uint32_t* sets,
                                  idx_t* scratch, int n_threads) noexcept nogil:
    """``partition_segment``'s stable partition of ``order[start:stop]``, its rows split
    among threads when there are enough (see PARALLEL_PARTITION_ROWS and
    :func:`_partition_runs`)."""
    cdef Py_ssize_t nt = (stop - start) // PARALLEL_PARTITION_ROWS
    if nt > n_threads:
        nt = n_threads
    if nt > MAX_PARTITION_THREADS:
        nt = MAX_PARTITION_THREADS
    if nt < 2:
        return partition_segment(column, rows, order, start, stop, split_bin, nan_right,
                                 missing_bin, sets, scratch)
    return _partition_runs(column, rows, order, start, stop, split_bin, nan_right,
                           missing_bin, sets, scratch, nt)


cdef Py_ssize_t _partition_runs(const bin_t* column, const idx_t* rows, idx_t* order,
                                Py_ssize_t start, Py_ssize_t stop, int split_bin,
                                int nan_right, int missing_bin, const uint32_t* sets,
                                idx_t* scratch, Py_ssize_t nt) noexcept nogil:
    """:func:`_partition` on ``nt`` threads (2 to MAX_PARTITION_THREADS), in one parallel
    region. The positions are cut in ``nt`` runs. Each run is split into its run of
    ``scratch``, the rows going left from the front and those going right from the back
    (one pass, no branch); after a barrier, each run is copied to its places in ``order``:
    the lefts of every run in run order, then the rights. A thread takes every run when
    the team has fewer threads. (Kept apart from the one-thread pass, which its parallel
    region made 15% slower.)"""
    cdef Py_ssize_t m = stop - start
    cdef Py_ssize_t n_left[MAX_PARTITION_THREADS]
    cdef Py_ssize_t r, c, team, a, b, i, nl, back, go, at_left, lefts
    cdef idx_t p
    with parallel(num_threads=nt):
        team = team_size()
        r = threadid()
        while r < nt:
            a = r * m // nt             # the run: order[start + a:start + b]
            b = (r + 1) * m // nt
            nl = 0
            back = b
            for i in range(a, b):
                p = order[start + i]
                go = goes_right(column[rows[p]], split_bin, nan_right, missing_bin, sets)
                scratch[a + nl] = p     # both slots are free: the next left's, and
                scratch[back - 1] = p   # the next right's (the same one for the last row)
                nl = nl + 1 - go
                back = back - go
            n_left[r] = nl
            r = r + team
        barrier()                       # every run's count is known
        r = threadid()
        while r < nt:
            at_left = start             # the run's lefts go after the earlier runs' lefts,
            lefts = start               # its rights after every left and earlier rights
            for c in range(nt):
                lefts = lefts + n_left[c]
                if c < r:
                    at_left = at_left + n_left[c]
            a = r * m // nt
            b = (r + 1) * m // nt
            memcpy(order + at_left, scratch + a, n_left[r] * sizeof(idx_t))
            back = lefts + a - (at_left - start)
            for i in range(b - a - n_left[r]):      # the rights, stored from the back
                order[back + i] = scratch[b - 1 - i]
            r = r + team
    lefts = 0
    for c in range(nt):
        lefts = lefts + n_left[c]
    return lefts


cdef void _leaf_sums(Leaf** leaves, Py_ssize_t n_leaves, Py_ssize_t n_nodes,
                     const idx_t* order, const double* g, const double* h, double* sums,
                     idx_t* node_of_row) noexcept nogil:
    """``grow_tree``'s last pass with ``node_sums``: every leaf's rows get its node id,
    and ``sums`` (n_nodes, 3) the leaves' sums of ``g``, ``h`` and rows, split nodes'
    zeros. A leaf's positions ascend, so its rows are added in ``_partition.node_sums``'s
    order, without its chain of stores and loads through ``sums``."""
    cdef Py_ssize_t i, q, p
    cdef idx_t k
    cdef double sg, sh
    memset(sums, 0, n_nodes * 3 * sizeof(double))
    for i in range(n_leaves):
        k = leaves[i].node
        sg = 0.0
        sh = 0.0
        for q in range(leaves[i].start, leaves[i].stop):
            p = order[q]
            node_of_row[p] = k
            sg += g[p]
            sh += h[p]
        sums[3 * k] = sg
        sums[3 * k + 1] = sh
        sums[3 * k + 2] = <double> (leaves[i].stop - leaves[i].start)


cdef void _renumber_rows(double[:, ::1] a, const idx_t[::1] new_id):
    """Row ``k`` of ``a`` moved to row ``new_id[k]`` (``a`` of 0 rows: nothing)."""
    cdef Py_ssize_t k, j
    cdef double[:, ::1] old = a.copy() if a.shape[0] else a
    for k in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[new_id[k], j] = old[k, j]


#: A leaf's rows are partitioned by one thread per this many of them (at most n_threads).
PARTITION_ROWS_PER_THREAD = PARALLEL_PARTITION_ROWS


def slots_needed(int max_depth, int max_leaves, Py_ssize_t n_fit):
    """Histogram slots :func:`grow_tree` uses on ``n_fit`` rows: one per split whose
    children are split further, and the root's: at most ``max_leaves - 1``,
    ``2**(max_depth - 1)`` (the splits above the last level) and ``n_fit`` (every leaf
    holds a row)."""
    cdef Py_ssize_t n = max_leaves - 1
    if max_depth - 1 < 40 and (<Py_ssize_t> 1 << (max_depth - 1)) < n:
        n = <Py_ssize_t> 1 << (max_depth - 1)
    return max(1, min(n, n_fit))


cdef void _renumber(idx_t[::1] feature, idx_t[::1] split_bin, unsigned char[::1] nan_right,
                    idx_t[::1] left, idx_t[::1] right, double[::1] gain,
                    const unsigned char[::1] small_right, idx_t[::1] node_of_row,
                    uint32_t[:, ::1] sets, double[:, ::1] bounds, double[:, ::1] sums):
    """Renumber a grown tree's nodes in level order (``grow_tree``'s ``level_order``), in
    place, and the rows' nodes, the nodes' value ``bounds`` and their ``sums`` (0 rows:
    none) with them;
    the categorical splits' ``sets`` are renumbered in the order the level-wise loop stores
    them (its order of the nodes of each level)."""
    cdef Py_ssize_t n = feature.shape[0], i, head = 0, tail = 1, k, nxt = 1, n_sets = 0
    cdef idx_t[::1] new_id = np.empty(n, dtype=np.int32)
    cdef idx_t[::1] queue = np.empty(n, dtype=np.int32)
    cdef uint32_t[:, ::1] sets_old = sets.copy() if sets.shape[0] else sets
    new_id[0] = 0
    queue[0] = 0
    while head < tail:          # the queue holds each level in the level-wise order
        k = queue[head]
        head += 1
        if left[k] < 0:
            continue
        if nan_right[k] == CAT_SPLIT:
            sets[n_sets, :] = sets_old[split_bin[k], :]
            split_bin[k] = <idx_t> n_sets
            n_sets += 1
        new_id[left[k]] = <idx_t> nxt
        new_id[right[k]] = <idx_t> (nxt + 1)
        nxt += 2
        queue[tail] = right[k] if small_right[k] else left[k]
        queue[tail + 1] = left[k] if small_right[k] else right[k]
        tail += 2
    cdef idx_t[::1] f_old = feature.copy(), b_old = split_bin.copy()
    cdef idx_t[::1] l_old = left.copy(), r_old = right.copy()
    cdef unsigned char[::1] d_old = nan_right.copy()
    cdef double[::1] g_old = gain.copy()
    _renumber_rows(bounds, new_id)
    _renumber_rows(sums, new_id)
    for k in range(n):
        i = new_id[k]
        feature[i] = f_old[k]
        split_bin[i] = b_old[k]
        nan_right[i] = d_old[k]
        left[i] = new_id[l_old[k]] if l_old[k] >= 0 else -1
        right[i] = new_id[r_old[k]] if r_old[k] >= 0 else -1
        gain[i] = g_old[k]
    for i in range(node_of_row.shape[0]):
        node_of_row[i] = new_id[node_of_row[i]]
