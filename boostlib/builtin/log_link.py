"""Built-in regression losses on the log scale: ``poisson``, ``gamma`` and ``tweedie``.

The raw score is ``z = log(mu)``, the logarithm of the predicted mean, and ``transform``
gives ``mu = exp(z)``. Each loss is its distribution's negative log-likelihood in ``z``, up
to terms that do not depend on ``z`` (``p`` is tweedie's ``variance_power``):

* ``poisson``: ``L = exp(z) - y z``, ``g = exp(z) - y``, ``h = exp(z)``;
* ``gamma``: ``L = y exp(-z) + z``, ``g = 1 - y exp(-z)``, ``h = y exp(-z)``;
* ``tweedie``: ``L = -y exp((1-p) z) / (1-p) + exp((2-p) z) / (2-p)``,
  ``g = exp((2-p) z) - y exp((1-p) z)``,
  ``h = (p-1) y exp((1-p) z) + (2-p) exp((2-p) z)``.

The best constant ``z`` is the log of the weighted mean of ``y`` for all three (set each
gradient's weighted sum to zero). Tweedie's hessian is positive for ``1 < p < 2`` and
``y >= 0``. Poisson and Tweedie allow ``y = 0``, but a target that is all zeros has no
finite best constant and is refused; Gamma needs ``y > 0``.

Raw scores are clipped to ``[-MAX_LOG, MAX_LOG]`` inside the exponentials, so a wild tree
cannot overflow them.

Their Newton steps are unbounded: a Poisson leaf's ``-G/H = sum(y - mu) / sum(mu)`` grows
without bound where the predicted mean ``mu`` is far below the counts, and a Gamma leaf's
``sum(y/mu - 1) / sum(y/mu)`` where ``mu`` is far above the targets (and Tweedie's both
ways); a leaf of zero counts moves its rows' Poisson means by a factor of up to ``e`` per
unit learning rate, again and again. So the three losses declare ``max_delta_step = 1.5``:
unless the training parameter ``max_delta_step`` says otherwise, every leaf is clipped to
``[-1.5, 1.5]`` before the learning rate. XGBoost's ``count:poisson`` caps at 0.7; on the
Bike Sharing counts 0.7 and 0.3 fitted worse than no cap at boostlib's learning rate of 0.1
and 1.5 slightly better (``docs/losses.md`` has the measurements).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..plugin.api import Loss, hookimpl

#: Bound of ``|z|`` inside the exponentials (``exp(700)`` is near float64's limit).
MAX_LOG = 700.0


def _exp(z: np.ndarray, scale: float = 1.0) -> np.ndarray:
    return np.exp(np.clip(scale * np.asarray(z, dtype=np.float64), -MAX_LOG, MAX_LOG))


class _LogLinkLoss(Loss):
    """Shared parts: the target's domain, the starting value and the response."""

    link = "log"
    #: the cap on ``|leaf value|`` training uses by default (its parameter
    #: ``max_delta_step=None``): see the module docstring
    max_delta_step = 1.5
    #: whether a target of 0 is allowed (Poisson, Tweedie) or not (Gamma)
    zero_allowed = True

    def validate_target(self, y: np.ndarray) -> np.ndarray:
        y = super().validate_target(y)
        bad = (y < 0) if self.zero_allowed else (y <= 0)
        if bad.any():
            need = ">= 0" if self.zero_allowed else "> 0"
            raise ValueError(f"loss {self.name!r} needs targets {need}; got "
                             f"{np.unique(y[bad])[:5].tolist()}")
        if not np.any(y > 0):
            raise ValueError(f"loss {self.name!r} needs some target > 0 (the log of an "
                             "all-zero mean is -inf)")
        return y

    def init_raw(self, y: np.ndarray, sample_weight: Optional[np.ndarray]) -> float:
        mean = float(np.average(y, weights=sample_weight))
        if not mean > 0:
            raise ValueError(f"loss {self.name!r}: the weighted mean of y is {mean!r}; the "
                             "log link needs it > 0")
        return math.log(mean)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return _exp(raw)


class PoissonLoss(_LogLinkLoss):
    """Poisson deviance for counts and rates (``y >= 0``), log link."""

    name = "poisson"

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        mu = _exp(raw)
        np.subtract(mu, y, out=gradient)
        hessian[...] = mu

    def loss(self, y, raw):
        return _exp(raw) - y * np.clip(raw, -MAX_LOG, MAX_LOG)


class GammaLoss(_LogLinkLoss):
    """Gamma deviance for positive, right-skewed targets (``y > 0``), log link."""

    name = "gamma"
    zero_allowed = False

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        ratio = y * _exp(raw, -1.0)
        np.subtract(1.0, ratio, out=gradient)
        hessian[...] = ratio

    def loss(self, y, raw):
        return y * _exp(raw, -1.0) + np.clip(raw, -MAX_LOG, MAX_LOG)


class TweedieLoss(_LogLinkLoss):
    """Tweedie deviance of power ``variance_power`` in (1, 2): a compound Poisson-Gamma for
    non-negative targets with a mass at zero (insurance claims, rainfall), log link.

    Parameters
    ----------
    variance_power : float, default 1.5
        In the open interval (1, 2): towards 1 it behaves like ``poisson``, towards 2 like
        ``gamma``.
    """

    name = "tweedie"

    def __init__(self, variance_power: float = 1.5):
        p = variance_power
        if isinstance(p, bool) or not (isinstance(p, (int, float)) and 1.0 < p < 2.0):
            raise ValueError(f"loss 'tweedie': variance_power={p!r} is invalid; expected a "
                             "number in (1, 2)")
        self.variance_power = float(p)

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        p = self.variance_power
        a, b = y * _exp(raw, 1.0 - p), _exp(raw, 2.0 - p)
        np.subtract(b, a, out=gradient)
        np.multiply(a, p - 1.0, out=hessian)
        hessian += (2.0 - p) * b

    def loss(self, y, raw):
        p = self.variance_power
        return -y * _exp(raw, 1.0 - p) / (1.0 - p) + _exp(raw, 2.0 - p) / (2.0 - p)


@hookimpl
def boostlib_add_losses():
    """Register the log-link losses."""
    return {"poisson": PoissonLoss, "gamma": GammaLoss, "tweedie": TweedieLoss}
