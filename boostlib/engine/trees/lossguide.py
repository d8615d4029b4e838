"""Leaf-wise (best-first) trees, as LightGBM grows them: the leaf whose best split gains most
is split next, until the tree has ``max_leaves`` leaves, no leaf has a split of positive
gain, or the leaves that do are at ``max_depth``.

The trees are stored, walked and predicted exactly as depthwise trees (node arrays, node 0
the root); only the growth differs. Each leaf's rows are a contiguous segment of one
position array; splitting a leaf partitions its segment in place
(``boostlib._kernels._partition.split_segment``), the smaller child's histogram is built
from its rows alone and the larger child's is the parent's minus it, written over the
parent's slot: a tree needs ``max_leaves`` histogram slots, and every row is read once per
level of its own leaf, as in level-wise growth.

The loop below handles every case; in the common one the same loop runs compiled
(:mod:`boostlib.engine.trees.compiled`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List

import numpy as np

from ..._kernels import _partition
from ..split_rules import CANDIDATE_BIN, CANDIDATE_COLUMNS, NodeRules
from . import compiled
from .base import CAT_SPLIT
from .depthwise import DepthwiseKind, DepthwiseTree


@dataclass
class LossguideTree(DepthwiseTree):
    """A leaf-wise tree: a
    :class:`~boostlib.engine.trees.depthwise.DepthwiseTree` whose nodes were split
    best-first."""

    policy: str = field(default="lossguide", init=False)


@dataclass(eq=False)
class _Leaf:
    node: int           # node id in the tree
    slot: int           # histogram slot
    start: int          # segment of the position array
    stop: int
    depth: int
    split: Any = None   # the best Split of the leaf, or None
    dead: Any = None    # prune_features: bool per feature, True where it is not searched


class LossguideKind(DepthwiseKind):
    """``grow_policy="lossguide"``: leaf-wise trees of at most ``max_leaves`` leaves."""

    name = "lossguide"
    tree_class = LossguideTree

    def grow(self, grower: Any, rows: np.ndarray, g: np.ndarray, h: np.ndarray,
             noise_std: float, split_rng: Any, prepared: Any = None):
        """See :meth:`boostlib.engine.trees.TreeKind.grow`."""
        p = grower.params
        max_leaves = p.max_leaves
        if max_leaves >= 2 and compiled.applies(grower, noise_std, rows.size, monotone=True,
                                                  node_samples=True):
            fields, node, bounds = compiled.grow(grower, rows, g, h, prepared, max_leaves,
                                                 False)
            return LossguideTree(**fields, value=np.zeros(fields["feature"].size)), node, \
                None, bounds
        hists, split_rules = grower.histograms, grower.rules
        hist = hists.buffer(0, max_leaves)      # before root, which writes slot 0
        node, inputs, _ = hists.root(rows, g, h, prepared)
        n_fit = rows.size
        order = np.arange(n_fit, dtype=np.int32)
        scratch = hists.work("lossguide_scratch", (n_fit, 1), 0, np.int32)[:, 0]
        feature, bin_, nanr, left_c, right_c, gain = [-1], [0], [0], [-1], [-1], [0.0]
        sets: List[np.ndarray] = []
        leaves = [_Leaf(0, 0, 0, n_fit, 0)]
        if p.prune_features:
            leaves[0].dead = np.zeros(grower.X.shape[0], dtype=bool)
        rules = split_rules.node_rules()
        self._search(grower, hist, leaves, noise_std, split_rng, rules)
        free_slot = 1
        while len(leaves) < max_leaves:
            best = None
            for leaf in leaves:
                if leaf.split is not None and (best is None
                                               or leaf.split.gain > best.split.gain):
                    best = leaf
            if best is None:
                break
            split = best.split
            f, b, d = split.feature, split.bin, split.direction
            if split.left_set is not None:      # the set is stored once the split is taken
                sets.append(split.left_set)
                b = len(sets) - 1
            k = best.node
            feature[k], bin_[k], nanr[k], gain[k] = f, b, d, split.gain
            left_c[k], right_c[k] = len(feature), len(feature) + 1
            for _ in range(2):
                feature.append(-1), bin_.append(0), nanr.append(0), left_c.append(-1)
                right_c.append(-1), gain.append(0.0)
            rules.split(hist, k, best.slot, split, left_c[k], right_c[k])
            X_f, local = hists.columns(np.array([f], dtype=np.int32))
            cat_sets = np.array(sets, dtype=np.uint32).reshape(-1, 8) if d == CAT_SPLIT \
                else None
            n_left = _partition.split_segment(X_f, rows, order, best.start, best.stop,
                                              int(local[0]), b, d, hists.missing_bin,
                                              scratch, cat_sets=cat_sets)
            mid = best.start + n_left
            left = _Leaf(left_c[k], -1, best.start, mid, best.depth + 1, dead=best.dead)
            right = _Leaf(right_c[k], -1, mid, best.stop, best.depth + 1, dead=best.dead)
            leaves = [leaf for leaf in leaves if leaf is not best] + [left, right]
            min_rows = split_rules.min_split_rows
            if best.depth + 1 >= p.max_depth or len(leaves) >= max_leaves or (
                    mid - best.start < min_rows and best.stop - mid < min_rows):
                continue        # the children will not be split: no histograms needed
            # the smaller child's histogram from its rows, the larger's by subtraction (the
            # smaller by the split's sums, as depthwise trees choose: the same histograms)
            small, big = ((right, left) if split.right_count < split.left_count
                          else (left, right))
            small.slot, big.slot = free_slot, best.slot
            free_slot += 1
            hists.build_segment(inputs, order[small.start:small.stop],
                                hist[small.slot:small.slot + 1])
            np.subtract(hist[big.slot], hist[small.slot], out=hist[big.slot])
            self._search(grower, hist, [left, right], noise_std, split_rng, rules)
        for leaf in leaves:
            node[order[leaf.start:leaf.stop]] = leaf.node
        tree = LossguideTree.grown(feature, bin_, nanr, left_c, right_c, gain, sets)
        return tree, node, None, rules.node_bounds(len(feature))

    @staticmethod
    def _search(grower: Any, hist: np.ndarray, leaves: List[_Leaf], noise_std: float,
                split_rng: Any, rules: NodeRules) -> None:
        """Find the best split of each of ``leaves``: ``leaf.split``, a
        :class:`~boostlib.engine.split_rules.Split`, or None without one of positive gain
        (a categorical split's bin, its index among the tree's sets, is given when the
        split is taken)."""
        p = grower.params
        split_rules = grower.rules
        candidates = [leaf for leaf in leaves if leaf.depth < p.max_depth]
        for leaf in leaves:
            leaf.split = None
        if not candidates:
            return
        k = len(candidates)
        n_features = grower.X.shape[0]
        noise = split_rules.noise(split_rng, noise_std, k)
        per_feature = (np.empty((k, n_features, CANDIDATE_COLUMNS)) if p.prune_features
                       else None)
        args = rules.search_args([leaf.node for leaf in candidates])
        if p.prune_features:        # search the features alive in each leaf
            dead = np.array([leaf.dead for leaf in candidates])
            allowed = args.get("allowed", np.ones((k, n_features), dtype=np.uint8)) != 0
            args["allowed"] = (allowed & ~dead).astype(np.uint8)
        found = split_rules.node_splits(
            hist, np.asarray([leaf.slot for leaf in candidates], dtype=np.int32), noise,
            per_feature, **args)
        if p.prune_features:        # a searched feature without a gainful split dies here
            for i, leaf in enumerate(candidates):
                leaf.dead = dead[i] | (args["allowed"][i].astype(bool)
                                       & (per_feature[i, :, CANDIDATE_BIN] < 0))
        for leaf, split in zip(candidates, found):
            leaf.split = split
