"""Gradient and hessian kernels of the built-in losses (one specialised loop per loss).

All derivatives are of the loss itself with respect to the raw score ``z`` (LightGBM and
scikit-learn sign convention). When ``weight`` is non-empty, ``g`` and ``h`` are multiplied by
it. Rows are independent, so the result does not depend on ``n_threads``.
"""
import numpy as np

from cython.parallel cimport prange
from libc.math cimport exp, fabs, frexp, log, log1p

from .common cimport block_stop, row_threads
from .fastexp cimport boostlib_exp_nonpos

DEF CHUNK = 64      # rows per vectorised chunk of the logloss kernels
DEF LOSS_BLOCK = 2048   # rows per block of a loss sum: threads take blocks (6,513 rows: 3)
DEF LN2 = 0.6931471805599453
DEF BIG = 8.452712498170644e+270    # 2**900: a chunk (factors <= 2) cannot overflow from it


cdef inline double _sigmoid(double z) noexcept nogil:
    cdef double e
    if z >= 0.0:
        return 1.0 / (1.0 + exp(-z))
    e = exp(z)
    return e / (1.0 + e)


cdef _check(const double[::1] y, const double[::1] raw, const double[::1] weight,
            double[::1] g, double[::1] h):
    cdef Py_ssize_t n = y.shape[0]
    if raw.shape[0] != n or g.shape[0] != n or h.shape[0] != n:
        raise ValueError("y, raw, gradient and hessian must have the same length")
    if weight.shape[0] not in (0, n):
        raise ValueError("weight must be empty or have the length of y")


def logloss_gradient(const double[::1] y, const double[::1] raw, const double[::1] weight,
                     double[::1] g, double[::1] h, int n_threads):
    """Binary log-loss ``softplus(z) - y z``: ``g = p - y``, ``h = p (1 - p)``, ``p = sigmoid(z)``."""
    _check(y, raw, weight, g, h)
    cdef Py_ssize_t n = y.shape[0], nc = (n + CHUNK - 1) // CHUNK, c, lo, m, i
    cdef bint weighted = weight.shape[0] > 0
    with nogil:
        for c in prange(nc, schedule="static", num_threads=n_threads):
            lo = c * CHUNK
            m = CHUNK if lo + CHUNK <= n else n - lo
            _ll_derivatives(&raw[lo], &y[lo], &g[lo], &h[lo], m)
            if weighted:
                for i in range(lo, lo + m):
                    g[i] = g[i] * weight[i]
                    h[i] = h[i] * weight[i]


def exp_nonpositive(const double[::1] x, double[::1] out):
    """``out = exp(x)`` for ``x <= 0`` (or NaN) with the vectorisable exp the logloss kernels
    use (``fastexp.pxd``); exposed to test it against the C library's."""
    cdef Py_ssize_t i, n = x.shape[0]
    if out.shape[0] != n:
        raise ValueError("x and out must have the same length")
    for i in range(n):
        if x[i] > 0.0:
            raise ValueError(f"x[{i}]={x[i]!r} must be <= 0")
    with nogil:
        for i in range(n):
            out[i] = boostlib_exp_nonpos(x[i])


# -- logloss in chunks of CHUNK rows -------------------------------------------------------------
# ``e = exp(-|z|)`` comes from ``boostlib_exp_nonpos`` (fastexp.pxd) and ``p = sigmoid(z)`` is
# ``1/(1+e)`` or ``e/(1+e)`` chosen without a branch, so the per-row loops vectorise; the sums
# run in a second, serial loop over the chunk (their order is fixed: results do not depend on
# the thread count). Each helper keeps its chunk of ``e`` on its own stack (thread-safe).

cdef inline void _ll_fill(const double* z, const double* y, double* g, double* h, double* e,
                          Py_ssize_t m) noexcept nogil:
    cdef Py_ssize_t j
    cdef double ej, p
    for j in range(m):
        ej = boostlib_exp_nonpos(-fabs(z[j]))
        p = (1.0 if z[j] >= 0.0 else ej) / (1.0 + ej)
        g[j] = p - y[j]
        h[j] = p * (1.0 - p)
        e[j] = ej


cdef inline void _ll_derivatives(const double* z, const double* y, double* g, double* h,
                                 Py_ssize_t m) noexcept nogil:
    """``g`` and ``h`` of ``m <= CHUNK`` rows."""
    cdef double e[CHUNK]
    _ll_fill(z, y, g, h, e, m)


cdef inline double _ll_product_sum(const double* z, const double* y, const double* e,
                                   Py_ssize_t m, double* prod, long* expo) noexcept nogil:
    """Multiply the block's running product by ``1 + e`` (rescaled with frexp past BIG) and
    return the chunk's sum of ``max(z, 0) - y z``."""
    cdef Py_ssize_t j
    cdef double s = 0.0, pr = prod[0], zj
    cdef int ex
    for j in range(m):
        zj = z[j]
        s = s + ((zj if zj > 0.0 else 0.0) - y[j] * zj)
        pr = pr * (1.0 + e[j])
    if pr > BIG:
        pr = frexp(pr, &ex)
        expo[0] = expo[0] + ex
    prod[0] = pr
    return s


cdef inline double _ll_both(const double* z, const double* y, double* g, double* h,
                            Py_ssize_t m, double* prod, long* expo) noexcept nogil:
    """``g`` and ``h`` of a chunk, and its unweighted loss terms (see :func:`_ll_sum`),
    from one ``exp`` a row."""
    cdef double e[CHUNK]
    _ll_fill(z, y, g, h, e, m)
    return _ll_product_sum(z, y, e, m, prod, expo)


cdef inline double _ll_sum(const double* z, const double* y, Py_ssize_t m, double* prod,
                           long* expo) noexcept nogil:
    """The unweighted loss terms of a chunk (see :func:`_ll_product_sum`)."""
    cdef double e[CHUNK]
    cdef Py_ssize_t j
    for j in range(m):
        e[j] = boostlib_exp_nonpos(-fabs(z[j]))
    return _ll_product_sum(z, y, e, m, prod, expo)


def mse_gradient(const double[::1] y, const double[::1] raw, const double[::1] weight,
                 double[::1] g, double[::1] h, int n_threads):
    """Squared error ``(z - y)^2 / 2``: ``g = z - y``, ``h = 1``."""
    _check(y, raw, weight, g, h)
    cdef Py_ssize_t i, n = y.shape[0]
    cdef bint weighted = weight.shape[0] > 0
    with nogil:
        for i in prange(n, schedule="static", num_threads=row_threads(n, n_threads)):
            if weighted:
                g[i] = (raw[i] - y[i]) * weight[i]
                h[i] = weight[i]
            else:
                g[i] = raw[i] - y[i]
                h[i] = 1.0


def sla_gradient(const double[::1] y, const double[::1] raw, const double[::1] weight,
                 double scale, double[::1] g, double[::1] h, int n_threads):
    """Smoothed 0-1 loss ``1 - sigmoid(t z / s)``, ``t = 2y - 1`` (SGLB paper, eq. 12).

    ``g = -(t/s) q (1-q)`` and ``h = -(1/s^2) q (1-q) (1-2q)`` with ``q = sigmoid(t z / s)``;
    ``h`` is negative on the misclassified side.
    """
    _check(y, raw, weight, g, h)
    cdef Py_ssize_t i, n = y.shape[0]
    cdef bint weighted = weight.shape[0] > 0
    cdef double q, t, w
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_threads):
            t = 2.0 * y[i] - 1.0
            q = _sigmoid(t * raw[i] / scale)
            w = weight[i] if weighted else 1.0
            g[i] = -(t / scale) * q * (1.0 - q) * w
            h[i] = -(q * (1.0 - q) * (1.0 - 2.0 * q)) / (scale * scale) * w


# -- loss values ---------------------------------------------------------------------------------
# Sums are taken per fixed block of rows in parallel and the block sums added in block order,
# so the result is bit-identical whatever ``n_threads``.


# Unweighted logloss sums ``sum log1p(e_i)`` (``e_i = exp(-|z_i|)``) as the log of the block's
# product of ``1 + e_i``, kept in range with frexp: one log per block instead of one log1p
# per row (the product's rounding error, about 1e-16 per row, is far below the loss's own).
# The rescaling is exact and the product is brought to [0.5, 1) before its log, so where it is
# rescaled does not change the result.

cdef inline double _log_product(double prod, long expo) noexcept nogil:
    """``log(prod * 2**expo)``, from the product brought to [0.5, 1) first."""
    cdef int ex
    prod = frexp(prod, &ex)
    return log(prod) + (expo + ex) * LN2


cdef enum:
    K_LOGLOSS = 0
    K_MSE = 1
    K_SLA = 2


cdef inline double _pointwise(int kind, double y, double z, double scale) noexcept nogil:
    cdef double t
    if kind == K_LOGLOSS:       # softplus(z) - y z, stable for large |z|
        return (z if z > 0.0 else 0.0) + log1p(boostlib_exp_nonpos(-fabs(z))) - y * z
    if kind == K_MSE:
        return 0.5 * (z - y) * (z - y)
    t = 2.0 * y - 1.0
    return 1.0 - _sigmoid(t * z / scale)


cdef double _loss_sum(int kind, const double[::1] y, const double[::1] raw,
                      const double[::1] weight, double scale, int n_threads,
                      double* g=NULL, double* h=NULL) except? -1.0:
    # The loss summed per fixed block of rows; with ``g`` and ``h`` (logloss only), the
    # unweighted derivatives written too, from the same exp when the sum is unweighted.
    cdef Py_ssize_t n = y.shape[0], nb, blk, i, lo, hi, c, m
    if raw.shape[0] != n:
        raise ValueError("y and raw must have the same length")
    if weight.shape[0] not in (0, n):
        raise ValueError("weight must be empty or have the length of y")
    cdef bint weighted = weight.shape[0] > 0
    cdef bint product_log = kind == K_LOGLOSS and not weighted
    nb = (n + LOSS_BLOCK - 1) // LOSS_BLOCK
    if nb <= 1:
        n_threads = 1       # one block: no thread to wake
    partial = np.zeros(max(nb, 1))
    cdef double[::1] part = partial
    cdef double s, total = 0.0, prod
    cdef long expo
    with nogil:
        for blk in prange(nb, schedule="static", num_threads=n_threads):
            lo = blk * LOSS_BLOCK
            hi = block_stop(blk, LOSS_BLOCK, n)
            s = 0.0
            if product_log:
                prod = 1.0
                expo = 0
                for c in range(lo, hi, CHUNK):
                    m = CHUNK if c + CHUNK <= hi else hi - c
                    if g != NULL:
                        s = s + _ll_both(&raw[c], &y[c], g + c, h + c, m, &prod, &expo)
                    else:
                        s = s + _ll_sum(&raw[c], &y[c], m, &prod, &expo)
                s = s + _log_product(prod, expo)
            else:
                if g != NULL:
                    for c in range(lo, hi, CHUNK):
                        m = CHUNK if c + CHUNK <= hi else hi - c
                        _ll_derivatives(&raw[c], &y[c], g + c, h + c, m)
                for i in range(lo, hi):
                    if weighted:
                        s = s + weight[i] * _pointwise(kind, y[i], raw[i], scale)
                    else:
                        s = s + _pointwise(kind, y[i], raw[i], scale)
            part[blk] = s
        for blk in range(nb):
            total = total + part[blk]
    return total


def logloss_gradient_sum(const double[::1] y, const double[::1] raw, const double[::1] weight,
                         double[::1] g, double[::1] h, int n_threads):
    """:func:`logloss_gradient` (unweighted) and :func:`logloss_sum` (with ``weight``) in
    one pass: each row's ``exp(-|z|)`` is taken once, for both. The derivatives are those
    of :func:`logloss_gradient` and the sum that of :func:`logloss_sum`, bit for bit (the
    same blocks, chunks and order)."""
    _check(y, raw, weight, g, h)
    if y.shape[0] == 0:
        return 0.0
    return _loss_sum(K_LOGLOSS, y, raw, weight, 1.0, n_threads, &g[0], &h[0])


def logloss_sum(const double[::1] y, const double[::1] raw, const double[::1] weight,
                int n_threads):
    """``sum_i w_i (softplus(z_i) - y_i z_i)`` (weights empty: 1)."""
    return _loss_sum(K_LOGLOSS, y, raw, weight, 1.0, n_threads)


def mse_sum(const double[::1] y, const double[::1] raw, const double[::1] weight,
            int n_threads):
    """``sum_i w_i (z_i - y_i)^2 / 2`` (weights empty: 1)."""
    return _loss_sum(K_MSE, y, raw, weight, 1.0, n_threads)


def sla_sum(const double[::1] y, const double[::1] raw, const double[::1] weight,
            double scale, int n_threads):
    """``sum_i w_i (1 - sigmoid(t_i z_i / s))``, ``t = 2y - 1`` (weights empty: 1)."""
    return _loss_sum(K_SLA, y, raw, weight, scale, n_threads)


cdef inline double _softmax_row(const double* z, Py_ssize_t stride, Py_ssize_t K,
                                double* p) noexcept nogil:
    # p[k] = exp(z_k - max) / sum_j exp(z_j - max), summed in class order; returns the
    # log-sum-exp of the row (for the loss).
    cdef Py_ssize_t k
    cdef double top = z[0], s = 0.0
    for k in range(1, K):
        if z[k * stride] > top:
            top = z[k * stride]
    for k in range(K):
        p[k] = exp(z[k * stride] - top)
        s = s + p[k]
    for k in range(K):
        p[k] = p[k] / s
    return top + log(s)


def multiclass_gradient(const double[::1] y, const double[:, :] raw, double[:, :] g,
                        double[:, :] h, const double[::1] weight, int n_threads):
    """Softmax cross-entropy of ``raw`` (n, K) and class indices ``y``: ``g = p - onehot(y)``,
    ``h = p (1 - p)`` (the diagonal), ``p`` the row's softmax; ``g`` and ``h`` are (n, K)
    views of any strides. With ``weight`` non-empty, the mean loss is weighted by it (the
    derivatives are not). Returns the summed loss ``sum_i w_i (lse(z_i) - z_{i, y_i})``, by
    fixed blocks of rows added in order, so it does not depend on ``n_threads``."""
    cdef Py_ssize_t n = y.shape[0], K = raw.shape[1], nb, blk, i, k, lo, hi, c
    if raw.shape[0] != n or g.shape[0] != n or h.shape[0] != n:
        raise ValueError("y, raw, gradient and hessian must have the same number of rows")
    if g.shape[1] != K or h.shape[1] != K or K < 1:
        raise ValueError("raw, gradient and hessian must have the same number of columns")
    if weight.shape[0] not in (0, n):
        raise ValueError("weight must be empty or have the length of y")
    for i in range(n):
        if not 0.0 <= y[i] < K or y[i] != <double><Py_ssize_t>y[i]:
            raise ValueError(f"y[{i}] = {y[i]!r} is not a class index in 0 .. {K - 1}")
    cdef bint weighted = weight.shape[0] > 0
    nb = (n + LOSS_BLOCK - 1) // LOSS_BLOCK
    if nb <= 1:
        n_threads = 1
    partial = np.zeros(max(nb, 1))
    work = np.empty((max(nb, 1), K))
    cdef double[::1] part = partial
    cdef double[:, ::1] pw = work
    cdef double s, lse, pk
    cdef double* p
    with nogil:
        for blk in prange(nb, schedule="static", num_threads=n_threads):
            lo = blk * LOSS_BLOCK
            hi = block_stop(blk, LOSS_BLOCK, n)
            p = &pw[blk, 0]
            s = 0.0
            for i in range(lo, hi):
                lse = _softmax_row(&raw[i, 0], raw.strides[1] // sizeof(double), K, p)
                c = <Py_ssize_t>y[i]
                for k in range(K):
                    pk = p[k]
                    h[i, k] = pk * (1.0 - pk)
                    g[i, k] = pk - 1.0 if k == c else pk
                if weighted:
                    s = s + weight[i] * (lse - raw[i, c])
                else:
                    s = s + (lse - raw[i, c])
            part[blk] = s
    s = 0.0
    for blk in range(nb):
        s = s + part[blk]
    return s
