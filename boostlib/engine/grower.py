"""The grower: fits trees on the binned training matrix with the Cython kernels.

Every tree kind (:mod:`boostlib.engine.trees`) shares one level-by-level engine: every fitted
row carries the id of its node (``boostlib._kernels._partition``); each level, the
histograms of the smaller child of every split node are built in one pass over the rows and
the sibling's come by subtraction. The kind decides the structure (which splits a level
takes) from two components the grower holds: the histograms
(:class:`~boostlib.engine.histograms.Histograms`: the binned data, the histogram buffers,
the root histogram and the histogram passes) and the split rules
(:class:`~boostlib.engine.split_rules.SplitRules`: the split search, its regularisation and
constraints). The grower runs a tree's growth and computes its leaf values
(:mod:`boostlib.engine.leaves`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from .._kernels import _partition, _vector
from ..plugin.collective import LOCAL, Collective
from .constraints import ColumnRules, monotone_oblivious
from .histograms import Histograms
from .leaves import cap_steps, leaf_values
from . import linear_leaves
from .linear_leaves import RawColumns
from .split_rules import SplitRules
from .trees import kind_of
from .trees.base import subtree_sums
from .working_features import WorkingFeatures


@dataclass(frozen=True)
class GrowParams:
    """Structure and regularisation parameters of one tree (the ``cat_*`` and
    ``min_data_per_group`` ones shape categorical splits, see
    ``boostlib._kernels._splitting``)."""

    max_depth: int = 6
    l2_regularization: float = 1.0
    min_samples_leaf: int = 1
    min_child_weight: float = 1e-3
    cat_smooth: float = 10.0
    cat_l2: float = 10.0
    min_data_per_group: int = 10
    max_cat_threshold: int = 32
    max_leaves: int = 31            # leaf-wise trees only
    #: ``K > 1``: vector-leaf trees, one tree for ``K`` outputs (``multi_strategy=
    #: "multi_output_tree"``): one structure from the outputs' summed gains, ``K`` values
    #: per leaf.
    n_outputs: int = 1
    #: Leaf-wise trees only: a feature without a split of positive gain in a leaf is not
    #: searched in that leaf's subtree (LightGBM's rule: faster, and not the exact greedy
    #: tree, since a child can have a gainful split its parent lacked).
    prune_features: bool = False
    #: Cap on ``|leaf value|`` of the Newton leaves (XGBoost's ``max_delta_step``; 0: none),
    #: see :mod:`boostlib.engine.leaves`.
    max_delta_step: float = 0.0
    #: Linear leaves (:mod:`boostlib.engine.linear_leaves`): every leaf also fits a ridge
    #: regression of this L2 on its path's numeric features (None: constant leaves).
    linear_lambda: Optional[float] = None

    @property
    def cat_params(self) -> np.ndarray:
        """The four categorical parameters in the order the kernels read them."""
        return np.array([self.cat_smooth, self.cat_l2, self.min_data_per_group,
                         self.max_cat_threshold], dtype=np.float64)


class TreeGrower:
    """Fits trees on a binned training matrix.

    Parameters
    ----------
    X_binned : ndarray of uint8, shape (n_features, n_rows), or SparseBinned
        Feature-major binned training data (see :class:`boostlib.engine.binning.BinMapper`);
        sparse input stays a :class:`~boostlib.engine.sparse_binned.SparseBinned`, read a
        few features at a time (:meth:`columns`). Its features are the working features
        of ``features``, and so are those of the per-feature arguments below.
    n_bins_nonmissing : ndarray of int32, shape (n_features,)
    missing_bin : int
    policy : {"symmetric", "depthwise", "lossguide"}
    params : GrowParams
    n_threads : int
    is_categorical : ndarray of bool, shape (n_features,), optional
        Which features are categorical (their bins are categories; splits send a set
        left). Default: none.
    bundle : bool, default True
        Build histograms over bundles of mutually exclusive sparse features
        (:mod:`boostlib.engine.bundling`) when that cuts the histogram columns.
    default_bins : ndarray, optional
        Each feature's default bin for bundling (training passes the bins of 0.0, so dense
        and sparse input bundle alike); by default the most frequent bin.
    monotone : ndarray of int8, optional
        Monotone constraint of each feature (see :mod:`boostlib.engine.constraints`).
    column_rules : ColumnRules, optional
        Column sampling and interaction constraints.
    collective : Collective, optional
        In a distributed fit, sums this worker's histograms and leaf sums with the other
        workers' before anything is decided from them, so that every worker grows the same
        tree from its own rows (default: one machine).
    raw_columns : RawColumns, optional
        The training matrix's raw values, which linear leaves (``params.linear_lambda`` not
        None) are fitted on.
    features : WorkingFeatures, optional
        The training matrix's features that ``X_binned`` holds
        (:mod:`boostlib.engine.working_features`; default: it holds every feature). Trees
        are grown on these and name the training matrix's features once grown: :meth:`grow`
        returns such trees, and :meth:`apply`, :meth:`add_values` and
        :meth:`enforce_monotone` take them.

    Attributes
    ----------
    histograms : Histograms
        The binned data, the histogram buffers and passes (a tree kind builds its nodes'
        histograms through it).
    rules : SplitRules
        The split search and its rules (a tree kind searches its nodes through it).
    kind : TreeKind
        The kind of the trees grown (``policy``).
    X, nbnm, offsets, missing_bin, n_bins
        The binned matrix and its histogram layout (as in :attr:`histograms`).

    Notes
    -----
    The histograms keep a row-major copy of ``X_binned`` (``X_rows``) with each feature's
    missing values at bin ``n_bins_nonmissing[f]``. A node's histogram holds
    ``n_bins_nonmissing[f] + 1`` bins per feature (its bins in use, then its missing bin)
    at ``offsets[f]``: sized by each feature's own bin count, so binary and
    low-cardinality features cost no more per row than continuous ones.
    """

    def __init__(self, X_binned: np.ndarray,
                 n_bins_nonmissing: np.ndarray, missing_bin: int, policy: str,
                 params: GrowParams, n_threads: int = 1,
                 is_categorical: Optional[np.ndarray] = None, bundle: bool = True,
                 default_bins: Optional[np.ndarray] = None,
                 monotone: Optional[np.ndarray] = None,
                 column_rules: Optional[ColumnRules] = None,
                 collective: Collective = LOCAL,
                 features: Optional[WorkingFeatures] = None,
                 raw_columns: Optional[RawColumns] = None):
        self.kind = kind_of(policy)
        if params.linear_lambda is not None and (raw_columns is None or params.n_outputs > 1):
            raise ValueError("linear leaves need the raw columns and scalar trees")
        #: the training matrix's raw values (linear leaves), or None
        self.raw_columns = raw_columns
        self.features = WorkingFeatures.every(X_binned.shape[0]) if features is None \
            else features
        if self.features.original.size != X_binned.shape[0]:
            raise ValueError("features must name one feature per row of X_binned")
        self.collective = collective
        self.policy = policy
        self.params = params
        self.n_threads = int(n_threads)
        n_features = X_binned.shape[0]
        cat = (np.zeros(n_features, dtype=bool) if is_categorical is None
               else np.asarray(is_categorical, dtype=bool))
        if cat.shape != (n_features,):
            raise ValueError("is_categorical needs one entry per feature")
        #: the histograms of the nodes, and the binned data they are built from
        self.histograms = Histograms(X_binned, n_bins_nonmissing, missing_bin, n_threads, cat,
                                     bundle=bundle, default_bins=default_bins,
                                     collective=collective, n_outputs=params.n_outputs)
        h = self.histograms
        self.X, self.nbnm, self.offsets = h.X, h.nbnm, h.offsets
        self.missing_bin, self.n_bins = h.missing_bin, h.n_bins
        #: int8 per feature (-1, 0, +1), or None: monotone constraints
        self.monotone = None if monotone is None else np.ascontiguousarray(monotone, np.int8)
        #: the features each node may split on (column sampling, interaction constraints)
        self.column_rules = column_rules
        #: the rules of the split search
        self.rules = SplitRules(params, h.offsets, h.nbnm, h.missing_bin, cat, self.monotone,
                                column_rules, self.features, n_threads,
                                collective.distributed, params.n_outputs)
        h.n_channels = self.rules.n_channels
        self._kept_sums = None      # see keep_node_sums

    @property
    def walkable(self) -> bool:
        """Whether depthwise trees can be walked row by row (a row-major matrix exists)."""
        return self.histograms.walkable

    @property
    def X_rows(self) -> Optional[np.ndarray]:
        """The row-major twin of the binned matrix
        (:attr:`~boostlib.engine.histograms.Histograms.X_rows`)."""
        return self.histograms.X_rows

    def columns(self, features: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``(matrix, features)`` for the kernels that read ``features`` feature-major: the
        training matrix itself, or for sparse data a dense copy of just those features
        (:func:`~boostlib.engine.sparse_binned.local_columns`) and their indices in it."""
        return self.histograms.columns(features)

    # -- public ------------------------------------------------------------------------------
    def set_n_threads(self, n_threads: int) -> None:
        """Run the kernels on ``n_threads`` threads from now on (the trees do not depend on
        the thread count)."""
        self.n_threads = self.histograms.n_threads = self.rules.n_threads = int(n_threads)

    def grow(self, rows: np.ndarray, gradient: np.ndarray, hessian: np.ndarray, *,
             leaf_gradient: Optional[np.ndarray] = None, split_noise_std: float = 0.0,
             split_rng: Optional[np.random.Generator] = None, leaf_noise_scale: float = 0.0,
             leaf_rng: Optional[np.random.Generator] = None,
             value_rows: Optional[np.ndarray] = None, value_gradient: Optional[np.ndarray] = None,
             value_hessian: Optional[np.ndarray] = None,
             row_weights: Optional[np.ndarray] = None):
        """Fit one tree.

        Parameters
        ----------
        rows : int32 array, sorted training-row ids to fit on.
        gradient, hessian : float64 arrays aligned with ``rows`` (weights applied). The
            gradient decides the structure.
        leaf_gradient : float64 array aligned with ``rows``, optional
            Gradient used for the leaf values (default: ``gradient``); SGLB passes the
            noiseless gradient here and a noisy one as ``gradient``.
        split_noise_std : float
            Std of the Gaussian noise added to every candidate's score (random strength).
        split_rng, leaf_rng : numpy Generators for the two noise streams.
        leaf_noise_scale : float
            Adds ``leaf_noise_scale * N(0, 1) / sqrt(H_leaf + l2)`` to every leaf value
            (leaves no row reaches stay exactly 0, without noise).
        value_rows, value_gradient, value_hessian : optional
            Other rows to compute the leaf values on, with their gradient and hessian (e.g. all
            training rows when the structure was chosen on a sample, as CatBoost does). By
            default the leaf values come from the fitted rows.
        row_weights : float64 array aligned with ``rows`` (empty: weight 1), optional
            When given, ``gradient`` and ``hessian`` hold one value per *training* row, and
            the tree is fitted on ``gradient[rows] * row_weights`` (and the hessian's): they
            are gathered in the same pass as the fitted rows' binned data (``rows`` must then
            be a strict subset of the training rows, and ``leaf_gradient`` None). That pass
            checks ``rows`` (sorted, unique, in range) and ``row_weights`` (finite, >= 0),
            and raises :class:`~boostlib.engine.grow_errors.SampleDefects` if they are not.

        Returns
        -------
        tree : ObliviousTree or DepthwiseTree
            The fitted tree, with its leaf values.
        node_of_row : ndarray of int32
            The leaf (oblivious: leaf index; depthwise: node id) of every fitted row, or of
            every value row when ``value_rows`` is given.
        """
        rows = np.ascontiguousarray(rows, dtype=np.int32)
        g = np.ascontiguousarray(gradient, dtype=np.float64)
        h = np.ascontiguousarray(hessian, dtype=np.float64)
        prepared = None
        if row_weights is not None:
            n_total = self.X.shape[1]
            if leaf_gradient is not None or not rows.size < n_total:
                raise ValueError("row_weights needs a strict subset of the rows and no "
                                 "leaf_gradient")
            if not g.shape == h.shape == (n_total,):
                raise ValueError("with row_weights, gradient and hessian must have one value "
                                 "per training row")
            prepared = self.histograms.gather_sample(
                rows, np.ascontiguousarray(row_weights, np.float64), g, h)
            g, h = prepared.g, prepared.h
        lg = g if leaf_gradient is None else np.ascontiguousarray(leaf_gradient, np.float64)
        if not (g.shape == h.shape == lg.shape == rows.shape):
            raise ValueError("rows, gradient and hessian must have the same shape")
        if (split_noise_std > 0 and split_rng is None) or (leaf_noise_scale > 0 and
                                                          leaf_rng is None):
            raise ValueError("noise needs a random generator")
        if value_rows is not None:
            rows_v = np.ascontiguousarray(value_rows, dtype=np.int32)
            g_v = np.ascontiguousarray(value_gradient, dtype=np.float64)
            h_v = np.ascontiguousarray(value_hessian, dtype=np.float64)
            if not g_v.shape == h_v.shape == rows_v.shape:
                raise ValueError("value_rows, value_gradient and value_hessian must have the "
                                 "same shape")
        self.rules.begin_tree(h)
        self.histograms.n_channels = self.rules.n_channels
        self._kept_sums = None
        tree, node, group, bounds = self.kind.grow(self, rows, g, h, split_noise_std,
                                                   split_rng, prepared)
        self.features.original_tree(tree)
        if value_rows is not None:
            rows, node, lg, h = rows_v, self.apply(tree, rows_v), g_v, h_v
        self._set_values(tree, node, lg, h, group, leaf_noise_scale, leaf_rng, bounds)
        if self.params.linear_lambda is not None:
            linear_leaves.fit_tree(self.kind, tree, rows, node, lg, h, self.raw_columns,
                                   self.params.linear_lambda, self.collective, self.n_threads)
        return tree, node

    def grow_vector(self, rows: np.ndarray, gradient: np.ndarray, hessian: np.ndarray, *,
                    leaf_gradient: Optional[np.ndarray] = None, split_noise_std: float = 0.0,
                    split_rng: Optional[np.random.Generator] = None,
                    leaf_noise_scale: float = 0.0,
                    leaf_rng: Optional[np.random.Generator] = None,
                    value_rows: Optional[np.ndarray] = None,
                    value_gradient: Optional[np.ndarray] = None,
                    value_hessian: Optional[np.ndarray] = None):
        """Fit one vector-leaf tree (``params.n_outputs = K > 1``): one structure chosen by
        the outputs' summed gains, ``K`` values per leaf.

        Parameters are those of :meth:`grow` (without ``row_weights``), with ``gradient``,
        ``hessian`` (and ``leaf_gradient``, ``value_gradient``, ``value_hessian``) of shape
        (len(rows), K), row-major. Leaf noise is drawn per leaf and output.

        Returns
        -------
        tree : the tree of the grower's kind, its ``value`` of shape (n_nodes, K).
        node_of_row : ndarray of int32, as :meth:`grow` gives it.
        """
        k = self.params.n_outputs
        rows = np.ascontiguousarray(rows, dtype=np.int32)
        shape = (rows.size, k)
        g, h = (np.ascontiguousarray(a, dtype=np.float64) for a in (gradient, hessian))
        lg = g if leaf_gradient is None else np.ascontiguousarray(leaf_gradient, np.float64)
        if k < 2 or not g.shape == h.shape == lg.shape == shape:
            raise ValueError(f"gradient and hessian must have shape {shape} (rows, outputs "
                             f"of the grower's vector-leaf trees)")
        if (split_noise_std > 0 and split_rng is None) or (leaf_noise_scale > 0 and
                                                          leaf_rng is None):
            raise ValueError("noise needs a random generator")
        self.rules.begin_tree(h)
        self.histograms.n_channels = self.rules.n_channels
        self._kept_sums = None
        tree, node, group, _ = self.kind.grow(self, rows, g, h, split_noise_std, split_rng)
        self.features.original_tree(tree)
        if value_rows is not None:
            rows_v = np.ascontiguousarray(value_rows, dtype=np.int32)
            lg, h = (np.ascontiguousarray(a, np.float64) for a in (value_gradient,
                                                                   value_hessian))
            if not lg.shape == h.shape == (rows_v.size, k):
                raise ValueError("value_gradient and value_hessian must have shape "
                                 "(len(value_rows), K)")
            node = self.apply(tree, rows_v)
        self._set_vector_values(tree, node, lg, h, group, leaf_noise_scale, leaf_rng)
        return tree, node

    def _set_vector_values(self, tree, node, lg, h, group, noise_scale, rng) -> None:
        """:meth:`_set_values` of a vector-leaf tree: ``tree.value`` becomes (n_nodes, K),
        each output's values from its own sums, by the same formula."""
        n_nodes, k = tree.value.shape[0], lg.shape[1]
        sums = np.empty((n_nodes, 2 * k + 1))
        _vector.node_sums(np.ascontiguousarray(node, np.int32), lg, h, sums)
        self.collective.allreduce(sums)
        l2, cap = self.params.l2_regularization, self.params.max_delta_step
        counts = sums[:, 2 * k]
        value = np.zeros((n_nodes, k))
        if group is None:
            tree.cover = subtree_sums(tree.left, tree.right, counts)
            # split nodes have no rows (value 0); with noise, one draw per leaf and output
            at = np.flatnonzero(tree.left < 0) if noise_scale > 0.0 else np.arange(n_nodes)
            for j in range(k):
                value[at, j] = leaf_values(sums[at, 2 * j], sums[at, 2 * j + 1], counts[at],
                                           l2, noise_scale, rng, cap)
        else:
            tree.cover = counts.copy()
            used = np.unique(group)
            C = np.bincount(group, counts, minlength=n_nodes)
            for j in range(k):
                G = np.bincount(group, sums[:, 2 * j], minlength=n_nodes)
                H = np.bincount(group, sums[:, 2 * j + 1], minlength=n_nodes)
                shared = np.zeros(n_nodes)
                shared[used] = leaf_values(G[used], H[used], C[used], l2, noise_scale, rng,
                                           cap)
                value[:, j] = shared[group]
        tree.value = value

    def enforce_monotone(self, tree) -> None:
        """Put a tree's leaf values back within its monotone constraints after they were
        changed (e.g. by leaf renewal): clipped to the intervals of its growth, or, for a
        symmetric tree, projected again (see :mod:`boostlib.engine.constraints`)."""
        tree = self.features.working_tree(tree)
        bounds = getattr(tree, "value_bounds", None)
        if bounds is not None:
            leaves = np.flatnonzero(self.kind.leaf_mask(tree))
            tree.value[leaves] = np.clip(tree.value[leaves], bounds[leaves, 0],
                                         bounds[leaves, 1])
        weights = getattr(tree, "value_weights", None)
        if weights is not None and self.monotone is not None:
            monotone_oblivious(tree, weights, self.monotone)

    def apply(self, tree, rows: Optional[np.ndarray] = None,
              known: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> np.ndarray:
        """Leaf (oblivious: leaf index; depthwise: node id) of the training rows ``rows``
        (default: all).

        ``known`` is an optional pair ``(rows, leaves)`` of sorted rows whose leaves are
        already known (the rows the tree was grown on): a depthwise tree then walks only the
        others.
        """
        return self.kind.apply(self, self.features.working_tree(tree), rows, known)

    def add_values(self, tree, coefficient: float, raw: np.ndarray,
                   known: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> None:
        """``raw += coefficient * tree(x)`` on every training row of a depthwise tree, in one
        row-major walk (``known`` as in :meth:`apply`: those rows are not walked); ``raw``
        ends bit-identical to adding the values of the leaves :meth:`apply` gives."""
        self.kind.add_values(self, self.features.working_tree(tree), coefficient, raw, known)

    def keep_node_sums(self, node: np.ndarray, g: np.ndarray, h: np.ndarray,
                       sums: np.ndarray, values: Optional[np.ndarray] = None) -> None:
        """Keep the per-node sums of ``g``, ``h`` and rows over ``node`` (as
        ``_partition.node_sums`` gives them) that a tree kind took while growing, for the
        leaf values of the tree being grown: they are used if that tree's values come
        from these very arrays. ``values`` (2, n_nodes), optional: the nodes' values
        without noise (:func:`~boostlib.engine.leaves.leaf_values`) and covers from those
        sums."""
        self._kept_sums = (node, g, h, sums, values)

    def _node_sums(self, node, g, h, n_nodes):
        """``(sums, values)``: per-node sums of ``g``, ``h`` and rows over ``node``
        (n_nodes, 3) and the values and covers from them (or None), those kept by
        :meth:`keep_node_sums` for the same arrays, else summed (and None)."""
        kept, self._kept_sums = self._kept_sums, None
        if kept is not None and kept[0] is node and kept[1] is g and kept[2] is h:
            return kept[3], kept[4]
        sums = np.empty((n_nodes, 3))
        _partition.node_sums(node, g, h, sums)
        return sums, None

    def _set_values(self, tree, node, lg, h, group, noise_scale, rng, bounds=None):
        """Leaf values from the per-leaf sums of ``lg`` and ``h`` over the rows in ``node``,
        and the tree's covers (rows per node).

        ``group`` (oblivious trees) maps every leaf to the leaf whose value it shares (the
        leaves of one node of the symmetric rule), kept as ``tree.value_group``; depthwise
        trees pass None. ``bounds``: the intervals monotone constraints keep the values in
        (depthwise and leaf-wise trees); symmetric trees' values are projected onto the
        constraints instead.
        """
        sums, values = self._node_sums(node, lg, h, tree.value.size)
        self.collective.allreduce(sums)
        cap = self.params.max_delta_step
        if group is None:
            l2 = self.params.l2_regularization
            if values is not None and noise_scale == 0.0 and not self.collective.distributed:
                tree.cover = values[1]      # as below, from the same sums
                tree.value[:] = cap_steps(values[0], cap)
            else:                           # rows per node: a split node's are its leaves'
                tree.cover = subtree_sums(tree.left, tree.right, sums[:, 2])
                if noise_scale > 0.0:       # a draw per leaf
                    leaves = np.flatnonzero(tree.left < 0)
                    tree.value[leaves] = leaf_values(sums[leaves, 0], sums[leaves, 1],
                                                     sums[leaves, 2], l2, noise_scale, rng,
                                                     cap)
                else:                       # split nodes have no rows: their values are 0
                    tree.value[:] = leaf_values(sums[:, 0], sums[:, 1], sums[:, 2], l2,
                                                max_delta_step=cap)
            if bounds is not None:
                tree.value_bounds = bounds
                self.enforce_monotone(tree)
            return
        tree.cover = sums[:, 2].copy()      # rows per leaf
        n_leaves = tree.value.size
        G = np.bincount(group, sums[:, 0], minlength=n_leaves)
        H = np.bincount(group, sums[:, 1], minlength=n_leaves)
        C = np.bincount(group, sums[:, 2], minlength=n_leaves)
        used = np.unique(group)
        group_value = np.zeros(n_leaves)
        group_value[used] = leaf_values(G[used], H[used], C[used],
                                        self.params.l2_regularization, noise_scale, rng, cap)
        tree.value[:] = group_value[group]
        tree.value_group = group            # (leaf renewal renews a group as one leaf)
        if self.monotone is not None:
            tree.value_weights = sums[:, 1] + self.params.l2_regularization
            self.enforce_monotone(tree)
