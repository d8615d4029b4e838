"""The mean loss of a data set, from a loss plugin's fastest correct method, validated."""
from __future__ import annotations

import functools
from typing import Optional, Tuple

import numpy as np

from ..plugin import checks
from ..plugin.api import Loss


def _fast_path(loss: Loss, fast: str, *bases: str) -> bool:
    """Whether ``loss`` has its own ``fast`` method (e.g. a compiled ``mean_loss``) that
    belongs with its ``bases`` methods (``loss``): a subclass that overrides one of them but
    inherits ``fast`` from a built-in would otherwise get the built-in's values."""
    return _class_fast_path(type(loss), fast, bases)


@functools.lru_cache(maxsize=256)
def _class_fast_path(cls: type, fast: str, bases: Tuple[str, ...]) -> bool:
    if getattr(cls, fast) is getattr(Loss, fast):
        return False
    return checks.belongs_with(cls, fast, bases)


def mean_loss(loss: Loss, y: np.ndarray, raw: np.ndarray, weight: Optional[np.ndarray],
              n_threads: int, what: str, iteration: int) -> float:
    """The loss's weighted mean on one data set, validated.

    A loss that keeps the default :meth:`~boostlib.api.Loss.mean_loss` gets its ``loss()``
    output checked for shape first (a wrong shape would otherwise broadcast silently).
    """
    if not _fast_path(loss, "mean_loss", "loss"):
        with checks.blame("loss", loss, "loss", iteration):
            values = loss.loss(y, raw)
        values = checks.pointwise_loss(loss, values, y.shape[0])
        value = float(np.average(values, weights=weight))
    else:
        with checks.blame("loss", loss, "mean_loss", iteration):
            value = loss.mean_loss(y, raw, weight, n_threads)
    return checks.mean_loss(loss, value, what, iteration, y, raw)
