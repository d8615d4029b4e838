"""Gradient/hessian/count histograms per (node, feature, bin)."""
from cython.parallel cimport prange

import numpy as np

from libc.stdint cimport int64_t

from .common cimport bin_t, idx_t, block_stop, add_row, add_entries, fill_defaults, \
    prefetch, LIST_BLOCK, N_CHANNELS, PREFETCH_ROWS

cdef enum:
    # Several slots are built one at a time (rows grouped by slot) when one slot's
    # histogram is at most this large: it then stays in L1 while its rows are added. Larger
    # histograms miss L1 either way, and the rows are better streamed in order (grouping
    # them made a 1,000,000 x 28 continuous fit 1.6x slower).
    GROUP_BYTES = 32768

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
        Histograms from entries take one thread.
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
        slot's rows minus its column's other bins.
    """
    cdef bint sparse = entry_start is not None
    cdef const int64_t* es = NULL
    cdef const idx_t* eb = NULL
    cdef double* tot = NULL
    cdef Py_ssize_t r
    cdef Py_ssize_t n_features = offsets.shape[0] - 1 if sparse else X_rows.shape[1]
    cdef Py_ssize_t n_rows_total = X_rows.shape[0]
    cdef Py_ssize_t n_slots = hist.shape[0]
    cdef Py_ssize_t n_nodes = slot_of_node.shape[0]
    cdef bint identity = rows.shape[0] == 0
    cdef Py_ssize_t n_fit = node_of_row.shape[0]
    cdef Py_ssize_t n_ch = hist.shape[2]
    cdef Py_ssize_t slot_stride = hist.shape[1] * n_ch
    cdef Py_ssize_t n_chunks, c, f, f0, f1, p, j, q, blk, m, pf, n_blocks = 0
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
        es = &entry_start[0]
        eb = &entry_bins[0] if entry_bins.shape[0] else NULL
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
    n_chunks = n_threads if n_threads < n_features else n_features
    if n_chunks < 1 or sparse:
        # Threads split the columns; with entries each would still read every entry of
        # every row, and two threads took 1.4-1.9x the time of one (117 columns, 11.7
        # entries a row, 10,000 to 250,000 rows; under 5,000 rows they saved 10-30%).
        n_chunks = 1
    if n_slots > 1 and slot_stride * sizeof(double) <= GROUP_BYTES:
        _build_by_slot(X_rows, rows, node_of_row, slot_of_node, gradient, hessian, offsets,
                       hist, n_threads, n_chunks, listed, block_counts, entry_start,
                       entry_bins, entry_default)
        return
    cdef double[::1] totals
    if sparse:          # per chunk and slot: the total of the slot's rows
        totals = np.zeros(n_chunks * n_slots * 3)
        tot = &totals[0]
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
                            if sparse:
                                prefetch(&es[pf if identity else rows[pf]])
                            else:
                                prefetch(&X_rows[pf if identity else rows[pf], 0])
                            prefetch(&gradient[pf])
                            prefetch(&hessian[pf])
                            prefetch(&node_of_row[pf])
                        p = listed[blk * LIST_BLOCK + q]
                        s = slot_of_node[node_of_row[p]]
                        r = p if identity else rows[p]
                        if s < 0:       # never, for a list the partition made
                            continue
                        if sparse:
                            add_entries(eb + es[r], es[r + 1] - es[r],
                                        &hist[0, 0, 0] + s * slot_stride, offsets[f0],
                                        offsets[f1], n_ch, gradient[p], hessian[p],
                                        tot + (c * n_slots + s) * 3)
                        else:
                            add_row(&X_rows[r, 0], &hist[0, 0, 0] + s * slot_stride,
                                    &offsets[0], f0, f1, n_ch, gradient[p], hessian[p])
            else:
                for p in range(n_fit):
                    s = slot_of_node[node_of_row[p]]
                    r = p if identity else rows[p]
                    if s < 0:
                        continue
                    if sparse:
                        add_entries(eb + es[r], es[r + 1] - es[r],
                                    &hist[0, 0, 0] + s * slot_stride, offsets[f0], offsets[f1],
                                    n_ch, gradient[p], hessian[p], tot + (c * n_slots + s) * 3)
                    else:
                        add_row(&X_rows[r, 0], &hist[0, 0, 0] + s * slot_stride, &offsets[0],
                                f0, f1, n_ch, gradient[p], hessian[p])
            if sparse:
                for s in range(n_slots):
                    fill_defaults(&hist[0, 0, 0] + s * slot_stride,
                                  tot + (c * n_slots + s) * 3, &offsets[0], &entry_default[0],
                                  f0, f1, n_ch)


cdef _build_by_slot(const bin_t[:, ::1] X_rows, const idx_t[::1] rows,
                    const idx_t[::1] node_of_row, const idx_t[::1] slot_of_node,
                    const float[::1] gradient, const float[::1] hessian,
                    const idx_t[::1] offsets, double[:, :, ::1] hist, int n_threads,
                    Py_ssize_t n_chunks, const idx_t[::1] listed, const idx_t[::1] block_counts,
                    const int64_t[::1] entry_start, const idx_t[::1] entry_bins,
                    const idx_t[::1] entry_default):
    """:func:`build_histograms` with several slots: the rows are first grouped by slot (a
    stable counting sort, so each slot's rows keep their order and every sum is the same),
    then each slot's histogram is built from its rows alone. Interleaving the slots row by
    row sent every row to another slot's histogram, and with 16 slots a row cost 4x more
    (the slots' histograms do not fit in L1 together)."""
    cdef bint sparse = entry_start is not None
    cdef const int64_t* es = &entry_start[0] if sparse else NULL
    cdef const idx_t* eb = NULL
    cdef double* tot = NULL
    cdef Py_ssize_t r
    cdef Py_ssize_t n_features = offsets.shape[0] - 1
    cdef Py_ssize_t n_slots = hist.shape[0]
    cdef Py_ssize_t n_ch = hist.shape[2]
    cdef Py_ssize_t slot_stride = hist.shape[1] * n_ch
    cdef Py_ssize_t n_fit = node_of_row.shape[0]
    cdef bint identity = rows.shape[0] == 0
    cdef bint use_list = listed is not None
    cdef Py_ssize_t n_blocks = (n_fit + LIST_BLOCK - 1) // LIST_BLOCK if use_list else 0
    cdef Py_ssize_t c, f0, f1, j, q, blk, p, pf, k, m = 0
    cdef idx_t s
    cdef double* hs
    start_arr = np.zeros(n_slots + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] start = start_arr
    cdef idx_t[::1] order
    cdef double[::1] totals
    if sparse:
        eb = &entry_bins[0] if entry_bins.shape[0] else NULL
        totals = np.zeros(n_chunks * 3)
        tot = &totals[0]
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
    order = np.empty(max(m, 1), dtype=np.int32)
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
        for c in prange(n_chunks, schedule="static", num_threads=n_chunks):
            f0 = c * n_features // n_chunks
            f1 = (c + 1) * n_features // n_chunks
            for k in range(n_slots):
                hs = &hist[k, offsets[f0], 0]
                for j in range((offsets[f1] - offsets[f0]) * n_ch):
                    hs[j] = 0.0
                if sparse:
                    for j in range(3):
                        tot[c * 3 + j] = 0.0
                for q in range(start[k], start[k + 1]):
                    if q + PREFETCH_ROWS < start[k + 1]:
                        pf = order[q + PREFETCH_ROWS]
                        if sparse:
                            prefetch(&es[pf if identity else rows[pf]])
                        else:
                            prefetch(&X_rows[pf if identity else rows[pf], 0])
                        prefetch(&gradient[pf])
                        prefetch(&hessian[pf])
                    p = order[q]
                    r = p if identity else rows[p]
                    if sparse:
                        add_entries(eb + es[r], es[r + 1] - es[r],
                                    &hist[0, 0, 0] + k * slot_stride, offsets[f0], offsets[f1],
                                    n_ch, gradient[p], hessian[p], tot + c * 3)
                    else:
                        add_row(&X_rows[r, 0], &hist[0, 0, 0] + k * slot_stride, &offsets[0],
                                f0, f1, n_ch, gradient[p], hessian[p])
                if sparse:
                    fill_defaults(&hist[0, 0, 0] + k * slot_stride, tot + c * 3, &offsets[0],
                                  &entry_default[0], f0, f1, n_ch)


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
