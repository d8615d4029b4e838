"""The boosting loop: an update rule's steps, the losses recorded after each, callbacks and
early stopping."""
from __future__ import annotations

import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from ..plugin import checks
from ..plugin.api import UpdateRule
from ..plugin.registry import PluginError
from .callbacks import Callback, IterationInfo
from .context import BoostingContext
from .evaluation import Curves, Evaluator
from .params import MAX_TREES


def _check_consistent(ctx: BoostingContext, update_name: str) -> None:
    """Every tracked model's scores must equal its prediction (``BOOSTLIB_PLUGIN_CHECKS=full``).

    Checks the model being trained on the training rows and on every validation set, then the
    auxiliary tracked models (``ctx.track``) the same way.
    """
    trees = ctx.ensemble.trees
    for tracked in [ctx.model, *ctx.tracks]:
        sets = [("training", ctx.X_binned, tracked.train_scores(), ctx.grower.raw_columns)]
        sets += [(f"validation set {ev.name!r}", ev.X_binned, scores, ev.columns)
                 for ev, scores in zip(ctx.evals, tracked.eval_scores())]
        coef = tracked.coef_array().copy()
        for what, X_binned, scores, columns in sets:
            expected = np.repeat(np.reshape(tracked.bias, (-1, 1)), X_binned.shape[1], axis=1)
            if trees:
                ctx.ensemble.add_trees_binned(X_binned, expected, trees, coef, ctx.n_threads,
                                              columns)
            if not np.allclose(scores, expected, rtol=1e-9, atol=1e-9):
                worst = float(np.max(np.abs(scores - expected)))
                whose = "model's" if tracked.is_model else f"tracked model {tracked.name!r}'s"
                raise PluginError(f"update rule {update_name!r} left the model inconsistent "
                                  f"at iteration {ctx.iteration}: {what} scores differ from "
                                  f"the {whose} prediction by up to {worst:.3g}")


def _without_zero_tail(n_trees: int, coef: np.ndarray) -> int:
    """Number of trees once trailing trees of coefficient exactly 0 are dropped (e.g. the
    momentum tree AGBM fitted in the best iteration, which the best model does not use)."""
    nonzero = np.flatnonzero(np.asarray(coef[:n_trees]) != 0.0)
    return int(nonzero[-1]) + 1 if nonzero.size else 0


#: Seconds between two checks of a fit's thread count (``run``'s ``threads``).
THREAD_CHECK_S = 1.0


def run(ctx: BoostingContext, update: UpdateRule, callbacks: Sequence[Callback] = (),
        evaluator: Optional[Evaluator] = None,
        model_view: Optional[Callable[[], Any]] = None,
        threads: Optional[Callable[[], int]] = None) -> Tuple[Curves, int]:
    """Run the boosting iterations, calling ``callbacks`` after each one.

    Parameters
    ----------
    ctx : the fit's context.
    update : the update rule.
    callbacks : :class:`boostlib.callbacks.Callback` instances; training stops after an
        iteration where one of them returns True. When a callback marked a best state
        (:meth:`~boostlib.callbacks.IterationInfo.mark_best`, as early stopping does)
        before the last iteration, the model is truncated to it.
    evaluator : what to record (default: the loss only).
    model_view : returns the model being trained, for callbacks (``IterationInfo.model``).
    threads : returns the thread count the fit should run on now; called before an
        iteration once :data:`THREAD_CHECK_S` seconds have passed since the last call
        (default: the count ``ctx`` started with, throughout).

    Returns
    -------
    evals_result : ``{"train": {loss_name: [...]}, eval_name: {name: [...]}}``: the mean
        loss after each iteration on the training rows (with their user weights), and the
        loss and metrics on each validation set (every iteration that ran, also after a
        truncation).
    best_iteration : 0-based iteration of the best primary score on the last validation
        set, or the last iteration without validation sets.

    Iterations are numbered from ``ctx.first_iteration`` (a continued fit counts on from the
    model it continues; its curves hold its own iterations only). ``ctx.completed_iterations``
    is set to the number of iterations the final model holds (after a truncation, up to the
    best state), counting those of a continued model.
    """
    if evaluator is None:
        evaluator = Evaluator(ctx.loss, [], [ev.name for ev in ctx.evals])
    result = evaluator.curves
    marked: List[Any] = [None]

    def mark_best() -> None:
        marked[0] = (ctx.iteration, ctx.ensemble.n_trees, ctx.ensemble.bias,
                     ctx.ensemble.coef.copy())

    def info(it: int) -> IterationInfo:
        return IterationInfo(it, ctx.n_iterations, evaluator.primary, result,
                             ctx.ensemble.n_trees, mark_best,
                             dict(evaluator.higher_is_better), model_view,
                             ctx.first_iteration)

    update_name = update.name or type(update).__name__
    ctx.update_name = f"update rule {update_name!r}"
    if ctx.sampler is not None:
        with checks.blame("sampler", ctx.sampler, "begin"):
            ctx.sampler.begin(ctx)
    with checks.blame("update rule", update, "begin"):
        update.begin(ctx)
    for cb in callbacks:
        cb.on_fit_begin(info(-1))
    it = ctx.first_iteration - 1
    checked = time.monotonic()
    for it in range(ctx.first_iteration, ctx.n_iterations):
        if threads is not None and time.monotonic() - checked >= THREAD_CHECK_S:
            n_threads = threads()
            if n_threads != ctx.n_threads:
                ctx.set_n_threads(n_threads)
            checked = time.monotonic()
        ctx.iteration = it
        ctx._fitted.clear()
        n_before = ctx.ensemble.n_trees
        with checks.blame("update rule", update, "step", it):
            update.step(ctx)
        if ctx.ensemble.n_trees < n_before:
            raise PluginError(f"update rule {update_name!r} removed trees at iteration {it}")
        if ctx.ensemble.n_trees * ctx.n_outputs > MAX_TREES:
            raise ValueError(f"update rule {update_name!r} brought the model to "
                             f"{ctx.ensemble.n_trees * ctx.n_outputs} trees at iteration {it}, "
                             f"more than MAX_TREES = {MAX_TREES}; lower n_estimators")
        if ctx.checks == "full":
            _check_consistent(ctx, update_name)
        evaluator.record(ctx, it)
        if callbacks:
            current = info(it)
            stop = [bool(cb.on_iteration(current)) for cb in callbacks]   # every one runs
            if any(stop):
                break
    if not np.isfinite(ctx.raw.sum()):
        raise PluginError(f"update rule {update_name!r} produced non-finite raw scores")
    ctx.completed_iterations = it + 1
    if marked[0] is not None and marked[0][0] < it:
        _, n_trees, bias, coef = marked[0]
        # the saved state is the whole coefficient vector (AGBM rewrites earlier trees'
        # coefficients); trees the best model did not use yet are dropped
        ctx.ensemble.truncate(_without_zero_tail(n_trees, coef), bias, coef)
        ctx.completed_iterations = marked[0][0] + 1
    for cb in callbacks:
        cb.on_fit_end(info(it))
    best_iter = evaluator.best_iteration
    if best_iter < 0:
        best_iter = it
    return result, best_iter
