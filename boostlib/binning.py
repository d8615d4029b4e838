"""Feature binning: per-feature borders from quantiles, and the uint8 binned matrix."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional

import numpy as np

from ._kernels import _binning

MAX_BINS = 255
SUBSAMPLE = 200_000


def _feature_borders(col: np.ndarray, max_bins: int) -> np.ndarray:
    """Borders of one feature from its non-missing values (possibly empty)."""
    # Sorted once: the distinct values and the quantiles both read the sorted copy (the
    # quantiles' selection is much faster on sorted values than on the raw column).
    col = np.sort(col[~np.isnan(col)])
    if col.size == 0:
        return np.empty(0)
    distinct = col[np.concatenate(([True], col[1:] != col[:-1]))]
    if distinct.size <= max_bins:
        lo, hi = distinct[:-1], distinct[1:]
        with np.errstate(over="ignore"):    # hi - lo beyond the float range: mid is inf
            mid = lo + (hi - lo) / 2.0
        # A midpoint that rounds up onto the next value (or overflows) would merge two values
        # into one bin: the border is then the lower value.
        return np.where(mid >= hi, lo, mid)
    percentiles = np.linspace(0, 100, max_bins + 1)[1:-1]
    borders = np.percentile(col, percentiles, method="midpoint")
    return np.unique(borders)


class BinMapper:
    """Maps raw features to bins.

    A feature with at most ``max_bins`` distinct values gets one bin per value (borders at the
    midpoints); otherwise its borders are ``max_bins - 1`` quantiles (fewer when quantiles
    coincide), computed on at most ``subsample`` rows. Bin ``b`` holds the values ``x`` with
    ``borders[b-1] < x <= borders[b]``; NaN goes to the dedicated bin ``missing_bin ==
    max_bins``. A constant feature has a single bin (it can never be split).

    Parameters
    ----------
    max_bins : int, default 255
        Number of bins for non-missing values, 2 to 255.
    subsample : int, default 200000
        At most this many rows are used to compute the borders.

    Attributes
    ----------
    borders_ : list of ndarray
        Increasing borders per feature.
    n_bins_nonmissing_ : ndarray of int32
        ``len(borders_[f]) + 1`` per feature.
    missing_bin : int
        Equal to ``max_bins``.
    """

    def __init__(self, max_bins: int = MAX_BINS, subsample: int = SUBSAMPLE):
        if not (isinstance(max_bins, (int, np.integer)) and 2 <= max_bins <= MAX_BINS):
            raise ValueError(f"max_bins={max_bins!r} is invalid; expected an int in [2, 255]")
        self.max_bins = int(max_bins)
        self.subsample = int(subsample)
        self.missing_bin = self.max_bins

    def fit(self, X: np.ndarray, rng: Optional[np.random.Generator] = None,
            n_threads: int = 1) -> "BinMapper":
        """Compute the borders of every feature of ``X`` (float64, NaN = missing).

        Parameters
        ----------
        X : ndarray of shape (n_rows, n_features)
        rng : numpy Generator, optional
            Draws the rows the borders are computed on when there are more than
            ``subsample`` (default: a generator seeded with 0).
        n_threads : int, default 1
            Features are processed by this many threads (NumPy's sorts release the GIL); the
            borders do not depend on it.
        """
        n = X.shape[0]
        if n > self.subsample:
            rng = rng if rng is not None else np.random.default_rng(0)
            rows = np.sort(rng.choice(n, self.subsample, replace=False))
            X = X[rows]

        def borders(f: int) -> np.ndarray:
            return _feature_borders(np.ascontiguousarray(X[:, f]), self.max_bins)

        if n_threads > 1 and X.shape[1] > 1:
            with ThreadPoolExecutor(min(n_threads, X.shape[1])) as pool:
                self.set_borders(list(pool.map(borders, range(X.shape[1]))))
        else:
            self.set_borders([borders(f) for f in range(X.shape[1])])
        return self

    def set_borders(self, borders: List[np.ndarray]) -> "BinMapper":
        """Install borders (from :meth:`fit` or a model file) and build the kernel tables."""
        width = max(1, self.max_bins - 1)
        table = np.full((len(borders), width), np.inf)
        for f, b in enumerate(borders):
            b = np.asarray(b, dtype=np.float64)
            if b.ndim != 1 or b.size > width or (b.size > 1 and np.any(np.diff(b) <= 0)):
                raise ValueError(f"borders of feature {f} must be at most {width} increasing "
                                 "numbers")
            table[f, :b.size] = b
        self.borders_ = [np.asarray(b, dtype=np.float64) for b in borders]
        self._table = table
        self.n_bins_nonmissing_ = np.array([b.size + 1 for b in self.borders_], dtype=np.int32)
        return self

    @property
    def n_features(self) -> int:
        return len(self.borders_)

    def transform(self, X: np.ndarray, n_threads: int = 1, layout: str = "feature") -> np.ndarray:
        """Binned copy of ``X`` (float64, shape (n_rows, n_features)).

        Parameters
        ----------
        X : ndarray
        n_threads : int
        layout : {"feature", "row"}
            ``"feature"``: uint8 of shape (n_features, n_rows), one contiguous row per feature
            (what prediction and oblivious levels read); ``"row"``: shape (n_rows,
            n_features) (what histogram building reads).
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (n_rows, {self.n_features})")
        n_borders = self.n_bins_nonmissing_ - 1
        if layout == "feature":
            out = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
            _binning.map_to_bins(X, self._table, n_borders, self.missing_bin, out, n_threads)
        elif layout == "row":
            out = np.empty((X.shape[0], X.shape[1]), dtype=np.uint8)
            _binning.map_to_bins(X, self._table, n_borders, self.missing_bin, out.T, n_threads)
        else:
            raise ValueError(f"layout={layout!r} is invalid; expected 'feature' or 'row'")
        return out

    def threshold(self, feature: int, bin_index: int) -> float:
        """Raw threshold of a split at ``bin_index``: ``x <= threshold`` goes left."""
        borders = self.borders_[feature]
        return float(borders[bin_index]) if bin_index < borders.size else float("inf")
