"""Kernels of the survival losses and metrics: the accelerated failure time (AFT) loss and
its derivatives, and Harrell's concordance index.

AFT (XGBoost's ``survival:aft``, ``src/common/survival_util.h``; Barnwal, Cho and Hocking,
arXiv:2006.04920). ``log T = z + sigma eps`` with ``eps`` of density ``f`` (``dist``:
0 normal, 1 logistic, 2 extreme value) and cdf ``F``. A row's label is an interval
``[lower, upper]``: exact (``lower == upper``), right-censored (``upper = +inf``),
left-censored (``lower = 0``) or interval-censored. With ``s(t) = (log t - z) / sigma``:

* exact: ``L = -log(max(f(s) / (sigma t), 1e-12))``,
  ``g = f'(s) / (sigma f(s))``, ``h = -(f f'' - f'^2) / (sigma f)^2``;
* censored: ``L = -log(max(F(s_u) - F(s_l), 1e-12))`` (``F(s_u) = 1`` for ``upper = inf``,
  ``F(s_l) = 0`` for ``lower = 0``; taken as ``S(s_l) - S(s_u)`` with ``S = 1 - F``
  computed directly where both ends lie in the upper tail, which XGBoost's difference of
  cdfs loses to cancellation), ``g = (f(s_u) - f(s_l)) / (sigma (F(s_u) - F(s_l)))``,
  ``h = -((F_u - F_l)(f'_u - f'_l) - (f_u - f_l)^2) / (sigma (F_u - F_l))^2``.

Where a denominator falls below 1e-12 and the quotient is not finite, the limit of the
derivative as the raw score goes to infinity is used (XGBoost's ``GetLimitGradAtInfPred``
and ``GetLimitHessAtInfPred``); then ``g`` is clipped to [-15, 15] and ``h`` to
[1e-16, 15], as XGBoost does. Rows are independent: the results do not depend on
``n_threads``.

C-index: see :func:`concordance`.
"""
import numpy as np

from cython.parallel cimport prange
from libc.math cimport erfc, exp, fmax, isinf, isnan, log, sqrt

from .common cimport row_threads

DEF MIN_GRAD = -15.0
DEF MAX_GRAD = 15.0
DEF MIN_HESS = 1e-16
DEF MAX_HESS = 15.0
DEF EPS = 1e-12
DEF INV_SQRT_2PI = 0.3989422804014327
DEF INV_SQRT_2 = 0.7071067811865476

DEF UNCENSORED = 0
DEF RIGHT = 1
DEF LEFT = 2
DEF INTERVAL = 3


cdef inline double _pdf(double z, int dist) noexcept nogil:
    cdef double w
    if dist == 0:
        return exp(-0.5 * z * z) * INV_SQRT_2PI
    w = exp(z)
    if dist == 1:
        if isinf(w) or isinf(w * w):
            return 0.0
        return w / ((1.0 + w) * (1.0 + w))
    if isinf(w):
        return 0.0
    return w * exp(-w)


cdef inline double _cdf(double z, int dist) noexcept nogil:
    cdef double w
    if dist == 0:
        return 0.5 * erfc(-z * INV_SQRT_2)
    w = exp(z)
    if dist == 1:
        return 1.0 if isinf(w) else w / (1.0 + w)
    return 1.0 - exp(-w)


cdef inline double _sf(double z, int dist) noexcept nogil:
    """``1 - F(z)``, without the cancellation of the subtraction in the upper tail."""
    cdef double w
    if dist == 0:
        return 0.5 * erfc(z * INV_SQRT_2)
    w = exp(z)
    if dist == 1:
        return 0.0 if isinf(w) else 1.0 / (1.0 + w)
    return exp(-w)


cdef inline double _mass(double lo, double up, double z, double sigma, int dist) noexcept nogil:
    """``F(s_u) - F(s_l)``, the probability of a censored row's interval (``F(s_u) = 1``
    for ``up = inf``, ``F(s_l) = 0`` for ``lo = 0``), from the survival function where both
    ends lie in the upper tail (XGBoost subtracts the cdfs; the value is the same up to
    rounding, which there cancels)."""
    cdef double sl
    if lo <= 0.0:
        return 1.0 if isinf(up) else _cdf((log(up) - z) / sigma, dist)
    sl = (log(lo) - z) / sigma
    if isinf(up):
        return _sf(sl, dist)
    if sl > 0.0:
        return _sf(sl, dist) - _sf((log(up) - z) / sigma, dist)
    return _cdf((log(up) - z) / sigma, dist) - _cdf(sl, dist)


cdef inline double _grad_pdf(double z, int dist) noexcept nogil:
    cdef double w
    if dist == 0:
        return -z * _pdf(z, 0)
    w = exp(z)
    if isinf(w):
        return 0.0
    if dist == 1:
        return _pdf(z, 1) * (1.0 - w) / (1.0 + w)
    return (1.0 - w) * _pdf(z, 2)


cdef inline double _hess_pdf(double z, int dist) noexcept nogil:
    cdef double w
    if dist == 0:
        return (z * z - 1.0) * _pdf(z, 0)
    w = exp(z)
    if isinf(w) or isinf(w * w):
        return 0.0
    if dist == 1:
        return _pdf(z, 1) * (w * w - 4.0 * w + 1.0) / ((1.0 + w) * (1.0 + w))
    return (w * w - 3.0 * w + 1.0) * _pdf(z, 2)


cdef inline double _clip(double x, double lo, double hi) noexcept nogil:
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


cdef inline double _limit_grad(int kind, bint sign, double sigma, int dist) noexcept nogil:
    """XGBoost's ``GetLimitGradAtInfPred`` (``sign``: the standardised time is > 0)."""
    if dist == 0:
        if kind == RIGHT:
            return MIN_GRAD if sign else 0.0
        if kind == LEFT:
            return 0.0 if sign else MAX_GRAD
        return MIN_GRAD if sign else MAX_GRAD
    if dist == 1:
        if kind == RIGHT:
            return -1.0 / sigma if sign else 0.0
        if kind == LEFT:
            return 0.0 if sign else 1.0 / sigma
        return -1.0 / sigma if sign else 1.0 / sigma
    if kind == RIGHT:
        return MIN_GRAD if sign else 0.0
    if kind == LEFT:
        return 0.0 if sign else 1.0 / sigma
    return MIN_GRAD if sign else 1.0 / sigma


cdef inline double _limit_hess(int kind, bint sign, double sigma, int dist) noexcept nogil:
    """XGBoost's ``GetLimitHessAtInfPred``."""
    if dist == 0:
        if kind == RIGHT:
            return 1.0 / (sigma * sigma) if sign else MIN_HESS
        if kind == LEFT:
            return MIN_HESS if sign else 1.0 / (sigma * sigma)
        return 1.0 / (sigma * sigma)
    if dist == 1:
        return MIN_HESS
    if kind == LEFT:
        return MIN_HESS
    return MAX_HESS if sign else MIN_HESS


cdef inline double _aft_loss(double lo, double up, double z, double sigma,
                             int dist) noexcept nogil:
    cdef double s
    if lo == up:
        s = (log(lo) - z) / sigma
        return -log(fmax(_pdf(s, dist) / (sigma * lo), EPS))
    return -log(fmax(_mass(lo, up, z, sigma, dist), EPS))


cdef inline void _aft_derivatives(double lo, double up, double z, double sigma, int dist,
                                  double *g, double *h) noexcept nogil:
    cdef double s, f, df, d2f, num_g, den_g, num_h, den_h, grad, hess
    cdef double su = 0.0, sl = 0.0, fu, fl, cu, cl, dfu, dfl, cdiff, pdiff, gdiff
    cdef int kind
    cdef bint sign
    if lo == up:
        s = (log(lo) - z) / sigma
        f = _pdf(s, dist)
        df = _grad_pdf(s, dist)
        d2f = _hess_pdf(s, dist)
        kind = UNCENSORED
        num_g = df
        den_g = sigma * f
        num_h = -(f * d2f - df * df)
        den_h = sigma * sigma * f * f
        sign = s > 0.0
    else:
        kind = INTERVAL
        if isinf(up):
            fu = 0.0
            cu = 1.0
            dfu = 0.0
            kind = RIGHT
        else:
            su = (log(up) - z) / sigma
            fu = _pdf(su, dist)
            cu = _cdf(su, dist)
            dfu = _grad_pdf(su, dist)
        if lo <= 0.0:
            fl = 0.0
            cl = 0.0
            dfl = 0.0
            kind = LEFT
        else:
            sl = (log(lo) - z) / sigma
            fl = _pdf(sl, dist)
            cl = _cdf(sl, dist)
            dfl = _grad_pdf(sl, dist)
        sign = su > 0.0 or sl > 0.0
        cdiff = _mass(lo, up, z, sigma, dist)
        pdiff = fu - fl
        gdiff = dfu - dfl
        num_g = pdiff
        den_g = sigma * cdiff
        num_h = -(cdiff * gdiff - pdiff * pdiff)
        den_h = den_g * den_g
    grad = num_g / den_g
    if den_g < EPS and (isnan(grad) or isinf(grad)):
        grad = _limit_grad(kind, sign, sigma, dist)
    hess = num_h / den_h
    if den_h < EPS and (isnan(hess) or isinf(hess)):
        hess = _limit_hess(kind, sign, sigma, dist)
    g[0] = _clip(grad, MIN_GRAD, MAX_GRAD)
    h[0] = _clip(hess, MIN_HESS, MAX_HESS)


cdef _check_aft(const double[::1] lower, const double[::1] upper, const double[::1] raw,
                int dist, double sigma):
    cdef Py_ssize_t n = lower.shape[0]
    if upper.shape[0] != n or raw.shape[0] != n:
        raise ValueError("lower, upper and raw must have the same length")
    if dist not in (0, 1, 2):
        raise ValueError(f"dist={dist} is invalid; expected 0 (normal), 1 (logistic) or "
                         "2 (extreme)")
    if not sigma > 0.0:
        raise ValueError(f"sigma={sigma} is invalid; expected a number > 0")


def aft_gradient(const double[::1] lower, const double[::1] upper, const double[::1] raw,
                 int dist, double sigma, double[::1] g, double[::1] h, int n_threads):
    """AFT derivatives of every row into ``g`` and ``h`` (see the module docstring)."""
    _check_aft(lower, upper, raw, dist, sigma)
    cdef Py_ssize_t i, n = lower.shape[0]
    if g.shape[0] != n or h.shape[0] != n:
        raise ValueError("gradient and hessian must have the length of raw")
    with nogil:
        for i in prange(n, schedule="static", num_threads=row_threads(n, n_threads)):
            _aft_derivatives(lower[i], upper[i], raw[i], sigma, dist, &g[i], &h[i])


def aft_loss(const double[::1] lower, const double[::1] upper, const double[::1] raw,
             int dist, double sigma, double[::1] out, int n_threads):
    """AFT negative log-likelihood of every row into ``out``."""
    _check_aft(lower, upper, raw, dist, sigma)
    cdef Py_ssize_t i, n = lower.shape[0]
    if out.shape[0] != n:
        raise ValueError("out must have the length of raw")
    with nogil:
        for i in prange(n, schedule="static", num_threads=row_threads(n, n_threads)):
            out[i] = _aft_loss(lower[i], upper[i], raw[i], sigma, dist)


def concordance(const double[::1] time, const unsigned char[::1] event,
                const Py_ssize_t[::1] rank, Py_ssize_t n_ranks, const double[::1] weight,
                const Py_ssize_t[::1] order):
    """Harrell's concordance sums ``(concordant, comparable)`` of risk scores.

    A pair ``(i, j)`` is comparable when row ``i`` has an event and ``time[j] > time[i]``,
    or ``time[j] == time[i]`` and ``j`` is censored (scikit-survival's rule); it is
    concordant when ``rank[i] > rank[j]`` (the earlier event has the higher risk) and
    counts one half when the ranks are equal. Each pair weighs ``weight[i] weight[j]``
    (``weight`` empty: 1).

    ``rank`` holds the risk scores' dense ranks ``0 .. n_ranks - 1`` and ``order`` the rows
    by decreasing time. One pass over the time groups, latest first, with a Fenwick tree of
    the weights of the rows seen per rank: a group's censored rows are added, then its
    events are counted against the tree and added. O(n log n), one thread.
    """
    cdef Py_ssize_t n = time.shape[0], i, j, k, r, row
    if event.shape[0] != n or rank.shape[0] != n or order.shape[0] != n \
            or weight.shape[0] not in (0, n):
        raise ValueError("time, event, rank, order (and weight) must have the same length")
    cdef bint weighted = weight.shape[0] > 0
    cdef double[::1] tree = np.zeros(n_ranks + 1, dtype=np.float64)
    cdef double num = 0.0, den = 0.0, w, less, upto, total = 0.0, t
    with nogil:
        i = 0
        while i < n:
            t = time[order[i]]
            j = i
            while j < n and time[order[j]] == t:
                j += 1
            for k in range(i, j):           # censored rows at this time: comparable
                row = order[k]
                if not event[row]:
                    w = weight[row] if weighted else 1.0
                    r = rank[row] + 1
                    while r <= n_ranks:
                        tree[r] += w
                        r += r & (-r)
                    total += w
            for k in range(i, j):
                row = order[k]
                if event[row]:
                    w = weight[row] if weighted else 1.0
                    less = 0.0
                    r = rank[row]
                    while r > 0:
                        less += tree[r]
                        r -= r & (-r)
                    upto = 0.0
                    r = rank[row] + 1
                    while r > 0:
                        upto += tree[r]
                        r -= r & (-r)
                    num += w * (less + 0.5 * (upto - less))
                    den += w * total
            for k in range(i, j):
                row = order[k]
                if event[row]:
                    w = weight[row] if weighted else 1.0
                    r = rank[row] + 1
                    while r <= n_ranks:
                        tree[r] += w
                        r += r & (-r)
                    total += w
            i = j
    return num, den
