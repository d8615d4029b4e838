"""Gradient/hessian/count histograms per (node, feature, bin)."""
from cython.parallel cimport prange

from .common cimport bin_t, idx_t, CH_G, CH_H, CH_C, N_CHANNELS


def build_histograms(const bin_t[:, ::1] X_binned, const idx_t[::1] rows,
                     const idx_t[::1] slot, const double[::1] gradient,
                     const double[::1] hessian, const idx_t[::1] slots_to_clear,
                     double[:, :, :, ::1] hist, int n_threads):
    """Build the histograms of several nodes in one pass over their rows.

    Parameters
    ----------
    X_binned : IN uint8 (n_features, n_rows_total), feature-major.
    rows : IN int32 (n_selected,) training-row ids, in increasing order for cache locality.
    slot : IN int32 (n_selected,) histogram slot (node) of each selected row.
    gradient, hessian : IN float64 (n_selected,) aligned with ``rows`` and already
        multiplied by the row weights.
    slots_to_clear : IN int32: the slots this call fills (zeroed first).
    hist : OUT float64 (n_slots, n_features, n_bins, 3).
    n_threads : OpenMP threads. Parallel over features; within a feature rows are added in
        order, so the result does not depend on ``n_threads``.
    """
    cdef Py_ssize_t n_features = X_binned.shape[0]
    cdef Py_ssize_t n_rows_total = X_binned.shape[1]
    cdef Py_ssize_t n_bins = hist.shape[2]
    cdef Py_ssize_t n_slots = hist.shape[0]
    cdef Py_ssize_t n_sel = rows.shape[0]
    cdef Py_ssize_t slot_stride = n_features * n_bins * N_CHANNELS
    cdef Py_ssize_t f, q, b, k, j
    cdef const bin_t* xf
    cdef double* base
    cdef double* hb
    if hist.shape[1] != n_features or hist.shape[3] != N_CHANNELS:
        raise ValueError("hist must have shape (n_slots, n_features, n_bins, 3)")
    if slot.shape[0] != n_sel or gradient.shape[0] != n_sel or hessian.shape[0] != n_sel:
        raise ValueError("rows, slot, gradient and hessian must have the same length")
    for k in range(slots_to_clear.shape[0]):
        if not 0 <= slots_to_clear[k] < n_slots:
            raise ValueError("slot out of range")
    IF BOOSTLIB_DEBUG:
        # The hot loop uses raw pointers: check every index it will follow.
        for q in range(n_sel):
            if not (0 <= rows[q] < n_rows_total and 0 <= slot[q] < n_slots):
                raise IndexError("row or slot out of range")
        for f in range(n_features):
            for q in range(n_rows_total):
                if X_binned[f, q] >= n_bins:
                    raise IndexError("bin out of range")
    if n_sel == 0 and slots_to_clear.shape[0] == 0:
        return
    with nogil:
        for f in prange(n_features, schedule="static", num_threads=n_threads):
            xf = &X_binned[f, 0]
            base = &hist[0, 0, 0, 0] + f * n_bins * N_CHANNELS
            for k in range(slots_to_clear.shape[0]):
                hb = base + slots_to_clear[k] * slot_stride
                for j in range(n_bins * N_CHANNELS):
                    hb[j] = 0.0
            for q in range(n_sel):
                hb = base + slot[q] * slot_stride + xf[rows[q]] * N_CHANNELS
                hb[CH_G] += gradient[q]
                hb[CH_H] += hessian[q]
                hb[CH_C] += 1.0
