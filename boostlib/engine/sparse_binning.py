"""Binning of ``scipy.sparse`` feature matrices without a dense float copy.

A sparse matrix means exactly the dense matrix ``X.toarray()``: an implicit entry is the value
0.0, binned like any other value (a feature's 0.0 has its own bin, as in a dense column of
zeros). Binning a sparse ``X`` therefore gives the same borders and the same uint8 binned
matrix as binning ``X.toarray()`` with :class:`~boostlib.engine.binning.BinMapper`, bit for
bit, hence the same models and predictions. Missing values (NaN) cannot be stored in a sparse
matrix here: NaN or infinite stored values are an error.

Everything here is vectorised NumPy over the stored entries (no Python loop over rows; the
only loop over features is the one building the list of borders, plus the features that have
more distinct values than ``max_bins``). scipy is optional: it is imported only once a sparse
matrix was passed (so it is already loaded), and :func:`is_sparse` does not import it.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

import numpy as np

from .borders import bins_for_rows, keep_full_bins, midpoint_percentiles
from .sparse_binned import SparseBinned

if TYPE_CHECKING:  # pragma: no cover
    from .binning import BinMapper

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# -- detection and validation ---------------------------------------------------------------

def is_sparse(X: Any) -> bool:
    """Whether ``X`` is a ``scipy.sparse`` matrix or array (never imports scipy).

    A scipy sparse object can only exist once ``scipy.sparse`` was imported, so when it is not
    in ``sys.modules`` the answer is False without importing it.
    """
    sparse = sys.modules.get("scipy.sparse")
    if sparse is None:
        return False
    return bool(sparse.issparse(X))


def check_sparse_X(X: Any, name: str = "X", min_rows: int = 1) -> Any:
    """Validate a ``scipy.sparse`` feature matrix and put it in the form binning reads.

    Parameters
    ----------
    X : scipy.sparse matrix or array of shape (n_rows, n_features)
    name : str, default "X"
        The parameter name used in error messages.
    min_rows : int, default 1
        The fewest rows accepted (0 for predictions, which are empty then).

    Returns
    -------
    scipy.sparse matrix or array
        CSR and CSC inputs keep their format (any other format is converted to CSC once);
        float32 and float64 keep their dtype (other numeric dtypes become float64); duplicate
        entries are summed (on a copy: ``X`` itself is never modified), as ``X.toarray()``
        does.

    Raises
    ------
    ValueError
        If ``X`` is not 2-D, has fewer than ``min_rows`` rows or no columns, is complex or
        not numeric, or stores
        NaN or infinite values (missing values in a sparse matrix are not supported).
    """
    ndim = len(X.shape)
    if ndim != 2:
        raise ValueError(f"{name}: expected a 2D sparse matrix, got a {ndim}D sparse array of "
                         f"shape {X.shape}")
    n_rows, n_features = X.shape
    if n_rows < min_rows:
        raise ValueError(f"{name}: found array with {n_rows} sample(s) (shape={X.shape}) while "
                         f"a minimum of {min_rows} is required.")
    if n_features == 0:
        raise ValueError(f"{name}: found array with 0 feature(s) (shape={X.shape}) while a "
                         "minimum of 1 is required.")
    dtype = np.dtype(X.dtype)
    if dtype.kind == "c":
        raise ValueError(f"{name}: Complex data not supported")
    if dtype.kind not in "biuf":
        raise ValueError(f"{name}: sparse matrix of dtype {dtype} is invalid; boostlib needs "
                         "numeric features (bool, int or float)")
    if X.format not in ("csr", "csc"):
        X = X.tocsc()
    if dtype not in _FLOATS:
        X = X.astype(np.float64)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    if not np.isfinite(X.data).all():
        bad = X.data[~np.isfinite(X.data)]
        raise ValueError(f"{name}: sparse matrix has NaN/inf stored values; missing values in "
                         "a sparse matrix are not supported (an entry that is not stored is "
                         "the value 0.0, not missing) and neither are infinities: pass a dense "
                         "array with NaN marking the missing values instead "
                         f"({bad.size} of {X.data.size} stored values are not finite, e.g. "
                         f"{float(bad[0])!r})")
    return X


def _entries(X: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, features, values)`` of the stored entries of a CSR or CSC matrix, in its
    storage order (``rows`` and ``features`` as intp)."""
    indptr = np.asarray(X.indptr)
    indices = np.asarray(X.indices).astype(np.intp, copy=False)
    outer = np.repeat(np.arange(indptr.size - 1, dtype=np.intp), np.diff(indptr))
    if X.format == "csr":
        return outer, indices, np.asarray(X.data)
    if X.format == "csc":
        return indices, outer, np.asarray(X.data)
    raise ValueError(f"X.format={X.format!r} is invalid here; expected 'csr' or 'csc' (pass X "
                     "through check_sparse_X first)")


def reject_categorical(mask: Any, what: str) -> None:
    """Raise when the boolean ``mask`` (``fit``'s ``categorical``, or a fitted mapper's
    ``categorical_``; None for none) marks a feature: categorical features are not supported
    with a sparse X."""
    if mask is None:
        return
    where = np.flatnonzero(np.asarray(mask, dtype=bool))
    if where.size:
        raise ValueError(f"{what} marks feature(s) {where[:10].tolist()} as categorical; "
                         "categorical features are not supported with a sparse X: pass a "
                         "dense array (e.g. X.toarray()) or declare no categorical feature")


# -- borders ----------------------------------------------------------------------------------

class _RunLengthValues:
    """The sorted array ``np.repeat(distinct, counts)``, read without being built: just what
    :func:`~boostlib.engine.borders.midpoint_percentiles` reads (``size`` and integer-array
    indexing), each position mapped to its value through the cumulative counts."""

    def __init__(self, distinct: np.ndarray, counts: np.ndarray):
        self._distinct = distinct
        self._ends = np.cumsum(counts)
        self.size = int(self._ends[-1]) if self._ends.size else 0
        self.shape = (self.size,)
        self.dtype = distinct.dtype

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, positions: Any) -> np.ndarray:
        return self._distinct[np.searchsorted(self._ends, positions, side="right")]


def _midpoints(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Borders between consecutive distinct values, exactly as ``_borders_of_sorted``."""
    with np.errstate(over="ignore"):    # hi - lo beyond the float range: mid is inf
        mid = lo + (hi - lo) / 2.0
    return np.where(mid >= hi, lo, mid)


def _borders_of_counts(distinct: np.ndarray, counts: np.ndarray, max_bins: int,
                       min_samples_bin: int = 1) -> np.ndarray:
    """Borders of one feature from its distinct values and their counts.

    Equal bit for bit to ``_borders_of_sorted(np.repeat(distinct, counts), max_bins,
    min_samples_bin)`` without building the repeated array.

    Parameters
    ----------
    distinct : ndarray of float64
        Strictly increasing values (no NaN).
    counts : ndarray of int
        Positive number of occurrences of each value.
    max_bins : int
        Bins for the non-missing values.
    min_samples_bin : int, default 1
        Fewest values in a bin.

    Returns
    -------
    ndarray of float64
        Increasing borders.
    """

    distinct = np.asarray(distinct, dtype=np.float64)
    counts = np.asarray(counts)
    if distinct.shape != counts.shape or distinct.ndim != 1:
        raise ValueError(f"distinct and counts must be 1-D of the same length, got shapes "
                         f"{distinct.shape} and {counts.shape}")
    if distinct.size == 0:
        return np.empty(0)
    if distinct.size <= max_bins:
        borders = _midpoints(distinct[:-1], distinct[1:])
    else:
        n_bins = bins_for_rows(max_bins, int(counts.sum()), min_samples_bin)
        percentiles = np.linspace(0, 100, n_bins + 1)[1:-1]
        borders = np.unique(midpoint_percentiles(_RunLengthValues(distinct, counts),
                                                  percentiles))
    if min_samples_bin <= 1:
        return borders
    cumulative = np.cumsum(counts)
    below = cumulative[np.searchsorted(distinct, borders, side="right") - 1]
    return keep_full_bins(borders, below, int(cumulative[-1]), min_samples_bin)


def _sampled_entries(X: Any, rows: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(features, values)`` of the stored entries on the sampled ``rows`` (all rows when
    empty); values as float64 with -0.0 made 0.0."""
    r, f, v = _entries(X)
    if rows.size:
        keep = np.zeros(X.shape[0], dtype=bool)
        keep[rows] = True
        on = keep[r]
        f, v = f[on], v[on]
    # the dense sort drops the sign of zero; adding 0.0 turns -0.0 into 0.0, nothing else
    return f, v.astype(np.float64) + 0.0


def sparse_borders(X: Any, max_bins: int, rows: np.ndarray,
                   min_samples_bin: int = 1) -> List[np.ndarray]:
    """Borders of every feature of a sparse ``X`` over the sampled ``rows``.

    Parameters
    ----------
    X : CSR or CSC matrix, validated by :func:`check_sparse_X`
    max_bins : int
    rows : ndarray of intp
        Distinct sampled rows; empty for every row.
    min_samples_bin : int, default 1

    Returns
    -------
    list of ndarray
        Per feature, what ``_borders_of_sorted`` gives on the sorted dense column over
        ``rows``.
    """
    n_features = X.shape[1]
    m = int(rows.size) or int(X.shape[0])
    feats, vals = _sampled_entries(X, rows)
    # each feature's implicit zeros: one weighted entry per feature that has any
    zeros = m - np.bincount(feats, minlength=n_features)
    has_zero = np.flatnonzero(zeros)
    feats = np.concatenate([feats, has_zero])
    vals = np.concatenate([vals, np.zeros(has_zero.size)])
    weights = np.concatenate([np.ones(feats.size - has_zero.size, dtype=np.intp),
                              zeros[has_zero]])
    order = np.lexsort((vals, feats))
    feats, vals, weights = feats[order], vals[order], weights[order]
    # runs of equal (feature, value): the distinct values of each feature and their counts
    new = np.empty(feats.size, dtype=bool)
    new[:1] = True
    np.not_equal(feats[1:], feats[:-1], out=new[1:])
    new[1:] |= vals[1:] != vals[:-1]
    starts = np.flatnonzero(new)
    d_feat, d_val = feats[starts], vals[starts]
    d_count = np.add.reduceat(weights, starts) if starts.size else weights[:0]
    n_distinct = np.bincount(d_feat, minlength=n_features)
    first = np.concatenate(([0], np.cumsum(n_distinct)))
    # features with at most max_bins distinct values (the usual case): midpoints, all at once
    same = d_feat[1:] == d_feat[:-1]
    mids = _midpoints(d_val[:-1], d_val[1:])[same]
    # the midpoints of feature f are at [first[f] - f, first[f + 1] - f - 1) (slices:
    # np.split takes three times as long a feature, seconds for a million columns)
    cuts = np.concatenate([[0], (first[1:-1] - np.arange(1, n_features)).clip(0),
                           [mids.size]]).tolist()
    borders = [mids[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    # the others, and with min_samples_bin every feature of more than one value, one by one
    for f in np.flatnonzero(n_distinct > (max_bins if min_samples_bin <= 1 else 1)):
        lo, hi = first[f], first[f + 1]
        borders[f] = _borders_of_counts(d_val[lo:hi], d_count[lo:hi], max_bins,
                                        min_samples_bin)
    return borders


def fit_sparse(mapper: "BinMapper", X: Any, rng: Optional[np.random.Generator] = None,
               categorical: Any = None) -> "BinMapper":
    """:meth:`BinMapper.fit <boostlib.engine.binning.BinMapper.fit>` of a sparse ``X``.

    The same rows are sampled, from the same draws of ``rng``, as for ``X.toarray()``, and the
    borders are those of ``X.toarray()`` bit for bit.

    Parameters
    ----------
    mapper : BinMapper
        Its ``max_bins``, ``subsample`` and ``min_samples_bin`` are used; its borders are
        installed.
    X : scipy.sparse matrix or array of shape (n_rows, n_features)
    rng : numpy Generator, optional
        Draws the sampled rows when there are more than ``mapper.subsample``.
    categorical : array-like of bool, optional
        Must mark no feature: categorical features are not supported with a sparse ``X``.

    Returns
    -------
    BinMapper
        ``mapper``.
    """
    reject_categorical(categorical, "categorical")
    X = check_sparse_X(X)
    n = X.shape[0]
    rows = np.empty(0, dtype=np.intp)
    if n > mapper.subsample:
        rng = rng if rng is not None else np.random.default_rng(0)
        rows = np.sort(rng.choice(n, mapper.subsample, replace=False)).astype(np.intp)
    return mapper.set_borders(sparse_borders(X, mapper.max_bins, rows,
                                             mapper.min_samples_bin))


# -- binned matrix ----------------------------------------------------------------------------

def _bins_of(flat: np.ndarray, start: np.ndarray, n_borders: np.ndarray,
             x: np.ndarray) -> np.ndarray:
    """Per value ``x[i]``, the number of borders strictly below it among
    ``flat[start[i] : start[i] + n_borders[i]]`` (increasing; ``flat`` has one padding entry
    at the end): a lower bound for all the values at once, one halving step at a time."""
    lo = start.copy()
    n = n_borders.copy()
    while True:
        live = n > 0
        if not live.any():
            break
        half = n >> 1
        mid = lo + half
        right = live & (flat[mid] < x)
        lo = np.where(right, mid + 1, lo)
        n = np.where(right, n - half - 1, half)
    return lo - start


def transform_sparse(mapper: "BinMapper", X: Any, layout: str = "feature") -> np.ndarray:
    """:meth:`BinMapper.transform <boostlib.engine.binning.BinMapper.transform>` of a sparse
    ``X``: the binned ``X.toarray()``, bit for bit, without the dense float matrix.

    Every feature's bin of 0.0 fills the output, then the stored entries' bins are written
    over it (bin ``b`` holds ``borders[b-1] < x <= borders[b]``, as in the dense kernel).

    Parameters
    ----------
    mapper : BinMapper
        A fitted mapper.
    X : scipy.sparse matrix or array of shape (n_rows, n_features)
    layout : {"feature", "row", "sparse"}
        ``"feature"``: uint8 of shape (n_features, n_rows); ``"row"``: (n_rows, n_features);
        ``"sparse"``: a :class:`~boostlib.engine.sparse_binned.SparseBinned` of the same
        feature-major matrix (memory in proportion to the stored values).

    Returns
    -------
    ndarray of uint8 or SparseBinned
    """
    reject_categorical(getattr(mapper, "categorical_", None), "the mapper's categorical_")
    if layout not in ("feature", "row", "sparse"):
        raise ValueError(f"layout={layout!r} is invalid; expected 'feature', 'row' or "
                         "'sparse'")
    X = check_sparse_X(X, min_rows=0)        # no rows: an empty prediction
    n_rows, n_features = X.shape
    if n_features != mapper.n_features:
        raise ValueError(f"X must have shape (n_rows, {mapper.n_features}), got {X.shape}")
    flat, start, n_borders = mapper.border_table()
    zero_bin = mapper.zero_bins()
    rows, feats, vals = _entries(X)
    bins = _bins_of(flat, start[feats], n_borders[feats],
                    vals.astype(np.float64)).astype(np.uint8)
    if layout == "sparse":
        return SparseBinned.from_entries(n_rows, zero_bin, rows.astype(np.int32),
                                         feats.astype(np.intp), bins)
    if layout == "feature":
        out = np.empty((n_features, n_rows), dtype=np.uint8)
        out[...] = zero_bin[:, None]
        out.reshape(-1)[feats * n_rows + rows] = bins
    else:
        out = np.empty((n_rows, n_features), dtype=np.uint8)
        out[...] = zero_bin[None, :]
        out.reshape(-1)[rows * n_features + feats] = bins
    return out
