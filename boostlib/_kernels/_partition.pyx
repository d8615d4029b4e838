"""Row partition: each fitted row carries the id of the node it sits in.

Growth is level by level. ``apply_level`` moves every row one level down; ``gather_rows``
lists the rows (and their gradients) of the nodes whose histograms must be built;
``node_sums`` gives the final per-node sums used for the leaf values.
"""
from cython.parallel cimport prange

from .common cimport bin_t, idx_t


def apply_level(const bin_t[:, ::1] X_binned, const idx_t[::1] rows, idx_t[::1] node_of_row,
                const idx_t[::1] split_feature, const idx_t[::1] split_bin,
                const unsigned char[::1] nan_right, const idx_t[::1] left_child,
                const idx_t[::1] right_child, int missing_bin, int n_threads):
    """Send each row to the child of its node (rows of unsplit nodes stay where they are).

    Parameters
    ----------
    X_binned : IN uint8 (n_features, n_rows_total).
    rows : IN int32 (n_fit,) training-row ids of the fitted rows.
    node_of_row : IN/OUT int32 (n_fit,) node id of each fitted row.
    split_feature, split_bin, nan_right, left_child, right_child : IN per node id; a node
        with ``left_child < 0`` is not split at this level.
    missing_bin : bin of missing values.
    n_threads : OpenMP threads (parallel over rows).
    """
    cdef Py_ssize_t n = rows.shape[0]
    cdef Py_ssize_t n_nodes = split_feature.shape[0]
    cdef Py_ssize_t p
    cdef idx_t node
    cdef int b
    if node_of_row.shape[0] != n:
        raise ValueError("node_of_row must be aligned with rows")
    if (split_bin.shape[0] != n_nodes or nan_right.shape[0] != n_nodes
            or left_child.shape[0] != n_nodes or right_child.shape[0] != n_nodes):
        raise ValueError("per-node arrays must have the same length")
    for p in range(n_nodes):
        if left_child[p] >= 0 and not (0 <= split_feature[p] < X_binned.shape[0]):
            raise ValueError("split feature out of range")
    with nogil:
        for p in prange(n, schedule="static", num_threads=n_threads):
            node = node_of_row[p]
            if left_child[node] < 0:
                continue
            b = X_binned[split_feature[node], rows[p]]
            if b == missing_bin:
                node_of_row[p] = right_child[node] if nan_right[node] else left_child[node]
            elif b <= split_bin[node]:
                node_of_row[p] = left_child[node]
            else:
                node_of_row[p] = right_child[node]


def gather_rows(const idx_t[::1] rows, const idx_t[::1] node_of_row,
                const idx_t[::1] slot_of_node, const double[::1] gradient,
                const double[::1] hessian, idx_t[::1] out_rows, idx_t[::1] out_slot,
                double[::1] out_gradient, double[::1] out_hessian):
    """Collect the rows whose node has a histogram slot (``slot_of_node[node] >= 0``).

    Parameters
    ----------
    rows, node_of_row, gradient, hessian : IN aligned arrays over the fitted rows.
    slot_of_node : IN int32 per node id.
    out_rows, out_slot, out_gradient, out_hessian : OUT buffers of at least n_fit entries.

    Returns
    -------
    int
        The number of rows written (the order of ``rows`` is kept).
    """
    cdef Py_ssize_t n = rows.shape[0]
    cdef Py_ssize_t p, m = 0
    cdef idx_t s
    if (node_of_row.shape[0] != n or gradient.shape[0] != n or hessian.shape[0] != n
            or out_rows.shape[0] < n or out_slot.shape[0] < n
            or out_gradient.shape[0] < n or out_hessian.shape[0] < n):
        raise ValueError("gather_rows: arrays of inconsistent lengths")
    with nogil:
        for p in range(n):
            s = slot_of_node[node_of_row[p]]
            if s >= 0:
                out_rows[m] = rows[p]
                out_slot[m] = s
                out_gradient[m] = gradient[p]
                out_hessian[m] = hessian[p]
                m = m + 1
    return m


def node_sums(const idx_t[::1] node_of_row, const double[::1] gradient,
              const double[::1] hessian, double[:, ::1] out):
    """Per-node sums of gradient, hessian and row count.

    Parameters
    ----------
    node_of_row, gradient, hessian : IN aligned arrays over the fitted rows.
    out : OUT (n_nodes, 3), overwritten.
    """
    cdef Py_ssize_t n = node_of_row.shape[0]
    cdef Py_ssize_t p, k
    cdef idx_t node
    if gradient.shape[0] != n or hessian.shape[0] != n or out.shape[1] != 3:
        raise ValueError("node_sums: arrays of inconsistent shapes")
    for p in range(n):
        if not 0 <= node_of_row[p] < out.shape[0]:
            raise ValueError("node id out of range")
    with nogil:
        for k in range(out.shape[0]):
            out[k, 0] = 0.0
            out[k, 1] = 0.0
            out[k, 2] = 0.0
        for p in range(n):
            node = node_of_row[p]
            out[node, 0] += gradient[p]
            out[node, 1] += hessian[p]
            out[node, 2] += 1.0
