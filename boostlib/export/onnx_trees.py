"""The trees of a boostlib model as the node and leaf arrays of ONNX's ``TreeEnsemble``.

``TreeEnsemble`` (domain ``ai.onnx.ml``, opset 5) holds every tree of a model in flat
arrays: the *nodes* (interior nodes: a feature, a comparison, a true and a false branch, and
the branch NaN takes) and the *leaves* (a weight and the output it adds to). This module
builds those arrays with numpy alone; :mod:`boostlib.export.onnx_graph` puts them into an
ONNX graph.

Every tree kind is read through :meth:`~boostlib.engine.trees.TreeKind.node_arrays`, which
gives an explicit binary tree for any kind (the levels of an oblivious tree expanded into
``2**depth`` leaves). A split node of feature ``f`` at bin ``b`` becomes:

* numeric feature: ``x <= threshold`` (``BRANCH_LEQ``), true branch left, with
  ``threshold`` the largest value of the graph's type that is ``<=`` the float64 border
  ``borders_[f][b]`` (``+inf`` for ``b == len(borders_[f])``: every non-missing value goes
  left). For an input ``x`` of that type, ``x <= threshold`` exactly when
  ``x <= borders_[f][b]``, so the graph bins every input as boostlib does;
* categorical feature: a test of the category *code* against a set (``BRANCH_MEMBER``). The
  codes with a bin of their own that go one way are listed; every other code (unseen in
  training, or rare ones sharing the "other" bin) goes where boostlib sends its bin (the
  "other" bin, else the missing bin). When no code needs listing, the node tests
  ``x <= +inf`` (true for every non-missing value) instead of an empty set;
* NaN follows ``nodes_missing_value_tracks_true`` to the side boostlib sends missing values.

Leaf weights are ``coef[t] * value``: the term's coefficient is folded in, so the operator's
sum over trees (per output) plus the bias is the raw score.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

from ..engine.binning import BinMapper
from ..engine.ensemble import Ensemble
from ..engine.linear_leaves import constant_part, has_linear
from ..engine.trees import TreeGroup
from ..engine.trees.base import CAT_SPLIT, set_members

#: ``nodes_modes`` values of ``TreeEnsemble``.
BRANCH_LEQ = 0
BRANCH_MEMBER = 6


def float32_floor(values: Any) -> np.ndarray:
    """The largest float32 ``<=`` each float64 value.

    For every float32 ``x`` (a float32 converts to float64 exactly), ``x <= v`` holds
    exactly when ``x <= float32_floor(v)``. Values above float32's range give its largest
    finite value, values below it ``-inf``; infinities stay.

    Parameters
    ----------
    values : array-like of float64
        Finite or infinite values (no NaN).

    Returns
    -------
    ndarray of float32
    """
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        out = np.atleast_1d(v.astype(np.float32))
    above = out.astype(np.float64) > np.atleast_1d(v)
    out[above] = np.nextafter(out[above], np.float32(-np.inf))
    return out.reshape(v.shape)


@dataclass
class TreeEnsembleArrays:
    """The attributes of one ``TreeEnsemble`` node (``SUM`` aggregation, no transform).

    Attributes
    ----------
    n_targets : int
        Number of outputs (the model's ``n_outputs``).
    dtype : numpy dtype
        float32 or float64: the type of the input, the thresholds, the set members and the
        leaf weights.
    tree_roots : list of int
        The node index of every tree's root.
    nodes_modes : list of int
        ``BRANCH_LEQ`` or ``BRANCH_MEMBER`` per node.
    nodes_featureids, nodes_truenodeids, nodes_falsenodeids : list of int
        Per node: the feature, and the index of the true and false branches (a node's or
        a leaf's).
    nodes_trueleafs, nodes_falseleafs, nodes_missing_value_tracks_true : list of int
        Per node: whether each branch is a leaf, and whether NaN takes the true branch.
    nodes_splits : ndarray
        Per node, the threshold (unused, 0, for set tests).
    leaf_weights : ndarray
        Per leaf, ``coef * value``.
    leaf_targetids : list of int
        Per leaf, its output.
    membership_values : ndarray
        The sets of the ``BRANCH_MEMBER`` nodes in node order, each followed by a NaN
        (empty without such nodes).
    """

    n_targets: int
    dtype: Any
    tree_roots: List[int] = field(default_factory=list)
    nodes_modes: List[int] = field(default_factory=list)
    nodes_featureids: List[int] = field(default_factory=list)
    nodes_truenodeids: List[int] = field(default_factory=list)
    nodes_trueleafs: List[int] = field(default_factory=list)
    nodes_falsenodeids: List[int] = field(default_factory=list)
    nodes_falseleafs: List[int] = field(default_factory=list)
    nodes_missing_value_tracks_true: List[int] = field(default_factory=list)
    nodes_splits: List[float] = field(default_factory=list)
    leaf_weights: List[float] = field(default_factory=list)
    leaf_targetids: List[int] = field(default_factory=list)
    membership_values: List[float] = field(default_factory=list)

    @property
    def n_nodes(self) -> int:
        return len(self.nodes_modes)

    @property
    def n_leaves(self) -> int:
        return len(self.leaf_weights)


class _Splits:
    """How the splits of one bin mapper read as ONNX tests, in one dtype."""

    def __init__(self, mapper: BinMapper, dtype: Any):
        self.mapper = mapper
        self.dtype = np.dtype(dtype)
        # thresholds[f][b]: the test value of a numeric split at bin b (b == len: +inf)
        self.thresholds = []
        for borders in mapper.borders_:
            t = np.append(np.asarray(borders, dtype=np.float64), np.inf)
            self.thresholds.append(float32_floor(t) if self.dtype == np.float32 else t)

    def left_bins(self, f: int, b: int, nan_right: int, cat_sets: np.ndarray) -> np.ndarray:
        """Which of the 256 bin values of categorical feature ``f`` a split sends left."""
        left = np.zeros(256, dtype=bool)
        if nan_right == CAT_SPLIT:
            left[set_members(cat_sets[b])] = True
        else:                              # a threshold on category bins (not grown so)
            left[:b + 1] = True
            left[self.mapper.missing_bin] = nan_right == 0
        return left

    def category_test(self, f: int, left: np.ndarray):
        """``(mode, threshold, members, true_is_left, nan_to_true)`` of a categorical split
        sending the bins ``left`` (boolean, 256 bin values) left."""
        mapper = self.mapper
        codes = mapper.cat_codes_[f]
        rest_bin = codes.size if mapper.cat_other_[f] else mapper.missing_bin
        rest_left = bool(left[rest_bin])
        nan_left = bool(left[mapper.missing_bin])
        members = codes[left[:codes.size] != rest_left]   # the codes not going with the rest
        if members.size:
            true_is_left = not rest_left
            return BRANCH_MEMBER, 0.0, members, true_is_left, nan_left == true_is_left
        # every code goes with the rest: "x <= +inf" holds for every non-missing value
        return BRANCH_LEQ, np.inf, None, rest_left, nan_left == rest_left


def _trees_with_targets(ensemble: Ensemble):
    """``(scalar tree, coefficient, output)`` of every tree of the model."""
    for term, c in zip(ensemble.trees, ensemble.coef.tolist()):
        trees = term.trees if isinstance(term, TreeGroup) else [term]
        for k, tree in enumerate(trees):
            yield tree, c, k


def tree_ensemble_arrays(ensemble: Ensemble, dtype: Any = np.float32) -> TreeEnsembleArrays:
    """The ``TreeEnsemble`` attributes of a model's trees (without its bias).

    Parameters
    ----------
    ensemble : Ensemble
        The model's trees, coefficients and bin borders.
    dtype : {numpy.float32, numpy.float64}, default numpy.float32
        The type the graph computes in.

    Returns
    -------
    TreeEnsembleArrays
        ``sum over trees of the leaf weights reached`` per output is
        ``sum_t coef[t] * tree_t(x)``. A model without trees gets one single-leaf tree of
        weight 0 per output (the operator needs a tree).
    """
    out = TreeEnsembleArrays(n_targets=ensemble.n_outputs, dtype=np.dtype(dtype))
    splits = _Splits(ensemble.bin_mapper, dtype)
    kind = ensemble.kind
    for tree, c, k in _trees_with_targets(ensemble):
        _add_tree(out, kind.node_arrays(tree), c, k, splits)
    if not ensemble.trees:
        for k in range(ensemble.n_outputs):
            _add_tree(out, _single_leaf(), 0.0, k, splits)
    return out


@dataclass
class LinearLeafArrays:
    """The linear parts of a model's trees with linear leaves, as the graph reads them.

    ``index`` is a ``TreeEnsemble`` of those trees, one target each, whose leaves weigh the
    row of the tables below that holds their slot; the tables pad every slot to ``P``
    entries (the most a slot has, at least 1).

    Attributes
    ----------
    index : TreeEnsembleArrays
        ``L`` targets, one per linear tree.
    feature : ndarray of int64 (n_rows, P)
        Each entry's feature (0 in padding).
    weight, mean : ndarray (n_rows, P)
        ``coef * w`` and ``m`` of each entry (0 in padding).
    used : ndarray of bool (n_rows, P)
        Which entries are real.
    output : ndarray (L, K)
        1 where a linear tree adds to an output.
    """

    index: TreeEnsembleArrays
    feature: np.ndarray
    weight: np.ndarray
    mean: np.ndarray
    used: np.ndarray
    output: np.ndarray


def linear_leaf_arrays(ensemble: Ensemble, dtype: Any = np.float32
                       ) -> Optional[LinearLeafArrays]:
    """The linear parts of ``ensemble``'s trees (None when it has no linear leaves): each
    row of the graph adds, for every linear tree, ``sum_p weight (x[feature] - mean)`` of
    its leaf's row, or nothing when one of the leaf's features is missing."""
    linear = [(t, c, k) for t, c, k in _trees_with_targets(ensemble)
              if has_linear(t) and c != 0.0]
    if not linear:
        return None
    dt = np.dtype(dtype)
    index = TreeEnsembleArrays(n_targets=len(linear), dtype=dt)
    splits = _Splits(ensemble.bin_mapper, dtype)
    kind = ensemble.kind
    width = max(1, max(int(np.diff(t.linear_ptr).max(initial=0)) for t, _, _ in linear))
    n_rows = sum(t.value.size for t, _, _ in linear)
    feature = np.zeros((n_rows, width), dtype=np.int64)
    weight, mean = np.zeros((n_rows, width)), np.zeros((n_rows, width))
    used = np.zeros((n_rows, width), dtype=bool)
    output = np.zeros((len(linear), ensemble.n_outputs))
    base = 0
    for target, (tree, c, k) in enumerate(linear):
        slots = tree.value.size
        rows = np.arange(base, base + slots, dtype=np.float64)
        _add_tree(index, kind.node_arrays(constant_part(tree, rows)), 1.0, target, splits)
        ptr = tree.linear_ptr
        for s in np.flatnonzero(np.diff(ptr)).tolist():
            e = slice(ptr[s], ptr[s + 1])
            n = ptr[s + 1] - ptr[s]
            feature[base + s, :n] = tree.linear_feature[e]
            weight[base + s, :n] = c * tree.linear_weight[e]
            mean[base + s, :n] = tree.linear_mean[e]
            used[base + s, :n] = True
        output[target, k] = 1.0
        base += slots
    return LinearLeafArrays(index, feature, weight.astype(dt), mean.astype(dt), used,
                            output.astype(dt))


def _single_leaf() -> Dict[str, np.ndarray]:
    return dict(feature=np.array([-1]), bin=np.array([0]), nan_right=np.array([0]),
                left=np.array([-1]), right=np.array([-1]), value=np.array([0.0]),
                cat_sets=np.zeros((0, 8), dtype=np.uint32))


def _add_tree(out: TreeEnsembleArrays, nodes: Dict[str, np.ndarray], coef: float,
              target: int, splits: _Splits) -> None:
    """Append one tree (``node_arrays`` of it) whose leaves add ``coef * value`` to output
    ``target``."""
    left = np.asarray(nodes["left"], dtype=np.int64)
    right = np.asarray(nodes["right"], dtype=np.int64)
    value = np.asarray(nodes["value"], dtype=np.float64)
    split = left >= 0
    node_base, leaf_base = out.n_nodes, out.n_leaves
    leaves = np.flatnonzero(~split)
    out.leaf_weights.extend((coef * value[leaves]).tolist())
    out.leaf_targetids.extend([target] * leaves.size)
    out.tree_roots.append(node_base)
    if not split[0]:          # a single leaf: one node whose both branches reach it
        out.nodes_modes.append(BRANCH_LEQ)
        out.nodes_featureids.append(0)
        out.nodes_splits.append(0.0)
        out.nodes_truenodeids.append(leaf_base)
        out.nodes_falsenodeids.append(leaf_base)
        out.nodes_trueleafs.append(1)
        out.nodes_falseleafs.append(1)
        out.nodes_missing_value_tracks_true.append(0)
        return
    # ONNX index of every node: split nodes and leaves numbered apart, in node order
    index = np.where(split, node_base + np.cumsum(split) - 1,
                     leaf_base + np.cumsum(~split) - 1)
    feature = np.asarray(nodes["feature"], dtype=np.int64)
    bins = np.asarray(nodes["bin"], dtype=np.int64)
    nan_right = np.asarray(nodes["nan_right"], dtype=np.int64)
    cat_sets = np.asarray(nodes["cat_sets"], dtype=np.uint32).reshape(-1, 8)
    categorical = splits.mapper.categorical_
    for k in np.flatnonzero(split).tolist():
        f, b, r = int(feature[k]), int(bins[k]), int(nan_right[k])
        if categorical[f]:
            mode, threshold, members, true_is_left, nan_to_true = splits.category_test(
                f, splits.left_bins(f, b, r, cat_sets))
            if members is not None:
                out.membership_values.extend(members.tolist() + [np.nan])
        else:
            mode, threshold, true_is_left, nan_to_true = (
                BRANCH_LEQ, splits.thresholds[f][b], True, r == 0)
        true_child, false_child = (left[k], right[k]) if true_is_left else (right[k], left[k])
        out.nodes_modes.append(mode)
        out.nodes_featureids.append(f)
        out.nodes_splits.append(float(threshold))
        out.nodes_truenodeids.append(int(index[true_child]))
        out.nodes_trueleafs.append(int(not split[true_child]))
        out.nodes_falsenodeids.append(int(index[false_child]))
        out.nodes_falseleafs.append(int(not split[false_child]))
        out.nodes_missing_value_tracks_true.append(int(nan_to_true))


def as_arrays(arrays: TreeEnsembleArrays) -> Dict[str, Any]:
    """The operator's attributes as numpy arrays (tensor attributes) and int lists.

    Returns
    -------
    dict
        Keyword arguments for ``onnx.helper.make_node("TreeEnsemble", ...)`` once the
        arrays are made tensors; ``membership_values`` only when some node tests a set.
    """
    dt = arrays.dtype
    attrs: Dict[str, Any] = dict(
        n_targets=arrays.n_targets, aggregate_function=1, post_transform=0,
        tree_roots=arrays.tree_roots,
        nodes_modes=np.asarray(arrays.nodes_modes, dtype=np.uint8),
        nodes_featureids=arrays.nodes_featureids,
        nodes_splits=np.asarray(arrays.nodes_splits, dtype=np.float64).astype(dt),
        nodes_truenodeids=arrays.nodes_truenodeids,
        nodes_trueleafs=arrays.nodes_trueleafs,
        nodes_falsenodeids=arrays.nodes_falsenodeids,
        nodes_falseleafs=arrays.nodes_falseleafs,
        nodes_missing_value_tracks_true=arrays.nodes_missing_value_tracks_true,
        leaf_weights=np.asarray(arrays.leaf_weights, dtype=np.float64).astype(dt),
        leaf_targetids=arrays.leaf_targetids)
    if arrays.membership_values:
        attrs["membership_values"] = np.asarray(arrays.membership_values, dtype=dt)
    return attrs

