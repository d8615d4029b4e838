"""Exclusive feature bundling: fewer histogram columns for sparse, one-hot-like features.

Many tabular matrices hold features that are almost always at one value (one-hot columns,
indicator and count features): a row is "non-default" in few of them, and such features
rarely are non-default on the same row. LightGBM's exclusive feature bundling (Ke et al.,
NIPS 2017) packs features that are never non-default together into one column, so a
histogram pass reads one byte per bundle instead of one per feature.

Here a bundle is a histogram column only: splits, partitions and predictions still read
the features themselves. The column holds 0 where every feature of the bundle is at its
default (most frequent) bin, and ``offset_i + rank`` where feature ``i`` is at its
``rank``-th other bin. The histogram of a bundled feature is read back from its bins of the
column, and its default bin is the node's total minus its other bins
(:meth:`Bundling.expand`). Features are bundled only when no row conflicts, so every
non-default bin's sums are the very sums of the unbundled pass; the default bin's may differ
in the last bits (a subtraction).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np

from .._kernels import _bundling, _histogram
from . import row_entries
from .row_entries import RowEntries, from_pairs
from .sparse_binned import SparseBinned

#: A feature is a bundling candidate when at most this fraction of rows is non-default
#: (a one-hot column of a two-level category qualifies).
SPARSE_FRACTION = 0.5
#: Bundling is used when it at least divides the histogram columns by this factor.
MIN_GAIN = 1.5
#: A bundle column has at most this many values (uint8, the top value unused).
BUNDLE_BINS = 255
#: Bundles tried for each feature (greedy; bounds the planning cost).
MAX_TRIES = 64
#: The planning lists the rows of a block of features at a time, about this many (all the
#: features' rows at once could take twice the binned matrix).
PLAN_BLOCK = 1 << 22


@dataclass
class Bundling:
    """The histogram columns of a training matrix and how to read features back.

    Attributes
    ----------
    columns : list of ndarray
        The features of each column (one feature, or a bundle).
    offsets, n_bins_nonmissing : ndarray of int32
        The histogram layout of the columns (as ``TreeGrower.offsets`` for features): a
        bundle column has ``1 + sum(feature bins but the default)`` values and an unused
        missing bin.
    source : ndarray of intp
        For every bin of the feature layout, its bin in the column layout, or -1 for the
        default bin of a bundled feature.
    default_at : ndarray of intp
        The feature-layout positions of the bundled features' default bins.
    others : ndarray of intp
        The feature-layout positions of their other bins, grouped by feature in the order of
        ``default_at``; ``others_start`` are the groups' starts (for ``np.add.reduceat``).
    others_start : ndarray of intp
    """

    columns: List[np.ndarray]
    offsets: np.ndarray
    n_bins_nonmissing: np.ndarray
    source: np.ndarray
    default_at: np.ndarray
    others: np.ndarray
    others_start: np.ndarray
    _rank: List[Optional[np.ndarray]]
    _start: np.ndarray
    _default: np.ndarray

    @property
    def n_columns(self) -> int:
        return len(self.columns)

    def rows(self, X_binned: np.ndarray) -> np.ndarray:
        """The uint8 (n_rows, n_columns) row-major histogram matrix of ``X_binned``
        (feature-major (n_features, n_rows)); a column of its own holds its feature's
        missing values at its last bin."""
        n = X_binned.shape[1]
        sparse = isinstance(X_binned, SparseBinned)
        out = np.zeros((n, self.n_columns), dtype=np.uint8)
        for c, feats in enumerate(self.columns):
            if self._rank[feats[0]] is None:    # a column of its own
                column = X_binned.columns(feats)[0] if sparse else X_binned[feats[0]]
                np.minimum(column, np.uint8(self.n_bins_nonmissing[c]), out=out[:, c])
                continue
            col = np.zeros(n, dtype=np.uint8)
            for f in feats:
                if sparse:
                    hit, v = X_binned.entries(int(f))
                else:
                    d, nb = int(self._default[f]), self._rank[f].size - 1
                    # (values above nb are missing, which bin nb stands for)
                    hit = np.flatnonzero(X_binned[f] != d if d < nb else X_binned[f] < nb)
                    v = X_binned[f, hit]
                v = np.minimum(v.astype(np.intp), self._rank[f].size - 1)
                col[hit] = (self._start[f] + self._rank[f][v]).astype(np.uint8)
            out[:, c] = col
        return out

    def column_defaults(self) -> np.ndarray:
        """Each column's value on a row whose features are all at their default bins: 0 for
        a bundle, the feature's default bin for a column of its own."""
        out = np.zeros(self.n_columns, dtype=np.int64)
        for c, feats in enumerate(self.columns):
            if self._rank[feats[0]] is None:
                out[c] = min(int(self._default[feats[0]]), int(self.n_bins_nonmissing[c]))
        return out

    def sparse_entries(self, X_binned: SparseBinned) -> Optional[RowEntries]:
        """The entries (:mod:`boostlib.engine.row_entries`) of :meth:`rows` for sparse
        ``X_binned``, built from its own entries without the dense rows, and the same as
        :func:`~boostlib.engine.row_entries.plan_entries` lists for those rows (each
        column's default is its most frequent value); None when they would not pay (as
        ``plan_entries`` decides, or when even the features' entries are too many)."""
        n = X_binned.shape[1]
        if n == 0 or not row_entries.use_entries(self.n_columns,
                                                 int(X_binned.n_entries().sum()), n):
            return None                 # (the feature entries bound the column entries)
        zero = self.column_defaults()   # each column's value where its features have none
        rows: List[np.ndarray] = []
        bins: List[np.ndarray] = []
        default = np.empty(self.n_columns, dtype=np.int64)
        for c, feats in enumerate(self.columns):
            r, v = self._column_entries(X_binned, c, feats, int(zero[c]))
            counts = np.bincount(v, minlength=int(self.n_bins_nonmissing[c]) + 1)
            counts[zero[c]] += n - r.size
            default[c] = int(np.argmax(counts))     # the most frequent value (the first)
            if default[c] != zero[c]:   # its rows leave the entries, the others join them
                others = np.ones(n, dtype=bool)
                others[r] = False
                keep = v != default[c]
                r = np.concatenate([r[keep], np.flatnonzero(others)])
                v = np.concatenate([v[keep], np.full(r.size - int(keep.sum()), zero[c])])
            rows.append(r)
            bins.append(int(self.offsets[c]) + v)
        if not row_entries.use_entries(self.n_columns, sum(r.size for r in rows), n):
            return None
        return from_pairs(n, np.concatenate(rows), np.concatenate(bins), self.offsets, default)

    def _column_entries(self, X_binned: SparseBinned, c: int, feats: np.ndarray,
                        zero: int):
        """``(rows, values)``: the rows where column ``c`` (of features ``feats``) is not
        at ``zero``, its value on rows with no entry, and its values there (int64)."""
        if self._rank[feats[0]] is None:    # a column of its own
            r, v = X_binned.entries(int(feats[0]))
            v = np.minimum(v, self.n_bins_nonmissing[c]).astype(np.int64)
            keep = v != zero
            return r[keep], v[keep]
        rows, values = [], []
        for f in feats:
            r, v = X_binned.entries(int(f))
            rank = self._rank[f][np.minimum(v.astype(np.intp), self._rank[f].size - 1)]
            keep = rank >= 0
            rows.append(r[keep])
            values.append(int(self._start[f]) + rank[keep].astype(np.int64))
        return np.concatenate(rows), np.concatenate(values)

    def expand(self, column_hist: np.ndarray, out: np.ndarray) -> None:
        """Feature-layout histograms ``out`` (n_slots, n_feature_bins, channels) from
        column-layout ones (n_slots, n_column_bins, channels)."""
        _histogram.expand_bundles(column_hist, self.source, self.default_at, self.others,
                                  self.others_start, int(self.offsets[1]), out)


def plan(X_binned, n_bins_nonmissing: np.ndarray, missing_bin: int,
         exclude: Optional[np.ndarray] = None,
         default_bins: Optional[np.ndarray] = None) -> Optional[Bundling]:
    """Bundle the sparse features of ``X_binned`` (uint8, feature-major, or a
    :class:`~boostlib.engine.sparse_binned.SparseBinned`, whose default bins are its bins of
    0.0), or None when bundling would not cut the histogram columns by :data:`MIN_GAIN`.

    Features in ``exclude`` (e.g. categorical ones) stay columns of their own.
    ``default_bins`` fixes each feature's default bin (training passes the bins of 0.0, so
    a dense matrix is bundled exactly as its sparse twin); by default, the most frequent.
    """
    n_features, n = X_binned.shape
    nbnm = np.asarray(n_bins_nonmissing, dtype=np.int64)
    if n == 0 or n_features < 2:
        return None
    sparse = isinstance(X_binned, SparseBinned)
    if sparse:             # the bin of 0.0 is the default; the entries are the others
        default = np.minimum(X_binned.default.astype(np.int64), nbnm)
        nnz = X_binned.n_entries()
    else:
        if default_bins is not None:    # as histogram bins (missing: nb)
            default = np.minimum(np.asarray(default_bins, dtype=np.int64), nbnm)
            nnz = None
        else:
            default = np.empty(n_features, dtype=np.int64)
            nnz = np.empty(n_features, dtype=np.int64)
            for f in range(n_features):
                counts = np.bincount(np.minimum(X_binned[f], nbnm[f]), minlength=nbnm[f] + 1)
                default[f] = int(np.argmax(counts))
                nnz[f] = n - counts[default[f]]
        raw = np.where(default < nbnm, default, missing_bin).astype(np.uint8)  # as binned
        if nnz is None:
            nnz = n - np.count_nonzero(X_binned == raw[:, None], axis=1)
    candidate = (nnz <= SPARSE_FRACTION * n) & (nbnm < BUNDLE_BINS - 1)
    if exclude is not None:
        candidate &= ~np.asarray(exclude, dtype=bool)
    if candidate.sum() < 2:
        return None
    order = np.array(sorted(np.flatnonzero(candidate), key=lambda f: (-nnz[f], f)),
                     dtype=np.intp)
    # the rows of the last MAX_TRIES bundles (the only ones tried), the bundles' values, and
    # each feature's bundle, features going in blocks (PLAN_BLOCK)
    used = np.zeros((min(MAX_TRIES, order.size), n), dtype=np.uint8)
    size = np.zeros(order.size, dtype=np.int64)
    bundle_of = np.empty(order.size, dtype=np.int32)
    dense = None if sparse else np.ascontiguousarray(X_binned)
    n_bundles, i = 0, 0
    while i < order.size:
        j = min(order.size, i + max(1, PLAN_BLOCK // max(1, int(nnz[order[i]]))))
        block = order[i:j]
        if sparse:
            lists = [X_binned.entries(int(f))[0] for f in block]
            indptr = np.concatenate([[0], np.cumsum([r.size for r in lists])]).astype(np.int64)
            rows = np.concatenate(lists).astype(np.int32)
        else:
            indptr, rows = _bundling.nondefault_rows(dense, block, raw[block])
        # (each feature's bins but the default, missing included, are its column values)
        n_bundles = _bundling.greedy_bundles(indptr, rows, nbnm[block].astype(np.int64),
                                             BUNDLE_BINS, size, used, n_bundles,
                                             bundle_of[i:j])
        i = j
    bundles: List[List[int]] = [[] for _ in range(n_bundles)]
    for f, b in zip(order.tolist(), bundle_of.tolist()):
        bundles[b].append(int(f))
    singles = sorted([f for f in range(n_features) if not candidate[f]]
                     + [b[0] for b in bundles if len(b) == 1])
    bundles = [sorted(b) for b in bundles if len(b) > 1]
    if (len(singles) + len(bundles)) * MIN_GAIN > n_features:
        return None
    return _layout(singles, bundles, nbnm, default)


def _layout(singles: List[int], bundles: List[List[int]], nbnm: np.ndarray,
            default: np.ndarray) -> Bundling:
    """The columns (``singles`` first, each a column of its own, then the bundles)."""
    n_features = nbnm.size
    columns = [np.array([f]) for f in singles] + [np.array(b) for b in bundles]
    feat_off = np.concatenate([[0], np.cumsum(nbnm + 1)])
    rank: List[Optional[np.ndarray]] = [None] * n_features
    start = np.zeros(n_features, dtype=np.int64)
    col_nb = []
    source = np.full(int(feat_off[-1]), -1, dtype=np.intp)
    col_off = 0
    default_at, others, others_start = [], [], []
    for c, feats in enumerate(columns):
        if c < len(singles):
            f = int(feats[0])                 # a column of its own: the same bins
            nb = int(nbnm[f])
            source[feat_off[f]:feat_off[f] + nb + 1] = col_off + np.arange(nb + 1)
            col_nb.append(nb)
            col_off += nb + 1
            continue
        value = 1                               # 0: every feature at its default
        for f in feats:
            f = int(f)
            nb = int(nbnm[f])
            # binned value (0..nb-1, anything larger is missing) -> rank among the others
            table = np.full(nb + 1, -1, dtype=np.int64)
            non_default = [b for b in range(nb + 1) if b != default[f]]
            table[non_default] = np.arange(len(non_default))
            rank[f] = table
            start[f] = value
            source[feat_off[f] + np.array(non_default, dtype=np.intp)] = (
                col_off + value + np.arange(len(non_default)))
            default_at.append(feat_off[f] + default[f])
            others_start.append(len(others))
            others.extend((feat_off[f] + np.array(non_default, dtype=np.intp)).tolist())
            value += len(non_default)
        col_nb.append(value)
        col_off += value + 1
    col_nb_arr = np.array(col_nb, dtype=np.int32)
    return Bundling(columns=columns, _default=default.astype(np.int64),
                    offsets=np.concatenate([[0], np.cumsum(col_nb_arr + 1)]).astype(np.int32),
                    n_bins_nonmissing=col_nb_arr, source=source,
                    default_at=np.array(default_at, dtype=np.intp),
                    others=np.array(others, dtype=np.intp),
                    others_start=np.array(others_start, dtype=np.intp), _rank=rank,
                    _start=start)
