"""Linear leaves (``linear_leaves=True``; LightGBM's ``linear_tree``): each leaf of a tree
holds, besides its value, a ridge regression on the raw values of the numeric features its
path splits on.

A row that reaches leaf (slot) ``s`` of a tree gets

    ``v_s + sum_j w_sj (x_j - m_sj)``

when all the leaf's features are finite in it, else ``v_s``: missing values go to the
constant part, as in LightGBM. ``v_s`` is the leaf's value as without linear leaves
(:mod:`boostlib.engine.leaves`: the Newton step, its L2, cap and noise). ``m_s`` is the
hessian-weighted mean of the leaf's *complete* fitted rows (no feature missing), and ``w_s``
minimises the second-order expansion of the loss about the tree's constant step,

    ``sum_i [g_i e_i + h_i e_i^2 / 2] + linear_lambda ||w||^2 / 2``,
    ``e_i = v_s + w.(x_i - m_s)``,

over those rows: ``w_s = -(Xc' H Xc + linear_lambda I)^{-1} Xc' g`` with ``Xc`` the rows'
values centred on ``m_s``. Centring on the hessian-weighted mean separates the constant from
the slopes: the leaf keeps its Newton value at its rows' mean point, and with
``l2_regularization = 0`` (and no cap) the constant and the slopes are together the exact
weighted least-squares fit of the Newton targets ``-g/h`` (LightGBM's leaf model). A leaf's
feature whose values do not vary among its complete rows gets no slope, and a leaf with no
more complete rows than features, or without hessian mass, stays constant.

The features of a leaf are the numeric features of the splits on its path (a symmetric
tree: of all its levels, since every leaf's path crosses them all); categorical splits add
none. The tree stores the parts as four arrays over its ``value`` slots, in CSR form:
``linear_ptr`` (int32, ``n_slots + 1``), and per entry ``linear_feature`` (int32, the
training matrix's feature), ``linear_weight`` and ``linear_mean`` (float64). A tree without
linear leaves has them None.

The kernels (``boostlib._kernels._linear``) read the raw values feature-major, as float64,
from a :class:`RawColumns`: copied a feature at a time the first time a leaf needs them, so
the memory grows with the features the trees use (8 bytes per row and feature).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Optional, Tuple

import numpy as np

from .._kernels import _linear
from ..plugin.collective import LOCAL, Collective
from .frames import Columns

#: The tree fields of the linear parts, in model-file order, and their block types.
LINEAR_FIELDS = ("linear_ptr", "linear_feature", "linear_weight", "linear_mean")
LINEAR_DTYPES = {"linear_ptr": "<i4", "linear_feature": "<i4", "linear_weight": "<f8",
                 "linear_mean": "<f8"}
#: The most features one leaf's linear part may have.
MAX_LEAF_FEATURES = int(_linear.MAX_LEAF_FEATURES)


def has_linear(tree: Any) -> bool:
    """Whether a scalar tree has linear leaves."""
    return getattr(tree, "linear_ptr", None) is not None


def constant_part(tree: Any, value: Optional[np.ndarray] = None) -> Any:
    """``tree`` without its linear parts (and with ``value`` as its values, when given)."""
    changes = {k: None for k in LINEAR_FIELDS if hasattr(tree, k)}
    if value is not None:
        changes["value"] = value
    return dataclasses.replace(tree, **changes) if changes else tree


class RawColumns:
    """The raw values of a matrix's features, feature-major float64, copied a feature at a
    time the first time :meth:`local` is asked for it.

    Parameters
    ----------
    source : ndarray (n_rows, n_features), :class:`~boostlib.engine.frames.Columns` or a
        SciPy sparse matrix
        The matrix (NaN: missing; a sparse matrix's absent entries are 0).
    centers : ndarray of float64 (n_features,), optional
        A value near the middle of each feature's values (the sums of a leaf's fit are taken
        about it, for precision); every worker of a distributed fit must pass the same ones.
        Default: 0.
    """

    def __init__(self, source: Any, centers: Optional[np.ndarray] = None):
        if hasattr(source, "tocsc"):
            source = source.tocsc()
        self.source = source
        self.n_rows = int(source.shape[0])
        self.n_features = int(source.shape[1])
        self.centers = (np.zeros(self.n_features) if centers is None
                        else np.asarray(centers, dtype=np.float64))
        self._slot = np.full(self.n_features, -1, dtype=np.int64)
        self._store = np.empty((0, self.n_rows))
        self._used = 0

    @property
    def matrix(self) -> np.ndarray:
        """The copied features, (n_copied, n_rows) float64, C-contiguous."""
        return self._store[:self._used]

    def local(self, features: np.ndarray) -> np.ndarray:
        """The rows of :attr:`matrix` holding ``features`` (int32), copied first if new."""
        features = np.asarray(features, dtype=np.int64)
        if features.size and (features.min() < 0 or features.max() >= self.n_features):
            raise ValueError(f"features must lie in [0, {self.n_features})")
        new = np.unique(features[self._slot[features] < 0]) if features.size else features
        if new.size:
            need = self._used + new.size
            if need > self._store.shape[0]:
                grown = np.empty((max(need, 2 * self._store.shape[0]), self.n_rows))
                grown[:self._used] = self._store[:self._used]
                self._store = grown
            for j in new.tolist():
                self._store[self._used] = self._column(j)
                self._slot[j] = self._used
                self._used += 1
        return self._slot[features].astype(np.int32)

    def _column(self, j: int) -> np.ndarray:
        src = self.source
        if isinstance(src, Columns):
            return src.column(j)
        if hasattr(src, "tocsc"):
            return np.asarray(src[:, [j]].toarray(), dtype=np.float64).ravel()
        return src[:, j]


def fit_tree(kind: Any, tree: Any, rows: np.ndarray, node: np.ndarray, g: np.ndarray,
             h: np.ndarray, columns: RawColumns, linear_lambda: float,
             collective: Collective = LOCAL, n_threads: int = 1) -> None:
    """Give ``tree`` (its values set, features the training matrix's) its linear parts,
    fitted on the rows ``rows`` (columns of ``columns``) with slots ``node`` and derivatives
    ``g``, ``h`` (weights applied); see the module docstring. In a distributed fit the sums
    join the other workers' first, so every worker gets the same parts."""
    ptr, feature = kind.path_features(tree)
    n_slots = tree.value.size
    sizes = np.diff(ptr).astype(np.int64)
    if np.any(sizes > MAX_LEAF_FEATURES):
        raise ValueError(f"a leaf of a linear-leaves tree splits on {int(sizes.max())} "
                         f"features; at most {MAX_LEAF_FEATURES} are supported")
    local = columns.local(feature)
    block = 3 + 2 * sizes + sizes * sizes
    base = np.concatenate([[0], np.cumsum(block)[:-1]]).astype(np.int64)
    sums = np.empty(int(block.sum()))
    shift = columns.centers[feature]
    _linear.leaf_sums(columns.matrix, np.ascontiguousarray(rows, dtype=np.int32),
                      np.ascontiguousarray(node, dtype=np.int32),
                      np.ascontiguousarray(g, dtype=np.float64),
                      np.ascontiguousarray(h, dtype=np.float64), ptr, local,
                      np.ascontiguousarray(shift), base, sums,
                      _block_rows(len(rows), sums.size), n_threads)
    collective.allreduce(sums)
    keep, weight, mean = _solve(sums, base, sizes, float(linear_lambda))
    slot_of_entry = np.repeat(np.arange(n_slots), sizes)
    tree.linear_ptr = np.concatenate(
        [[0], np.cumsum(np.bincount(slot_of_entry[keep], minlength=n_slots))]).astype(np.int32)
    tree.linear_feature = np.ascontiguousarray(feature[keep], dtype=np.int32)
    tree.linear_weight = np.ascontiguousarray(weight[keep])
    tree.linear_mean = np.ascontiguousarray(shift[keep] + mean[keep])


def _solve(sums: np.ndarray, base: np.ndarray, sizes: np.ndarray, lam: float
           ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(keep, w, mu)`` over every entry of every slot, from the slots' sums: which entries
    get a slope, the slopes, and the centres about the shift. All slots are solved in one
    batch, each system padded to the largest with the identity. A slot stays constant (no
    entry kept) with no more complete rows than features, no hessian mass, no feature that
    varies (by more than rounding) or a solution that is not finite."""
    n_entries = int(sizes.sum())
    keep = np.zeros(n_entries, dtype=bool)
    weight, mean = np.zeros(n_entries), np.zeros(n_entries)
    slots = np.flatnonzero(sizes)
    if not slots.size:
        return keep, weight, mean
    k = sizes[slots]
    b0 = base[slots]
    j = np.arange(int(k.max()))
    count, H, G = sums[b0], sums[b0 + 1], sums[b0 + 2]
    ok = (count > k) & (H > 0)
    inside = j < k[:, None]                                     # (m, K): real entries
    pair = inside[:, :, None] & inside[:, None, :]

    def gather(where: np.ndarray, index: np.ndarray) -> np.ndarray:
        return np.where(where, sums[np.where(where, index, 0)], 0.0)

    Sx = gather(inside, b0[:, None] + 3 + j)
    Sg = gather(inside, b0[:, None] + 3 + k[:, None] + j)
    Sxx = gather(pair, (b0 + 3 + 2 * k)[:, None, None] + j[:, None] * k[:, None, None]
                 + j[None, None, :])
    mu = Sx / np.where(ok, H, 1.0)[:, None]
    A = Sxx - Sx[:, :, None] * mu[:, None, :]
    b = Sg - mu * G[:, None]
    # a feature whose spread in the leaf is lost to rounding (or is none) gets no slope: its
    # row and column become the identity's, its right-hand side 0 (as the padding's)
    varies = inside & ok[:, None] & (
        A[:, j, j] > 1e-12 * np.maximum(Sxx[:, j, j], np.finfo(float).tiny))
    A = np.where(varies[:, :, None] & varies[:, None, :], A, 0.0)
    A[:, j, j] += np.where(varies, lam, 1.0)
    b = np.where(varies, b, 0.0)
    try:
        w = np.linalg.solve(A, -b[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        w = np.stack([np.linalg.lstsq(a, -r, rcond=None)[0] for a, r in zip(A, b)])
    good = np.all(np.isfinite(w), axis=1) & varies.any(axis=1)
    entry = (np.concatenate([[0], np.cumsum(sizes)[:-1]])[slots][:, None] + j)[inside]
    keep[entry] = (varies & good[:, None])[inside]
    weight[entry] = np.where(keep[entry], w[inside], 0.0)
    mean[entry] = mu[inside]
    return keep, weight, mean


def _block_rows(n_rows: int, size: int) -> int:
    """Rows per block of the sums' kernel: at least 8192, and few enough blocks that their
    partial sums (``size`` each) take at most about 4M values (32 MB)."""
    return max(8192, -(-n_rows * size // (1 << 22)))


def add_tree(tree: Any, columns: RawColumns, rows: np.ndarray, slot: np.ndarray,
             coefficient: float, out: np.ndarray, n_threads: int = 1,
             constants: bool = False) -> None:
    """``out[rows] += coefficient * linear part`` of a scalar tree with linear leaves, for the
    rows ``rows`` of ``columns`` (distinct) in slots ``slot``; with ``constants``, each row's
    leaf value is added first (as training adds them: the two parts one after the other)."""
    local = columns.local(tree.linear_feature)
    _linear.add_linear(columns.matrix, np.ascontiguousarray(rows, dtype=np.int32),
                       np.ascontiguousarray(slot, dtype=np.int32), tree.linear_ptr, local,
                       tree.linear_weight, tree.linear_mean, float(coefficient), out,
                       n_threads, np.ascontiguousarray(tree.value, dtype=np.float64)
                       if constants else None)


def contributions(tree: Any, X: np.ndarray, slot: np.ndarray, coefficient: float,
                  out: np.ndarray) -> None:
    """``out[i, j] += coefficient * w_sj (x_ij - m_sj)``: the linear part of a row's value
    attributed to the features it is linear in (rows missing one of its leaf's features
    add nothing), ``out`` of shape (n_rows, n_features + 1)."""
    ptr, feature = tree.linear_ptr, tree.linear_feature
    order = np.argsort(slot, kind="stable")         # the rows grouped by slot, found once
    bounds = np.searchsorted(slot[order], np.arange(ptr.size))
    for s in np.flatnonzero(np.diff(ptr)).tolist():
        at = order[bounds[s]:bounds[s + 1]]
        if not at.size:
            continue
        entries = slice(ptr[s], ptr[s + 1])
        f = feature[entries]
        x = X[at][:, f]
        x = np.asarray(x.toarray() if hasattr(x, "toarray") else x, dtype=np.float64)
        complete = np.all(np.isfinite(x), axis=1)
        part = coefficient * tree.linear_weight[entries] * (x - tree.linear_mean[entries])
        out[at[complete][:, None], f[None, :]] += part[complete]


def read_linear(value: Any, path: str, reader: Any, n_slots: int, n_features: int) -> dict:
    """The linear fields of a tree read from a model file (all or none), checked: None each
    when absent."""
    present = [k for k in LINEAR_FIELDS if k in value]
    if not present:
        return {k: None for k in LINEAR_FIELDS}
    if not reader.linear_leaves:
        raise reader.fail(f"{path}.{present[0]}", "linear leaves need a file of format "
                                                  "version 8 or later")
    if len(present) != len(LINEAR_FIELDS):
        missing = sorted(set(LINEAR_FIELDS) - set(present))
        raise reader.fail(path, f"has {present} but not {missing}: linear leaves need all of "
                                f"{list(LINEAR_FIELDS)}")
    ptr = reader.ints(value, "linear_ptr", path, n_slots + 1,
                      f"expected {n_slots + 1}, one per value slot and one more", 0, 2**31 - 1)
    n = reader.length(value, "linear_feature", path)
    if ptr[0] != 0 or ptr[-1] != n or np.any(np.diff(ptr) < 0):
        raise reader.fail(f"{path}.linear_ptr", f"must start at 0, not decrease and end at "
                                                f"{n} (the entries of linear_feature)")
    if np.any(np.diff(ptr) > MAX_LEAF_FEATURES):
        raise reader.fail(f"{path}.linear_ptr", f"a leaf has more than {MAX_LEAF_FEATURES} "
                                                "features")
    per = f"expected {n}, one per entry of linear_feature"
    return {"linear_ptr": ptr.astype(np.int32),
            "linear_feature": reader.ints(value, "linear_feature", path, n, per, 0,
                                          n_features - 1).astype(np.int32),
            "linear_weight": reader.floats(value, "linear_weight", path, n, per),
            "linear_mean": reader.floats(value, "linear_mean", path, n, per)}
