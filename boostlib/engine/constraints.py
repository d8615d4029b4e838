"""What a tree may split on and what values its leaves may take: monotone constraints,
interaction constraints and column sampling.

* **Monotone constraints** (``monotonic_cst``, scikit-learn's name): -1, 0 or +1 per feature.
  Depthwise and leaf-wise trees keep every node's value in an interval: a split on a
  feature constrained +1 (-1) is taken only when its left child's value is at most (at
  least) its right child's, and the children's intervals meet at the midpoint of the two
  values, so everything under the left child stays below everything under the right one;
  leaf values are clipped to their intervals (after SGLB's leaf noise too). Symmetric trees
  share each level's split among all leaves, so their leaf values are projected instead:
  along every chain of leaves that an increasing value of a constrained feature walks
  through (the other levels' sides fixed), a weighted isotonic regression (pool adjacent
  violators, weights the leaves' hessian sums + l2) makes the values monotone.
* **Interaction constraints** (XGBoost's semantics): groups of features that may appear
  together on a path from the root. A node may split on the features of every group that
  holds all the features its path used; a feature of no group forms a group of its own.
* **Column sampling**: ``colsample_bytree`` draws a fraction of the features for each tree,
  ``colsample_bynode`` a fraction of those for each node (each level of a symmetric tree),
  from the fit's ``"columns"`` random stream (deterministic whatever ``n_jobs``).
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from .._messages import listing, shown


def _feature_index(key: Any, names: Optional[np.ndarray], n_features: int, what: str) -> int:
    """The column of a feature given by name or index."""
    if isinstance(key, str):
        if names is None:
            raise ValueError(f"{what} names feature {shown(key)}, but the data has no feature "
                             "names; use column indices")
        hits = np.flatnonzero(names == key)
        if hits.size == 0:
            raise ValueError(f"{what} names feature {shown(key)}, which the data does not have; "
                             f"expected a name among {listing(names)}")
        return int(hits[0])
    if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)) \
            or not 0 <= key < n_features:
        raise ValueError(f"{what}: {shown(key)} is not a feature name or a column index in "
                         f"[0, {n_features})")
    return int(key)


def monotone_constraints(spec: Any, n_features: int, names: Optional[np.ndarray],
                         categorical: np.ndarray) -> Optional[np.ndarray]:
    """``monotonic_cst`` as int8 per feature (None when no feature is constrained).

    Raises
    ------
    ValueError
        For a wrong length, values other than -1, 0, 1, unknown features, or a constrained
        categorical feature.
    """
    if spec is None:
        return None
    out = np.zeros(n_features, dtype=np.int8)
    if isinstance(spec, dict):
        items = [(_feature_index(k, names, n_features, "monotonic_cst"), v)
                 for k, v in spec.items()]
    else:
        values = (list(np.asarray(spec).tolist()) if isinstance(spec, (list, tuple, np.ndarray))
                  and np.ndim(spec) == 1 else None)
        if values is None or len(values) != n_features:
            raise ValueError(f"monotonic_cst={shown(spec)} is invalid; expected one of -1, 0, 1 "
                             f"per feature ({n_features}) or a dict by feature name/index")
        items = list(enumerate(values))
    for j, v in items:
        if isinstance(v, (bool, np.bool_)) or v not in (-1, 0, 1):
            raise ValueError(f"monotonic_cst: {shown(v)} for feature {j} is invalid; expected -1 "
                             "(decreasing), 0 (none) or 1 (increasing)")
        if v and categorical[j]:
            raise ValueError(f"monotonic_cst: feature {j} is categorical; only numeric "
                             "features can be monotone")
        out[j] = int(v)
    return out if out.any() else None


def interaction_groups(spec: Any, n_features: int,
                       names: Optional[np.ndarray]) -> Optional[List[frozenset]]:
    """``interaction_constraints`` as a list of feature sets, with a singleton for every
    feature in no group (None without constraints)."""
    if spec is None:
        return None
    if isinstance(spec, (str, dict)) or not isinstance(spec, (list, tuple)) or not spec:
        raise ValueError(f"interaction_constraints={shown(spec)} is invalid; expected a non-empty "
                         "list of lists of feature names or indices")
    groups = []
    for group in spec:
        if isinstance(group, (str, dict)) or not isinstance(group, (list, tuple, set)) \
                or not group:
            raise ValueError(f"interaction_constraints: {shown(group)} is not a non-empty list of "
                             "features")
        groups.append(frozenset(_feature_index(k, names, n_features,
                                               "interaction_constraints") for k in group))
    listed = frozenset().union(*groups)
    groups += [frozenset([f]) for f in range(n_features) if f not in listed]
    return groups


class ColumnRules:
    """The features each node of a tree may split on.

    Parameters
    ----------
    n_features : int
    colsample_bytree, colsample_bynode : float in (0, 1]
    groups : interaction groups (:func:`interaction_groups`) or None.
    rng : the fit's ``"columns"`` random stream (needed when sampling).

    Attributes
    ----------
    features : ndarray of intp or None
        The features the trees split on, when not all of them (see :meth:`restrict`).
    """

    def __init__(self, n_features: int, colsample_bytree: float = 1.0,
                 colsample_bynode: float = 1.0, groups: Optional[List[frozenset]] = None,
                 rng: Optional[np.random.Generator] = None):
        self.n_features = n_features
        self.bytree = float(colsample_bytree)
        self.bynode = float(colsample_bynode)
        self.groups = groups
        self.rng = rng
        self._tree = np.ones(n_features, dtype=bool)
        self.features: Optional[np.ndarray] = None

    def restrict(self, features: np.ndarray) -> "ColumnRules":
        """Make these the rules of trees that split only on ``features`` (ascending indices:
        a fit's working features, :mod:`boostlib.engine.working_features`): masks then hold
        an entry per feature of ``features``, and the paths given to :meth:`masks` name
        features by their position there. Samples are still drawn among all
        ``n_features`` features, so every feature is drawn as in a fit on all of them.
        Returns ``self``."""
        features = np.asarray(features, dtype=np.intp)
        self.features = None if features.size == self.n_features else features
        return self

    def _working(self, per_feature: np.ndarray) -> np.ndarray:
        """The working features' entries of ``per_feature`` (last axis)."""
        return per_feature if self.features is None else per_feature[..., self.features]

    @property
    def active(self) -> bool:
        """Whether any rule restricts the features."""
        return self.bytree < 1.0 or self.bynode < 1.0 or self.groups is not None

    @property
    def per_node(self) -> bool:
        """Whether the features allowed differ between the nodes of a tree (column sampling
        by node, interaction constraints), not only between trees."""
        return self.bynode < 1.0 or self.groups is not None

    def tree_skipped(self) -> Optional[np.ndarray]:
        """uint8 (n_features,), or one entry per feature of ``features``: 1 for the
        features this tree's column sample left out (None: none was drawn)."""
        if self.bytree >= 1.0:
            return None
        return self._working(~self._tree).astype(np.uint8)

    def _draw(self, pool: np.ndarray, fraction: float) -> np.ndarray:
        k = max(1, int(round(fraction * pool.size)))
        return np.sort(self.rng.choice(pool, size=k, replace=False))

    def begin_tree(self) -> None:
        """Draw this tree's features (``colsample_bytree``)."""
        self._tree = np.ones(self.n_features, dtype=bool)
        if self.bytree < 1.0:
            self._tree[:] = False
            self._tree[self._draw(np.arange(self.n_features), self.bytree)] = True

    def masks(self, paths: Sequence[frozenset]) -> Optional[np.ndarray]:
        """uint8 (len(paths), n_features), or an entry per feature of ``features``:
        the features each node may split on, given the features used on its path (None:
        all, no rule is active)."""
        if not self.active:
            return None
        out = np.zeros((len(paths), self.n_features), dtype=np.uint8)
        for j, path in enumerate(paths):
            if self.features is not None:
                path = frozenset(self.features[list(path)].tolist())
            allowed = self._tree.copy()
            if self.groups is not None and path:
                ok = np.zeros(self.n_features, dtype=bool)
                for group in self.groups:
                    if path <= group:
                        ok[list(group)] = True
                allowed &= ok
            if self.bynode < 1.0:
                pool = np.flatnonzero(allowed)
                allowed[:] = False
                if pool.size:
                    allowed[self._draw(pool, self.bynode)] = True
            out[j] = allowed
        return np.ascontiguousarray(self._working(out))

    def level_mask(self) -> Optional[np.ndarray]:
        """The features a symmetric tree's level may split on (as :meth:`masks`)."""
        masks = self.masks([frozenset()])
        return None if masks is None else np.ascontiguousarray(masks[0])


def child_bounds(lo: float, hi: float, mono: int, w_left: float, w_right: float):
    """The value intervals of the two children of a split of a node kept in ``[lo, hi]``,
    on a feature constrained ``mono``, whose children's values are ``w_left``/``w_right``."""
    if mono == 0:
        return (lo, hi), (lo, hi)
    mid = 0.5 * (w_left + w_right)
    return ((lo, mid), (mid, hi)) if mono > 0 else ((mid, hi), (lo, mid))


def bounded_value(G: float, H: float, l2: float, lo: float, hi: float) -> float:
    """The Newton value ``-G / (H + l2)`` clipped to ``[lo, hi]``."""
    return float(min(max(-G / (H + l2), lo), hi))


def pool_adjacent_violators(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The weighted isotonic (non-decreasing) regression of ``values``."""
    blocks: List[List[float]] = []          # [mean, weight, count]
    for v, w in zip(values.tolist(), weights.tolist()):
        blocks.append([v, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, c2 = blocks.pop()
            v1, w1, c1 = blocks[-1]
            total = w1 + w2
            blocks[-1] = [(v1 * w1 + v2 * w2) / total if total > 0 else 0.5 * (v1 + v2),
                          total, c1 + c2]
    return np.concatenate([np.full(c, v) for v, _, c in blocks])


def monotone_oblivious(tree: Any, weights: np.ndarray, monotone: np.ndarray) -> None:
    """Make a symmetric tree's leaf values monotone in the constrained features (in place).

    Isotonic regressions along the chains of each constrained feature (a few passes over
    the features: each pass can undo another feature's order), then an exact repair: the
    constraints are edges ``a -> b`` (``value[a] <= value[b]``) of an acyclic graph (the
    product of the chains, each oriented by its sign), and raising every value to the
    largest of its predecessors' until nothing changes satisfies all of them exactly.
    """
    depth = tree.feature.size
    levels = {}
    for level in range(depth):
        f = int(tree.feature[level])
        if monotone[f] != 0:
            levels.setdefault(f, []).append(level)
    if not levels:
        return
    chains = []
    leaves = np.arange(tree.value.size)
    for f, ls in levels.items():
        ls = sorted(ls, key=lambda level: int(tree.bin[level]))     # threshold order
        mask = sum(1 << level for level in ls)
        for base in leaves[(leaves & mask) == 0]:
            chain = [int(base)]
            for level in ls:
                chain.append(chain[-1] | (1 << level))
            chains.append((int(monotone[f]), np.array(chain)))
    w = np.maximum(weights, 1e-12)
    for _ in range(10):
        changed = False
        for sign, chain in chains:
            v = sign * tree.value[chain]
            if np.all(np.diff(v) >= 0):
                continue
            tree.value[chain] = sign * pool_adjacent_violators(v, w[chain])
            changed = True
        if not changed:
            return
    edges = np.concatenate([np.column_stack([c[:-1], c[1:]]) if sign > 0 else
                            np.column_stack([c[1:], c[:-1]]) for sign, c in chains])
    while True:
        low, high = tree.value[edges[:, 0]], tree.value[edges[:, 1]]
        bad = low > high
        if not bad.any():
            return
        np.maximum.at(tree.value, edges[bad, 1], low[bad])
