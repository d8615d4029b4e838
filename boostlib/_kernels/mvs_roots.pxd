# MVS's scores ``sqrt(g^2 + (h_scale * h / h_norm)^2)``, shared by ``_sampling.mvs_scores``
# and ``_order_stats.mvs_scores_threshold_near`` (which scores each block of rows and brackets
# it while it is in the cache), so both write the same bits.

from libc.math cimport fabs, sqrt
from libc.stdint cimport uint64_t

from .common cimport double_bits


cdef inline double mvs_hessian_term(double h, double h_norm, double inv, double h_scale,
                                    bint divide) noexcept nogil:
    """``h_scale * h / h_norm`` (by the reciprocal ``inv`` unless it overflowed)."""
    return (h / h_norm) * h_scale if divide else (h * inv) * h_scale


cdef inline void mvs_roots(const double* gradient, const double* hessian, double h_scale,
                           double h_norm, double inv, bint divide, double* out,
                           Py_ssize_t start, Py_ssize_t stop) noexcept nogil:
    """``out[i] = sqrt(g_i^2 + a_i^2)``, ``a_i`` the hessian term, for rows ``start ..
    stop``: nothing else in the loop, so it vectorises (the build's -fno-math-errno lets the
    square root be one instruction)."""
    cdef Py_ssize_t i
    cdef double g, a
    if divide:                          # one loop per case: no choice inside the loop
        for i in range(start, stop):
            g = gradient[i]
            a = mvs_hessian_term(hessian[i], h_norm, inv, h_scale, True)
            out[i] = sqrt(g * g + a * a)
    else:
        for i in range(start, stop):
            g = gradient[i]
            a = mvs_hessian_term(hessian[i], h_norm, inv, h_scale, False)
            out[i] = sqrt(g * g + a * a)


cdef inline void mvs_check_roots(const double* gradient, const double* hessian, double h_scale,
                                 double h_norm, double inv, bint divide, const double* out,
                                 Py_ssize_t start, Py_ssize_t stop, uint64_t tiny_b,
                                 uint64_t big_b, Py_ssize_t* n_pos, Py_ssize_t* n_big,
                                 Py_ssize_t* n_unsafe) noexcept nogil:
    """Check the roots of rows ``start .. stop`` on their bits: set ``n_pos`` to the number
    of positive ones, ``n_big`` to those at least ``big_b`` or not finite, and ``n_unsafe``
    to the rows whose root is below ``tiny_b`` though a term is not zero (a square
    underflowed)."""
    cdef Py_ssize_t i, pos = 0, big = 0, unsafe = 0
    cdef uint64_t u
    cdef double g, a
    for i in range(start, stop):
        u = double_bits(out[i])           # >= 0 or NaN: the bits order the values
        pos += u != 0
        big += u >= big_b
        if u < tiny_b:                    # rare: lost to underflow if a term is not zero
            g = gradient[i]
            a = mvs_hessian_term(hessian[i], h_norm, inv, h_scale, divide)
            unsafe += fabs(g) + fabs(a) > 0.0
    n_pos[0] = pos
    n_big[0] = big
    n_unsafe[0] = unsafe
