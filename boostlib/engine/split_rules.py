"""The rules that choose a node's split from its histogram: regularisation (``l2``), the
smallest children (``min_samples_leaf``, ``min_child_weight``, the rows a node needs to be
searched at all), categorical sets, missing values, monotone bounds, column rules and split
noise; and the named records of the splits they choose (:class:`~boostlib.engine.split_rules.Split`,
:class:`~boostlib.engine.split_rules.LevelSplit`).

The search itself runs in ``boostlib._kernels._splitting``; its result rows are read
through the column names below (:data:`BEST_FEATURE`, ...), nowhere by number.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._kernels import _splitting, _vector
from .constraints import ColumnRules, bounded_value, child_bounds
from .working_features import WorkingFeatures

if TYPE_CHECKING:
    from .grower import GrowParams

#: ``direction`` (a tree's ``nan_right``) of a categorical split: its ``bin`` names the set
#: of bins sent left (``boostlib.engine.trees.base`` re-exports it).
CAT_SPLIT = 2

#: Columns of a row of ``_splitting.find_split_nodes``' result (one row per node).
BEST_FEATURE = 0        #: the split's feature, -1 without a split
BEST_BIN = 1            #: its bin (a categorical split: the size of its left set)
BEST_DIRECTION = 2      #: where missing values go (1: right; categorical: the set's order)
BEST_GAIN = 3
BEST_LEFT_COUNT = 4     #: rows of the left child (its hessian sum without a count channel)
BEST_RIGHT_COUNT = 5
BEST_MISSING_SEEN = 6   #: 1 when the node's missing bin of the feature holds rows
BEST_COLUMNS = 7

#: Columns of ``find_split_nodes``' per-node, per-feature best candidates.
CANDIDATE_SCORE = 0
CANDIDATE_BIN = 1       #: -1 where the feature has no valid candidate
CANDIDATE_DIRECTION = 2
CANDIDATE_GAIN = 3
CANDIDATE_COLUMNS = 4


def set_bits(bins: np.ndarray, n_bins_nonmissing: int, missing_bin: int) -> np.ndarray:
    """The 256-bit set (uint32 (8,)) of a categorical split from its left categories as
    histogram bins (``n_bins_nonmissing`` is the missing bin): binned values ``b`` of the
    categories, and, with the missing one, every value from ``n_bins_nonmissing`` up to
    ``missing_bin`` (values that binning never gives: they go where missing values go)."""
    member = np.zeros(256, dtype=bool)
    bins = np.asarray(bins)
    member[bins[bins < n_bins_nonmissing]] = True
    if np.any(bins == n_bins_nonmissing):
        member[n_bins_nonmissing:missing_bin + 1] = True
    return np.packbits(member, bitorder="little").view(np.uint32).copy()


@dataclass(frozen=True)
class Split:
    """The best split of one node.

    Attributes
    ----------
    feature : int
    bin : int
        Rows whose bin is above ``bin`` go right; -1 for a categorical split (the tree
        numbers its sets when it takes the split).
    direction : int
        Where missing values go (1: right), or ``CAT_SPLIT`` for a categorical split. When
        the node's rows had no missing value of ``feature``, the side with more rows.
    gain : float
    left_count, right_count : float
        Rows of each child (hessian sums when the histograms have no count channel).
    left_set : ndarray of uint32, shape (8,), or None
        A categorical split's set: the bits of the bins sent left.
    """

    feature: int
    bin: int
    direction: int
    gain: float
    left_count: float
    right_count: float
    left_set: Optional[np.ndarray] = None


@dataclass(frozen=True)
class LevelSplit:
    """The split a symmetric tree's level shares among its leaves.

    Attributes
    ----------
    feature, bin, direction, gain, left_set
        As in :class:`Split` (``gain``: the sum of the leaves' gains).
    left, right : ndarray, shape (n_leaves, 3)
        The gradient, hessian and row sums of each searched leaf's children.
    valid : ndarray of bool, shape (n_leaves,)
        Whether each leaf's children respect the minimum sizes (a leaf where they do not
        is not split: both children keep its value).
    """

    feature: int
    bin: int
    direction: int
    gain: float
    left: np.ndarray
    right: np.ndarray
    valid: np.ndarray
    left_set: Optional[np.ndarray] = None


class SplitRules:
    """The rules of the split search of the trees grown on one binned matrix.

    Parameters
    ----------
    params : GrowParams
    offsets : ndarray of int32, shape (n_features + 1,)
        The histogram layout (``Histograms.offsets``).
    n_bins_nonmissing : ndarray of int32, shape (n_features,)
    missing_bin : int
    is_categorical : ndarray of bool, shape (n_features,)
    monotone : ndarray of int8, optional
        Monotone constraint of each feature.
    column_rules : ColumnRules, optional
        Column sampling and interaction constraints.
    features : WorkingFeatures
        The training matrix's features the histograms hold (split noise is drawn for every
        feature of the training matrix).
    n_threads : int
    distributed : bool
        Whether other workers hold rows of the same trees.
    n_outputs : int, default 1
        ``K > 1``: the trees have vector leaves, and the histograms every output's sums
        (:class:`~boostlib.engine.histograms.Histograms`); a split's gain is the sum of the
        outputs' gains, its children's sizes their rows and hessians summed over the outputs
        (``boostlib._kernels._vector``). Their splits are thresholds (no categorical sets)
        without monotone constraints.

    Attributes
    ----------
    l2 : float
        ``params.l2_regularization``.
    min_samples_leaf, min_child_weight : float
        The smallest children as the search applies them to the current tree (without a
        count channel, ``min_samples_leaf`` is 0 and, when every hessian is 1, folded into
        ``min_child_weight``).
    min_split_rows : int
        A node of fewer rows has no split (each side needs ``min_samples_leaf`` rows):
        leaf-wise growth neither builds nor searches its histograms. 0: no such rule (on
        several machines, where a node's rows are not all here).
    n_channels : {2, 3}
        The histogram channels the current tree's search needs (3: with row counts).
    is_cat : ndarray of uint8
        1 for categorical features; empty when there are none (the kernels skip the test).
    cat_params : ndarray of float64
        The four categorical parameters in the order the kernels read them.
    monotone, column_rules
        As given.
    """

    def __init__(self, params: "GrowParams", offsets: np.ndarray,
                 n_bins_nonmissing: np.ndarray, missing_bin: int, is_categorical: np.ndarray,
                 monotone: Optional[np.ndarray], column_rules: Optional[ColumnRules],
                 features: WorkingFeatures, n_threads: int, distributed: bool,
                 n_outputs: int = 1):
        self.params = params
        self.n_outputs = int(n_outputs)
        if self.n_outputs > 1 and (np.any(is_categorical) or monotone is not None):
            raise ValueError("vector-leaf trees split on thresholds only: no categorical "
                             "features or monotone constraints")
        self.offsets = offsets
        self.nbnm = n_bins_nonmissing
        self.missing_bin = int(missing_bin)
        self.n_bins = self.missing_bin + 1
        self.monotone = monotone
        self.column_rules = column_rules
        self.features = features
        self.n_threads = int(n_threads)
        self.l2 = params.l2_regularization
        cat = np.asarray(is_categorical, dtype=bool)
        # (empty: no categorical feature, the kernels skip the test)
        self.is_cat = cat.astype(np.uint8) if cat.any() else np.empty(0, dtype=np.uint8)
        self.cat_params = params.cat_params
        # Count-free histograms (2 channels) when no constraint needs row counts: with
        # min_samples_leaf == 1 and min_child_weight > 0, a child whose hessian sum reaches
        # min_child_weight cannot be empty. The hessian sum then stands in for the count
        # (choice of the smaller child, side of missing values unseen in training).
        # Categorical splits count rows per category (min_data_per_group).
        count_free = (params.min_samples_leaf <= 1 and params.min_child_weight > 0
                      and not cat.any())
        self.n_channels = 2 if count_free else 3
        self.min_samples_leaf = 0 if count_free else params.min_samples_leaf
        self.min_child_weight = params.min_child_weight
        # With min_samples_leaf > 1, a tree whose hessians are all 1 (an unweighted squared
        # error, say) needs no count channel either: a child's row count is its hessian sum,
        # exact in float64, so min_samples_leaf joins min_child_weight, as LightGBM does for
        # constant hessians. Decided per tree (begin_tree); on one machine only, where no
        # other worker's hessians could decide otherwise.
        self._unit_counts = (not count_free and not cat.any() and not distributed
                             and self.n_outputs == 1)  # (K hessians of 1 sum to K per row)
        self.min_split_rows = (2 * params.min_samples_leaf if params.min_samples_leaf > 1
                               and not distributed else 0)
        n_features = self.nbnm.size
        self._no_noise = np.empty((0, self.n_bins))
        self._no_noise3 = np.empty((0, n_features, self.n_bins))
        self._no_set = np.empty(0, dtype=np.int32)
        self._level_work: Optional[Tuple[np.ndarray, np.ndarray]] = None

    # -- per tree ----------------------------------------------------------------------------
    def begin_tree(self, h: np.ndarray) -> None:
        """Start a tree fitted with hessians ``h``: decide its minimum sizes and histogram
        channels (``n_channels``), and draw its column sample."""
        if self._unit_counts:
            p = self.params
            self.n_channels, self.min_samples_leaf, self.min_child_weight = (
                (2, 0, max(p.min_child_weight, float(p.min_samples_leaf)))
                if self._unit_hessians(h) else (3, p.min_samples_leaf, p.min_child_weight))
        if self.column_rules is not None:
            self.column_rules.begin_tree()

    @staticmethod
    def _unit_hessians(h: np.ndarray) -> bool:
        """Whether every fitted row's hessian is 1 (its count is then its hessian)."""
        return bool(h.size) and h[0] == 1.0 and bool(np.all(h == 1.0))

    def noise(self, rng: Optional[np.random.Generator], std: float,
              n_nodes: Optional[int] = None) -> np.ndarray:
        """Split-score noise of std ``std``: ``(n_features, n_bins)`` values (a level of a
        symmetric tree), or ``(n_nodes, n_features, n_bins)``; no rows when ``std`` is 0.
        The values are drawn for every feature of the training matrix, so the working
        features get the draws of a fit on every feature."""
        if not std > 0.0:
            return self._no_noise if n_nodes is None else self._no_noise3
        shape = (self.features.n_features, self.n_bins)
        draws = rng.normal(0.0, std, size=shape if n_nodes is None else (n_nodes,) + shape)
        if self.features.every_feature:
            return draws
        return np.take(draws, self.features.original, axis=draws.ndim - 2)

    def level_mask(self) -> Optional[np.ndarray]:
        """The features a symmetric tree's next level may split on (None: all)."""
        return None if self.column_rules is None else self.column_rules.level_mask()

    def node_rules(self) -> "NodeRules":
        """The constraints of a new depthwise or leaf-wise tree, node by node."""
        return NodeRules(self)

    # -- searches ----------------------------------------------------------------------------
    def node_splits(self, hist: np.ndarray, slots: np.ndarray, noise: np.ndarray,
                    per_feature: Optional[np.ndarray] = None,
                    **search_args: Any) -> List[Optional[Split]]:
        """The best split of each node whose histogram is in ``slots`` of ``hist`` (None:
        no split of positive gain).

        Parameters
        ----------
        hist : ndarray, (n_slots, n_bins_total, n_channels)
        slots : ndarray of int32, (k,)
        noise : ndarray
            :meth:`noise` for ``k`` nodes.
        per_feature : ndarray, (k, n_features, CANDIDATE_COLUMNS), optional
            Receives each node's best candidate per feature.
        **search_args
            ``allowed``, ``monotone``, ``bounds``: :meth:`NodeRules.search_args`.
        """
        if self.n_outputs > 1:
            return self._vector_node_splits(hist, slots, noise, per_feature, **search_args)
        k = slots.size
        best = np.empty((k, BEST_COLUMNS))
        if per_feature is None:
            per_feature = np.empty((k, self.nbnm.size, CANDIDATE_COLUMNS))
        _splitting.find_split_nodes(
            hist, slots, self.offsets, self.nbnm, self.is_cat, self.cat_params, self.l2,
            self.min_samples_leaf, self.min_child_weight, noise, per_feature, best,
            self.n_threads, **search_args)
        out: List[Optional[Split]] = []
        for slot, row in zip(slots.tolist(), best.tolist()):    # Python floats: fast
            if row[BEST_FEATURE] < 0:
                out.append(None)
                continue
            f, b, d = int(row[BEST_FEATURE]), int(row[BEST_BIN]), int(row[BEST_DIRECTION])
            cl, cr = row[BEST_LEFT_COUNT], row[BEST_RIGHT_COUNT]
            left_set = None
            if self.is_cat.size and self.is_cat[f]:
                left_set = self.category_set(hist, [slot], f, b, d)[1]
                b, d = -1, CAT_SPLIT
            elif not row[BEST_MISSING_SEEN]:     # no missing rows seen: the majority side
                d = int(cr > cl)
            out.append(Split(f, b, d, row[BEST_GAIN], cl, cr, left_set))
        return out

    def level_split(self, hist: np.ndarray, slots: np.ndarray, noise: np.ndarray,
                    allowed: Optional[np.ndarray] = None) -> Optional[LevelSplit]:
        """The best split shared by the leaves whose histograms are in ``slots`` (a level
        of a symmetric tree), or None; ``allowed``: :meth:`level_mask`."""
        if self.n_outputs > 1:
            return self._vector_level_split(hist, slots, noise, allowed)
        gain_sum, n_valid = self._level_work_arrays()
        f, b, d, gain = _splitting.find_split_level(
            hist, slots, self.offsets, self.nbnm, self.is_cat, self.cat_params, self.l2,
            self.min_samples_leaf, self.min_child_weight, noise, gain_sum, n_valid,
            self.n_threads, allowed=allowed)
        if f < 0:
            return None
        bits = None
        if self.is_cat.size and self.is_cat[f]:
            left_set, bits = self.category_set(hist, slots, f, b, d)
            left, right = self.split_stats(hist, slots, f, b, d, left_set)
            b, d = -1, CAT_SPLIT
        else:
            left, right = self.split_stats(hist, slots, f, b, d)
            if not np.any(self._has_missing(self._missing_sums(hist, slots, f))):
                d = int(right[:, 2].sum() > left[:, 2].sum())  # no NaN seen: majority
        return LevelSplit(f, b, d, gain, left, right, self.valid(left, right), bits)

    def _level_work_arrays(self) -> Tuple[np.ndarray, np.ndarray]:
        """The level search's work space, a pair per bin (reused)."""
        if self._level_work is None:
            n = int(self.offsets[-1])
            self._level_work = (np.empty((n, 2)), np.empty((n, 2), dtype=np.int32))
        return self._level_work

    def _vector_search(self, hist: np.ndarray, slots: np.ndarray, noise: np.ndarray,
                       allowed: Optional[np.ndarray]) -> Tuple[int, int, int, float]:
        """``_vector.find_split`` over the nodes of ``slots``."""
        gain_sum, n_valid = self._level_work_arrays()
        return _vector.find_split(hist, slots, self.offsets, self.nbnm, self.n_outputs,
                                  self.l2, self.min_samples_leaf, self.min_child_weight,
                                  noise, gain_sum, n_valid, self.n_threads, allowed=allowed)

    def _vector_level_split(self, hist: np.ndarray, slots: np.ndarray, noise: np.ndarray,
                            allowed: Optional[np.ndarray]) -> Optional[LevelSplit]:
        """:meth:`level_split` of vector-leaf trees."""
        f, b, d, gain = self._vector_search(hist, slots, noise, allowed)
        if f < 0:
            return None
        left, right = self.vector_stats(hist, slots, f, b, d)
        if not np.any(self._has_missing(self._missing_sums(hist, slots, f))):
            d = int(right[:, 2].sum() > left[:, 2].sum())  # no NaN seen: majority
        return LevelSplit(f, b, d, gain, left, right, self.valid(left, right))

    def _vector_node_splits(self, hist: np.ndarray, slots: np.ndarray, noise: np.ndarray,
                            per_feature: Optional[np.ndarray] = None,
                            allowed: Optional[np.ndarray] = None) -> List[Optional[Split]]:
        """:meth:`node_splits` of vector-leaf trees: one search per node."""
        if per_feature is not None:
            raise ValueError("vector-leaf trees keep no per-feature candidates "
                             "(prune_features)")
        out: List[Optional[Split]] = []
        for j, slot in enumerate(slots.tolist()):
            one = np.array([slot], dtype=np.int32)
            f, b, d, gain = self._vector_search(
                hist, one, noise[j] if noise.shape[0] else self._no_noise,
                None if allowed is None else np.ascontiguousarray(allowed[j], np.uint8))
            if f < 0:
                out.append(None)
                continue
            left, right = self.vector_stats(hist, one, f, b, d)
            cl, cr = float(left[0, 2]), float(right[0, 2])
            if not np.any(self._has_missing(self._missing_sums(hist, one, f))):
                d = int(cr > cl)
            out.append(Split(f, b, d, gain, cl, cr))
        return out

    # -- statistics --------------------------------------------------------------------------
    def vector_stats(self, hist: np.ndarray, slots: np.ndarray, f: int, b: int, d: int
                     ) -> Tuple[np.ndarray, np.ndarray]:
        """The children of threshold split ``(f, b, d)`` in the nodes of ``slots`` of vector
        histograms, summed in the order ``_vector.find_split`` sums them (so validity
        decisions agree exactly): ``(left, right)``, each (len(slots), 3 + 2K): the
        gradient and hessian summed over the outputs, the rows (the summed hessian without
        a count channel), then every output's gradient and hessian."""
        k = self.n_outputs
        off, nb = int(self.offsets[f]), int(self.nbnm[f])
        hf = hist[slots, off:off + nb + 1]
        total = hf[:, :nb].sum(axis=1) + hf[:, nb]          # (bins in order, then missing)
        left = hf[:, :b + 1].sum(axis=1)
        if d == 0:
            left = left + hf[:, nb]
        right = total - left
        out = []
        for side in (left, right):
            g_sum, h_sum = side[:, 0].copy(), side[:, 1].copy()
            for j in range(1, k):           # in output order, as the kernel
                g_sum += side[:, 2 * j]
                h_sum += side[:, 2 * j + 1]
            rows = side[:, 2 * k] if self.n_channels == 3 else h_sum
            out.append(np.column_stack([g_sum, h_sum, rows, side[:, :2 * k]]))
        return out[0], out[1]

    def split_stats(self, hist: np.ndarray, slots: np.ndarray, f: int, b: int, d: int,
                    left_set: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
        """(g, h, count) sums, (len(slots), 3) each, of both children of split
        ``(f, b, d)`` (a categorical one: ``left_set`` from :meth:`category_set`) in the
        nodes of ``slots``."""
        left = np.empty((slots.size, 3))
        right = np.empty((slots.size, 3))
        _splitting.split_stats(hist, slots, int(self.offsets[f]), int(self.nbnm[f]),
                               self._no_set if left_set is None else left_set, b, d, left,
                               right)
        return left, right

    def category_set(self, hist: np.ndarray, slots: Sequence[int], f: int, size: int,
                     direction: int) -> Tuple[np.ndarray, np.ndarray]:
        """The left categories (histogram bins, in the search's order) and the set bits of
        the categorical candidate ``(size, direction)`` the search found in ``slots``."""
        left = np.empty(int(size), dtype=np.int32)
        _splitting.category_left_set(hist, np.ascontiguousarray(slots, dtype=np.int32),
                                     int(self.offsets[f]), int(self.nbnm[f]), self.cat_params,
                                     int(direction), int(size), left)
        return left, set_bits(left, int(self.nbnm[f]), self.missing_bin)

    def _missing_sums(self, hist: np.ndarray, slots: np.ndarray, f: int) -> np.ndarray:
        """The missing bin of feature ``f`` in the nodes of ``slots``."""
        return hist[slots, int(self.offsets[f] + self.nbnm[f])]

    def _has_missing(self, miss: np.ndarray) -> np.ndarray:
        """Whether missing-bin sums ``miss`` (..., channels) hold rows that matter.

        Without a count channel, missing rows with zero gradient and hessian change no sum,
        so they may follow the majority side like unseen missing values.
        """
        if self.n_channels == 3:
            return miss[..., 2 * self.n_outputs] > 0
        return np.any(miss != 0, axis=-1)

    def valid(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """Whether each pair of children sums (``left``, ``right``: (n, 3) from
        :meth:`split_stats`) respects the minimum sizes and has a positive denominator."""
        lam = self.l2
        msl, mcw = self.min_samples_leaf, self.min_child_weight
        ok = ((left[:, 2] >= msl) & (right[:, 2] >= msl)
              & (left[:, 1] >= mcw) & (right[:, 1] >= mcw))
        if self.n_outputs > 1:      # (vector_stats) every output's hessian
            return ok & np.all(left[:, 4::2] + lam > 0, axis=1) & np.all(
                right[:, 4::2] + lam > 0, axis=1)
        return ok & (left[:, 1] + lam > 0) & (right[:, 1] + lam > 0)


class NodeRules:
    """The constraints of one depthwise or leaf-wise tree as it grows: the features each
    node's path used (interaction constraints, column sampling) and the interval each
    node's value is kept in (monotone constraints); see :mod:`boostlib.engine.constraints`.
    """

    def __init__(self, rules: SplitRules):
        self.rules = rules
        self.columns = rules.column_rules
        self.monotone = rules.monotone
        self.paths: Dict[int, frozenset] = {0: frozenset()}
        self.bounds: Dict[int, Tuple[float, float]] = {0: (-np.inf, np.inf)}

    def search_args(self, nodes: List[int]) -> Dict[str, Any]:
        """The keyword arguments of :meth:`SplitRules.node_splits` for ``nodes``."""
        args: Dict[str, Any] = {}
        if self.columns is not None and self.columns.active:
            args["allowed"] = self.columns.masks([self.paths[n] for n in nodes])
        if self.monotone is not None:
            args["monotone"] = self.monotone
            args["bounds"] = np.array([self.bounds[n] for n in nodes], dtype=np.float64)
        return args

    def split(self, hist: np.ndarray, node: int, slot: int, split: Split, left: int,
              right: int) -> None:
        """Record ``split`` of ``node`` (histogram ``slot``) for its children ``left`` and
        ``right`` (nothing to record without column rules and monotone constraints)."""
        f = split.feature
        if self.columns is not None:
            self.paths[left] = self.paths[right] = self.paths[node] | {f}
        if self.monotone is None:
            return
        lo, hi = self.bounds[node]
        mono = 0 if split.direction == CAT_SPLIT else int(self.monotone[f])
        if mono:
            l2 = self.rules.l2
            sl, sr = self.rules.split_stats(hist, np.array([slot], dtype=np.int32), f,
                                            split.bin, split.direction)
            w_left = bounded_value(sl[0, 0], sl[0, 1], l2, lo, hi)
            w_right = bounded_value(sr[0, 0], sr[0, 1], l2, lo, hi)
            self.bounds[left], self.bounds[right] = child_bounds(lo, hi, mono, w_left,
                                                                 w_right)
        else:
            self.bounds[left] = self.bounds[right] = (lo, hi)

    def node_bounds(self, n_nodes: int) -> Optional[np.ndarray]:
        """(n_nodes, 2) value intervals, or None without monotone constraints."""
        if self.monotone is None:
            return None
        out = np.empty((n_nodes, 2))
        for n, (lo, hi) in self.bounds.items():
            out[n] = lo, hi
        return out
