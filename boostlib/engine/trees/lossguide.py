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

from ..._kernels import _partition, _splitting
from . import compiled
from .base import CAT_SPLIT
from .depthwise import DepthwiseKind, DepthwiseTree, NodeRules


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
    split: Any = None   # (feature, bin, direction, gain, left sum, right sum, left set)
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
        hists = grower.histograms
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
        rules = NodeRules(grower)
        self._search(grower, hist, leaves, noise_std, split_rng, rules)
        free_slot = 1
        while len(leaves) < max_leaves:
            best = None
            for leaf in leaves:
                if leaf.split is not None and (best is None or leaf.split[3] > best.split[3]):
                    best = leaf
            if best is None:
                break
            f, b, d, gn, cl, cr, left_set = best.split
            if d == CAT_SPLIT:              # the set is stored once the split is taken
                sets.append(left_set)
                b = len(sets) - 1
            k = best.node
            feature[k], bin_[k], nanr[k], gain[k] = f, b, d, gn
            left_c[k], right_c[k] = len(feature), len(feature) + 1
            for _ in range(2):
                feature.append(-1), bin_.append(0), nanr.append(0), left_c.append(-1)
                right_c.append(-1), gain.append(0.0)
            rules.split(hist, k, best.slot, f, b, d, left_c[k], right_c[k])
            X_f, local = grower.columns(np.array([f], dtype=np.int32))
            cat_sets = np.array(sets, dtype=np.uint32).reshape(-1, 8) if d == CAT_SPLIT \
                else None
            n_left = _partition.split_segment(X_f, rows, order, best.start, best.stop,
                                              int(local[0]), b, d, grower.missing_bin,
                                              scratch, cat_sets=cat_sets)
            mid = best.start + n_left
            left = _Leaf(left_c[k], -1, best.start, mid, best.depth + 1, dead=best.dead)
            right = _Leaf(right_c[k], -1, mid, best.stop, best.depth + 1, dead=best.dead)
            leaves = [leaf for leaf in leaves if leaf is not best] + [left, right]
            if best.depth + 1 >= p.max_depth or len(leaves) >= max_leaves or (
                    mid - best.start < grower.min_split_rows
                    and best.stop - mid < grower.min_split_rows):
                continue        # the children will not be split: no histograms needed
            # the smaller child's histogram from its rows, the larger's by subtraction (the
            # smaller by the split's sums, as depthwise trees choose: the same histograms)
            small, big = (right, left) if cr < cl else (left, right)
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
        """Find the best split of each of ``leaves``: ``leaf.split`` = (feature, bin,
        direction, gain, left sum, right sum, left set), None without one of positive gain;
        a categorical split has direction ``CAT_SPLIT`` and its set's bits as the left set
        (the bin, its index among the tree's sets, is given when the split is taken)."""
        p = grower.params
        candidates = [leaf for leaf in leaves if leaf.depth < p.max_depth]
        for leaf in leaves:
            leaf.split = None
        if not candidates:
            return
        k = len(candidates)
        n_features = grower.X.shape[0]
        noise = grower._noise(split_rng, noise_std, k)
        best = np.empty((k, 7))
        per_feature = np.empty((k, n_features, 4))
        args = rules.search_args([leaf.node for leaf in candidates])
        if p.prune_features:        # search the features alive in each leaf
            dead = np.array([leaf.dead for leaf in candidates])
            allowed = args.get("allowed", np.ones((k, n_features), dtype=np.uint8)) != 0
            args["allowed"] = (allowed & ~dead).astype(np.uint8)
        _splitting.find_split_nodes(
            hist, np.asarray([leaf.slot for leaf in candidates], dtype=np.int32),
            grower.offsets, grower.nbnm, grower.is_cat, grower.cat_params,
            p.l2_regularization, grower._msl, grower._mcw, noise,
            per_feature, best, grower.n_threads, **args)
        if p.prune_features:        # a searched feature without a gainful split dies here
            for i, leaf in enumerate(candidates):
                leaf.dead = dead[i] | (args["allowed"][i].astype(bool)
                                       & (per_feature[i, :, 1] < 0))
        for leaf, (f, b, d, gn, cl, cr, has_missing) in zip(candidates, best.tolist()):
            if f < 0:
                continue
            f, b, d = int(f), int(b), int(d)
            left_set = None
            if grower.is_cat.size and grower.is_cat[f]:
                left_set = grower._category_set(hist, [leaf.slot], f, b, d)[1]
                b, d = -1, CAT_SPLIT
            elif not has_missing:        # no missing rows seen: they follow the majority
                d = int(cr > cl)
            leaf.split = (f, b, d, gn, cl, cr, left_set)

