"""Feature binning: per-feature borders from quantiles, and the uint8 binned matrix."""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from .._kernels import _binning

MAX_BINS = 255
SUBSAMPLE = 200_000


def _midpoint_percentiles(values: np.ndarray, percentiles: np.ndarray) -> np.ndarray:
    """``np.percentile(values, percentiles, method="midpoint")`` of *sorted* ``values``.

    NumPy's arithmetic, without its selection (which costs as much as the sort the values
    already had): the virtual index ``(floor(m) + ceil(m)) / 2`` of ``m = (n - 1) * q``, and
    NumPy's interpolation between its two neighbours ``a <= b``, with weight 0 (a whole
    index: ``a``) or 0.5 (``b - (b - a) * 0.5``). Where ``b - a`` overflows, NumPy's answer
    is NaN or -inf; here it is ``a`` or ``a / 2 + b / 2``. ``tests/test_kernels_binning.py``
    checks the rest against ``np.percentile`` bit for bit.
    """
    n = values.size
    q = np.true_divide(percentiles, 100)
    m = (n - 1) * q
    virtual = 0.5 * (np.floor(m) + np.ceil(m))
    gamma = np.where(virtual % 1 == 0, 0.0, 0.5)
    below = np.floor(virtual).astype(np.intp)
    above = below + 1
    last = virtual >= n - 1              # at or past the last value: the last value
    below[last] = n - 1
    above[last] = n - 1
    a, b = values[below], values[above]
    with np.errstate(over="ignore", invalid="ignore"):
        diff = b - a
        out = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)
    overflow = ~np.isfinite(out)
    if overflow.any():
        out[overflow] = np.where(gamma[overflow] >= 0.5,
                                 a[overflow] * 0.5 + b[overflow] * 0.5, a[overflow])
    return out


def _borders_of_sorted(values: np.ndarray, max_bins: int) -> np.ndarray:
    """Borders of one feature from its sorted non-missing values (possibly none)."""
    if values.size == 0:
        return np.empty(0)
    distinct = values[np.concatenate(([True], values[1:] != values[:-1]))]
    if distinct.size <= max_bins:
        lo, hi = distinct[:-1], distinct[1:]
        with np.errstate(over="ignore"):    # hi - lo beyond the float range: mid is inf
            mid = lo + (hi - lo) / 2.0
        # A midpoint that rounds up onto the next value (or overflows) would merge two values
        # into one bin: the border is then the lower value.
        return np.where(mid >= hi, lo, mid)
    percentiles = np.linspace(0, 100, max_bins + 1)[1:-1]
    return np.unique(_midpoint_percentiles(values, percentiles))


def _as_real(X: np.ndarray) -> np.ndarray:
    """``X`` itself when it is float32 or float64 (the kernels read both), else as float64."""
    X = np.asarray(X)
    return X if X.dtype in (np.float32, np.float64) else X.astype(np.float64)


class BinMapper:
    """Maps raw features to bins.

    A feature with at most ``max_bins`` distinct values gets one bin per value (borders at the
    midpoints); otherwise its borders are ``max_bins - 1`` quantiles (fewer when quantiles
    coincide), computed on at most ``subsample`` rows. Bin ``b`` holds the values ``x`` with
    ``borders[b-1] < x <= borders[b]``; NaN goes to the dedicated bin ``missing_bin ==
    max_bins``. A constant feature has a single bin (it can never be split). The sign of
    zero is ignored (-0.0 counts as 0.0, and no border is -0.0).

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
        if not (isinstance(subsample, (int, np.integer)) and not isinstance(subsample, bool)
                and subsample >= 1):
            raise ValueError(f"subsample={subsample!r} is invalid; expected an int >= 1")
        self.max_bins = int(max_bins)
        self.subsample = int(subsample)
        self.missing_bin = self.max_bins

    def fit(self, X: np.ndarray, rng: Optional[np.random.Generator] = None,
            n_threads: int = 1) -> "BinMapper":
        """Compute the borders of every feature of ``X`` (float32 or float64, NaN = missing).

        Parameters
        ----------
        X : ndarray of shape (n_rows, n_features)
        rng : numpy Generator, optional
            Draws the rows the borders are computed on when there are more than
            ``subsample`` (default: a generator seeded with 0).
        n_threads : int, default 1
            Threads of the compiled pass that copies and sorts each feature's sample
            (``_kernels._binning.sorted_sample``); the borders do not depend on it.
        """
        X = _as_real(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        n = X.shape[0]
        rows = np.empty(0, dtype=np.intp)
        if n > self.subsample:
            rng = rng if rng is not None else np.random.default_rng(0)
            rows = np.sort(rng.choice(n, self.subsample, replace=False)).astype(np.intp)
        values = np.empty((X.shape[1], rows.size or n))
        counts = np.empty(X.shape[1], dtype=np.intp)
        _binning.sorted_sample(X, rows, values, counts, max(1, int(n_threads)))
        return self.set_borders([_borders_of_sorted(values[f, :counts[f]], self.max_bins)
                                 for f in range(X.shape[1])])

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
        """Binned copy of ``X`` (float32 or float64, shape (n_rows, n_features)).

        Parameters
        ----------
        X : ndarray
        n_threads : int
        layout : {"feature", "row"}
            ``"feature"``: uint8 of shape (n_features, n_rows), one contiguous row per feature
            (what prediction and oblivious levels read); ``"row"``: shape (n_rows,
            n_features) (what histogram building reads).
        """
        X = _as_real(X)
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
