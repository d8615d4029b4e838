"""Feature importance of a fitted ensemble, by split count, gain or cover.

Every split of every tree (every output's trees of a multi-output model) counts toward its
feature; a symmetric tree's level is one split, whose gain is the level's (the sum over the
nodes it splits) and whose cover is every row of the tree. Per feature:

* ``"gain"``: the total gain of its splits, normalised to sum to 1 (scikit-learn's
  convention for ``feature_importances_``);
* ``"total_gain"``: the total gain of its splits (LightGBM's ``gain``, XGBoost's
  ``total_gain``);
* ``"split"``: the number of splits on it (LightGBM's ``split``, XGBoost's ``weight``);
* ``"cover"``: the mean number of training rows reaching its splits (XGBoost's ``cover``
  counts hessians; boostlib's trees record rows).
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .._messages import shown
from .trees import kind_of

#: The values of ``importance_type``.
IMPORTANCE_TYPES = ("gain", "split", "total_gain", "cover")


def check_importance_type(name: str, value: Any) -> None:
    """ValueError naming ``name`` unless ``value`` is one of :data:`IMPORTANCE_TYPES`."""
    if not (isinstance(value, str) and value in IMPORTANCE_TYPES):
        raise ValueError(f"{name}={shown(value)} is invalid; expected one of "
                         f"{', '.join(repr(t) for t in IMPORTANCE_TYPES)}")


def feature_importance(trees: Iterable[Any], n_features: int,
                       importance_type: str = "gain") -> np.ndarray:
    """Importance of each of ``n_features`` features in the scalar ``trees``.

    Parameters
    ----------
    trees : iterable of trees
        Scalar trees of any kind.
    n_features : int
    importance_type : {"gain", "split", "total_gain", "cover"}, default "gain"
        See the module's table.

    Returns
    -------
    ndarray of shape (n_features,)
        float64; zeros for a model without a split ("gain" then sums to 0, not 1).

    Raises
    ------
    ValueError
        For another ``importance_type``, or ``"cover"`` on trees read from files older than
        format 4, which do not record covers.
    """
    check_importance_type("importance_type", importance_type)
    split = np.zeros(n_features)
    gain = np.zeros(n_features)
    cover = np.zeros(n_features)
    for tree in trees:
        kind = kind_of(tree.policy)
        mask = kind.split_mask(tree)
        features = tree.feature[mask]
        np.add.at(split, features, 1.0)
        np.add.at(gain, features, tree.gain[mask])
        if importance_type == "cover":
            if tree.cover is None:
                raise ValueError("importance_type='cover' needs the trees' covers, which "
                                 "model files before format 4 do not record; refit, or use "
                                 "'gain' or 'split'")
            np.add.at(cover, features, kind.split_covers(tree))
    if importance_type == "split":
        return split
    if importance_type == "total_gain":
        return gain
    if importance_type == "cover":
        return np.divide(cover, split, out=np.zeros(n_features), where=split > 0)
    total = gain.sum()
    return gain / total if total > 0 else gain
