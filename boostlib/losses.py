"""Built-in losses: ``logloss``, ``mse`` and ``sla``, registered through the public hook.

Formulas (``z`` is the raw score, ``g = dL/dz``, ``h = d2L/dz2``):

========  ==============================  ============================  ==================================
name      ``L(z, y)``                     ``g``                         ``h``
========  ==============================  ============================  ==================================
logloss   ``softplus(z) - y z``           ``sigmoid(z) - y``            ``p (1 - p)``
mse       ``(z - y)^2 / 2``               ``z - y``                     ``1``
sla       ``1 - sigmoid(t z / s)``        ``-(t/s) q (1 - q)``          ``-(1/s^2) q (1-q) (1-2q)``
========  ==============================  ============================  ==================================

with ``t = 2y - 1`` and ``q = sigmoid(t z / s)`` for SLA, the smoothed 0-1 loss of the SGLB
paper (Section 7.2, eq. 12), whose smoothing scale ``s`` defaults to 0.1. SLA is not convex:
its hessian is negative on the misclassified side. Use ``leaf_estimation="gradient"`` with it
(the SGLB paper's setting: split scores and leaf values then use the row weights instead of
hessians); with Newton leaves the hessian is floored at ``hessian_floor = 0.01 / s^2``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ._kernels import _loss
from .api import Loss, hookimpl

_EMPTY = np.empty(0, dtype=np.float64)


def _mean(total: float, y: np.ndarray, weight: Optional[np.ndarray]) -> float:
    return total / (y.shape[0] if weight is None else float(np.sum(weight)))


def _weight(weight: Optional[np.ndarray]) -> np.ndarray:
    return _EMPTY if weight is None else np.ascontiguousarray(weight, dtype=np.float64)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class _BinaryLoss(Loss):
    is_classification = True

    def validate_target(self, y: np.ndarray) -> np.ndarray:
        y = super().validate_target(y)
        if not np.all((y == 0.0) | (y == 1.0)):
            bad = np.unique(y[(y != 0.0) & (y != 1.0)])[:5]
            raise ValueError(f"loss {self.name!r} needs targets in {{0, 1}}; got {bad.tolist()}")
        return y

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return _sigmoid(np.asarray(raw, dtype=np.float64))


class LogLoss(_BinaryLoss):
    """Binary cross-entropy on the logit scale (``transform`` gives probabilities)."""

    name = "logloss"

    def init_raw(self, y: np.ndarray, sample_weight: Optional[np.ndarray]) -> float:
        p = float(np.average(y, weights=sample_weight))
        p = min(max(p, 1e-12), 1.0 - 1e-12)
        return float(np.log(p / (1.0 - p)))

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        _loss.logloss_gradient(y, raw, _EMPTY, gradient, hessian, n_threads)

    def loss(self, y, raw):
        return np.logaddexp(0.0, raw) - y * raw

    def mean_loss(self, y, raw, weight=None, n_threads=1):
        return _mean(_loss.logloss_sum(y, raw, _weight(weight), n_threads), y, weight)

    def gradient_hessian_loss(self, y, raw, gradient, hessian, weight=None, n_threads=1):
        return _mean(_loss.gradient_loss_sum(0, y, raw, _weight(weight), 1.0, gradient, hessian,
                                             n_threads), y, weight)


class MSELoss(Loss):
    """Half squared error; the raw score is the prediction."""

    name = "mse"

    def init_raw(self, y: np.ndarray, sample_weight: Optional[np.ndarray]) -> float:
        return float(np.average(y, weights=sample_weight))

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        _loss.mse_gradient(y, raw, _EMPTY, gradient, hessian, n_threads)

    def loss(self, y, raw):
        return 0.5 * (raw - y) ** 2

    def mean_loss(self, y, raw, weight=None, n_threads=1):
        return _mean(_loss.mse_sum(y, raw, _weight(weight), n_threads), y, weight)

    def gradient_hessian_loss(self, y, raw, gradient, hessian, weight=None, n_threads=1):
        return _mean(_loss.gradient_loss_sum(1, y, raw, _weight(weight), 1.0, gradient, hessian,
                                             n_threads), y, weight)


class SLALoss(_BinaryLoss):
    """Smoothed 0-1 loss of the SGLB paper (eq. 12).

    Parameters
    ----------
    scale : float, default 0.1
        Smoothing scale ``s > 0``; as ``s -> 0`` the loss tends to the 0-1 loss.
    """

    name = "sla"
    hessian_can_be_negative = True

    def __init__(self, scale: float = 0.1):
        if not (isinstance(scale, (int, float)) and np.isfinite(scale) and scale > 0):
            raise ValueError(f"loss 'sla': scale={scale!r} is invalid; expected a number > 0")
        self.scale = float(scale)
        self.hessian_floor = 0.01 / self.scale ** 2

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        _loss.sla_gradient(y, raw, _EMPTY, self.scale, gradient, hessian, n_threads)

    def loss(self, y, raw):
        t = 2.0 * y - 1.0
        return _sigmoid(-t * raw / self.scale)

    def mean_loss(self, y, raw, weight=None, n_threads=1):
        return _mean(_loss.sla_sum(y, raw, _weight(weight), self.scale, n_threads), y, weight)

    def gradient_hessian_loss(self, y, raw, gradient, hessian, weight=None, n_threads=1):
        return _mean(_loss.gradient_loss_sum(2, y, raw, _weight(weight), self.scale, gradient,
                                             hessian, n_threads), y, weight)


@hookimpl
def boostlib_add_losses():
    """Register the built-in losses."""
    return {"logloss": LogLoss, "mse": MSELoss, "sla": SLALoss}
