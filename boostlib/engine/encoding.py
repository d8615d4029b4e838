"""How each categorical feature enters the trees (``categorical_encoding``).

* ``"sets"``: the feature stays one categorical column, split by sets of categories
  (``docs/categorical.md``).
* ``"onehot"``: a feature of at most ``max_cat_to_onehot`` levels seen in training becomes
  one 0/1 column per level (NaN where the feature is missing), so each split isolates one
  level against the rest (LightGBM's ``max_cat_to_onehot``); a feature of more levels keeps
  its set splits.
* ``"target_stats"``: the feature becomes numeric columns of target statistics, CatBoost's
  ordered scheme (Prokhorenkova et al. 2018): for training row ``i``, the statistic of its
  category over the rows *before* ``i`` in one random permutation of the training rows,

      (sum of w_j t_j over earlier rows j of the category + a * prior) / (sum of their w_j + a)

  with ``a = PRIOR_WEIGHT`` and ``prior`` the weighted mean of ``t`` over the training
  rows; ``t`` is the target for a one-column target (regression, binary), the class
  indicators for ``multiclass`` (one column per class), the target's columns for several
  targets. A last column holds the category's frequency (share of the training weight; no
  target, so the same in training and prediction: CatBoost's ``Counter``). At prediction
  the statistic is taken over every training row. Missing values stay missing, and so do
  codes unseen in training.
* ``"auto"``: :func:`auto_encoding` picks one of the three per feature.

The encoded columns replace the feature in the matrix the trees see (``source`` maps each
column back to its feature, so SHAP values and importances are summed back per feature).
The permutation comes from the fit's ``"target_stats"`` random stream: the same
``random_state`` gives the same columns whatever ``n_jobs``.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .categorical import Levels

#: The values of ``categorical_encoding``.
ENCODINGS = ("sets", "onehot", "target_stats", "auto")
#: Weight of the prior in a target statistic (CatBoost's prior weight is 1 too).
PRIOR_WEIGHT = 1.0
#: ``"auto"``: a feature whose levels of at least ``min_data_per_group`` rows hold less than
#: this share of its rows goes to target statistics (set splits place the others' rows
#: nowhere of their own).
AUTO_MIN_COVERED = 0.7


def auto_encoding(n_levels: int, covered: float, max_cat_to_onehot: int) -> str:
    """The encoding ``"auto"`` gives a feature of ``n_levels`` levels seen in training, of
    which those with at least ``min_data_per_group`` rows hold the share ``covered`` of its
    non-missing rows: ``"onehot"`` up to ``max_cat_to_onehot`` levels; ``"target_stats"``
    when ``covered < AUTO_MIN_COVERED``; ``"sets"`` otherwise. See
    ``docs/categorical.md`` for the measurements behind it."""
    if n_levels <= max_cat_to_onehot:
        return "onehot"
    if covered < AUTO_MIN_COVERED:
        return "target_stats"
    return "sets"


def stat_targets(y: np.ndarray, n_classes: Optional[int]) -> np.ndarray:
    """``t`` of the statistics, float64 (n_rows, T): the class indicators with ``n_classes``
    (multiclass), the target's columns for a 2-d target, else the target itself."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 2:
        return np.ascontiguousarray(y)
    if n_classes is not None:
        return (y[:, None] == np.arange(n_classes)[None, :]).astype(np.float64)
    return y[:, None].copy()


def _codes(column: np.ndarray) -> np.ndarray:
    """int64 codes of a categorical column, -1 where missing."""
    out = np.full(column.shape[0], -1, dtype=np.int64)
    present = ~np.isnan(column)
    out[present] = column[present].astype(np.int64)
    return out


def ordered_sums(codes: np.ndarray, t: np.ndarray, w: np.ndarray, order: np.ndarray
                 ) -> Tuple[np.ndarray, np.ndarray]:
    """For each row ``i``, the sums of ``w_j t_j`` (n_rows, T) and of ``w_j`` (n_rows,) over
    the rows ``j`` of ``i``'s category (``codes``, -1: missing, whose sums are 0) that come
    before ``i`` in ``order`` (a permutation of the rows)."""
    n = codes.shape[0]
    c = codes[order]
    by_code = np.argsort(c, kind="stable")          # grouped by code, permutation order kept
    rows = order[by_code]
    cs = c[by_code]
    wt = np.concatenate([t[rows] * w[rows, None], w[rows, None]], axis=1)
    cum = np.cumsum(wt, axis=0) - wt                # sums of the rows before, in this order
    first = np.ones(n, dtype=bool)
    first[1:] = cs[1:] != cs[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    within = cum - cum[start]                       # minus the rows of earlier codes
    within[cs < 0] = 0.0
    out = np.empty_like(within)
    out[rows] = within
    return out[:, :-1], out[:, -1]


class CategoricalEncoder:
    """The encoding of every feature of a training set, and the statistics prediction needs.

    Parameters
    ----------
    kinds : list of str
        Per original feature: ``"numeric"``, ``"sets"``, ``"onehot"`` or
        ``"target_stats"``.
    levels : list
        The training levels of each feature (None for numeric features and code columns).
    codes : dict of int to ndarray
        Per onehot or target-statistics feature: the codes seen in training (sorted).
    sums, weights : dict of int to ndarray
        Per target-statistics feature: ``sum w t`` (n_codes, T) and ``sum w`` (n_codes,) of
        each seen code over every training row.
    prior : ndarray of shape (T,)
    total_weight : float
    """

    def __init__(self, kinds: List[str], levels: List[Levels], codes: Dict[int, np.ndarray],
                 sums: Dict[int, np.ndarray], weights: Dict[int, np.ndarray],
                 prior: np.ndarray, total_weight: float):
        self.kinds = list(kinds)
        self.levels = list(levels)
        self.codes = codes
        self.sums = sums
        self.weights = weights
        self.prior = np.asarray(prior, dtype=np.float64).reshape(-1)
        self.total_weight = float(total_weight)
        source, what = [], []
        for j, kind in enumerate(self.kinds):
            if kind == "onehot":
                cols = [("level", int(c)) for c in self.codes[j]]
            elif kind == "target_stats":
                cols = [("mean", k) for k in range(self.prior.size)] + [("frequency", 0)]
            else:
                cols = [(kind, 0)]
            source += [j] * len(cols)
            what += cols
        #: int64 (n_columns,): the feature of each encoded column
        self.source = np.asarray(source, dtype=np.int64)
        self.columns = what

    # -- fitting -------------------------------------------------------------------------------
    @classmethod
    def fit(cls, X: np.ndarray, categorical: np.ndarray, levels: Sequence[Levels],
            encoding: str, t: np.ndarray, w: Optional[np.ndarray], max_cat_to_onehot: int,
            min_data_per_group: int) -> "CategoricalEncoder":
        """The encoder of a training matrix ``X`` (categorical columns as codes) with
        statistics targets ``t`` (:func:`stat_targets`) and row weights ``w``."""
        n = X.shape[0]
        w = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
        total = float(w.sum())
        prior = (w @ t) / total if total > 0 else np.zeros(t.shape[1])
        kinds, codes, sums, weights = [], {}, {}, {}
        for j in range(X.shape[1]):
            if not categorical[j]:
                kinds.append("numeric")
                continue
            c = _codes(np.asarray(X[:, j], dtype=np.float64))
            seen, inverse, rows = np.unique(c[c >= 0], return_inverse=True,
                                            return_counts=True)
            covered = rows[rows >= min_data_per_group].sum() / max(int(rows.sum()), 1)
            kind = encoding if encoding != "auto" else auto_encoding(
                seen.size, covered, max_cat_to_onehot)
            if kind == "onehot" and seen.size > max_cat_to_onehot:
                kind = "sets"
            kinds.append(kind)
            if kind == "onehot":
                codes[j] = seen
            elif kind == "target_stats":
                codes[j] = seen
                present = c >= 0
                s = np.zeros((seen.size, t.shape[1]))
                np.add.at(s, inverse, t[present] * w[present, None])
                ws = np.zeros(seen.size)
                np.add.at(ws, inverse, w[present])
                sums[j], weights[j] = s, ws
        return cls(kinds, list(levels), codes, sums, weights, prior, total)

    @property
    def n_features(self) -> int:
        return len(self.kinds)

    @property
    def encodes(self) -> bool:
        """Whether some feature is encoded (one-hot or target statistics): False when every
        categorical feature keeps its set splits, and the trees can read the features."""
        return any(kind in ("onehot", "target_stats") for kind in self.kinds)

    @property
    def n_columns(self) -> int:
        return int(self.source.size)

    @property
    def categorical(self) -> np.ndarray:
        """bool (n_features,): the original categorical features."""
        return np.array([k != "numeric" for k in self.kinds], dtype=bool)

    @property
    def column_categorical(self) -> np.ndarray:
        """bool (n_columns,): the encoded columns split by sets."""
        return np.array([self.kinds[j] == "sets" for j in self.source], dtype=bool)

    @property
    def column_levels(self) -> List[Levels]:
        return [self.levels[j] if self.kinds[j] == "sets" else None for j in self.source]

    def column_names(self, names: Optional[Sequence[str]]) -> np.ndarray:
        """Names of the encoded columns: the feature's, ``name=level`` for a one-hot column,
        ``name:mean`` (``name:mean<k>`` for several targets) and ``name:frequency``."""
        base = [str(j) for j in range(self.n_features)] if names is None else \
            [str(v) for v in names]
        out = []
        for j, (what, k) in zip(self.source, self.columns):
            if what == "level":
                lv = self.levels[j]
                out.append(f"{base[j]}={lv[k] if lv is not None else k}")
            elif what == "mean":
                out.append(f"{base[j]}:mean" + (str(k) if self.prior.size > 1 else ""))
            elif what == "frequency":
                out.append(f"{base[j]}:frequency")
            else:
                out.append(base[j])
        return np.asarray(out, dtype=object)

    # -- the encoded matrix ------------------------------------------------------------------
    def _lookup(self, j: int, column: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(index of each row's code among the seen codes, whether it was seen)."""
        c = _codes(np.asarray(column, dtype=np.float64))
        seen = self.codes[j]
        pos = np.searchsorted(seen, c).clip(0, seen.size - 1)
        found = (c >= 0) & (seen[pos] == c)
        return pos, found

    def transform(self, X: np.ndarray, order: Optional[np.ndarray] = None,
                  t: Optional[np.ndarray] = None, w: Optional[np.ndarray] = None
                  ) -> np.ndarray:
        """float64 (n_rows, n_columns): ``X`` (categorical columns coded against the
        training levels) encoded. With ``order`` (a permutation of the training rows), ``t``
        and ``w``, the training rows' ordered statistics; otherwise the statistics over
        every training row."""
        n = X.shape[0]
        out = np.empty((n, self.n_columns))
        col = 0
        for j, kind in enumerate(self.kinds):
            x = np.asarray(X[:, j], dtype=np.float64)
            if kind in ("numeric", "sets"):
                out[:, col] = x
                col += 1
            elif kind == "onehot":
                seen = self.codes[j]
                missing = np.isnan(x)
                for c in seen:
                    out[:, col] = np.where(missing, np.nan, (x == c).astype(np.float64))
                    col += 1
            else:
                k = self.prior.size
                if self.codes[j].size == 0:
                    out[:, col:col + k + 1] = np.nan
                    col += k + 1
                    continue
                pos, found = self._lookup(j, x)
                if order is None:
                    s = self.sums[j][pos]
                    ws = self.weights[j][pos]
                else:
                    ww = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
                    s, ws = ordered_sums(_codes(x), t, ww, order)
                mean = (s + PRIOR_WEIGHT * self.prior[None, :]) / (ws[:, None] + PRIOR_WEIGHT)
                mean[~found] = np.nan
                out[:, col:col + k] = mean
                freq = np.where(found, self.weights[j][pos] / self.total_weight
                                if self.total_weight > 0 else 0.0, np.nan)
                out[:, col + k] = freq
                col += k + 1
        return out

    # -- explanations ----------------------------------------------------------------------
    def fold(self, values: np.ndarray, axes: Sequence[int]) -> np.ndarray:
        """``values`` whose ``axes`` run over the encoded columns plus one (the expected
        value) summed back per feature: each of those axes goes from ``n_columns + 1`` to
        ``n_features + 1`` entries."""
        index = np.concatenate([self.source, [self.n_features]])
        for axis in axes:
            moved = np.moveaxis(values, axis, 0)
            out = np.zeros((self.n_features + 1,) + moved.shape[1:], dtype=values.dtype)
            np.add.at(out, index, moved)
            values = np.moveaxis(out, 0, axis)
        return values

    def fold_importance(self, values: np.ndarray, splits: np.ndarray,
                        importance_type: str) -> np.ndarray:
        """Per-column importances summed per feature (``"cover"``: the mean over the
        feature's splits, weighted by their counts ``splits``)."""
        out = np.zeros(self.n_features)
        if importance_type != "cover":
            np.add.at(out, self.source, values)
            return out
        n = np.zeros(self.n_features)
        np.add.at(out, self.source, values * splits)
        np.add.at(n, self.source, splits)
        return np.divide(out, n, out=np.zeros_like(out), where=n > 0)

    # -- model files -------------------------------------------------------------------------
    def to_dict(self) -> Dict[str, Any]:
        """The plain-JSON form model files store (``encoding``)."""
        features = []
        for j, kind in enumerate(self.kinds):
            entry: Dict[str, Any] = {"kind": kind}
            if kind in ("onehot", "target_stats"):
                entry["codes"] = [int(c) for c in self.codes[j]]
            if kind == "target_stats":
                entry["sums"] = [[float(v) for v in row] for row in self.sums[j]]
                entry["weights"] = [float(v) for v in self.weights[j]]
            features.append(entry)
        return {"prior": [float(v) for v in self.prior], "total_weight": self.total_weight,
                "features": features}

    @classmethod
    def from_dict(cls, doc: Dict[str, Any], levels: List[Levels]) -> "CategoricalEncoder":
        """The encoder of :meth:`to_dict`'s form (checked by the model-file reader)."""
        kinds, codes, sums, weights = [], {}, {}, {}
        prior = np.asarray(doc["prior"], dtype=np.float64)
        for j, entry in enumerate(doc["features"]):
            kinds.append(entry["kind"])
            if "codes" in entry:
                codes[j] = np.asarray(entry["codes"], dtype=np.int64)
            if entry["kind"] == "target_stats":
                sums[j] = np.asarray(entry["sums"], dtype=np.float64).reshape(-1, prior.size)
                weights[j] = np.asarray(entry["weights"], dtype=np.float64)
        return cls(kinds, levels, codes, sums, weights, prior, float(doc["total_weight"]))
