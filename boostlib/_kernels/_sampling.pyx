"""Row-sampling kernels: scores, the Minimal Variance Sampling threshold, row selection.

Every kernel is one pass (the threshold: a few passes over shrinking arrays), branch-free in
its inner loop, so a sampler costs a small fraction of the tree it saves work on.
"""
import numpy as np

from cython.parallel cimport prange
from libc.math cimport fabs, isfinite, sqrt
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy, memmove

from .common cimport idx_t
from .counter_rng cimport uniform01


cdef enum:
    BUCKET_SHIFT = 48                  # keep the top 16 bits of a positive double
    N_BUCKETS = 1 << 15                # the sign bit is 0 for positive scores


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

    The left-hand side decreases in ``mu``. One pass buckets the positive scores by the top
    16 bits of their IEEE-754 representation (monotone in the value for positive doubles:
    sign, exponent and 4 mantissa bits, so a bucket spans a factor of at most 1 + 1/16),
    with per-bucket counts and sums. Scanning the buckets from the top finds the one holding
    ``mu``: every score above it has probability 1, every score below it contributes
    ``score / mu``. A second pass copies that bucket's scores to ``scratch``, and a three-way
    quickselect among them finishes the job: expected O(n) on any input.

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
    cdef Py_ssize_t m = 0
    cdef double mu = 0.0
    cdef bint bad = False
    cdef double* sums
    cdef int64_t* counts
    if scratch.shape[0] < n:
        raise ValueError("scratch must hold n values")
    sums = <double*>calloc(N_BUCKETS, sizeof(double))
    counts = <int64_t*>calloc(N_BUCKETS, sizeof(int64_t))
    if sums == NULL or counts == NULL:
        free(sums)
        free(counts)
        raise MemoryError()
    with nogil:
        m = _bucket(score, counts, sums, &bad)
        if not bad and 0.0 < target < m:
            mu = _threshold(score, counts, sums, target, &scratch[0])
    free(sums)
    free(counts)
    if bad:
        raise ValueError("scores must be finite and non-negative")
    if not 0.0 < target < m:
        raise ValueError(f"target={target!r} must be in (0, {m}), the number of rows "
                         "with a positive score")
    return mu


cdef inline Py_ssize_t _bucket_of(double x) noexcept nogil:
    cdef uint64_t bits
    memcpy(&bits, &x, sizeof(double))
    return <Py_ssize_t>(bits >> BUCKET_SHIFT)


cdef inline double _bucket_floor(Py_ssize_t b) noexcept nogil:
    """The smallest double of bucket ``b``."""
    cdef uint64_t bits = (<uint64_t>b) << BUCKET_SHIFT
    cdef double x
    memcpy(&x, &bits, sizeof(double))
    return x


cdef Py_ssize_t _bucket(const double[::1] score, int64_t* counts, double* sums,
                        bint* bad) noexcept nogil:
    """Count and sum the positive scores per bucket; flag negative or non-finite ones."""
    cdef Py_ssize_t i, b, m = 0
    cdef double x
    cdef bint ok = True
    for i in range(score.shape[0]):
        x = score[i]
        if x > 0.0 and isfinite(x):
            b = _bucket_of(x)
            counts[b] += 1
            sums[b] += x
            m += 1
        elif not x == 0.0:              # negative, NaN or infinite
            ok = False
    bad[0] = not ok
    return m


cdef double _threshold(const double[::1] score, const int64_t* counts, double* sums,
                       double target, double* a) noexcept nogil:
    """The body of :func:`mvs_threshold`, given the per-bucket counts and sums."""
    cdef Py_ssize_t i, b, j = 0, k = 0
    cdef double below = 0.0, n_above = 0.0, x
    # sums[b] <- sum of the scores in the buckets below b (accumulated bottom-up, so small
    # scores are not swamped by large ones)
    for b in range(N_BUCKETS):
        x = sums[b]
        sums[b] = below
        below += x
    # The largest bucket j whose floor gives sum_i min(1, score_i / floor) >= target.
    for b in range(N_BUCKETS - 1, -1, -1):
        if counts[b] == 0:
            continue
        n_above += counts[b]
        if sums[b] / _bucket_floor(b) + n_above >= target:
            j = b
            n_above -= counts[b]
            break
    for i in range(score.shape[0]):     # the candidates: bucket j's scores
        x = score[i]
        a[k] = x
        k += (x > 0.0) & (_bucket_of(x) == j)
    return _quickselect(a, k, target, n_above, sums[j])


cdef double _quickselect(double* a, Py_ssize_t m, double target, double n_large,
                         double sum_small) noexcept nogil:
    """Solve for ``mu`` among candidates ``a[:m]`` by three-way quickselect.

    Each round takes a pivot ``v`` (median of three), partitions the candidates into
    ``< v``, ``== v`` and ``> v``, and evaluates the left-hand side at ``mu = v`` with
    everything already decided (``n_large`` rows with probability 1, ``sum_small`` the sum of
    the scores known to be below ``mu``); as it decreases in ``mu``, one side is settled per
    round.
    """
    cdef Py_ssize_t i, lo = 0, hi = m, lt, gt
    cdef double v, s_lt, estimate
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


cdef enum:
    BLOCK = 1 << 16     # rows per parallel block: fixed, so results never depend on n_jobs


cdef inline Py_ssize_t _n_blocks(Py_ssize_t n) noexcept nogil:
    return (n + BLOCK - 1) // BLOCK


cdef Py_ssize_t _compact(idx_t* rows, double* weight, const Py_ssize_t* count,
                         Py_ssize_t nb) noexcept nogil:
    """Join the blocks' selections: block ``b`` wrote its ``count[b]`` rows (and weights, if
    ``weight`` is not NULL) from position ``b * BLOCK``; move them, in block order, to follow
    each other. Moving in order never overwrites a block not yet moved."""
    cdef Py_ssize_t blk, k = 0
    for blk in range(nb):
        if k != blk * BLOCK:
            memmove(rows + k, rows + blk * BLOCK, count[blk] * sizeof(idx_t))
            if weight != NULL:
                memmove(weight + k, weight + blk * BLOCK, count[blk] * sizeof(double))
        k += count[blk]
    return k


def uniforms(uint64_t seed, double[::1] out, Py_ssize_t start=0, int n_threads=1):
    """``out[j]`` = the uniform draw of row ``start + j`` under ``seed``, in [0, 1).

    These are the numbers :func:`bernoulli_select`, :func:`mvs_select` and
    :func:`goss_select` compare with (see ``counter_rng.pxd``): exposed for the reference
    implementations and for samplers written in Python.
    """
    cdef Py_ssize_t j, n = out.shape[0]
    if start < 0:
        raise ValueError(f"start={start!r} must be >= 0")
    with nogil:
        for j in prange(n, schedule="static", num_threads=n_threads):
            out[j] = uniform01(seed, <uint64_t>(start + j))
    return np.asarray(out)


def bernoulli_select(double p, uint64_t seed, idx_t[::1] out_rows, int n_threads=1):
    """Keep each row ``i < n = len(out_rows)`` when its uniform draw is below ``p``.

    One pass over fixed blocks of rows, in parallel: each block writes its kept rows, branch
    free, from its own start; the blocks are then joined in order. The output does not depend
    on ``n_threads``.

    Parameters
    ----------
    p : keep probability.
    seed : the draw's seed (see :func:`uniforms`).
    out_rows : OUT int32 (n,): the kept rows, in increasing order, in the first ``k`` entries.
    n_threads : OpenMP threads.

    Returns
    -------
    k : number of kept rows.
    """
    cdef Py_ssize_t n = out_rows.shape[0]
    cdef Py_ssize_t blk, i, lo, hi, c, nb = _n_blocks(n)
    if nb == 0:
        return 0
    cdef Py_ssize_t[::1] count = np.zeros(nb, dtype=np.intp)
    with nogil:
        for blk in prange(nb, schedule="static", num_threads=n_threads):
            lo = blk * BLOCK
            hi = lo + BLOCK if lo + BLOCK < n else n
            c = lo
            for i in range(lo, hi):
                out_rows[c] = <idx_t>i
                c = c + (uniform01(seed, <uint64_t>i) < p)
            count[blk] = c - lo
        c = _compact(&out_rows[0], NULL, &count[0], nb)
    return c


def mvs_select(const double[::1] score, double mu, uint64_t seed, idx_t[::1] out_rows,
               double[::1] out_weight, int n_threads=1):
    """Keep row ``i`` when ``score_i >= mu`` or its uniform draw ``u_i`` has
    ``u_i * mu < score_i`` (probability ``p_i = min(1, score_i / mu)``), with weight
    ``1/p_i``, computed as ``mu / score_i`` (exactly 1 when ``score_i >= mu``).

    One pass over fixed blocks of rows, in parallel (branch free), then the blocks are joined
    in order (see :func:`bernoulli_select`). The output does not depend on ``n_threads``.

    Parameters
    ----------
    score : IN float64 (n,), >= 0.
    mu : threshold (> 0), e.g. from :func:`mvs_threshold`.
    seed : the draw's seed (see :func:`uniforms`).
    out_rows : OUT int32 (n,): the kept rows, in increasing order, in the first ``k`` entries.
    out_weight : OUT float64 (n,): their weights (exactly 1 where ``p_i == 1``).
    n_threads : OpenMP threads.

    Returns
    -------
    k : number of kept rows.
    """
    cdef Py_ssize_t n = score.shape[0]
    cdef Py_ssize_t blk, i, j, lo, hi, c, nb = _n_blocks(n)
    cdef double s
    if out_rows.shape[0] < n or out_weight.shape[0] < n:
        raise ValueError("the outputs must hold n values")
    if not mu > 0.0:
        raise ValueError(f"mu={mu!r} must be positive")
    if nb == 0:
        return 0
    cdef Py_ssize_t[::1] count = np.zeros(nb, dtype=np.intp)
    with nogil:
        for blk in prange(nb, schedule="static", num_threads=n_threads):
            lo = blk * BLOCK
            hi = lo + BLOCK if lo + BLOCK < n else n
            c = lo
            for i in range(lo, hi):       # p_i = min(1, s / mu) > u, division-free
                s = score[i]
                out_rows[c] = <idx_t>i
                c = c + ((s >= mu) | (uniform01(seed, <uint64_t>i) * mu < s))
            count[blk] = c - lo
            for j in range(lo, c):          # the kept rows' weights 1 / p_i
                s = score[out_rows[j]]
                out_weight[j] = mu / (s if s < mu else mu)
        c = _compact(&out_rows[0], &out_weight[0], &count[0], nb)
    return c


def abs_sums(const double[::1] a, const double[::1] b, int n_threads=1):
    """``(sum |a|, sum |b|)``: per-block partial sums in parallel, added in block order (the
    result does not depend on ``n_threads``)."""
    cdef Py_ssize_t n = a.shape[0], blk, i, lo, hi, nb = _n_blocks(a.shape[0])
    cdef double sa, sb, ta = 0.0, tb = 0.0
    if b.shape[0] != n:
        raise ValueError("a and b must have the same length")
    cdef double[:, ::1] part = np.zeros((nb, 2))
    with nogil:
        for blk in prange(nb, schedule="static", num_threads=n_threads):
            lo = blk * BLOCK
            hi = lo + BLOCK if lo + BLOCK < n else n
            sa = 0.0
            sb = 0.0
            for i in range(lo, hi):
                sa = sa + fabs(a[i])
                sb = sb + fabs(b[i])
            part[blk, 0] = sa
            part[blk, 1] = sb
        for blk in range(nb):
            ta += part[blk, 0]
            tb += part[blk, 1]
    return ta, tb


def mvs_scores(const double[::1] gradient, const double[::1] hessian, double lam,
               double[::1] out, int n_threads=1):
    """``out = sqrt(g^2 + lam * h^2)`` (parallel); returns the number of positive scores.

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
        for i in prange(n, schedule="static", num_threads=n_threads):
            g = gradient[i]
            h = hessian[i]
            r = sqrt(g * g + lam * (h * h))
            out[i] = r
            n_pos += r > 0.0
            total += r              # only its finiteness is used: order does not matter
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


def goss_select(const double[::1] score, double threshold, const int64_t[::1] take,
                double factor, uint64_t seed, idx_t[::1] out_rows, double[::1] out_weight,
                int n_threads=1):
    """GOSS: every row with ``score >= threshold`` (weight 1), plus, in each fixed block of
    rows, exactly ``take[b]`` of the block's rows below the threshold, uniformly without
    replacement, with weight ``factor``.

    Within a block the draw is Knuth's selection sampling (Algorithm S): the ``j``-th row
    below the threshold is kept when its uniform draw times the number of such rows still to
    come is below the number still needed, which yields every subset of ``take[b]`` rows with
    the same probability. When ``take`` is a multivariate hypergeometric draw of the total
    over the blocks' counts (:func:`goss_rest_counts`), the union is a uniform subset of that
    total over all the rows below the threshold. Blocks run in parallel and are joined in
    order: the output does not depend on ``n_threads``.

    Parameters
    ----------
    score : IN float64 (n,).
    threshold : the ``top_k``-th largest score.
    take : IN int64 (n_blocks,) rows to draw per block, at most the block's count.
    factor : weight of the drawn rows (``n_rest / other_k``).
    seed : the draw's seed (see :func:`uniforms`).
    out_rows, out_weight : OUT (n,), the kept rows in increasing order and their weights.
    n_threads : OpenMP threads.

    Returns
    -------
    k : number of kept rows.
    """
    cdef Py_ssize_t n = score.shape[0], nb = _n_blocks(score.shape[0])
    cdef Py_ssize_t blk, i, lo, hi, c
    cdef int64_t need, left
    cdef bint top, other
    if out_rows.shape[0] < n or out_weight.shape[0] < n:
        raise ValueError("the outputs must hold n values")
    if take.shape[0] != nb:
        raise ValueError(f"take must hold one count per block of {BLOCK} rows ({nb})")
    if nb == 0:
        return 0
    counts = goss_rest_counts(score, threshold, n_threads)
    cdef int64_t[::1] rest = counts
    for blk in range(nb):
        if not 0 <= take[blk] <= rest[blk]:
            raise ValueError(f"take[{blk}]={take[blk]} must be in [0, {rest[blk]}], the "
                             "block's rows below the threshold")
    cdef Py_ssize_t[::1] count = np.zeros(nb, dtype=np.intp)
    with nogil:
        for blk in prange(nb, schedule="static", num_threads=n_threads):
            lo = blk * BLOCK
            hi = lo + BLOCK if lo + BLOCK < n else n
            need = take[blk]
            left = rest[blk]
            c = lo
            for i in range(lo, hi):
                top = score[i] >= threshold
                other = (not top) & (uniform01(seed, <uint64_t>i) * left < need)
                need = need - other
                left = left - (not top)
                out_rows[c] = <idx_t>i
                out_weight[c] = 1.0 if top else factor
                c = c + (top | other)
            count[blk] = c - lo
        c = _compact(&out_rows[0], &out_weight[0], &count[0], nb)
    return c
