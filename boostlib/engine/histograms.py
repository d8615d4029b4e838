"""The histograms of a tree's nodes: the binned data they are built from, their buffers, the
root histogram and its row counts, the passes that build them and the work arrays the
passes share.

A node's histogram holds, for every feature ``f``, ``n_bins_nonmissing[f] + 1`` bins (its
bins in use, then its missing bin) at ``offsets[f]``, and per bin the sums of the float32
gradient and hessian of its rows and, when the split rules need it, their count (``2`` or
``3`` channels, ``Histograms.n_channels``). A tree kind asks for the root's histogram
(:meth:`Histograms.root`), then for its children's: the smaller child of each split node is
built from its rows, its sibling is the parent's minus it (:meth:`Histograms.build_children`,
:meth:`Histograms.build_segment`). The kind decides which nodes are split; the split rules
(:mod:`boostlib.engine.split_rules`) read the histograms.

Histograms may be built over bundles of mutually exclusive sparse features
(:mod:`boostlib.engine.bundling`) and read back per feature, and bundled columns that are
mostly at one value may be read as sparse row entries (:mod:`boostlib.engine.row_entries`).
"""
from __future__ import annotations

import math
from typing import Any, Dict, NamedTuple, Optional, Tuple

import numpy as np

from .._kernels import _histogram, _partition, _vector
from ..plugin.collective import LOCAL, Collective
from .buffers import ArrayPool
from .bundling import plan as plan_bundles
from .grow_errors import DerivativeOverflow, SampleDefects
from .row_entries import RowEntries, plan_entries
from .sparse_binned import SparseBinned, local_columns


class HistogramInputs(NamedTuple):
    """What every histogram pass of one tree reads: the binned rows, the row ids into them
    (empty: every row, in order), and the float32 gradient and hessian of the fitted rows
    (with ``K > 1`` outputs, ``g`` holds every output's gradient and hessian interleaved,
    (n_fit, 2K), and ``h`` is empty)."""

    X: np.ndarray
    rows: np.ndarray
    g: np.ndarray
    h: np.ndarray


class GatheredSample(NamedTuple):
    """A sample's histogram inputs gathered in one pass (:meth:`Histograms.gather_sample`):
    its compact binned rows, its weighted derivatives (float64) and their float32 copies."""

    X: np.ndarray
    g: np.ndarray
    h: np.ndarray
    g32: np.ndarray
    h32: np.ndarray


class Histograms:
    """The histograms of the nodes of the trees grown on one binned training matrix.

    Parameters
    ----------
    X_binned : ndarray of uint8, shape (n_features, n_rows), or SparseBinned
        Feature-major binned training data.
    n_bins_nonmissing : ndarray of int32, shape (n_features,)
        Bins in use per feature, each in ``[1, missing_bin]``.
    missing_bin : int
    n_threads : int
    is_categorical : ndarray of bool, shape (n_features,)
        Which features are categorical (they are never bundled).
    bundle : bool, default True
        Build histograms over bundles of mutually exclusive sparse features when that cuts
        the histogram columns.
    default_bins : ndarray, optional
        Each feature's default bin for bundling (by default the most frequent bin).
    collective : Collective, optional
        Sums every histogram built here with the other workers' (default: one machine).
    n_channels : {2, 3}
        Channels of the histograms (gradient, hessian, and the row count with 3); the
        grower sets ``n_channels`` before each tree, as the split rules ask.
    n_outputs : int, default 1
        ``K``: the outputs of vector-leaf trees (``boostlib._kernels._vector``). A bin then
        holds every output's gradient and hessian sums, interleaved, and the row count
        last (``width`` = ``2K + n_channels - 2`` channels); histograms are not bundled.

    Attributes
    ----------
    X : the binned training matrix.
    nbnm : ndarray of int32, the bins in use per feature.
    offsets : ndarray of int32, shape (n_features + 1,), each feature's first histogram bin.
    missing_bin, n_bins : int, the missing bin and ``missing_bin + 1``.
    n_rows : int, the training rows.
    bundling : Bundling or None, the bundles histograms are built over.
    row_entries : RowEntries or None, bundled columns read as sparse row entries.
    hist_rows : ndarray of uint8, (n_rows, n_columns): the rows histograms read (no
        columns when they read row entries).
    hist_offsets : ndarray of int32, the layout of the histogram columns.
    n_hist_columns : int, histogram columns (features, or bundles of them).
    row_arrays : ArrayPool, per-row arrays reused once a tree is done (the node of every
        fitted row).
    """

    def __init__(self, X_binned: Any, n_bins_nonmissing: np.ndarray, missing_bin: int,
                 n_threads: int, is_categorical: np.ndarray, bundle: bool = True,
                 default_bins: Optional[np.ndarray] = None,
                 collective: Collective = LOCAL, n_channels: int = 3, n_outputs: int = 1):
        self.X = X_binned
        self.n_outputs = int(n_outputs)
        if self.n_outputs > 1:
            bundle = False
        self.nbnm = np.ascontiguousarray(n_bins_nonmissing, dtype=np.int32)
        if self.nbnm.shape != (X_binned.shape[0],) or np.any(self.nbnm < 1) or np.any(
                self.nbnm > missing_bin):
            raise ValueError("n_bins_nonmissing needs one count in [1, missing_bin] per "
                             "feature")
        self.missing_bin = int(missing_bin)
        self.n_bins = self.missing_bin + 1
        self.offsets = np.concatenate([[0], np.cumsum(self.nbnm + 1)]).astype(np.int32)
        self.n_rows = int(X_binned.shape[1])
        self.n_threads = int(n_threads)
        self.collective = collective
        self.n_channels = n_channels
        self._root_slot = np.zeros(1, dtype=np.int32)   # node 0's histogram slot
        self._root_sums: Optional[np.ndarray] = None     # the root's gradient and hessian sums
        # Histograms are built over the columns of ``hist_rows`` (the features, or bundles
        # of them) in the layout ``hist_offsets``, and read back per feature.
        self.bundling = (plan_bundles(X_binned, self.nbnm, self.missing_bin, is_categorical,
                                      default_bins) if bundle else None)
        # The row-major twin X_rows (:attr:`X_rows`; histograms and depthwise walks read
        # it). Sparse data bundled has none (its depthwise trees are applied level by level
        # instead of walked).
        self._X_rows: Optional[np.ndarray] = None
        self._walkable = self.bundling is None or not isinstance(X_binned, SparseBinned)
        # Bundled columns that are still mostly at one value are read as sparse rows
        # (:mod:`boostlib.engine.row_entries`: a row's bins but its columns' most frequent
        # ones), by training row: ``hist_rows`` then has no columns, and sampled trees use
        # no compact copy of it.
        self.row_entries: Optional[RowEntries] = None
        if self.bundling is None:
            self.hist_rows, self.hist_offsets = self.X_rows, self.offsets
        else:
            self.hist_offsets = self.bundling.offsets
            if isinstance(X_binned, SparseBinned):  # (no dense rows when entries will do)
                self.row_entries = self.bundling.sparse_entries(X_binned)
            if self.row_entries is None:
                self.hist_rows = self.bundling.rows(X_binned)
                self.row_entries = plan_entries(self.hist_rows, self.hist_offsets)
            if self.row_entries is not None:
                self.hist_rows = np.empty((X_binned.shape[1], 0), dtype=np.uint8)
        self._entry_args = {} if self.row_entries is None else self.row_entries.kernel_args()
        self.n_hist_columns = int(self.hist_offsets.size - 1)
        self._column_pool = np.empty(0)
        self._no_rows = np.empty(0, dtype=np.int32)
        #: the root's row counts per histogram bin when every row is fitted (they are the
        #: same for every such tree): built on first use (root_counts)
        self._root_counts: Optional[np.ndarray] = None
        self._pool = [np.empty(0), np.empty(0)]
        self._compact = np.empty((0, self.hist_rows.shape[1]), dtype=np.uint8)
        self._work_arrays: Dict[str, np.ndarray] = {}
        self.row_arrays = ArrayPool()
        self._listed = np.empty(0, dtype=np.int32)
        self._block_counts = np.empty(0, dtype=np.int32)
        self._segment_nodes = np.empty(0, dtype=np.int32)

    # -- the binned data ---------------------------------------------------------------------
    @property
    def width(self) -> int:
        """Channels of a histogram bin: ``2 * n_outputs`` sums, and the row count when
        ``n_channels`` is 3 (last)."""
        return 2 * self.n_outputs + self.n_channels - 2

    @property
    def count_channel(self) -> int:
        """The channel of the row count (``width - 1`` when there is one)."""
        return 2 * self.n_outputs

    @property
    def walkable(self) -> bool:
        """Whether depthwise trees can be walked row by row (a row-major matrix exists)."""
        return self._walkable

    @property
    def X_rows(self) -> Optional[np.ndarray]:
        """The row-major twin of the binned matrix, each feature's missing values at its own
        bin ``n_bins_nonmissing[f]`` (a histogram bin is then ``offsets[f] + value``, with no
        test for missing values); None for bundled sparse data. Built on first use: with
        bundling, only depthwise walks (sampled fits) need it."""
        if self._X_rows is None and self._walkable:
            X = self.X
            dense = X.columns(np.arange(X.shape[0])) if isinstance(X, SparseBinned) else X
            self._X_rows = np.empty(X.shape[::-1], dtype=np.uint8)
            np.minimum(dense.T, self.nbnm.astype(np.uint8), out=self._X_rows)
        return self._X_rows

    def columns(self, features: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``(matrix, features)`` for the kernels that read ``features`` feature-major: the
        training matrix itself, or for sparse data a dense copy of just those features
        (:func:`~boostlib.engine.sparse_binned.local_columns`) and their indices in it."""
        return local_columns(self.X, features)

    def kernel_tables(self) -> Dict[str, np.ndarray]:
        """The bundle and row-entry tables as keyword arguments of the compiled tree loop
        (``_leafwise.grow_tree``); empty without bundling."""
        b = self.bundling
        if b is None:
            return {}
        return dict(column_offsets=b.offsets, source=b.source, default_at=b.default_at,
                    others=b.others, others_start=b.others_start, **self._entry_args)

    # -- buffers and work arrays -------------------------------------------------------------
    def buffer(self, which: int, n_slots: int) -> np.ndarray:
        """Histogram array of ``n_slots`` slots from one of two reused buffers.

        Levels alternate between the buffers (the parent level's histograms stay readable
        while the children's are written); reusing them avoids page faults on every level.
        """
        shape = (n_slots, int(self.offsets[-1]), self.width)
        size = shape[0] * shape[1] * shape[2]
        if self._pool[which].size < size:
            self._pool[which] = np.empty(size)
        return self._pool[which][:size].reshape(shape)

    def work(self, name: str, shape: Tuple[int, int], axis: int, dtype: Any) -> np.ndarray:
        """A ``shape`` array reused across trees, whose axis ``axis`` is the sample size
        (sample sizes vary: 5% headroom; fresh arrays would page-fault on every tree)."""
        k = shape[axis]
        arr = self._work_arrays.get(name)
        if arr is None or arr.shape[axis] < k:
            size = list(shape)
            size[axis] = min(self.n_rows, k + k // 20 + 1024)
            arr = self._work_arrays[name] = np.empty(tuple(size), dtype=dtype)
        return arr[:k] if axis == 0 else arr[:, :k]

    def row_list(self, n_fit: int) -> Tuple[np.ndarray, np.ndarray]:
        """``(listed, block_counts)`` work arrays for ``n_fit`` rows (reused across levels
        and trees: a level's list is read before the next level writes it)."""
        n_blocks = -(-n_fit // _partition.LIST_BLOCK_ROWS)
        if self._listed.size < n_fit:
            self._listed = np.empty(n_fit, dtype=np.int32)
        if self._block_counts.size < n_blocks:
            self._block_counts = np.empty(n_blocks, dtype=np.int32)
        return self._listed[:n_fit], self._block_counts[:n_blocks]

    # -- inputs ------------------------------------------------------------------------------
    def gather_sample(self, rows: np.ndarray, weights: np.ndarray, gradient: np.ndarray,
                      hessian: np.ndarray) -> GatheredSample:
        """The histogram inputs of a tree fitted on a sample, in one pass over it: its
        compact binned rows, weighted derivatives (float64) and their float32 copies. The
        pass checks the rows and weights too.

        Raises
        ------
        SampleDefects
            If the rows are not sorted, unique and in range, or a weight is not finite and
            >= 0.
        """
        k = rows.size
        hX = self.work("compact", (k, self.hist_rows.shape[1]), 0, np.uint8)
        g, h = self.work("f64", (2, k), 1, np.float64)
        g32, h32 = self.work("f32", (2, k), 1, np.float32)
        flags = _partition.gather_sample(self.hist_rows, rows, weights, gradient, hessian, hX, g,
                                         h, g32, h32, self.n_threads)
        if flags:
            raise SampleDefects(flags)
        return GatheredSample(hX, g, h, g32, h32)

    def inputs(self, rows: np.ndarray, g: np.ndarray, h: np.ndarray,
               prepared: Optional[GatheredSample] = None) -> HistogramInputs:
        """The histogram inputs of a tree fitted on ``rows`` with derivatives ``g`` and
        ``h``. A subset of the rows is first copied to a compact matrix, so every histogram
        pass reads only the fitted rows' bytes (``prepared``: :meth:`gather_sample` did
        it)."""
        if self.n_outputs > 1:
            return self._vector_inputs(rows, g, h)
        if prepared is not None:
            hX, g32, h32 = prepared.X, prepared.g32, prepared.h32
        else:
            g32, h32 = self.work("f32", (2, rows.size), 1, np.float32)
            if rows.size == self.n_rows:
                hX = self.hist_rows
                _partition.gather_rows(self.hist_rows, self._no_rows, self._compact,
                                       self.n_threads, g, h, g32, h32)
            else:
                hX = self.work("compact", (rows.size, self.hist_rows.shape[1]), 0, np.uint8)
                _partition.gather_rows(self.hist_rows, rows, hX, self.n_threads, g, h, g32,
                                       h32)
        if self.row_entries is not None:    # entries are read by training row
            return HistogramInputs(self.hist_rows,
                                   self._no_rows if rows.size == self.n_rows else rows,
                                   g32, h32)
        return HistogramInputs(hX, self._no_rows, g32, h32)

    def _vector_inputs(self, rows: np.ndarray, g: np.ndarray, h: np.ndarray
                       ) -> HistogramInputs:
        """:meth:`inputs` of a vector-leaf tree: ``g`` and ``h`` (n_fit, K) interleaved
        into one float32 array, and the fitted rows' bins (a compact copy for a subset)."""
        k = self.n_outputs
        gh = self.work("gh32", (rows.size, 2 * k), 0, np.float32)
        gh[:, 0::2] = g
        gh[:, 1::2] = h
        if rows.size == self.n_rows:
            hX = self.hist_rows
        else:
            hX = self.work("compact", (rows.size, self.hist_rows.shape[1]), 0, np.uint8)
            np.take(self.hist_rows, rows, axis=0, out=hX)
        return HistogramInputs(hX, self._no_rows, gh, np.empty(0, dtype=np.float32))

    # -- building ----------------------------------------------------------------------------
    def build(self, X: np.ndarray, rows: np.ndarray, node: np.ndarray,
              slot_of_node: np.ndarray, g: np.ndarray, h: np.ndarray, hist: np.ndarray,
              listing: Tuple[Optional[np.ndarray], Optional[np.ndarray]] = (None, None)
              ) -> None:
        """Build the histograms of the slotted nodes into ``hist`` (and sum them with the
        other workers').

        ``X``, ``rows``, ``g`` and ``h`` are histogram inputs (:meth:`inputs`); ``node`` the
        node of every input row, ``slot_of_node`` each node's slot in ``hist`` (-1: not
        built); ``listing`` the rows of the slotted nodes as the level's partition listed
        them (:meth:`row_list`), or none.
        """
        if node.shape[0] == 0:      # no rows here (a distributed fit's other workers may)
            hist[...] = 0.0
            self.collective.allreduce(hist)
            return
        if self.n_outputs > 1:
            _vector.build_histograms(X, rows, node, slot_of_node, g, self.offsets, hist,
                                     self.n_threads, *listing)
            self.collective.allreduce(hist)
            return
        if self.bundling is None:
            _histogram.build_histograms(X, rows, node, slot_of_node, g, h, self.offsets, hist,
                                        self.n_threads, *listing)
            self.collective.allreduce(hist)
            return
        shape = (hist.shape[0], int(self.hist_offsets[-1]), hist.shape[2])
        size = shape[0] * shape[1] * shape[2]
        if self._column_pool.size < size:
            self._column_pool = np.empty(size)
        columns = self._column_pool[:size].reshape(shape)
        _histogram.build_histograms(X, rows, node, slot_of_node, g, h, self.hist_offsets,
                                    columns, self.n_threads, *listing, **self._entry_args)
        self.bundling.expand(columns, hist)
        self.collective.allreduce(hist)     # per feature: workers may bundle differently

    def root(self, rows: np.ndarray, g: np.ndarray, h: np.ndarray,
             prepared: Optional[GatheredSample] = None
             ) -> Tuple[np.ndarray, HistogramInputs, np.ndarray]:
        """Start a tree: every row in node 0, and the root histogram.

        Returns
        -------
        node : ndarray of int32, the node of every fitted row (all 0).
        inputs : HistogramInputs, the tree's histogram inputs (:meth:`inputs`).
        hist : ndarray, the root histogram (slot 0 of buffer 0).

        Raises
        ------
        DerivativeOverflow
            If the root's sums are not finite.
        """
        node = self.row_arrays.zeros((rows.size,), np.int32)   # reused once a tree is done
        inputs = self.inputs(rows, g, h, prepared)
        hist = self.buffer(0, 1)
        self._build_root(inputs, node, hist, rows.size == self.n_rows and prepared is None)
        # every row is in one bin of the first feature: its bins hold every row's float32
        # derivatives, whose float64 sum cannot overflow: it is finite exactly when every
        # bin is
        if not math.isfinite(hist[0, :int(self.offsets[1]), :2 * self.n_outputs].sum()):
            raise DerivativeOverflow()
        return node, inputs, hist

    def _build_root(self, inputs: HistogramInputs, node: np.ndarray, hist: np.ndarray,
                    all_rows: bool) -> None:
        """The root histogram (``hist``, one slot). When every row is fitted, its row counts
        are :meth:`root_counts`: only the gradient and hessian channels are built, and the
        counts copied in (a third less work; the same sums)."""
        slot = self._root_slot
        counts = self.root_counts(inputs, all_rows)
        if counts is None:
            self.build(inputs.X, inputs.rows, node, slot, inputs.g, inputs.h, hist)
            return
        c = self.count_channel
        sums = self._root_sums          # (copied into hist below: reused by every tree)
        if sums is None or sums.shape[1:] != (hist.shape[1], c):
            sums = self._root_sums = np.empty((1, hist.shape[1], c))
        self.build(inputs.X, inputs.rows, node, slot, inputs.g, inputs.h, sums)
        hist[0, :, :c] = sums[0]
        hist[0, :, c] = counts

    def root_counts(self, inputs: HistogramInputs, all_rows: bool) -> Optional[np.ndarray]:
        """The row count of every histogram bin over all training rows, for a root of every
        row (``all_rows``) with a count channel, on one machine (where every tree is built
        the same way); None otherwise. Built once, from the histogram inputs ``inputs``
        (:meth:`inputs`) with zero derivatives."""
        if not (all_rows and self.n_channels == 3 and not self.collective.distributed):
            return None
        if self._root_counts is None:
            n_fit = inputs.g.shape[0]
            hist = np.empty((1, int(self.offsets[-1]), self.width))
            self.build(inputs.X, inputs.rows, np.zeros(n_fit, dtype=np.int32),
                       self._root_slot, np.zeros_like(inputs.g), np.zeros_like(inputs.h),
                       hist)
            self._root_counts = hist[0, :, self.count_channel].copy()
        return self._root_counts

    def build_children(self, inputs: HistogramInputs, node: np.ndarray,
                       slot_of_node: np.ndarray, hist: np.ndarray, parent_slots: Any,
                       listing: Tuple[np.ndarray, np.ndarray], level: int,
                       carried: Any = ()) -> np.ndarray:
        """The histograms of the next level's nodes, for the ``m = len(parent_slots)``
        nodes split at level ``level``: the smaller child of each (``slot_of_node`` gives it
        slot ``j < m``) built from its rows, its sibling (slot ``m + j``) the parent's
        histogram (``hist[parent_slots[j]]``) minus it. ``carried``: the slots of nodes
        that go down a level unsplit (a symmetric tree's leaves where the level's split is
        not valid), whose histograms are copied to slots ``2m ..``. Levels alternate
        between the two buffers, so ``hist`` stays readable while the new histograms are
        written."""
        m = len(parent_slots)
        new_hist = self.buffer((level + 1) % 2, 2 * m + len(carried))
        self.build(inputs.X, inputs.rows, node, slot_of_node, inputs.g, inputs.h,
                   new_hist[:m], listing)
        _histogram.subtract_siblings(hist, np.asarray(parent_slots, dtype=np.int32),
                                     np.asarray(carried, dtype=np.int32), new_hist,
                                     self.n_threads)
        return new_hist

    def build_segment(self, inputs: HistogramInputs, positions: np.ndarray,
                      hist: np.ndarray) -> None:
        """Build the histogram (``hist``, one slot) of the node whose rows are the input
        rows at ``positions`` (a leaf-wise tree's segment)."""
        m = positions.size
        if self.n_outputs > 1:
            seg_g = self.work("segment_gh", (m, inputs.g.shape[1]), 0, np.float32)
            np.take(inputs.g, positions, axis=0, out=seg_g)
            seg_h = inputs.h
        else:
            seg_g, seg_h = self.work("segment", (2, m), 1, np.float32)
            np.take(inputs.g, positions, out=seg_g)
            np.take(inputs.h, positions, out=seg_h)
        if self._segment_nodes.size < m:
            self._segment_nodes = np.zeros(max(m, inputs.g.shape[0]), dtype=np.int32)
        # (rows of X: positions, or training rows when X is read by training row)
        self.build(inputs.X, positions if inputs.rows.size == 0 else inputs.rows[positions],
                   self._segment_nodes[:m], self._root_slot, seg_g, seg_h, hist)
