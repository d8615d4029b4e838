# Shared C types of every boostlib kernel.
#
# Conventions used across the kernels
# ------------------------------------
# * Binned features are ``bin_t`` (uint8) in a *feature-major* matrix ``X_binned[f, i]``
#   (one contiguous row per feature). Bin ``missing_bin`` (== max_bins) holds NaN.
# * A split "feature f at bin b" sends a row left when its bin is <= b and it is not missing;
#   missing rows go right when ``nan_right`` is 1.
# * Histograms are float64 arrays ``hist[node, feature, bin, channel]`` with the channels
#   below (sums of gradient and hessian, and the row count).
# * Rows are ``idx_t`` (int32) indices into the training matrix.

from libc.stdint cimport uint8_t, int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy

ctypedef uint8_t bin_t
ctypedef int32_t idx_t
ctypedef double real_t

cdef enum:
    # Rows per block of a row list (``apply_level``'s ``listed`` output, read by
    # ``build_histograms``): block ``b`` lists its rows at ``listed[b * LIST_BLOCK:]``.
    LIST_BLOCK = 4096

cdef enum:
    CH_G = 0        # sum of gradients
    CH_H = 1        # sum of hessians
    CH_C = 2        # number of rows
    N_CHANNELS = 3


cdef inline Py_ssize_t block_stop(Py_ssize_t block, Py_ssize_t block_size,
                                  Py_ssize_t n) noexcept nogil:
    """End (exclusive) of row block ``block`` of ``block_size`` rows among ``n``."""
    cdef Py_ssize_t stop = (block + 1) * block_size
    return stop if stop < n else n


ctypedef struct WalkNode:
    # One node of a tree packed for a branch-free walk (see ``_partition._walk_tables``):
    # a row at this node goes to ``left + ((bin > threshold) & (bin <= upper))``: ``upper``
    # is the feature's missing bin when missing values go right, one less when they go left.
    # A categorical split has ``upper == -1`` and its set in ``threshold``.
    int32_t feature
    int32_t left
    int32_t threshold
    int32_t upper


cdef inline uint64_t double_bits(double x) noexcept nogil:
    # The IEEE-754 bits of a double: for non-negative values (sign bit 0) their order as
    # unsigned integers is the order of the values, so kernels compare scores as integers.
    cdef uint64_t b
    memcpy(&b, &x, sizeof(double))
    return b


cdef inline double bits_double(uint64_t b) noexcept nogil:
    # The double whose IEEE-754 bits are ``b`` (the inverse of ``double_bits``): masking a
    # value's bits and taking them back adds it or +0.0 without a branch.
    cdef double x
    memcpy(&x, &b, sizeof(double))
    return x


cdef inline void copy_row(bin_t* dst, const bin_t* src, Py_ssize_t n) noexcept nogil:
    # ``memcpy(dst, src, n)`` for one binned row. Rows of 16 to 32 bytes (up to 32 features)
    # are copied as two overlapping 16-byte halves by fixed-size moves the compiler inlines:
    # a call to memcpy with a run-time length costs more than the copy itself.
    cdef uint64_t a, b, c, d
    if 16 <= n <= 32:
        memcpy(&a, src, 8)
        memcpy(&b, src + 8, 8)
        memcpy(&c, src + n - 16, 8)
        memcpy(&d, src + n - 8, 8)
        memcpy(dst, &a, 8)
        memcpy(dst + 8, &b, 8)
        memcpy(dst + n - 16, &c, 8)
        memcpy(dst + n - 8, &d, 8)
    elif n:
        memcpy(dst, src, n)


# A categorical split sends a set of bins left: the set is 8 uint32 words (256 bits, one per
# bin value, the missing bin included), row ``k`` of a ``(n_sets, 8)`` array. A split node
# marks itself categorical by ``nan_right == 2`` and names its set by its ``bin`` field.
cdef enum:
    CAT_SPLIT = 2
    SET_WORDS = 8


cdef inline const uint32_t* sets_pointer(const uint32_t[:, ::1] cat_sets) except? NULL:
    # The first word of ``cat_sets`` (NULL when there are none), its shape checked.
    if cat_sets is None or cat_sets.shape[0] == 0:
        return NULL
    if cat_sets.shape[1] != SET_WORDS:
        raise ValueError("cat_sets must have shape (n_sets, 8)")
    return &cat_sets[0, 0]


cdef inline int in_set(const uint32_t* sets, Py_ssize_t k, int b) noexcept nogil:
    # 1 when bin ``b`` is in set ``k`` (goes left).
    return (sets[k * SET_WORDS + (b >> 5)] >> (b & 31)) & 1


cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define BOOSTLIB_PREFETCH(p) __builtin_prefetch((const void*)(p), 0, 3)
    #else
    #define BOOSTLIB_PREFETCH(p) ((void)0)
    #endif
    """
    # Ask the CPU to start loading the cache line at ``p`` (read, keep in every cache
    # level); never faults, a no-op where the compiler has no prefetch built-in.
    void prefetch "BOOSTLIB_PREFETCH"(const void* p) noexcept nogil

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define BOOSTLIB_LOWEST_BIT(x) __builtin_ctzll(x)
    #else
    static inline int BOOSTLIB_LOWEST_BIT(unsigned long long x) {
        int i = 0;
        while (!(x & 1ULL)) { x >>= 1; i++; }
        return i;
    }
    #endif
    """
    # The index of the lowest set bit of ``x`` (``x`` must not be 0).
    int lowest_bit "BOOSTLIB_LOWEST_BIT"(uint64_t x) noexcept nogil

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define BOOSTLIB_BIT_COUNT(x) __builtin_popcountll(x)
    #else
    static inline int BOOSTLIB_BIT_COUNT(unsigned long long x) {
        int n = 0;
        for (; x; x &= x - 1) n++;
        return n;
    }
    #endif
    """
    # The number of set bits of ``x``.
    int bit_count "BOOSTLIB_BIT_COUNT"(uint64_t x) noexcept nogil

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #define BOOSTLIB_BARRIER() _Pragma("omp barrier")
    #define BOOSTLIB_TEAM_SIZE() omp_get_num_threads()
    #else
    #define BOOSTLIB_BARRIER() ((void)0)
    #define BOOSTLIB_TEAM_SIZE() 1
    #endif
    """
    # Inside a parallel region (Cython's ``with parallel()``): wait until every thread of
    # the team gets here (every one must), and the team's number of threads (which can be
    # fewer than asked).
    void barrier "BOOSTLIB_BARRIER"() noexcept nogil
    int team_size "BOOSTLIB_TEAM_SIZE"() noexcept nogil

cdef enum:
    # Passes over rows with little work per row (derivatives, score updates, conversions)
    # take a thread per this many rows: on fewer, a second thread's start and the cache
    # lines it then holds (that the next pass reads on the first thread) cost more than
    # the thread saves.
    ROWS_PER_THREAD = 16384


cdef inline int row_threads(Py_ssize_t n, int n_threads) noexcept nogil:
    # The threads a light pass over ``n`` rows takes (at most ``n_threads``, at least 1).
    cdef Py_ssize_t t = n // ROWS_PER_THREAD
    return 1 if t < 1 else (n_threads if t >= n_threads else <int> t)


cdef inline double leaf_value(double G, double H, double count, double l2) noexcept nogil:
    # The Newton leaf value ``-G / (H + l2)`` of a leaf of sums ``G``, ``H`` and ``count``
    # rows: 0 for a leaf no row reaches or whose ``H + l2`` is not positive (the formula of
    # ``boostlib.engine.leaves``, which adds the noise).
    if H + l2 > 0 and count > 0:
        return -G / (H + l2)
    return 0.0


cdef enum:
    # Histogram loops over a list of rows request a row's data (its binned values, its
    # gradient and hessian) this many rows ahead: the rows of a deep node are scattered
    # over the whole matrix, a pattern the hardware prefetcher does not follow.
    PREFETCH_ROWS = 12


cdef inline void add_bin(double* hs, Py_ssize_t b, Py_ssize_t n_ch, double g,
                         double h) noexcept nogil:
    # Add a row's gradient and hessian (and count, with 3 channels) to bin ``b`` of the
    # histogram at ``hs``.
    cdef double* hb
    if n_ch == N_CHANNELS:
        hb = hs + b * N_CHANNELS
        hb[CH_G] += g
        hb[CH_H] += h
        hb[CH_C] += 1.0
    else:
        hb = hs + b * 2
        hb[CH_G] += g
        hb[CH_H] += h


cdef inline void add_row(const bin_t* xr, double* hs, const idx_t* offsets, Py_ssize_t f0,
                         Py_ssize_t f1, Py_ssize_t n_ch, double g, double h) noexcept nogil:
    # Add one row's gradient and hessian (and count, with 3 channels) to its bins of
    # features ``f0:f1`` in the histogram at ``hs`` (layout ``offsets``, see _histogram).
    cdef Py_ssize_t f
    for f in range(f0, f1):
        add_bin(hs, offsets[f] + xr[f], n_ch, g, h)


cdef inline void add_listed(const bin_t* xr, double* hs, const idx_t* offsets,
                            const idx_t* columns, Py_ssize_t i0, Py_ssize_t i1,
                            Py_ssize_t n_ch, double g, double h) noexcept nogil:
    # ``add_row`` to the bins of the columns ``columns[i0:i1]`` alone.
    cdef Py_ssize_t i
    for i in range(i0, i1):
        add_bin(hs, offsets[columns[i]] + xr[columns[i]], n_ch, g, h)


# Sparse histogram rows ("entries", ``boostlib.engine.row_entries``): row ``r`` lists only
# its bins that are not its columns' default bins, as absolute bins of the histogram layout
# (ascending: ``bins[start[r]:start[r + 1]]``). A histogram built from entries leaves the
# default bins out, and takes each one afterwards as the rows' total minus its column's
# other bins (``fill_defaults``), as LightGBM does for its sparse bins.
cdef inline void add_entries(const idx_t* bins, Py_ssize_t n, double* hs, Py_ssize_t n_ch,
                             double g, double h, double* total) noexcept nogil:
    # Add one row's gradient and hessian (and count, with 3 channels) to its entries' bins,
    # and to the rows' ``total`` (3 channels).
    cdef Py_ssize_t k
    cdef double* hb
    total[CH_G] += g
    total[CH_H] += h
    total[CH_C] += 1.0
    if n_ch == N_CHANNELS:
        for k in range(n):
            hb = hs + bins[k] * N_CHANNELS
            hb[CH_G] += g
            hb[CH_H] += h
            hb[CH_C] += 1.0
    else:
        for k in range(n):
            hb = hs + bins[k] * 2
            hb[CH_G] += g
            hb[CH_H] += h


cdef enum:
    # A node's histogram from entries is summed in up to MAX_PARTS parts, each over a run
    # of its rows (in their order) into a histogram of its own, and the parts are then added
    # in order: threads take parts. Their number depends on the data alone (never on the
    # threads, so neither do the sums): a part's rows add on average at least PART_WORK
    # entries per bin of the histogram (a part costs a histogram to zero and to add).
    MAX_PARTS = 8
    PART_WORK = 8


cdef inline Py_ssize_t entry_parts(Py_ssize_t m, int64_t n_entries, Py_ssize_t n_rows,
                                   Py_ssize_t n_bins) noexcept nogil:
    # The parts of a histogram of ``m`` rows, from entries that list ``n_entries`` bins over
    # ``n_rows`` training rows, into ``n_bins`` bins.
    cdef int64_t p = 1
    if n_rows > 0 and n_bins > 0:
        p = (<int64_t> m * n_entries) // (<int64_t> n_rows * PART_WORK * n_bins)
    return 1 if p < 1 else (MAX_PARTS if p > MAX_PARTS else <Py_ssize_t> p)


cdef inline void fill_defaults(double* hs, const double* total, const idx_t* offsets,
                               const idx_t* default_at, Py_ssize_t c0, Py_ssize_t c1,
                               Py_ssize_t n_ch) noexcept nogil:
    # The default bin of each column ``c0:c1`` of a histogram built from entries: the rows'
    # total minus the column's other bins (summed in bin order).
    cdef Py_ssize_t c, b, ch
    cdef idx_t d
    cdef double acc
    for c in range(c0, c1):
        d = default_at[c]
        for ch in range(n_ch):
            acc = 0.0
            for b in range(offsets[c], offsets[c + 1]):
                if b != d:
                    acc += hs[b * n_ch + ch]
            hs[d * n_ch + ch] = total[ch] - acc


cdef inline int goes_right(int b, int split_bin, int nan_right, int missing_bin,
                           const uint32_t* sets) noexcept nogil:
    # Whether a row of bin ``b`` goes right at the split (``split_bin``, ``nan_right``);
    # ``nan_right == CAT_SPLIT``: categorical, ``split_bin`` names the set in ``sets``.
    if nan_right == CAT_SPLIT:
        return 1 - in_set(sets, split_bin, b)
    return ((b > split_bin) & (b != missing_bin)) | ((b == missing_bin) & nan_right)


cdef inline Py_ssize_t partition_segment(const bin_t* column, const idx_t* rows, idx_t* order,
                                         Py_ssize_t start, Py_ssize_t stop, int split_bin,
                                         int nan_right, int missing_bin,
                                         const uint32_t* sets, idx_t* scratch) noexcept nogil:
    # Stable partition of the positions ``order[start:stop]`` by a split of the feature whose
    # binned column (indexed by training row) is ``column`` (see ``goes_right``): the rows
    # going left first, in one pass (``scratch`` holds the right ones meanwhile). Returns
    # the number going left.
    cdef Py_ssize_t i, n_left = 0, n_right = 0
    cdef idx_t p
    cdef int go_right
    for i in range(start, stop):
        p = order[i]
        go_right = goes_right(column[rows[p]], split_bin, nan_right, missing_bin, sets)
        order[start + n_left] = p        # never ahead of i: safe in place
        scratch[n_right] = p
        n_left += 1 - go_right
        n_right += go_right
    for i in range(n_right):
        order[start + n_left + i] = scratch[i]
    return n_left
