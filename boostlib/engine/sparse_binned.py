"""A binned matrix kept sparse: each feature's bin of 0.0, and the rows that differ.

Sparse input (``scipy.sparse``) would otherwise become a dense ``uint8 (n_features,
n_rows)`` matrix, twice (feature-major and row-major): 4 GB for 100,000 rows x 20,000
features however few values are stored. :class:`SparseBinned` stores, per feature, its
*default* bin (the bin of 0.0) and the rows whose bin differs, with their bins. The engine
reads it through three operations: :meth:`SparseBinned.columns` (a dense copy of the few
features a tree level or a tree splits on), :meth:`SparseBinned.entries` (one feature's
non-default rows, for bundling) and ``shape``.
"""
from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np

#: Features materialised at once when predicting from a sparse binned matrix: bounds the
#: dense copy to ``MAX_COLUMNS x n_rows`` bytes.
MAX_COLUMNS = 256


class SparseBinned:
    """Feature-major binned data by non-default entries.

    Parameters
    ----------
    n_rows : int
    default : ndarray of uint8, shape (n_features,)
        Each feature's bin of the rows not listed.
    indptr : ndarray of int64, shape (n_features + 1,)
        Feature ``f``'s entries are ``rows[indptr[f]:indptr[f+1]]`` (increasing) with bins
        ``bins[...]`` (none equal to ``default[f]``).
    rows : ndarray of int32
    bins : ndarray of uint8
    """

    def __init__(self, n_rows: int, default: np.ndarray, indptr: np.ndarray, rows: np.ndarray,
                 bins: np.ndarray):
        self.n_rows = int(n_rows)
        self.default = np.ascontiguousarray(default, dtype=np.uint8)
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self.rows = np.ascontiguousarray(rows, dtype=np.int32)
        self.bins = np.ascontiguousarray(bins, dtype=np.uint8)
        if self.indptr.shape != (self.default.size + 1,) or self.rows.shape != self.bins.shape:
            raise ValueError("indptr needs n_features + 1 entries, rows and bins one per entry")

    @classmethod
    def from_entries(cls, n_rows: int, default: np.ndarray, rows: np.ndarray,
                     features: np.ndarray, bins: np.ndarray) -> "SparseBinned":
        """From unordered entries ``(rows, features, bins)``; entries at their feature's
        default bin are dropped."""
        keep = bins != default[features]
        rows, features, bins = rows[keep], features[keep], bins[keep]
        order = np.lexsort((rows, features))
        counts = np.bincount(features, minlength=default.size)
        indptr = np.concatenate([[0], np.cumsum(counts)])
        return cls(n_rows, default, indptr, rows[order], bins[order])

    @property
    def shape(self) -> Tuple[int, int]:
        return (int(self.default.size), self.n_rows)

    @property
    def nbytes(self) -> int:
        return int(self.default.nbytes + self.indptr.nbytes + self.rows.nbytes + self.bins.nbytes)

    def entries(self, f: int) -> Tuple[np.ndarray, np.ndarray]:
        """Rows (increasing) and bins of feature ``f`` away from its default bin."""
        lo, hi = self.indptr[f], self.indptr[f + 1]
        return self.rows[lo:hi], self.bins[lo:hi]

    def n_entries(self) -> np.ndarray:
        """Non-default rows per feature."""
        return np.diff(self.indptr)

    def subset(self, features: np.ndarray) -> "SparseBinned":
        """The matrix of ``features`` alone (ascending indices), in their order."""
        features = np.asarray(features, dtype=np.intp)
        lo, n = self.indptr[features], np.diff(self.indptr)[features]
        indptr = np.concatenate([[0], np.cumsum(n)])
        # each kept entry's position: its feature's first, plus its rank among them
        at = np.repeat(lo - indptr[:-1], n) + np.arange(indptr[-1])
        return SparseBinned(self.n_rows, self.default[features], indptr, self.rows[at],
                            self.bins[at])

    def columns(self, features: Sequence[int]) -> np.ndarray:
        """The dense uint8 ``(len(features), n_rows)`` rows of ``features``."""
        features = np.asarray(features, dtype=np.intp)
        out = np.empty((features.size, self.n_rows), dtype=np.uint8)
        out[...] = self.default[features, None]
        for i, f in enumerate(features):
            r, b = self.entries(int(f))
            out[i, r] = b
        return out


def local_columns(X, features: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(matrix, index)`` to read features ``features`` of ``X``: ``X`` itself and the
    features when it is dense; for a :class:`SparseBinned`, a dense copy of just the
    features used (``features < 0`` are leaves, kept) and their indices in it."""
    features = np.asarray(features)
    if not isinstance(X, SparseBinned):
        return X, features
    used = np.unique(features[features >= 0])
    index = np.full(X.shape[0], -1, dtype=np.int32)
    index[used] = np.arange(used.size, dtype=np.int32)
    local = X.columns(used) if used.size else np.zeros((1, X.n_rows), dtype=np.uint8)
    return local, np.where(features >= 0, index[np.maximum(features, 0)],
                           features).astype(features.dtype)
