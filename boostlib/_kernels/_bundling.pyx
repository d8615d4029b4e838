"""Greedy exclusive feature bundling (:func:`boostlib.engine.bundling.plan`'s loop) and the
rows it reads."""
from libc.string cimport memset

import numpy as np

from .common cimport bin_t, idx_t, int64_t


def greedy_bundles(const int64_t[::1] indptr, const idx_t[::1] rows,
                   const int64_t[::1] need, int max_values, int64_t[::1] size,
                   unsigned char[:, ::1] used, Py_ssize_t n_bundles, idx_t[::1] bundle_of):
    """Bundle features greedily, in the order given: each joins the first of the last
    ``used.shape[0]`` bundles that has room for it and none of its rows, or opens a new one.
    The features may come in several calls, each going on from the state the last left.

    Parameters
    ----------
    indptr, rows : IN int64 (n + 1,) and int32, the rows of feature ``i`` (those not at its
        default bin): ``rows[indptr[i]:indptr[i + 1]]``, each in ``[0, n_rows)``.
    need : IN int64 (n,) the column values feature ``i`` takes (its bins but the default).
    max_values : a bundle's column holds at most ``max_values - 1`` values: a new bundle
        takes ``1 + need`` (0: every feature at its default), a feature joining one adds
        ``need``.
    size : IN/OUT int64, each bundle's values (room for every bundle opened).
    used : IN/OUT uint8 (tries, n_rows): the rows of the last ``tries`` bundles, bundle
        ``b``'s in row ``b % tries`` (zeros before the first call).
    n_bundles : the bundles opened so far.
    bundle_of : OUT int32 (n,) each feature's bundle, numbered in the order they open.

    Returns
    -------
    int : the bundles opened so far, these features' included.
    """
    cdef Py_ssize_t n = need.shape[0], tries = used.shape[0], n_rows = used.shape[1]
    cdef Py_ssize_t i, t, q, lo
    cdef idx_t b
    cdef bint free_of_rows
    if indptr.shape[0] != n + 1 or bundle_of.shape[0] != n or tries < 1:
        raise ValueError("indptr needs n + 1 entries and bundle_of n, used a row")
    if indptr[0] != 0 or indptr[n] != rows.shape[0]:
        raise ValueError("indptr must run from 0 to len(rows)")
    if not 0 <= n_bundles <= size.shape[0] or size.shape[0] - n_bundles < n:
        raise ValueError("size needs room for a bundle per feature")
    for i in range(n):
        if indptr[i + 1] < indptr[i]:
            raise ValueError("indptr must not decrease")
    for q in range(rows.shape[0]):
        if not 0 <= rows[q] < n_rows:
            raise ValueError("row out of range")
    with nogil:
        for i in range(n):
            lo = n_bundles - tries if n_bundles > tries else 0
            b = -1
            for t in range(lo, n_bundles):
                if size[t] + need[i] > max_values - 1:
                    continue
                free_of_rows = True
                for q in range(indptr[i], indptr[i + 1]):
                    if used[t % tries, rows[q]]:
                        free_of_rows = False
                        break
                if free_of_rows:
                    b = <idx_t> t
                    break
            if b < 0:           # a new bundle, in the row of the one no longer tried
                b = <idx_t> n_bundles
                n_bundles += 1
                if n_rows:
                    memset(&used[b % tries, 0], 0, n_rows)
                size[b] = 1
            size[b] += need[i]
            for q in range(indptr[i], indptr[i + 1]):
                used[b % tries, rows[q]] = 1
            bundle_of[i] = b
    return n_bundles


def nondefault_rows(const bin_t[:, ::1] X_binned, const Py_ssize_t[::1] features,
                    const bin_t[::1] default):
    """``(indptr, rows)``: the rows of each of ``features`` whose bin is not its default:
    feature ``features[i]``'s are ``rows[indptr[i]:indptr[i + 1]]``, ascending.

    Parameters
    ----------
    X_binned : IN uint8 (n_features, n_rows), feature-major binned data.
    features : IN intp (k,) features, each in ``[0, n_features)``.
    default : IN uint8 (k,) the bin of each of them that is left out.

    Returns
    -------
    indptr : int64 (k + 1,)
    rows : int32
    """
    cdef Py_ssize_t k = features.shape[0], n = X_binned.shape[1], i, r, q
    cdef int64_t total = 0
    cdef const bin_t* col
    cdef bin_t d
    if default.shape[0] != k:
        raise ValueError("default needs one bin per feature")
    for i in range(k):
        if not 0 <= features[i] < X_binned.shape[0]:
            raise ValueError("feature out of range")
    indptr_a = np.empty(k + 1, dtype=np.int64)
    cdef int64_t[::1] indptr = indptr_a
    indptr[0] = 0
    with nogil:
        for i in range(k):
            col = &X_binned[features[i], 0]
            d = default[i]
            q = 0
            for r in range(n):
                q += col[r] != d
            total += q
            indptr[i + 1] = total
    rows_a = np.empty(total, dtype=np.int32)
    cdef idx_t[::1] rows = rows_a
    with nogil:
        for i in range(k):
            col = &X_binned[features[i], 0]
            d = default[i]
            q = indptr[i]
            for r in range(n):
                if col[r] != d:
                    rows[q] = <idx_t> r
                    q += 1
    return indptr_a, rows_a
