"""Feature binning: per-feature borders from quantiles, and the uint8 binned matrix."""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np

from .._kernels import _binning
from .borders import bins_for_rows, keep_full_bins, midpoint_percentiles
from .frames import Columns
from .sparse_binning import fit_sparse, is_sparse, transform_sparse

MAX_BINS = 255
SUBSAMPLE = 200_000
#: Values sorted at a time when fitting borders (32 MB of float64).
SORT_BLOCK_VALUES = 1 << 22


def _borders_of_sorted(values: np.ndarray, max_bins: int,
                       min_samples_bin: int = 1) -> np.ndarray:
    """Borders of one feature from its sorted non-missing values (possibly none); each bin
    holds at least ``min_samples_bin`` of them (see :class:`BinMapper`)."""
    if values.size == 0:
        return np.empty(0)
    distinct = values[np.concatenate(([True], values[1:] != values[:-1]))]
    if distinct.size <= max_bins:
        lo, hi = distinct[:-1], distinct[1:]
        with np.errstate(over="ignore"):    # hi - lo beyond the float range: mid is inf
            mid = lo + (hi - lo) / 2.0
        # A midpoint that rounds up onto the next value (or overflows) would merge two values
        # into one bin: the border is then the lower value.
        borders = np.where(mid >= hi, lo, mid)
    else:
        n_bins = bins_for_rows(max_bins, values.size, min_samples_bin)
        percentiles = np.linspace(0, 100, n_bins + 1)[1:-1]
        borders = np.unique(midpoint_percentiles(values, percentiles))
    if min_samples_bin <= 1:
        return borders
    return keep_full_bins(borders, np.searchsorted(values, borders, side="right"),
                          values.size, min_samples_bin)


def _block(X: Any, f0: int, f1: int) -> np.ndarray:
    """Features ``f0 .. f1 - 1`` of ``X`` as a 2-D view (of one column of
    :class:`~boostlib.engine.frames.Columns`)."""
    if isinstance(X, Columns):
        if f1 - f0 != 1:
            raise ValueError("Columns are read one feature at a time")
        return X.column(f0)[:, None]
    return X[:, f0:f1]


def _as_real(X: np.ndarray) -> np.ndarray:
    """``X`` itself when it is float32 or float64 (the kernels read both), else as float64."""
    X = np.asarray(X)
    return X if X.dtype in (np.float32, np.float64) else X.astype(np.float64)


def first_unsorted(values: np.ndarray, n_borders: np.ndarray) -> int:
    """The first feature whose borders do not strictly increase, in a border table (every
    feature's borders one after the other, feature ``f``'s ``n_borders[f]`` of them), or -1.
    All features are checked at once."""
    values = np.asarray(values)
    ends = np.cumsum(np.asarray(n_borders, dtype=np.intp))
    if values.size < 2:
        return -1
    # neighbours within a feature: every pair but those across a feature's end
    within = np.ones(values.size - 1, dtype=bool)
    within[ends[(ends > 0) & (ends < values.size)] - 1] = False
    step_down = np.flatnonzero((values[1:] <= values[:-1]) & within)
    if not step_down.size:
        return -1
    return int(np.searchsorted(ends, step_down[0], side="right"))


def border_sample(n_rows: int, subsample: int,
                  rng: Optional[np.random.Generator] = None) -> np.ndarray:
    """The rows (sorted, intp) that borders are computed on when ``n_rows`` exceed
    ``subsample``: ``subsample`` of them drawn without replacement by ``rng`` (default: a
    generator seeded with 0). Data read in batches draws its sample here too, so that it
    gets the borders of the same rows in memory."""
    rng = rng if rng is not None else np.random.default_rng(0)
    return np.sort(rng.choice(n_rows, subsample, replace=False)).astype(np.intp)


class BorderViews(Sequence):
    """``BinMapper.borders_``: feature ``f``'s borders, a read-only view of the border
    table, made when asked for (no array is kept per feature).

    Parameters
    ----------
    flat : ndarray of float64
        The border table.
    starts : ndarray of intp
    n_borders : ndarray of int32
        Feature ``f``'s borders are ``flat[starts[f]:starts[f] + n_borders[f]]``.
    """

    def __init__(self, flat: np.ndarray, starts: np.ndarray, n_borders: np.ndarray):
        self._flat, self._starts, self._n = flat, starts, n_borders

    def __len__(self) -> int:
        return self._n.size

    def __getitem__(self, f: Union[int, slice]) -> Any:
        if isinstance(f, slice):
            return [self[i] for i in range(*f.indices(len(self)))]
        f = operator.index(f)
        if f < 0:
            f += len(self)
        if not 0 <= f < len(self):
            raise IndexError(f"feature {f} is out of range for {len(self)} features")
        start = self._starts[f]
        view = self._flat[start:start + self._n[f]]
        view.flags.writeable = False
        return view

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self[f] for f in range(len(self)))


class BinMapper:
    """Maps raw features to bins.

    A feature with at most ``max_bins`` distinct values gets one bin per value (borders at the
    midpoints); otherwise its borders are ``max_bins - 1`` quantiles (fewer when quantiles
    coincide), computed on at most ``subsample`` rows. With ``min_samples_bin > 1``
    (LightGBM's ``min_data_in_bin``) every bin holds at least that many of those rows'
    values: at most ``n // min_samples_bin`` quantile bins, then, from the lowest border up,
    a border is dropped (its bin merged with the next) while its bin or the rest above it
    holds fewer. Bin ``b`` holds the values ``x`` with
    ``borders[b-1] < x <= borders[b]``; NaN goes to the dedicated bin ``missing_bin ==
    max_bins``. A constant feature has a single bin (it can never be split). The sign of
    zero is ignored (-0.0 counts as 0.0, and no border is -0.0).

    A *categorical* feature holds integer codes (``boostlib.engine.categorical``): each
    code seen in training gets a bin of its own (in code order), or, with more than
    ``max_bins`` codes, the ``max_bins - 1`` most frequent ones do and the rarer ones share
    a last "other" bin. NaN goes to the missing bin, and so do codes never seen in training
    (into the "other" bin where there is one).

    Parameters
    ----------
    max_bins : int, default 255
        Number of bins for non-missing values, 2 to 255.
    subsample : int, default 200000
        At most this many rows are used to compute the borders.
    min_samples_bin : int, default 1
        Fewest sampled values in a bin of a numeric feature (1: one bin per distinct value
        up to ``max_bins``).

    Attributes
    ----------
    borders_ : BorderViews
        Increasing borders per feature (empty for categorical features): a sequence of
        read-only views of the border table (:meth:`border_table`).
    n_bins_nonmissing_ : ndarray of int32
        ``len(borders_[f]) + 1`` per numeric feature; the number of category bins per
        categorical feature.
    missing_bin : int
        Equal to ``max_bins``.
    categorical_ : ndarray of bool
        Which features are categorical.
    cat_codes_ : list
        Per feature: None, or the codes (int64, increasing) that own bins ``0, 1, ...``.
    cat_other_ : ndarray of bool
        Whether a categorical feature has the shared "other" bin (last).
    levels_ : list
        Per feature: None, or the labels the codes stand for (code ``i`` is
        ``levels_[f][i]``), kept so data with labels is coded as in training.
    """

    def __init__(self, max_bins: int = MAX_BINS, subsample: int = SUBSAMPLE,
                 min_samples_bin: int = 1):
        if not (isinstance(max_bins, (int, np.integer)) and 2 <= max_bins <= MAX_BINS):
            raise ValueError(f"max_bins={max_bins!r} is invalid; expected an int in [2, 255]")
        if not (isinstance(subsample, (int, np.integer)) and not isinstance(subsample, bool)
                and subsample >= 1):
            raise ValueError(f"subsample={subsample!r} is invalid; expected an int >= 1")
        if not (isinstance(min_samples_bin, (int, np.integer))
                and not isinstance(min_samples_bin, bool) and min_samples_bin >= 1):
            raise ValueError(f"min_samples_bin={min_samples_bin!r} is invalid; expected an int "
                             ">= 1")
        self.max_bins = int(max_bins)
        self.subsample = int(subsample)
        self.min_samples_bin = int(min_samples_bin)
        self.missing_bin = self.max_bins

    def fit(self, X: np.ndarray, rng: Optional[np.random.Generator] = None,
            n_threads: int = 1, categorical: Optional[np.ndarray] = None,
            levels: Optional[List[Any]] = None,
            category_counts: Optional[Dict[int, Tuple[np.ndarray, np.ndarray]]] = None
            ) -> "BinMapper":
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
        categorical : ndarray of bool, optional
            Which features hold category codes (their bins come from all rows, not the
            subsample: a rare category must not be lost).
        levels : list, optional
            Per feature, the labels of the codes (see ``levels_``).
        category_counts : dict, optional
            For categorical features, ``{feature: (codes, counts)}`` counted on every row
            when ``X`` holds only some of them (a distributed fit's sample): the codes that
            get bins of their own are chosen from these counts instead of ``X``'s.
        """
        if is_sparse(X):
            return fit_sparse(self, X, rng, categorical)
        X = X if isinstance(X, Columns) else _as_real(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        n = X.shape[0]
        rows = np.empty(0, dtype=np.intp)
        if n > self.subsample:
            rows = border_sample(n, self.subsample, rng)
        cat = (np.zeros(X.shape[1], dtype=bool) if categorical is None
               else np.asarray(categorical, dtype=bool))
        # The sorted sample, a block of features at a time: one work array of at most
        # SORT_BLOCK_VALUES values, not a float64 copy of every sampled value at once
        # (for wide data hundreds of MB, each page faulted in on first use).
        m = rows.size or n
        block = 1 if isinstance(X, Columns) else \
            int(np.clip(SORT_BLOCK_VALUES // max(m, 1), 1, max(X.shape[1], 1)))
        values = np.empty((block, m))
        counts = np.empty(block, dtype=np.intp)
        borders: List[np.ndarray] = []
        for f0 in range(0, X.shape[1], block):
            f1 = min(f0 + block, X.shape[1])
            _binning.sorted_sample(_block(X, f0, f1), rows, values[:f1 - f0],
                                   counts[:f1 - f0], max(1, int(n_threads)))
            borders += [np.empty(0) if cat[f] else
                        _borders_of_sorted(values[f - f0, :counts[f - f0]], self.max_bins,
                                           self.min_samples_bin)
                        for f in range(f0, f1)]
        self.set_borders(borders)
        codes: List[Optional[np.ndarray]] = [None] * X.shape[1]
        other = np.zeros(X.shape[1], dtype=bool)
        for f in np.flatnonzero(cat):
            if category_counts is not None and int(f) in category_counts:
                codes[f], other[f] = self._frequent(*category_counts[int(f)])
            else:
                codes[f], other[f] = self._frequent_codes(_block(X, f, f + 1)[:, 0])
        return self.set_categories(codes, other, levels)

    def _frequent_codes(self, column: np.ndarray) -> Tuple[np.ndarray, bool]:
        """The codes of a categorical column that get bins of their own, and whether the
        others share an "other" bin."""
        return self._frequent(*code_counts(column))

    def _frequent(self, values: np.ndarray, counts: np.ndarray) -> Tuple[np.ndarray, bool]:
        """:meth:`_frequent_codes` from the sorted codes of a column and their counts."""
        if values.size <= self.max_bins:
            return values, False
        # the most frequent max_bins - 1 (ties: the smaller code), then in code order
        keep = np.lexsort((values, -counts))[:self.max_bins - 1]
        return np.sort(values[keep]), True

    def set_categories(self, codes: List[Optional[np.ndarray]], other: np.ndarray,
                       levels: Optional[List[Any]] = None) -> "BinMapper":
        """Install the categorical features (after :meth:`set_borders`): per feature None or
        its binned codes, whether it has an "other" bin, and the labels of its codes."""
        n = self.n_features
        if len(codes) != n or len(other) != n or (levels is not None and len(levels) != n):
            raise ValueError(f"categories need one entry per feature ({n})")
        self.categorical_ = np.fromiter((c is not None for c in codes), dtype=bool, count=n)
        self.cat_codes_ = [None] * n
        for f in np.flatnonzero(self.categorical_):
            self.cat_codes_[f] = np.asarray(codes[f], dtype=np.int64)
        self.cat_other_ = np.asarray(other, dtype=bool) & self.categorical_
        self.levels_ = list(levels) if levels is not None else [None] * n
        self._lookup: List[Optional[np.ndarray]] = [None] * n
        for f in np.flatnonzero(self.categorical_):
            c = self.cat_codes_[f]
            n_bins = c.size + int(self.cat_other_[f])
            if c.size and (np.any(np.diff(c) <= 0) or c[0] < 0):
                raise ValueError(f"category codes of feature {f} must be increasing and >= 0")
            if not n_bins <= self.max_bins:
                raise ValueError(f"feature {f} has {n_bins} category bins; at most "
                                 f"{self.max_bins}")
            # code -> bin; the last entry serves every code past the table
            rest = c.size if self.cat_other_[f] else self.missing_bin
            table = np.full(int(c[-1]) + 2 if c.size else 1, rest, dtype=np.uint8)
            table[c] = np.arange(c.size)
            self._lookup[f] = table
            self.n_bins_nonmissing_[f] = max(n_bins, 1)
        return self

    def set_borders(self, borders: Sequence[np.ndarray]) -> "BinMapper":
        """Install borders (from :meth:`fit`), a sequence of increasing arrays, one per
        feature: :meth:`set_border_table` of them one after the other."""
        borders = [np.asarray(b, dtype=np.float64) for b in borders]
        not_1d = [f for f, b in enumerate(borders) if b.ndim != 1]
        if not_1d:
            raise ValueError(f"borders of feature {not_1d[0]} must be at most "
                             f"{max(1, self.max_bins - 1)} increasing numbers")
        sizes = np.fromiter(map(len, borders), dtype=np.intp, count=len(borders))
        return self.set_border_table(np.concatenate(borders + [np.zeros(0)]), sizes)

    def set_border_table(self, values: np.ndarray, n_borders: np.ndarray) -> "BinMapper":
        """Install borders (from :meth:`set_borders` or a model file) as one table: every
        feature's borders one after the other (``values``), feature ``f``'s the
        ``n_borders[f]`` from the sum of the previous ones on.

        The kernel reads this table, and ``borders_`` are views of it: memory in proportion
        to the borders, and no object per feature (a wide sparse matrix has many features
        of no border).
        """
        width = max(1, self.max_bins - 1)
        values = np.asarray(values, dtype=np.float64)
        sizes = np.asarray(n_borders, dtype=np.intp)
        if values.ndim != 1 or sizes.ndim != 1 or sizes.size and sizes.min() < 0 \
                or int(sizes.sum()) != values.size:
            raise ValueError(f"a border table needs n_borders >= 0 (1-D) that add up to its "
                             f"{values.size} values (1-D); got {sizes.size} counts adding up "
                             f"to {int(sizes.sum())}")
        bad = sizes > width
        unsorted = first_unsorted(values, sizes)
        if unsorted >= 0:
            bad[unsorted] = True
        if bad.any():
            raise ValueError(f"borders of feature {int(np.argmax(bad))} must be at most "
                             f"{width} increasing numbers")
        flat = np.concatenate([values, np.zeros(1)])
        ends = np.cumsum(sizes)
        n = sizes.size
        self._flat, self._starts = flat, ends - sizes
        self._n_borders = sizes.astype(np.int32)
        self.n_bins_nonmissing_ = self._n_borders + 1
        self.borders_ = BorderViews(flat, self._starts, self._n_borders)
        return self.set_categories([None] * n, np.zeros(n, bool))

    @property
    def n_features(self) -> int:
        return len(self.borders_)

    def border_table(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(flat, starts, n_borders)``: every feature's borders one after the other (float64,
        then one padding entry), feature ``f``'s the ``n_borders[f]`` (int32) from
        ``starts[f]`` (intp) on: what the binning kernel reads."""
        return self._flat, self._starts, self._n_borders

    def transform(self, X: np.ndarray, n_threads: int = 1, layout: str = "feature") -> np.ndarray:
        """Binned copy of ``X`` (float32 or float64, shape (n_rows, n_features)).

        Parameters
        ----------
        X : ndarray
        n_threads : int
        layout : {"feature", "row", "engine"}
            ``"feature"``: uint8 of shape (n_features, n_rows), one contiguous row per feature
            (what prediction and oblivious levels read); ``"row"``: shape (n_rows,
            n_features) (what histogram building reads); ``"engine"``: ``"feature"``, or for
            a sparse ``X`` a :class:`~boostlib.engine.sparse_binned.SparseBinned` of it (what
            the engine reads: memory in proportion to the stored values).
        """
        if is_sparse(X):
            return transform_sparse(self, X, "sparse" if layout == "engine" else layout)
        if layout == "engine":
            layout = "feature"
        X = X if isinstance(X, Columns) else _as_real(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (n_rows, {self.n_features})")
        if layout == "feature":
            out = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
            by_feature = out
        elif layout == "row":
            out = np.empty((X.shape[0], X.shape[1]), dtype=np.uint8)
            by_feature = out.T
        else:
            raise ValueError(f"layout={layout!r} is invalid; expected 'feature' or 'row'")
        flat, starts, n_borders = self.border_table()
        if isinstance(X, Columns):          # a column at a time: no matrix copy
            for f in range(X.shape[1]):
                _binning.map_to_bins(_block(X, f, f + 1), flat, starts[f:f + 1],
                                     n_borders[f:f + 1], self.missing_bin,
                                     by_feature[f:f + 1], n_threads)
        else:
            _binning.map_to_bins(X, flat, starts, n_borders, self.missing_bin, by_feature,
                                 n_threads)
        for f in np.flatnonzero(self.categorical_):
            by_feature[f] = self._category_bins(_block(X, f, f + 1)[:, 0], f)
        return out

    def _category_bins(self, column: np.ndarray, f: int) -> np.ndarray:
        """Bins of a categorical column: its codes through the feature's table. NaN goes to
        the missing bin; so do codes never seen in training, except for a feature with an
        "other" bin, where every code without a bin of its own (rare or unseen) goes."""
        table = self._lookup[f]
        nan = np.isnan(column)
        codes = np.where(nan, 0, column)
        bad = (codes < 0) | (codes != np.floor(codes))
        if bad.any():
            raise ValueError(f"categorical feature {f}: value {column[np.argmax(bad)]!r} is "
                             "not a category code (a non-negative integer)")
        bins = table[np.minimum(codes, table.size - 1).astype(np.intp)]
        bins[nan] = self.missing_bin
        return bins

    def zero_bins(self) -> np.ndarray:
        """Each feature's bin of the value 0.0 (of code 0 for categorical features): where
        sparse input leaves its rows, the default of exclusive feature bundling."""
        # (a numeric feature's bin of x: its borders below x; counted for all at once)
        below = np.concatenate([[0], np.cumsum(self._flat[:-1] < 0.0)])
        out = (below[self._starts + self._n_borders] - below[self._starts]).astype(np.uint8)
        for f in np.flatnonzero(self.categorical_):
            out[f] = self._category_bins(np.zeros(1), f)[0]
        return out

    def category_labels(self, feature: int, bins: np.ndarray) -> List[str]:
        """Labels of the binned values ``bins`` of a categorical feature: its levels (or
        codes), ``"other"`` for the shared bin and ``"NaN"`` for the missing bin."""
        codes, levels = self.cat_codes_[feature], self.levels_[feature]
        out = []
        for b in np.asarray(bins, dtype=np.int64):
            if b < codes.size:
                out.append(str(levels[codes[b]] if levels is not None else codes[b]))
            elif b == codes.size and self.cat_other_[feature]:
                out.append("other")
            elif b == self.missing_bin:
                out.append("NaN")
        return out

    def threshold(self, feature: int, bin_index: int) -> float:
        """Raw threshold of a split at ``bin_index``: ``x <= threshold`` goes left."""
        borders = self.borders_[feature]
        return float(borders[bin_index]) if bin_index < borders.size else float("inf")


def code_counts(column: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The codes of a categorical column (float, NaN for missing), sorted, and how many rows
    hold each."""
    present = column[~np.isnan(column)]
    return np.unique(present.astype(np.int64), return_counts=True)
