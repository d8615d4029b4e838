"""Row-sampling kernels: scores and row selection (the thresholds are in ``_order_stats``).

Every kernel is one pass over fixed blocks of rows, in parallel and branch-free in its inner
loop, so a sampler costs a small fraction of the tree it saves work on; the random draws come
from a counter-based stream (``counter_rng.pxd``), so no kernel depends on the thread count.
Each 64-bit output of the stream is the draw of two rows: the loops walk the rows in pairs
(blocks start at even rows), with a last row of its own when a block ends on an odd count.
"""
import math

import numpy as np

from cython.parallel cimport prange
from libc.float cimport DBL_MAX
from libc.math cimport fabs, isfinite, ldexp, sqrt
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy

from .common cimport double_bits, idx_t
from .counter_rng cimport draw32, high32, low32, splitmix64
from .mvs_roots cimport mvs_check_roots, mvs_hessian_term, mvs_roots

cdef extern from *:
    """
    #ifndef BOOSTLIB_DEBUG
    #define BOOSTLIB_DEBUG 0
    #endif
    """
    bint BOOSTLIB_DEBUG   # 1 in the debug build (setup.py defines it)


cdef enum:
    BLOCK = 1 << 16     # rows per parallel block: fixed, so results never depend on n_jobs


BLOCK_ROWS = BLOCK     # rows per block of the selection kernels' ``rest``/``take`` counts
cdef double TWO32 = 4294967296.0        # 2**32: the draws are integers in [0, 2**32)


cdef inline Py_ssize_t _n_blocks(Py_ssize_t n) noexcept nogil:
    return (n + BLOCK - 1) // BLOCK


cdef inline double _inverse_keep(double x) noexcept nogil:
    # 1 / pi for an MVS row staged with x = score * 2**32 / mu: 2**32 / ceil(min(x, 2**32)).
    # The ceiling without a conversion to integer: (x + 2**52) - 2**52 rounds x to an
    # integer, plus 1 if that is below x.
    cdef double r
    x = x if x < TWO32 else TWO32
    r = (x + 4503599627370496.0) - 4503599627370496.0
    r = r + (1.0 if r < x else 0.0)
    return TWO32 / r


cdef tuple _collect(idx_t[::1] rows, double[::1] stage, const Py_ssize_t[::1] count,
                    bint mvs_weights, int n_threads):
    """Join the blocks' selections into new arrays of the exact size: block ``b`` wrote its
    ``count[b]`` rows (and, when ``mvs_weights``, each row's MVS ``x``) from position
    ``b * BLOCK`` of the work arrays; they are copied, in block order and in parallel, to
    follow each other, the ``x`` turned into weights ``1 / pi`` as they are copied (see
    :func:`mvs_select`). Returns ``(rows, weights)`` (``weights`` None unless
    ``mvs_weights``)."""
    cdef Py_ssize_t nb = count.shape[0], blk, j, k = 0
    cdef Py_ssize_t[::1] start = np.empty(nb, dtype=np.intp)
    for blk in range(nb):
        start[blk] = k
        k += count[blk]
    out_rows = np.empty(k, dtype=np.int32)
    out_weight = np.empty(k if mvs_weights else 0, dtype=np.float64)
    cdef idx_t[::1] r = out_rows
    cdef double[::1] w = out_weight
    if k:
        with nogil:
            for blk in prange(nb, schedule="static", num_threads=n_threads):
                memcpy(&r[0] + start[blk], &rows[0] + blk * BLOCK, count[blk] * sizeof(idx_t))
                if mvs_weights:
                    for j in range(count[blk]):
                        w[start[blk] + j] = _inverse_keep(stage[blk * BLOCK + j])
    return out_rows, (out_weight if mvs_weights else None)


def uniforms(uint64_t seed, double[::1] out, Py_ssize_t start=0, int n_threads=1):
    """``out[j]`` = the uniform draw of row ``start + j`` under ``seed``: ``u32 * 2**-32``
    with ``u32`` the row's 32-bit draw (see ``counter_rng.pxd``), in [0, 1), exactly.

    These are the numbers :func:`bernoulli_select`, :func:`mvs_select` and
    :func:`goss_select` compare with: exposed for the reference implementations and for
    samplers written in Python.
    """
    cdef Py_ssize_t j, n = out.shape[0]
    if start < 0:
        raise ValueError(f"start={start!r} must be >= 0")
    with nogil:
        for j in prange(n, schedule="static", num_threads=n_threads):
            out[j] = <double>draw32(seed, <uint64_t>(start + j)) * 2.3283064365386963e-10
    return np.asarray(out)


cdef inline Py_ssize_t _keep_below(idx_t* rows, Py_ssize_t c, Py_ssize_t i, uint64_t u,
                                   uint64_t bound) noexcept nogil:
    # row i is written at c, which moves on only when it is kept (u < bound): no branch
    rows[c] = <idx_t>i
    return c + (u < bound)


def bernoulli_select(double p, uint64_t seed, idx_t[::1] work_rows, int n_threads=1):
    """Keep each row ``i < n = len(work_rows)`` when its uniform draw is below ``p``: its
    32-bit draw below ``ceil(p * 2**32)``, so each row is kept with probability
    ``ceil(p * 2**32) / 2**32``, ``p`` rounded up to a multiple of 2**-32
    (:func:`keep_probability`).

    One pass over fixed blocks of rows, in parallel: each block writes its kept rows, branch
    free, from its own start in ``work_rows``; the blocks are then joined, in order and in
    parallel, into a new array. The output does not depend on ``n_threads``.

    Parameters
    ----------
    p : keep probability, in [0, 1].
    seed : the draw's seed (see :func:`uniforms`).
    work_rows : int32 (n,) work array (overwritten).
    n_threads : OpenMP threads.

    Returns
    -------
    rows : new int32 array, the kept rows in increasing order.
    """
    cdef uint64_t bound = _keep_bound(p), z
    cdef Py_ssize_t n = work_rows.shape[0]
    cdef Py_ssize_t blk, q, lo, hi, c, nb = _n_blocks(n)
    cdef Py_ssize_t[::1] count = np.zeros(nb, dtype=np.intp)
    cdef idx_t* rows = &work_rows[0] if n else NULL
    if nb:
        with nogil:
            for blk in prange(nb, schedule="static", num_threads=n_threads):
                lo = blk * BLOCK
                hi = lo + BLOCK if lo + BLOCK < n else n
                c = lo
                for q in range(lo >> 1, hi >> 1):
                    z = splitmix64(seed, <uint64_t>q)
                    c = _keep_below(rows, c, 2 * q, high32(z), bound)
                    c = _keep_below(rows, c, 2 * q + 1, low32(z), bound)
                if hi & 1:
                    c = _keep_below(rows, c, hi - 1, draw32(seed, <uint64_t>(hi - 1)), bound)
                count[blk] = c - lo
    return _collect(work_rows, None, count, False, n_threads)[0]


cdef uint64_t _keep_bound(double p) except? 0:
    """``ceil(p * 2**32)``: a row is kept when its 32-bit draw is below it."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p={p!r} must be in [0, 1]")
    return <uint64_t>math.ceil(p * TWO32)


def keep_probability(double p):
    """The probability with which :func:`bernoulli_select` keeps a row for ``p`` in [0, 1]:
    ``ceil(p * 2**32) / 2**32``, at most 2**-32 above ``p``."""
    return _keep_bound(p) / TWO32


cdef inline Py_ssize_t _mvs_row(idx_t* rows, double* stage, Py_ssize_t c, Py_ssize_t i,
                                uint64_t u, double x) noexcept nogil:
    # row i is kept when its draw is below x = score * 2**32 / mu; its x is staged for the
    # weight, and c moves on only for a kept row: no branch
    rows[c] = <idx_t>i
    stage[c] = x
    return c + (<double>(<int64_t>u) < x)


def mvs_select(const double[::1] score, double mu, uint64_t seed, idx_t[::1] work_rows,
               double[::1] work_weight, int n_threads=1):
    """Keep row ``i`` when its 32-bit draw is below ``x_i = score_i * (2**32 / mu)`` (the
    factor with an exponent range wide enough for any ``mu``), so with probability
    ``pi_i = ceil(min(x_i, 2**32)) / 2**32``: ``p_i = min(1, score_i / mu)`` rounded up to
    a multiple of 2**-32. Its weight is ``1 / pi_i``, the exact inverse
    of the probability it was kept with (Horvitz-Thompson: the weighted sums stay unbiased
    however small ``p_i`` is, and no weight exceeds 2**32), and exactly 1 where
    ``score_i >= mu``.

    One pass over fixed blocks of rows, in parallel (branch free), which stages each kept
    row's ``x_i``; then the blocks are joined into new arrays (see :func:`bernoulli_select`),
    the staged ``x_i`` turned into weights as they are copied. The output does not depend on
    ``n_threads``.

    Parameters
    ----------
    score : IN float64 (n,), >= 0.
    mu : threshold (> 0), e.g. from ``_order_stats.mvs_threshold``.
    seed : the draw's seed (see :func:`uniforms`).
    work_rows, work_weight : int32 and float64 (n,) work arrays (overwritten).
    n_threads : OpenMP threads.

    Returns
    -------
    rows : new int32 array, the kept rows in increasing order.
    weights : new float64 array, their weights ``1 / pi_i``.
    """
    cdef Py_ssize_t n = score.shape[0]
    cdef Py_ssize_t blk, q, lo, hi, c, nb = _n_blocks(n)
    cdef uint64_t z
    if work_rows.shape[0] < n or work_weight.shape[0] < n:
        raise ValueError("the work arrays must hold n values")
    if not mu > 0.0:
        raise ValueError(f"mu={mu!r} must be positive")
    # x = score * (2**32 / mu), >= 2**32 - 1 for score >= mu (every draw is below it). For
    # mu below about 2**-992 the factor overflows: the scores are then first multiplied by
    # 2**600 (exact) and the factor divided by it, so x is the same product, in range.
    cdef double pre = 1.0 if isfinite(TWO32 / mu) else ldexp(1.0, 600)
    cdef double scale = TWO32 / (mu * pre)
    cdef Py_ssize_t[::1] count = np.zeros(nb, dtype=np.intp)
    cdef idx_t* rows = &work_rows[0] if n else NULL
    cdef double* stage = &work_weight[0] if n else NULL
    with nogil:
        for blk in prange(nb, schedule="static", num_threads=n_threads):
            lo = blk * BLOCK
            hi = lo + BLOCK if lo + BLOCK < n else n
            c = lo
            for q in range(lo >> 1, hi >> 1):
                z = splitmix64(seed, <uint64_t>q)
                c = _mvs_row(rows, stage, c, 2 * q, high32(z), score[2 * q] * pre * scale)
                c = _mvs_row(rows, stage, c, 2 * q + 1, low32(z),
                             score[2 * q + 1] * pre * scale)
            if hi & 1:
                c = _mvs_row(rows, stage, c, hi - 1, draw32(seed, <uint64_t>(hi - 1)),
                             score[hi - 1] * pre * scale)
            count[blk] = c - lo
    return _collect(work_rows, work_weight, count, True, n_threads)


def abs_sums(const double[::1] a, const double[::1] b, int n_threads=1):
    """``(sum |a|, sum |b|, sum min(b, 0))``: per-block partial sums in parallel, added in
    block order (the result does not depend on ``n_threads``). The third is negative exactly
    when some ``b`` is negative (a sum of non-positive numbers is at most its smallest)."""
    cdef Py_ssize_t n = a.shape[0], blk, lo, hi, nb = _n_blocks(a.shape[0])
    cdef double ta = 0.0, tb = 0.0, tn = 0.0
    if b.shape[0] != n:
        raise ValueError("a and b must have the same length")
    cdef double[:, ::1] part = np.zeros((nb, 3))
    if nb == 1:
        n_threads = 1       # one block: no thread to wake
    with nogil:
        for blk in prange(nb, schedule="static", num_threads=n_threads):
            lo = blk * BLOCK
            hi = lo + BLOCK if lo + BLOCK < n else n
            part[blk, 0] = _abs_sum(&a[0], lo, hi, NULL)
            part[blk, 1] = _abs_sum(&b[0], lo, hi, &part[blk, 2])
        for blk in range(nb):
            ta += part[blk, 0]
            tb += part[blk, 1]
            tn += part[blk, 2]
    return ta, tb, tn


cdef inline double _negative(double x) noexcept nogil:
    """``x`` when negative, else 0 (a select the compiler vectorises, unlike ``fmin``)."""
    return x if x < 0.0 else 0.0


cdef double _abs_sum(const double* x, Py_ssize_t start, Py_ssize_t stop,
                     double* negative) noexcept nogil:
    """``sum |x[start:stop]|`` in a fixed order: eight running sums, rows taken eight at a
    time, so the additions do not wait for each other and the compiler adds them as
    vectors (one running sum would bound the loop at one addition's latency per row). The
    sum of the negative entries, in the same order, is written to ``negative`` (unless
    NULL: then it is not taken)."""
    cdef Py_ssize_t i = start, j
    cdef double s[8]
    cdef double m[8]
    for j in range(8):
        s[j] = 0.0
        m[j] = 0.0
    if negative == NULL:
        while i + 8 <= stop:
            for j in range(8):
                s[j] = s[j] + fabs(x[i + j])
            i += 8
    else:
        while i + 8 <= stop:
            for j in range(8):
                s[j] = s[j] + fabs(x[i + j])
                m[j] = m[j] + _negative(x[i + j])
            i += 8
    while i < stop:
        s[0] = s[0] + fabs(x[i])
        m[0] = m[0] + _negative(x[i])
        i += 1
    if negative != NULL:
        negative[0] = ((m[0] + m[1]) + (m[2] + m[3])) + ((m[4] + m[5]) + (m[6] + m[7]))
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))


def mvs_scores(const double[::1] gradient, const double[::1] hessian, double h_scale,
               double h_norm, double[::1] out, int n_threads=1):
    """``out = sqrt(g^2 + (h_scale * h / h_norm)^2)`` (parallel), i.e. MVS's
    ``sqrt(g^2 + lambda h^2)`` with ``lambda = (h_scale / h_norm)^2``; returns the number of
    positive scores.

    The adaptive ``lambda`` is ``(learning_rate * sum|g| / sum|h|)^2``: with
    ``h_norm = sum|h|`` every ``|h| / h_norm`` is at most 1, so the hessian term stays finite
    even when ``lambda`` itself would overflow (tiny hessians). Squaring a term below ~1e-154
    underflows (a row with a tiny but non-zero gradient would get score 0, never drawn), one
    above ~1e154 overflows: when a non-zero row's root falls below ``2^-510`` or the scores
    do not sum to a finite number, a second pass takes every root as
    ``m * sqrt(1 + (s / m)^2)`` (``m``, ``s`` the larger and the smaller term).

    Per fixed block of rows, the roots are taken in a loop that does nothing else (it
    vectorises), then checked on their bits: positive, below ``2^-510`` (the row's terms are
    then looked at), at least ``2^970`` or not finite (the sum is then taken, as it may not
    be finite).

    Raises
    ------
    ValueError
        When a score is not finite (non-finite or huge derivatives), or ``h_norm`` is not
        positive.
    """
    cdef Py_ssize_t i, n = gradient.shape[0], n_pos = 0, n_unsafe = 0, n_big = 0
    cdef Py_ssize_t blk, lo, hi, nb = _n_blocks(gradient.shape[0]), b_pos, b_big, b_unsafe
    cdef double g, a, r, m, q, total = 0.0
    cdef uint64_t tiny_b = double_bits(ldexp(1.0, -510)), big_b = double_bits(ldexp(1.0, 970))
    cdef double inv = 1.0 / h_norm if h_norm > 0.0 else 0.0
    cdef bint divide = not isfinite(inv)        # h_norm below ~1e-308: divide row by row
    if hessian.shape[0] != n or out.shape[0] < n:
        raise ValueError("gradient, hessian and out must hold n values")
    if not h_norm > 0.0:
        raise ValueError(f"h_norm={h_norm!r} must be positive")
    if n == 0:
        return 0
    with nogil:
        for blk in prange(nb, schedule="static", num_threads=n_threads):
            lo = blk * BLOCK
            hi = lo + BLOCK if lo + BLOCK < n else n
            mvs_roots(&gradient[0], &hessian[0], h_scale, h_norm, inv, divide, &out[0], lo, hi)
            mvs_check_roots(&gradient[0], &hessian[0], h_scale, h_norm, inv, divide, &out[0],
                            lo, hi, tiny_b, big_b, &b_pos, &b_big, &b_unsafe)
            n_pos += b_pos
            n_big += b_big
            n_unsafe += b_unsafe
        if n_big:                           # a root >= 2^970 (or inf, NaN): is the sum finite?
            for i in range(n):
                total += out[i]
        if n_unsafe or not isfinite(total):     # under- or overflowed squares: scaled roots
            n_pos = 0
            total = 0.0
            for i in prange(n, schedule="static", num_threads=n_threads):
                g = fabs(gradient[i])
                a = fabs(mvs_hessian_term(hessian[i], h_norm, inv, h_scale, divide))
                m = g if g > a else a
                q = (a if g > a else g) / (m if m > 0.0 else 1.0)
                r = m * sqrt(1.0 + q * q)
                out[i] = r
                n_pos += r > 0.0
                total += r
    if not isfinite(total):
        raise ValueError("scores are not finite (non-finite or too large derivatives)")
    return n_pos


def goss_scores(const double[::1] gradient, const double[::1] hessian, bint use_hessian,
                double[::1] out, int n_threads=1):
    """``out = |g * h|`` (``use_hessian``) or ``|g|``, in parallel."""
    cdef Py_ssize_t i, n = gradient.shape[0]
    if hessian.shape[0] != n or out.shape[0] < n:
        raise ValueError("gradient, hessian and out must hold n values")
    with nogil:
        if use_hessian:
            for i in prange(n, schedule="static", num_threads=n_threads):
                out[i] = fabs(gradient[i] * hessian[i])
        else:
            for i in prange(n, schedule="static", num_threads=n_threads):
                out[i] = fabs(gradient[i])


def gather_scaled(const double[::1] values, const idx_t[::1] rows, const double[::1] weights,
                  double[::1] out, int n_threads):
    """``out[p] = values[rows[p]] * weights[p]`` (``weights`` empty: 1), in one pass.

    Parameters
    ----------
    values : IN float64 (n_rows,).
    rows : IN int32 (k,) sorted row ids in ``[0, n_rows)``.
    weights : IN float64 (k,) or empty.
    out : OUT float64 (k,).
    n_threads : OpenMP threads (parallel over rows).
    """
    cdef Py_ssize_t p, k = rows.shape[0], n = values.shape[0]
    cdef bint weighted = weights.shape[0] != 0
    if out.shape[0] != k or (weighted and weights.shape[0] != k):
        raise ValueError("out (and weights, unless empty) must be aligned with rows")
    if k and not (0 <= rows[0] and rows[k - 1] < n):      # rows are sorted (the contract)
        raise ValueError("row id out of range")
    with nogil:
        if weighted:
            for p in prange(k, schedule="static", num_threads=n_threads):
                out[p] = values[rows[p]] * weights[p]
        else:
            for p in prange(k, schedule="static", num_threads=n_threads):
                out[p] = values[rows[p]]


def sample_defects(const idx_t[::1] rows, const double[::1] weights, Py_ssize_t n_rows,
                   int n_threads=1):
    """What is wrong with a sample, in one parallel pass (0: nothing).

    Parameters
    ----------
    rows : IN int32 (k,) the sampled row ids.
    weights : IN float64 (k,) their weights, or empty (no weights).
    n_rows : the number of training rows.
    n_threads : OpenMP threads (parallel over fixed blocks of entries).

    Returns
    -------
    int
        A sum of flags: 1 if a row id is outside ``[0, n_rows)``, 2 if the ids are not
        strictly increasing, 4 if a weight is negative, NaN or infinite.
    """
    cdef Py_ssize_t k = rows.shape[0], blk, i, lo, hi, nb = _n_blocks(rows.shape[0])
    cdef bint weighted = weights.shape[0] != 0
    cdef int flags = 0, f
    cdef double w
    if weighted and weights.shape[0] != k:
        raise ValueError("weights (unless empty) must be aligned with rows")
    with nogil:
        for blk in prange(nb, schedule="static", num_threads=n_threads):
            lo = blk * BLOCK
            hi = lo + BLOCK if lo + BLOCK < k else k
            f = 0
            for i in range(lo, hi):     # branch-free: flags or-ed over the block
                f = f | (rows[i] < 0) | (rows[i] >= n_rows)
                if i > 0:
                    f = f | ((rows[i] <= rows[i - 1]) << 1)
            if weighted:
                for i in range(lo, hi):
                    w = weights[i]
                    f = f | ((not (w >= 0.0 and w <= DBL_MAX)) << 2)
            flags |= f
    return flags


def gather_scaled_pair(const double[::1] a, const double[::1] b, const idx_t[::1] rows,
                       const double[::1] weights, double[::1] out_a, double[::1] out_b,
                       int n_threads):
    """:func:`gather_scaled` of two arrays (a sample's gradient and hessian) in one pass.

    Parameters
    ----------
    a, b : IN float64 (n_rows,).
    rows : IN int32 (k,) sorted row ids in ``[0, n_rows)``.
    weights : IN float64 (k,) or empty.
    out_a, out_b : OUT float64 (k,): ``a[rows] * weights`` and ``b[rows] * weights``.
    n_threads : OpenMP threads (parallel over rows).
    """
    cdef Py_ssize_t p, k = rows.shape[0], n = a.shape[0]
    cdef bint weighted = weights.shape[0] != 0
    cdef idx_t r
    if (b.shape[0] != n or out_a.shape[0] != k or out_b.shape[0] != k
            or (weighted and weights.shape[0] != k)):
        raise ValueError("a and b, and out_a, out_b (and weights, unless empty) with rows, "
                         "must be aligned")
    if k and not (0 <= rows[0] and rows[k - 1] < n):      # rows are sorted (the contract)
        raise ValueError("row id out of range")
    with nogil:
        if weighted:
            for p in prange(k, schedule="static", num_threads=n_threads):
                r = rows[p]
                out_a[p] = a[r] * weights[p]
                out_b[p] = b[r] * weights[p]
        else:
            for p in prange(k, schedule="static", num_threads=n_threads):
                r = rows[p]
                out_a[p] = a[r]
                out_b[p] = b[r]


def goss_rest_counts(const double[::1] score, double threshold, int n_threads=1):
    """Per fixed block of rows, the number of rows with ``score < threshold`` (GOSS's "rest").

    Returns
    -------
    counts : int64 (n_blocks,), blocks of 65536 rows (the blocks of :func:`goss_select`).
    """
    cdef Py_ssize_t n = score.shape[0], blk, i, lo, hi, c, nb = _n_blocks(score.shape[0])
    counts = np.zeros(nb, dtype=np.int64)
    cdef int64_t[::1] cnt = counts
    with nogil:
        for blk in prange(nb, schedule="static", num_threads=n_threads):
            lo = blk * BLOCK
            hi = lo + BLOCK if lo + BLOCK < n else n
            c = 0
            for i in range(lo, hi):
                c = c + (score[i] < threshold)
            cnt[blk] = c
    return counts


cdef enum:
    STAGE = 512     # kept rows staged per thread before they are copied to the output


ctypedef struct GossDraw:
    # the state of one block's draw (see _goss_block)
    const double* score
    double threshold
    uint64_t need           # rows below the threshold still to keep
    uint64_t left           # rows below the threshold still to come
    Py_ssize_t c            # rows staged


cdef inline void _goss_row(GossDraw* d, Py_ssize_t i, uint64_t u, idx_t* stage_rows,
                           double* stage_weight, const double* weight_of) noexcept nogil:
    # Row i: kept with weight 1 at or above the threshold, else with probability need / left
    # (Knuth's Algorithm S), tested as floor(u * left / 2**32) < need, in integers. A row at
    # or above the threshold gets bit 62 set in that product instead (never below need), so
    # the running count's chain is one unsigned compare and a subtract of its borrow; the
    # product, its shift and that bit do not wait for it. The row is staged branch-free (the
    # store happens for every row, the index moves only for a kept one).
    cdef uint64_t top = d.score[i] >= d.threshold
    cdef uint64_t other = (((u * d.left) >> 32) | (top << 62)) < d.need
    d.need = d.need - other
    d.left = d.left - (1 - top)
    stage_rows[d.c] = <idx_t>i
    stage_weight[d.c] = weight_of[top]
    d.c = d.c + <Py_ssize_t>(top | other)


cdef bint _goss_block(const double* score, double threshold, Py_ssize_t lo, Py_ssize_t hi,
                      int64_t need, int64_t left, double factor, uint64_t seed,
                      idx_t* out_rows, double* out_weight, Py_ssize_t size) noexcept nogil:
    """:func:`goss_select` on rows ``lo .. hi`` (``lo`` even), writing exactly ``size`` kept
    rows to ``out_rows`` and ``out_weight``. Rows are staged in small arrays that are copied
    out when nearly full, so the output is written once and only with kept rows. Returns
    False, having written nothing past ``size``, when the rows kept are not ``size``
    (inconsistent ``rest``)."""
    cdef idx_t stage_rows[STAGE]
    cdef double stage_weight[STAGE]
    cdef double weight_of[2]        # indexed by "top": no branch per row
    cdef Py_ssize_t q, done = 0
    cdef uint64_t z
    cdef GossDraw d
    d.score = score
    d.threshold = threshold
    d.need = <uint64_t>need
    d.left = <uint64_t>left
    d.c = 0
    weight_of[0] = factor
    weight_of[1] = 1.0
    for q in range(lo >> 1, hi >> 1):
        z = splitmix64(seed, <uint64_t>q)
        _goss_row(&d, 2 * q, high32(z), stage_rows, stage_weight, weight_of)
        _goss_row(&d, 2 * q + 1, low32(z), stage_rows, stage_weight, weight_of)
        if d.c >= STAGE - 1:        # room for the next pair
            if done + d.c > size:
                return False
            memcpy(out_rows + done, stage_rows, d.c * sizeof(idx_t))
            memcpy(out_weight + done, stage_weight, d.c * sizeof(double))
            done += d.c
            d.c = 0
    if hi & 1:
        _goss_row(&d, hi - 1, draw32(seed, <uint64_t>(hi - 1)), stage_rows, stage_weight,
                  weight_of)
    if done + d.c != size:
        return False
    memcpy(out_rows + done, stage_rows, d.c * sizeof(idx_t))
    memcpy(out_weight + done, stage_weight, d.c * sizeof(double))
    return True


def goss_select(const double[::1] score, double threshold, const int64_t[::1] rest,
                const int64_t[::1] take, double factor, uint64_t seed, int n_threads=1):
    """GOSS: every row with ``score >= threshold`` (weight 1), plus, in each fixed block of
    rows, exactly ``take[b]`` of the block's rows below the threshold, uniformly without
    replacement, with weight ``factor``.

    Within a block the draw is Knuth's selection sampling (Algorithm S): the ``j``-th row
    below the threshold is kept when its uniform draw times the number of such rows still to
    come is below the number still needed, which keeps exactly ``take[b]`` rows and yields
    every subset of them with the same probability. (The draws are multiples of 2**-32, so
    each step's probability ``need / left`` is rounded up to a multiple of 2**-32: a change
    below 2**-32 that leaves the count exact.) When ``take`` is a multivariate
    hypergeometric draw of the total over the blocks' counts (:func:`goss_rest_counts`), the
    union is a uniform subset of that total over all the rows below the threshold. Each
    block's number of kept rows is known in advance (its rows minus ``rest[b]``, plus
    ``take[b]``), so the blocks, in parallel, write straight to their place in the output:
    it does not depend on ``n_threads``.

    Parameters
    ----------
    score : IN float64 (n,).
    threshold : the ``top_k``-th largest score.
    rest : IN int64 (n_blocks,) each block's rows below the threshold, as
        :func:`goss_rest_counts` returns them (the caller has them already; a mismatch is
        detected as the rows are drawn, and the debug build recounts first).
    take : IN int64 (n_blocks,) rows to draw per block, at most the block's count.
    factor : weight of the drawn rows (``n_rest / other_k``).
    seed : the draw's seed (see :func:`uniforms`).
    n_threads : OpenMP threads.

    Returns
    -------
    rows : new int32 array, the kept rows in increasing order.
    weights : new float64 array, their weights.
    """
    cdef Py_ssize_t n = score.shape[0], nb = _n_blocks(score.shape[0])
    cdef Py_ssize_t blk, lo, hi, k = 0
    cdef int bad = 0
    if take.shape[0] != nb or rest.shape[0] != nb:
        raise ValueError(f"rest and take must hold one count per block of {BLOCK} rows ({nb})")
    cdef Py_ssize_t[::1] start = np.empty(nb + 1, dtype=np.intp)
    for blk in range(nb):
        lo = blk * BLOCK
        hi = lo + BLOCK if lo + BLOCK < n else n
        if not 0 <= rest[blk] <= hi - lo:
            raise ValueError(f"rest[{blk}]={rest[blk]} must be in [0, {hi - lo}], the "
                             "block's rows")
        if not 0 <= take[blk] <= rest[blk]:
            raise ValueError(f"take[{blk}]={take[blk]} must be in [0, {rest[blk]}], the "
                             "block's rows below the threshold")
        start[blk] = k
        k += (hi - lo) - rest[blk] + take[blk]
    start[nb] = k
    if BOOSTLIB_DEBUG and not np.array_equal(rest, goss_rest_counts(score, threshold, 1)):
        raise ValueError("rest must be the blocks' counts of rows below the threshold")
    out_rows = np.empty(k, dtype=np.int32)
    out_weight = np.empty(k, dtype=np.float64)
    cdef idx_t[::1] r = out_rows
    cdef double[::1] w = out_weight
    if k:
        with nogil:
            for blk in prange(nb, schedule="static", num_threads=n_threads):
                lo = blk * BLOCK
                bad += not _goss_block(&score[0], threshold, lo,
                                       lo + BLOCK if lo + BLOCK < n else n, take[blk],
                                       rest[blk], factor, seed, &r[0] + start[blk],
                                       &w[0] + start[blk], start[blk + 1] - start[blk])
    if bad:
        raise ValueError("rest must be the blocks' counts of rows below the threshold")
    return out_rows, out_weight
