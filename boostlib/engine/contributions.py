"""SHAP values of an ensemble: exact path-dependent TreeSHAP (``_kernels._treeshap``).

Every tree kind is read as an explicit binary tree (:meth:`~boostlib.engine.trees.TreeKind.node_arrays`, a
symmetric tree of depth ``d`` as its ``2**(d+1) - 1`` nodes); the features a row's value is
averaged over are weighted by the trees' covers, the training rows that reached each node.

Two ways to the same values:

* depthwise and leaf-wise trees: the kernel walks every tree for every row;
* symmetric trees: a row's SHAP values depend only on the leaf it reaches (every path splits
  on the same features), so each tree's values are tabulated once per leaf (``2**d`` walks)
  and a row adds its leaves' table rows, as cheap as a prediction.

Covers of 0 (a leaf of a symmetric tree no training row reached, for example) make some of
the fractions ``cover[child] / cover[node]`` undefined. They are taken as the limit of
giving every leaf a vanishing extra weight: a child with no rows under a node with rows
gets 0, and below a node without rows each child gets its share of the node's leaves.
Contributions of every row still sum exactly to its raw score.

Linear leaves (:mod:`boostlib.engine.linear_leaves`): a row's value in such a tree is its
leaf's constant ``v_s`` plus ``sum_j w_sj (x_j - m_sj)``. The constants are explained as
above (so the expected value is that of the constants: the covers' mean of the leaf values,
each leaf's value being its linear model at its rows' mean point), and each term
``w_sj (x_j - m_sj)`` of the row's leaf goes to feature ``j`` (in interaction values, to its
main effect ``[j, j]``). Every row still sums to its raw score.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from .._kernels import _treeshap
from . import linear_leaves
from .sparse_binned import SparseBinned
from .trees import TreeGroup
from .trees.base import CAT_SPLIT, level_nodes, subtree_sums


class MissingCovers(ValueError):
    """A model's trees carry no covers (read from a model file older than format 4)."""


def _fractions(left: np.ndarray, right: np.ndarray, cover: np.ndarray,
               levels: List[np.ndarray]) -> np.ndarray:
    """Every node's share of its parent's cover (the root: 1), zero covers as the limit
    described in the module docstring; ``levels``: the tree's :func:`level_nodes`."""
    split = np.flatnonzero(left >= 0)
    fraction = np.ones(cover.size)
    parent_cover = np.repeat(cover[split], 2)
    children = np.stack([left[split], right[split]], axis=1).ravel()
    empty = parent_cover <= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction[children] = np.where(empty, 0.0, cover[children] / parent_cover)
    if empty.any():
        leaves = subtree_sums(left, right, np.ones(left.size), levels)
        fraction[children[empty]] = (leaves[children[empty]]
                                     / np.repeat(leaves[split], 2)[empty])
    return fraction


def _tree_table(kind: Any, tree: Any, coef: float, output: int) -> Dict[str, Any]:
    """One scalar tree as the kernel reads it (node arrays, leaf values times ``coef``,
    fractions), with its expected value, its features and its depth."""
    a = kind.node_arrays(tree)
    if a["cover"] is None:
        raise MissingCovers(
            "this model's trees have no covers (the training rows per node), which SHAP "
            "values need: it was read from a model file older than format 4. Retrain it "
            "with this boostlib; its predictions need no covers")
    left, right = a["left"].astype(np.int32), a["right"].astype(np.int32)
    split = left >= 0
    levels = level_nodes(left, right)
    fraction = _fractions(left, right, np.asarray(a["cover"], dtype=np.float64), levels)
    value = np.where(split, 0.0, coef * a["value"])
    level = np.zeros(left.size, dtype=np.int32)
    reach = fraction.copy()                    # share of the training rows reaching a node
    for depth, nodes in enumerate(levels):
        level[nodes] = depth
        parents = nodes[left[nodes] >= 0]
        reach[left[parents]] *= reach[parents]
        reach[right[parents]] *= reach[parents]
    return dict(feature=np.where(split, a["feature"], -1).astype(np.int32),
                bin=a["bin"].astype(np.int32), nan_right=a["nan_right"].astype(np.uint8),
                left=left, right=right, value=value, fraction=fraction, level=level,
                cat_sets=np.asarray(a["cat_sets"], dtype=np.uint32).reshape(-1, 8),
                features=np.unique(a["feature"][split]).astype(np.int32),
                expected=float(np.dot(reach, value)), depth=len(levels) - 1,
                output=output)


def _linear_parts(ensemble: Any, trees: List[Any], coef: np.ndarray, X: Any, X_binned: Any,
                  phi: np.ndarray, inter: Optional[np.ndarray], n_threads: int) -> None:
    """Add the linear parts of trees with linear leaves: each term to its feature (see the
    module docstring)."""
    n_rows, width = phi.shape[0], phi.shape[1]
    diagonal = np.arange(width)
    for c, term in zip(coef.tolist(), trees):
        for k, tree in enumerate(term.trees if isinstance(term, TreeGroup) else [term]):
            if not linear_leaves.has_linear(tree) or c == 0.0 or n_rows == 0:
                continue
            slot = ensemble.leaves_binned(X_binned, [tree], n_threads, scalar=True)[:, 0, 0]
            part = np.zeros((n_rows, width))
            linear_leaves.contributions(tree, X, slot, c, part)
            if inter is None:
                phi[:, :, k] += part
            else:
                inter[:, diagonal, diagonal, k] += part


def _tables(kind: Any, trees: List[Any], coef: np.ndarray) -> List[Dict[str, Any]]:
    return [_tree_table(kind, tree, c, k) for c, term in zip(coef.tolist(), trees)
            for k, tree in enumerate(term.trees if isinstance(term, TreeGroup) else [term])]


def _packed(tables: List[Dict[str, Any]]) -> Dict[str, np.ndarray]:
    """The tables of several trees concatenated (categorical set ids renumbered)."""
    out: Dict[str, Any] = {}
    base = np.cumsum([0] + [t["cat_sets"].shape[0] for t in tables])
    bins = [np.where((t["nan_right"] == CAT_SPLIT) & (t["left"] >= 0), t["bin"] + b, t["bin"])
            for t, b in zip(tables, base)]
    for key, parts in (("bin", bins),) + tuple(
            (k, [t[k] for t in tables]) for k in ("feature", "nan_right", "left", "right",
                                                  "value", "fraction", "level")):
        out[key] = np.ascontiguousarray(np.concatenate(parts), dtype=parts[0].dtype
                                        if key != "bin" else np.int32)
    out["node_offset"] = np.cumsum([0] + [t["left"].size for t in tables]).astype(np.int32)
    out["tree_output"] = np.array([t["output"] for t in tables], dtype=np.int32)
    out["tree_features"] = np.ascontiguousarray(
        np.concatenate([t["features"] for t in tables]), dtype=np.int32)
    out["feature_offset"] = np.cumsum(
        [0] + [t["features"].size for t in tables]).astype(np.int32)
    out["cat_sets"] = np.ascontiguousarray(np.concatenate([t["cat_sets"] for t in tables]))
    return out


def _walk(tables: List[Dict[str, Any]], X_binned: np.ndarray, missing_bin: int,
          phi: np.ndarray, inter: Optional[np.ndarray], n_threads: int,
          leaf_paths: bool = False) -> None:
    """Run the kernel over ``tables`` (``leaf_paths``: over the leaf paths of symmetric
    trees, ``X_binned`` only giving the shape)."""
    a = _packed(tables)
    _treeshap.tree_shap(X_binned, a["feature"], a["bin"], a["nan_right"], a["left"],
                        a["right"], a["value"], a["fraction"], a["node_offset"],
                        a["tree_output"], a["tree_features"], a["feature_offset"],
                        max(t["depth"] for t in tables), missing_bin, phi, n_threads,
                        cat_sets=a["cat_sets"], interactions=inter,
                        node_level=a["level"] if leaf_paths else None)


def _games(tables: List[Dict[str, Any]], X_binned: np.ndarray, missing_bin: int,
           phi: np.ndarray, n_threads: int) -> None:
    """SHAP values of trees no deeper than ``MAX_GAME_DEPTH`` from their leaves' games
    (``_treeshap.leaf_games``: the same values as the path recursion, faster)."""
    a = _packed(tables)
    is_leaf = a["left"] < 0
    tree_of = np.repeat(np.arange(len(tables)), np.diff(a["node_offset"]))
    leaves = np.flatnonzero(is_leaf).astype(np.int32)
    games = _treeshap.leaf_games(a["feature"], a["left"], a["right"], a["fraction"],
                                 a["value"], a["node_offset"], leaves,
                                 tree_of[leaves].astype(np.int32), a["level"][leaves])
    leaf_offset = np.searchsorted(leaves, a["node_offset"]).astype(np.int32)
    _treeshap.game_shap(X_binned, a["feature"], a["bin"], a["nan_right"], a["node_offset"],
                        a["tree_output"], leaf_offset, games["path_offset"],
                        games["path_node"], games["path_right"], games["path_local"],
                        games["features"], games["z"], games["m"], games["table_offset"],
                        games["G"], games["Z"], missing_bin, phi, n_threads,
                        cat_sets=a["cat_sets"])


def _trees(tables: List[Dict[str, Any]], X_binned: np.ndarray, missing_bin: int,
           phi: np.ndarray, inter: Optional[np.ndarray], n_threads: int) -> None:
    """Depthwise and leaf-wise trees: interaction values by the path recursion, SHAP values
    from leaf games where the trees are shallow enough."""
    if inter is not None:
        _walk(tables, X_binned, missing_bin, phi, inter, n_threads)
        return
    shallow = [t for t in tables if t["depth"] <= _treeshap.MAX_GAME_DEPTH]
    deep = [t for t in tables if t["depth"] > _treeshap.MAX_GAME_DEPTH]
    if shallow:
        _games(shallow, X_binned, missing_bin, phi, n_threads)
    if deep:
        _walk(deep, X_binned, missing_bin, phi, None, n_threads)


def _symmetric(ensemble: Any, tables: List[Dict[str, Any]], X_binned: Any,
               trees: List[Any], phi: np.ndarray, inter: Optional[np.ndarray],
               n_threads: int) -> None:
    """Symmetric trees: every tree's SHAP values per leaf, over its own features, then
    each row's leaves' values added in tree order."""
    leaves = ensemble.leaves_binned(X_binned, trees, n_threads).reshape(
        X_binned.shape[1], -1)                # (n_rows, scalar trees, term-major)
    n_outputs = ensemble.n_outputs
    for i, t in enumerate(tables):
        features = t["features"]
        u = features.size
        if u == 0:
            continue
        local = dict(t, feature=np.where(t["feature"] >= 0,
                                         np.searchsorted(features, t["feature"]), -1
                                         ).astype(np.int32),
                     features=np.arange(u, dtype=np.int32), output=0)
        n_paths = 1 << t["depth"]
        t_phi = np.zeros((n_paths, u + 1, 1))
        t_inter = np.zeros((n_paths, u + 1, u + 1, 1)) if inter is not None else None
        _walk([local], np.zeros((u, n_paths), dtype=np.uint8), 0, t_phi, t_inter, 1,
              leaf_paths=True)
        term, k = divmod(i, n_outputs)         # tables are listed term by term
        rows = leaves[:, term * n_outputs + k]
        if inter is None:
            phi[:, features, k] += t_phi[rows, :u, 0]
        else:
            inter[:, features[:, None], features[None, :], k] += t_inter[rows, :u, :u, 0]


def contributions(ensemble: Any, X: np.ndarray, n_threads: int = 1, *,
                  interactions: bool = False, start: int = 0, end: Optional[int] = None,
                  factor: float = 1.0) -> np.ndarray:
    """SHAP values (or SHAP interaction values) of the raw score for the rows of ``X``.

    Parameters
    ----------
    ensemble : Ensemble
    X : ndarray of shape (n_rows, n_features)
        Raw float32/float64 rows; NaN = missing.
    n_threads : int, default 1
    interactions : bool, default False
        SHAP interaction values instead of SHAP values.
    start, end : int
        Explain the terms ``start <= t < end`` (default: all) with the bias.
    factor : float, default 1.0
        Divide the result by it (the truncation factors of SGLB's shrinkage).

    Returns
    -------
    ndarray
        SHAP values: (n_rows, n_features + 1), the last column the expected value, each
        row summing to the raw score; with several outputs (n_rows, n_features + 1,
        n_outputs). Interaction values: (n_rows, n_features + 1, n_features + 1) (and the
        output axis last), ``[:, i, j]`` half the interaction of features ``i`` and ``j``
        (the other half is ``[:, j, i]``), ``[:, i, i]`` feature ``i``'s main effect,
        ``[:, -1, -1]`` the expected value; each row's entries sum to its raw score and
        row ``i`` of a row sums to feature ``i``'s SHAP value.

    Raises
    ------
    MissingCovers
        When the trees have no covers.
    """
    mapper, trees, coef = ensemble._prediction_tables()
    end = ensemble.n_trees if end is None else end
    trees, coef = trees[start:end], coef[start:end]
    n_outputs = ensemble.n_outputs
    tables = _tables(ensemble.kind, trees, coef)
    expected = ensemble.bias_array.copy()
    for t in tables:
        expected[t["output"]] += t["expected"]
    X_binned = mapper.transform(X, n_threads, "engine")
    n_rows, n_features = X_binned.shape[1], X_binned.shape[0]
    phi = np.zeros((n_rows, n_features + 1, n_outputs))
    inter = (np.zeros((n_rows, n_features + 1, n_features + 1, n_outputs)) if interactions
             else None)
    if not tables or n_rows == 0:
        pass
    elif ensemble.kind.name == "symmetric":
        _symmetric(ensemble, tables, X_binned, trees, phi, inter, n_threads)
    elif isinstance(X_binned, SparseBinned):   # a dense copy of the features the trees use
        used = np.unique(np.concatenate([t["features"] for t in tables]))
        local = np.searchsorted(used, np.arange(n_features)).astype(np.int32)
        tables = [dict(t, feature=np.where(t["feature"] >= 0, local[t["feature"]], -1
                                           ).astype(np.int32),
                       features=local[t["features"]]) for t in tables]
        width = used.size + 1
        p = np.zeros((n_rows, width, n_outputs))
        q = np.zeros((n_rows, width, width, n_outputs)) if interactions else None
        _trees(tables, X_binned.columns(used), mapper.missing_bin, p, q, n_threads)
        columns = np.append(used, n_features)
        if interactions:
            inter[:, columns[:, None], columns[None, :]] = q
        else:
            phi[:, columns] = p
    else:
        _trees(tables, X_binned, mapper.missing_bin, phi, inter, n_threads)
    _linear_parts(ensemble, trees, coef, X, X_binned, phi, inter, n_threads)
    if interactions:
        inter[:, n_features, n_features, :] = expected
        out = inter
    else:
        phi[:, n_features, :] = expected
        out = phi
    if factor != 1.0:
        out /= factor
    return out[..., 0] if n_outputs == 1 else out
