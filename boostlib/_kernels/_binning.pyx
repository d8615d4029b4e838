"""Binning kernels: each feature's sorted sample (where the borders come from), and the map
from raw float features to bin indices (the uint8 matrix every other kernel reads)."""
from cython.parallel cimport parallel, prange
from libc.math cimport isnan
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from .common cimport bin_t, idx_t, block_stop, double_bits

# Raw features are read as float32 or float64 without a converted copy of the matrix; a
# float32 value converts to double exactly, so its bin is that of the same value in float64.
ctypedef fused real_t:
    float
    double

cdef enum:
    BLOCK = 256

cdef enum:
    GATHER_BLOCK = 512      # rows per block of the sample's transposing copy
    RADIX_BITS = 11         # the sort's digits: 6 of 11 bits (the last one 9) cover 64 bits
    RADIX = 1 << 11
    N_DIGITS = 6

cdef uint64_t SIGN = (<uint64_t>1) << 63
cdef uint64_t EXP_ALL = <uint64_t>0x7FF0000000000000     # NaN: above this, sign cleared


def map_to_bins(const real_t[:, :] X, const double[::1] borders,
                const Py_ssize_t[::1] starts, const idx_t[::1] n_borders, int missing_bin,
                bin_t[:, :] out, int n_threads):
    """Bin every value of ``X``.

    Parameters
    ----------
    X : IN float32 or float64 array of shape (n_rows, n_features), any memory order.
    borders : IN float64 array: every feature's increasing borders, feature ``f``'s the
        ``n_borders[f]`` values from ``starts[f]`` on (sized by the borders, not by
        ``n_features * (max_bins - 1)``).
    starts : IN intp array of shape (n_features,).
    n_borders : IN int32 array of shape (n_features,).
    missing_bin : the bin of NaN values (== max_bins).
    out : OUT uint8 array of shape (n_features, n_rows) (any strides: pass the transpose of
        a C-ordered (n_rows, n_features) array for row-major output).
        ``out[f, i]`` is the number of borders of feature ``f`` strictly below ``X[i, f]``
        (so ``x <= borders[starts[f] + b]`` exactly when its bin is ``<= b``), or
        ``missing_bin``.
    n_threads : number of OpenMP threads (parallel over blocks of rows).
    """
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t n_features = X.shape[1]
    cdef Py_ssize_t n_blocks = (n_rows + BLOCK - 1) // BLOCK
    cdef Py_ssize_t blk, f
    if out.shape[0] != n_features or out.shape[1] != n_rows:
        raise ValueError("out must have shape (n_features, n_rows)")
    if starts.shape[0] != n_features or n_borders.shape[0] != n_features:
        raise ValueError("starts and n_borders must have one entry per feature")
    for f in range(n_features):
        if not (0 <= n_borders[f] <= missing_bin - 1 and 0 <= starts[f]
                and starts[f] + n_borders[f] <= borders.shape[0]):
            raise ValueError("n_borders or starts out of range")
    if n_rows == 0 or n_features == 0:
        return
    cdef const char* x0 = <const char*> &X[0, 0]
    cdef bin_t* o0 = &out[0, 0]
    cdef const double* b0 = &borders[0] if borders.shape[0] else NULL
    with nogil:
        for blk in prange(n_blocks, schedule="static", num_threads=n_threads):
            for f in range(n_features):
                _bin_block(<const real_t*>(x0 + f * X.strides[1]), X.strides[0], blk * BLOCK,
                           block_stop(blk, BLOCK, n_rows), b0 + starts[f], n_borders[f],
                           missing_bin, o0 + f * out.strides[0], out.strides[1])


cdef void _bin_block(const real_t* column, Py_ssize_t row_stride, Py_ssize_t start,
                     Py_ssize_t stop, const double* border, Py_ssize_t nb, int missing_bin,
                     bin_t* out, Py_ssize_t out_stride) noexcept nogil:
    """Bins of one feature's rows ``start .. stop`` (at most ``BLOCK``): ``column`` points at
    the feature's value of row 0, ``row_stride`` and ``out_stride`` are in bytes.

    A branch-free lower bound over the borders, taken by all the block's rows together, one
    halving step at a time: each step is a loop over the rows whose iterations do not wait
    for each other, where a search row by row would wait on every comparison before the
    next load. NaN compares false everywhere and is then given ``missing_bin``. Only the
    ``nb`` borders are read (with none, every value that is not NaN gets bin 0)."""
    cdef double xs[BLOCK]
    cdef Py_ssize_t pos[BLOCK]
    cdef Py_ssize_t j, m = stop - start, half = nb, step
    cdef double x
    for j in range(m):
        xs[j] = (<const real_t*>(<const char*>column + (start + j) * row_stride))[0]
        pos[j] = 0
    if nb == 0:
        for j in range(m):
            out[(start + j) * out_stride] = <bin_t> (missing_bin if isnan(xs[j]) else 0)
        return
    while half > 1:
        step = half >> 1
        for j in range(m):
            pos[j] = pos[j] + step if border[pos[j] + step] < xs[j] else pos[j]
        half = half - step
    for j in range(m):
        x = xs[j]
        out[(start + j) * out_stride] = <bin_t> (
            missing_bin if isnan(x) else pos[j] + (border[pos[j]] < x))


def sorted_sample(const real_t[:, :] X, const Py_ssize_t[::1] rows, double[:, ::1] out,
                  Py_ssize_t[::1] counts, int n_threads):
    """Every feature's non-missing values over ``rows``, sorted: what the borders come from.

    Two passes. The sample's values are copied feature-major into ``out``, by blocks of rows
    in parallel (each block's rows are read once, from the cache, for all the features).
    Then each feature's values (features in parallel) lose their NaNs and are sorted by a
    least-significant-digit radix sort of their IEEE-754 bits, mapped to unsigned integers
    in the order of the values (6 passes of 11 bits at most; a pass whose digit is the same
    for every value is skipped); zeros are counted apart and put back in place (a column of
    indicators, 90% zeros, sorts 3x faster). The sign of zero is dropped: -0.0 is sorted
    (and returned) as 0.0. The result does not depend on ``n_threads``.

    Parameters
    ----------
    X : IN float32 or float64 (n_rows, n_features), any memory order.
    rows : IN intp (m,) the rows to take, in any order, each in ``[0, n_rows)``; empty for
        every row (``m = n_rows``).
    out : OUT float64 (n_features, m): ``out[f, :counts[f]]`` is feature ``f``'s sorted
        values (the rest is scratch).
    counts : OUT intp (n_features,) the non-missing values per feature.
    n_threads : OpenMP threads.
    """
    cdef Py_ssize_t n_rows = X.shape[0], n_features = X.shape[1]
    cdef bint every_row = rows.shape[0] == 0
    cdef Py_ssize_t m = n_rows if every_row else rows.shape[0]
    cdef Py_ssize_t n_blocks = (m + GATHER_BLOCK - 1) // GATHER_BLOCK
    cdef Py_ssize_t blk, f, j, j0, j1, r, bad = 0, failed = 0
    cdef uint64_t* scratch
    cdef Py_ssize_t* hist
    if out.shape[0] != n_features or out.shape[1] != m:
        raise ValueError(f"out must have shape ({n_features}, {m}): one row per feature and "
                         "one column per sampled row")
    if counts.shape[0] != n_features:
        raise ValueError(f"counts must have {n_features} entries, one per feature")
    if m == 0 or n_features == 0:
        for f in range(n_features):
            counts[f] = 0
        return
    if n_rows == 0:
        raise ValueError("rows must be in [0, 0), the rows of X: X has no rows")
    cdef const char* x0 = <const char*> &X[0, 0]
    cdef Py_ssize_t s0 = X.strides[0], s1 = X.strides[1]
    with nogil:
        for blk in prange(n_blocks, schedule="static", num_threads=n_threads):
            j0 = blk * GATHER_BLOCK
            j1 = block_stop(blk, GATHER_BLOCK, m)
            for j in range(j0, j1):             # the rows are checked once
                r = j if every_row else rows[j]
                bad += (r < 0) | (r >= n_rows)
            for f in range(n_features):
                for j in range(j0, j1):
                    r = j if every_row else rows[j]
                    r = r if 0 <= r < n_rows else 0        # never read outside X
                    out[f, j] = (<const real_t*>(x0 + r * s0 + f * s1))[0]
    if bad:
        raise ValueError(f"rows must be in [0, {n_rows}), the rows of X")
    with nogil, parallel(num_threads=n_threads):
        scratch = <uint64_t*>malloc(m * sizeof(uint64_t))
        hist = <Py_ssize_t*>malloc(N_DIGITS * RADIX * sizeof(Py_ssize_t))
        for f in prange(n_features, schedule="dynamic"):
            if scratch == NULL or hist == NULL:
                failed += 1
            else:
                counts[f] = _sort_values(&out[f, 0], m, scratch, hist)
        free(scratch)
        free(hist)
    if failed:
        raise MemoryError("sorted_sample: no memory for the sort's work arrays")


cdef inline uint64_t _key(uint64_t bits) noexcept nogil:
    # the unsigned integer whose order is the order of the (non-NaN) values: negatives have
    # every bit flipped, the others their sign bit set
    return bits ^ ((<uint64_t>0 - (bits >> 63)) | SIGN)


cdef inline uint64_t _unkey(uint64_t key) noexcept nogil:
    return key ^ (((key >> 63) - 1) | SIGN)


cdef Py_ssize_t _sort_values(double* values, Py_ssize_t m, uint64_t* scratch,
                             Py_ssize_t* hist) noexcept nogil:
    """Drop the NaNs of ``values[:m]``, sort the rest in place (-0.0 as 0.0), return their
    count. Zeros are counted, not sorted (a column of indicators or counts is mostly 0):
    the other values are sorted and the zeros put between the negatives and the positives.
    ``scratch``: m words; ``hist``: N_DIGITS * RADIX counters."""
    cdef uint64_t* keys = <uint64_t*>values      # the keys overwrite the values they replace
    cdef uint64_t* src = keys
    cdef uint64_t* dst = scratch
    cdef uint64_t* tmp
    cdef uint64_t bits, k
    cdef Py_ssize_t i, c = 0, zeros = 0, negatives = 0, d, b, total, shift
    for i in range(N_DIGITS * RADIX):
        hist[i] = 0
    for i in range(m):
        bits = double_bits(values[i])
        bits = 0 if bits == SIGN else bits      # -0.0 is 0.0
        k = _key(bits)
        keys[c] = k                             # c <= i: this value was read already
        zeros += bits == 0
        c += (bits != 0) & ((bits & ~SIGN) <= EXP_ALL)     # NaN and 0: not sorted
    for i in range(c):
        k = keys[i]
        negatives += (k >> 63) == 0
        for d in range(N_DIGITS):
            hist[d * RADIX + ((k >> (d * RADIX_BITS)) & (RADIX - 1))] += 1
    for d in range(N_DIGITS if c else 0):
        shift = d * RADIX_BITS
        if hist[d * RADIX + ((src[0] >> shift) & (RADIX - 1))] == c:
            continue                            # one digit value: the pass keeps the order
        total = 0
        for b in range(RADIX):                  # counts to starting positions
            i = hist[d * RADIX + b]
            hist[d * RADIX + b] = total
            total += i
        for i in range(c):
            k = src[i]
            b = d * RADIX + ((k >> shift) & (RADIX - 1))
            dst[hist[b]] = k
            hist[b] += 1
        tmp = src
        src = dst
        dst = tmp
    # the positives move up past the zeros, last first (src may be values itself)
    for i in range(c - 1, negatives - 1, -1):
        bits = _unkey(src[i])
        memcpy(&values[i + zeros], &bits, sizeof(double))
    for i in range(negatives):
        bits = _unkey(src[i])
        memcpy(&values[i], &bits, sizeof(double))
    for i in range(negatives, negatives + zeros):
        values[i] = 0.0
    return c + zeros
