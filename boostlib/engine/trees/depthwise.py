"""Depthwise trees: every node gets its own best split; nodes are split level by level up to
``max_depth``, and a node without a split of positive gain stays a leaf."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..._kernels import _partition, _predictor
from . import compiled
from ..linear_leaves import LINEAR_DTYPES, LINEAR_FIELDS, read_linear
from .base import (MAX_DEPTH, CAT_SPLIT, TreeKind, bins_below, bins_in_range,
                   gains_non_negative, level_nodes, no_sets, read_cat_sets, read_cover)


@dataclass
class DepthwiseTree:
    """A binary tree stored as node arrays; node 0 is the root, ``left[k] < 0`` for leaves.

    A categorical split has ``nan_right[k] == 2`` and ``bin[k]`` the row of ``cat_sets``
    (uint32 (n_sets, 8): 256 bits, one per bin value) holding the bins sent left.
    ``cover[k]`` is the number of training rows that reached node ``k`` when the leaf values
    were computed (None for trees read from files before format 4). The ``linear_*`` arrays
    hold the leaves' linear parts (:mod:`boostlib.engine.linear_leaves`; None: constant
    leaves).
    """

    feature: np.ndarray
    bin: np.ndarray
    nan_right: np.ndarray
    left: np.ndarray
    right: np.ndarray
    gain: np.ndarray
    value: np.ndarray
    cat_sets: np.ndarray = field(default_factory=no_sets)
    cover: Optional[np.ndarray] = None
    linear_ptr: Optional[np.ndarray] = None
    linear_feature: Optional[np.ndarray] = None
    linear_weight: Optional[np.ndarray] = None
    linear_mean: Optional[np.ndarray] = None
    policy: str = field(default="depthwise", init=False)

    def n_leaves(self) -> int:
        """Number of leaves."""
        return int(np.sum(self.left < 0))

    @classmethod
    def grown(cls, feature: List[int], bin_: List[int], nan_right: List[int],
              left: List[int], right: List[int], gain: List[float],
              sets: List[np.ndarray]):
        """The tree a grower built as lists of node entries, its leaf values 0."""
        return cls(feature=np.asarray(feature, dtype=np.int32),
                   bin=np.asarray(bin_, dtype=np.int32),
                   nan_right=np.asarray(nan_right, dtype=np.uint8),
                   left=np.asarray(left, dtype=np.int32),
                   right=np.asarray(right, dtype=np.int32),
                   gain=np.asarray(gain, dtype=np.float64), value=np.zeros(len(feature)),
                   cat_sets=np.array(sets, np.uint32).reshape(-1, 8))


class DepthwiseKind(TreeKind):
    """``grow_policy="depthwise"``."""

    name = "depthwise"
    tree_class = DepthwiseTree
    packed_feature = "feature"
    fields = ("feature", "bin", "nan_right", "left", "right", "gain", "value", "cat_sets",
              "cover") + LINEAR_FIELDS
    field_dtypes = {"feature": "<i4", "bin": "<i4", "nan_right": "|u1", "left": "<i4",
                    "right": "<i4", "gain": "<f8", "value": "<f8", "cat_sets": "<u4",
                    "cover": "<f8", **LINEAR_DTYPES}
    walks_unfitted_rows = True

    def grow(self, grower: Any, rows: np.ndarray, g: np.ndarray, h: np.ndarray,
             noise_std: float, split_rng: Any, prepared: Any = None):
        """See :meth:`boostlib.engine.trees.TreeKind.grow`. In the common case, on small
        data, the tree is grown compiled (:mod:`boostlib.engine.trees.compiled`), node for
        node the tree the level-wise loop below grows."""
        p = grower.params
        if (compiled.applies(grower, noise_std, rows.size, monotone=True)
                and rows.size * grower.histograms.n_hist_columns
                <= compiled.DEPTHWISE_CELLS):
            fields, node, bounds = compiled.grow(grower, rows, g, h, prepared,
                                                 2 ** p.max_depth, True)
            return DepthwiseTree(**fields, value=np.zeros(fields["feature"].size)), node, \
                None, bounds
        hists, split_rules = grower.histograms, grower.rules
        node, inputs, hist = hists.root(rows, g, h, prepared)
        feature, bin_, nanr, left_c, right_c, gain = [-1], [0], [0], [-1], [-1], [0.0]
        sets: List[np.ndarray] = []
        level_nodes, level_slots = [0], [0]
        rules = split_rules.node_rules()
        for depth in range(p.max_depth):
            k = len(level_nodes)
            noise = split_rules.noise(split_rng, noise_std, k)
            found = split_rules.node_splits(hist, np.asarray(level_slots, dtype=np.int32),
                                            noise, **rules.search_args(level_nodes))
            splits = []
            for k_node, s_slot, split in zip(level_nodes, level_slots, found):
                if split is None:
                    continue
                b = split.bin
                if split.left_set is not None:      # the tree's sets, in order taken
                    sets.append(split.left_set)
                    b = len(sets) - 1
                splits.append((k_node, s_slot, b, split))
            if not splits:
                break
            for k, s, b, split in splits:
                feature[k], bin_[k], nanr[k], gain[k] = (split.feature, b, split.direction,
                                                         split.gain)
                left_c[k], right_c[k] = len(feature), len(feature) + 1
                for _ in range(2):
                    feature.append(-1), bin_.append(0), nanr.append(0), left_c.append(-1)
                    right_c.append(-1), gain.append(0.0)
                rules.split(hist, k, s, split, left_c[k], right_c[k])
            n_nodes = len(feature)
            lc = np.full(n_nodes, -1, dtype=np.int32)
            rc = np.full(n_nodes, -1, dtype=np.int32)
            for k, *_ in splits:
                lc[k], rc[k] = left_c[k], right_c[k]
            level_nodes, level_slots = [], []
            build_next = depth + 1 < p.max_depth
            if build_next:     # histograms of the smaller children, the others by subtraction
                m = len(splits)
                slot_of_node = np.full(n_nodes, -1, dtype=np.int32)
                parent_slots = []
                for j, (k, s, _, split) in enumerate(splits):
                    small, big = ((right_c[k], left_c[k])
                                  if split.right_count < split.left_count
                                  else (left_c[k], right_c[k]))
                    slot_of_node[small] = j
                    parent_slots.append(s)
                    level_nodes += [small, big]
                    level_slots += [j, m + j]
            listing = hists.row_list(rows.size) if build_next else (None, None)
            cat_sets = np.array(sets, dtype=np.uint32).reshape(-1, 8)
            X_level, level_features = hists.columns(np.asarray(feature, np.int32))
            _partition.apply_level(X_level, rows, node, level_features,
                                   np.asarray(bin_, np.int32), np.asarray(nanr, np.uint8),
                                   lc, rc, hists.missing_bin, hists.n_threads,
                                   slot_of_node if build_next else None, *listing,
                                   cat_sets=cat_sets)
            if build_next:
                hist = hists.build_children(inputs, node, slot_of_node, hist, parent_slots,
                                            listing, depth)
        tree = DepthwiseTree.grown(feature, bin_, nanr, left_c, right_c, gain, sets)
        return tree, node, None, rules.node_bounds(len(feature))

    def apply(self, grower: Any, tree: DepthwiseTree, rows: Optional[np.ndarray],
              known: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> np.ndarray:
        """See :meth:`boostlib.engine.trees.TreeKind.apply`: every row by one walk over the
        row-major data (the ``known`` rows skipped), a subset level by level."""
        n_total = grower.X.shape[1]
        if grower.walkable and (rows is None or rows.size == n_total):
            node = np.empty(n_total, dtype=np.int32)
            k_rows, k_leaves = known if known is not None else (None, None)
            _partition.leaves_depthwise(grower.X_rows, tree.feature, tree.bin, tree.nan_right,
                                        tree.left, tree.right, grower.nbnm, node,
                                        grower.n_threads, k_rows, k_leaves,
                                        cat_sets=tree.cat_sets)
            return node
        rows = np.arange(n_total, dtype=np.int32) if rows is None else rows
        rows = np.ascontiguousarray(rows, dtype=np.int32)
        node = np.zeros(rows.size, dtype=np.int32)
        X_tree, tree_features = grower.columns(tree.feature)
        for _ in range(tree_depth(tree)):
            _partition.apply_level(X_tree, rows, node, tree_features, tree.bin,
                                   tree.nan_right, tree.left, tree.right, grower.missing_bin,
                                   grower.n_threads, cat_sets=tree.cat_sets)
        return node

    def add_values(self, grower: Any, tree: DepthwiseTree, coefficient: float,
                   raw: np.ndarray,
                   known: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> None:
        """``raw += coefficient * tree(x)`` on every training row in one row-major walk
        (``known`` rows are not walked); bit-identical to adding the values of the leaves
        :meth:`apply` gives."""
        k_rows, k_leaves = known if known is not None else (None, None)
        _partition.add_depthwise(grower.X_rows, tree.feature, tree.bin, tree.nan_right,
                                 tree.left, tree.right, grower.nbnm, tree.value,
                                 float(coefficient), raw, grower.n_threads, k_rows, k_leaves,
                                 cat_sets=tree.cat_sets)

    def split_mask(self, tree: DepthwiseTree) -> np.ndarray:
        return tree.left >= 0

    def split_covers(self, tree: DepthwiseTree) -> np.ndarray:
        return np.asarray(tree.cover, dtype=np.float64)[tree.left >= 0]

    def max_tree_bytes(self, max_depth: int, max_leaves: int, categorical: bool,
                       linear: bool = False) -> int:
        """A tree of ``L = min(2**max_depth, max_leaves)`` leaves has ``2 L - 1`` nodes, of
        which ``L - 1`` split."""
        leaves = min(1 << max_depth, max_leaves)
        node = self.field_bytes(tuple(k for k in self.fields
                                      if k != "cat_sets" and k not in LINEAR_FIELDS))
        split_set = 8 * self.field_bytes(("cat_sets",)) if categorical else 0
        return ((2 * leaves - 1) * node + (leaves - 1) * split_set
                + (self.linear_bytes(2 * leaves - 1, leaves, max_depth) if linear else 0))

    def leaf_mask(self, tree: DepthwiseTree) -> np.ndarray:
        return tree.left < 0

    def path_features(self, tree: DepthwiseTree) -> Tuple[np.ndarray, np.ndarray]:
        n = tree.value.size
        numeric = (tree.left >= 0) & (tree.nan_right != CAT_SPLIT)
        paths: List[frozenset] = [frozenset()] * n
        for k in range(n):              # children come after their parent
            if tree.left[k] >= 0:
                below = paths[k] | {int(tree.feature[k])} if numeric[k] else paths[k]
                paths[tree.left[k]] = paths[tree.right[k]] = below
        per = [sorted(p) if tree.left[k] < 0 else [] for k, p in enumerate(paths)]
        ptr = np.concatenate([[0], np.cumsum([len(p) for p in per])]).astype(np.int32)
        return ptr, np.asarray([f for p in per for f in p], dtype=np.int32)

    def node_arrays(self, tree: DepthwiseTree) -> Dict[str, np.ndarray]:
        return {k: getattr(tree, k) for k in ("feature", "bin", "nan_right", "left", "right",
                                              "value", "cover", "cat_sets")}

    def pack(self, trees: List[DepthwiseTree]) -> Dict[str, np.ndarray]:
        return dict(
            feature=self._cat([t.feature for t in trees], np.int32),
            split_bin=self._cat(self._set_ids(trees), np.int32),
            cat_sets=self._sets(trees),
            nan_right=self._cat([t.nan_right for t in trees], np.uint8),
            left=self._cat([t.left for t in trees], np.int32),
            right=self._cat([t.right for t in trees], np.int32),
            value=self._cat([t.value for t in trees], np.float64),
            node_offset=self._offsets([t.value.size for t in trees]))

    def prepare(self, packed: Dict[str, np.ndarray], n_features: int,
                missing_bin: int) -> Dict[str, Any]:
        """The trees packed for the branch-free walk (``_predictor.walk_pack``)."""
        return _predictor.walk_pack(n_features, missing_bin=missing_bin, **packed)

    def predict_prepared(self, X_binned: np.ndarray, out: np.ndarray,
                         prepared: Dict[str, Any], coef: np.ndarray, n_threads: int) -> None:
        _predictor.predict_walk(X_binned, coef=coef, out=out, n_threads=n_threads,
                                **prepared)

    def from_document(self, value: Any, path: str, n_borders: np.ndarray,
                      reader: Any) -> DepthwiseTree:
        r = reader
        r.check_keys(value, self.document_keys(value), path)
        n = r.length(value, "value", path)
        if n == 0:
            raise r.fail(f"{path}.value", "a tree needs at least one node")
        per = f"expected {n}, one per node"
        arrays = {
            "feature": r.ints(value, "feature", path, n, per, -1, n_borders.size - 1),
            "bin": r.ints(value, "bin", path, n, per, 0, max(r.MAX_BINS, n - 1)),
            "nan_right": r.ints(value, "nan_right", path, n, per, 0, CAT_SPLIT),
            "left": r.ints(value, "left", path, n, per, -1, n - 1),
            "right": r.ints(value, "right", path, n, per, -1, n - 1),
            "gain": r.floats(value, "gain", path, n, per),
            "value": r.floats(value, "value", path, n, per),
        }
        split = arrays["left"] >= 0
        cat_sets = read_cat_sets(value, path, reader, arrays["bin"], arrays["nan_right"],
                                 split)
        cat = split & (arrays["nan_right"] == CAT_SPLIT)
        for problem in (bins_below(arrays["bin"], cat, r.MAX_BINS), _structure(arrays),
                        gains_non_negative(arrays["gain"]),
                        bins_in_range(arrays["bin"], arrays["feature"], n_borders,
                                      split & (arrays["nan_right"] != CAT_SPLIT))):
            if problem is not None:
                raise r.fail(f"{path}.{problem[0]}" if problem[0] else path, problem[1])
        a = arrays
        return self.tree_class(
            feature=a["feature"].astype(np.int32), bin=a["bin"].astype(np.int32),
            nan_right=a["nan_right"].astype(np.uint8), left=a["left"].astype(np.int32),
            right=a["right"].astype(np.int32), gain=a["gain"], value=a["value"],
            cat_sets=cat_sets, cover=read_cover(value, path, reader, n),
            **read_linear(value, path, reader, n, n_borders.size))


def tree_depth(tree: DepthwiseTree) -> int:
    """The depth of the deepest leaf."""
    return len(level_nodes(tree.left, tree.right)) - 1


def _structure(a: Dict[str, np.ndarray]) -> Optional[Tuple[str, str]]:
    """Node 0 is the root; children come after their parent and have exactly one parent.

    Every node then has a unique path from the root: no cycle, no shared node, no orphan.
    """
    left, right, feature = a["left"], a["right"], a["feature"]
    node = np.arange(left.size)
    leaf = left < 0
    checks = [
        ("right", leaf != (right < 0), "a node has both children or none"),
        ("left", ~leaf & (left <= node), "a child must come after its parent"),
        ("right", ~leaf & (right <= node), "a child must come after its parent"),
        ("feature", leaf != (feature < 0), "leaves have feature -1, split nodes a feature"),
    ]
    for name, bad, message in checks:
        if bad.any():
            return f"{name}[{int(np.argmax(bad))}]", message
    parents = np.bincount(np.concatenate([left[~leaf], right[~leaf]]), minlength=left.size)
    parents[0] += 1  # the root has no parent: count it as having one
    if np.any(parents != 1):
        k = int(np.argmax(parents != 1))
        what = "is not reachable from the root" if parents[k] == 0 else "has several parents"
        return "", f"node {k} {what}"
    depth = np.zeros(left.size, dtype=np.int64)     # children come after their parents
    for k in np.flatnonzero(~leaf):
        depth[left[k]] = depth[right[k]] = depth[k] + 1
    if depth.max(initial=0) > MAX_DEPTH:
        return "", (f"the tree is {int(depth.max())} levels deep; at most {MAX_DEPTH} (the "
                    "deepest max_depth training accepts)")
    return None
