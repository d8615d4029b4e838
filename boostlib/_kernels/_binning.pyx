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
    cdef Py_ssize_t blk, i, f, start, stop, nb, half
    cdef const double* base
    cdef double x
    if out.shape[0] != n_features or out.shape[1] != n_rows:
        raise ValueError("out must have shape (n_features, n_rows)")
    if borders.shape[0] != n_features or n_borders.shape[0] != n_features:
        raise ValueError("borders and n_borders must have one row per feature")
    for f in range(n_features):
        if not 0 <= n_borders[f] <= borders.shape[1] or n_borders[f] > missing_bin - 1:
            raise ValueError("n_borders out of range")
    with nogil:
        for blk in prange(n_blocks, schedule="static", num_threads=n_threads):
            start = blk * BLOCK
            stop = block_stop(blk, BLOCK, n_rows)
            for f in range(n_features):
                nb = n_borders[f]
                for i in range(start, stop):
                    x = X[i, f]
                    if isnan(x):
                        out[f, i] = <bin_t> missing_bin
                    elif nb == 0:
                        out[f, i] = 0
                    else:
                        # Branch-free lower bound: the loop length depends on nb only, and
                        # the comparison compiles to a conditional move.
                        base = &borders[f, 0]
                        half = nb
                        while half > 1:
                            base = base + (half >> 1) if base[(half >> 1)] < x else base
                            half = half - (half >> 1)
                        out[f, i] = <bin_t> ((base - &borders[f, 0]) + (base[0] < x))
