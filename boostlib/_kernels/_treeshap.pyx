"""Exact SHAP values of tree ensembles: path-dependent TreeSHAP (Lundberg, Erion & Lee 2018,
"Consistent individualized feature attribution for tree ensembles", Algorithm 2), and SHAP
interaction values (Lundberg et al. 2020, "From local explanations to global understanding
with explainable AI for trees").

The trees come as explicit binary trees over binned features, all concatenated: tree ``t``
owns nodes ``node_offset[t]:node_offset[t+1]``, its root first; ``left``/``right`` are
indices within the tree (-1 at leaves). A row goes right at a split ``(f, b, nan_right)``
when its bin is ``> b`` (the missing bin: when ``nan_right``), or, at a categorical split
(``nan_right == 2``), when its bin is not in the set ``cat_sets[b]`` -- as the predictor.

The game's value of a feature set ``S`` is the tree's output with the features of ``S``
followed and the others averaged out over the training rows, node by node: ``fraction[k]``
is the share of its parent's training rows that reach node ``k`` (covers). Leaf values come
multiplied by their tree's coefficient, and tree ``t`` adds to output ``tree_output[t]``.

Each row is computed by one thread, its trees summed in order, so the result does not
depend on ``n_threads``. The expected values (the bias column) are not computed here.
"""
from cython.parallel cimport prange, threadid
from libc.string cimport memcpy

import numpy as np

from libc.stdint cimport int64_t, uint32_t

from .common cimport bin_t, idx_t, CAT_SPLIT, in_set, sets_pointer


cdef struct PathElement:
    int feature
    double zero       # share of the path's weight when the feature is unknown
    double one        # 1 when the row follows this branch, else 0
    double pweight    # permutation weight


cdef struct Trees:
    const bin_t* X              # binned rows; NULL: a "row" is a leaf path of a symmetric
    Py_ssize_t n_rows           # tree, whose bit l says whether it turns right at level l
    const idx_t* level          # (symmetric trees) the level of every node
    const idx_t* feature
    const idx_t* split_bin
    const unsigned char* nan_right
    const idx_t* left
    const idx_t* right
    const double* value
    const double* fraction
    const uint32_t* sets
    int missing_bin


cdef inline void _extend(PathElement* path, int depth, double zero, double one,
                         int feature) noexcept nogil:
    cdef int i
    path[depth].feature = feature
    path[depth].zero = zero
    path[depth].one = one
    path[depth].pweight = 1.0 if depth == 0 else 0.0
    for i in range(depth - 1, -1, -1):
        path[i + 1].pweight += one * path[i].pweight * (i + 1) / <double>(depth + 1)
        path[i].pweight = zero * path[i].pweight * (depth - i) / <double>(depth + 1)


cdef inline void _unwind(PathElement* path, int depth, int index) noexcept nogil:
    cdef double one = path[index].one, zero = path[index].zero
    cdef double next_one = path[depth].pweight, tmp
    cdef int i
    for i in range(depth - 1, -1, -1):
        if one != 0.0:
            tmp = path[i].pweight
            path[i].pweight = next_one * (depth + 1) / ((i + 1) * one)
            next_one = tmp - path[i].pweight * zero * (depth - i) / <double>(depth + 1)
        else:
            path[i].pweight = path[i].pweight * (depth + 1) / (zero * (depth - i))
    for i in range(index, depth):
        path[i].feature = path[i + 1].feature
        path[i].zero = path[i + 1].zero
        path[i].one = path[i + 1].one


cdef inline double _unwound_sum(const PathElement* path, int depth, int index) noexcept nogil:
    # The total permutation weight of the path with element ``index`` unwound.
    cdef double one = path[index].one, zero = path[index].zero
    cdef double next_one = path[depth].pweight, total = 0.0, tmp
    cdef int i
    if one != 0.0:
        for i in range(depth - 1, -1, -1):
            tmp = next_one / ((i + 1) * one)
            total += tmp
            next_one = path[i].pweight - tmp * zero * (depth - i)
    else:
        for i in range(depth - 1, -1, -1):
            total += path[i].pweight / (zero * (depth - i))
    return total * (depth + 1)


cdef inline bint _goes_right(const Trees* T, Py_ssize_t node, Py_ssize_t row) noexcept nogil:
    if T.X == NULL:
        return (row >> T.level[node]) & 1
    cdef int b = T.X[T.feature[node] * T.n_rows + row]
    cdef int nr = T.nan_right[node]
    if nr == CAT_SPLIT:
        return not in_set(T.sets, T.split_bin[node], b)
    if b == T.missing_bin:
        return nr != 0
    return b > T.split_bin[node]


cdef void _recurse(const Trees* T, Py_ssize_t base, Py_ssize_t node, Py_ssize_t row,
                   double* phi, int stride, PathElement* parent, int depth,
                   double parent_zero, double parent_one, int parent_feature,
                   int condition, int condition_feature, double condition_fraction
                   ) noexcept nogil:
    """Add the contributions of the subtree at ``node`` (an index within the tree starting
    at ``base``) to ``phi[feature * stride]``; ``condition`` +1/-1 fixes
    ``condition_feature`` as known/unknown (interaction values), 0 is plain TreeSHAP."""
    cdef PathElement* path = parent + depth + 1
    cdef Py_ssize_t k = base + node, hot, cold
    cdef int i, f, index
    cdef double w, hot_zero, cold_zero, incoming_zero, incoming_one
    cdef double hot_condition, cold_condition
    if condition_fraction == 0.0:
        return
    memcpy(path, parent, (depth + 1) * sizeof(PathElement))
    if condition == 0 or condition_feature != parent_feature:
        _extend(path, depth, parent_zero, parent_one, parent_feature)
    if T.left[k] < 0:
        for i in range(1, depth + 1):
            w = _unwound_sum(path, depth, i)
            phi[path[i].feature * stride] += (w * (path[i].one - path[i].zero)
                                              * T.value[k] * condition_fraction)
        return
    f = T.feature[k]
    if _goes_right(T, k, row):
        hot, cold = T.right[k], T.left[k]
    else:
        hot, cold = T.left[k], T.right[k]
    hot_zero = T.fraction[base + hot]
    cold_zero = T.fraction[base + cold]
    incoming_zero = 1.0
    incoming_one = 1.0
    # a feature split on before is unwound from the path and re-entered with both splits'
    # fractions multiplied
    index = 0
    while index <= depth:
        if path[index].feature == f:
            break
        index += 1
    if index != depth + 1:
        incoming_zero = path[index].zero
        incoming_one = path[index].one
        _unwind(path, depth, index)
        depth -= 1
    hot_condition = condition_fraction
    cold_condition = condition_fraction
    if condition > 0 and f == condition_feature:
        cold_condition = 0.0
        depth -= 1
    elif condition < 0 and f == condition_feature:
        hot_condition *= hot_zero
        cold_condition *= cold_zero
        depth -= 1
    # A branch whose path carries no weight (no training row reached it and the row does
    # not follow it) adds 0: the limit of giving it a vanishing share of the rows.
    if hot_zero * incoming_zero != 0.0 or incoming_one != 0.0:
        _recurse(T, base, hot, row, phi, stride, path, depth + 1, hot_zero * incoming_zero,
                 incoming_one, f, condition, condition_feature, hot_condition)
    if cold_zero * incoming_zero != 0.0:
        _recurse(T, base, cold, row, phi, stride, path, depth + 1, cold_zero * incoming_zero,
                 0.0, f, condition, condition_feature, cold_condition)


def _check(X_binned, feature, split_bin, nan_right, left, right, value, fraction,
           node_offset, tree_output, tree_features, feature_offset, n_outputs, cat_sets,
           max_depth):
    n_nodes = feature.shape[0]
    n_trees = tree_output.shape[0]
    for name, arr in (("split_bin", split_bin), ("nan_right", nan_right), ("left", left),
                      ("right", right), ("value", value), ("fraction", fraction)):
        if arr.shape[0] != n_nodes:
            raise ValueError(f"{name} must have one entry per node ({n_nodes})")
    offsets = np.asarray(node_offset)
    if (offsets.shape[0] != n_trees + 1 or offsets[0] != 0 or offsets[len(offsets) - 1] != n_nodes
            or np.any(np.diff(offsets) < 1)):
        raise ValueError("node_offset must rise from 0 to n_nodes, one tree per step")
    if np.asarray(feature_offset).shape[0] != n_trees + 1:
        raise ValueError("feature_offset needs n_trees + 1 entries")
    tf = np.asarray(tree_features)
    fo = np.asarray(feature_offset)
    if (fo[0] != 0 or fo[len(fo) - 1] != tf.shape[0] or np.any(np.diff(fo) < 0)
            or np.any((tf < 0) | (tf >= X_binned.shape[0]))):
        raise ValueError("tree_features / feature_offset out of range")
    if np.any((np.asarray(tree_output) < 0) | (np.asarray(tree_output) >= n_outputs)):
        raise ValueError("tree_output out of range")
    f = np.asarray(feature)
    split = f >= 0
    if np.any(f[split] >= X_binned.shape[0]):
        raise ValueError("split feature out of range")
    size = np.repeat(np.diff(offsets), np.diff(offsets))
    for name, arr in (("left", left), ("right", right)):
        a = np.asarray(arr)
        if np.any(split & ((a < 1) | (a >= size))) or np.any(~split & (a != -1)):
            raise ValueError(f"{name} children out of range")
    if np.any(split & (np.asarray(nan_right) == CAT_SPLIT)) and (
            cat_sets is None or cat_sets.shape[0] == 0
            or np.any(np.asarray(split_bin)[split & (np.asarray(nan_right) == CAT_SPLIT)]
                      >= cat_sets.shape[0])):
        raise ValueError("a categorical split without its set")
    if max_depth < 0:
        raise ValueError("max_depth must be >= 0")


def tree_shap(const bin_t[:, ::1] X_binned, const idx_t[::1] feature,
              const idx_t[::1] split_bin, const unsigned char[::1] nan_right,
              const idx_t[::1] left, const idx_t[::1] right, const double[::1] value,
              const double[::1] fraction, const idx_t[::1] node_offset,
              const idx_t[::1] tree_output, const idx_t[::1] tree_features,
              const idx_t[::1] feature_offset, int max_depth, int missing_bin,
              double[:, :, ::1] out, int n_threads, const uint32_t[:, ::1] cat_sets=None,
              double[:, :, :, ::1] interactions=None, const idx_t[::1] node_level=None):
    """Write every row's SHAP values to ``out`` (and its interaction values, optionally).

    Parameters
    ----------
    X_binned : IN uint8 (n_features, n_rows).
    feature, split_bin, nan_right, left, right : IN node arrays of all trees (see the module
        docstring); ``feature`` is -1 at leaves.
    value : IN float64, leaf values times their tree's coefficient (0 at split nodes).
    fraction : IN float64, the share of its parent's training rows reaching each node (the
        root's entry is not read).
    node_offset : IN int32 (n_trees + 1,).
    tree_output : IN int32 (n_trees,), the output each tree adds to.
    tree_features, feature_offset : IN int32, the distinct features tree ``t`` splits on,
        ``tree_features[feature_offset[t]:feature_offset[t+1]]`` (read for interactions).
    max_depth : the deepest tree's depth.
    missing_bin : bin of missing values.
    out : OUT float64 (n_rows, n_features + 1, n_outputs), zeros on entry; the last feature
        column is not written (the expected values).
    n_threads : OpenMP threads (parallel over rows).
    cat_sets : IN uint32 (n_sets, 8), optional.
    node_level : IN int32, optional
        Leaf paths instead of rows (symmetric trees as explicit trees, all of depth
        ``d``): the level of every node; "row" ``r`` of ``X_binned`` (shape (n_features,
        2**d), its values not read) is then the path turning right at level ``l`` when bit
        ``l`` of ``r`` is set. In a symmetric tree SHAP values depend on the row only through
        its leaf: this tabulates them.
    interactions : OUT float64 (n_rows, n_features + 1, n_features + 1, n_outputs), zeros
        on entry, optional: ``[r, i, j, k]`` is the interaction of features ``i != j`` for output
        ``k`` (half of the change of ``j``'s SHAP value when ``i`` is known rather than
        unknown), ``[r, i, i, k]`` feature ``i``'s SHAP value minus its interactions; the
        last row and column are not written.
    """
    cdef Py_ssize_t n_rows = X_binned.shape[1]
    cdef Py_ssize_t n_features = X_binned.shape[0]
    cdef Py_ssize_t n_trees = tree_output.shape[0]
    cdef int n_outputs = out.shape[2]
    cdef Py_ssize_t r, t, j, i, q, q2, k, tid
    cdef int stride_row = (n_features + 1) * n_outputs
    cdef Py_ssize_t path_size = (max_depth + 2) * (max_depth + 3) // 2
    cdef PathElement* path
    cdef double* on
    cdef double* off
    cdef double half
    cdef bint with_interactions = interactions is not None
    cdef Trees T
    _check(X_binned, feature, split_bin, nan_right, left, right, value, fraction,
           node_offset, tree_output, tree_features, feature_offset, n_outputs, cat_sets,
           max_depth)
    if out.shape[0] != n_rows or out.shape[1] != n_features + 1:
        raise ValueError("out must have shape (n_rows, n_features + 1, n_outputs)")
    if with_interactions and (interactions.shape[0] != n_rows
                              or interactions.shape[1] != n_features + 1
                              or interactions.shape[2] != n_features + 1
                              or interactions.shape[3] != n_outputs):
        raise ValueError("interactions must have shape (n_rows, n_features + 1, "
                         "n_features + 1, n_outputs)")
    if n_rows == 0 or n_trees == 0:
        return
    n_threads = max(1, n_threads)
    # per-thread work space: a path stack, and the SHAP values with a feature known/unknown
    paths = np.empty(n_threads * path_size * sizeof(PathElement), dtype=np.uint8)
    cdef unsigned char[::1] paths_view = paths
    cdef double[:, ::1] toggled = np.zeros((n_threads, 2 * stride_row if with_interactions
                                            else 1))
    T.X = &X_binned[0, 0] if node_level is None else NULL
    T.n_rows = n_rows
    T.level = NULL
    if node_level is not None:
        if node_level.shape[0] != feature.shape[0]:
            raise ValueError("node_level must have one entry per node")
        if n_rows > (1 << min(30, max_depth)):
            raise ValueError("leaf paths: X_binned must have 2**max_depth columns at most")
        T.level = &node_level[0]
    T.feature = &feature[0]
    T.split_bin = &split_bin[0]
    T.nan_right = &nan_right[0]
    T.left = &left[0]
    T.right = &right[0]
    T.value = &value[0]
    T.fraction = &fraction[0]
    T.sets = sets_pointer(cat_sets)
    T.missing_bin = missing_bin
    with nogil:
        for r in prange(n_rows, schedule="dynamic", chunksize=16, num_threads=n_threads):
            tid = threadid()
            path = (<PathElement*> &paths_view[0]) + tid * path_size
            on = &toggled[tid, 0]
            off = on + stride_row
            for t in range(n_trees):
                k = tree_output[t]
                _recurse(&T, node_offset[t], 0, r, &out[r, 0, k], n_outputs, path, 0, 1.0,
                         1.0, -1, 0, 0, 1.0)
                if not with_interactions:
                    continue
                for q in range(feature_offset[t], feature_offset[t + 1]):
                    j = tree_features[q]
                    for q2 in range(feature_offset[t], feature_offset[t + 1]):
                        on[tree_features[q2] * n_outputs + k] = 0.0
                        off[tree_features[q2] * n_outputs + k] = 0.0
                    _recurse(&T, node_offset[t], 0, r, &on[k], n_outputs, path, 0, 1.0, 1.0,
                             -1, 1, <int> j, 1.0)
                    _recurse(&T, node_offset[t], 0, r, &off[k], n_outputs, path, 0, 1.0,
                             1.0, -1, -1, <int> j, 1.0)
                    for q2 in range(feature_offset[t], feature_offset[t + 1]):
                        i = tree_features[q2]
                        if i == j:
                            continue
                        half = (on[i * n_outputs + k] - off[i * n_outputs + k]) / 2.0
                        interactions[r, j, i, k] += half
                        interactions[r, j, j, k] -= half
            if with_interactions:
                for j in range(n_features):
                    for i in range(n_outputs):
                        interactions[r, j, j, i] += out[r, j, i]


# -- leaf games: the same SHAP values, tree by tree, leaf by leaf ----------------------------
#
# The path-dependent value of a feature set S is a sum over leaves L of product games:
#     v(S) = sum_L value_L prod_{j in U_L} (o_j if j in S else z_j)
# where U_L are the distinct features on L's path, z_j the product of the path's fractions
# at its splits on j, and o_j = 1 when the row takes the path's branch at every split on j
# (else 0). The Shapley value of feature i in L's game is
#     value_L (o_i - z_i) Z(U \ A \ {i}) G(A \ {i}),   A = {j : o_j = 1},
#     Z(C) = prod_{j in C} z_j,   G(B) = sum_{S subset B} w(|S|) prod_{j in B \ S} z_j,
# w(k) = k! (m - k - 1)! / m!, m = |U_L|. Z and G (times value_L) are tabulated once per leaf
# over the 2**m subsets; a row then costs its decisions at the tree's splits and O(m) per
# leaf, instead of the O(m**2) per leaf of the path recursion.

#: Deepest leaf whose game is tabulated (2**depth entries per table).
MAX_GAME_DEPTH = 12


def leaf_games(const idx_t[::1] feature, const idx_t[::1] left, const idx_t[::1] right,
               const double[::1] fraction, const double[::1] value,
               const idx_t[::1] node_offset, const idx_t[::1] leaves,
               const idx_t[::1] leaf_tree, const idx_t[::1] leaf_depth):
    """Tabulate the game of every leaf (see the comment above).

    Parameters
    ----------
    feature, left, right, fraction, value, node_offset : IN, as for :func:`tree_shap`.
    leaves : IN int32, the global node index of every leaf to tabulate.
    leaf_tree : IN int32, the tree of each of ``leaves``.
    leaf_depth : IN int32, the depth of each of ``leaves`` (at most ``MAX_GAME_DEPTH``).

    Returns
    -------
    dict of arrays
        ``path_offset`` (n_leaves + 1) and, per path step (root first): ``path_node``
        (global index of the split), ``path_right`` (1: the path goes right there),
        ``path_local`` (index of its feature in the leaf's feature list); per leaf the
        feature list ``features`` and ``z`` (first ``m`` entries of the leaf's path range),
        ``m``; ``table_offset`` (n_leaves + 1) and the tables ``G`` (times the leaf value)
        and ``Z``, ``2**m`` entries each from the leaf's offset.
    """
    cdef Py_ssize_t n_leaves = leaves.shape[0]
    cdef Py_ssize_t i, s, k, node, child, d, b, top, sz, j, base
    cdef int m
    if leaf_tree.shape[0] != n_leaves or leaf_depth.shape[0] != n_leaves:
        raise ValueError("leaves, leaf_tree and leaf_depth must have the same length")
    depth_arr = np.asarray(leaf_depth)
    if n_leaves and (depth_arr.min() < 0 or depth_arr.max() > MAX_GAME_DEPTH):
        raise ValueError(f"leaf depths must lie in [0, {MAX_GAME_DEPTH}]")
    path_offset = np.concatenate([[0], np.cumsum(depth_arr)]).astype(np.intp)
    table_offset = np.concatenate([[0], np.cumsum(1 << depth_arr)]).astype(np.intp)
    n_steps = int(path_offset[n_leaves])
    cdef Py_ssize_t[::1] po = path_offset
    cdef Py_ssize_t[::1] to = table_offset
    path_node_a = np.empty(n_steps, dtype=np.int32)
    path_right_a = np.empty(n_steps, dtype=np.uint8)
    path_local_a = np.empty(n_steps, dtype=np.uint8)
    features_a = np.full(n_steps, -1, dtype=np.int32)
    z_a = np.ones(n_steps)
    m_a = np.zeros(n_leaves, dtype=np.int32)
    G_a = np.zeros(int(table_offset[n_leaves]))
    Z_a = np.zeros(int(table_offset[n_leaves]))
    cdef idx_t[::1] path_node = path_node_a
    cdef unsigned char[::1] path_right = path_right_a
    cdef unsigned char[::1] path_local = path_local_a
    cdef idx_t[::1] feats = features_a
    cdef double[::1] z = z_a
    cdef idx_t[::1] ms = m_a
    cdef double[::1] G = G_a
    cdef double[::1] Zt = Z_a
    # parents, by one pass over every tree's splits
    parent_a = np.full(feature.shape[0], -1, dtype=np.intp)
    cdef Py_ssize_t[::1] parent = parent_a
    cdef Py_ssize_t t, lo
    for t in range(node_offset.shape[0] - 1):
        lo = node_offset[t]
        for k in range(lo, node_offset[t + 1]):
            if left[k] >= 0:
                parent[lo + left[k]] = k
                parent[lo + right[k]] = k
    w_a = np.zeros(MAX_GAME_DEPTH + 1)
    e_a = np.zeros(((1 << MAX_GAME_DEPTH), MAX_GAME_DEPTH + 1))
    cdef double[::1] w = w_a
    cdef double[:, ::1] e = e_a
    cdef double acc
    for i in range(n_leaves):
        d = leaf_depth[i]
        node = leaves[i]
        base = po[i]
        s = base + d                 # fill the path from the leaf up: root first
        while parent[node] >= 0:
            s -= 1
            child = node
            node = parent[node]
            path_node[s] = <idx_t> node
            t = leaf_tree[i]
            path_right[s] = (node_offset[t] + right[node]) == child
        if s != base:
            raise ValueError(f"leaf {leaves[i]}: its depth is not {d}")
        m = 0
        for s in range(base, base + d):          # distinct features, their fractions
            k = path_node[s]
            t = leaf_tree[i]
            child = node_offset[t] + (right[k] if path_right[s] else left[k])
            for j in range(m):
                if feats[base + j] == feature[k]:
                    break
            else:
                j = m
                feats[base + m] = feature[k]
                m += 1
            path_local[s] = <unsigned char> j
            z[base + j] *= fraction[child]
        ms[i] = m
        if m == 0:
            continue
        for k in range(m):                        # Shapley weights k! (m-k-1)! / m!
            acc = 1.0 / m
            for j in range(1, k + 1):
                acc *= j / <double>(m - j)
            w[k] = acc
        # elementary symmetric polynomials of z over every subset B, Z(B), then G(B)
        e[0, 0] = 1.0
        Zt[to[i]] = 1.0
        G[to[i]] = value[leaves[i]] * w[0]
        for b in range(1, 1 << m):
            top = 0
            while (b >> (top + 1)) != 0:
                top += 1
            sz = 0
            for j in range(m):
                sz += (b >> j) & 1
            for j in range(sz + 1):
                e[b, j] = (e[b ^ (1 << top), j] if j < sz else 0.0) + \
                    (z[base + top] * e[b ^ (1 << top), j - 1] if j > 0 else 0.0)
            Zt[to[i] + b] = Zt[to[i] + (b ^ (1 << top))] * z[base + top]
            acc = 0.0
            for j in range(sz + 1):                # |S| = j, |B \ S| = sz - j
                if j < m:
                    acc += w[j] * e[b, sz - j]
            G[to[i] + b] = value[leaves[i]] * acc
    return dict(path_offset=path_offset.astype(np.int32), path_node=path_node_a,
                path_right=path_right_a, path_local=path_local_a, features=features_a,
                z=z_a, m=m_a, table_offset=table_offset.astype(np.int64), G=G_a, Z=Z_a)


def game_shap(const bin_t[:, ::1] X_binned, const idx_t[::1] feature,
              const idx_t[::1] split_bin, const unsigned char[::1] nan_right,
              const idx_t[::1] node_offset, const idx_t[::1] tree_output,
              const idx_t[::1] leaf_offset, const idx_t[::1] path_offset,
              const idx_t[::1] path_node, const unsigned char[::1] path_right,
              const unsigned char[::1] path_local, const idx_t[::1] features,
              const double[::1] z, const idx_t[::1] m, const int64_t[::1] table_offset,
              const double[::1] G, const double[::1] Z, int missing_bin,
              double[:, :, ::1] out, int n_threads, const uint32_t[:, ::1] cat_sets=None):
    """Add every row's SHAP values to ``out`` from the leaf games of :func:`leaf_games`.

    Parameters
    ----------
    X_binned : IN uint8 (n_features, n_rows).
    feature, split_bin, nan_right, node_offset, tree_output : IN, as for
        :func:`tree_shap`.
    leaf_offset : IN int32 (n_trees + 1,): tree ``t``'s leaves are entries
        ``leaf_offset[t]:leaf_offset[t+1]`` of the game arrays.
    path_offset ... Z : IN, the game tables (:func:`leaf_games`).
    missing_bin : bin of missing values.
    out : IN/OUT float64 (n_rows, n_features + 1, n_outputs).
    n_threads : OpenMP threads (parallel over rows; each row's trees in order).
    cat_sets : IN uint32 (n_sets, 8), optional.
    """
    cdef Py_ssize_t n_rows = X_binned.shape[1]
    cdef Py_ssize_t n_trees = tree_output.shape[0]
    cdef Py_ssize_t n_nodes = feature.shape[0]
    cdef Py_ssize_t r, t, L, s, k, lo, hi, tid, widest = 0, n_leaves
    cdef int n_outputs = out.shape[2]
    cdef int i, mm, full, agree, bit, o
    cdef double zi
    cdef unsigned char* turns
    cdef Trees T
    if out.shape[0] != n_rows or out.shape[1] != X_binned.shape[0] + 1:
        raise ValueError("out must have shape (n_rows, n_features + 1, n_outputs)")
    if (node_offset.shape[0] != n_trees + 1 or leaf_offset.shape[0] != n_trees + 1
            or node_offset[n_trees] != n_nodes):
        raise ValueError("node_offset and leaf_offset need n_trees + 1 entries")
    n_leaves = leaf_offset[n_trees]
    if (path_offset.shape[0] != n_leaves + 1 or m.shape[0] != n_leaves
            or table_offset.shape[0] != n_leaves + 1
            or path_offset[n_leaves] != path_node.shape[0]
            or table_offset[n_leaves] != G.shape[0] or G.shape[0] != Z.shape[0]):
        raise ValueError("inconsistent leaf game tables")
    if np.any((np.asarray(path_node) < 0) | (np.asarray(path_node) >= n_nodes)):
        raise ValueError("path_node out of range")
    f = np.asarray(feature)
    if np.any(f >= X_binned.shape[0]) or np.any(np.asarray(tree_output) >= n_outputs):
        raise ValueError("feature or tree_output out of range")
    if np.any(np.asarray(features)[np.asarray(features) >= 0] >= X_binned.shape[0]):
        raise ValueError("game features out of range")
    if n_rows == 0 or n_trees == 0:
        return
    for t in range(n_trees):
        widest = max(widest, node_offset[t + 1] - node_offset[t])
    n_threads = max(1, n_threads)
    scratch = np.zeros((n_threads, widest), dtype=np.uint8)
    cdef unsigned char[:, ::1] turns_of = scratch
    T.X = &X_binned[0, 0]
    T.n_rows = n_rows
    T.level = NULL                     # read only for leaf paths; the walk reads no more
    T.feature = &feature[0]
    T.split_bin = &split_bin[0]
    T.nan_right = &nan_right[0]
    T.sets = sets_pointer(cat_sets)
    T.missing_bin = missing_bin
    with nogil:
        for r in prange(n_rows, schedule="dynamic", chunksize=16, num_threads=n_threads):
            tid = threadid()
            turns = &turns_of[tid, 0]
            for t in range(n_trees):
                lo = node_offset[t]
                o = tree_output[t]
                for k in range(lo, node_offset[t + 1]):      # the row's turn at every split
                    if feature[k] >= 0:
                        turns[k - lo] = _goes_right(&T, k, r)
                for L in range(leaf_offset[t], leaf_offset[t + 1]):
                    mm = m[L]
                    if mm == 0:
                        continue
                    full = (1 << mm) - 1
                    agree = full
                    for s in range(path_offset[L], path_offset[L + 1]):
                        if turns[path_node[s] - lo] != path_right[s]:
                            agree = agree & ~(1 << path_local[s])
                    for i in range(mm):
                        bit = 1 << i
                        zi = z[path_offset[L] + i]
                        out[r, features[path_offset[L] + i], o] += (
                            (((agree >> i) & 1) - zi)
                            * Z[table_offset[L] + (full & ~agree & ~bit)]
                            * G[table_offset[L] + (agree & ~bit)])
