"""Trees grown in one compiled call (``boostlib._kernels._leafwise.grow_tree``).

Leaf-wise and depthwise trees are grown by Python loops over the split, partition and
histogram kernels, which handle every case. In the common case (no split noise, a dense
matrix, one machine; monotone constraints included) the best-first loop runs compiled
instead, a whole tree in one call, and gives the same tree: on small data a step's Python
and call overheads cost as much as its kernels. A column sample drawn per tree
(``colsample_bytree``) enters it as features dead from the root down. Column rules per
node (``colsample_bynode``, interaction constraints) come from a call back into Python
before each search, in the order the leaf-wise Python loop draws them; depthwise trees
with them keep the level-wise loop, which draws a level's samples at once. A depthwise
tree is the best-first tree of ``2**max_depth`` leaves (every split of positive gain is
taken), its nodes numbered level by level as the level-wise loop numbers them.

Depthwise trees take the compiled loop on small data only (:data:`DEPTHWISE_CELLS`). Past
it the level-wise loop is faster: it partitions and lists every row of a level in one
parallel pass, where the best-first loop partitions one leaf's segment at a time, on one
thread.
"""
from __future__ import annotations

import weakref
from typing import Any, Optional, Tuple

import numpy as np

from ..._kernels import _leafwise
from ..grow_errors import DerivativeOverflow

#: Whether trees use the compiled loop when they can (tests turn it off to compare).
ENABLED = True

#: Depthwise trees grow compiled up to this many fitted rows x histogram columns. The fit
#: time of the compiled loop against the level-wise one (trees of depth 6, 2 threads):
#: 0.79x at 1,000 rows and 0.74x at 10,000 (20 columns); on W1 data (28 columns), 0.99x at
#: 30,000 rows, 1.10x at 60,000, 1.17x at 100,000 and 1.87x at 1,000,000.
DEPTHWISE_CELLS = 500_000

#: Node arrays of a grown tree, in ``grow_tree``'s order.
FIELDS = ("feature", "bin", "nan_right", "left", "right", "gain", "cat_sets")


def applies(grower: Any, noise_std: float, n_fit: int, monotone: bool = False,
            node_samples: bool = False) -> bool:
    """Whether the compiled loop grows this tree: no column rules that differ between
    nodes unless ``node_samples`` (the leaf-wise loop's: it draws them in the order it
    searches the nodes; a column sample per tree is fine either way), no monotone
    constraints unless ``monotone`` (the caller takes the nodes' value intervals), no split
    noise, a dense matrix, one machine, scalar leaves (and a tree deeper than its root)."""
    rules = grower.rules.column_rules
    columns_ok = rules is None or not rules.per_node or node_samples
    return (ENABLED and n_fit > 0 and grower.X.shape[0] > 0 and grower.params.max_depth >= 1
            and isinstance(grower.X, np.ndarray)
            and (grower.rules.monotone is None or monotone) and columns_ok
            and noise_std == 0.0 and not grower.collective.distributed
            and grower.params.n_outputs == 1)


class _NodeFeatures:
    """``grow_tree``'s ``node_features``: the features each searched leaf may split on, from
    the column rules, given the features its path used (as ``NodeRules`` tracks them)."""

    def __init__(self, rules: Any):
        self.rules = rules
        self.paths = {0: frozenset()}

    def __call__(self, parent: int, feature: int, left: int, right: int) -> np.ndarray:
        if parent < 0:
            return self.rules.masks([self.paths[0]])
        path = self.paths[left] = self.paths[right] = self.paths[parent] | {feature}
        return self.rules.masks([path, path])


#: Each grower's settings of the compiled loop (made on its first compiled tree).
_SETTINGS: "weakref.WeakKeyDictionary[Any, _leafwise.GrowSettings]" = \
    weakref.WeakKeyDictionary()


def settings(grower: Any) -> _leafwise.GrowSettings:
    """What the compiled loop reads unchanged through ``grower``'s fit: its binned data, the
    histograms' layout and tables, the split rules' parameters (made once, then kept; made
    again when the fit changed its thread count)."""
    made = _SETTINGS.get(grower)
    if made is None or made.n_threads != grower.histograms.n_threads:
        hists, rules, p = grower.histograms, grower.rules, grower.params
        made = _SETTINGS[grower] = _leafwise.GrowSettings(
            hists.X, hists.offsets, hists.nbnm, rules.l2, p.max_depth, hists.missing_bin,
            hists.n_threads, is_cat=rules.is_cat, cat_params=rules.cat_params,
            prune_features=p.prune_features, monotone=rules.monotone,
            min_split_rows=rules.min_split_rows, **hists.kernel_tables())
    return made


def grow(grower: Any, rows: np.ndarray, g: np.ndarray, h: np.ndarray, prepared: Any,
         max_leaves: int, level_order: bool
         ) -> Tuple[dict, np.ndarray, Optional[np.ndarray]]:
    """Grow one tree: its node arrays by :data:`FIELDS` name, every fitted row's node, and
    with monotone constraints the (n_nodes, 2) intervals of the nodes' values (else None).

    The arguments are those of :meth:`~boostlib.engine.trees.TreeKind.grow`, with the
    leaf limit and the numbering (``level_order``: the depthwise loop's)."""
    p = grower.params
    hists, split_rules = grower.histograms, grower.rules
    hist = hists.buffer(0, _leafwise.slots_needed(p.max_depth, max_leaves, rows.size))
    inputs = hists.inputs(rows, g, h, prepared)
    counts = hists.root_counts(inputs, rows.size == hists.n_rows and prepared is None)
    node = hists.row_arrays.empty((rows.size,), np.int32)     # every entry written
    rules = split_rules.column_rules
    skipped = None if rules is None else rules.tree_skipped()
    per_node = None if rules is None or not rules.per_node else _NodeFeatures(rules)
    # (a tree has at most a leaf per row: depthwise trees pass 2**max_depth leaves)
    max_nodes = 2 * min(max_leaves, max(rows.size, 2)) - 1
    bounds = None if split_rules.monotone is None else np.empty((max_nodes, 2))
    sums = np.empty((max_nodes, 3))
    values = np.empty((2, max_nodes))
    arrays = _leafwise.grow_tree(
        settings(grower), rows, inputs.X, inputs.g, inputs.h, hist,
        split_rules.min_samples_leaf, split_rules.min_child_weight, max_leaves, node,
        level_order=level_order, skip_features=skipped, node_bounds=bounds,
        node_features=per_node, value_gradient=g, value_hessian=h, node_sums=sums,
        node_values=values, build_root=True, root_counts=counts)
    if arrays is None:
        raise DerivativeOverflow()
    fields = dict(zip(FIELDS, arrays))
    n_nodes = fields["feature"].size
    grower.keep_node_sums(node, g, h, sums[:n_nodes], values[:, :n_nodes])
    if bounds is not None:
        bounds = bounds[:n_nodes].copy()
    return fields, node, bounds
