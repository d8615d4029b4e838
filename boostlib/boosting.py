"""The boosting loop and the context it hands to update rules."""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _plugin_checks as checks
from ._kernels import _predictor, _sampling
from ._random import stream_rng
from .api import Loss, SampleResult, Sampler, UpdateRule
from .ensemble import Ensemble
from .registry import PluginError
from .tree import TreeGrower

LEAF_ESTIMATIONS = ("newton", "gradient")
_NO_WEIGHTS = np.empty(0)


@dataclass
class EvalSet:
    """A validation set, binned once, with its running raw scores."""

    name: str
    X_binned: np.ndarray
    y: np.ndarray
    weight: Optional[np.ndarray]
    raw: np.ndarray


@dataclass
class _Fitted:
    rows: np.ndarray
    node: np.ndarray
    full: bool


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
    """

    def __init__(self, X_binned: np.ndarray, y: np.ndarray, sample_weight: Optional[np.ndarray],
                 loss: Loss, sampler: Optional[Sampler], grower: TreeGrower, ensemble: Ensemble,
                 seed: np.random.SeedSequence, learning_rate: float, n_iterations: int,
                 leaf_estimation: str, random_strength: float, evals: List[EvalSet],
                 n_threads: int):
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
        self._rngs: Dict[str, np.random.Generator] = {}
        self.learning_rate = float(learning_rate)
        self.n_iterations = int(n_iterations)
        self.iteration = 0
        self.n_rows = int(y.shape[0])
        self.leaf_estimation = leaf_estimation
        self.random_strength = float(random_strength)
        self.evals = evals
        self.n_threads = n_threads
        self._raw = np.full(self.n_rows, ensemble.bias)
        self._raw_version = 0           # bumped whenever the training scores change
        self._train_loss: Tuple[int, float] = (-1, math.nan)
        self._all_rows = np.arange(self.n_rows, dtype=np.int32)
        # Trees fitted during the current iteration, with the leaf of every fitted row.
        self._fitted: Dict[int, Tuple[Any, _Fitted]] = {}

    # -- state -------------------------------------------------------------------------------
    @property
    def raw(self) -> np.ndarray:
        """Current raw scores of the training rows (read-only view)."""
        view = self._raw.view()
        view.flags.writeable = False
        return view

    @property
    def bias(self) -> float:
        return self.ensemble.bias

    @property
    def coefficients(self) -> np.ndarray:
        return self.ensemble.coef.copy()

    def train_loss(self, raw: Optional[np.ndarray] = None) -> float:
        """Weighted mean training loss at ``raw`` (default: the current model, cached)."""
        if raw is not None:
            return mean_loss(self.loss, self._y_view, np.ascontiguousarray(raw, np.float64),
                             self.sample_weight, self.n_threads, "the training set",
                             self.iteration)
        if self._train_loss[0] != self._raw_version:
            self._train_loss = (self._raw_version, mean_loss(
                self.loss, self._y_view, self.raw, self.sample_weight, self.n_threads,
                "the training set", self.iteration))
        return self._train_loss[1]

    def rng(self, stream: str) -> np.random.Generator:
        """The generator of a named random stream (e.g. "sampler", "split_noise").

        Streams are independent of each other and depend only on ``random_state`` and the
        name, never on ``n_jobs`` or on the order streams are first requested.
        """
        if stream not in self._rngs:
            self._rngs[stream] = stream_rng(self._seed, stream)
        return self._rngs[stream]

    # -- derivatives and sampling --------------------------------------------------------------
    def gradients(self, raw: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
        """Loss derivatives at ``raw`` (default: the current model), times the row weights.

        With ``leaf_estimation="gradient"`` the returned hessian is the row weight (first-order
        boosting: split scores ``G^2/(W+l2)`` and leaves ``-G/(W+l2)``); with Newton leaves a
        loss whose hessian can be negative is floored at its ``hessian_floor``.
        """
        raw = self.raw if raw is None else np.ascontiguousarray(raw, dtype=np.float64)
        if raw.shape != (self.n_rows,):
            raise ValueError(f"raw must have shape ({self.n_rows},), got {raw.shape}")
        if raw.flags.writeable:         # the loss must not change the scores it is given
            raw = raw.view()
            raw.flags.writeable = False
        if self.checks == "full":
            g, h = np.full(self.n_rows, np.nan), np.full(self.n_rows, np.nan)
        else:
            g, h = np.empty(self.n_rows), np.empty(self.n_rows)
        returned = self.loss.gradient_hessian(self._y_view, raw, g, h, self.n_threads)
        g, h = checks.derivatives(self.loss, returned, g, h, self.iteration, self.checks)
        w = self.sample_weight
        if self.leaf_estimation == "gradient":
            h = np.ones(self.n_rows) if w is None else w.copy()
        elif self.loss.hessian_can_be_negative:
            np.maximum(h, self.loss.hessian_floor, out=h)
            if w is not None:
                h *= w
        elif w is not None:
            h *= w
        if w is not None:
            g *= w
        return g, h

    def sample(self, gradient: np.ndarray, hessian: np.ndarray) -> Optional[SampleResult]:
        """This iteration's rows from the sampler (None: every row, weight 1)."""
        if self.sampler is None:
            return None
        gv, hv = gradient.view(), hessian.view()    # samplers must not modify them
        gv.flags.writeable = hv.flags.writeable = False
        res = self.sampler.sample(gv, hv, self.rng("sampler"), self.iteration)
        return checks.sample(self.sampler, res, self.n_rows, self.checks)

    # -- trees ---------------------------------------------------------------------------------
    def fit_tree(self, gradient: np.ndarray, hessian: np.ndarray,
                 sample: Optional[SampleResult] = None, *,
                 split_gradient: Optional[np.ndarray] = None, leaf_noise_scale: float = 0.0):
        """Fit one tree to ``gradient``/``hessian`` (full-length, weights applied).

        Parameters
        ----------
        gradient, hessian : float64 arrays of shape (n_rows,).
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
        tree : ObliviousTree or DepthwiseTree with raw leaf values (not yet multiplied by
            any coefficient).
        """
        for arr, what in ((gradient, "gradient"), (hessian, "hessian"),
                          (split_gradient, "split_gradient")):
            if arr is not None and np.shape(arr) != (self.n_rows,):
                raise ValueError(f"{what} must have shape ({self.n_rows},)")
        if sample is None:
            rows, g, h = self._all_rows, gradient, hessian
            sg = split_gradient
        else:
            rows = np.ascontiguousarray(sample.indices, dtype=np.int32)
            w = _NO_WEIGHTS if sample.weights is None else np.ascontiguousarray(
                sample.weights, dtype=np.float64)
            g, h = self._gather(gradient, rows, w), self._gather(hessian, rows, w)
            sg = None if split_gradient is None else self._gather(split_gradient, rows, w)
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
        tree, node = self.grower.grow(
            rows, structure_g, h, leaf_gradient=None if sg is None else g,
            split_noise_std=noise_std, split_rng=self.rng("split_noise"),
            leaf_noise_scale=leaf_noise_scale, leaf_rng=self.rng("leaf_noise"),
            value_rows=self._all_rows if values_on_all else None,
            value_gradient=gradient, value_hessian=hessian)
        full = sample is None or values_on_all or rows.shape[0] == self.n_rows
        if not full and self.grower.policy == "depthwise":
            # every row's leaf in one row-major pass: cheaper than a prediction pass over
            # the feature-major matrix, and the scores then come from the leaf values
            node, full = self.grower.apply(tree), True
        if full:
            rows = self._all_rows
        self._fitted[id(tree)] = (tree, _Fitted(rows, node, full))
        return tree

    def _gather(self, values: np.ndarray, rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """``values[rows] * weights`` in one parallel pass."""
        out = np.empty(rows.size)
        _sampling.gather_scaled(np.ascontiguousarray(values, dtype=np.float64), rows, weights,
                                out, self.n_threads)
        return out

    def _fit_info(self, tree) -> Optional[_Fitted]:
        entry = self._fitted.get(id(tree))
        return entry[1] if entry is not None and entry[0] is tree else None

    def tree_output(self, tree) -> np.ndarray:
        """``tree(x)`` on every training row."""
        fitted = self._fit_info(tree)
        if fitted is not None and fitted.full:
            return tree.value[fitted.node]
        out = np.zeros(self.n_rows)
        self.ensemble.add_trees_binned(self.X_binned, out, [tree], np.ones(1), self.n_threads)
        return out

    def add_tree(self, tree, coefficient: float) -> int:
        """Add ``coefficient * tree`` to the model; return the tree's index."""
        if not math.isfinite(coefficient):
            raise ValueError(f"coefficient={coefficient!r} must be finite")
        if not np.all(np.isfinite(tree.value)):
            raise PluginError(f"tree at iteration {self.iteration} has non-finite leaf values")
        index = self.ensemble.add(tree, coefficient)
        self._raw_version += 1
        fitted = self._fit_info(tree)
        if fitted is not None and fitted.full:
            _predictor.add_leaf_values(self._raw, fitted.rows, fitted.node, tree.value,
                                       coefficient, self.n_threads)
        else:
            self.ensemble.add_trees_binned(self.X_binned, self._raw, [tree],
                                           np.array([coefficient]), self.n_threads)
        for ev in self.evals:
            self.ensemble.add_trees_binned(ev.X_binned, ev.raw, [tree], np.array([coefficient]),
                                           self.n_threads)
        return index

    def scale_model(self, factor: float) -> None:
        """Multiply the bias and every coefficient (and all running raw scores) by ``factor``."""
        if not math.isfinite(factor):
            raise ValueError(f"factor={factor!r} must be finite")
        self.ensemble.scale(factor)
        self._raw *= factor
        self._raw_version += 1
        for ev in self.evals:
            ev.raw *= factor


def mean_loss(loss: Loss, y: np.ndarray, raw: np.ndarray, weight: Optional[np.ndarray],
              n_threads: int, what: str, iteration: int) -> float:
    """The loss's weighted mean on one data set, validated.

    A loss that keeps the default :meth:`Loss.mean_loss` gets its ``loss()`` output checked
    for shape first (a wrong shape would otherwise broadcast silently).
    """
    if type(loss).mean_loss is Loss.mean_loss:
        values = checks.pointwise_loss(loss, loss.loss(y, raw), y.shape[0])
        value = float(np.average(values, weights=weight))
    else:
        value = loss.mean_loss(y, raw, weight, n_threads)
    return checks.mean_loss(loss, value, what, iteration)


def _check_consistent(ctx: BoostingContext, update_name: str) -> None:
    """Training scores must equal the model's prediction (``BOOSTLIB_PLUGIN_CHECKS=full``)."""
    expected = ctx.ensemble.predict_binned(ctx.X_binned, ctx.n_threads)
    if not np.allclose(ctx.raw, expected, rtol=1e-9, atol=1e-9):
        worst = float(np.max(np.abs(ctx.raw - expected)))
        raise PluginError(f"update rule {update_name!r} left the model inconsistent at "
                          f"iteration {ctx.iteration}: training scores differ from the "
                          f"model's prediction by up to {worst:.3g}")


def run(ctx: BoostingContext, update: UpdateRule, early_stopping_rounds: Optional[int],
        verbose: int = 0) -> Tuple[Dict[str, Dict[str, List[float]]], int]:
    """Run the boosting iterations.

    Returns
    -------
    evals_result : ``{"train": {loss_name: [...]}, eval_name: {loss_name: [...]}}``: the mean
        loss after each iteration on the training rows (with their user weights) and on each
        validation set.
    best_iteration : 0-based iteration of the best score on the last validation set (the
        model is truncated to it when early stopping triggers; ``evals_result`` keeps every
        iteration that ran), or the last iteration.
    """
    metric = ctx.loss.name or type(ctx.loss).__name__
    result = {"train": {metric: []}, **{ev.name: {metric: []} for ev in ctx.evals}}
    best_score, best_iter, best_state = math.inf, -1, None
    update_name = update.name or type(update).__name__
    if ctx.sampler is not None:
        ctx.sampler.begin(ctx)
    update.begin(ctx)
    it = -1
    for it in range(ctx.n_iterations):
        ctx.iteration = it
        ctx._fitted.clear()
        n_before = ctx.ensemble.n_trees
        update.step(ctx)
        if ctx.ensemble.n_trees < n_before:
            raise PluginError(f"update rule {update_name!r} removed trees at iteration {it}")
        if ctx.checks == "full":
            _check_consistent(ctx, update_name)
        result["train"][metric].append(ctx.train_loss())
        for ev in ctx.evals:
            result[ev.name][metric].append(mean_loss(ctx.loss, ev.y, ev.raw, ev.weight,
                                                     ctx.n_threads, ev.name, it))
        if ctx.evals:
            score = result[ctx.evals[-1].name][metric][-1]
            if score < best_score:
                best_score, best_iter = score, it
                if early_stopping_rounds:
                    best_state = (ctx.ensemble.n_trees, ctx.ensemble.bias,
                                  ctx.ensemble.coef.copy())
            elif early_stopping_rounds and it - best_iter >= early_stopping_rounds:
                break
        if verbose and (it % max(1, ctx.n_iterations // 10) == 0 or it == ctx.n_iterations - 1):
            msg = f"[boostlib] iteration {it + 1}/{ctx.n_iterations}"
            for name, curves in result.items():
                msg += f"  {name} {metric}={curves[metric][-1]:.6g}"
            print(msg, file=sys.stderr)
    if not np.isfinite(ctx.raw.sum()):
        raise PluginError(f"update rule {update_name!r} produced non-finite raw scores")
    if early_stopping_rounds and best_state is not None and best_iter < it:
        ctx.ensemble.truncate(*best_state)
    if best_iter < 0:
        best_iter = it
    return result, best_iter
