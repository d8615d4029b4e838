# The split search's per-node parts, shared with the kernels that grow a whole tree in one
# call (``_leafwise``); see ``_splitting.pyx``.

from .common cimport idx_t

cdef void _feature_best(const double* hf, Py_ssize_t n_channels, Py_ssize_t nb,
                        const double* total, double l2, double min_samples_leaf,
                        double min_child_weight, const double* noise_f, double* best,
                        double lo, double hi, int mono) noexcept nogil
cdef Py_ssize_t pick_feature(const double* per_feature, Py_ssize_t n_features) noexcept nogil
cdef void node_sums(const double* hs, Py_ssize_t n_ch, const idx_t* offsets,
                    const idx_t* n_bins_nonmissing, Py_ssize_t n_features,
                    double* totals) noexcept nogil
cdef void numeric_result(const double* hf, Py_ssize_t n_ch, Py_ssize_t nb,
                         const double* best, Py_ssize_t f, double* out) noexcept nogil
