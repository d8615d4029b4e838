"""Gradient and hessian kernels of the built-in losses (one specialised loop per loss).

All derivatives are of the loss itself with respect to the raw score ``z`` (LightGBM and
scikit-learn sign convention). When ``weight`` is non-empty, ``g`` and ``h`` are multiplied by
it. Rows are independent, so the result does not depend on ``n_threads``.
"""
from cython.parallel cimport prange
from libc.math cimport exp


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
    cdef Py_ssize_t i, n = y.shape[0]
    cdef bint weighted = weight.shape[0] > 0
    cdef double p
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_threads):
            p = _sigmoid(raw[i])
            if weighted:
                g[i] = (p - y[i]) * weight[i]
                h[i] = p * (1.0 - p) * weight[i]
            else:
                g[i] = p - y[i]
                h[i] = p * (1.0 - p)


def mse_gradient(const double[::1] y, const double[::1] raw, const double[::1] weight,
                 double[::1] g, double[::1] h, int n_threads):
    """Squared error ``(z - y)^2 / 2``: ``g = z - y``, ``h = 1``."""
    _check(y, raw, weight, g, h)
    cdef Py_ssize_t i, n = y.shape[0]
    cdef bint weighted = weight.shape[0] > 0
    with nogil:
        for i in prange(n, schedule="static", num_threads=n_threads):
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
