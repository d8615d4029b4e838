"""Kernels of linear leaves (``linear_leaves=True``, see :mod:`boostlib.engine.linear_leaves`):
the sums of each leaf's ridge fit, and the linear parts added to raw scores.

A leaf (a *slot* of the tree's ``value``) with features ``f_1 .. f_k`` (entries
``ptr[s] .. ptr[s+1]`` of ``feature``, rows of ``columns``, the raw values feature-major) is
fitted on its *complete* rows, those whose ``k`` values are all finite. Its sums, taken about
a shift ``c_j`` per entry (any value: the shift only keeps the sums small, for precision), are
laid out at ``out[base[s]:]`` as

``[count, H, G, Sx (k), Sg (k), Sxx (k * k)]`` with ``H = sum h``, ``G = sum g``,
``Sx_j = sum h (x_j - c_j)``, ``Sg_j = sum g (x_j - c_j)`` and
``Sxx_jl = sum h (x_j - c_j) (x_l - c_l)`` over the complete rows (a slot without features
is not summed: its three sums stay 0).

Rows are summed in their order, in blocks of a fixed size whose sums are then added in
order: the sums, and the linear parts added, do not depend on ``n_threads``.
"""
import numpy as np

from cython.parallel cimport prange
from libc.math cimport isfinite
from libc.stdint cimport int64_t

from .common cimport idx_t, row_threads

#: The most features one leaf's linear part may have (a path of a tree of depth 30 splits on
#: at most 30 features).
MAX_LEAF_FEATURES = 64
DEF MAXK = 64


cdef void _row_sums(const double[:, ::1] columns, idx_t r, double gv, double hv,
                    const idx_t* feat, const double* shift, Py_ssize_t k,
                    double* o) noexcept nogil:
    """Add one row to its slot's sums ``o`` (nothing when one of its values is missing)."""
    cdef double x[MAXK]
    cdef Py_ssize_t j, l
    cdef double hx
    for j in range(k):
        x[j] = columns[feat[j], r] - shift[j]
        if not isfinite(x[j]):
            return
    o[0] += 1.0
    o[1] += hv
    o[2] += gv
    for j in range(k):
        hx = hv * x[j]
        o[3 + j] += hx
        o[3 + k + j] += gv * x[j]
        for l in range(k):
            o[3 + 2 * k + j * k + l] += hx * x[l]


def leaf_sums(const double[:, ::1] columns, const idx_t[::1] rows, const idx_t[::1] slot,
              const double[::1] g, const double[::1] h, const idx_t[::1] ptr,
              const idx_t[::1] feature, const double[::1] shift, const int64_t[::1] base,
              double[::1] out, Py_ssize_t block_rows, int n_threads):
    """The sums of every slot's fit (layout in the module docstring).

    Rows are read in their order, ``block_rows`` at a time (the threads share the blocks);
    each block's sums are kept apart and then added block after block, so the result does
    not depend on ``n_threads`` (the caller chooses ``block_rows`` without regard to it).

    Parameters
    ----------
    columns : IN float64 (n_columns, n_matrix_rows), raw values feature-major (NaN: missing).
    rows : IN int32 (n,), the column of ``columns`` each fitted row reads.
    slot : IN int32 (n,), each fitted row's slot.
    g, h : IN float64 (n,), the fitted rows' gradients and hessians (weights applied).
    ptr : IN int32 (n_slots + 1,), slot ``s``'s entries ``ptr[s] .. ptr[s+1]``.
    feature : IN int32, the row of ``columns`` of each entry.
    shift : IN float64, each entry's shift.
    base : IN int64 (n_slots,), where each slot's sums start in ``out``.
    out : OUT float64, every slot's sums (its size: the end of the last slot's).
    block_rows : rows of one block (>= 1).
    n_threads : OpenMP threads (parallel over blocks of rows).
    """
    cdef Py_ssize_t n_slots = ptr.shape[0] - 1, s, k, n = rows.shape[0], p, b, i
    cdef Py_ssize_t size = out.shape[0], n_blocks
    cdef idx_t t
    if block_rows < 1:
        raise ValueError("leaf_sums: block_rows must be >= 1")
    n_blocks = (n + block_rows - 1) // block_rows
    if not (base.shape[0] == n_slots and g.shape[0] == n and h.shape[0] == n
            and slot.shape[0] == n and shift.shape[0] == feature.shape[0]):
        raise ValueError("leaf_sums: arrays of inconsistent sizes")
    for s in range(n_slots):
        k = ptr[s + 1] - ptr[s]
        if (k < 0 or k > MAXK or ptr[s] < 0 or ptr[s + 1] > feature.shape[0]
                or base[s] < 0 or base[s] + 3 + 2 * k + k * k > size):
            raise ValueError(f"leaf_sums: slot {s} is out of range")
    for s in range(feature.shape[0]):
        if not 0 <= feature[s] < columns.shape[0]:
            raise ValueError("leaf_sums: feature out of range")
    for p in range(n):
        if not (0 <= rows[p] < columns.shape[1] and 0 <= slot[p] < n_slots):
            raise ValueError("leaf_sums: row or slot out of range")
    partial_arr = np.zeros((max(n_blocks, 1), size))
    cdef double[:, ::1] partial = partial_arr
    n_threads = row_threads(n, n_threads)
    with nogil:
        for b in prange(n_blocks, schedule="dynamic", num_threads=n_threads):
            for p in range(b * block_rows, min(n, (b + 1) * block_rows)):
                t = slot[p]
                if ptr[t + 1] > ptr[t]:
                    _row_sums(columns, rows[p], g[p], h[p], &feature[ptr[t]],
                              &shift[ptr[t]], ptr[t + 1] - ptr[t], &partial[b, base[t]])
        for i in range(size):
            out[i] = 0.0
        for b in range(n_blocks):
            for i in range(size):
                out[i] += partial[b, i]


def add_linear(const double[:, ::1] columns, const idx_t[::1] rows, const idx_t[::1] slot,
               const idx_t[::1] ptr, const idx_t[::1] feature, const double[::1] weight,
               const double[::1] mean, double coef, double[::1] out, int n_threads,
               const double[::1] value=None):
    """``out[rows[p]] += coef * sum_j weight_j (x_j - mean_j)`` over the entries of the slot
    ``slot[p]`` of each row ``p`` whose values ``x_j = columns[feature_j, rows[p]]`` are all
    finite (a row with a missing one keeps its leaf's constant); with ``value``, the slot's
    constant is added first, ``out[rows[p]] += coef * value[slot[p]]``, so a row's score
    takes the tree's two parts in the order training adds them.

    Parameters
    ----------
    columns : IN float64 (n_columns, n_matrix_rows).
    rows : IN int32 (n,), distinct: the column of ``columns`` and the entry of ``out``.
    slot : IN int32 (n,), each row's slot.
    ptr, feature : IN int32, the slots' entries (as in :func:`leaf_sums`).
    weight, mean : IN float64, each entry's weight and centre.
    coef : the tree's coefficient.
    out : IN/OUT float64.
    n_threads : OpenMP threads (parallel over rows; each row is written once).
    value : IN float64 (n_slots,), optional: the slots' constants.
    """
    cdef Py_ssize_t n = rows.shape[0], n_slots = ptr.shape[0] - 1, p, e
    cdef idx_t s
    cdef double acc, x
    cdef bint complete
    cdef bint constants = value is not None
    cdef const double* v = NULL
    if slot.shape[0] != n or weight.shape[0] != feature.shape[0] \
            or mean.shape[0] != feature.shape[0]:
        raise ValueError("add_linear: arrays of inconsistent sizes")
    if constants:
        if value.shape[0] != n_slots:
            raise ValueError("add_linear: value needs one entry per slot")
        if n_slots:
            v = &value[0]
    if n_slots < 0 or ptr[0] != 0 or ptr[n_slots] > feature.shape[0]:
        raise ValueError("add_linear: ptr out of range")
    for p in range(n_slots):
        if ptr[p] > ptr[p + 1]:
            raise ValueError("add_linear: ptr must not decrease")
    for p in range(feature.shape[0]):
        if not 0 <= feature[p] < columns.shape[0]:
            raise ValueError("add_linear: feature out of range")
    for p in range(n):
        if not (0 <= rows[p] < columns.shape[1] and rows[p] < out.shape[0]
                and 0 <= slot[p] < n_slots):
            raise ValueError("add_linear: row or slot out of range")
    n_threads = row_threads(n, n_threads)
    with nogil:
        for p in prange(n, schedule="static", num_threads=n_threads):
            s = slot[p]
            if constants:
                out[rows[p]] += coef * v[s]
            acc = 0.0
            complete = True
            for e in range(ptr[s], ptr[s + 1]):
                x = columns[feature[e], rows[p]]
                if not isfinite(x):
                    complete = False
                    break
                acc = acc + weight[e] * (x - mean[e])
            if complete and ptr[s + 1] > ptr[s]:
                out[rows[p]] += coef * acc
