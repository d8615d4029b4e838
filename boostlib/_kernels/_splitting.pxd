# The split search's per-node parts, shared with the kernels that grow a whole tree in one
# call (``_leafwise``); see ``_splitting.pyx``.

from .common cimport idx_t, uint32_t, uint64_t

cdef enum:
    MAX_BINS = 256          # bins (categories) of one feature, missing bin included
    USE_WORDS = 4           # 64-bit words of a bit per bin: MAX_BINS / 64

ctypedef struct CatParams:
    double smooth           # added to H when ordering categories
    double l2               # added to the l2 of categorical gains
    double min_group        # rows a category needs to be ordered (else: right)
    Py_ssize_t max_k        # at most this many categories on the left


cdef inline Py_ssize_t _cat_pick(const idx_t* order, Py_ssize_t m, int direction,
                                 Py_ssize_t i) noexcept nogil:
    # The ``i``-th category added to the left set in ``direction``.
    return order[i] if direction == 0 else order[m - 1 - i]


cdef void _feature_best(const double* hf, Py_ssize_t n_channels, Py_ssize_t nb,
                        const double* total, double l2, double min_samples_leaf,
                        double min_child_weight, const double* noise_f, double* best,
                        double lo, double hi, int mono, uint64_t* in_use) noexcept nogil
cdef Py_ssize_t pick_feature(const double* per_feature, Py_ssize_t n_features,
                             const idx_t* listed=*) noexcept nogil
cdef Py_ssize_t fewest_bins(const idx_t* n_bins_nonmissing, Py_ssize_t n_features) noexcept nogil
cdef void node_sums(const double* hs, Py_ssize_t n_ch, const idx_t* offsets,
                    const idx_t* n_bins_nonmissing, Py_ssize_t n_features,
                    double* totals) noexcept nogil
cdef void feature_sums(const double* hs, Py_ssize_t n_ch, const idx_t* offsets,
                       const idx_t* n_bins_nonmissing, Py_ssize_t f,
                       double* totals) noexcept nogil
cdef void threshold_sums(const double* hf, Py_ssize_t n_ch, Py_ssize_t nb, Py_ssize_t b,
                         int d, Py_ssize_t c, double* left, double* right) noexcept nogil
cdef void numeric_result(const double* hf, Py_ssize_t n_ch, Py_ssize_t nb,
                         const double* best, Py_ssize_t f, double* out) noexcept nogil
cdef CatParams _cat_params(const double[::1] cat_params) except *
cdef void _cat_best(const double* hf, Py_ssize_t n_channels, Py_ssize_t nb, double l2,
                    double min_samples_leaf, double min_child_weight, CatParams cp,
                    const double* noise_f, double* best) noexcept nogil
cdef void cat_result(const double* hf, Py_ssize_t n_ch, Py_ssize_t nb, CatParams cp,
                     const double* best, Py_ssize_t f, double* out) noexcept nogil
cdef void cat_set_bits(const double* hf, Py_ssize_t n_ch, Py_ssize_t nb, CatParams cp,
                       int direction, Py_ssize_t size, int missing_bin,
                       uint32_t* bits) noexcept nogil
cdef int _check_layout(Py_ssize_t n_hist_bins, const idx_t[::1] offsets,
                       const idx_t[::1] n_bins_nonmissing, const unsigned char[::1] is_cat,
                       Py_ssize_t n_features) except -1
