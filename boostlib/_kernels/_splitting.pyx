"""Split finding on histograms with the Newton gain ``G^2 / (H + l2)``.

A candidate is (feature ``f``, bin ``b``, missing direction). Rows whose bin is ``<= b`` go
left; missing rows go right when ``nan_right``. A candidate is *valid* for a node when both
children have at least ``min_samples_leaf`` rows and a hessian sum of at least
``min_child_weight``, and both ``H + l2`` are positive. Its gain for that node is
``GL^2/(HL+l2) + GR^2/(HR+l2) - G^2/(H+l2)``. Optional ``noise[f, b]`` (random strength) is
added to the score used to *rank* candidates, never to the reported gain. Only candidates with
a strictly positive gain can be chosen. Ties go to the smaller feature, then the smaller bin,
then ``nan_right = 0``; so the result never depends on ``n_threads``.

Histograms have 3 channels (gradient, hessian, count) or 2 (no count). Without counts, the
hessian sum stands in for the count wherever one is read, so the caller must pass
``min_samples_leaf=0`` and a positive ``min_child_weight`` (a child whose hessian sum reaches
it cannot be empty, so "at least one row" still holds). The missing bin of a node counts as
empty when its count is 0 or, without counts, when its gradient *and* hessian sums are 0 (then
its rows change no sum, so both directions give the same split).
"""
from cython.parallel cimport prange

from .common cimport idx_t, CH_G, CH_H, CH_C


cdef inline bint _valid(double cl, double cr, double hl, double hr, double l2,
                        double min_samples_leaf, double min_child_weight) noexcept nogil:
    return (cl >= min_samples_leaf and cr >= min_samples_leaf and hl >= min_child_weight
            and hr >= min_child_weight and hl + l2 > 0.0 and hr + l2 > 0.0)


cdef void _feature_best(const double* hf, Py_ssize_t n_channels, Py_ssize_t nb,
                        int missing_bin, double l2, double min_samples_leaf,
                        double min_child_weight, const double* noise_f,
                        double* best) noexcept nogil:
    """Best candidate of one feature of one node.

    ``hf`` points at ``hist[.., f, 0, 0]`` (bins contiguous, ``n_channels`` per bin);
    ``noise_f`` at the feature's score noise or NULL. Writes (score, bin, nan_right, gain) to
    ``best``; bin is -1 when no candidate is valid with a positive gain.
    """
    cdef Py_ssize_t b
    cdef int d
    cdef int cc = CH_C if n_channels == 3 else CH_H
    cdef bint has_count = n_channels == 3
    cdef double gm = hf[missing_bin * n_channels + CH_G]
    cdef double hm = hf[missing_bin * n_channels + CH_H]
    cdef double cm = hf[missing_bin * n_channels + cc]
    cdef bint no_miss = cm == 0.0 and (has_count or gm == 0.0)
    cdef double G = gm, H = hm, C = cm
    cdef double gl = 0.0, hl = 0.0, cl = 0.0
    cdef double GL, HL, CL, GR, HR, CR, parent, gain, score
    for b in range(nb):
        G = G + hf[b * n_channels + CH_G]
        H = H + hf[b * n_channels + CH_H]
        C = C + hf[b * n_channels + cc]
    parent = G * G / (H + l2) if H + l2 > 0.0 else 0.0
    best[0] = 0.0
    best[1] = -1.0
    best[2] = 0.0
    best[3] = 0.0
    for b in range(nb):
        gl = gl + hf[b * n_channels + CH_G]
        hl = hl + hf[b * n_channels + CH_H]
        cl = cl + hf[b * n_channels + cc]
        for d in range(2):
            if d == 0:
                if b == nb - 1:
                    continue   # everything left: not a split
                GL = gl + gm
                HL = hl + hm
                CL = cl + cm
            else:
                if no_miss:
                    continue   # same as d == 0: the direction is decided later
                GL = gl
                HL = hl
                CL = cl
            GR = G - GL
            HR = H - HL
            CR = C - CL
            if not _valid(CL, CR, HL, HR, l2, min_samples_leaf, min_child_weight):
                continue
            gain = GL * GL / (HL + l2) + GR * GR / (HR + l2) - parent
            if not gain > 0.0:
                continue
            score = gain + noise_f[b] if noise_f != NULL else gain
            if best[1] < 0 or score > best[0]:
                best[0] = score
                best[1] = b
                best[2] = d
                best[3] = gain


cdef Py_ssize_t _best_feature(double[:, ::1] per_feature) noexcept nogil:
    """Feature with the highest score (ties: the smaller index); -1 if none is valid."""
    cdef Py_ssize_t f, best_f = -1
    cdef double best_score = 0.0
    for f in range(per_feature.shape[0]):
        if per_feature[f, 1] >= 0 and (best_f < 0 or per_feature[f, 0] > best_score):
            best_f = f
            best_score = per_feature[f, 0]
    return best_f


def find_split_node(const double[:, :, ::1] hist, const idx_t[::1] n_bins_nonmissing,
                    int missing_bin, double l2, double min_samples_leaf,
                    double min_child_weight, const double[:, ::1] noise,
                    double[:, ::1] scratch, int n_threads):
    """Best split of one node (depthwise trees).

    Parameters
    ----------
    hist : IN (n_features, n_bins, 2 or 3) histogram of the node.
    n_bins_nonmissing : IN int32 (n_features,): bins in use per feature, missing excluded.
    missing_bin : index of the missing-value bin.
    l2, min_samples_leaf, min_child_weight : regularisation and constraints.
    noise : IN (n_features, n_bins) score noise, or an array with 0 rows for none.
    scratch : OUT (n_features, 4) per-feature best (score, bin, nan_right, gain); the row of
        a feature without a valid candidate has bin -1.
    n_threads : OpenMP threads (parallel over features).

    Returns
    -------
    (feature, bin, nan_right, gain) : feature is -1 when no candidate has a positive gain.
    """
    cdef Py_ssize_t n_features = hist.shape[0]
    cdef Py_ssize_t n_channels = hist.shape[2]
    cdef bint use_noise = noise.shape[0] > 0
    cdef Py_ssize_t f, best_f
    if not 2 <= n_channels <= 3:
        raise ValueError("hist must have 2 or 3 channels")
    if scratch.shape[0] != n_features or scratch.shape[1] < 4:
        raise ValueError("scratch must have shape (n_features, 4)")
    if use_noise and (noise.shape[0] != n_features or noise.shape[1] < hist.shape[1]):
        raise ValueError("noise must have shape (n_features, n_bins)")
    if n_features == 0:
        return -1, -1, 0, 0.0
    with nogil:
        for f in prange(n_features, schedule="static", num_threads=n_threads):
            _feature_best(&hist[f, 0, 0], n_channels, n_bins_nonmissing[f], missing_bin, l2,
                          min_samples_leaf, min_child_weight,
                          &noise[f, 0] if use_noise else NULL, &scratch[f, 0])
        best_f = _best_feature(scratch)
    if best_f < 0:
        return -1, -1, 0, 0.0
    return best_f, int(scratch[best_f, 1]), int(scratch[best_f, 2]), scratch[best_f, 3]


def find_split_nodes(const double[:, :, :, ::1] hist, const idx_t[::1] slots,
                     const idx_t[::1] n_bins_nonmissing, int missing_bin, double l2,
                     double min_samples_leaf, double min_child_weight,
                     const double[:, :, ::1] noise, double[:, :, ::1] scratch,
                     double[:, ::1] out, int n_threads):
    """Best split of each of several nodes in one call (a level of a depthwise tree).

    Equivalent to :func:`find_split_node` on every node, followed by :func:`split_stats` on
    the chosen split, in one parallel region over (node, feature) pairs.

    Parameters
    ----------
    hist : IN (n_slots, n_features, n_bins, 2 or 3) histograms.
    slots : IN int32 (k,): the nodes' slots.
    n_bins_nonmissing, missing_bin, l2, min_samples_leaf, min_child_weight : as in
        :func:`find_split_node`.
    noise : IN (k, n_features, n_bins) score noise of each node, or 0 rows for none.
    scratch : OUT (k, n_features, 4) per-node, per-feature best.
    out : OUT (k, 7) per node: feature (-1: no split), bin, nan_right, gain, left and right
        row counts of the split (hessian sums without a count channel), and 1 when the
        node's missing bin of that feature holds rows that matter (count > 0; without counts,
        a non-zero gradient or hessian sum), else 0.
    n_threads : OpenMP threads.
    """
    cdef Py_ssize_t k = slots.shape[0]
    cdef Py_ssize_t n_features = hist.shape[1]
    cdef Py_ssize_t n_channels = hist.shape[3]
    cdef bint use_noise = noise.shape[0] > 0
    cdef Py_ssize_t t, j, f, b, s, nb
    cdef int cc = CH_C if n_channels == 3 else CH_H
    cdef double total, left
    if not 2 <= n_channels <= 3:
        raise ValueError("hist must have 2 or 3 channels")
    if scratch.shape[0] != k or scratch.shape[1] != n_features or scratch.shape[2] < 4:
        raise ValueError("scratch must have shape (k, n_features, 4)")
    if out.shape[0] != k or out.shape[1] != 7:
        raise ValueError("out must have shape (k, 7)")
    if use_noise and (noise.shape[0] != k or noise.shape[1] != n_features
                      or noise.shape[2] < hist.shape[2]):
        raise ValueError("noise must have shape (k, n_features, n_bins)")
    for j in range(k):
        if not 0 <= slots[j] < hist.shape[0]:
            raise ValueError("slot out of range")
    if n_features == 0:
        out[:, 0] = -1.0
        return
    with nogil:
        for t in prange(k * n_features, schedule="static", num_threads=n_threads):
            j = t // n_features
            f = t - j * n_features
            _feature_best(&hist[slots[j], f, 0, 0], n_channels, n_bins_nonmissing[f],
                          missing_bin, l2, min_samples_leaf, min_child_weight,
                          &noise[j, f, 0] if use_noise else NULL, &scratch[j, f, 0])
        for j in range(k):
            f = _best_feature(scratch[j])
            out[j, 0] = f
            if f < 0:
                out[j, 1] = -1.0
                out[j, 2] = 0.0
                out[j, 3] = 0.0
                out[j, 4] = 0.0
                out[j, 5] = 0.0
                out[j, 6] = 0.0
                continue
            s = slots[j]
            out[j, 1] = scratch[j, f, 1]
            out[j, 2] = scratch[j, f, 2]
            out[j, 3] = scratch[j, f, 3]
            # counts in the order of split_stats, so they agree with it exactly
            nb = n_bins_nonmissing[f]
            total = hist[s, f, missing_bin, cc]
            for b in range(nb):
                total = total + hist[s, f, b, cc]
            left = 0.0
            for b in range(<Py_ssize_t> scratch[j, f, 1] + 1):
                left = left + hist[s, f, b, cc]
            if scratch[j, f, 2] == 0.0:
                left = left + hist[s, f, missing_bin, cc]
            out[j, 4] = left
            out[j, 5] = total - left
            if n_channels == 3:
                out[j, 6] = 1.0 if hist[s, f, missing_bin, CH_C] > 0 else 0.0
            else:
                out[j, 6] = 1.0 if (hist[s, f, missing_bin, CH_G] != 0.0
                                    or hist[s, f, missing_bin, CH_H] != 0.0) else 0.0


def find_split_level(const double[:, :, :, ::1] hist, const idx_t[::1] slots,
                     const idx_t[::1] n_bins_nonmissing, int missing_bin, double l2,
                     double min_samples_leaf, double min_child_weight,
                     const double[:, ::1] noise, double[:, :, ::1] gain_sum,
                     idx_t[:, :, ::1] n_valid, int n_threads):
    """Best split shared by all leaves of a level (symmetric / oblivious trees).

    A candidate's gain is the sum of its gains over the leaves where it is valid; leaves
    where it is invalid contribute nothing (the grower does not split them: both children
    keep the parent's value). A candidate valid in no leaf cannot be chosen.

    Parameters
    ----------
    hist : IN (n_slots, n_features, n_bins, 2 or 3) histograms.
    slots : IN int32: the histogram slots of the leaves that take part.
    n_bins_nonmissing, missing_bin, l2, min_samples_leaf, min_child_weight, noise :
        as in :func:`find_split_node`.
    gain_sum : OUT (n_features, 2, n_bins) summed gain per candidate (axis 1: nan_right).
    n_valid : OUT (n_features, 2, n_bins) number of leaves where the candidate is valid.
    n_threads : OpenMP threads (parallel over features).

    Returns
    -------
    (feature, bin, nan_right, gain) : feature is -1 when no candidate has a positive gain.
    """
    cdef Py_ssize_t n_features = hist.shape[1]
    cdef Py_ssize_t n_bins = hist.shape[2]
    cdef Py_ssize_t n_leaves = slots.shape[0]
    cdef bint use_noise = noise.shape[0] > 0
    cdef Py_ssize_t f, b, nb, k, s, best_f, best_b
    cdef int d, best_d
    cdef double G, H, C, gm, hm, cm, gl, hl, cl, GL, HL, CL, GR, HR, CR
    cdef double parent, score, best_score, last_gain = 0.0
    cdef idx_t nv_before = 0
    cdef int cc = CH_C if hist.shape[3] == 3 else CH_H
    cdef bint has_count = hist.shape[3] == 3
    cdef bint no_miss
    if not 2 <= hist.shape[3] <= 3:
        raise ValueError("hist must have 2 or 3 channels")
    if gain_sum.shape[0] != n_features or gain_sum.shape[1] != 2 or gain_sum.shape[2] != n_bins:
        raise ValueError("gain_sum must have shape (n_features, 2, n_bins)")
    if n_valid.shape[0] != n_features or n_valid.shape[1] != 2 or n_valid.shape[2] != n_bins:
        raise ValueError("n_valid must have shape (n_features, 2, n_bins)")
    if use_noise and (noise.shape[0] != n_features or noise.shape[1] < n_bins):
        raise ValueError("noise must have shape (n_features, n_bins)")
    for k in range(n_leaves):
        if not (0 <= slots[k] < hist.shape[0]):
            raise ValueError("slot out of range")
    with nogil:
        for f in prange(n_features, schedule="static", num_threads=n_threads):
            nb = n_bins_nonmissing[f]
            for d in range(2):
                for b in range(n_bins):
                    gain_sum[f, d, b] = 0.0
                    n_valid[f, d, b] = 0
            for k in range(n_leaves):
                s = slots[k]
                gm = hist[s, f, missing_bin, CH_G]
                hm = hist[s, f, missing_bin, CH_H]
                cm = hist[s, f, missing_bin, cc]
                no_miss = cm == 0.0 and (has_count or gm == 0.0)
                G = gm
                H = hm
                C = cm
                for b in range(nb):
                    G = G + hist[s, f, b, CH_G]
                    H = H + hist[s, f, b, CH_H]
                    C = C + hist[s, f, b, cc]
                parent = G * G / (H + l2) if H + l2 > 0.0 else 0.0
                gl = 0.0
                hl = 0.0
                cl = 0.0
                for b in range(nb):
                    gl = gl + hist[s, f, b, CH_G]
                    hl = hl + hist[s, f, b, CH_H]
                    cl = cl + hist[s, f, b, cc]
                    for d in range(2):
                        if d == 0:
                            GL = gl + gm
                            HL = hl + hm
                            CL = cl + cm
                        elif no_miss:
                            # No missing rows in this leaf: both directions are the same.
                            if n_valid[f, 0, b] > nv_before:
                                gain_sum[f, 1, b] += last_gain
                                n_valid[f, 1, b] += 1
                            continue
                        else:
                            GL = gl
                            HL = hl
                            CL = cl
                        GR = G - GL
                        HR = H - HL
                        CR = C - CL
                        if d == 0:
                            nv_before = n_valid[f, 0, b]
                        if _valid(CL, CR, HL, HR, l2, min_samples_leaf, min_child_weight):
                            last_gain = (GL * GL / (HL + l2) + GR * GR / (HR + l2) - parent)
                            gain_sum[f, d, b] += last_gain
                            n_valid[f, d, b] += 1
    best_f = -1
    best_b = -1
    best_d = 0
    best_score = 0.0
    for f in range(n_features):
        for b in range(n_bins_nonmissing[f]):
            for d in range(2):
                if n_valid[f, d, b] == 0 or not gain_sum[f, d, b] > 0.0:
                    continue
                score = gain_sum[f, d, b] + noise[f, b] if use_noise else gain_sum[f, d, b]
                if best_f < 0 or score > best_score:
                    best_f = f
                    best_b = b
                    best_d = d
                    best_score = score
    if best_f < 0:
        return -1, -1, 0, 0.0
    return best_f, best_b, best_d, gain_sum[best_f, best_d, best_b]


def split_stats(const double[:, :, :, ::1] hist, const idx_t[::1] slots, int feature,
                int split_bin, int nan_right, int n_bins_nonmissing, int missing_bin,
                double[:, ::1] left, double[:, ::1] right):
    """(g, h, count) sums of both children of one split, in several nodes.

    Sums are accumulated in the same order as :func:`find_split_node` and
    :func:`find_split_level`, so validity decisions made from them agree exactly.

    Parameters
    ----------
    hist : IN (n_slots, n_features, n_bins, 2 or 3).
    slots : IN int32 (k,) the nodes' slots.
    feature, split_bin, nan_right : the split.
    n_bins_nonmissing : bins in use of ``feature``.
    missing_bin : bin of missing values.
    left, right : OUT (k, 3); without a count channel, column 2 repeats the hessian sums.
    """
    cdef Py_ssize_t k, b, c, s, src
    cdef double total, gl
    if left.shape[0] != slots.shape[0] or right.shape[0] != slots.shape[0]:
        raise ValueError("left and right need one row per slot")
    if not (0 <= feature < hist.shape[1] and 0 <= split_bin < n_bins_nonmissing
            and n_bins_nonmissing <= missing_bin < hist.shape[2]):
        raise ValueError("split out of range")
    for k in range(slots.shape[0]):
        s = slots[k]
        if not 0 <= s < hist.shape[0]:
            raise ValueError("slot out of range")
        for c in range(3):
            src = c if c < hist.shape[3] else CH_H
            total = hist[s, feature, missing_bin, src]
            for b in range(n_bins_nonmissing):
                total = total + hist[s, feature, b, src]
            gl = 0.0
            for b in range(split_bin + 1):
                gl = gl + hist[s, feature, b, src]
            if not nan_right:
                gl = gl + hist[s, feature, missing_bin, src]
            left[k, c] = gl
            right[k, c] = total - gl
