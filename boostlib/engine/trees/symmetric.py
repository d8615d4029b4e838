"""Symmetric (oblivious) trees, CatBoost-style: one split per level shared by every leaf.

The tree's nodes are sets of leaves, searched and valued on the union of their rows. The
split of a level is the candidate maximising the sum of its nodes' gains. A node where the
chosen split breaks ``min_samples_leaf`` / ``min_child_weight`` (a child empty, say) is not
split: its rows still follow the split (the leaf index is the bits of the levels), but its
leaves' two children stay one node, carried down whole (its histogram unchanged) and split
by the next levels like the others; its leaves share one value, so the constraints hold for
every distinct leaf value.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..._kernels import _partition, _predictor
from ..linear_leaves import LINEAR_DTYPES, LINEAR_FIELDS, read_linear
from .base import (CAT_SPLIT, TreeKind, bins_in_range, gains_non_negative, no_sets,
                   read_cat_sets, read_cover)

#: Largest depth of an oblivious tree read from a file (its leaf table has ``2**depth``
#: entries).
MAX_DEPTH = 30


@dataclass
class ObliviousTree:
    """An oblivious tree of depth ``d``: level ``l`` splits on ``(feature[l], bin[l])``.

    The leaf of a row is ``sum_l right_l << l`` where ``right_l`` says whether the row goes
    right at level ``l``; ``value`` has ``2**d`` entries. A categorical level has
    ``nan_right[l] == 2`` and ``bin[l]`` the row of ``cat_sets`` holding the bins sent left.
    ``cover[i]`` is the number of training rows that reached leaf ``i`` when the leaf values
    were computed (None for trees read from files before format 4). The ``linear_*`` arrays
    hold the leaves' linear parts (:mod:`boostlib.engine.linear_leaves`; None: constant
    leaves).
    """

    feature: np.ndarray
    bin: np.ndarray
    nan_right: np.ndarray
    gain: np.ndarray
    value: np.ndarray
    cat_sets: np.ndarray = field(default_factory=no_sets)
    cover: Optional[np.ndarray] = None
    linear_ptr: Optional[np.ndarray] = None
    linear_feature: Optional[np.ndarray] = None
    linear_weight: Optional[np.ndarray] = None
    linear_mean: Optional[np.ndarray] = None
    policy: str = field(default="symmetric", init=False)

    @property
    def depth(self) -> int:
        return int(self.feature.size)

    def n_leaves(self) -> int:
        """Number of leaves (``2**depth``)."""
        return int(self.value.size)


class SymmetricKind(TreeKind):
    """``grow_policy="symmetric"``."""

    name = "symmetric"
    tree_class = ObliviousTree
    packed_feature = "split_feature"
    fields = ("feature", "bin", "nan_right", "gain", "value", "cat_sets",
              "cover") + LINEAR_FIELDS
    field_dtypes = {"feature": "<i4", "bin": "<i4", "nan_right": "|u1", "gain": "<f8",
                    "value": "<f8", "cat_sets": "<u4", "cover": "<f8", **LINEAR_DTYPES}

    def grow(self, grower: Any, rows: np.ndarray, g: np.ndarray, h: np.ndarray,
             noise_std: float, split_rng: Any, prepared: Any = None):
        """See :meth:`boostlib.engine.trees.TreeKind.grow`."""
        p = grower.params
        hists, rules = grower.histograms, grower.rules
        node, inputs, hist = hists.root(rows, g, h, prepared)
        # The tree's nodes: a node is a set of leaves (of the levels taken so far) whose rows
        # are searched and valued together, node k's histogram in slot k of ``hist``.
        # ``owner[leaf]``: the node of each leaf.
        owner = np.zeros(1, dtype=np.int64)
        feats, bins, nanr, gains, sets = [], [], [], [], []
        for level in range(p.max_depth):
            n_leaves = 1 << level
            n_nodes = int(owner.max()) + 1
            slots = np.arange(n_nodes, dtype=np.int32)
            split = rules.level_split(hist, slots, rules.noise(split_rng, noise_std),
                                      rules.level_mask())
            if split is None:
                break
            f, b, d = split.feature, split.bin, split.direction
            if split.left_set is not None:
                sets.append(split.left_set)
                b = len(sets) - 1
            left, right, valid = split.left, split.right, split.valid
            feats.append(f)
            bins.append(b)
            nanr.append(d)
            gains.append(split.gain)
            # Next level's nodes: the smaller child of each split node (slots 0 .. m-1, built
            # from its rows), the larger (m .. 2m-1, by subtraction), then the nodes the split
            # is not valid in, carried down whole (2m .., their leaves' children together).
            split_nodes = np.flatnonzero(valid)
            carried = np.flatnonzero(~valid)
            m = split_nodes.size
            small_right = right[split_nodes, 2] < left[split_nodes, 2]
            rank = np.empty(n_nodes, dtype=np.int64)
            rank[split_nodes] = np.arange(m)
            rank[carried] = 2 * m + np.arange(carried.size)
            to_left = np.where(valid, rank + m * small_right[np.minimum(rank, m - 1)], rank) \
                if m else rank
            to_right = np.where(valid, rank + m * ~small_right[np.minimum(rank, m - 1)],
                                rank) if m else rank
            owner = np.concatenate([to_left[owner], to_right[owner]])
            build_next = level + 1 < p.max_depth
            new_slot = np.where(owner < m, owner, -1).astype(np.int32) if build_next else None
            listing = hists.row_list(rows.size) if build_next else (None, None)
            X_f, (f_local,) = hists.columns(np.array([f], dtype=np.int32))
            _partition.apply_level_oblivious(X_f, rows, node, int(f_local), b, d, level,
                                             hists.missing_bin, hists.n_threads,
                                             new_slot, *listing,
                                             cat_sets=np.array(sets, np.uint32).reshape(-1, 8))
            if build_next:
                hist = hists.build_children(inputs, node, new_slot, hist,
                                            split_nodes.tolist(), listing, level,
                                            carried.tolist())
        depth = len(feats)
        n_leaves = 1 << depth
        # The leaves of a node share its value: group = the node's first leaf.
        first = np.full(int(owner.max()) + 1, n_leaves, dtype=np.int64)
        np.minimum.at(first, owner, np.arange(n_leaves))
        group = first[owner]
        tree = ObliviousTree(
            feature=np.array(feats, dtype=np.int32), bin=np.array(bins, dtype=np.int32),
            nan_right=np.array(nanr, dtype=np.uint8), gain=np.array(gains, dtype=np.float64),
            value=np.zeros(n_leaves), cat_sets=np.array(sets, np.uint32).reshape(-1, 8))
        return tree, node, group, None

    def apply(self, grower: Any, tree: ObliviousTree, rows: Optional[np.ndarray],
              known: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> np.ndarray:
        """See :meth:`boostlib.engine.trees.TreeKind.apply` (``known`` is not used: a level
        pass is cheap)."""
        if rows is None:
            rows = np.arange(grower.X.shape[1], dtype=np.int32)
        rows = np.ascontiguousarray(rows, dtype=np.int32)
        node = np.zeros(rows.size, dtype=np.int32)
        X_tree, tree_features = grower.columns(tree.feature)
        for level in range(tree.depth):
            _partition.apply_level_oblivious(
                X_tree, rows, node, int(tree_features[level]), int(tree.bin[level]),
                int(tree.nan_right[level]), level, grower.missing_bin, grower.n_threads,
                cat_sets=tree.cat_sets)
        return node

    def split_mask(self, tree: ObliviousTree) -> np.ndarray:
        return tree.feature >= 0

    def split_covers(self, tree: ObliviousTree) -> np.ndarray:
        """Every row of the tree reaches each level."""
        n = int(np.count_nonzero(tree.feature >= 0))
        return np.full(n, float(np.sum(tree.cover)))

    def max_tree_bytes(self, max_depth: int, max_leaves: int, categorical: bool,
                       linear: bool = False) -> int:
        """Every level's split, and the ``2**max_depth`` leaves' values and covers (the
        leaf table is dense: ``max_leaves`` does not bound it)."""
        level = self.field_bytes(("feature", "bin", "nan_right", "gain"))
        if categorical:
            level += 8 * self.field_bytes(("cat_sets",))
        leaves = 1 << max_depth
        return (max_depth * level + leaves * self.field_bytes(("value", "cover"))
                + (self.linear_bytes(leaves, leaves, max_depth) if linear else 0))

    def leaf_mask(self, tree: ObliviousTree) -> np.ndarray:
        return np.ones(tree.value.size, dtype=bool)

    def path_features(self, tree: ObliviousTree) -> Tuple[np.ndarray, np.ndarray]:
        """Every leaf's path crosses every level: each leaf gets the levels' numeric
        features."""
        levels = np.unique(tree.feature[tree.nan_right != CAT_SPLIT]).astype(np.int32)
        n = tree.value.size
        ptr = (np.arange(n + 1) * levels.size).astype(np.int32)
        return ptr, np.tile(levels, n)

    def node_arrays(self, tree: ObliviousTree) -> Dict[str, np.ndarray]:
        """The complete binary tree of the levels, nodes in breadth-first order: the node at
        depth ``l`` reached by the turns ``r_0 .. r_{l-1}`` (1: right) leads to the leaf
        ``sum_j r_j << j``."""
        depth = tree.depth
        n_inner = (1 << depth) - 1
        n = 2 * n_inner + 1
        level = np.floor(np.log2(np.arange(n) + 1)).astype(np.int64)
        inner = np.arange(n) < n_inner
        left = np.where(inner, 2 * np.arange(n) + 1, -1)
        right = np.where(inner, 2 * np.arange(n) + 2, -1)
        bits = np.zeros(n, dtype=np.int64)          # the turns taken to reach each node
        for k in range(n_inner):
            bits[left[k]] = bits[k]
            bits[right[k]] = bits[k] | (1 << level[k])
        lvl = np.minimum(level, max(depth - 1, 0))
        cover = None
        if tree.cover is not None:     # a node's cover: the sum of its leaves', level by level
            cover = np.empty(n)
            cover[n_inner:] = tree.cover[bits[n_inner:]]
            for lv in range(depth - 1, -1, -1):     # level lv: nodes 2**lv - 1 .. 2**(lv+1) - 2
                lo, hi = (1 << lv) - 1, (1 << (lv + 1)) - 1
                cover[lo:hi] = cover[2 * lo + 1:2 * hi + 1].reshape(-1, 2).sum(axis=1)
        return dict(feature=np.where(inner, tree.feature[lvl] if depth else -1, -1),
                    bin=np.where(inner, tree.bin[lvl] if depth else 0, 0),
                    nan_right=np.where(inner, tree.nan_right[lvl] if depth else 0, 0),
                    left=left, right=right,
                    value=np.where(inner, 0.0, tree.value[np.where(inner, 0, bits)]),
                    cover=cover, cat_sets=tree.cat_sets)

    def pack(self, trees: List[ObliviousTree]) -> Dict[str, np.ndarray]:
        return dict(
            split_feature=self._cat([t.feature for t in trees], np.int32),
            split_bin=self._cat(self._set_ids(trees), np.int32),
            cat_sets=self._sets(trees),
            nan_right=self._cat([t.nan_right for t in trees], np.uint8),
            split_offset=self._offsets([t.feature.size for t in trees]),
            leaf_value=self._cat([t.value for t in trees], np.float64),
            leaf_offset=self._offsets([t.value.size for t in trees]))

    def predict_prepared(self, X_binned: np.ndarray, out: np.ndarray,
                         prepared: Dict[str, Any], coef: np.ndarray, n_threads: int) -> None:
        scratch = np.empty(X_binned.shape[1], dtype=np.int32)
        _predictor.predict_oblivious(X_binned, coef=coef, out=out, scratch=scratch,
                                     n_threads=n_threads, **prepared)

    def from_document(self, value: Any, path: str, n_borders: np.ndarray,
                      reader: Any) -> ObliviousTree:
        r = reader
        r.check_keys(value, self.document_keys(value), path)
        depth = r.length(value, "feature", path)
        if depth > MAX_DEPTH:
            raise r.fail(f"{path}.feature", f"has {depth} entries, at most {MAX_DEPTH} allowed")
        per = f"expected {depth}, one per level"
        feature = r.ints(value, "feature", path, depth, per, 0, n_borders.size - 1)
        bins = r.ints(value, "bin", path, depth, per, 0, r.MAX_BINS)
        nan_right = r.ints(value, "nan_right", path, depth, per, 0, CAT_SPLIT)
        gain = r.floats(value, "gain", path, depth, per)
        cat_sets = read_cat_sets(value, path, reader, bins, nan_right, np.ones(depth, bool))
        for problem in (bins_in_range(bins, feature, n_borders, nan_right != CAT_SPLIT),
                        gains_non_negative(gain)):
            if problem is not None:
                raise r.fail(f"{path}.{problem[0]}", problem[1])
        leaves = r.floats(value, "value", path, 1 << depth,
                          f"a tree of depth {depth} has {1 << depth} leaves")
        return ObliviousTree(feature=feature.astype(np.int32), bin=bins.astype(np.int32),
                             nan_right=nan_right.astype(np.uint8), gain=gain, value=leaves,
                             cat_sets=cat_sets,
                             cover=read_cover(value, path, reader, leaves.size),
                             **read_linear(value, path, reader, leaves.size,
                                           n_borders.size))
