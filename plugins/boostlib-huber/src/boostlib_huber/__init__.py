"""Huber loss for boostlib: regression that is quadratic near the target and linear far away.

Installing this distribution registers the loss ``"boostlib_huber"`` and the evaluation
metric ``"boostlib_huber"`` (the mean Huber loss of the predictions) through the ``boostlib``
entry-point group; select them with
``BoostRegressor(loss="boostlib_huber", loss_params={"delta": 1.0})`` and
``eval_metric="boostlib_huber"`` (``boostlib train ... --eval-metric boostlib_huber`` on the
command line). They are registered under the distribution's name because boostlib has a
built-in ``huber`` loss and metric (LightGBM's, with a hessian of 1 everywhere); this
package stays as a worked example of a plugin, with a tunable hessian floor.

With the residual ``r = z - y`` (``z`` the raw score, which is the prediction)::

    L = r^2 / 2                    if |r| <= delta
        delta * (|r| - delta / 2)  otherwise
    g = dL/dz   = clip(r, -delta, delta)
    h = d2L/dz2 = 1 if |r| <= delta else 0

``gradient_hessian`` writes these exact derivatives. The hessian is 0 outside ``delta``, so a
Newton leaf ``-G / (H + l2)`` made mostly of outlying rows would take a step of order
``delta * n / l2``. The loss therefore declares ``hessian_can_be_negative = True`` (boostlib's
switch for "this hessian is not safely positive"): Newton leaves use ``max(h, hessian_floor)``.
With the default floor 0.1 an outlying row weighs a tenth of an inlier in a leaf's
denominator, so a leaf moves at most ``delta / 0.1`` per tree (before the learning rate).
``hessian_floor=1`` (a hessian of 1 everywhere, LightGBM's choice) is the most cautious:
a leaf is then the mean of the clipped residuals and never overshoots, but a model whose
residuals are many ``delta`` large converges slowly. The README has measurements.
``leaf_estimation="gradient"`` ignores hessians and needs no floor.
"""
from __future__ import annotations

import numpy as np

from boostlib.api import Loss, Metric, hookimpl

__all__ = ["BOOSTLIB_API_VERSION", "HuberLoss", "HuberMetric", "boostlib_add_losses",
           "boostlib_add_metrics", "weighted_median"]
__version__ = "0.2.0"

#: The boostlib plugin API this package was written for.
BOOSTLIB_API_VERSION = 1


def weighted_median(y: np.ndarray, sample_weight: np.ndarray | None = None) -> float:
    """Median of ``y`` under non-negative weights (``np.median`` for equal weights).

    The midpoint of the lower and upper weighted medians, so rows of weight 0 do not count
    and unit weights give exactly ``np.median(y)``.

    Parameters
    ----------
    y : ndarray of shape (n_rows,)
    sample_weight : ndarray of shape (n_rows,), optional
        Non-negative weights with a positive sum.

    Returns
    -------
    float
    """
    if sample_weight is None:
        return float(np.median(y))
    order = np.argsort(y, kind="stable")
    ys = y[order]
    cum = np.cumsum(sample_weight[order])
    half = 0.5 * cum[-1]
    lower = ys[np.searchsorted(cum, half, side="left")]
    upper = ys[min(np.searchsorted(cum, half, side="right"), len(ys) - 1)]
    return float(0.5 * (lower + upper))


class HuberLoss(Loss):
    """Huber loss of the residual ``raw - y``.

    Parameters
    ----------
    delta : float, default 1.0
        Residual size (in target units) where the loss turns from quadratic to linear.
        ``delta -> inf`` gives half squared error, small ``delta`` approaches ``delta`` times
        the absolute error.
    hessian_floor : float, default 0.1
        Hessian Newton leaves use where the true one (0 outside ``delta``) is smaller; in
        ``(0, 1]``. Smaller floors take larger steps on outlying rows, 1 the most cautious.
    """

    name = "boostlib_huber"
    hessian_can_be_negative = True  # the hessian is 0 outside delta: Newton leaves floor it

    def __init__(self, delta: float = 1.0, hessian_floor: float = 0.1):
        if not (isinstance(delta, (int, float)) and np.isfinite(delta) and delta > 0):
            raise ValueError(f"loss 'boostlib_huber': delta={delta!r} is invalid; expected a "
                             "finite number > 0")
        if not (isinstance(hessian_floor, (int, float)) and 0 < hessian_floor <= 1):
            raise ValueError(f"loss 'boostlib_huber': hessian_floor={hessian_floor!r} is invalid; "
                             "expected a number in (0, 1]")
        self.delta = float(delta)
        self.hessian_floor = float(hessian_floor)

    def init_raw(self, y: np.ndarray, sample_weight: np.ndarray | None) -> float:
        """The constant minimising the (weighted) Huber loss.

        Solves ``D(c) = sum_i w_i clip(c - y_i, -delta, delta) = 0`` (``D`` is increasing and
        piecewise linear) by Newton steps from the median, falling back to bisection when a
        step leaves the bracket. With a large ``delta`` the first step lands on the mean.
        """
        w = np.ones_like(y) if sample_weight is None else sample_weight
        active = w > 0
        lo, hi = float(np.min(y[active])), float(np.max(y[active]))
        c = weighted_median(y, sample_weight)
        for _ in range(200):
            r = c - y
            slope = float(np.dot(w, np.abs(r) <= self.delta))
            d = float(np.dot(w, np.clip(r, -self.delta, self.delta)))
            if d == 0.0:
                break
            if d > 0:
                hi = c
            else:
                lo = c
            step = c - d / slope if slope > 0 else np.nan
            new = step if lo < step < hi else 0.5 * (lo + hi)
            done = abs(new - c) <= 1e-12 * max(1.0, abs(c))
            c = new
            if done:
                break
        return float(c)

    def gradient_hessian(self, y: np.ndarray, raw: np.ndarray, gradient: np.ndarray,
                         hessian: np.ndarray, n_threads: int = 1) -> None:
        """Write ``clip(raw - y, -delta, delta)`` and ``1[|raw - y| <= delta]`` in place."""
        np.subtract(raw, y, out=gradient)
        np.abs(gradient, out=hessian)
        np.less_equal(hessian, self.delta, out=hessian)  # 1.0 inside delta, 0.0 outside
        np.clip(gradient, -self.delta, self.delta, out=gradient)

    def loss(self, y: np.ndarray, raw: np.ndarray) -> np.ndarray:
        """Pointwise Huber loss, shape ``(n_rows,)``."""
        return huber(raw - y, self.delta)


def huber(residual: np.ndarray, delta: float) -> np.ndarray:
    """Pointwise Huber loss of residuals."""
    a = np.abs(residual)
    return np.where(a <= delta, 0.5 * a * a, delta * (a - 0.5 * delta))


class HuberMetric(Metric):
    """Weighted mean Huber loss of the predictions, an evaluation metric (lower is better).

    Parameters
    ----------
    delta : float, default 1.0
        As for :class:`HuberLoss`.
    """

    name = "boostlib_huber"
    higher_is_better = False
    reads = "response"          # the regression prediction

    def __init__(self, delta: float = 1.0):
        if not (isinstance(delta, (int, float)) and np.isfinite(delta) and delta > 0):
            raise ValueError(f"metric 'boostlib_huber': delta={delta!r} is invalid; expected "
                             "a finite number > 0")
        self.delta = float(delta)

    def check_task(self, n_outputs: int, is_classification: bool) -> None:
        """A regression metric."""
        if is_classification:
            raise ValueError("eval_metric 'boostlib_huber' is a regression metric; this "
                             "model is a classifier")

    def evaluate(self, y_true: np.ndarray, y_pred: np.ndarray,
                 sample_weight: np.ndarray | None) -> float:
        """``average(huber(y_pred - y_true), weights=sample_weight)``."""
        return float(np.average(huber(y_pred - y_true, self.delta), weights=sample_weight))


@hookimpl
def boostlib_add_losses():
    """Register the loss ``"boostlib_huber"``."""
    return {"boostlib_huber": HuberLoss}


@hookimpl
def boostlib_add_metrics():
    """Register the metric ``"boostlib_huber"``."""
    return {"boostlib_huber": HuberMetric}
