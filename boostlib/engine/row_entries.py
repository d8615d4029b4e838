"""Sparse histogram rows: each row's bins that are not their columns' default bins.

After exclusive feature bundling (:mod:`boostlib.engine.bundling`), the histogram columns of
sparse data are still mostly at one value: on w1a (300 one-hot features) a row has 117
columns and 11.5 of them away from their most frequent value. A histogram pass over the
row-major bytes adds all 117; a pass over the row's *entries* (its bins other than its
columns' default bins, each column's default being its most frequent value, listed per row
as in a CSR matrix) adds 11.5, and takes each column's default bin afterwards as the rows'
total minus the column's other bins. This is what LightGBM does for its sparse bins. The
most frequent value is not always the bin of 0.0: on agaricus (one-hot columns, some of them
at 1 on most rows) a row has 30 columns and 12.3 entries.

The kernels (``_histogram.build_histograms``, ``_leafwise.grow_tree``) take the entries in
place of the row-major matrix, which the grower then does not keep. Sparse input builds
them from its own entries (:meth:`boostlib.engine.bundling.Bundling.sparse_entries`), with
no dense matrix at any point.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np

#: Entries replace the row-major bytes when a row has on average at most this fraction of
#: its columns away from their default bins. An entry costs about twice a byte of the dense
#: pass (an index load, and a scattered add); the fill-in of the default bins costs one pass
#: over the histogram.
MAX_DENSITY = 0.45
#: ... and when there are at least this many columns: on fewer, a row's bytes cost little to
#: add and the fill-in outweighs the saving. Leaf-wise fits (63 leaves, 100 trees) of
#: 50,000 rows of one-hot groups (one column each), entries against bytes, on 2 threads and
#: on 1: 30 columns at densities 0.5, 0.4 and 0.2: 0.93x, 0.96x, 0.93x and 1.02x, 0.99x,
#: 0.92x; 16 columns at the same densities 1.01x, 0.99x, 0.97x and 1.06x, 1.04x, 1.01x.
#: Agaricus (30 columns, density 0.41) 0.93x and 0.95x.
MIN_COLUMNS = 24
#: Cells (rows x columns) converted at a time (bounds the work arrays: 16 MB of int32).
CHUNK_CELLS = 1 << 22


@dataclass
class RowEntries:
    """The rows of a row-major histogram matrix as lists of their non-default bins.

    Attributes
    ----------
    start : ndarray of int64, shape (n_rows + 1,)
        Row ``r``'s entries are ``bins[start[r]:start[r + 1]]``.
    bins : ndarray of int32
        Absolute histogram bins (``offsets[c] + value`` of column ``c``), ascending within a
        row.
    default : ndarray of int32, shape (n_columns,)
        Each column's default bin (absolute), the one entries leave out.
    """

    start: np.ndarray
    bins: np.ndarray
    default: np.ndarray

    @property
    def n_rows(self) -> int:
        return self.start.size - 1

    def kernel_args(self) -> Dict[str, np.ndarray]:
        """The keyword arguments the histogram kernels take the entries as."""
        return dict(entry_start=self.start, entry_bins=self.bins, entry_default=self.default)


def use_entries(n_columns: int, n_entries: int, n_rows: int) -> bool:
    """Whether ``n_entries`` entries over ``n_rows`` rows of ``n_columns`` columns are
    worth listing (:data:`MIN_COLUMNS`, :data:`MAX_DENSITY`)."""
    return n_columns >= MIN_COLUMNS and n_entries <= MAX_DENSITY * n_rows * n_columns


def plan_entries(hist_rows: np.ndarray, offsets: np.ndarray,
                 default: Optional[np.ndarray] = None,
                 force: bool = False) -> Optional[RowEntries]:
    """The entries of ``hist_rows`` (uint8, row-major, column ``c`` in bins
    ``offsets[c]:offsets[c + 1]``), or None when they would not pay (:func:`use_entries`;
    ``force``: always list them).

    ``default`` gives each column's default value; by default, its most frequent one (the
    first, if several), which the grower takes, and
    :meth:`~boostlib.engine.bundling.Bundling.sparse_entries` finds too for sparse input.
    """
    n, m = hist_rows.shape
    if n == 0 or m == 0 or (not force and m < MIN_COLUMNS):
        return None
    offsets = np.asarray(offsets, dtype=np.int64)
    if default is None:
        default = np.array([np.argmax(np.bincount(hist_rows[:, c],
                                                  minlength=int(offsets[c + 1] - offsets[c])))
                            for c in range(m)], dtype=np.int64)
    default = np.asarray(default, dtype=np.int64)
    values = default.astype(np.uint8)
    chunk_rows = max(1, CHUNK_CELLS // m)
    n_other = sum(int(np.count_nonzero(hist_rows[r0:r0 + chunk_rows] != values))
                  for r0 in range(0, n, chunk_rows))
    if not (force or use_entries(m, n_other, n)):
        return None
    start = np.zeros(n + 1, dtype=np.int64)
    bins = np.empty(n_other, dtype=np.int32)
    base = offsets[:-1].astype(np.int32)
    fill = 0
    for r0 in range(0, n, chunk_rows):
        block = hist_rows[r0:r0 + chunk_rows]
        away = block != values
        np.cumsum(np.count_nonzero(away, axis=1), out=start[r0 + 1:r0 + 1 + block.shape[0]])
        start[r0 + 1:r0 + 1 + block.shape[0]] += fill
        chunk = (base + block)[away]        # row by row, columns (and bins) ascending
        bins[fill:fill + chunk.size] = chunk
        fill += chunk.size
    return RowEntries(start=start, bins=bins, default=(offsets[:-1] + default).astype(np.int32))


def from_pairs(n_rows: int, rows: np.ndarray, bins: np.ndarray, offsets: np.ndarray,
               default: np.ndarray) -> RowEntries:
    """Entries from ``(row, bin)`` pairs listed column by column (at most one per row and
    column, none at the column's default value ``default``): grouped by row, each row's
    bins stay in column order."""
    rows = np.asarray(rows, dtype=np.int64)
    order = np.argsort(rows, kind="stable")
    start = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=start[1:])
    offsets = np.asarray(offsets, dtype=np.int64)
    return RowEntries(start=start, bins=np.asarray(bins, dtype=np.int32)[order],
                      default=(offsets[:-1] + np.asarray(default, dtype=np.int64))
                      .astype(np.int32))
