"""The context an update rule works with during one fit: derivatives, sampling, fitting
trees, adding them to the model or to tracked models, and the scores that follow."""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._kernels import _predictor, _sampling
from ..plugin import checks
from ..plugin.api import Loss, SampleResult, Sampler
from ..plugin.collective import LOCAL, Collective
from ..plugin.registry import PluginError
from .buffers import ArrayPool
from .ensemble import Ensemble
from .grow_errors import DerivativeOverflow, SampleDefects
from .grower import TreeGrower
from . import linear_leaves
from .linear_leaves import RawColumns, has_linear
from .loss_values import mean_loss
from .random_streams import Streams
from .tracked import Tracked, _lincomb
from .trees import TreeGroup

_NO_WEIGHTS = np.empty(0)


@dataclass
class EvalSet:
    """A validation set, binned once, with its running raw scores, shape
    (n_outputs, n_rows)."""

    name: str
    X_binned: np.ndarray
    y: np.ndarray
    weight: Optional[np.ndarray]
    raw: np.ndarray
    #: the fit's loss bound to this set's query groups (None: the fit's loss as it is)
    loss: Optional[Loss] = None
    #: the set's raw-score offsets (``init_score``), (n_outputs, n_rows), part of ``raw``
    offset: Optional[np.ndarray] = None
    #: the set's raw values, which trees with linear leaves read (None: no linear leaves)
    columns: Optional[RawColumns] = None


@dataclass
class _Fitted:
    rows: np.ndarray
    node: np.ndarray
    full: bool
    output: Optional[np.ndarray] = None     # training output, once computed (sampled fits)
    # depthwise trees fitted on a sample: ``node`` holds the leaves of the fitted ``rows``,
    # and a walk of the tree gives the others' (see TreeGrower.apply and add_values)
    walk_others: bool = False
    walked: bool = False                    # add_values() walked it once already
    # the rows the leaf values were computed on, their leaves and sampling weights (None: 1),
    # and the sample the tree was fitted on, as at the fit (for renew_leaves: ``rows`` and
    # ``node`` above grow to every row once the tree is walked)
    value_rows: Optional[np.ndarray] = None
    value_node: Optional[np.ndarray] = None
    value_weights: Optional[np.ndarray] = None
    sample: Optional[SampleResult] = None


class BoostingContext:
    """What an update rule works with during one fit (see :class:`boostlib.api.Context`).

    Parameters
    ----------
    X_binned : uint8 (n_features, n_rows) training data.
    y, sample_weight : training targets and weights (None = 1).
    loss, sampler : plugin instances (sampler may be None).
    grower : TreeGrower on ``X_binned``.
    ensemble : the model being built (its bias is set).
    seed : numpy SeedSequence all random streams derive from.
    learning_rate, n_iterations : the estimator's settings.
    leaf_estimation : "newton" or "gradient" (hessians replaced by the row weights).
    random_strength : split-score noise multiplier.
    evals : validation sets.
    n_threads : kernel threads.
    streams : the fit's random streams (default: fresh ones from ``seed``).
    first_iteration : the number of the first iteration (a continued fit counts on from the
        model it continues: ``iteration`` runs from ``first_iteration`` to
        ``first_iteration + n_iterations - 1``, and the attribute ``n_iterations`` is that
        end).
    init_raw : the starting training scores, (n_outputs, n_rows) (default: the bias; a
        continued fit starts from the model's scores), offsets included.
    offset : the training rows' raw-score offsets (``init_score``), (n_outputs, n_rows),
        or None. They are part of the scores but not of the model: scaling the model
        (:meth:`scale_model`) or combining models (:meth:`combine`) leaves them as they
        are.
    collective : how this worker's sums join the other workers' in a distributed fit
        (default: one machine). ``n_rows`` is then this worker's rows, ``total_rows`` all
        workers'.
    """

    def __init__(self, X_binned: np.ndarray, y: np.ndarray, sample_weight: Optional[np.ndarray],
                 loss: Loss, sampler: Optional[Sampler], grower: TreeGrower, ensemble: Ensemble,
                 seed: np.random.SeedSequence, learning_rate: float, n_iterations: int,
                 leaf_estimation: str, random_strength: float, evals: List[EvalSet],
                 n_threads: int, streams: Optional[Streams] = None, first_iteration: int = 0,
                 init_raw: Optional[np.ndarray] = None, collective: Collective = LOCAL,
                 offset: Optional[np.ndarray] = None):
        self.X_binned = X_binned
        self.y = y
        self._y_view = y.view()
        self._y_view.flags.writeable = False
        self.checks = checks.level()
        self.sample_weight = sample_weight
        self.loss = loss
        self.sampler = sampler
        self.grower = grower
        self.ensemble = ensemble
        self._seed = seed
        self.streams = Streams(seed) if streams is None else streams
        if loss.needs_rng:      # its draws come from the fit's streams, as a sampler's do
            with checks.blame("loss", loss, "bind_rng"):
                self.loss = loss = loss.bind_rng(self.row_rng("loss"))
        self.learning_rate = float(learning_rate)
        #: the first iteration's number (0, or where a continued model stopped)
        self.first_iteration = int(first_iteration)
        self.n_iterations = self.first_iteration + int(n_iterations)
        self.iteration = self.first_iteration
        #: iterations the model holds once the loop ends (set by ``loop.run``)
        self.completed_iterations = self.first_iteration
        self.n_rows = int(y.shape[0])
        #: sums across the workers of a distributed fit (see boostlib.plugin.collective)
        self.collective = collective
        #: training rows of every worker (``n_rows`` on one machine)
        self.total_rows = int(collective.total(self.n_rows)[0])
        self.leaf_estimation = leaf_estimation
        self.random_strength = float(random_strength)
        self.evals = evals
        self.n_threads = n_threads
        #: length of the raw score (1, or e.g. the number of classes)
        self.n_outputs = ensemble.n_outputs
        # scores are stored output-major, (n_outputs, n_rows): each output's row is what the
        # scalar kernels update; plugins see them rows-first (see _public)
        self._raw = (np.repeat(ensemble.bias_array[:, None], self.n_rows, axis=1)
                     if init_raw is None else init_raw)
        self._offset = offset
        self._raw_version = 0           # bumped whenever the training scores change
        self._train_loss: Tuple[int, float] = (-1, math.nan)   # (version, loss) cache
        # A loss with gradient_hessian_loss gives the training loss with the derivatives at
        # the same scores: they are kept, (version, gbuf, hbuf), for the next gradients()
        # call. Once an iteration leaves them unused (its update rule takes derivatives
        # elsewhere), the loss is taken alone again. Either way the values are the same.
        self._prefetch = checks.fuses_loss(self.loss) and self.checks != "full"
        self._prefetched: Optional[Tuple[int, np.ndarray, np.ndarray]] = None
        self._weight_total: Optional[float] = None
        self._pool = ArrayPool()
        self._all_rows = np.arange(self.n_rows, dtype=np.int32)
        # Trees fitted during the current iteration, with the leaf of every fitted row.
        self._fitted: Dict[int, Tuple[Any, _Fitted]] = {}
        # Index of every tree in the ensemble, by identity (trees are never removed while
        # training, so ids are unique).
        self._index: Dict[int, Tuple[Any, int]] = {}
        self.update_name = "update rule"     # set by run(), for error messages
        # The sampler's last sample: its entries are checked when a tree is fitted on it
        # (fit_tree), and errors name the sampler.
        self._sampled: Optional[SampleResult] = None
        self._model = Tracked(self, "model")
        self._tracks: Dict[str, Tracked] = {}

    # -- state -------------------------------------------------------------------------------
    def set_n_threads(self, n_threads: int) -> None:
        """Run the kernels on ``n_threads`` threads from the next step on (the loop does it
        when a default thread count follows the machine's load; the model does not depend
        on it). The built-in samplers read ``n_threads`` at every draw; a plugin sampler
        that took it in ``begin`` keeps that count."""
        self.n_threads = int(n_threads)
        self.grower.set_n_threads(self.n_threads)

    def _public(self, scores: np.ndarray) -> np.ndarray:
        """Output-major storage (n_outputs, n) as plugins see it: (n,) with one output, else
        (n, n_outputs) (a transposed view, no copy)."""
        return scores[0] if self.n_outputs == 1 else scores.T

    @property
    def public_shape(self) -> Tuple[int, ...]:
        """Shape of raw scores, gradients and hessians: (n_rows,) or (n_rows, n_outputs)."""
        return (self.n_rows,) if self.n_outputs == 1 else (self.n_rows, self.n_outputs)

    @property
    def raw(self) -> np.ndarray:
        """Current raw scores of the training rows (read-only view): shape (n_rows,), or
        (n_rows, n_outputs) with several outputs."""
        view = self._public(self._raw).view()
        view.flags.writeable = False
        return view

    @property
    def model(self) -> Tracked:
        """The model being trained, as a tracked model (see :meth:`combine`)."""
        return self._model

    @property
    def bias(self):
        return self.ensemble.bias

    @property
    def coefficients(self) -> np.ndarray:
        return self.ensemble.coef.copy()

    def train_loss(self, raw: Optional[np.ndarray] = None) -> float:
        """Weighted mean training loss at ``raw`` (default: the current model, cached); in a
        distributed fit, over every worker's rows (every worker must call it)."""
        if raw is not None:
            return self._global_mean(mean_loss(
                self.loss, self._y_view, np.ascontiguousarray(raw, np.float64),
                self.sample_weight, self.n_threads, "the training set", self.iteration))
        if self._train_loss[0] != self._raw_version:
            if self._prefetched is not None:    # the last ones were not used
                self._prefetch, self._prefetched = False, None
            if self._prefetch:
                local = self._loss_and_derivatives()
            else:
                local = mean_loss(self.loss, self._y_view, self.raw, self.sample_weight,
                                  self.n_threads, "the training set", self.iteration)
            self._train_loss = (self._raw_version, self._global_mean(local))
        return self._train_loss[1]

    def _loss_and_derivatives(self) -> float:
        """The mean training loss at the current scores from the loss's
        ``gradient_hessian_loss``, keeping the derivatives it wrote for :meth:`gradients`."""
        raw = self.raw
        gbuf, hbuf = self._derivative_buffers()
        with checks.blame("loss", self.loss, "gradient_hessian_loss", self.iteration):
            value = self.loss.gradient_hessian_loss(self._y_view, raw, self._public(gbuf),
                                                    self._public(hbuf), self.sample_weight,
                                                    self.n_threads)
        self._prefetched = (self._raw_version, gbuf, hbuf)
        return checks.mean_loss(self.loss, value, "the training set", self.iteration,
                                self._y_view, raw)

    def _derivative_buffers(self) -> Tuple[np.ndarray, np.ndarray]:
        """Output-major (n_outputs, n_rows) buffers for a loss's derivatives."""
        shape = (self.n_outputs, self.n_rows)
        if self.checks == "full":       # unwritten entries show as NaN
            return np.full(shape, np.nan), np.full(shape, np.nan)
        return self._pool.empty(shape), self._pool.empty(shape)  # reused once dropped

    def _global_mean(self, local: float) -> float:
        """The weighted mean over every worker's rows from this worker's mean."""
        if not self.collective.distributed:
            return local
        if self._weight_total is None:
            w = self.sample_weight
            self._weight_total = float(self.n_rows if w is None else np.sum(w))
        total, weight = self.collective.total(local * self._weight_total, self._weight_total)
        return float(total / weight)

    def rng(self, stream: str) -> np.random.Generator:
        """The generator of a named random stream (e.g. "sampler", "split_noise").

        Streams are independent of each other and depend only on ``random_state`` and the
        name, never on ``n_jobs`` or on the order streams are first requested. A continued
        fit goes on with the streams of the fit it continues (see
        :class:`~boostlib.engine.random_streams.Streams`).
        """
        return self.streams.get(stream)

    def row_rng(self, stream: str) -> np.random.Generator:
        """The generator of a named stream of per-row draws (one value per training row,
        such as a sampler's or SGLB's per-row noise).

        On one machine it is :meth:`rng`'s stream of that name. In a distributed fit each
        worker draws its own rows' values from a stream of its own, while :meth:`rng`'s
        streams (per tree, per leaf, per feature) are the same on every worker.
        """
        return self.streams.rows(stream)

    # -- derivatives and sampling --------------------------------------------------------------
    def gradients(self, raw: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
        """Loss derivatives at ``raw`` (default: the current model), times the row weights.

        With ``leaf_estimation="gradient"`` the returned hessian is the row weight (first-order
        boosting: split scores ``G^2/(W+l2)`` and leaves ``-G/(W+l2)``); with Newton leaves a
        loss whose hessian can be negative is floored at its ``hessian_floor``.
        """
        from_model = raw is None
        if from_model:
            raw = self.raw              # read-only, of the public shape
        else:
            raw = np.asarray(raw, dtype=np.float64)
            if raw.shape != self.public_shape:
                raise ValueError(f"raw must have shape {self.public_shape}, got {raw.shape}")
            if raw.ndim == 1:
                raw = np.ascontiguousarray(raw)
            if raw.flags.writeable:     # the loss must not change the scores it is given
                raw = raw.view()
                raw.flags.writeable = False
        kept, self._prefetched = self._prefetched, None
        if kept is not None and from_model and kept[0] == self._raw_version:
            gbuf, hbuf = kept[1], kept[2]       # written with the training loss
            g, h, returned = self._public(gbuf), self._public(hbuf), None
        else:
            if kept is not None:        # the update rule takes derivatives elsewhere
                self._prefetch = False
            gbuf, hbuf = self._derivative_buffers()
            g, h = self._public(gbuf), self._public(hbuf)
            with checks.blame("loss", self.loss, "gradient_hessian", self.iteration):
                returned = self.loss.gradient_hessian(self._y_view, raw, g, h,
                                                      self.n_threads)
        g_ret, h_ret = checks.derivatives(self.loss, returned, g, h, self.iteration,
                                          self.checks, self.n_threads)
        if g_ret is not g:              # the loss returned arrays of its own
            g[...], h[...] = g_ret, h_ret
        # weights and floors on the output-major buffers: (n_outputs, n_rows) * (n_rows,)
        w = self.sample_weight
        if self.leaf_estimation == "gradient":
            hbuf[...] = 1.0 if w is None else w
        elif self.loss.hessian_can_be_negative:
            np.maximum(hbuf, self.loss.hessian_floor, out=hbuf)
            if w is not None:
                hbuf *= w
        elif w is not None:
            hbuf *= w
        if w is not None:
            gbuf *= w
        return g, h

    def sample(self, gradient: np.ndarray, hessian: np.ndarray) -> Optional[SampleResult]:
        """This iteration's rows from the sampler (None: every row, weight 1).

        With several outputs the sampler sees one value per row: the Euclidean norms of the
        row's gradient and hessian vectors (GOSS then ranks rows by its score of them, by
        default LightGBM's ``|g h|``: ``||g|| ||h||``; MVS samples by
        ``sqrt(||g||^2 + lambda ||h||^2)``, as CatBoost does for multiclass).
        """
        if self.sampler is None:
            return None
        if self.n_outputs > 1:
            gradient = _row_norms(gradient, self.public_shape, "gradient")
            hessian = _row_norms(hessian, self.public_shape, "hessian")
        gv, hv = gradient.view(), hessian.view()    # samplers must not modify them
        gv.flags.writeable = hv.flags.writeable = False
        with checks.blame("sampler", self.sampler, "sample", self.iteration):
            res = self.sampler.sample(gv, hv, self.row_rng("sampler"), self.iteration)
        # the entries (order, range, weights) are checked by fit_tree, before a kernel reads
        # them: in the pass that gathers the sample when it can, else in a pass of their own
        self._sampled = checks.sample(self.sampler, res, self.n_rows, self.checks,
                                      self.n_threads, entries=False,
                                      part=self.collective.distributed)
        return self._sampled

    # -- trees ---------------------------------------------------------------------------------
    def fit_tree(self, gradient: np.ndarray, hessian: np.ndarray,
                 sample: Optional[SampleResult] = None, *,
                 split_gradient: Optional[np.ndarray] = None, leaf_noise_scale: float = 0.0):
        """Fit one tree to ``gradient``/``hessian`` (full-length, weights applied).

        With several outputs, ``gradient`` (and ``split_gradient``) have shape
        (n_rows, n_outputs), ``hessian`` that shape or (n_rows,) (one hessian for every
        output, e.g. the row weights), and the result is a
        :class:`~boostlib.engine.trees.TreeGroup`: one tree per output, all on the same
        sample, each with its own structure and leaf noise.

        Parameters
        ----------
        gradient, hessian : float64 arrays of shape (n_rows,) (see above for several
            outputs).
        sample : rows and weights to fit on (None: all rows). The histograms are built on
            these rows only. When the sampler's ``leaf_values`` is ``"all"``, the sample
            chooses the structure and the leaf values come from every row (``gradient`` and
            ``hessian`` without the sampling weights).
        split_gradient : optional gradient that decides the structure only (e.g. with
            SGLB's per-row noise); leaf values always use ``gradient``.
        leaf_noise_scale : adds ``scale * N(0,1) / sqrt(H_leaf + l2)`` to each leaf value,
            from the "leaf_noise" stream.

        Returns
        -------
        tree : ObliviousTree or DepthwiseTree (TreeGroup with several outputs) with raw leaf
            values (not yet multiplied by any coefficient).
        """
        if self.n_outputs == 1:
            return self._fit_scalar(gradient, hessian, sample, split_gradient,
                                    leaf_noise_scale)
        g = _outputs(gradient, self.public_shape, "gradient")
        h = _outputs(hessian, self.public_shape, "hessian", allow_shared=True)
        sg = None if split_gradient is None else _outputs(split_gradient, self.public_shape,
                                                          "split_gradient")
        if self.grower.params.n_outputs > 1:
            return self._fit_vector(g, h, sample, sg, leaf_noise_scale)
        return TreeGroup([self._fit_scalar(g[k], h[k] if h.shape[0] > 1 else h[0], sample,
                                           None if sg is None else sg[k], leaf_noise_scale)
                          for k in range(self.n_outputs)])

    def _fit_scalar(self, gradient: np.ndarray, hessian: np.ndarray,
                    sample: Optional[SampleResult], split_gradient: Optional[np.ndarray],
                    leaf_noise_scale: float):
        """:meth:`fit_tree` for one output."""
        for arr, what in ((gradient, "gradient"), (hessian, "hessian"),
                          (split_gradient, "split_gradient")):
            if arr is not None and np.shape(arr) != (self.n_rows,):
                raise ValueError(f"{what} must have shape ({self.n_rows},)")
        gradient = np.ascontiguousarray(gradient, dtype=np.float64)
        hessian = np.ascontiguousarray(hessian, dtype=np.float64)
        row_weights = None
        who = ""
        if sample is None:
            rows, g, h = self._all_rows, gradient, hessian
            sg = split_gradient
        else:
            who = self._sample_owner(sample)
            fused = (checks.fused_entries(sample) and split_gradient is None
                     and self.random_strength == 0 and sample.indices.size < self.n_rows)
            if not fused:               # checked before the conversions and gathers below
                checks.sample_entries(who, sample, self.n_rows, self.n_threads)
            rows = np.ascontiguousarray(sample.indices, dtype=np.int32)
            w = _NO_WEIGHTS if sample.weights is None else np.ascontiguousarray(
                sample.weights, dtype=np.float64)
            sg = None if split_gradient is None else self._gather(split_gradient, rows, w)
            if fused:
                # the grower gathers (and checks) the sample's derivatives with its binned
                # rows, in one pass
                g, h, row_weights = gradient, hessian, w
            else:
                g, h = np.empty(rows.size), np.empty(rows.size)
                _sampling.gather_scaled_pair(gradient, hessian, rows, w, g, h, self.n_threads)
        # CatBoost-style sampling: the sample picks the structure, all rows set the leaves.
        values_on_all = sample is not None and getattr(self.sampler, "leaf_values",
                                                       "sample") == "all"
        structure_g = g if sg is None else sg
        noise_std = 0.0
        if self.random_strength > 0:
            rms = math.sqrt(float(np.mean(structure_g * structure_g)))
            decay = 1.0 / (1.0 + math.exp(min(self.iteration * self.learning_rate, 700.0))
                           / self.n_rows)
            noise_std = self.random_strength * rms * decay
        try:
            tree, node = self.grower.grow(
                rows, structure_g, h, leaf_gradient=None if sg is None else g,
                split_noise_std=noise_std,
                split_rng=self.rng("split_noise") if noise_std > 0 else None,
                leaf_noise_scale=leaf_noise_scale,
                leaf_rng=self.rng("leaf_noise") if leaf_noise_scale > 0 else None,
                value_rows=self._all_rows if values_on_all else None,
                value_gradient=gradient, value_hessian=hessian, row_weights=row_weights)
        except SampleDefects as exc:
            checks.sample_error(who, exc.flags, self.n_rows)
            raise
        except DerivativeOverflow:
            raise checks.attributed(FloatingPointError(
                self._overflow_message(gradient, hessian, sample))) from None
        full = sample is None or values_on_all or rows.shape[0] == self.n_rows
        if full:
            rows = self._all_rows
        # A depthwise tree fitted on a sample: the other rows' leaves come from a row-major
        # walk of the tree (cheaper than a prediction pass over the feature-major matrix),
        # done when the scores are updated, which adds each row's value as the walk lands.
        walk = not full and self.grower.kind.walks_unfitted_rows and self.grower.walkable
        value_weights = None if sample is None or values_on_all else sample.weights
        self._fitted[id(tree)] = (tree, _Fitted(rows, node, full, walk_others=walk,
                                                value_rows=rows, value_node=node,
                                                value_weights=value_weights, sample=sample))
        return tree

    def _fit_vector(self, g: np.ndarray, h: np.ndarray, sample: Optional[SampleResult],
                    sg: Optional[np.ndarray], leaf_noise_scale: float) -> TreeGroup:
        """:meth:`fit_tree` of a vector-leaf tree (``multi_strategy="multi_output_tree"``),
        from output-major derivatives (``h`` may have one row shared by every output). The
        tree is returned as a TreeGroup of ``K`` trees that share its structure, each with
        one output's leaf values and ``1/K`` of its split gains (so the gains of the group
        are the tree's)."""
        k = self.n_outputs
        gradient = np.ascontiguousarray(g.T)                        # (n_rows, K)
        hessian = np.ascontiguousarray(np.broadcast_to(h.T, gradient.shape))
        split_g = None if sg is None else np.ascontiguousarray(sg.T)
        if sample is None:
            rows, gr, hr, sgr = self._all_rows, gradient, hessian, split_g
        else:
            who = self._sample_owner(sample)
            checks.sample_entries(who, sample, self.n_rows, self.n_threads)
            rows = np.ascontiguousarray(sample.indices, dtype=np.int32)
            w = (np.ones(rows.size) if sample.weights is None
                 else np.asarray(sample.weights, dtype=np.float64))[:, None]
            gr, hr = gradient[rows] * w, hessian[rows] * w
            sgr = None if split_g is None else split_g[rows] * w
        values_on_all = sample is not None and getattr(self.sampler, "leaf_values",
                                                       "sample") == "all"
        structure_g = gr if sgr is None else sgr
        noise_std = 0.0
        if self.random_strength > 0:
            rms = math.sqrt(float(np.mean(structure_g * structure_g)))
            decay = 1.0 / (1.0 + math.exp(min(self.iteration * self.learning_rate, 700.0))
                           / self.n_rows)
            noise_std = self.random_strength * rms * decay
        try:
            tree, node = self.grower.grow_vector(
                rows, structure_g, hr, leaf_gradient=None if sgr is None else gr,
                split_noise_std=noise_std,
                split_rng=self.rng("split_noise") if noise_std > 0 else None,
                leaf_noise_scale=leaf_noise_scale,
                leaf_rng=self.rng("leaf_noise") if leaf_noise_scale > 0 else None,
                value_rows=self._all_rows if values_on_all else None,
                value_gradient=gradient, value_hessian=hessian)
        except DerivativeOverflow:
            raise checks.attributed(FloatingPointError(
                self._overflow_message(gradient, hessian, sample))) from None
        full = sample is None or values_on_all or rows.shape[0] == self.n_rows
        if full:
            rows = self._all_rows
        walk = not full and self.grower.kind.walks_unfitted_rows and self.grower.walkable
        value_weights = None if sample is None or values_on_all else sample.weights
        parts = []
        for j in range(k):
            part = _output_tree(tree, j, k)
            self._fitted[id(part)] = (part, _Fitted(rows, node, full, walk_others=walk,
                                                    value_rows=rows, value_node=node,
                                                    value_weights=value_weights,
                                                    sample=sample))
            parts.append(part)
        return TreeGroup(parts)

    def _overflow_message(self, gradient: np.ndarray, hessian: np.ndarray,
                          sample: Optional[SampleResult]) -> str:
        """Why a tree's histograms overflowed: the derivatives and weights."""
        for what, values in (("gradient", gradient), ("hessian", hessian)):
            bad = np.count_nonzero(~np.isfinite(values))
            if bad:     # ctx.gradients() gave finite ones: the update rule made these
                return (f"{self.update_name} passed fit_tree a {what} with {bad} non-finite "
                        f"values at iteration {self.iteration}")
        parts = [f"largest |gradient| {np.max(np.abs(gradient)):.3g}, hessian "
                 f"{np.max(np.abs(hessian)):.3g} (of loss {checks.label(self.loss)!r})"]
        if self.sample_weight is not None:
            parts.append(f"largest sample_weight {self.sample_weight.max():.3g}")
        if sample is not None and sample.weights is not None and sample.weights.size:
            who = (f"sampler {checks.label(self.sampler)!r}" if sample is self._sampled
                   else self.update_name)
            parts.append(f"largest weight in the sample of {who} {np.max(sample.weights):.3g}")
        return (f"{self.update_name} fitted the tree at iteration {self.iteration} to weighted "
                f"gradients or hessians above 3.4e38, outside the float32 range histograms are "
                f"built in: {'; '.join(parts)}; rescale the target y or the weights (or lower "
                f"learning_rate, now {self.learning_rate!r}, if training diverged)")

    def _sample_owner(self, sample: SampleResult) -> str:
        """Who made ``sample``, to start an error message; its structure is checked here when
        it is not the sampler's (whose :meth:`sample` checked it)."""
        if sample is self._sampled:
            return f"sampler {checks.label(self.sampler)!r} returned"
        who = f"the sample that {self.update_name} passed to fit_tree has"
        if not isinstance(sample, SampleResult):
            raise PluginError(f"{self.update_name} passed fit_tree a sample that is not a "
                              f"boostlib.api.SampleResult: {type(sample).__name__}")
        checks.sample_structure(who, sample, self.collective.distributed)
        return who

    def _gather(self, values: np.ndarray, rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """``values[rows] * weights`` in one parallel pass."""
        out = np.empty(rows.size)
        _sampling.gather_scaled(np.ascontiguousarray(values, dtype=np.float64), rows, weights,
                                out, self.n_threads)
        return out

    def _fit_info(self, tree) -> Optional[_Fitted]:
        entry = self._fitted.get(id(tree))
        return entry[1] if entry is not None and entry[0] is tree else None

    def renew_leaves(self, tree, sample: Optional[SampleResult] = None) -> None:
        """Replace the leaf values of a tree fitted in this iteration by the loss's
        :meth:`~boostlib.api.Loss.renew_leaves` (a no-op unless the loss sets
        ``renews_leaves``).

        The loss gets the rows the leaf values were computed on: the sample's rows with the
        user weight times the sampling weight, or every row with its user weight (no sample,
        or the sampler's ``leaf_values="all"``); rows of weight 0 are left out. Their leaves
        are numbered compactly; leaves that none of them reaches keep their value. In a
        symmetric tree the leaves that share a value (those of a node that a level's split
        left unsplit by ``min_samples_leaf`` / ``min_child_weight``: its rows follow that
        split, and it is carried down whole) are renewed as one leaf.

        Parameters
        ----------
        tree : the tree :meth:`fit_tree` returned in this iteration, not yet added to a
            model (:meth:`add_tree` updates the scores from its leaf values).
        sample : the sample the tree was fitted on (the one passed to :meth:`fit_tree`).

        Raises
        ------
        ValueError
            For a tree not fitted in this iteration, already added, fitted on another
            sample, or with several outputs.
        PluginError
            When the loss returns anything but ``n_leaves`` finite values.
        """
        loss = self.loss
        if not getattr(loss, "renews_leaves", False):
            return
        who = f"{self.update_name}: renew_leaves"
        if isinstance(tree, TreeGroup) or self.n_outputs != 1:
            raise ValueError(f"{who} renews trees of losses with one output; loss "
                             f"{checks.label(loss)!r} has {self.n_outputs}")
        fitted = self._fit_info(tree)
        if fitted is None:
            raise ValueError(f"{who} needs a tree fit_tree returned at iteration "
                             f"{self.iteration}")
        entry = self._index.get(id(tree))
        if entry is not None and entry[0] is tree:
            raise ValueError(f"{who} was called after add_tree; renew the leaves first (the "
                             "scores are updated from the leaf values when the tree is added)")
        if sample is not fitted.sample:
            raise ValueError(f"{who} got another sample than the one the tree was fitted on "
                             "(pass the sample given to fit_tree)")
        rows, node = fitted.value_rows, fitted.value_node
        every_row = rows.shape[0] == self.n_rows    # then rows is 0 .. n_rows - 1
        weight = None
        if self.sample_weight is not None:
            weight = self.sample_weight if every_row else self.sample_weight[rows]
        if fitted.value_weights is not None:
            sw = np.asarray(fitted.value_weights, dtype=np.float64)
            weight = sw if weight is None else weight * sw
        y, raw = self._y_view, self.raw
        if weight is not None and not np.all(weight > 0):
            keep = np.flatnonzero(weight > 0)
            rows, node, weight = rows[keep], node[keep], weight[keep]
            every_row = False
        if not every_row:
            y, raw = y[rows], raw[rows]
        if rows.shape[0] == 0:
            return
        shared = _shared_leaves(tree)           # the slot whose value each slot shares
        key = shared[node]
        present = np.bincount(key, minlength=shared.size) > 0
        compact = np.cumsum(present) - 1        # leaf number of every slot with rows
        leaf = compact[key].astype(np.intp)
        n_leaves = int(np.count_nonzero(present))
        if weight is not None:
            weight = weight.view()
            weight.flags.writeable = False
        leaf.flags.writeable = False
        for a in (y, raw):
            a.flags.writeable = False
        with checks.blame("loss", loss, "renew_leaves", self.iteration):
            returned = loss.renew_leaves(y, raw, weight, leaf, n_leaves)
        values = _leaf_values(loss, returned, n_leaves, self.iteration)
        renewed = present[shared]
        tree.value[renewed] = values[compact[shared[renewed]]]
        # monotone constraints hold again (a grower without them has nothing to do)
        enforce = getattr(self.grower, "enforce_monotone", None)
        if enforce is not None:
            enforce(tree)
        fitted.output = None                    # computed from the old values

    def tree_output(self, tree) -> np.ndarray:
        """``tree(x)`` on every training row (a new array).

        ``tree`` is a tree (or TreeGroup), or the int index of one of the model's terms
        (``0 .. n_trees - 1``; e.g. DART's dropped trees, or those of a continued model).
        For a tree fitted in this iteration it is computed at most once (from the leaf of
        every row when the fit covered all rows, else by one prediction pass, kept for
        :meth:`add_tree`). Shape (n_rows,), or (n_rows, n_outputs) for a TreeGroup. The
        coefficient is not applied.
        """
        if isinstance(tree, (int, np.integer)) and not isinstance(tree, bool):
            n = self.ensemble.n_trees
            if not 0 <= int(tree) < n:
                raise IndexError(f"{self.update_name}: tree_output({int(tree)}) is out of "
                                 f"range; the model has {n} trees")
            tree = self.ensemble.trees[int(tree)]
        if isinstance(tree, TreeGroup):
            return np.column_stack([self._scalar_output(t) for t in tree.trees])
        return self._scalar_output(tree)

    def _scalar_output(self, tree) -> np.ndarray:
        """:meth:`tree_output` of one scalar tree."""
        fitted = self._fit_info(tree)
        if fitted is not None and fitted.walk_others:
            self._all_leaves(tree, fitted)
        if fitted is not None and fitted.full:
            out = tree.value[fitted.node]
            if has_linear(tree):
                linear_leaves.add_tree(tree, self.grower.raw_columns, fitted.rows,
                                       fitted.node, 1.0, out, self.n_threads)
            return out
        if fitted is not None and fitted.output is not None:
            return fitted.output.copy()
        out = np.zeros(self.n_rows)
        self.ensemble.add_scalar_trees_binned(self.X_binned, out, [tree], np.ones(1),
                                              self.n_threads, self.grower.raw_columns)
        if fitted is not None:
            fitted.output = out.copy()
        return out

    def add_tree(self, tree, coefficient: float, to: Optional[Tracked] = None) -> int:
        """Add ``coefficient * tree`` to ``to`` (default: the model); return the tree's index.

        A tree joins the model's list of trees the first time it is added to any tracked
        model (with coefficient 0 in every other one); adding it again only changes the
        target's coefficient. The target's training and validation scores are updated from
        the leaf of every fitted row when the fit covered all rows, else by a prediction pass.
        """
        target = self._tracked(to, "add_tree")
        if not math.isfinite(coefficient):
            raise ValueError(f"coefficient={coefficient!r} must be finite")
        entry = self._index.get(id(tree))
        if entry is not None and entry[0] is tree:
            index = entry[1]
            target.add_coefficient(index, coefficient)
        else:
            finite = (tree.all_finite() if isinstance(tree, TreeGroup)
                      else np.isfinite(tree.value).all())
            if not finite:
                raise PluginError(f"tree at iteration {self.iteration} has non-finite leaf "
                                  "values")
            index = self.ensemble.add(tree, coefficient if target.is_model else 0.0)
            self._index[id(tree)] = (tree, index)
            if not target.is_model:
                target.add_coefficient(index, coefficient)
        if coefficient != 0.0:
            self._add_scores(target, tree, coefficient)
        return index

    def _all_leaves(self, tree, fitted: _Fitted) -> None:
        """Complete a sampled depthwise fit's leaves to every training row (kept)."""
        fitted.node = self.grower.apply(tree, known=(fitted.rows, fitted.node))
        fitted.rows, fitted.full, fitted.walk_others = self._all_rows, True, False

    def _add_scores(self, target: Tracked, tree, coefficient: float) -> None:
        """``scores += coefficient * tree(x)`` on the training rows and validation sets."""
        train = target.train_scores()
        parts = tree.trees if isinstance(tree, TreeGroup) else [tree]
        for k, part in enumerate(parts):
            self._add_train_scores(train[k], part, coefficient)
        if self.evals:
            coef = np.array([coefficient])
            for ev, scores in zip(self.evals, target.eval_scores()):
                self.ensemble.add_trees_binned(ev.X_binned, scores, [tree], coef,
                                               self.n_threads, ev.columns)
        if target.is_model:
            self._raw_version += 1

    def _add_train_scores(self, train: np.ndarray, tree, coefficient: float) -> None:
        """``train += coefficient * tree(x)`` for one scalar tree and its output's scores."""
        fitted = self._fit_info(tree)
        linear = has_linear(tree)
        if fitted is not None and fitted.walk_others and (fitted.walked or linear):
            # added again (another coefficient or tracked model), or its linear parts need
            # every row's leaf: keep every row's leaf
            self._all_leaves(tree, fitted)
        if fitted is not None and fitted.full:
            _predictor.add_leaf_values(train, fitted.rows, fitted.node, tree.value,
                                       coefficient, self.n_threads)
            if linear:
                linear_leaves.add_tree(tree, self.grower.raw_columns, fitted.rows,
                                       fitted.node, coefficient, train, self.n_threads)
        elif fitted is not None and fitted.walk_others:
            # the first addition walks the other rows and adds their values as it goes
            self.grower.add_values(tree, coefficient, train, known=(fitted.rows, fitted.node))
            fitted.walked = True
        elif fitted is not None and fitted.output is not None:
            train += coefficient * fitted.output
        else:
            self.ensemble.add_scalar_trees_binned(self.X_binned, train, [tree],
                                                  np.array([coefficient]), self.n_threads,
                                                  self.grower.raw_columns)

    def scale_model(self, factor: float) -> None:
        """Multiply the bias and every coefficient (and all running raw scores) by ``factor``."""
        if not math.isfinite(factor):
            raise ValueError(f"factor={factor!r} must be finite")
        self.ensemble.scale(factor)
        _scale(self._raw, factor, self._offset)
        self._raw_version += 1
        for ev in self.evals:
            _scale(ev.raw, factor, ev.offset)

    def set_coefficients(self, indices: Any, values: Any) -> None:
        """Set the coefficients of some of the model's trees: ``c[indices] = values``.

        For update rules that reweight earlier trees (DART's normalisation of its dropped
        trees, a random forest's ``1/k``). The training and validation scores follow: when
        every tree's coefficient is multiplied by one common factor, the model's part of
        the scores (without bias and offsets) is multiplied by it, in ``O(n_rows)``;
        otherwise each changed tree adds ``(new - old) * tree(x)`` by one prediction pass
        over the changed trees. The bias and auxiliary tracked models are left as they
        are. Like :meth:`combine`, it rewrites coefficients, so the model keeps no scale
        history (staged predictions are then prefixes with the final coefficients).

        Parameters
        ----------
        indices : array-like of int
            Distinct indices of the model's terms, ``0 .. n_trees - 1``.
        values : float or array-like of float
            The new coefficients (one per index, or one for all), finite.

        Raises
        ------
        ValueError
            On indices out of range or repeated, or non-finite values.
        """
        n = self.ensemble.n_trees
        idx = np.asarray(indices)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise ValueError(f"{self.update_name}: set_coefficients indices must be a 1-D "
                             f"sequence of ints, got {indices!r}")
        idx = idx.astype(np.intp)
        if idx.size and (idx.min() < 0 or idx.max() >= n or np.unique(idx).size != idx.size):
            raise ValueError(f"{self.update_name}: set_coefficients indices must be distinct "
                             f"tree indices in [0, {n}), got {idx.tolist()}")
        new_values = np.broadcast_to(np.asarray(values, dtype=np.float64), idx.shape)
        if not np.all(np.isfinite(new_values)):
            raise ValueError(f"{self.update_name}: set_coefficients values must be finite, "
                             f"got {np.asarray(values).tolist()!r}")
        coef = self.ensemble.coef.copy()
        old = coef[idx]
        changed = new_values != old
        if not np.any(changed):
            return
        new = coef.copy()
        new[idx] = new_values
        ratio = None
        if idx.size == n and np.all(old != 0):
            ratios = new_values / old
            if np.all(ratios == ratios[0]):
                ratio = float(ratios[0])
        bias = self.ensemble.bias_array[:, None]
        sets = [(self.X_binned, self._raw, self._offset, self.grower.raw_columns)]
        sets += [(ev.X_binned, ev.raw, ev.offset, ev.columns) for ev in self.evals]
        if ratio is not None:
            for _, scores, offset, _ in sets:
                if offset is not None:
                    scores -= offset
                scores -= bias
                scores *= ratio
                scores += bias
                if offset is not None:
                    scores += offset
        else:
            where = idx[changed]
            trees = [self.ensemble.trees[i] for i in where]
            delta = new_values[changed] - old[changed]
            for X_binned, scores, _, columns in sets:
                self.ensemble.add_trees_binned(X_binned, scores[0] if self.n_outputs == 1
                                               else scores, trees, delta, self.n_threads,
                                               columns)
        self.ensemble.coef = new
        self._raw_version += 1

    # -- tracked models ------------------------------------------------------------------------
    def _tracked(self, obj: Any, what: str) -> Tracked:
        """``obj`` as a tracked model of this fit (None: the model)."""
        if obj is None:
            return self._model
        if not (isinstance(obj, Tracked) and obj._ctx is self):
            raise TypeError(f"{self.update_name}: {what} got {obj!r}, which is not a tracked "
                            "model of this fit; use ctx.model or one made by ctx.track()")
        return obj

    @property
    def tracks(self) -> List[Tracked]:
        """The auxiliary tracked models of this fit, in creation order."""
        return list(self._tracks.values())

    def track(self, name: str, like: Optional[Tracked] = None) -> Tracked:
        """A new auxiliary tracked model, a copy of ``like`` (default: the model).

        Parameters
        ----------
        name : str
            Unique within the fit (``"model"`` is taken); used in error messages.
        like : tracked model, optional
            The model to copy (bias, coefficients and scores).
        """
        if not isinstance(name, str) or not name or name == "model" or name in self._tracks:
            raise ValueError(f"{self.update_name}: track name {name!r} is invalid or already "
                             "used; expected a new non-empty string other than 'model'")
        source = self._tracked(like, "track")
        new = self._tracks[name] = Tracked(self, name)
        new.assign(source.bias, source.coef_array(), source.train_scores().copy(),
                   [scores.copy() for scores in source.eval_scores()])
        return new

    def combine(self, target: Tracked, terms: Sequence[Tuple[float, Tracked]]) -> None:
        """Set ``target`` to ``sum_i w_i * m_i`` over ``terms = [(w_i, m_i), ...]``.

        Bias, coefficients, training and validation scores are combined alike, in
        ``O(n_trees + n_rows + n_validation_rows)``: no prediction pass. ``target`` may be
        one of the terms; when it is ``ctx.model`` the model being trained is rewritten.
        """
        target = self._tracked(target, "combine")
        pairs = []
        for term in terms:
            if not (isinstance(term, tuple) and len(term) == 2):
                raise TypeError(f"{self.update_name}: combine terms must be (weight, tracked "
                                f"model) pairs, got {term!r}")
            weight = float(term[0])
            if not math.isfinite(weight):
                raise ValueError(f"{self.update_name}: combine weight {term[0]!r} must be "
                                 "finite")
            pairs.append((weight, self._tracked(term[1], "combine")))
        if not pairs:
            raise ValueError(f"{self.update_name}: combine needs at least one term")
        bias = sum(w * np.asarray(m.bias, dtype=np.float64) for w, m in pairs)
        coef = _lincomb([(w, m.coef_array()) for w, m in pairs])
        train = _lincomb([(w, m.train_scores()) for w, m in pairs])
        evals = [_lincomb([(w, m.eval_scores()[i]) for w, m in pairs])
                 for i in range(len(self.evals))]
        total = sum(w for w, _ in pairs)
        if total != 1.0:            # every model's scores hold the offsets once
            for scores, offset in zip([train, *evals],
                                      [self._offset, *(ev.offset for ev in self.evals)]):
                if offset is not None:
                    scores += (1.0 - total) * offset
        target.assign(bias, coef, train, evals)


def _output_tree(tree, output: int, n_outputs: int):
    """Output ``output`` of a vector-leaf tree (``value`` (n_nodes, K)) as a scalar tree of
    the same structure, with its own copies of the arrays and ``1/K`` of the gains."""
    kwargs = {}
    for f in fields(tree):
        if f.init:
            v = getattr(tree, f.name)
            kwargs[f.name] = v.copy() if isinstance(v, np.ndarray) else v
    kwargs["value"] = np.ascontiguousarray(tree.value[:, output])
    kwargs["gain"] = tree.gain / n_outputs
    return type(tree)(**kwargs)


def _scale(scores: np.ndarray, factor: float, offset: Optional[np.ndarray]) -> None:
    """Scale the model's part of ``scores`` in place (the offsets stay)."""
    if offset is None:
        scores *= factor
    else:
        scores -= offset
        scores *= factor
        scores += offset


def _outputs(values: np.ndarray, shape: Tuple[int, int], what: str,
             allow_shared: bool = False) -> np.ndarray:
    """Per-output derivatives (n_rows, n_outputs) as output-major rows (n_outputs, n_rows),
    contiguous (no copy for the context's own arrays); with ``allow_shared`` also (n_rows,),
    one array for every output, as (1, n_rows)."""
    arr = np.asarray(values, dtype=np.float64)
    if allow_shared and arr.shape == shape[:1]:
        return np.ascontiguousarray(arr[None, :])
    if arr.shape != shape:
        raise ValueError(f"{what} must have shape {shape}"
                         + (f" or {shape[:1]}" if allow_shared else "") + f", got {arr.shape}")
    return np.ascontiguousarray(arr.T)


def _row_norms(values: np.ndarray, shape: Tuple[int, int], what: str) -> np.ndarray:
    """The Euclidean norm of every row's vector of derivatives, shape (n_rows,)."""
    rows = _outputs(values, shape, what)
    return np.sqrt(np.einsum("kn,kn->n", rows, rows))


def _shared_leaves(tree) -> np.ndarray:
    """For every entry of ``tree.value``, the entry whose value it shares: itself, except
    in a symmetric tree, whose leaves of one node share its value (a node where a level's
    split was not valid was carried down whole, its rows following the split); the grower
    keeps those groups as ``tree.value_group``."""
    group = getattr(tree, "value_group", None)
    return np.arange(tree.value.size) if group is None else group


def _leaf_values(loss: Loss, returned: Any, n_leaves: int, iteration: int) -> np.ndarray:
    """Validate what ``loss.renew_leaves`` returned: ``n_leaves`` finite numbers."""
    values = returned if isinstance(returned, np.ndarray) else None
    if values is None or values.shape != (n_leaves,) or values.dtype.kind not in "fiu":
        got = (f"{values.dtype} values of shape {values.shape}" if values is not None
               else type(returned).__name__)
        raise PluginError(f"loss {checks.label(loss)!r}: renew_leaves returned {got} at "
                          f"iteration {iteration}; expected a float array of shape "
                          f"({n_leaves},), one value per leaf")
    values = values.astype(np.float64, copy=False)
    bad = int(np.count_nonzero(~np.isfinite(values)))
    if bad:
        raise PluginError(f"loss {checks.label(loss)!r}: renew_leaves returned {bad} "
                          f"non-finite leaf values (of {n_leaves}) at iteration {iteration}")
    return values
