"""The features a fit's trees can split on: its working features.

A feature whose binned training values admit no split is never split by any tree of the
fit: a candidate needs ``min_samples_leaf`` rows on each side (one, at least), and a node's
row counts are its parent's or fewer. Such features (constant after binning: a column
without a stored value in sparse input, a single bin, or too few rows away from the bin most
rows hold) are dropped once, when the fit starts, as LightGBM's Dataset drops its trivial
features. The grower sees only the working features: its histograms, the split search's
work arrays, the bundling plan, column rules and monotone constraints are sized by them
and by their bins, so a column that cannot split costs nothing while trees grow. Trees
leave the grower naming the training matrix's features (:class:`WorkingFeatures` maps
them), so importances, SHAP values and model files name them too.

The trees are those of a fit on every feature, bit for bit, with one reservation: the
features are bundled (:mod:`boostlib.engine.bundling`) without the dropped ones. Where
these changed the plan (whether to bundle, which features share a column, how many bins
the columns have), a bundled feature's default bin (the node's total minus its other
bins) or a histogram summed in parts (:mod:`boostlib.engine.row_entries`) can round
differently in its last bit, when the derivatives' float sums depend on their order.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from .sparse_binned import SparseBinned


@dataclass(frozen=True, eq=False)
class WorkingFeatures:
    """The features the grower works on, as indices of the training matrix's features.

    Attributes
    ----------
    original : ndarray of intp, shape (n_working,)
        The training matrix's index of each working feature, ascending (so the ties that
        go to the smaller feature go to the same feature in both numberings).
    n_features : int
        Features of the training matrix.
    """

    original: np.ndarray
    n_features: int

    @classmethod
    def every(cls, n_features: int) -> "WorkingFeatures":
        """All ``n_features`` features, in order."""
        return cls(np.arange(n_features, dtype=np.intp), int(n_features))

    @property
    def every_feature(self) -> bool:
        """Whether no feature was dropped (the two numberings are then the same)."""
        return self.original.size == self.n_features

    def take(self, per_feature: Optional[np.ndarray]) -> Optional[np.ndarray]:
        """The working features' entries of an array over the training matrix's features
        (axis 0; None stays None)."""
        if per_feature is None or self.every_feature:
            return per_feature
        return np.asarray(per_feature)[self.original]

    def select(self, X_binned: Union[np.ndarray, SparseBinned]) -> Union[np.ndarray,
                                                                       SparseBinned]:
        """The training matrix (feature-major, dense or a
        :class:`~boostlib.engine.sparse_binned.SparseBinned`) restricted to the working
        features: ``X_binned`` itself when no feature was dropped."""
        if self.every_feature:
            return X_binned
        if isinstance(X_binned, SparseBinned):
            return X_binned.subset(self.original)
        return np.ascontiguousarray(X_binned[self.original])

    def original_tree(self, tree: Any) -> Any:
        """``tree``, grown on the working features, made to name the training matrix's
        features (in place; leaves keep -1)."""
        if not self.every_feature:
            f = tree.feature
            tree.feature = np.where(f >= 0, self.original[np.maximum(f, 0)],
                                    f).astype(f.dtype)
        return tree

    def working_tree(self, tree: Any) -> Any:
        """A shallow copy of ``tree`` (naming the training matrix's features) that names
        working features instead; it shares every other array with ``tree``, so leaf values
        changed in it change in ``tree``. ``tree`` itself when no feature was dropped."""
        if self.every_feature:
            return tree
        f = tree.feature
        out = copy.copy(tree)
        out.feature = np.where(f >= 0, np.searchsorted(self.original, np.maximum(f, 0)),
                               f).astype(f.dtype)
        return out


def splittable(X_binned: Union[np.ndarray, SparseBinned], n_bins_nonmissing: np.ndarray,
               min_samples_leaf: int, categorical: Optional[np.ndarray] = None) -> np.ndarray:
    """Which features of a binned training matrix some split could use.

    A numeric feature can split when one of its thresholds, with the missing values sent
    either way, leaves at least ``min_samples_leaf`` rows (and at least one) on each side;
    a categorical one when its rows fall in two bins or more (its splits are sets of bins).
    Only row counts decide: hessians and weights could rule a candidate out as well, but a
    feature kept in vain only costs its bins.

    Parameters
    ----------
    X_binned : ndarray of uint8, shape (n_features, n_rows), or SparseBinned
    n_bins_nonmissing : ndarray of int, shape (n_features,)
        Bins in use per feature; a binned value above them is missing.
    min_samples_leaf : int
    categorical : ndarray of bool, shape (n_features,), optional

    Returns
    -------
    ndarray of bool, shape (n_features,)
    """
    n_features, n_rows = X_binned.shape
    dense = not isinstance(X_binned, SparseBinned)
    if min_samples_leaf <= 1 and dense:     # two bins (one pass, no counts)
        return (X_binned.min(axis=1) != X_binned.max(axis=1) if n_rows
                else np.zeros(n_features, dtype=bool))
    nbnm = np.asarray(n_bins_nonmissing, dtype=np.int64)
    feature, bin_, count = _bin_counts(X_binned, nbnm)
    present = np.bincount(feature, minlength=n_features)
    if min_samples_leaf <= 1:      # two bins: a threshold, or missing against the rest
        return present >= 2
    # the left side's rows at every threshold (each bin in use but the missing one, which
    # comes last), with the feature's missing rows sent right and left; every feature's
    # counts add up to n_rows
    missing = np.zeros(n_features, dtype=np.int64)
    at_missing = bin_ == nbnm[feature]
    missing[feature[at_missing]] = count[at_missing]
    threshold = ~at_missing
    f = feature[threshold]
    left = np.cumsum(count)[threshold] - f * n_rows
    low, high = min_samples_leaf, n_rows - min_samples_leaf
    ok = (((left >= low) & (left <= high))
          | ((left + missing[f] >= low) & (left + missing[f] <= high)))
    out = np.zeros(n_features, dtype=bool)
    out[f[ok]] = True
    if categorical is not None:
        cat = np.asarray(categorical, dtype=bool)
        out[cat] = present[cat] >= 2
    return out


def _bin_counts(X_binned: Union[np.ndarray, SparseBinned], nbnm: np.ndarray):
    """``(feature, bin, count)``: the rows of every bin in use, ordered by feature, then
    bin (missing values at bin ``nbnm[f]``); bins without rows are left out."""
    n_features, n_rows = X_binned.shape
    if isinstance(X_binned, SparseBinned):
        entries = X_binned.n_entries()
        f = np.repeat(np.arange(n_features, dtype=np.int64), entries)
        keys = np.concatenate([
            f * 256 + np.minimum(X_binned.bins, nbnm[f]),
            np.arange(n_features, dtype=np.int64) * 256
            + np.minimum(X_binned.default, nbnm)])
        weights = np.concatenate([np.ones(f.size, dtype=np.int64), n_rows - entries])
        keys, inverse = np.unique(keys, return_inverse=True)
        count = np.bincount(inverse, weights).astype(np.int64)
        keep = count > 0
        return keys[keep] // 256, keys[keep] % 256, count[keep]
    counts = [np.bincount(np.minimum(X_binned[j], nbnm[j]), minlength=nbnm[j] + 1)
              for j in range(n_features)]
    feature = np.concatenate([np.full(c.size, j, dtype=np.int64)
                              for j, c in enumerate(counts)] or [np.zeros(0, np.int64)])
    count = np.concatenate(counts or [np.zeros(0, np.int64)]).astype(np.int64)
    bin_ = np.concatenate([np.arange(c.size) for c in counts] or [np.zeros(0, np.int64)])
    keep = count > 0
    return feature[keep], bin_[keep], count[keep]


def working_features(X_binned: Union[np.ndarray, SparseBinned],
                     n_bins_nonmissing: np.ndarray, min_samples_leaf: int,
                     categorical: Optional[np.ndarray] = None,
                     distributed: bool = False) -> WorkingFeatures:
    """The working features of a fit on ``X_binned``: those some split could use
    (:func:`splittable`), every feature in a distributed fit (a worker's rows do not
    decide for the others').

    The first feature with the fewest bins stays too, splittable or not: the split search
    reads a node's sums from its bins (``_splitting.node_sums``). A constant feature holds
    all of a node's rows in one bin; summed over another feature's bins, the sums could
    round differently in their last bit, and the trees with them.
    """
    n_features = X_binned.shape[0]
    if distributed or n_features == 0:
        return WorkingFeatures.every(n_features)
    keep = splittable(X_binned, n_bins_nonmissing, min_samples_leaf, categorical)
    keep[int(np.argmin(n_bins_nonmissing))] = True
    return WorkingFeatures(np.flatnonzero(keep).astype(np.intp), n_features)
