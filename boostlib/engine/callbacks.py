"""Callbacks: code that runs after every boosting iteration (progress, early stopping, yours).

A callback is either a plain callable ``fn(info) -> bool | None`` or a :class:`Callback`
subclass. Returning True from ``fn`` / :meth:`Callback.on_iteration` stops training after
that iteration. ``fit(..., callbacks=[...])`` takes a list of them; ``verbose=1`` adds a
:class:`ProgressBar` and ``early_stopping_rounds`` an :class:`EarlyStopping`.
"""
from __future__ import annotations

import logging
import math
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, TextIO, Tuple, Union

__all__ = ["IterationInfo", "Callback", "EarlyStopping", "ProgressBar", "CallbackLike"]


@dataclass
class IterationInfo:
    """What a callback sees after an iteration.

    Attributes
    ----------
    iteration : int
        0-based iteration that just ran (-1 in ``on_fit_begin``).
    n_iterations : int
        Iterations requested (``n_estimators``); in a continued fit (``init_model``,
        ``warm_start``) the number the last iteration will have, counting the continued
        model's (iterations then run from ``first_iteration`` to ``n_iterations - 1``).
    metric : str
        Name of the primary score: the first ``eval_metric``, else the loss. Early stopping
        watches it, on the last validation set by default.
    evals_result : dict
        ``{"train": {loss: [...]}, "valid_0": {loss: [...], metric: [...]}, ...}`` so far
        (do not modify): the loss on every data set, the metrics on the validation sets.
    n_trees : int
        Trees in the model now.
    higher_is_better : dict
        The direction of every recorded score, by name.
    first_iteration : int
        The first iteration of this fit: 0, or in a continued fit the number of iterations
        of the model it continues.
    """

    iteration: int
    n_iterations: int
    metric: str
    evals_result: Dict[str, Dict[str, List[float]]]
    n_trees: int
    _mark_best: Callable[[], None] = field(default=lambda: None, repr=False)
    higher_is_better: Dict[str, bool] = field(default_factory=dict)
    _model_view: Optional[Callable[[], Any]] = field(default=None, repr=False)
    first_iteration: int = 0

    @property
    def model(self) -> Any:
        """The :class:`boostlib.Model` being trained, as it is after this iteration. It is a
        live view that later iterations change: predict with it now, or save it, to keep
        a snapshot."""
        if self._model_view is None:
            raise AttributeError("this IterationInfo has no model")
        return self._model_view()

    def latest(self, metric: Optional[str] = None) -> Dict[str, float]:
        """The last value of ``metric`` (default: the primary score) on every data set that
        records it, e.g. ``{"valid_0": 0.93}``."""
        metric = self.metric if metric is None else metric
        return {name: curves[metric][-1] for name, curves in self.evals_result.items()
                if curves.get(metric)}

    def evaluation_results(self) -> List[Tuple[str, str, float, bool]]:
        """``(data set, score name, last value, higher is better)`` of every recorded score
        (LightGBM's ``evaluation_result_list``)."""
        return [(data, name, values[-1], self.higher_is_better.get(name, False))
                for data, curves in self.evals_result.items()
                for name, values in curves.items() if values]

    def mark_best(self) -> None:
        """Remember the model as it is now: when training stops early, the model is
        truncated to the last state marked (used by :class:`EarlyStopping`)."""
        self._mark_best()


class Callback:
    """Base class of stateful callbacks; override what you need."""

    def on_fit_begin(self, info: IterationInfo) -> None:
        """Called once before the first iteration."""

    def on_iteration(self, info: IterationInfo) -> Optional[bool]:
        """Called after every iteration; return True to stop training."""
        return None

    def on_fit_end(self, info: IterationInfo) -> None:
        """Called once after the last iteration (also after an early stop)."""


CallbackLike = Union[Callback, Callable[[IterationInfo], Optional[bool]]]


class EarlyStopping(Callback):
    """Stop when a score on a data set has not improved for ``rounds`` iterations.

    Parameters
    ----------
    rounds : int
        Patience, >= 1.
    data_name : str, optional
        Which recorded data set to watch (default: the last validation set).
    min_delta : float, default 0.0
        An improvement must beat the best score by more than this.
    metric_name : str, optional
        Which recorded score to watch (default: the primary one, ``IterationInfo.metric``:
        the first ``eval_metric``, else the loss). Its direction (lower or higher is
        better) comes from the metric.

    Attributes
    ----------
    best_iteration : int
        0-based iteration of the best score so far (-1 before any).
    best_score : float
        The watched score at ``best_iteration``.
    """

    def __init__(self, rounds: int, data_name: Optional[str] = None, min_delta: float = 0.0,
                 metric_name: Optional[str] = None):
        if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
            raise ValueError(f"EarlyStopping: rounds={rounds!r} is invalid; expected an int "
                             ">= 1")
        if not (isinstance(min_delta, (int, float)) and math.isfinite(min_delta)
                and min_delta >= 0):
            raise ValueError(f"EarlyStopping: min_delta={min_delta!r} is invalid; expected a "
                             "number >= 0")
        self.rounds = rounds
        self.data_name = data_name
        self.min_delta = float(min_delta)
        self.metric_name = metric_name
        self.best_iteration = -1
        self.best_score = math.inf

    def on_fit_begin(self, info: IterationInfo) -> None:
        names = [n for n in info.evals_result if n != "train"]
        if self.data_name is None:
            if not names:
                raise ValueError("early stopping needs a validation set (early_stopping_rounds, "
                                 "EarlyStopping): pass eval_set to fit")
            self._name = names[-1]
        elif self.data_name not in info.evals_result:
            raise ValueError(f"EarlyStopping: data_name={self.data_name!r} is not recorded; "
                             f"expected one of {list(info.evals_result)}")
        else:
            self._name = self.data_name
        self._metric = info.metric if self.metric_name is None else self.metric_name
        if self._metric not in info.evals_result[self._name]:
            raise ValueError(f"EarlyStopping: metric_name={self._metric!r} is not recorded on "
                             f"{self._name!r}; expected one of "
                             f"{list(info.evals_result[self._name])}")
        self._sign = -1.0 if info.higher_is_better.get(self._metric, False) else 1.0
        self.best_iteration, self.best_score = -1, math.inf

    def on_iteration(self, info: IterationInfo) -> bool:
        value = info.evals_result[self._name][self._metric][-1]
        if self.best_iteration < 0 or \
                self._sign * value < self._sign * self.best_score - self.min_delta:
            self.best_score, self.best_iteration = value, info.iteration
            info.mark_best()
            return False
        return info.iteration - self.best_iteration >= self.rounds

    def on_fit_end(self, info: IterationInfo) -> None:
        kept = self.best_iteration - info.first_iteration + 1
        if info.iteration > self.best_iteration >= 0 and kept < FEW_ITERATIONS:
            warnings.warn(f"early stopping kept {kept} iteration(s): {self._metric} on "
                          f"{self._name!r} was best at iteration {self.best_iteration} and "
                          f"did not improve in the {self.rounds} after it. A score that is "
                          "best so early often means an eval set too small to rank the "
                          "iterations, or a learning_rate too high; check the curve "
                          "(evals_result_)", UserWarning, stacklevel=2)


#: Early stopping that keeps fewer iterations than this warns.
FEW_ITERATIONS = 5

#: The logger of the library's messages.
LOGGER = logging.getLogger("boostlib")


def log_info(message: str) -> None:
    """``message`` to the ``"boostlib"`` logger at INFO when the application configured
    logging (a handler on it or an ancestor), else to stderr, so that ``verbose`` shows
    something either way."""
    if LOGGER.hasHandlers():
        LOGGER.info(message)
    else:
        print(message, file=sys.stderr, flush=True)


class ProgressBar(Callback):
    """Progress of the fit with the current losses and metrics.

    With ``period`` None, a tqdm bar when tqdm is installed, otherwise a plain log line every
    ``max(1, n_iterations // 10)`` iterations; with ``period=N``, a log line every ``N``
    iterations. The last iteration always gets its line.

    The log lines go to the ``logging`` logger ``"boostlib"`` (level INFO) when the
    application has configured logging (so it can route or silence them), else to stderr.

    Parameters
    ----------
    stream : file-like, optional
        Write the bar or the lines to this stream instead.
    use_tqdm : bool, optional
        Force (True) or forbid (False) tqdm; default: use it when importable (and no
        ``period`` is given).
    period : int, optional
        Log every ``period`` iterations instead of showing a bar (``verbose=N``).
    """

    def __init__(self, stream: Optional[TextIO] = None, use_tqdm: Optional[bool] = None,
                 period: Optional[int] = None):
        if period is not None and (isinstance(period, bool) or not isinstance(period, int)
                                   or period < 1):
            raise ValueError(f"ProgressBar: period={period!r} is invalid; expected an int >= 1")
        self.stream = stream
        self.use_tqdm = use_tqdm
        self.period = period
        self._bar: Any = None

    def _out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    def on_fit_begin(self, info: IterationInfo) -> None:
        self._bar = None
        self._printed = -1
        want = self.use_tqdm if self.period is None else False
        if want is None or want:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                if want:
                    raise ImportError("ProgressBar(use_tqdm=True) needs tqdm: pip install "
                                      "tqdm") from None
            else:
                self._bar = tqdm(total=info.n_iterations, initial=info.first_iteration,
                                 file=self._out(), unit="it", desc="boostlib", leave=True)

    def _metrics(self, info: IterationInfo) -> Dict[str, str]:
        return {f"{data} {name}": f"{value:.6g}"
                for data, name, value, _ in info.evaluation_results()}

    def on_iteration(self, info: IterationInfo) -> None:
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix(self._metrics(info), refresh=False)
            return
        every = self.period or max(1, info.n_iterations // 10)
        if info.iteration % every == 0 or info.iteration == info.n_iterations - 1:
            self._line(info)

    def _line(self, info: IterationInfo) -> None:
        parts = [f"[boostlib] iteration {info.iteration + 1}/{info.n_iterations}"]
        parts += [f"{k}={v}" for k, v in self._metrics(info).items()]
        line = "  ".join(parts)
        if self.stream is not None:
            print(line, file=self.stream, flush=True)
        else:
            log_info(line)
        self._printed = info.iteration

    def on_fit_end(self, info: IterationInfo) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif info.iteration >= 0 and getattr(self, "_printed", -1) != info.iteration:
            self._line(info)                # the last iteration of an early stop


def as_callback(obj: CallbackLike, index: int) -> Callback:
    """Wrap a plain callable; refuse anything else with a clear error."""
    if isinstance(obj, Callback):
        return obj
    if callable(obj):
        return _FunctionCallback(obj)
    raise TypeError(f"callbacks[{index}]={obj!r} is invalid; expected a boostlib.callbacks."
                    "Callback or a callable taking an IterationInfo")


class _FunctionCallback(Callback):
    def __init__(self, fn: Callable[[IterationInfo], Optional[bool]]):
        self.fn = fn

    def on_iteration(self, info: IterationInfo) -> Optional[bool]:
        return self.fn(info)
