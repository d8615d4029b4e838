"""LambdaRank gradients of query groups (LambdaMART, Burges 2010), NDCG-driven.

For every query the documents are ordered by score (descending; equal scores by row
order). Every pair ``(i, j)`` of documents with different labels, where the better-ranked
one is within the first ``truncation`` positions, pushes the more relevant document up and
the other down by

    rho = 1 / (1 + exp(sigma (s_hi - s_lo)))
    lambda = sigma rho |delta NDCG|,   hessian = sigma^2 rho (1 - rho) |delta NDCG|

where ``|delta NDCG| = |gain_hi - gain_lo| |disc(rank_i) - disc(rank_j)| / maxDCG@truncation``
and ``disc(r) = 1 / log2(2 + r)`` (``r`` 0-based). With ``normalize`` (LightGBM's
``lambdarank_norm``), ``|delta NDCG|`` is divided by ``0.01 + |s_hi - s_lo|`` when the
query's scores are not all equal, and the query's lambdas and hessians are scaled by
``log2(1 + S) / S``, ``S`` the sum of its pairs' ``2 lambda``.

Queries are independent: each is computed by one thread, in a fixed order of operations,
so the result does not depend on the number of threads. A query whose ideal DCG is 0 (no
relevant document) gets zero gradients and hessians.
"""
import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport exp, fabs, log2
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc


cdef inline bint _before(const double* s, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """Whether row ``a`` ranks before row ``b``: higher score, then lower row index."""
    return s[a] > s[b] or (s[a] == s[b] and a < b)


cdef void _sort(Py_ssize_t* idx, Py_ssize_t* tmp, Py_ssize_t n, const double* s) noexcept nogil:
    """Sort row indices ``idx[0:n]`` into ranking order: insertion sort for short queries,
    else a bottom-up merge sort through ``tmp``."""
    cdef Py_ssize_t i, j, v, width, lo, mid, hi, a, b, k
    cdef Py_ssize_t* src = idx
    cdef Py_ssize_t* dst = tmp
    cdef Py_ssize_t* t
    if n <= 32:
        for i in range(1, n):
            v = idx[i]
            j = i
            while j > 0 and _before(s, v, idx[j - 1]):
                idx[j] = idx[j - 1]
                j -= 1
            idx[j] = v
        return
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = lo + width if lo + width < n else n
            hi = lo + 2 * width if lo + 2 * width < n else n
            a, b, k = lo, mid, lo
            while a < mid and b < hi:
                if _before(s, src[b], src[a]):
                    dst[k] = src[b]
                    b += 1
                else:
                    dst[k] = src[a]
                    a += 1
                k += 1
            while a < mid:
                dst[k] = src[a]
                a += 1
                k += 1
            while b < hi:
                dst[k] = src[b]
                b += 1
                k += 1
            lo = hi
        t = src
        src = dst
        dst = t
        width *= 2
    if src != idx:
        for i in range(n):
            idx[i] = src[i]


cdef void _query(const double* y, const double* s, Py_ssize_t start, Py_ssize_t n,
                 const double* gain, double inv_max_dcg, Py_ssize_t truncation,
                 double sigma, bint normalize, double* g, double* h,
                 Py_ssize_t* idx, Py_ssize_t* tmp) noexcept nogil:
    """The lambdas of one query (rows ``start .. start + n - 1``)."""
    cdef Py_ssize_t i, j, hi_rank, lo_rank, hi_row, lo_row, r
    cdef double best, worst, delta, dndcg, rho, lam, hes, total = 0.0, factor
    for r in range(n):
        g[start + r] = 0.0
        h[start + r] = 0.0
    if n < 2 or inv_max_dcg == 0.0:
        return
    for r in range(n):
        idx[r] = start + r
    _sort(idx, tmp, n, s)
    best = s[idx[0]]
    worst = s[idx[n - 1]]
    for i in range(n - 1):
        if i >= truncation:
            break
        for j in range(i + 1, n):
            if y[idx[i]] == y[idx[j]]:
                continue
            if y[idx[i]] > y[idx[j]]:
                hi_rank, lo_rank = i, j
            else:
                hi_rank, lo_rank = j, i
            hi_row = idx[hi_rank]
            lo_row = idx[lo_rank]
            delta = s[hi_row] - s[lo_row]
            dndcg = (fabs(gain[<Py_ssize_t>y[hi_row]] - gain[<Py_ssize_t>y[lo_row]])
                     * fabs(1.0 / log2(2.0 + hi_rank) - 1.0 / log2(2.0 + lo_rank))
                     * inv_max_dcg)
            if normalize and best != worst:
                dndcg = dndcg / (0.01 + fabs(delta))
            rho = 1.0 / (1.0 + exp(sigma * delta))
            lam = sigma * rho * dndcg
            hes = sigma * sigma * rho * (1.0 - rho) * dndcg
            g[hi_row] -= lam
            g[lo_row] += lam
            h[hi_row] += hes
            h[lo_row] += hes
            total += 2.0 * lam
    if normalize and total > 0.0:
        factor = log2(1.0 + total) / total
        for r in range(n):
            g[start + r] *= factor
            h[start + r] *= factor


def lambdarank_gradients(const double[::1] y, const double[::1] score,
                         const int64_t[::1] group_ptr, const double[::1] gain,
                         const double[::1] inv_max_dcg, Py_ssize_t truncation, double sigma,
                         bint normalize, double[::1] gradient, double[::1] hessian,
                         int n_threads=1):
    """Write the LambdaRank gradients and hessians of every query (see the module notes).

    Parameters
    ----------
    y : float64 (n_rows,)
        Integer relevance labels, each a valid index into ``gain``.
    score : float64 (n_rows,)
        Raw scores; finite.
    group_ptr : int64 (n_queries + 1,)
        Query boundaries: query ``q`` holds rows ``group_ptr[q] .. group_ptr[q + 1] - 1``.
    gain : float64
        The gain of each label (e.g. ``2**label - 1``).
    inv_max_dcg : float64 (n_queries,)
        ``1 / maxDCG@truncation`` of each query, 0 for a query without relevant documents.
    truncation : int
        Only pairs whose better-ranked document is in the first ``truncation`` positions.
    sigma : float
        Slope of the pairwise sigmoid.
    normalize : bool
        LightGBM's ``lambdarank_norm`` (see the module notes).
    gradient, hessian : float64 (n_rows,)
        Outputs.
    n_threads : int
        OpenMP threads (queries are split among them).
    """
    cdef Py_ssize_t n_queries = group_ptr.shape[0] - 1, q, longest = 1, size
    cdef Py_ssize_t n_rows = y.shape[0]
    cdef int t, n_work = n_threads if n_threads > 1 else 1
    if score.shape[0] != n_rows or gradient.shape[0] != n_rows or hessian.shape[0] != n_rows:
        raise ValueError("y, score, gradient and hessian must have the same length")
    if inv_max_dcg.shape[0] != n_queries or n_queries < 0 or \
            group_ptr[0] != 0 or group_ptr[n_queries] != n_rows:
        raise ValueError("group_ptr must start at 0, end at n_rows and match inv_max_dcg")
    if n_rows == 0:
        return
    for q in range(n_queries):
        size = group_ptr[q + 1] - group_ptr[q]
        if size < 0:
            raise ValueError("group_ptr must be non-decreasing")
        if size > longest:
            longest = size
    cdef Py_ssize_t* buf = <Py_ssize_t*>malloc(2 * n_work * longest * sizeof(Py_ssize_t))
    if buf == NULL:
        raise MemoryError()
    try:
        with nogil:
            for q in prange(n_queries, num_threads=n_work, schedule="dynamic"):
                t = threadid()
                _query(&y[0], &score[0], group_ptr[q], group_ptr[q + 1] - group_ptr[q],
                       &gain[0], inv_max_dcg[q], truncation, sigma, normalize,
                       &gradient[0], &hessian[0], buf + 2 * t * longest,
                       buf + (2 * t + 1) * longest)
    finally:
        free(buf)
