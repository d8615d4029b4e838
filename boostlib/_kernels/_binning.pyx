"""Map raw float features to bin indices (the uint8 matrix every other kernel reads)."""
from cython.parallel cimport prange
from libc.math cimport isnan

from .common cimport bin_t, idx_t, block_stop

cdef enum:
    BLOCK = 256


def map_to_bins(const double[:, :] X, const double[:, ::1] borders,
                const idx_t[::1] n_borders, int missing_bin,
                bin_t[:, :] out, int n_threads):
    """Bin every value of ``X``.

    Parameters
    ----------
    X : IN float64 array of shape (n_rows, n_features), any memory order.
    borders : IN float64 array of shape (n_features, max_bins - 1); row ``f`` holds the
        ``n_borders[f]`` increasing borders of feature ``f`` (the rest is padding).
    n_borders : IN int32 array of shape (n_features,).
    missing_bin : the bin of NaN values (== max_bins).
    out : OUT uint8 array of shape (n_features, n_rows) (any strides: pass the transpose of
        a C-ordered (n_rows, n_features) array for row-major output).
        ``out[f, i]`` is the number of borders of feature ``f`` strictly below ``X[i, f]``
        (so ``x <= borders[f, b]`` exactly when its bin is ``<= b``), or ``missing_bin``.
    n_threads : number of OpenMP threads (parallel over blocks of rows).
    """
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t n_features = X.shape[1]
    cdef Py_ssize_t n_blocks = (n_rows + BLOCK - 1) // BLOCK
    cdef Py_ssize_t blk, f
    if out.shape[0] != n_features or out.shape[1] != n_rows:
        raise ValueError("out must have shape (n_features, n_rows)")
    if borders.shape[0] != n_features or n_borders.shape[0] != n_features:
        raise ValueError("borders and n_borders must have one row per feature")
    for f in range(n_features):
        if not 0 <= n_borders[f] <= borders.shape[1] or n_borders[f] > missing_bin - 1:
            raise ValueError("n_borders out of range")
    if n_rows == 0 or n_features == 0:
        return
    cdef const char* x0 = <const char*> &X[0, 0]
    cdef bin_t* o0 = &out[0, 0]
    with nogil:
        for blk in prange(n_blocks, schedule="static", num_threads=n_threads):
            for f in range(n_features):
                _bin_block(x0 + f * X.strides[1], X.strides[0], blk * BLOCK,
                           block_stop(blk, BLOCK, n_rows), &borders[f, 0], n_borders[f],
                           missing_bin, o0 + f * out.strides[0], out.strides[1])


cdef void _bin_block(const char* column, Py_ssize_t row_stride, Py_ssize_t start,
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
        xs[j] = (<const double*>(column + (start + j) * row_stride))[0]
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
