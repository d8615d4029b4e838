"""Gradient/hessian/count histograms per (node, feature, bin)."""
from cython.parallel cimport prange

import numpy as np

from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset

from .common cimport bin_t, idx_t, block_stop, add_row, add_entries, entry_parts, \
    fill_defaults, prefetch, LIST_BLOCK, MAX_PARTS, N_CHANNELS, PART_WORK, PREFETCH_ROWS

#: A histogram from entries is summed in at most this many parts (see ``entries_histogram``)
ENTRY_MAX_PARTS = MAX_PARTS
#: ... each of whose rows add on average at least this many entries per histogram bin.
ENTRY_PART_WORK = PART_WORK

cdef enum:
    # Several slots are built one at a time (rows grouped by slot) when one slot's
    # histogram is at most this large: it then stays in L1 while its rows are added. Larger
    # histograms miss L1 either way, and the rows are better streamed in order (grouping
    # them made a 1,000,000 x 28 continuous fit 1.6x slower).
    GROUP_BYTES = 32768
    # A thread's part of a slot's histogram larger than this (wide data: 1,000 features of
    # 255 bins are 4-6 MB a slot) misses L2 on every row: the rows are then grouped by slot
    # and the features cut into tiles of at most TILE_BYTES a slot, each built over its
    # slot's rows on its own (a tile stays in L2 while its rows are added).
    SPLIT_BYTES = 1048576
    TILE_BYTES = 262144

#: A thread's part of a slot's histogram larger than this many bytes is built in tiles.
SLOT_SPLIT_BYTES = SPLIT_BYTES

cdef extern from *:
    """
    #ifndef BOOSTLIB_DEBUG
    #define BOOSTLIB_DEBUG 0
    #endif
    """
    bint BOOSTLIB_DEBUG   # 1 in the debug build (setup.py defines it)


def build_histograms(const bin_t[:, ::1] X_rows, const idx_t[::1] rows,
                     const idx_t[::1] node_of_row, const idx_t[::1] slot_of_node,
                     const float[::1] gradient, const float[::1] hessian,
                     const idx_t[::1] offsets, double[:, :, ::1] hist, int n_threads,
                     const idx_t[::1] listed=None, const idx_t[::1] block_counts=None,
                     const int64_t[::1] entry_start=None, const idx_t[::1] entry_bins=None,
                     const idx_t[::1] entry_default=None):
    """Build, in one pass over the rows, the histograms of every node that has a slot.

    Parameters
    ----------
    X_rows : IN uint8 (n_rows_total, n_features), row-major binned data, feature ``f`` in
        ``0 .. offsets[f+1] - offsets[f] - 1`` (its last bin for missing values).
    rows : IN int32 (n_fit,) training-row ids of the fitted rows; an empty array means
        ``rows[p] == p`` (all rows, no indirection).
    node_of_row : IN int32 (n_fit,) node of each fitted row.
    slot_of_node : IN int32 per node id: its histogram slot, or -1 (rows skipped).
    gradient, hessian : IN float32 (n_fit,) aligned with ``rows``, weights applied (float32
        halves the memory traffic; the sums are accumulated in float64).
    offsets : IN int32 (n_features + 1,) the histogram layout: feature ``f`` owns the bins
        ``offsets[f]:offsets[f+1]`` of a slot, its last one for missing values. A feature
        with ``m`` bins in use owns ``m + 1`` bins, and ``X_rows`` holds its values as bins
        ``0..m`` (``m``: missing), so a row's bin of feature ``f`` is at ``offsets[f] +
        X_rows[row, f]``. A binary feature's histogram is thus 3 bins, not 256: sizing every
        feature for 256 bins put the few bins of low-cardinality features 4 KiB apart, in
        the same L1 cache set, and made them 15-20x slower than continuous features.
    hist : OUT float64 (n_slots, offsets[n_features], n_channels). Every slot is overwritten.
        With 3 channels: sums of gradient, hessian and row count; with 2 channels the count
        is not kept (the "count-free" mode the grower uses when no constraint needs it: it
        saves a third of the memory writes).
    n_threads : OpenMP threads. Threads split the *features*; each feature's bins are summed
        over the rows in order, so the result does not depend on ``n_threads``. Each row's
        bins are read once per thread from one cache line (row-major data), which is what
        makes this faster than a per-feature pass over a feature-major matrix.
    listed, block_counts : IN int32, optional, together
        The rows of slotted nodes as :func:`boostlib._kernels._partition.apply_level` lists
        them (positions into ``node_of_row``, by blocks of ``LIST_BLOCK``): only those rows
        are visited, in the same order, so the sums are the same as without the list.
    entry_start, entry_bins, entry_default : optional, together
        Sparse rows (:mod:`boostlib.engine.row_entries`) instead of ``X_rows``'s bytes, which
        then has no columns (``X_rows.shape == (n_rows_total, 0)``): row ``r``'s bins are
        ``entry_bins[entry_start[r]:entry_start[r + 1]]`` (int64 starts; int32 bins of the
        layout ``offsets``, ascending), the bins of its columns that are not their default
        bins ``entry_default`` (int32, one per column). A default bin is the total of the
        slot's rows minus its column's other bins. Threads split such a histogram's
        rows instead, in parts the data alone decides (see :func:`entries_histogram`).
    """
    cdef bint sparse = entry_start is not None
    cdef Py_ssize_t r
    cdef Py_ssize_t n_features = offsets.shape[0] - 1 if sparse else X_rows.shape[1]
    cdef Py_ssize_t n_rows_total = X_rows.shape[0]
    cdef Py_ssize_t n_slots = hist.shape[0]
    cdef Py_ssize_t n_nodes = slot_of_node.shape[0]
    cdef bint identity = rows.shape[0] == 0
    cdef Py_ssize_t n_fit = node_of_row.shape[0]
    cdef Py_ssize_t n_ch = hist.shape[2]
    cdef Py_ssize_t slot_stride = hist.shape[1] * n_ch
    cdef Py_ssize_t n_chunks, n_tiles, c, f, f0, f1, p, j, q, blk, m, pf, n_blocks = 0
    cdef idx_t s
    cdef const bin_t* xr
    cdef double* hs
    cdef bint use_list = listed is not None
    if offsets.shape[0] != n_features + 1 or offsets[0] != 0:
        raise ValueError("offsets must have n_features + 1 entries, the first 0")
    for f in range(n_features):
        if offsets[f + 1] <= offsets[f]:
            raise ValueError("every feature needs at least one histogram bin")
    if sparse:
        check_entries(entry_start, entry_bins, entry_default, X_rows, offsets)
    elif entry_bins is not None or entry_default is not None:
        raise ValueError("entry_start, entry_bins and entry_default go together")
    if hist.shape[1] != offsets[n_features] or not 2 <= n_ch <= N_CHANNELS:
        raise ValueError("hist must have shape (n_slots, offsets[-1], 2 or 3)")
    if ((not identity and rows.shape[0] != n_fit) or gradient.shape[0] != n_fit
            or hessian.shape[0] != n_fit or (identity and n_fit != n_rows_total)):
        raise ValueError("rows, node_of_row, gradient and hessian must have the same length")
    if use_list != (block_counts is not None):
        raise ValueError("listed and block_counts go together")
    if use_list:
        n_blocks = (n_fit + LIST_BLOCK - 1) // LIST_BLOCK
        if listed.shape[0] != n_fit or block_counts.shape[0] != n_blocks:
            raise ValueError(f"listed must have {n_fit} entries and block_counts {n_blocks}")
        for blk in range(n_blocks):
            if not 0 <= block_counts[blk] <= block_stop(blk, LIST_BLOCK, n_fit) - blk * LIST_BLOCK:
                raise ValueError("block count out of range")
    if n_slots == 0:
        return
    for j in range(n_nodes):
        if slot_of_node[j] >= n_slots:
            raise ValueError("slot out of range")
    if BOOSTLIB_DEBUG:
        # The hot loop follows raw pointers; the debug build validates every index it uses
        # (the release build trusts the grower, which builds them).
        for p in range(n_fit):
            if not ((identity or 0 <= rows[p] < n_rows_total) and 0 <= node_of_row[p] < n_nodes):
                raise IndexError("row or node id out of range")
        for p in range(n_rows_total):
            for f in range(X_rows.shape[1]):
                if X_rows[p, f] >= offsets[f + 1] - offsets[f]:
                    raise IndexError("bin index out of range")
        if use_list:
            for blk in range(n_blocks):
                for q in range(block_counts[blk]):
                    p = listed[blk * LIST_BLOCK + q]
                    if not (blk * LIST_BLOCK <= p < block_stop(blk, LIST_BLOCK, n_fit)
                            and (q == 0 or p > listed[blk * LIST_BLOCK + q - 1])):
                        raise IndexError("listed rows must be increasing within their block")
    if sparse:
        _build_entries(rows, node_of_row, slot_of_node, gradient, hessian, offsets, hist,
                       n_threads, listed, block_counts, entry_start, entry_bins,
                       entry_default)
        return
    n_chunks = n_threads if n_threads < n_features else n_features
    if n_chunks < 1:
        n_chunks = 1
    if n_slots > 1 and slot_stride * sizeof(double) <= GROUP_BYTES:
        _build_by_slot(X_rows, rows, node_of_row, slot_of_node, gradient, hessian, offsets,
                       hist, n_chunks, n_chunks, listed, block_counts)
        return
    if <Py_ssize_t> (slot_stride * sizeof(double)) > n_chunks * SPLIT_BYTES:
        n_tiles = (slot_stride * sizeof(double) + TILE_BYTES - 1) // TILE_BYTES
        _build_by_slot(X_rows, rows, node_of_row, slot_of_node, gradient, hessian, offsets,
                       hist, n_tiles if n_tiles < n_features else n_features, n_chunks,
                       listed, block_counts)
        return
    with nogil:
        for c in prange(n_chunks, schedule="static", num_threads=n_chunks):
            f0 = c * n_features // n_chunks
            f1 = (c + 1) * n_features // n_chunks
            for s in range(n_slots):
                hs = &hist[s, offsets[f0], 0]
                for j in range((offsets[f1] - offsets[f0]) * n_ch):
                    hs[j] = 0.0
            if use_list:
                for blk in range(n_blocks):
                    m = block_counts[blk]
                    for q in range(m):
                        if q + PREFETCH_ROWS < m:
                            pf = listed[blk * LIST_BLOCK + q + PREFETCH_ROWS]
                            prefetch(&X_rows[pf if identity else rows[pf], 0])
                            prefetch(&gradient[pf])
                            prefetch(&hessian[pf])
                            prefetch(&node_of_row[pf])
                        p = listed[blk * LIST_BLOCK + q]
                        s = slot_of_node[node_of_row[p]]
                        r = p if identity else rows[p]
                        if s < 0:       # never, for a list the partition made
                            continue
                        add_row(&X_rows[r, 0], &hist[0, 0, 0] + s * slot_stride,
                                &offsets[0], f0, f1, n_ch, gradient[p], hessian[p])
            else:
                for p in range(n_fit):
                    s = slot_of_node[node_of_row[p]]
                    r = p if identity else rows[p]
                    if s < 0:
                        continue
                    add_row(&X_rows[r, 0], &hist[0, 0, 0] + s * slot_stride, &offsets[0],
                            f0, f1, n_ch, gradient[p], hessian[p])


cdef _build_by_slot(const bin_t[:, ::1] X_rows, const idx_t[::1] rows,
                    const idx_t[::1] node_of_row, const idx_t[::1] slot_of_node,
                    const float[::1] gradient, const float[::1] hessian,
                    const idx_t[::1] offsets, double[:, :, ::1] hist, Py_ssize_t n_chunks,
                    int n_threads, const idx_t[::1] listed, const idx_t[::1] block_counts):
    """:func:`build_histograms` slot by slot: the rows are first grouped by slot (a
    stable counting sort, so each slot's rows keep their order and every sum is the same),
    then each slot's histogram is built from its rows alone, in ``n_chunks`` ranges of
    features spread over ``n_threads`` threads. Interleaving the slots row by row sent every
    row to another slot's histogram: with 16 small slots a row cost 4x more (the slots'
    histograms do not fit in L1 together); with 1,000 features (4 MB a slot), a deep level
    of a depth-6 tree took 7 times as long per row as the root."""
    cdef Py_ssize_t r
    cdef Py_ssize_t n_features = offsets.shape[0] - 1
    cdef Py_ssize_t n_slots = hist.shape[0]
    cdef Py_ssize_t n_ch = hist.shape[2]
    cdef Py_ssize_t slot_stride = hist.shape[1] * n_ch
    cdef bint identity = rows.shape[0] == 0
    cdef Py_ssize_t c, f0, f1, j, q, p, pf, k
    cdef double* hs
    order_arr, start_arr = _group_rows(node_of_row, slot_of_node, n_slots, listed,
                                       block_counts)
    cdef const idx_t[::1] order = order_arr
    cdef const Py_ssize_t[::1] start = start_arr
    with nogil:
        for c in prange(n_chunks, schedule="static", num_threads=n_threads):
            f0 = c * n_features // n_chunks
            f1 = (c + 1) * n_features // n_chunks
            for k in range(n_slots):
                hs = &hist[k, offsets[f0], 0]
                for j in range((offsets[f1] - offsets[f0]) * n_ch):
                    hs[j] = 0.0
                for q in range(start[k], start[k + 1]):
                    if q + PREFETCH_ROWS < start[k + 1]:
                        pf = order[q + PREFETCH_ROWS]
                        prefetch(&X_rows[pf if identity else rows[pf], 0])
                        prefetch(&gradient[pf])
                        prefetch(&hessian[pf])
                    p = order[q]
                    r = p if identity else rows[p]
                    add_row(&X_rows[r, 0], &hist[0, 0, 0] + k * slot_stride, &offsets[0],
                            f0, f1, n_ch, gradient[p], hessian[p])


cdef tuple _group_rows(const idx_t[::1] node_of_row, const idx_t[::1] slot_of_node,
                       Py_ssize_t n_slots, const idx_t[::1] listed,
                       const idx_t[::1] block_counts):
    """``(order, start)``: the positions of the rows of every slot, ``order[start[k]:
    start[k + 1]]`` those of slot ``k`` in their order (the list's, with ``listed``), by a
    stable counting sort; rows of no slot are left out."""
    cdef Py_ssize_t n_fit = node_of_row.shape[0]
    cdef bint use_list = listed is not None
    cdef Py_ssize_t n_blocks = (n_fit + LIST_BLOCK - 1) // LIST_BLOCK if use_list else 0
    cdef Py_ssize_t blk, q, p, k, m
    cdef idx_t s
    start_arr = np.zeros(n_slots + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] start = start_arr
    with nogil:                      # rows per slot
        if use_list:
            for blk in range(n_blocks):
                for q in range(block_counts[blk]):
                    s = slot_of_node[node_of_row[listed[blk * LIST_BLOCK + q]]]
                    if s >= 0:
                        start[s + 1] += 1
        else:
            for p in range(n_fit):
                s = slot_of_node[node_of_row[p]]
                if s >= 0:
                    start[s + 1] += 1
        for k in range(n_slots):
            start[k + 1] += start[k]
        m = start[n_slots]
    order_arr = np.empty(max(m, 1), dtype=np.int32)
    cdef idx_t[::1] order = order_arr
    fill_arr = start_arr[:n_slots].copy()
    cdef Py_ssize_t[::1] fill = fill_arr
    with nogil:                      # stable scatter: each slot's rows in their order
        if use_list:
            for blk in range(n_blocks):
                for q in range(block_counts[blk]):
                    p = listed[blk * LIST_BLOCK + q]
                    s = slot_of_node[node_of_row[p]]
                    if s >= 0:
                        order[fill[s]] = <idx_t> p
                        fill[s] += 1
        else:
            for p in range(n_fit):
                s = slot_of_node[node_of_row[p]]
                if s >= 0:
                    order[fill[s]] = <idx_t> p
                    fill[s] += 1
    return order_arr, start_arr


cdef _build_entries(const idx_t[::1] rows, const idx_t[::1] node_of_row,
                    const idx_t[::1] slot_of_node, const float[::1] gradient,
                    const float[::1] hessian, const idx_t[::1] offsets,
                    double[:, :, ::1] hist, int n_threads, const idx_t[::1] listed,
                    const idx_t[::1] block_counts, const int64_t[::1] entry_start,
                    const idx_t[::1] entry_bins, const idx_t[::1] entry_default):
    """:func:`build_histograms` from entries: each slot's histogram from its rows (grouped
    by slot, as :func:`_build_by_slot` groups them; with one node, the rows in order) by
    :func:`entries_histogram`, then its default bins."""
    cdef Py_ssize_t n_features = offsets.shape[0] - 1
    cdef Py_ssize_t n_slots = hist.shape[0]
    cdef Py_ssize_t n_ch = hist.shape[2]
    cdef Py_ssize_t n_bins = hist.shape[1]
    cdef Py_ssize_t n_fit = node_of_row.shape[0]
    cdef Py_ssize_t n_rows = entry_start.shape[0] - 1
    cdef const idx_t* row_of = NULL
    cdef const idx_t* seq = NULL
    cdef Py_ssize_t k
    cdef double total[3]
    cdef const idx_t[::1] order
    cdef const Py_ssize_t[::1] start
    cdef Py_ssize_t one_node[2]
    cdef const Py_ssize_t* bounds = one_node
    if rows.shape[0]:
        row_of = &rows[0]
    if n_slots == 1 and slot_of_node.shape[0] == 1 and slot_of_node[0] == 0 and listed is None:
        # every row is in the one node, slotted
        one_node[0] = 0
        one_node[1] = n_fit
    else:
        order_arr, start_arr = _group_rows(node_of_row, slot_of_node, n_slots, listed,
                                           block_counts)
        order = order_arr
        start = start_arr
        seq = &order[0]
        bounds = &start[0]
    cdef double* spare = <double*> malloc((MAX_PARTS - 1) * (n_bins * n_ch + 3)
                                          * sizeof(double))
    if spare == NULL:
        raise MemoryError()
    with nogil:
        for k in range(n_slots):
            entries_histogram(&entry_start[0], &entry_bins[0] if entry_bins.shape[0] else NULL,
                              row_of, seq, bounds[k], bounds[k + 1], &gradient[0],
                              &hessian[0], &hist[k, 0, 0], total, n_bins, n_ch,
                              entry_parts(bounds[k + 1] - bounds[k],
                                          entry_start[n_rows], n_rows, n_bins),
                              spare, n_threads)
            fill_defaults(&hist[k, 0, 0], total, &offsets[0], &entry_default[0], 0,
                          n_features, n_ch)
    free(spare)


cdef void entries_histogram(const int64_t* entry_start, const idx_t* entry_bins,
                            const idx_t* rows, const idx_t* seq, Py_ssize_t start,
                            Py_ssize_t stop, const float* gradient, const float* hessian,
                            double* out, double* total, Py_ssize_t n_bins, Py_ssize_t n_ch,
                            Py_ssize_t n_parts, double* spare, int n_threads) noexcept nogil:
    """The histogram ``out`` (``n_bins`` bins of ``n_ch`` channels, its default bins left
    out) and the rows' ``total`` (3 channels) of the rows at the positions ``seq[start:
    stop]`` (``seq`` NULL: the positions ``start..stop - 1``): position ``p`` is training
    row ``rows[p]`` (``rows`` NULL: ``p``), whose entries are read, with the derivatives
    ``gradient[p]`` and ``hessian[p]``.

    The rows are summed in ``n_parts`` (at most MAX_PARTS) runs of consecutive positions,
    the first into ``out``, the others into ``spare`` (``(MAX_PARTS - 1) * (n_bins * n_ch +
    3)`` doubles), then added to ``out`` in order: up to ``n_threads`` threads take the
    parts, and the sums do not depend on how many did."""
    cdef Py_ssize_t m = stop - start, cells = n_bins * n_ch, k, i
    cdef double* part
    cdef int nt = n_threads if n_threads < n_parts else <int> n_parts
    if n_parts == 1 or nt <= 1:
        for k in range(n_parts):
            _entries_part(entry_start, entry_bins, rows, seq, start + k * m // n_parts,
                          start + (k + 1) * m // n_parts, gradient, hessian,
                          out if k == 0 else spare + (k - 1) * (cells + 3),
                          total if k == 0 else spare + (k - 1) * (cells + 3) + cells,
                          cells, n_ch)
    else:
        for k in prange(n_parts, schedule="static", num_threads=nt):
            _entries_part(entry_start, entry_bins, rows, seq, start + k * m // n_parts,
                          start + (k + 1) * m // n_parts, gradient, hessian,
                          out if k == 0 else spare + (k - 1) * (cells + 3),
                          total if k == 0 else spare + (k - 1) * (cells + 3) + cells,
                          cells, n_ch)
    for k in range(1, n_parts):
        part = spare + (k - 1) * (cells + 3)
        for i in range(cells):
            out[i] += part[i]
        for i in range(3):
            total[i] += part[cells + i]


cdef inline void _entries_part(const int64_t* entry_start, const idx_t* entry_bins,
                               const idx_t* rows, const idx_t* seq, Py_ssize_t lo,
                               Py_ssize_t hi, const float* gradient, const float* hessian,
                               double* out, double* total, Py_ssize_t cells,
                               Py_ssize_t n_ch) noexcept nogil:
    """One part of :func:`entries_histogram`: the positions ``lo:hi`` into a zeroed ``out``
    and ``total``."""
    cdef Py_ssize_t q, p, r, pf
    memset(out, 0, cells * sizeof(double))
    total[0] = 0.0
    total[1] = 0.0
    total[2] = 0.0
    for q in range(lo, hi):
        if seq != NULL:
            if q + PREFETCH_ROWS < hi:
                pf = seq[q + PREFETCH_ROWS]
                prefetch(&entry_start[pf if rows == NULL else rows[pf]])
                prefetch(&gradient[pf])
                prefetch(&hessian[pf])
            p = seq[q]
        else:
            p = q
        r = p if rows == NULL else rows[p]
        add_entries(entry_bins + entry_start[r], entry_start[r + 1] - entry_start[r], out,
                    n_ch, gradient[p], hessian[p], total)


cdef int check_entries(const int64_t[::1] entry_start, const idx_t[::1] entry_bins,
                       const idx_t[::1] entry_default, const bin_t[:, ::1] X_rows,
                       const idx_t[::1] offsets) except -1:
    """Check sparse rows (see :func:`build_histograms`) against the histogram layout
    ``offsets``: every check in the debug build, the cheap ones in the release build."""
    cdef Py_ssize_t n_rows = X_rows.shape[0], n_cols = offsets.shape[0] - 1, r, k
    if entry_bins is None or entry_default is None:
        raise ValueError("entry_start, entry_bins and entry_default go together")
    if X_rows.shape[1] != 0:
        raise ValueError("with entries, X_rows must have no columns")
    if entry_start.shape[0] != n_rows + 1 or entry_start[0] != 0 \
            or entry_start[n_rows] != entry_bins.shape[0]:
        raise ValueError("entry_start must have n_rows + 1 entries, from 0 to len(entry_bins)")
    if entry_default.shape[0] != n_cols:
        raise ValueError("entry_default needs one bin per column")
    for k in range(n_cols):
        if not offsets[k] <= entry_default[k] < offsets[k + 1]:
            raise ValueError("a default bin is outside its column")
    if BOOSTLIB_DEBUG:
        for r in range(n_rows):
            if entry_start[r + 1] < entry_start[r]:
                raise IndexError("entry_start must not decrease")
            for k in range(entry_start[r], entry_start[r + 1]):
                if not 0 <= entry_bins[k] < offsets[n_cols] or (
                        k > entry_start[r] and entry_bins[k] <= entry_bins[k - 1]):
                    raise IndexError("a row's entry bins must be ascending and in range")
    return 0


def expand_bundles(const double[:, :, ::1] column_hist, const Py_ssize_t[::1] source,
                   const Py_ssize_t[::1] default_at, const Py_ssize_t[::1] others,
                   const Py_ssize_t[::1] others_start, Py_ssize_t first_column_bins,
                   double[:, :, ::1] out):
    """Per-feature histograms from histograms of bundled columns
    (:meth:`boostlib.engine.bundling.Bundling.expand`).

    Parameters
    ----------
    column_hist : IN (n_slots, n_column_bins, channels).
    source : IN intp (n_feature_bins,) each feature bin's column bin, -1 for a default bin.
    default_at : IN intp (k,) the default bins of the bundled features.
    others : IN intp, their other bins, feature by feature; ``others_start`` (k,) where each
        feature's run starts.
    first_column_bins : bins of the first column, whose sum is the node's total.
    out : OUT (n_slots, n_feature_bins, channels): copies of the column bins, and at each
        default bin the node's total minus the feature's other bins (summed in order).
    """
    cdef Py_ssize_t n_slots = out.shape[0], n_bins = out.shape[1], n_ch = out.shape[2]
    cdef Py_ssize_t k = default_at.shape[0], s
    if (column_hist.shape[0] != n_slots or column_hist.shape[2] != n_ch or n_ch > 3):
        raise ValueError("inconsistent shapes")
    check_expand_tables(column_hist.shape[1], n_bins, source, default_at, others,
                        others_start, first_column_bins)
    if n_slots == 0 or n_bins == 0:
        return
    with nogil:
        for s in range(n_slots):
            expand_slot(&column_hist[s, 0, 0], &out[s, 0, 0], n_bins, n_ch, &source[0],
                        &default_at[0] if k else NULL, k, &others[0] if others.shape[0] else NULL,
                        &others_start[0] if k else NULL, others.shape[0], first_column_bins)


cdef int check_expand_tables(Py_ssize_t n_column_bins, Py_ssize_t n_bins,
                             const Py_ssize_t[::1] source, const Py_ssize_t[::1] default_at,
                             const Py_ssize_t[::1] others, const Py_ssize_t[::1] others_start,
                             Py_ssize_t first_column_bins) except -1:
    """Raise ValueError unless the tables of :func:`expand_bundles` fit histograms of
    ``n_column_bins`` column bins and ``n_bins`` feature bins."""
    cdef Py_ssize_t k = default_at.shape[0], j, i, q
    if (source.shape[0] != n_bins or others_start.shape[0] != k
            or not 0 < first_column_bins <= n_column_bins):
        raise ValueError("inconsistent shapes")
    for j in range(n_bins):
        if not -1 <= source[j] < n_column_bins:
            raise ValueError("source bin out of range")
    for i in range(k):
        if not (0 <= default_at[i] < n_bins and 0 <= others_start[i] <= others.shape[0]
                and (i == 0 or others_start[i] >= others_start[i - 1])):
            raise ValueError("default bins out of range")
    for q in range(others.shape[0]):
        if not 0 <= others[q] < n_bins:
            raise ValueError("other bins out of range")
    return 0


cdef void expand_slot(const double* column_hist, double* out, Py_ssize_t n_bins,
                      Py_ssize_t n_ch, const Py_ssize_t* source, const Py_ssize_t* default_at,
                      Py_ssize_t k, const Py_ssize_t* others, const Py_ssize_t* others_start,
                      Py_ssize_t n_others, Py_ssize_t first_column_bins) noexcept nogil:
    """:func:`expand_bundles` of one slot: ``column_hist`` (column bins x ``n_ch``) into
    ``out`` (``n_bins`` feature bins x ``n_ch``)."""
    cdef Py_ssize_t j, c, i
    cdef double total[3]
    for j in range(n_bins):
        if source[j] >= 0:
            for c in range(n_ch):
                out[j * n_ch + c] = column_hist[source[j] * n_ch + c]
    if k == 0:
        return
    _column_total(column_hist, n_ch, first_column_bins, total)
    for i in range(k):
        _default_bin(out, n_ch, total, i, k, default_at, others, others_start, n_others)


cdef void expand_features(const double* column_hist, double* out, Py_ssize_t n_ch,
                          const idx_t* offsets, const idx_t* features, Py_ssize_t n_listed,
                          const Py_ssize_t* source, const Py_ssize_t* default_of,
                          const Py_ssize_t* default_at, Py_ssize_t k,
                          const Py_ssize_t* others, const Py_ssize_t* others_start,
                          Py_ssize_t n_others, Py_ssize_t first_column_bins) noexcept nogil:
    """:func:`expand_slot` of the ``n_listed`` ``features`` alone (feature ``f``'s bins
    ``offsets[f]:offsets[f + 1]``; ``default_of[f]``: its row in ``default_at``, or -1),
    the same sums: the other features' bins in ``out`` are left as they are."""
    cdef Py_ssize_t t, f, j, c, i
    cdef double total[3]
    cdef bint have_total = False
    for t in range(n_listed):
        f = features[t]
        for j in range(offsets[f], offsets[f + 1]):
            if source[j] >= 0:
                for c in range(n_ch):
                    out[j * n_ch + c] = column_hist[source[j] * n_ch + c]
        i = default_of[f]
        if i >= 0:
            if not have_total:
                _column_total(column_hist, n_ch, first_column_bins, total)
                have_total = True
            _default_bin(out, n_ch, total, i, k, default_at, others, others_start, n_others)


cdef inline void _column_total(const double* column_hist, Py_ssize_t n_ch,
                               Py_ssize_t first_column_bins, double* total) noexcept nogil:
    # A node's sums: its first column's bins, summed in order.
    cdef Py_ssize_t c, j
    for c in range(n_ch):
        total[c] = 0.0
        for j in range(first_column_bins):
            total[c] += column_hist[j * n_ch + c]


cdef inline void _default_bin(double* out, Py_ssize_t n_ch, const double* total,
                              Py_ssize_t i, Py_ssize_t k, const Py_ssize_t* default_at,
                              const Py_ssize_t* others, const Py_ssize_t* others_start,
                              Py_ssize_t n_others) noexcept nogil:
    # The ``i``-th default bin: the node's total minus its feature's other bins (in order).
    cdef Py_ssize_t c, q
    cdef Py_ssize_t stop = others_start[i + 1] if i + 1 < k else n_others
    cdef double acc
    for c in range(n_ch):
        acc = 0.0
        for q in range(others_start[i], stop):
            acc += out[others[q] * n_ch + c]
        out[default_at[i] * n_ch + c] = total[c] - acc


def subtract_siblings(const double[:, :, ::1] parents, const idx_t[::1] parent_slots,
                      const idx_t[::1] carried, double[:, :, ::1] children, int n_threads):
    """The larger children's histograms by subtraction, and the carried nodes' copies.

    With ``m = len(parent_slots)``: ``children[m + j] = parents[parent_slots[j]] -
    children[j]`` (slot ``j`` holds the smaller child, built from its rows), then
    ``children[2 m + j] = parents[carried[j]]``. The work is cut in blocks of a slot,
    spread over ``n_threads`` threads (a level's histograms are large: 1,000 features of
    255 bins are 6 MB a node).
    """
    cdef Py_ssize_t m = parent_slots.shape[0], n_carried = carried.shape[0]
    cdef Py_ssize_t width = parents.shape[1] * parents.shape[2]
    cdef Py_ssize_t block = 16384       # doubles: 128 KB
    cdef Py_ssize_t per_slot = (width + block - 1) // block
    cdef Py_ssize_t q, j, lo, hi, i
    cdef const double* src
    cdef const double* small
    cdef double* dst
    if children.shape[0] < 2 * m + n_carried or children.shape[1] * children.shape[2] != width:
        raise ValueError("children must have 2 len(parent_slots) + len(carried) slots of "
                         "the parents' shape")
    for j in range(m):
        if not 0 <= parent_slots[j] < parents.shape[0]:
            raise ValueError("parent slot out of range")
    for j in range(n_carried):
        if not 0 <= carried[j] < parents.shape[0]:
            raise ValueError("carried slot out of range")
    if width == 0:
        return
    with nogil:
        for q in prange((m + n_carried) * per_slot, schedule="static", num_threads=n_threads):
            j = q // per_slot
            lo = (q % per_slot) * block
            hi = lo + block if lo + block < width else width
            if j < m:
                src = &parents[parent_slots[j], 0, 0]
                small = &children[j, 0, 0]
                dst = &children[m + j, 0, 0]
                for i in range(lo, hi):
                    dst[i] = src[i] - small[i]
            else:
                src = &parents[carried[j - m], 0, 0]
                dst = &children[m + j, 0, 0]
                for i in range(lo, hi):
                    dst[i] = src[i]
