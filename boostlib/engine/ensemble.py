"""The additive model ``raw(x) = bias + sum_k c_k * tree_k(x)`` and its prediction.

With ``n_outputs = K > 1`` (e.g. K classes) the raw score is a vector: ``bias`` has K entries
and every term ``tree_k`` is a :class:`~boostlib.engine.trees.TreeGroup` of K scalar trees,
one per output, sharing the coefficient ``c_k``. Update rules thus see one model shape
whatever K is; prediction runs the scalar kernels once per output.

Trees with linear leaves (:mod:`boostlib.engine.linear_leaves`) also read the raw values:
every method that adds tree outputs on binned rows takes them as ``columns`` (a
:class:`~boostlib.engine.linear_leaves.RawColumns` of the same rows), and refuses such trees
without them.
"""
from __future__ import annotations

import math
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from .binning import BinMapper
from .sparse_binned import MAX_COLUMNS, SparseBinned, local_columns
from .importance import feature_importance
from . import linear_leaves
from .linear_leaves import RawColumns, constant_part, has_linear
from .trees import DepthwiseTree, ObliviousTree, TreeGroup, kind_of
from .trees.base import CAT_SPLIT

Tree = Union[ObliviousTree, DepthwiseTree]
Member = Union[ObliviousTree, DepthwiseTree, TreeGroup]

#: The factor that recovers a past state of the model from the current one (the product of
#: the :meth:`Ensemble.scale` factors applied since) must stay within
#: ``[1 / MAX_STATE_FACTOR, MAX_STATE_FACTOR]`` for the states virtual ensembles read (those
#: of at least half the trees): beyond it, dividing by it loses the state to underflow or
#: overflow, so training then drops the history (as after AGBM's rewrites) and model files
#: that claim such a history are refused.
MAX_STATE_FACTOR = 1e200
LOG_MAX_STATE_FACTOR = math.log(MAX_STATE_FACTOR)
#: Largest ``|bias| + sum_k |c_k| max|leaf_k|`` a model may reach (training refuses to
#: return a larger one, model files to load one), so that raw scores stay finite.
MAX_RAW_BOUND = 1e300


def raw_bounds(bias: np.ndarray, coef: np.ndarray, terms: List[Any]) -> np.ndarray:
    """``out[k]``: the largest ``|raw score|`` any output of the model truncated to its first
    ``k`` terms can reach (``k`` from 0 to ``len(terms)``)."""
    groups = [t.trees if isinstance(t, TreeGroup) else [t] for t in terms]
    leaves = [s.value[kind_of(s.policy).leaf_mask(s)] for g in groups for s in g]
    peaks = np.zeros(len(terms))
    if leaves:      # the largest |leaf value| of each term's trees, in two reductions
        at = np.cumsum([0] + [v.size for v in leaves[:-1]])
        tree_peak = np.maximum.reduceat(np.abs(np.concatenate(leaves)), at)
        peaks = np.maximum.reduceat(tree_peak, np.cumsum([0] + [len(g) for g in groups[:-1]]))
    top = float(np.max(np.abs(bias)))
    with np.errstate(over="ignore", invalid="ignore"):
        return top + np.concatenate([[0.0], np.cumsum(np.abs(coef) * peaks)])


def unrecoverable_state(history: List[Tuple[int, float]], bounds: np.ndarray) -> Optional[int]:
    """The first entry of a scale history whose past state virtual ensembles could read but
    floating point cannot recover, or None.

    The state with ``end`` terms is the current model's first ``end`` terms divided by the
    product of the factors recorded at ``n_trees >= end`` (a suffix product). Virtual
    ensembles read states of at least half the trees (``len(bounds) - 1`` of them now); for
    those, the product must lie within :data:`MAX_STATE_FACTOR` of 1 and the state's raw
    scores, at most ``bounds[end] / product``, within :data:`MAX_RAW_BOUND` (``bounds`` as
    :func:`raw_bounds` gives them).
    """
    if not history:
        return None
    ends = np.array([m for m, _ in history])
    logs = np.log(np.array([f for _, f in history], dtype=np.float64))
    suffix = np.cumsum(logs[::-1])[::-1]            # log of the factor of states <= ends[j]
    with np.errstate(divide="ignore"):
        raw = np.log(bounds[ends]) - suffix
    read = ends >= (len(bounds) - 1) // 2
    bad = np.flatnonzero(read & ((np.abs(suffix) > LOG_MAX_STATE_FACTOR)
                                 | (raw > math.log(MAX_RAW_BOUND))))
    return int(bad[0]) if bad.size else None


class Ensemble:
    """Trees with per-tree coefficients, a bias, and the bin borders they split on.

    Parameters
    ----------
    bin_mapper : BinMapper
        Borders used to bin raw features at prediction time.
    policy : {"symmetric", "depthwise"}
    bias : float, or array of shape (n_outputs,)
    n_outputs : int, default 1
        Length of the raw score. With more than one output every tree added is a
        :class:`~boostlib.engine.trees.TreeGroup` of ``n_outputs`` trees.
    """

    def __init__(self, bin_mapper: BinMapper, policy: str, bias=0.0, n_outputs: int = 1):
        self.bin_mapper = bin_mapper
        self.kind = kind_of(policy)
        self.policy = policy
        self.n_outputs = int(n_outputs)
        self._bias = np.zeros(self.n_outputs)
        self.bias = bias
        self.trees: List[Member] = []
        self._coef = np.empty(16)
        #: ``(n_trees, factor)`` of every :meth:`scale` call, in order, or None once the
        #: coefficients were rewritten otherwise, or a factor was not positive (then past
        #: states cannot be recovered; see also :meth:`forget_unrecoverable_states`).
        self.scale_history: Optional[List[Tuple[int, float]]] = []
        self._forget_tables()

    def _forget_tables(self) -> None:
        """Drop the cached prediction tables (the trees or coefficients changed)."""
        self._compact_cache = None
        self._prepared_cache = None
        self._has_linear: Optional[bool] = None

    @property
    def bias(self):
        """The constant term: a float with one output, else a copy of the (n_outputs,) array."""
        return float(self._bias[0]) if self.n_outputs == 1 else self._bias.copy()

    @bias.setter
    def bias(self, value) -> None:
        value = np.asarray(value, dtype=np.float64)
        if value.size != self.n_outputs:
            raise ValueError(f"bias must have {self.n_outputs} entries, got {value.size}")
        self._bias = value.reshape(self.n_outputs).copy()

    @property
    def bias_array(self) -> np.ndarray:
        """The bias as an array of shape (n_outputs,) (the storage itself)."""
        return self._bias

    @property
    def n_trees(self) -> int:
        """Number of terms ``c_k tree_k`` (boosting rounds' trees; a TreeGroup counts once)."""
        return len(self.trees)

    def output_trees(self, k: int, trees: Optional[Sequence[Member]] = None) -> List[Tree]:
        """The scalar trees of output ``k`` of ``trees`` (default: all terms), in order."""
        trees = self.trees if trees is None else trees
        return list(trees) if self.n_outputs == 1 else [t.trees[k] for t in trees]

    def scalar_trees(self) -> List[Tree]:
        """Every scalar tree of the model (all outputs)."""
        return [s for k in range(self.n_outputs) for s in self.output_trees(k)]

    @property
    def coef(self) -> np.ndarray:
        """The tree coefficients, shape ``(n_trees,)`` (a view of the model's storage)."""
        return self._coef[:len(self.trees)]

    @coef.setter
    def coef(self, values) -> None:
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (self.n_trees,):
            raise ValueError(f"coef must have shape ({self.n_trees},), got {values.shape}")
        self._coef[:self.n_trees] = values
        self.scale_history = None
        self._forget_tables()

    def add(self, tree: Member, coef: float) -> int:
        """Append a tree (a TreeGroup of ``n_outputs`` trees with several outputs); return
        its index."""
        if tree.policy != self.policy:
            raise ValueError(f"cannot add a {tree.policy} tree to a {self.policy} ensemble")
        size = len(tree.trees) if isinstance(tree, TreeGroup) else 1
        if size != self.n_outputs or (self.n_outputs > 1) != isinstance(tree, TreeGroup):
            raise ValueError(f"a model of {self.n_outputs} output(s) takes "
                             + ("scalar trees" if self.n_outputs == 1 else
                                f"TreeGroups of {self.n_outputs} trees"))
        n = self.n_trees
        if n == self._coef.size:
            self._coef = np.concatenate([self._coef, np.empty(max(16, n))])
        self._coef[n] = float(coef)
        self.trees.append(tree)
        self._forget_tables()
        return n

    def scale(self, factor: float) -> None:
        """Multiply the bias and every coefficient by ``factor`` (recorded in
        :attr:`scale_history`)."""
        factor = float(factor)
        self._bias *= factor
        self._coef[:self.n_trees] *= factor
        if self.scale_history is not None:
            self.scale_history.append((self.n_trees, factor))
            if not factor > 0:
                self.scale_history = None       # the earlier states are lost
        self._forget_tables()

    def raw_bounds(self) -> np.ndarray:
        """:func:`raw_bounds` of this model."""
        return raw_bounds(np.atleast_1d(self.bias), self.coef, self.trees)

    def forget_unrecoverable_states(self, bounds: Optional[np.ndarray] = None) -> None:
        """Drop the scale history when a state virtual ensembles could read cannot be
        recovered in floating point (:func:`unrecoverable_state`); ``bounds``: this model's
        :meth:`raw_bounds`, when already computed."""
        if self.scale_history:
            bounds = self.raw_bounds() if bounds is None else bounds
            if unrecoverable_state(self.scale_history, bounds) is not None:
                self.scale_history = None

    def truncate(self, n_trees: int, bias: float, coef: np.ndarray) -> None:
        """Keep the first ``n_trees`` trees with the given bias and coefficients (a state the
        model had when it held ``n_trees`` trees, e.g. the best iteration)."""
        del self.trees[n_trees:]
        self._coef[:n_trees] = np.asarray(coef, dtype=np.float64)[:n_trees]
        self.bias = bias
        if self.scale_history is not None:
            self.scale_history = [(m, f) for m, f in self.scale_history if m < n_trees]
        self._forget_tables()

    @property
    def has_linear(self) -> bool:
        """Whether some tree has linear leaves (kept until the trees change)."""
        if self._has_linear is None:
            self._has_linear = any(has_linear(t) for t in self.scalar_trees())
        return self._has_linear

    def add_trees_binned(self, X_binned: np.ndarray, out: np.ndarray, trees: List[Member],
                         coef: np.ndarray, n_threads: int = 1,
                         columns: Optional[RawColumns] = None) -> None:
        """``out += sum coef[t] * trees[t](X)`` on a binned matrix (n_features, n_rows).

        ``out`` has shape (n_rows,) with one output, else (n_outputs, n_rows); ``columns``:
        the rows' raw values (needed by trees with linear leaves).
        """
        if self.n_outputs == 1:
            self.add_scalar_trees_binned(X_binned, out.reshape(-1), trees, coef, n_threads,
                                         columns)
            return
        for k in range(self.n_outputs):
            self.add_scalar_trees_binned(X_binned, out[k], self.output_trees(k, trees), coef,
                                         n_threads, columns)

    def add_scalar_trees_binned(self, X_binned: np.ndarray, out: np.ndarray,
                                trees: List[Tree], coef: np.ndarray,
                                n_threads: int = 1,
                                columns: Optional[RawColumns] = None) -> None:
        """``out += sum coef[t] * trees[t](X)`` for scalar trees; ``out`` of shape (n_rows,).

        A :class:`~boostlib.engine.sparse_binned.SparseBinned` ``X_binned`` is read by
        consecutive runs of trees splitting on at most ``MAX_COLUMNS`` features, each over a
        dense copy of those features (each row still sums the trees in order). A tree with
        linear leaves adds its leaf values and then its linear parts, read from
        ``columns``, as training adds them (so each row sums what training summed, in the
        same order).
        """
        coef = np.ascontiguousarray(coef, dtype=np.float64)
        linear = [t for t, tree in enumerate(trees) if has_linear(tree) and coef[t] != 0.0]
        if linear and (columns is None or columns.n_rows != X_binned.shape[1]):
            raise ValueError("trees with linear leaves need the rows' raw values")
        rows = np.arange(X_binned.shape[1], dtype=np.int32)
        start = 0
        for t in linear:
            if t > start:
                self._add_constants(X_binned, out, trees[start:t], coef[start:t], n_threads)
            slot = self.leaves_binned(X_binned, [trees[t]], n_threads, scalar=True)[:, 0, 0]
            linear_leaves.add_tree(trees[t], columns, rows, slot, coef[t], out, n_threads,
                                   constants=True)
            start = t + 1
        if start < len(trees):
            self._add_constants(X_binned, out, trees[start:], coef[start:], n_threads)

    def _add_constants(self, X_binned: np.ndarray, out: np.ndarray, trees: List[Tree],
                       coef: np.ndarray, n_threads: int) -> None:
        """:meth:`add_scalar_trees_binned` without the linear parts."""
        if not isinstance(X_binned, SparseBinned):
            self.kind.predict(X_binned, out, self.kind.pack(trees), coef,
                              self.bin_mapper.missing_bin, n_threads)
            return
        start, used = 0, set()
        for t in range(len(trees) + 1):
            feats = (set() if t == len(trees) else
                     set(trees[t].feature[self.kind.split_mask(trees[t])].tolist()))
            if t == len(trees) or (len(used | feats) > MAX_COLUMNS and t > start):
                packed = self.kind.pack(trees[start:t])
                key = self.kind.packed_feature
                local, packed[key] = local_columns(X_binned, packed[key])
                self.kind.predict(local, out, packed, coef[start:t],
                                  self.bin_mapper.missing_bin, n_threads)
                start, used = t, set()
            used |= feats

    def start_scores(self, n_rows: int) -> np.ndarray:
        """The bias on ``n_rows`` rows, in the layout :meth:`add_trees_binned` updates:
        (n_rows,) with one output, else (n_outputs, n_rows)."""
        if self.n_outputs == 1:
            return np.full(n_rows, self._bias[0])
        return np.repeat(self._bias[:, None], n_rows, axis=1)

    @staticmethod
    def rows_first(scores: np.ndarray) -> np.ndarray:
        """Scores from :meth:`start_scores`' layout to (n_rows,) or (n_rows, n_outputs)."""
        return scores if scores.ndim == 1 else np.ascontiguousarray(scores.T)

    def _scores(self, X_binned: np.ndarray, trees: List[Member], coef: np.ndarray,
                n_threads: int, columns: Optional[RawColumns] = None) -> np.ndarray:
        out = self.start_scores(X_binned.shape[1])
        if trees:
            self.add_trees_binned(X_binned, out, trees, coef, n_threads, columns)
        return self.rows_first(out)

    def predict_binned(self, X_binned: np.ndarray, n_threads: int = 1,
                       columns: Optional[RawColumns] = None) -> np.ndarray:
        """Raw scores of rows binned with ``bin_mapper`` (n_features, n_rows): shape
        (n_rows,) with one output, else (n_rows, n_outputs); ``columns``: their raw values
        (linear leaves)."""
        return self._scores(X_binned, self.trees, self.coef.copy(), n_threads, columns)

    def raw_columns(self, X: Any) -> Optional[RawColumns]:
        """The raw values of rows ``X`` as linear leaves read them (None when no tree has
        linear leaves)."""
        return RawColumns(X) if self.has_linear else None

    def _compact(self):
        """Prediction tables that bin only on the borders some split uses (CatBoost's trick).

        Binning is a binary search per value; searching the used borders only (often far
        fewer than ``max_bins``) makes it cheaper. Split bins are renumbered accordingly;
        the order of borders is kept, so every comparison gives the same side. Categorical
        features keep their categories, and categorical splits their sets.
        """
        mapper = self.bin_mapper
        width = mapper.max_bins + 1
        scalar = self.scalar_trees()
        inner = [self.kind.split_mask(t) & (t.nan_right != CAT_SPLIT) for t in scalar]
        feats = np.concatenate([t.feature[m] for t, m in zip(scalar, inner)] or [[]])
        bins = np.concatenate([t.bin[m] for t, m in zip(scalar, inner)] or [[]])
        feats, bins = feats.astype(np.int64), bins.astype(np.int64)
        flat, starts, n_borders = mapper.border_table()
        real = bins < n_borders[feats] if feats.size else np.zeros(0, bool)  # "all left"
        used = np.unique(feats[real] * width + bins[real])
        used_feature = used // width
        compact = BinMapper(mapper.max_bins).set_border_table(
            flat[starts[used_feature] + used % width],
            np.bincount(used_feature, minlength=mapper.n_features)).set_categories(
                mapper.cat_codes_, mapper.cat_other_, mapper.levels_)
        first = np.searchsorted(used, np.arange(mapper.n_features) * width)
        # rank of each split's border among its feature's used borders
        new_bins = np.searchsorted(used, feats * width + bins) - first[feats]
        trees, pos = [], 0
        for t, m in zip(scalar, inner):
            new_bin = t.bin.copy()
            k = int(m.sum())
            new_bin[m] = new_bins[pos:pos + k]
            pos += k
            trees.append(type(t)(**{**{k: getattr(t, k) for k in t.__dataclass_fields__
                                       if k != "policy"}, "bin": new_bin}))
        if self.n_outputs > 1:          # scalar trees are listed output by output
            n = self.n_trees
            trees = [TreeGroup([trees[k * n + i] for k in range(self.n_outputs)])
                     for i in range(n)]
        return compact, trees, self.coef.copy()

    def predict_raw(self, X: np.ndarray, n_threads: int = 1) -> np.ndarray:
        """Raw scores of raw float32/float64 rows ``X`` (n_rows, n_features); NaN = missing.

        Shape (n_rows,) with one output, else (n_rows, n_outputs). The kernels' tables of
        the whole model are built on the first call and kept (a call then costs nothing
        proportional to the model but the walk itself: single rows are cheap)."""
        mapper, trees, coef = self._prediction_tables()
        X_binned = mapper.transform(X, n_threads, "engine")
        columns = self.raw_columns(X)
        if isinstance(X_binned, SparseBinned) or columns is not None:
            return self._scores(X_binned, trees, coef, n_threads, columns)
        if self._prepared_cache is None:
            self._prepared_cache = [
                self.kind.prepare(self.kind.pack(self.output_trees(k, trees)),
                                  mapper.n_features, mapper.missing_bin)
                for k in range(self.n_outputs)]
        out = self.start_scores(X_binned.shape[1])
        if trees:
            for k, prepared in enumerate(self._prepared_cache):
                self.kind.predict_prepared(X_binned, out if self.n_outputs == 1 else out[k],
                                           prepared, coef, n_threads)
        return self.rows_first(out)

    def state_factors(self, ends: Sequence[int]) -> np.ndarray:
        """For each ``end``, the factor the model's first ``end`` trees and bias were scaled by
        after the model held ``end`` trees (1 when never scaled).

        Dividing the current bias and first ``end`` coefficients by it gives back the model as
        it was when it held ``end`` trees (SGLB's shrinkage undone, CatBoost's "un-shrink").

        Raises
        ------
        ValueError
            When the coefficients were rewritten other than by :meth:`scale` (e.g. by AGBM,
            DART or a random forest), so past states are not recorded.
        """
        if self.scale_history is None:
            raise ValueError("this model's coefficients were rewritten during training (e.g. "
                             "by AGBM), so its earlier states cannot be recovered")
        out = np.ones(len(ends))
        for m, f in self.scale_history:
            for k, end in enumerate(ends):
                if m >= end:
                    out[k] *= f
        return out

    def predict_states_raw(self, X: np.ndarray, ends: Sequence[int],
                           n_threads: int = 1) -> np.ndarray:
        """Raw scores of the model as it was when it held ``ends[k]`` trees.

        Parameters
        ----------
        X : float64 (n_rows, n_features); NaN = missing.
        ends : increasing tree counts in ``[0, n_trees]``.

        Returns
        -------
        ndarray of shape (n_rows, len(ends)), or (n_rows, n_outputs, len(ends))
            One pass over the trees: each segment between consecutive ends is added once.
        """
        ends = [int(e) for e in ends]
        increasing = all(a < b for a, b in zip(ends, ends[1:]))
        if not (ends and increasing and 0 <= ends[0] and ends[-1] <= self.n_trees):
            raise ValueError(f"ends must increase within [0, {self.n_trees}], got {ends}")
        factors = self.state_factors(ends)
        if self._compact_cache is None:
            self._compact_cache = self._compact()
        mapper, trees, coef = self._compact_cache
        X_binned = mapper.transform(X, n_threads, "engine")
        columns = self.raw_columns(X)
        running = self.start_scores(X_binned.shape[1])
        out = np.empty((X_binned.shape[1],) + running.shape[:-1] + (len(ends),))
        start = 0
        for k, end in enumerate(ends):
            if end > start:
                self.add_trees_binned(X_binned, running, trees[start:end], coef[start:end],
                                      n_threads, columns)
                start = end
            out[..., k] = self.rows_first(running) / factors[k]
        return out

    # -- truncations and leaf indices ---------------------------------------------------------
    def _prediction_tables(self) -> Tuple[BinMapper, List[Member], np.ndarray]:
        """The compact mapper, trees and coefficients :meth:`predict_raw` uses (cached)."""
        if self._compact_cache is None:
            self._compact_cache = self._compact()
        return self._compact_cache

    def truncation_factors(self, ends: Sequence[int]) -> np.ndarray:
        """For each ``end``, the factor :meth:`truncations_raw` divides the truncation to the
        first ``end`` terms by: the :meth:`state_factors` one (the SGLB shrinkage applied
        after the model held ``end`` terms), 1 when the model records no scale history
        (coefficients rewritten, e.g. by AGBM, DART or a random forest: then a truncation
        keeps the final coefficients), and 1 for ``end == n_trees`` (the final model
        itself).

        Raises
        ------
        ValueError
            When a factor lies beyond :data:`MAX_STATE_FACTOR` (that state is lost to
            floating point).
        """
        ends = [int(e) for e in ends]
        if self.scale_history is None or not self.scale_history:
            return np.ones(len(ends))
        factors = self.state_factors(ends)
        factors[[e == self.n_trees for e in ends]] = 1.0
        bad = ~((factors >= 1.0 / MAX_STATE_FACTOR) & (factors <= MAX_STATE_FACTOR))
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f"the model's state with {ends[k]} trees cannot be recovered: "
                             f"it was scaled by {factors[k]:.3g} since (beyond "
                             f"{MAX_STATE_FACTOR:g} either way)")
        return factors

    def truncations_raw(self, X: np.ndarray, ends: Sequence[int], n_threads: int = 1,
                        start: int = 0) -> Iterator[np.ndarray]:
        """Raw scores of truncations of the model, one array per entry of ``ends``, lazily.

        The array for ``end`` is ``(bias + sum_{start <= t < end} c_t tree_t(x)) / s`` with
        ``s`` the :meth:`truncation_factors` of ``end``: with ``start = 0``, the model as it
        was when it held ``end`` terms (SGLB's later shrinkage undone), or, when the
        coefficients were rewritten (AGBM, DART, a random forest), its first ``end`` terms
        with their final coefficients. ``X`` is binned here, before the first array is asked for; each
        segment of trees between consecutive ends is then added once (the rows' sums run
        over the trees in order, so the truncation to all ``n_trees`` terms equals
        :meth:`predict_raw` bit for bit).

        Parameters
        ----------
        X : ndarray of shape (n_rows, n_features)
            Raw float32/float64 rows; NaN = missing.
        ends : sequence of int
            Increasing term counts in ``(start, n_trees]``.
        n_threads : int, default 1
        start : int, default 0
            The first term summed.

        Returns
        -------
        iterator of ndarray
            New arrays of shape (n_rows,), or (n_rows, n_outputs) with several outputs.
        """
        ends = [int(e) for e in ends]
        start = int(start)
        if not (all(a < b for a, b in zip([start] + ends, ends))
                and 0 <= start and (not ends or ends[-1] <= self.n_trees)):
            raise ValueError(f"ends must increase within ({start}, {self.n_trees}], "
                             f"got {ends}")
        factors = self.truncation_factors(ends)
        mapper, trees, coef = self._prediction_tables()
        X_binned = mapper.transform(X, n_threads, "engine")
        return self._truncations(X_binned, trees, coef, ends, factors, start, n_threads,
                                 self.raw_columns(X))

    def _truncations(self, X_binned: Any, trees: List[Member], coef: np.ndarray,
                     ends: List[int], factors: np.ndarray, start: int,
                     n_threads: int, columns: Optional[RawColumns] = None
                     ) -> Iterator[np.ndarray]:
        running = self.start_scores(X_binned.shape[1])
        done = start
        for end, factor in zip(ends, factors):
            self.add_trees_binned(X_binned, running, trees[done:end], coef[done:end],
                                  n_threads, columns)
            done = end
            scores = self.rows_first(running)
            scores = scores.copy() if scores is running else scores
            if factor != 1.0:
                scores /= factor
            yield scores

    def apply(self, X: np.ndarray, n_threads: int = 1) -> np.ndarray:
        """The leaf every row reaches in every tree: its index in the tree's ``value``.

        Found by the prediction kernels themselves (each tree predicted with its leaf
        values replaced by their indices), so they are the leaves :meth:`predict_raw` adds:
        ``raw = bias + sum_t coef[t] * tree_t.value[leaf[:, t]]``.

        Parameters
        ----------
        X : ndarray of shape (n_rows, n_features)
            Raw float32/float64 rows; NaN = missing.
        n_threads : int, default 1

        Returns
        -------
        ndarray of int32
            Shape (n_rows, n_trees), or (n_rows, n_trees, n_outputs) with several outputs
            (entry ``[:, t, k]``: output ``k``'s tree of term ``t``). For a symmetric tree
            the index is ``sum_l right_l << l`` (0 to ``2**depth - 1``); for a depthwise
            (or lossguide) tree, the node id of the leaf (0 is the root; not every id is a
            leaf).
        """
        mapper, trees, _ = self._prediction_tables()
        out = self.leaves_binned(mapper.transform(X, n_threads, "engine"), trees, n_threads)
        return out[:, :, 0] if self.n_outputs == 1 else out

    def leaves_binned(self, X_binned: Any, trees: List[Member], n_threads: int = 1,
                      scalar: bool = False) -> np.ndarray:
        """The leaf of every row of ``X_binned`` in each of ``trees`` (terms whose bins
        match it), as :meth:`apply` but always of shape (n_rows, n_trees, n_outputs)
        (``scalar``: ``trees`` are scalar trees, whatever ``n_outputs``: shape
        (n_rows, n_trees, 1))."""
        n_rows = X_binned.shape[1]
        out = np.empty((n_rows, len(trees), 1 if scalar else self.n_outputs), dtype=np.int32)
        leaf = np.empty(n_rows)
        one = np.ones(1)
        for t, term in enumerate(trees):
            for k, tree in enumerate(term.trees if isinstance(term, TreeGroup) else [term]):
                index = constant_part(tree, np.arange(tree.value.size, dtype=np.float64))
                leaf[:] = 0.0
                self._add_constants(X_binned, leaf, [index], one, n_threads)
                out[:, t, k] = leaf
        return out

    def feature_importances(self, importance_type: str = "gain") -> np.ndarray:
        """Importance per feature over every output's trees (see
        :func:`boostlib.engine.importance.feature_importance`)."""
        return feature_importance(self.scalar_trees(), self.bin_mapper.n_features,
                                  importance_type)
