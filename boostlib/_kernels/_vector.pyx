"""Histograms and split search of vector-leaf trees: one tree for ``K`` outputs.

A vector-leaf histogram keeps, per (slot, bin), the sums of every output's gradient and
hessian, interleaved, then optionally the row count: channels ``2k`` (gradient of output
``k``), ``2k + 1`` (its hessian), ``2K`` (rows; absent in the count-free mode). The rows
are read once for all ``K`` outputs.

A split's gain is the sum over the outputs of their Newton gains,
``sum_k GL_k^2/(HL_k + l2) + GR_k^2/(HR_k + l2) - G_k^2/(H_k + l2)``; its children must hold
``min_samples_leaf`` rows and ``min_child_weight`` of hessian summed over the outputs (the
count-free mode counts that summed hessian as the rows, as the scalar kernels count the
hessian), and every output's ``H + l2`` must be positive.
"""
from cython.parallel cimport prange

from libc.stdlib cimport malloc, free

from .common cimport bin_t, idx_t, block_stop, LIST_BLOCK


cdef extern from *:
    """
    /* Add the rows of one block (positions q0 .. q0 + m - 1, or pos[0 .. m - 1] when listed)
       to the histograms of features f0 .. f1 - 1, group features at a time. */
    static void boostlib_vector_add_block(
            const unsigned char *X, Py_ssize_t x_stride, const int *rows, const int *pos,
            Py_ssize_t q0, Py_ssize_t m, const int *node_of_row, const int *slot_of_node,
            const float *gh, Py_ssize_t n_gh, const int *offsets, Py_ssize_t f0, Py_ssize_t f1,
            double *hist, Py_ssize_t slot_stride, Py_ssize_t width, int counted,
            Py_ssize_t group) {
        for (Py_ssize_t fg = f0; fg < f1; fg += group) {
            Py_ssize_t fe = fg + group < f1 ? fg + group : f1;
            for (Py_ssize_t q = 0; q < m; q++) {
                Py_ssize_t p = pos ? pos[q] : q0 + q;
                int s = slot_of_node[node_of_row[p]];
                if (s < 0)
                    continue;
                const unsigned char *xr = X + (rows ? rows[p] : p) * x_stride;
                const float *restrict gp = gh + p * n_gh;
                double *hs = hist + s * slot_stride;
                for (Py_ssize_t f = fg; f < fe; f++) {
                    double *restrict hb = hs + (offsets[f] + xr[f]) * width;
                    for (Py_ssize_t j = 0; j < n_gh; j++)
                        hb[j] += (double)gp[j];
                    if (counted)
                        hb[n_gh] += 1.0;
                }
            }
        }
    }
    """
    void _add_block "boostlib_vector_add_block" (
        const bin_t* X, Py_ssize_t x_stride, const idx_t* rows, const idx_t* pos,
        Py_ssize_t q0, Py_ssize_t m, const idx_t* node_of_row, const idx_t* slot_of_node,
        const float* gh, Py_ssize_t n_gh, const idx_t* offsets, Py_ssize_t f0, Py_ssize_t f1,
        double* hist, Py_ssize_t slot_stride, Py_ssize_t width, int counted,
        Py_ssize_t group) noexcept nogil

cdef enum:
    # Features whose histograms a block of rows is added to at a time: 4 measured best for
    # K = 10 (0.7x the time of all features a row at a time; 200,000 x 28 rows, busy host).
    FEATURE_GROUP = 4


def build_histograms(const bin_t[:, ::1] X_rows, const idx_t[::1] rows,
                     const idx_t[::1] node_of_row, const idx_t[::1] slot_of_node,
                     const float[:, ::1] gh, const idx_t[::1] offsets,
                     double[:, :, ::1] hist, int n_threads,
                     const idx_t[::1] listed=None, const idx_t[::1] block_counts=None):
    """Build, in one pass over the rows, the vector histograms of every node with a slot.

    Parameters
    ----------
    X_rows : IN uint8 (n_rows_total, n_features), row-major bins (as
        ``_histogram.build_histograms`` reads them: feature ``f``'s bin at ``offsets[f] +
        X_rows[row, f]``).
    rows : IN int32 (n_fit,) training-row ids; empty: every row, in order.
    node_of_row : IN int32 (n_fit,) node of each fitted row.
    slot_of_node : IN int32 per node id: its slot, or -1 (rows skipped).
    gh : IN float32 (n_fit, 2K): each row's gradient and hessian of every output,
        interleaved (weights applied).
    offsets : IN int32 (n_features + 1,) the histogram layout.
    hist : OUT float64 (n_slots, offsets[-1], 2K or 2K + 1). Every slot is overwritten.
    n_threads : threads split the features; each bin is summed over the rows in order, so
        the sums do not depend on ``n_threads``.
    listed, block_counts : IN int32, optional, together: the rows of the slotted nodes as
        ``_partition.apply_level`` lists them (the same rows, in the same order).
    """
    cdef Py_ssize_t n_features = X_rows.shape[1]
    cdef Py_ssize_t n_rows_total = X_rows.shape[0]
    cdef Py_ssize_t n_fit = node_of_row.shape[0]
    cdef Py_ssize_t n_slots = hist.shape[0]
    cdef Py_ssize_t width = hist.shape[2]
    cdef Py_ssize_t n_gh = gh.shape[1]
    cdef bint counted = width == n_gh + 1
    cdef bint identity = rows.shape[0] == 0
    cdef bint use_list = listed is not None
    cdef Py_ssize_t slot_stride = hist.shape[1] * width
    cdef Py_ssize_t n_chunks, c, f, f0, f1, p, q, j, blk, m, n_blocks = 0
    cdef idx_t s
    cdef Py_ssize_t r
    cdef double* hs
    if offsets.shape[0] != n_features + 1 or offsets[0] != 0:
        raise ValueError("offsets must have n_features + 1 entries, the first 0")
    for f in range(n_features):
        if offsets[f + 1] <= offsets[f]:
            raise ValueError("every feature needs at least one histogram bin")
    if n_gh < 2 or n_gh % 2 or not (width == n_gh or counted):
        raise ValueError("gh must have 2K columns and hist 2K or 2K + 1 channels")
    if hist.shape[1] != offsets[n_features]:
        raise ValueError("hist must have offsets[-1] bins per slot")
    if (gh.shape[0] != n_fit or (not identity and rows.shape[0] != n_fit)
            or (identity and n_fit != n_rows_total)):
        raise ValueError("rows, node_of_row and gh must have the same length")
    if use_list != (block_counts is not None):
        raise ValueError("listed and block_counts go together")
    if use_list:
        n_blocks = (n_fit + LIST_BLOCK - 1) // LIST_BLOCK
        if listed.shape[0] != n_fit or block_counts.shape[0] != n_blocks:
            raise ValueError(f"listed must have {n_fit} entries and block_counts {n_blocks}")
        for blk in range(n_blocks):
            if not 0 <= block_counts[blk] <= block_stop(blk, LIST_BLOCK, n_fit) - blk * LIST_BLOCK:
                raise ValueError("block count out of range")
            for q in range(block_counts[blk]):
                if not blk * LIST_BLOCK <= listed[blk * LIST_BLOCK + q] < block_stop(
                        blk, LIST_BLOCK, n_fit):
                    raise IndexError("a listed row lies outside its block")
    for p in range(n_fit):      # cheap beside the pass: every index the loop follows
        if not ((identity or 0 <= rows[p] < n_rows_total)
                and 0 <= node_of_row[p] < slot_of_node.shape[0]):
            raise IndexError("row or node id out of range")
    for j in range(slot_of_node.shape[0]):
        if slot_of_node[j] >= n_slots:
            raise ValueError("slot out of range")
    if n_slots == 0:
        return
    if not use_list:
        n_blocks = (n_fit + LIST_BLOCK - 1) // LIST_BLOCK
    n_chunks = n_threads if n_threads < n_features else n_features
    if n_chunks < 1:
        n_chunks = 1
    with nogil:
        for c in prange(n_chunks, schedule="static", num_threads=n_chunks):
            f0 = c * n_features // n_chunks
            f1 = (c + 1) * n_features // n_chunks
            for s in range(n_slots):
                hs = &hist[s, offsets[f0], 0]
                for j in range((offsets[f1] - offsets[f0]) * width):
                    hs[j] = 0.0
            # Block by block of rows, a few features at a time: those features' histograms
            # (each 2K + 1 sums a bin) stay in cache while the block's rows are added to
            # them (row by row over all features, the slot's histogram missed the cache on
            # every row). Each bin still sums its rows in their order.
            for blk in range(n_blocks):
                m = block_counts[blk] if use_list else block_stop(blk, LIST_BLOCK, n_fit) \
                    - blk * LIST_BLOCK
                _add_block(&X_rows[0, 0], X_rows.shape[1], NULL if identity else &rows[0],
                           &listed[blk * LIST_BLOCK] if use_list else NULL,
                           blk * LIST_BLOCK, m, &node_of_row[0], &slot_of_node[0], &gh[0, 0],
                           n_gh, &offsets[0], f0, f1, &hist[0, 0, 0], slot_stride, width,
                           counted, FEATURE_GROUP)


cdef void _search_feature(const double* h0, Py_ssize_t slot_stride, Py_ssize_t width,
                          const idx_t* slots, Py_ssize_t n_nodes, Py_ssize_t off,
                          Py_ssize_t nb, Py_ssize_t K, bint counted, double l2, double msl,
                          double mcw, double* work, double* gain_sum,
                          idx_t* n_valid) noexcept nogil:
    """:func:`find_split`'s sums of one feature's candidates over the nodes, into
    ``gain_sum``/``n_valid`` (rows ``b``, the feature's bins; 2 columns). Each output's
    prefix sums are taken along the bins, then every candidate's score for that output, a
    branch-free loop over the bins that the compiler vectorises: ``(GL^2 (HR + l2) + GR^2
    (HL + l2)) / ((HL + l2)(HR + l2))``, one division (a few ulps from the two terms'
    sum). ``work`` holds ``4K + 10 (nb + 1)`` doubles."""
    cdef double* G = work
    cdef double* H = work + K
    cdef double* gm = work + 2 * K
    cdef double* hm = work + 3 * K
    cdef double* pg = work + 4 * K          # an output's prefix sums, by bin
    cdef double* ph = pg + nb + 1
    cdef double* acc = ph + nb + 1          # per bin and direction: the summed scores,
    cdef double* hls = acc + 2 * (nb + 1)   # the left and right hessians summed over the
    cdef double* hrs = hls + 2 * (nb + 1)   # outputs, and 1.0 where an output's H + l2 <= 0
    cdef double* bad = hrs + 2 * (nb + 1)
    cdef Py_ssize_t i, k, b, d, nd
    cdef double C, cm, cl, CL, CR, parent, GL, HL, GR, HR, al, ar, gk, hk, gmk, hmk
    cdef bint no_miss
    cdef const double* hf
    for i in range(n_nodes):
        hf = h0 + slots[i] * slot_stride + off * width
        C = 0.0
        for k in range(K):
            G[k] = 0.0
            H[k] = 0.0
        for b in range(nb):
            for k in range(K):
                G[k] = G[k] + hf[b * width + 2 * k]
                H[k] = H[k] + hf[b * width + 2 * k + 1]
            if counted:
                C = C + hf[b * width + 2 * K]
        no_miss = True
        cm = 0.0
        for k in range(K):
            gm[k] = hf[nb * width + 2 * k]
            hm[k] = hf[nb * width + 2 * k + 1]
            G[k] = G[k] + gm[k]
            H[k] = H[k] + hm[k]
            if not counted:
                cm = cm + hm[k]
                no_miss = no_miss and gm[k] == 0.0
        if counted:
            cm = hf[nb * width + 2 * K]
            C = C + cm
        no_miss = no_miss and cm == 0.0
        nd = 1 if no_miss else 2       # without missing rows both directions are the same
        parent = 0.0
        for k in range(K):
            if H[k] + l2 > 0.0:
                parent = parent + G[k] * G[k] / (H[k] + l2)
        for b in range(2 * (nb + 1)):
            acc[b] = 0.0
            hls[b] = 0.0
            hrs[b] = 0.0
            bad[b] = 0.0
        for k in range(K):
            gk = 0.0
            hk = 0.0
            for b in range(nb):
                gk = gk + hf[b * width + 2 * k]
                hk = hk + hf[b * width + 2 * k + 1]
                pg[b] = gk
                ph[b] = hk
            for d in range(nd):
                gmk = gm[k] if d == 0 else 0.0      # d = 0: the missing rows go left
                hmk = hm[k] if d == 0 else 0.0
                for b in range(nb):
                    GL = pg[b] + gmk
                    HL = ph[b] + hmk
                    GR = G[k] - GL
                    HR = H[k] - HL
                    al = HL + l2
                    ar = HR + l2
                    acc[d * (nb + 1) + b] += (GL * GL * ar + GR * GR * al) / (al * ar)
                    hls[d * (nb + 1) + b] += HL
                    hrs[d * (nb + 1) + b] += HR
                    bad[d * (nb + 1) + b] += (al <= 0.0) | (ar <= 0.0)
        cl = 0.0
        for b in range(nb):
            if counted:
                cl = cl + hf[b * width + 2 * K]
            for d in range(nd):
                if counted:
                    CL = cl + cm if d == 0 else cl
                    CR = C - CL
                else:       # the hessians summed over the outputs count the rows
                    CL = hls[d * (nb + 1) + b]
                    CR = hrs[d * (nb + 1) + b]
                if not (bad[d * (nb + 1) + b] == 0.0 and CL >= msl and CR >= msl
                        and hls[d * (nb + 1) + b] >= mcw and hrs[d * (nb + 1) + b] >= mcw):
                    continue
                gain_sum[2 * b + d] += acc[d * (nb + 1) + b] - parent
                n_valid[2 * b + d] += 1
                if no_miss:
                    gain_sum[2 * b + 1] += acc[b] - parent
                    n_valid[2 * b + 1] += 1


def find_split(const double[:, :, ::1] hist, const idx_t[::1] slots,
               const idx_t[::1] offsets, const idx_t[::1] n_bins_nonmissing,
               Py_ssize_t n_outputs, double l2, double min_samples_leaf,
               double min_child_weight, const double[:, ::1] noise,
               double[:, ::1] gain_sum, idx_t[:, ::1] n_valid, int n_threads,
               const unsigned char[::1] allowed=None):
    """The best threshold split shared by the nodes in ``slots`` (one node of a depthwise
    or leaf-wise tree, or the leaves of a symmetric tree's level), summed over the outputs.

    A candidate's gain is the sum of its gains over the nodes where it is valid (see the
    module docstring); a candidate valid in no node cannot be chosen.

    Parameters
    ----------
    hist : IN (n_slots, offsets[-1], 2K or 2K + 1) vector histograms.
    slots : IN int32, the nodes' slots.
    offsets, n_bins_nonmissing : the histogram layout and each feature's bins in use (its
        missing bin follows them).
    n_outputs : K.
    l2, min_samples_leaf, min_child_weight : the rules (see the module docstring).
    noise : IN (n_features, >= max bins) score noise by bin, or 0 rows for none.
    gain_sum : OUT (offsets[-1], 2) summed gain per candidate (axis 1: ``nan_right``).
    n_valid : OUT (offsets[-1], 2) nodes where the candidate is valid.
    n_threads : OpenMP threads (parallel over features).
    allowed : IN uint8 (n_features,), optional: the features that may be split on.

    Returns
    -------
    (feature, bin, nan_right, gain) : feature -1 when no candidate has a positive gain.
    """
    cdef Py_ssize_t n_features = n_bins_nonmissing.shape[0]
    cdef Py_ssize_t n_nodes = slots.shape[0]
    cdef Py_ssize_t K = n_outputs
    cdef Py_ssize_t width = hist.shape[2]
    cdef bint counted = width == 2 * K + 1
    cdef bint use_noise = noise.shape[0] > 0
    cdef bint use_mask = allowed is not None
    cdef Py_ssize_t f, b, nb, i, k, off, best_f, best_b
    cdef int d, best_d
    cdef double score, best_score
    cdef double* work
    if K < 1 or not (width == 2 * K or counted):
        raise ValueError("hist must have 2K or 2K + 1 channels for K = n_outputs >= 1")
    if offsets.shape[0] != n_features + 1 or offsets[0] != 0 or hist.shape[1] != offsets[
            n_features]:
        raise ValueError("offsets must match n_bins_nonmissing and hist")
    for f in range(n_features):
        if offsets[f + 1] - offsets[f] != n_bins_nonmissing[f] + 1 or n_bins_nonmissing[f] < 1:
            raise ValueError("each feature needs n_bins_nonmissing[f] + 1 >= 2 bins")
        if use_noise and n_bins_nonmissing[f] + 1 > noise.shape[1]:
            raise ValueError("noise needs a column per bin")
    if gain_sum.shape[0] != hist.shape[1] or gain_sum.shape[1] != 2:
        raise ValueError("gain_sum must have shape (offsets[-1], 2)")
    if n_valid.shape[0] != hist.shape[1] or n_valid.shape[1] != 2:
        raise ValueError("n_valid must have shape (offsets[-1], 2)")
    if use_noise and noise.shape[0] != n_features:
        raise ValueError("noise must have shape (n_features, n_bins)")
    if use_mask and allowed.shape[0] != n_features:
        raise ValueError("allowed must have one entry per feature")
    for i in range(n_nodes):
        if not 0 <= slots[i] < hist.shape[0]:
            raise ValueError("slot out of range")
    with nogil:
        for f in prange(n_features, schedule="dynamic", num_threads=n_threads):
            nb = n_bins_nonmissing[f]
            off = offsets[f]
            for b in range(off, off + nb + 1):
                gain_sum[b, 0] = 0.0
                gain_sum[b, 1] = 0.0
                n_valid[b, 0] = 0
                n_valid[b, 1] = 0
            if n_nodes == 0 or (use_mask and not allowed[f]):
                continue
            work = <double*> malloc((4 * K + 10 * (nb + 1)) * sizeof(double))
            _search_feature(&hist[0, 0, 0], hist.shape[1] * width, width, &slots[0], n_nodes,
                            off, nb, K, counted, l2, min_samples_leaf, min_child_weight,
                            work, &gain_sum[off, 0], &n_valid[off, 0])
            free(work)
    best_f = -1
    best_b = -1
    best_d = 0
    best_score = 0.0
    for f in range(n_features):
        off = offsets[f]
        for b in range(n_bins_nonmissing[f]):
            for d in range(2):
                if n_valid[off + b, d] == 0 or not gain_sum[off + b, d] > 0.0:
                    continue
                score = gain_sum[off + b, d] + noise[f, b] if use_noise else gain_sum[off + b, d]
                if best_f < 0 or score > best_score:
                    best_f = f
                    best_b = b
                    best_d = d
                    best_score = score
    if best_f < 0:
        return -1, -1, 0, 0.0
    return best_f, best_b, best_d, gain_sum[offsets[best_f] + best_b, best_d]


def node_sums(const idx_t[::1] node_of_row, const double[:, :] gradient,
              const double[:, :] hessian, double[:, ::1] out):
    """Per-node sums of every output's gradient and hessian and of the rows, for a
    vector-leaf tree's values: ``out`` (n_nodes, 2K + 1) gets channels ``2k`` (gradient of
    output ``k``), ``2k + 1`` (its hessian) and ``2K`` (rows), each summed in row order
    (the order of ``numpy.bincount``). ``gradient`` and ``hessian`` are (n, K) of any
    strides."""
    cdef Py_ssize_t n = node_of_row.shape[0], K = gradient.shape[1], p, k
    cdef idx_t node
    if gradient.shape[0] != n or hessian.shape[0] != n or hessian.shape[1] != K \
            or out.shape[1] != 2 * K + 1:
        raise ValueError("node_sums: arrays of inconsistent shapes")
    for p in range(n):
        if not 0 <= node_of_row[p] < out.shape[0]:
            raise ValueError("node id out of range")
    with nogil:
        out[:, :] = 0.0
        for p in range(n):
            node = node_of_row[p]
            for k in range(K):
                out[node, 2 * k] += gradient[p, k]
                out[node, 2 * k + 1] += hessian[p, k]
            out[node, 2 * K] += 1.0
    return None
