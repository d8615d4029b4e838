"""Callbacks: code that runs after every boosting iteration (progress, early stopping, yours).

A callback is either a plain callable ``fn(info) -> bool | None`` or a :class:`Callback`
subclass. Returning True from ``fn`` / :meth:`Callback.on_iteration` stops training after
that iteration. ``fit(..., callbacks=[...])`` takes a list of them; ``verbose=1`` adds a
:class:`ProgressBar` and ``early_stopping_rounds`` an :class:`EarlyStopping`.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, TextIO, Union

__all__ = ["IterationInfo", "Callback", "EarlyStopping", "ProgressBar", "CallbackLike"]


@dataclass
class IterationInfo:
    """What a callback sees after an iteration.

    Attributes
    ----------
    iteration : int
        0-based iteration that just ran (-1 in ``on_fit_begin``).
    n_iterations : int
        Iterations requested (``n_estimators``).
    metric : str
        Name of the recorded loss.
    evals_result : dict
        ``{"train": {metric: [...]}, "valid_0": {metric: [...]}, ...}`` so far (do not
        modify).
    n_trees : int
        Trees in the model now.
    """

    iteration: int
    n_iterations: int
    metric: str
    evals_result: Dict[str, Dict[str, List[float]]]
    n_trees: int
    _mark_best: Callable[[], None] = field(default=lambda: None, repr=False)

    def latest(self) -> Dict[str, float]:
        """The last recorded loss of every data set, e.g. ``{"train": 0.41, "valid_0": 0.45}``."""
        return {name: curves[self.metric][-1] for name, curves in self.evals_result.items()
                if curves[self.metric]}

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
    """Stop when a data set's loss has not improved for ``rounds`` iterations.

    Parameters
    ----------
    rounds : int
        Patience, >= 1.
    data_name : str, optional
        Which recorded data set to watch (default: the last validation set).
    min_delta : float, default 0.0
        An improvement must lower the loss by more than this.

    Attributes
    ----------
    best_iteration : int
        0-based iteration of the best loss so far (-1 before any).
    best_score : float
    """

    def __init__(self, rounds: int, data_name: Optional[str] = None, min_delta: float = 0.0):
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
        self.best_iteration, self.best_score = -1, math.inf

    def on_iteration(self, info: IterationInfo) -> bool:
        score = info.evals_result[self._name][info.metric][-1]
        if score < self.best_score - self.min_delta:
            self.best_score, self.best_iteration = score, info.iteration
            info.mark_best()
            return False
        return info.iteration - self.best_iteration >= self.rounds


class ProgressBar(Callback):
    """Progress of the fit with the current losses.

    A tqdm bar when tqdm is installed and ``stream`` is a terminal-like stream, otherwise a
    plain log line every ``max(1, n_iterations // 10)`` iterations (and at the end).

    Parameters
    ----------
    stream : file-like, default sys.stderr
    use_tqdm : bool, optional
        Force (True) or forbid (False) tqdm; default: use it when importable.
    """

    def __init__(self, stream: Optional[TextIO] = None, use_tqdm: Optional[bool] = None):
        self.stream = stream
        self.use_tqdm = use_tqdm
        self._bar: Any = None

    def _out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    def on_fit_begin(self, info: IterationInfo) -> None:
        self._bar = None
        want = self.use_tqdm
        if want is None or want:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                if want:
                    raise ImportError("ProgressBar(use_tqdm=True) needs tqdm: pip install "
                                      "tqdm") from None
            else:
                self._bar = tqdm(total=info.n_iterations, file=self._out(), unit="it",
                                 desc="boostlib", leave=True)

    def _metrics(self, info: IterationInfo) -> Dict[str, str]:
        return {f"{name} {info.metric}": f"{value:.6g}" for name, value in info.latest().items()}

    def on_iteration(self, info: IterationInfo) -> None:
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix(self._metrics(info), refresh=False)
            return
        every = max(1, info.n_iterations // 10)
        if info.iteration % every == 0 or info.iteration == info.n_iterations - 1:
            parts = [f"[boostlib] iteration {info.iteration + 1}/{info.n_iterations}"]
            parts += [f"{k}={v}" for k, v in self._metrics(info).items()]
            print("  ".join(parts), file=self._out(), flush=True)

    def on_fit_end(self, info: IterationInfo) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


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
