"""Sparse histogram rows: each row's bins that are not their columns' default bins.

After exclusive feature bundling (:mod:`boostlib.engine.bundling`), the histogram columns of
sparse data are still mostly at one value: on w1a (300 one-hot features) a row has 117
columns and 11.5 of them away from their default bin. A histogram pass over the row-major
bytes adds all 117; a pass over the row's *entries* (its non-default bins, listed per row as
in a CSR matrix) adds 11.5, and takes each column's default bin afterwards as the rows'
total minus the column's other bins. This is what LightGBM does for its sparse bins.

The kernels (``_histogram.build_histograms``, ``_leafwise.grow_tree``) take the entries in
place of the row-major matrix, which the grower then does not keep.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np

#: Entries replace the row-major bytes when a row has on average at most this fraction of
#: its columns away from their default bins. An entry costs about twice a byte of the dense
#: pass (an index load, and a scattered add); the fill-in of the default bins costs one pass
#: over the histogram.
MAX_DENSITY = 0.3
#: Rows converted at a time (bounds the int32 work array to this many rows x columns).
CHUNK_ROWS = 1 << 16


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


def plan_entries(hist_rows: np.ndarray, offsets: np.ndarray,
                 max_density: Optional[float] = None) -> Optional[RowEntries]:
    """The entries of ``hist_rows`` (uint8, row-major, column ``c`` in bins
    ``offsets[c]:offsets[c + 1]``), or None when its rows are too dense to gain from them
    (more than ``max_density``, by default :data:`MAX_DENSITY`, of the columns away from
    their default bins on average).

    A column's default bin is its most frequent value.
    """
    n, m = hist_rows.shape
    if n == 0 or m == 0:
        return None
    if max_density is None:
        max_density = MAX_DENSITY
    offsets = np.asarray(offsets, dtype=np.int64)
    default = np.empty(m, dtype=np.int64)
    n_other = 0
    for c in range(m):
        counts = np.bincount(hist_rows[:, c], minlength=int(offsets[c + 1] - offsets[c]))
        default[c] = int(np.argmax(counts))
        n_other += n - int(counts[default[c]])
    if n_other > max_density * n * m:
        return None
    start = np.zeros(n + 1, dtype=np.int64)
    bins = np.empty(n_other, dtype=np.int32)
    base = offsets[:-1].astype(np.int32)
    fill = 0
    for r0 in range(0, n, CHUNK_ROWS):
        block = hist_rows[r0:r0 + CHUNK_ROWS]
        away = block != default.astype(np.uint8)
        np.cumsum(np.count_nonzero(away, axis=1), out=start[r0 + 1:r0 + 1 + block.shape[0]])
        start[r0 + 1:r0 + 1 + block.shape[0]] += fill
        chunk = (base + block)[away]        # row by row, columns (and bins) ascending
        bins[fill:fill + chunk.size] = chunk
        fill += chunk.size
    return RowEntries(start=start, bins=bins, default=(offsets[:-1] + default).astype(np.int32))
