"""Order statistics of non-negative scores: the MVS threshold and the k-th largest score.

Both bucket the scores by the top 16 bits of their IEEE-754 representation, which is monotone
in the value for non-negative doubles (sign, exponent and 4 mantissa bits: a bucket spans a
factor of at most 1 + 1/16). One parallel pass counts the scores per bucket (and, for MVS,
sums them); a scan of the buckets finds the one holding the answer; a second parallel pass
copies that bucket's scores out, and a three-way quickselect among them finishes: expected
O(n) on any input.

``kth_largest_near`` and ``mvs_threshold_near`` take a guess, a bracket ``[lo, hi)`` (a
sampler's last threshold, widened): one pass counts the scores below and above it and copies
those inside, and a selection among those finishes when the answer is inside; otherwise they
return NaN and the caller runs the full kernel.

Determinism: each of the fixed chunks of rows has its own tables. Counts are integers and the
sums are kept exactly, as integer sums of the 53-bit significands (every score of a bucket
has the same exponent), so the tables merge to the same totals whatever the number of
threads, and so does the answer. The near variants work on fixed blocks of rows, with a
fixed-order floating-point sum for MVS: their answers do not depend on the thread count either.
"""
import numpy as np

from cython.parallel cimport prange
from libc.float cimport DBL_MAX
from libc.math cimport NAN, ldexp
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, memmove

from .common cimport bits_double, double_bits

cdef enum:
    BUCKET_SHIFT = 48                  # keep the top 16 bits of a non-negative double
    N_BUCKETS = 1 << 15                # the sign bit is 0
    BLOCK = 1 << 16                    # rows per block of the candidate pass
    RADIX_BITS = 12                    # bits per radix step of the k-th largest
    RADIX_MIN = 4096                   # candidates worth a radix step (else quickselect)


cdef uint64_t SIGN_BIT = (<uint64_t>1) << 63


cdef struct Tables:
    int64_t* count
    uint64_t* sig_hi                   # sums of the significands' bits 32..52
    uint64_t* sig_lo                   # sums of their bits 0..31


cdef inline double _bucket_floor(Py_ssize_t b) noexcept nogil:
    """The smallest double of bucket ``b``."""
    cdef uint64_t bits = (<uint64_t>b) << BUCKET_SHIFT
    cdef double x
    memcpy(&x, &bits, sizeof(double))
    return x


cdef inline double _bucket_sum(Py_ssize_t b, uint64_t hi, uint64_t lo) noexcept nogil:
    """The sum of bucket ``b``'s scores from the sums of their significands' two halves."""
    cdef int e = <int>(b >> 4)                     # the biased exponent of every score in b
    cdef int scale = (e if e > 0 else 1) - 1075    # value = significand * 2**scale
    return ldexp(<double>hi, 32 + scale) + ldexp(<double>lo, scale)


cdef int _alloc(Tables* t, Py_ssize_t n_tables, bint sums) except -1:
    t.count = <int64_t*>calloc(n_tables * N_BUCKETS, sizeof(int64_t))
    t.sig_hi = <uint64_t*>calloc(n_tables * N_BUCKETS if sums else 1, sizeof(uint64_t))
    t.sig_lo = <uint64_t*>calloc(n_tables * N_BUCKETS if sums else 1, sizeof(uint64_t))
    if t.count == NULL or t.sig_hi == NULL or t.sig_lo == NULL:
        _free(t)
        raise MemoryError()
    return 0


cdef void _free(Tables* t) noexcept nogil:
    free(t.count)
    free(t.sig_hi)
    free(t.sig_lo)
    t.count = NULL
    t.sig_hi = NULL
    t.sig_lo = NULL


cdef bint _bucket_pass(const double* score, Py_ssize_t n, Tables* t, Py_ssize_t n_chunks,
                       bint sums, Py_ssize_t* zeros, int n_threads) noexcept nogil:
    """Count (and sum) the scores per bucket, chunk ``c`` into table ``c``, then merge the
    tables into table 0; ``zeros`` gets the number of zero scores (they are counted in bucket
    0 too, with the smallest subnormals). Returns False when a score is negative, NaN or
    infinite."""
    cdef Py_ssize_t c, i, lo, hi, b, n_zero = 0
    cdef uint64_t bits, sig
    cdef int64_t* cnt
    cdef uint64_t* shi
    cdef uint64_t* slo
    cdef int bad = 0
    for c in prange(n_chunks, schedule="static", num_threads=n_threads):
        lo = c * n // n_chunks
        hi = (c + 1) * n // n_chunks
        cnt = t.count + c * N_BUCKETS
        shi = t.sig_hi + c * N_BUCKETS
        slo = t.sig_lo + c * N_BUCKETS
        for i in range(lo, hi):
            bits = double_bits(score[i])
            if bits >= (<uint64_t>0x7FF) << 52:        # negative (sign set), inf or NaN
                if bits != SIGN_BIT:
                    bad += 1
                    continue
                bits = 0                                # -0.0 is a zero
            n_zero += bits == 0
            b = <Py_ssize_t>(bits >> BUCKET_SHIFT)
            cnt[b] += 1
            if sums:
                sig = bits & ((<uint64_t>1 << 52) - 1)
                if bits >> 52:                          # normal: the implicit leading 1
                    sig = sig | (<uint64_t>1 << 52)
                shi[b] += sig >> 32
                slo[b] += sig & <uint64_t>0xFFFFFFFF
    for c in range(1, n_chunks):
        for b in range(N_BUCKETS):
            t.count[b] += t.count[c * N_BUCKETS + b]
            if sums:
                t.sig_hi[b] += t.sig_hi[c * N_BUCKETS + b]
                t.sig_lo[b] += t.sig_lo[c * N_BUCKETS + b]
    zeros[0] = n_zero
    return bad == 0


cdef Py_ssize_t _candidates(const double* score, Py_ssize_t n, Py_ssize_t bucket,
                            bint positive, double* out, Py_ssize_t* block_count,
                            Py_ssize_t* block_below, int n_threads) noexcept nogil:
    """Copy the scores of ``bucket`` (only the positive ones when ``positive``) to ``out``, in
    row order; return their number (-1: out of memory). Unless NULL, ``block_count[b]`` gets
    the number of candidates of block ``b`` (its rows ``b * BLOCK ..``), and ``block_below[b]``
    the number of its rows in lower buckets."""
    cdef Py_ssize_t nb = (n + BLOCK - 1) // BLOCK
    cdef Py_ssize_t blk, i, lo, hi, c, below, k = 0
    cdef Py_ssize_t b
    cdef double x
    cdef Py_ssize_t* count = <Py_ssize_t*>calloc(nb if nb > 0 else 1, sizeof(Py_ssize_t))
    if count == NULL:
        return -1
    for blk in prange(nb, schedule="static", num_threads=n_threads):
        lo = blk * BLOCK
        hi = lo + BLOCK if lo + BLOCK < n else n
        c = lo
        below = 0
        for i in range(lo, hi):
            # A branch, not a branch-free store of every score: a bucket holds few of the
            # scores (or nearly all, when they tie), so it is predictable, and the pass then
            # writes only the candidates instead of n doubles.
            x = score[i]
            b = <Py_ssize_t>((double_bits(x) & ~SIGN_BIT) >> BUCKET_SHIFT)
            if block_below != NULL:
                below = below + (b < bucket)
            if b == bucket and (not positive or x > 0.0):
                out[c] = x
                c = c + 1
        count[blk] = c - lo
        if block_below != NULL:
            block_below[blk] = below
    for blk in range(nb):
        if k != blk * BLOCK:
            memmove(out + k, out + blk * BLOCK, count[blk] * sizeof(double))
        k += count[blk]
        if block_count != NULL:
            block_count[blk] = count[blk]
    free(count)
    return k


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


cdef inline void _partition3(double* a, Py_ssize_t lo, Py_ssize_t hi, double v,
                             Py_ssize_t* lt_out, Py_ssize_t* gt_out,
                             double* sum_lt) noexcept nogil:
    """Three-way partition of ``a[lo:hi]`` around ``v``: ``[lo, lt) < v``, ``[lt, gt) == v``,
    ``[gt, hi) > v``; ``sum_lt`` gets the sum of the part below ``v``."""
    cdef Py_ssize_t i = lo, lt = lo, gt = hi
    cdef double s = 0.0
    while i < gt:
        if a[i] < v:
            s += a[i]
            _swap(a, i, lt)
            lt += 1
            i += 1
        elif a[i] > v:
            gt -= 1
            _swap(a, i, gt)
        else:
            i += 1
    lt_out[0] = lt
    gt_out[0] = gt
    sum_lt[0] = s


# -- MVS threshold ----------------------------------------------------------------------------
def mvs_threshold(const double[::1] score, double target, double[::1] scratch,
                  int n_threads=1):
    """The ``mu`` solving ``sum_i min(1, score_i / mu) == target``, exactly.

    The left-hand side decreases in ``mu``. Scanning the buckets from the top finds the one
    holding ``mu``: every score above it has probability 1, every score below it contributes
    ``score / mu``; a quickselect among that bucket's scores finishes (see the module notes).

    Parameters
    ----------
    score : IN float64 (n,), finite and >= 0.
    target : expected sample size, ``0 < target < #{score > 0}``.
    scratch : OUT float64 (n,) work buffer (overwritten).
    n_threads : OpenMP threads; the result does not depend on it.

    Returns
    -------
    mu : float, > 0. Rows with ``score >= mu`` have probability 1, the others ``score/mu``.
    """
    cdef Py_ssize_t n = score.shape[0]
    cdef Py_ssize_t n_chunks = n_threads if n_threads > 1 else 1
    cdef Py_ssize_t m = 0, zeros = 0
    cdef double mu = 0.0
    cdef bint ok = True
    cdef Tables t
    if scratch.shape[0] < n:
        raise ValueError("scratch must hold n values")
    if n == 0:
        raise ValueError(f"target={target!r} must be in (0, 0), the number of rows with a "
                         "positive score")
    _alloc(&t, n_chunks, True)
    with nogil:
        ok = _bucket_pass(&score[0], n, &t, n_chunks, True, &zeros, n_threads)
        m = n - zeros if ok else 0
        if ok and 0.0 < target < m:
            mu = _threshold(&score[0], n, &t, target, &scratch[0], n_threads)
    _free(&t)
    if not ok:
        raise ValueError("scores must be finite and non-negative")
    if not 0.0 < target < m:
        raise ValueError(f"target={target!r} must be in (0, {m}), the number of rows "
                         "with a positive score")
    if mu < 0.0:
        raise MemoryError()
    return mu


cdef double _threshold(const double* score, Py_ssize_t n, Tables* t, double target, double* a,
                       int n_threads) noexcept nogil:
    """The body of :func:`mvs_threshold`, given the merged tables (-1: out of memory)."""
    cdef Py_ssize_t b, j = 0, k
    cdef double below = 0.0, n_above = 0.0, x
    cdef double* sums = <double*>calloc(N_BUCKETS, sizeof(double))
    if sums == NULL:
        return -1.0
    # sums[b] <- sum of the scores in the buckets below b (accumulated bottom-up, so small
    # scores are not swamped by large ones)
    for b in range(N_BUCKETS):
        x = _bucket_sum(b, t.sig_hi[b], t.sig_lo[b]) if t.count[b] else 0.0
        sums[b] = below
        below += x
    # The largest bucket j whose floor gives sum_i min(1, score_i / floor) >= target: bucket
    # 0 (floor 0+, every positive score with probability 1) if no other does, as
    # #{score > 0} > target. (Bucket 0's count includes the zeros: it is added and taken back
    # here, and zeros never become candidates.)
    for b in range(N_BUCKETS - 1, -1, -1):
        if t.count[b] == 0:
            continue
        n_above += t.count[b]
        if b == 0 or sums[b] / _bucket_floor(b) + n_above >= target:
            j = b
            n_above -= t.count[b]
            break
    below = sums[j]
    free(sums)
    k = _candidates(score, n, j, True, a, NULL, NULL, n_threads)
    if k < 0:
        return -1.0
    return _mvs_quickselect(a, k, target, n_above, below)


cdef double _mvs_quickselect(double* a, Py_ssize_t m, double target, double n_large,
                             double sum_small) noexcept nogil:
    """Solve for ``mu`` among candidates ``a[:m]`` by three-way quickselect.

    Each round takes a pivot ``v`` (median of three), partitions the candidates into
    ``< v``, ``== v`` and ``> v``, and evaluates the left-hand side at ``mu = v`` with
    everything already decided (``n_large`` rows with probability 1, ``sum_small`` the sum of
    the scores known to be below ``mu``); as it decreases in ``mu``, one side is settled per
    round.
    """
    cdef Py_ssize_t lo = 0, hi = m, lt, gt
    cdef double v, s_lt, estimate
    while lo < hi:
        v = _median3(a[lo], a[lo + (hi - lo) // 2], a[hi - 1])
        _partition3(a, lo, hi, v, &lt, &gt, &s_lt)
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


# -- k-th largest -----------------------------------------------------------------------------
def kth_largest(const double[::1] score, Py_ssize_t k, double[::1] scratch, int n_threads=1,
                int64_t[::1] rest=None):
    """The ``k``-th largest score (``k = 1``: the maximum), in expected O(n).

    Parameters
    ----------
    score : IN float64 (n,), finite and >= 0.
    k : rank, ``1 <= k <= n``.
    scratch : OUT float64 (n,) work buffer (overwritten).
    n_threads : OpenMP threads; the result does not depend on it.
    rest : OUT int64 (ceil(n / 65536),), optional
        Each block of 65536 rows' number of scores below the answer (what
        ``_sampling.goss_rest_counts`` returns, without its pass over the scores).
    """
    cdef Py_ssize_t n = score.shape[0], nb = (score.shape[0] + BLOCK - 1) // BLOCK
    cdef Py_ssize_t n_chunks = n_threads if n_threads > 1 else 1
    cdef Py_ssize_t b, j = 0, m = 0, above = 0, zeros = 0
    cdef double v = 0.0
    cdef bint ok = True, want_rest = rest is not None
    cdef Tables t
    cdef Py_ssize_t* per_block = NULL
    cdef double* a = NULL
    if scratch.shape[0] < n:
        raise ValueError("scratch must hold n values")
    if not 1 <= k <= n:
        raise ValueError(f"k={k!r} must be in [1, {n}]")
    if want_rest and rest.shape[0] != nb:
        raise ValueError(f"rest must hold one count per block of {BLOCK} rows ({nb})")
    if want_rest:
        per_block = <Py_ssize_t*>calloc(2 * nb, sizeof(Py_ssize_t))
        if per_block == NULL:
            raise MemoryError()
    _alloc(&t, n_chunks, False)
    with nogil:
        ok = _bucket_pass(&score[0], n, &t, n_chunks, False, &zeros, n_threads)
        if ok:
            for b in range(N_BUCKETS - 1, -1, -1):   # the bucket holding the k-th largest
                if above + t.count[b] >= k:
                    j = b
                    break
                above += t.count[b]
            m = _candidates(&score[0], n, j, False, &scratch[0], per_block,
                            per_block + nb if want_rest else NULL, n_threads)
            if m >= 0 and want_rest:
                # the selection reorders its input: it works on a copy of the candidates,
                # which stay in row order for the blocks' counts
                a = <double*>malloc((m if m > 0 else 1) * sizeof(double))
                if a == NULL:
                    m = -1
                else:
                    memcpy(a, &scratch[0], m * sizeof(double))
            if m >= 0:
                v = _kth_largest(a if want_rest else &scratch[0], m, k - above, BUCKET_SHIFT)
            if m >= 0 and want_rest:
                _rest_counts(&scratch[0], per_block, per_block + nb, nb, v, &rest[0])
    _free(&t)
    free(a)
    free(per_block)
    _report(ok, m < 0)
    return v


cdef int _report(bint ok, bint out_of_memory) except -1:
    """The errors of a pass over the scores, raised once its buffers are freed: a negative,
    NaN or infinite score (``ok`` False), else a failed allocation."""
    if not ok:
        raise ValueError("scores must be finite and non-negative")
    if out_of_memory:
        raise MemoryError()
    return 0


cdef void _rest_counts(const double* cand, const Py_ssize_t* count, const Py_ssize_t* below,
                       Py_ssize_t nb, double v, int64_t* rest) noexcept nogil:
    """``rest[b]``: block ``b``'s scores below ``v``, from its ``below[b]`` scores known to be
    below and its ``count[b]`` candidates (``cand``, the blocks' candidates in row order)."""
    cdef Py_ssize_t b, i, start = 0
    for b in range(nb):
        rest[b] = below[b]
        for i in range(start, start + count[b]):
            rest[b] += cand[i] < v
        start += count[b]


cdef Py_ssize_t _radix_narrow(double* a, Py_ssize_t m, Py_ssize_t* k,
                              Py_ssize_t shift) noexcept nogil:
    """One radix step of the k-th largest: count ``a[:m]`` by their bits ``shift ..
    shift + RADIX_BITS`` (the bits above agree), keep, in place, only the values of the digit
    holding the ``k``-th largest and rank ``k`` among them; return their number (``-m``: out
    of memory, ``a`` untouched). The order of non-negative doubles is that of their bits."""
    cdef Py_ssize_t i, d, digit = 0, above = 0, c = 0
    cdef uint64_t mask = (<uint64_t>1 << RADIX_BITS) - 1
    cdef Py_ssize_t* count = <Py_ssize_t*>calloc(<size_t>1 << RADIX_BITS, sizeof(Py_ssize_t))
    if count == NULL:
        return -m
    for i in range(m):
        count[(double_bits(a[i]) >> shift) & mask] += 1
    for d in range(mask, -1, -1):       # from the largest digit down
        if above + count[d] >= k[0]:
            digit = d
            break
        above += count[d]
    free(count)
    for i in range(m):                  # branch-free in-place filter
        a[c] = a[i]
        c = c + (<Py_ssize_t>((double_bits(a[i]) >> shift) & mask) == digit)
    k[0] -= above
    return c


cdef double _kth_largest(double* a, Py_ssize_t m, Py_ssize_t k,
                         Py_ssize_t shift) noexcept nogil:
    """The ``k``-th largest of ``a[:m]`` (``1 <= k <= m``, non-negative, their bits from
    ``shift`` up agreeing: 64 when nothing is known, ``BUCKET_SHIFT`` within one bucket):
    radix steps narrow a large set (:func:`_radix_narrow`), then a three-way quickselect
    finishes."""
    cdef Py_ssize_t lo = 0, hi, lt, gt
    cdef double v, s
    while m > RADIX_MIN and shift > 0:
        shift -= RADIX_BITS
        m = _radix_narrow(a, m, &k, shift)
        if m < 0:                   # out of memory: quickselect the whole set
            m = -m
            break
    hi = m
    while True:
        v = _median3(a[lo], a[lo + (hi - lo) // 2], a[hi - 1])
        _partition3(a, lo, hi, v, &lt, &gt, &s)
        if k <= hi - gt:            # among the ones above v
            lo = gt
        elif k <= hi - lt:          # v itself
            return v
        else:                       # below v: skip the ones >= v
            k -= hi - lt
            hi = lt


# -- near a guess -----------------------------------------------------------------------------
# A sampler's threshold moves little from one boosting iteration to the next. Given a bracket
# [lo, hi) around the last one, one pass over the scores counts the rows below and above it
# and copies the few inside; when the answer is inside, a selection among those finishes, and
# the bucket pass and its tables are not needed. When it is not, the caller falls back to the
# functions above. Blocks of rows are fixed: the answers do not depend on the thread count.

cdef inline void _bracket_row(double x, uint64_t lo_b, uint64_t width, bint sums,
                              uint64_t* bad, Py_ssize_t* below, double* acc, double* out,
                              Py_ssize_t* c) noexcept nogil:
    """One row of :func:`_bracket_block` (inlined, so its counters stay in registers)."""
    cdef uint64_t u = double_bits(x)
    u = 0 if u == SIGN_BIT else u               # -0.0 is a zero
    bad[0] = bad[0] | (u >= (<uint64_t>0x7FF) << 52)     # negative (sign set), inf or NaN
    cdef uint64_t is_below = u < lo_b
    below[0] = below[0] + is_below
    if sums:
        # x (as its bits u: -0.0 becomes +0.0) or +0.0, by a mask: a branch on the compare
        # would be mispredicted on a large share of the rows
        acc[0] = acc[0] + bits_double(u & (<uint64_t>0 - is_below))
    # a branch: few scores are inside, so it is predictable and only they are written
    if u - lo_b < width:                        # lo <= x < hi (unsigned wrap-around)
        out[c[0]] = x
        c[0] = c[0] + 1


cdef int _bracket_block(const double* score, Py_ssize_t start, Py_ssize_t stop, double lo,
                        double hi, double* out, bint sums, Py_ssize_t* count,
                        Py_ssize_t* below, Py_ssize_t* above, double* total) noexcept nogil:
    """:func:`_bracket_pass` on rows ``start .. stop`` (serial); returns 1 if a score is
    negative, NaN or infinite.

    The comparisons are on the scores' bits (integer compares; the order of non-negative
    doubles is that of their bits): floating-point compares go through one execution port
    and would bound the pass at several cycles per row. Rows go four at a time, each to its
    own partial sum, so the additions do not wait for each other."""
    cdef Py_ssize_t i = start, c = start, n_below = 0
    cdef uint64_t lo_b = double_bits(lo), width = double_bits(hi) - double_bits(lo), bad = 0
    cdef double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0
    while i + 4 <= stop:
        _bracket_row(score[i], lo_b, width, sums, &bad, &n_below, &a0, out, &c)
        _bracket_row(score[i + 1], lo_b, width, sums, &bad, &n_below, &a1, out, &c)
        _bracket_row(score[i + 2], lo_b, width, sums, &bad, &n_below, &a2, out, &c)
        _bracket_row(score[i + 3], lo_b, width, sums, &bad, &n_below, &a3, out, &c)
        i += 4
    while i < stop:
        _bracket_row(score[i], lo_b, width, sums, &bad, &n_below, &a0, out, &c)
        i += 1
    count[0] = c - start
    below[0] = n_below
    above[0] = (stop - start) - n_below - (c - start)
    total[0] = (a0 + a1) + (a2 + a3)
    return <int>bad


cdef Py_ssize_t _bracket_pass(const double* score, Py_ssize_t n, double lo, double hi,
                              double* out, Py_ssize_t* block_stats, double* block_sum,
                              bint sums, Py_ssize_t* n_above, bint* ok,
                              int n_threads) noexcept nogil:
    """One parallel pass over fixed blocks of rows: copy the scores in ``[lo, hi)`` to
    ``out``, in row order, and return their number. For block ``b`` (of ``nb``),
    ``block_stats[b]`` gets its candidates, ``block_stats[nb + b]`` its rows below ``lo``,
    ``block_stats[2 nb + b]`` its rows at or above ``hi`` and, when ``sums``, ``block_sum[b]``
    the sum of its scores below ``lo`` (four partial sums, see :func:`_bracket_block`, added
    in a fixed order). ``n_above`` gets the rows at or above ``hi``; ``ok``
    is False when a score is negative, NaN or infinite."""
    cdef Py_ssize_t nb = (n + BLOCK - 1) // BLOCK
    cdef Py_ssize_t blk, start, stop, k = 0
    cdef int bad = 0
    for blk in prange(nb, schedule="static", num_threads=n_threads):
        start = blk * BLOCK
        stop = start + BLOCK if start + BLOCK < n else n
        bad += _bracket_block(score, start, stop, lo, hi, out, sums, block_stats + blk,
                              block_stats + nb + blk, block_stats + 2 * nb + blk,
                              block_sum + blk)
    n_above[0] = 0
    for blk in range(nb):
        if k != blk * BLOCK:
            memmove(out + k, out + blk * BLOCK, block_stats[blk] * sizeof(double))
        k += block_stats[blk]
        n_above[0] += block_stats[2 * nb + blk]
    ok[0] = bad == 0
    return k


cdef int _bracket_buffers(Py_ssize_t nb, Py_ssize_t** per_block,
                          double** block_sum) except -1:
    """Zeroed per-block tables of :func:`_bracket_pass` for ``nb`` blocks (three counts and
    a sum each); the caller frees both."""
    per_block[0] = <Py_ssize_t*>calloc(3 * nb, sizeof(Py_ssize_t))
    block_sum[0] = <double*>calloc(nb, sizeof(double))
    if per_block[0] == NULL or block_sum[0] == NULL:
        free(per_block[0])
        free(block_sum[0])
        raise MemoryError()
    return 0


cdef int _check_bracket(double lo, double hi, Py_ssize_t n, Py_ssize_t n_scratch) except -1:
    if not (0.0 < lo <= hi and hi <= DBL_MAX):
        raise ValueError(f"the bracket [lo={lo!r}, hi={hi!r}) must have 0 < lo <= hi, finite")
    if n_scratch < n:
        raise ValueError("scratch must hold n values")
    return 0


def kth_largest_near(const double[::1] score, Py_ssize_t k, double lo, double hi,
                     double[::1] scratch, int n_threads=1, int64_t[::1] rest=None):
    """:func:`kth_largest` when the answer lies in ``[lo, hi)``, else NaN.

    One pass over the scores replaces the bucket and candidate passes (see the notes above);
    the answer, and ``rest``, are the same as :func:`kth_largest`'s whenever it is not NaN.

    Parameters
    ----------
    score : IN float64 (n,), finite and >= 0.
    k : rank, ``1 <= k <= n``.
    lo, hi : the bracket, ``0 < lo <= hi`` (finite).
    scratch : OUT float64 (n,) work buffer (overwritten).
    n_threads : OpenMP threads; the result does not depend on it.
    rest : OUT int64 (ceil(n / 65536),), optional, as in :func:`kth_largest` (untouched when
        the answer is NaN).
    """
    return _kth_near(&score[0] if score.shape[0] else NULL, score.shape[0], k, lo, hi,
                     scratch, n_threads, rest)


cdef double _kth_near(const double* score, Py_ssize_t n, Py_ssize_t k, double lo, double hi,
                      double[::1] scratch, int n_threads, int64_t[::1] rest) except? -1.0:
    """The body of :func:`kth_largest_near`."""
    cdef Py_ssize_t nb = (n + BLOCK - 1) // BLOCK
    cdef Py_ssize_t m = 0, above = 0
    cdef double v = NAN
    cdef bint ok = True, want_rest = rest is not None
    cdef Py_ssize_t* per_block = NULL
    cdef double* a = NULL
    _check_bracket(lo, hi, n, scratch.shape[0])
    if not 1 <= k <= n:
        raise ValueError(f"k={k!r} must be in [1, {n}]")
    if want_rest and rest.shape[0] != nb:
        raise ValueError(f"rest must hold one count per block of {BLOCK} rows ({nb})")
    cdef double* block_sum = NULL
    _bracket_buffers(nb, &per_block, &block_sum)
    with nogil:
        m = _bracket_pass(score, n, lo, hi, &scratch[0], per_block, block_sum, False,
                          &above, &ok, n_threads)
        if ok and m > 0 and above < k <= above + m:
            # the selection reorders its input: a copy, so the candidates stay in row order
            a = <double*>malloc(m * sizeof(double))
            if a == NULL:
                m = -1
            else:
                memcpy(a, &scratch[0], m * sizeof(double))
                v = _kth_largest(a, m, k - above, 64)
                if want_rest:
                    _rest_counts(&scratch[0], per_block, per_block + nb, nb, v, &rest[0])
    free(a)
    free(per_block)
    free(block_sum)
    _report(ok, m < 0)
    return v


def mvs_threshold_near(const double[::1] score, double target, double lo, double hi,
                       double[::1] scratch, int n_threads=1):
    """:func:`mvs_threshold` when ``mu`` lies strictly inside ``(lo, hi)``, else NaN.

    One pass counts the scores at or above ``hi`` (probability 1 for any ``mu`` in the
    bracket), sums those below ``lo`` and copies those between; ``mu`` is inside when the
    left-hand side at ``hi`` is below ``target`` and at ``lo`` above it, and a quickselect
    among the copies solves for it as :func:`mvs_threshold` does. The sum below ``lo`` is a
    plain floating-point sum in a fixed order (not the exact sum of :func:`mvs_threshold`),
    so the two answers can differ in the last bits.

    Parameters
    ----------
    score : IN float64 (n,), finite and >= 0.
    target : expected sample size, > 0.
    lo, hi : the bracket, ``0 < lo <= hi`` (finite).
    scratch : OUT float64 (n,) work buffer (overwritten).
    n_threads : OpenMP threads; the result does not depend on it.
    """
    cdef bint ok = True
    _check_bracket(lo, hi, score.shape[0], scratch.shape[0])
    if not target > 0.0:
        raise ValueError(f"target={target!r} must be positive")
    if score.shape[0] == 0:             # no rows: the sum is 0 for every mu, never the target
        return NAN
    mu = _mvs_near(&score[0], score.shape[0], target, lo, hi, scratch, n_threads, &ok)
    _report(ok, False)
    return mu


cdef double _mvs_near(const double* score, Py_ssize_t n, double target, double lo, double hi,
                      double[::1] scratch, int n_threads, bint* ok) except? -1.0:
    """The body of :func:`mvs_threshold_near` (``n > 0``); ``ok`` is False when a score is
    negative, NaN or infinite (``mu`` is then NaN)."""
    cdef Py_ssize_t nb = (n + BLOCK - 1) // BLOCK
    cdef Py_ssize_t b, i, m = 0, above = 0
    cdef double mu = NAN, below_sum = 0.0, cand_sum = 0.0
    cdef Py_ssize_t* per_block = NULL
    cdef double* block_sum = NULL
    _bracket_buffers(nb, &per_block, &block_sum)
    with nogil:
        m = _bracket_pass(score, n, lo, hi, &scratch[0], per_block, block_sum, True,
                          &above, ok, n_threads)
        if ok[0]:
            for b in range(nb):
                below_sum += block_sum[b]
            for i in range(m):
                cand_sum += scratch[i]
            # inside: LHS(hi) < target < LHS(lo), and target > #(score >= hi) so mu is finite
            if (above + (below_sum + cand_sum) / hi < target
                    and target < above + m + below_sum / lo):
                mu = _mvs_quickselect(&scratch[0], m, target, <double>above, below_sum)
    free(per_block)
    free(block_sum)
    return mu
