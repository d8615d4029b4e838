# The histogram kernels' parts shared with the kernels that grow a whole tree in one call
# (``_leafwise``); see ``_histogram.pyx``.
from libc.stdint cimport int64_t

from .common cimport bin_t, idx_t

cdef void expand_features(const double* column_hist, double* out, Py_ssize_t n_ch,
                          const idx_t* offsets, const idx_t* features, Py_ssize_t n_listed,
                          const Py_ssize_t* source, const Py_ssize_t* default_of,
                          const Py_ssize_t* default_at, Py_ssize_t k,
                          const Py_ssize_t* others, const Py_ssize_t* others_start,
                          Py_ssize_t n_others, Py_ssize_t first_column_bins) noexcept nogil
cdef int check_expand_tables(Py_ssize_t n_column_bins, Py_ssize_t n_bins,
                             const Py_ssize_t[::1] source, const Py_ssize_t[::1] default_at,
                             const Py_ssize_t[::1] others, const Py_ssize_t[::1] others_start,
                             Py_ssize_t first_column_bins) except -1
cdef int check_entries(const int64_t[::1] entry_start, const idx_t[::1] entry_bins,
                       const idx_t[::1] entry_default, const bin_t[:, ::1] X_rows,
                       const idx_t[::1] offsets) except -1
cdef void entries_histogram(const int64_t* entry_start, const idx_t* entry_bins,
                            const idx_t* rows, const idx_t* seq, Py_ssize_t start,
                            Py_ssize_t stop, const float* gradient, const float* hessian,
                            double* out, double* total, Py_ssize_t n_bins, Py_ssize_t n_ch,
                            Py_ssize_t n_parts, double* spare, int n_threads) noexcept nogil
