"""What training records after every iteration: the loss on the training rows and the
validation sets, and the evaluation metrics (``eval_metric``) on the validation sets."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ..plugin import checks, registry
from ..plugin.api import METRIC_INPUTS, Metric
from ..plugin.registry import PluginError
from .loss_values import mean_loss
from .params import metric_specs

Curves = Dict[str, Dict[str, List[float]]]


def create_metrics(spec: Any, n_outputs: int, is_classification: bool) -> List[Metric]:
    """The metrics ``eval_metric`` names (or holds), each checked against the model's task."""
    metrics = []
    for item in metric_specs(spec):
        try:
            metric = _create(item)
        except PluginError as exc:
            raise PluginError(f"eval_metric: {exc}") from None
        if metric.reads not in METRIC_INPUTS:
            raise PluginError(f"metric {checks.label(metric)!r}: reads={metric.reads!r}; "
                              f"expected one of {METRIC_INPUTS}")
        with checks.blame("metric", metric, "check_task"):
            metric.check_task(n_outputs, is_classification)
        metrics.append(metric)
    return metrics


def _create(item: Any) -> Metric:
    """A metric from its spec: an instance, a registered name, or ``"name@k"`` (the metric
    created with ``k=k``, e.g. ``"ndcg@10"``)."""
    if isinstance(item, str) and "@" in item:
        name, _, k = item.partition("@")
        if not (k.isdigit() and int(k) > 0):
            raise PluginError(f"metric {item!r} is invalid; expected 'name@k' with a positive "
                              "integer k")
        return registry.create("metric", name, {"k": int(k)})
    return registry.create("metric", item)


class Evaluator:
    """Records the curves of one fit and knows its primary score.

    The training rows get the loss; every validation set gets the loss and the metrics (a
    metric named like the loss replaces the loss's curve there). The primary score, which
    early stopping watches and which defines the best iteration, is the first metric on the
    last validation set, or the loss without metrics.

    Parameters
    ----------
    loss : the fit's loss.
    metrics : the evaluation metrics, in ``eval_metric`` order.
    set_names : names of the validation sets.
    set_groups : the query boundaries of each validation set (None without groups), which
        the ranking metrics are bound to.
    """

    def __init__(self, loss: Any, metrics: Sequence[Metric], set_names: Sequence[str],
                 set_groups: Optional[Sequence[Optional[np.ndarray]]] = None):
        self.loss = loss
        self.metrics = list(metrics)
        groups = list(set_groups) if set_groups is not None else [None] * len(set_names)
        self._bound: Dict[str, List[Metric]] = {}
        for name, ptr in zip(set_names, groups):
            for m in self.metrics:
                if m.needs_groups and ptr is None:
                    raise ValueError(f"eval_metric {checks.label(m)!r} ranks within query "
                                     f"groups; validation set {name!r} has none (pass its "
                                     "group sizes: Dataset(..., group=) or eval_group=)")
            self._bound[name] = [m.bind_groups(ptr) if m.needs_groups else m
                                 for m in self.metrics]
        self.loss_name = loss.name or type(loss).__name__
        #: whether the loss has values to record (a function's derivatives may come alone)
        self.loss_values = bool(getattr(loss, "has_loss_values", True))
        self.metric_names = [checks.label(m) for m in self.metrics]
        #: name of the primary score (None: nothing to watch)
        self.primary = self.metric_names[0] if self.metrics else \
            self.loss_name if self.loss_values else None
        #: direction of every recorded score
        self.higher_is_better = {self.loss_name: False}
        self.higher_is_better.update({checks.label(m): bool(m.higher_is_better)
                                      for m in self.metrics})
        own = self.loss_values and self.loss_name not in self.metric_names
        valid = ([self.loss_name] if own else []) + self.metric_names
        self.curves: Curves = {"train": {self.loss_name: []} if self.loss_values else {}}
        for name in set_names:
            self.curves[name] = {n: [] for n in valid}
        self.best_iteration = -1
        self._best = math.nan

    def record(self, ctx: Any, iteration: int) -> None:
        """Append this iteration's values (``ctx``: the fit's BoostingContext)."""
        if self.loss_values:
            self.curves["train"][self.loss_name].append(ctx.train_loss())
        for ev in ctx.evals:
            raw = ctx._public(ev.raw)
            curves = self.curves[ev.name]
            if self.loss_values and self.loss_name not in self.metric_names:
                loss = self.loss if ev.loss is None else ev.loss
                curves[self.loss_name].append(mean_loss(loss, ev.y, raw, ev.weight,
                                                        ctx.n_threads, ev.name, iteration))
            inputs = _Inputs(self.loss, raw)
            for metric, name in zip(self._bound[ev.name], self.metric_names):
                with checks.blame("metric", metric, "evaluate", iteration):
                    value = metric(ev.y, inputs.get(metric.reads), ev.weight)
                curves[name].append(_checked(metric, value, ev.name, iteration))
        if ctx.evals and self.primary is not None:
            self._update_best(self.curves[ctx.evals[-1].name][self.primary][-1], iteration)

    def _update_best(self, score: float, iteration: int) -> None:
        better = (score > self._best if self.higher_is_better[self.primary]
                  else score < self._best)
        if self.best_iteration < 0 or better:
            self._best, self.best_iteration = score, iteration


class _Inputs:
    """The predictions metrics read, computed once per validation set and iteration."""

    def __init__(self, loss: Any, raw: np.ndarray):
        self.loss, self.raw = loss, raw
        self._response: Optional[np.ndarray] = None

    def get(self, reads: str) -> np.ndarray:
        if reads == "raw":
            return self.raw
        if self._response is None:
            self._response = checks.response(self.loss, self.raw)
        if reads == "response":
            return self._response
        p = self._response
        return (p > 0.5).astype(np.float64) if p.ndim == 1 else \
            np.argmax(p, axis=1).astype(np.float64)


def _checked(metric: Metric, value: Any, where: str, iteration: int) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise PluginError(f"metric {checks.label(metric)!r} returned "
                          f"{type(value).__name__}; expected a float") from None
    if math.isnan(out):
        raise PluginError(f"metric {checks.label(metric)!r} is NaN on {where} at iteration "
                          f"{iteration}")
    return out
