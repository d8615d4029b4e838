"""Row-sampling kernels: scores, the Minimal Variance Sampling threshold, row selection.

Every kernel is one pass (the threshold: a few passes over shrinking arrays), branch-free in
its inner loop, so a sampler costs a small fraction of the tree it saves work on.
"""
from libc.math cimport fabs, isfinite, sqrt

from .common cimport idx_t


cdef inline void _swap(double* a, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    cdef double t = a[i]
    a[i] = a[j]
    a[j] = t


cdef inline double _median3(double a, double b, double c) noexcept nogil:
    if a < b:
        if b < c:
            return b
        return c if a < c else a
    if a < c:
        return a
    return c if b < c else b


def mvs_threshold(const double[::1] score, double target, double[::1] scratch):
    """The ``mu`` solving ``sum_i min(1, score_i / mu) == target``, exactly.

    With ``S(mu)`` the sum of the scores below ``mu`` and ``L(mu)`` the number of the others,
    ``mu`` is the fixed point of ``mu <- S(mu) / (target - L(mu))``. Started above the
    solution (at ``sum(score) / target``), the iteration decreases monotonically and stops,
    exactly, once no score crosses ``mu`` (scores that reach ``mu`` have probability 1 for
    good, so each pass only scans the remaining candidates, branch-free). It typically takes
    3-12 passes; after 32 a quickselect on the remaining candidates finishes the job, so the
    expected cost stays O(n) on any input.

    Parameters
    ----------
    score : IN float64 (n,), finite and >= 0.
    target : expected sample size, ``0 < target < #{score > 0}``.
    scratch : OUT float64 (n,) work buffer (overwritten).

    Returns
    -------
    mu : float, > 0. Rows with ``score >= mu`` have probability 1, the others ``score/mu``.
    """
    cdef Py_ssize_t n = score.shape[0]
    cdef Py_ssize_t m
    cdef double mu = 0.0
    cdef double total = 0.0
    cdef bint bad = False
    if scratch.shape[0] < n:
        raise ValueError("scratch must hold n values")
    with nogil:
        m = _positives(score, &scratch[0], &total, &bad)
        if not bad and 0.0 < target < m:
            mu = _threshold(&scratch[0], m, total, target)
    if bad:
        raise ValueError("scores must be finite and non-negative")
    if not 0.0 < target < m:
        raise ValueError(f"target={target!r} must be in (0, {m}), the number of rows "
                         "with a positive score")
    return mu


cdef Py_ssize_t _positives(const double[::1] score, double* a, double* total,
                           bint* bad) noexcept nogil:
    """Copy the positive scores to ``a`` (branch-free); flag negative or non-finite ones."""
    cdef Py_ssize_t i, m = 0
    cdef double x, s = 0.0
    cdef bint ok = True
    for i in range(score.shape[0]):
        x = score[i]
        ok &= (x >= 0.0) & (x - x == 0.0)     # x - x is NaN for NaN and +-inf
        a[m] = x
        m += x > 0.0
        s += x
    total[0] = s
    bad[0] = not ok
    return m


cdef double _threshold(double* a, Py_ssize_t m, double s, double target) noexcept nogil:
    """The body of :func:`mvs_threshold` on the ``m`` positive scores ``a`` (sum ``s``)."""
    cdef Py_ssize_t kept, it
    cdef double s_kept, mu
    cdef double n_large = 0.0       # rows known to have probability 1
    mu = s / target
    for it in range(32):
        kept = _compact_below(a, m, mu, &s_kept)
        if kept == m:
            return mu
        n_large += m - kept
        m = kept
        mu = s_kept / (target - n_large)
    return _quickselect(a, m, target, n_large)


cdef Py_ssize_t _compact_below(double* a, Py_ssize_t m, double mu,
                               double* total) noexcept nogil:
    """Move the scores ``< mu`` to the front of ``a[:m]`` (in order); return their count.

    Branch-free, with four partial sums (a fixed order, so the result is deterministic)
    so the additions do not wait on each other.
    """
    cdef Py_ssize_t i, kept = 0
    cdef double x0, x1, x2, x3
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    i = 0
    while i + 4 <= m:
        x0 = a[i]
        x1 = a[i + 1]
        x2 = a[i + 2]
        x3 = a[i + 3]
        s0 += x0 if x0 < mu else 0.0
        s1 += x1 if x1 < mu else 0.0
        s2 += x2 if x2 < mu else 0.0
        s3 += x3 if x3 < mu else 0.0
        a[kept] = x0
        kept += x0 < mu
        a[kept] = x1
        kept += x1 < mu
        a[kept] = x2
        kept += x2 < mu
        a[kept] = x3
        kept += x3 < mu
        i += 4
    while i < m:
        x0 = a[i]
        s0 += x0 if x0 < mu else 0.0
        a[kept] = x0
        kept += x0 < mu
        i += 1
    total[0] = (s0 + s1) + (s2 + s3)
    return kept


cdef double _quickselect(double* a, Py_ssize_t m, double target, double n_large) noexcept nogil:
    """Solve for ``mu`` among candidates ``a[:m]`` by three-way quickselect.

    Each round takes a pivot ``v`` (median of three), partitions the candidates into
    ``< v``, ``== v`` and ``> v``, and evaluates the left-hand side at ``mu = v`` with
    everything already decided; as it decreases in ``mu``, one side is settled per round.
    """
    cdef Py_ssize_t i, lo = 0, hi = m, lt, gt
    cdef double v, s_lt, estimate
    cdef double sum_small = 0.0     # sum of the scores known to be below mu
    while lo < hi:
        v = _median3(a[lo], a[lo + (hi - lo) // 2], a[hi - 1])
        lt = lo                     # [lo, lt) < v, [lt, gt) == v, [gt, hi) > v
        gt = hi
        i = lo
        s_lt = 0.0
        while i < gt:
            if a[i] < v:
                s_lt += a[i]
                _swap(a, i, lt)
                lt += 1
                i += 1
            elif a[i] > v:
                gt -= 1
                _swap(a, i, gt)
            else:
                i += 1
        estimate = (sum_small + s_lt) / v + n_large + (hi - lt)
        if estimate > target:       # mu > v: everything <= v is below mu
            sum_small += s_lt + v * (gt - lt)
            lo = gt
        elif estimate < target:     # mu < v: everything >= v has probability 1
            n_large += hi - lt
            hi = lt
        else:                       # mu == v exactly
            return v
    return sum_small / (target - n_large)


def mvs_select(const double[::1] score, double mu, const double[::1] uniform,
               idx_t[::1] out_rows, double[::1] out_weight):
    """Keep row ``i`` when ``uniform[i] < p_i = min(1, score_i / mu)``, with weight ``1/p_i``.

    Parameters
    ----------
    score : IN float64 (n,), >= 0.
    mu : threshold (> 0), e.g. from :func:`mvs_threshold`.
    uniform : IN float64 (n,) draws in [0, 1).
    out_rows : OUT int32 (n,): the kept rows, in increasing order, in the first ``k`` entries.
    out_weight : OUT float64 (n,): their weights (exactly 1 where ``p_i == 1``).

    Returns
    -------
    k : number of kept rows.
    """
    cdef Py_ssize_t n = score.shape[0]
    cdef Py_ssize_t i, k = 0
    cdef double s, prob
    cdef bint big
    if uniform.shape[0] != n or out_rows.shape[0] < n or out_weight.shape[0] < n:
        raise ValueError("uniform and the outputs must hold n values")
    if not mu > 0.0:
        raise ValueError(f"mu={mu!r} must be positive")
    with nogil:
        for i in range(n):
            s = score[i]
            prob = s / mu
            big = s >= mu
            out_rows[k] = <idx_t>i
            out_weight[k] = 1.0 if big else 1.0 / prob
            k += big | (uniform[i] < prob)
    return k


def abs_sums(const double[::1] a, const double[::1] b):
    """``(sum |a|, sum |b|)`` in one pass."""
    cdef Py_ssize_t i
    cdef double sa = 0.0, sb = 0.0
    if b.shape[0] != a.shape[0]:
        raise ValueError("a and b must have the same length")
    with nogil:
        for i in range(a.shape[0]):
            sa += fabs(a[i])
            sb += fabs(b[i])
    return sa, sb


def mvs_scores(const double[::1] gradient, const double[::1] hessian, double lam,
               double[::1] out):
    """``out = sqrt(g^2 + lam * h^2)``; returns the number of positive scores.

    Raises
    ------
    ValueError
        When a score is not finite (non-finite or huge derivatives).
    """
    cdef Py_ssize_t i, n = gradient.shape[0], n_pos = 0
    cdef double g, h, r, total = 0.0
    if hessian.shape[0] != n or out.shape[0] < n:
        raise ValueError("gradient, hessian and out must hold n values")
    with nogil:
        for i in range(n):
            g = gradient[i]
            h = hessian[i]
            r = sqrt(g * g + lam * (h * h))
            out[i] = r
            n_pos += r > 0.0
            total += r
    if not isfinite(total):
        raise ValueError("scores are not finite (non-finite or too large derivatives)")
    return n_pos


def goss_scores(const double[::1] gradient, const double[::1] hessian, bint use_hessian,
                double[::1] out):
    """``out = |g * h|`` (``use_hessian``) or ``|g|``."""
    cdef Py_ssize_t i, n = gradient.shape[0]
    if hessian.shape[0] != n or out.shape[0] < n:
        raise ValueError("gradient, hessian and out must hold n values")
    with nogil:
        if use_hessian:
            for i in range(n):
                out[i] = fabs(gradient[i] * hessian[i])
        else:
            for i in range(n):
                out[i] = fabs(gradient[i])


def select_marked(const unsigned char[::1] mark, double factor, idx_t[::1] out_rows,
                  double[::1] out_weight):
    """Rows with ``mark != 0``, in order; weight 1 where ``mark == 1``, ``factor`` elsewhere.

    Returns the number of rows written to the front of ``out_rows`` / ``out_weight``.
    """
    cdef Py_ssize_t i, n = mark.shape[0], k = 0
    cdef unsigned char m
    if out_rows.shape[0] < n or out_weight.shape[0] < n:
        raise ValueError("the outputs must hold n values")
    with nogil:
        for i in range(n):
            m = mark[i]
            out_rows[k] = <idx_t>i
            out_weight[k] = 1.0 if m == 1 else factor
            k += m != 0
    return k
