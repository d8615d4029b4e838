"""Built-in losses for conditional quantiles: ``quantile`` (pinball loss at ``alpha``) and
``l1`` (absolute error, the conditional median), with LightGBM's leaf renewal.

The raw score ``z`` is the prediction (``transform`` is the identity). With ``d = y - z``:

* ``quantile``: ``L = alpha d`` if ``d >= 0`` else ``(alpha - 1) d``; ``g = -alpha`` if
  ``y > z`` else ``1 - alpha`` (at ``y == z`` the right derivative ``1 - alpha``, as
  LightGBM's ``quantile`` objective);
* ``l1``: ``L = |d|``; ``g = sign(z - y)``, 0 at ``y == z`` (LightGBM's ``l1``). It is twice
  ``quantile`` at ``alpha = 0.5``, with the same minimisers.

Both losses are piecewise linear: their second derivative is 0 wherever it exists, and
``gradient_hessian`` writes that exact 0. They declare ``hessian_can_be_negative = True``
with ``hessian_floor = 1`` (boostlib's switch for "this hessian is not safely positive"), so
trees see ``max(0, 1) = 1`` times the row weight: LightGBM's constant hessian. A Newton leaf
is then ``-G / (W + l2)``, the regularised mean of ``-g`` over its rows.

Those gradient steps only say in which direction a leaf should move, not how far. The best
constant model and leaf renewal give the distances:

* ``init_raw`` is the weighted ``alpha``-quantile of ``y`` (:func:`weighted_quantile`; the
  weighted median for ``l1``), an exact minimiser of the weighted mean loss.
* ``renew_leaves`` (``renews_leaves = True``): after the tree's structure is fitted to the
  gradients, each leaf's value is replaced by the weighted ``alpha``-quantile of the
  residuals ``y - z`` of the rows the tree was fitted on (their user weight times their
  sampling weight), the best value that leaf can add; the learning rate then scales it. This
  is LightGBM's ``RenewTreeOutput``. The update rule ``sgb`` renews
  (:meth:`boostlib.api.Context.renew_leaves`). ``sglb``, ``agbm``, ``agbmr`` and ``vagbm``
  do not: their trees are gradient steps of another sequence (and SGLB's leaf noise is scaled
  to the Newton leaves), so with them these losses train by first-order steps of at most
  ``max(alpha, 1 - alpha)`` per tree before the learning rate, which needs more trees when
  the target's scale is large.

The weighted quantile (:func:`weighted_quantile`) is the midpoint of the lower and upper
weighted ``alpha``-quantiles: with the values sorted and ``C_k`` the cumulative weight up to
the ``k``-th, the lower is the first value with ``C_k >= alpha W`` (``W`` the total weight)
and the upper the first with ``C_k > alpha W``. Every point between them minimises the
weighted pinball loss, so the midpoint does; rows of weight 0 never count, and with unit
weights and ``alpha = 0.5`` it is ``np.median``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..plugin.api import Loss, hookimpl

__all__ = ["QuantileLoss", "L1Loss", "leaf_quantiles", "weighted_quantile"]


def leaf_quantiles(values: np.ndarray, alpha: float, weight: Optional[np.ndarray],
                   leaf: np.ndarray, n_leaves: int) -> np.ndarray:
    """The weighted ``alpha``-quantile of ``values`` within each leaf, vectorized.

    One sort by (leaf, value) and cumulative weights per leaf: no Python loop over leaves.

    Parameters
    ----------
    values : ndarray of shape (n_rows,)
        Finite values (e.g. residuals ``y - raw``).
    alpha : float
        The quantile, in (0, 1).
    weight : ndarray of shape (n_rows,) or None
        Non-negative weights (None: all 1). Rows of weight 0 do not count; a leaf whose rows
        all have weight 0 gets the unweighted quantile of its rows.
    leaf : ndarray of int, shape (n_rows,)
        Leaf index of every row, in ``0 .. n_leaves - 1``.
    n_leaves : int
        Number of leaves.

    Returns
    -------
    ndarray of float64, shape (n_leaves,)
        Each leaf's quantile, the midpoint of its lower and upper weighted
        ``alpha``-quantiles (see the module docstring); 0 for a leaf without rows.
    """
    values = np.asarray(values, dtype=np.float64)
    leaf = np.asarray(leaf)
    n = values.shape[0]
    if values.ndim != 1 or leaf.shape != values.shape or leaf.dtype.kind not in "iu":
        raise ValueError(f"values and leaf must be 1-D arrays of the same length, leaf of "
                         f"integers; got {values.shape} and {leaf.dtype} {leaf.shape}")
    out = np.zeros(int(n_leaves))
    if n == 0:
        return out
    leaf = leaf.astype(np.intp, copy=False)
    if leaf.min() < 0 or leaf.max() >= n_leaves:
        raise ValueError(f"leaf indices must lie in [0, {n_leaves}); got "
                         f"[{leaf.min()}, {leaf.max()}]")
    # by value, then (stable) by leaf: a radix sort of small leaf ids, twice as fast as
    # np.lexsort. The order among equal values does not matter: the quantiles are values.
    order = np.argsort(values)
    order = order[np.argsort(leaf[order].astype(np.min_scalar_type(max(n_leaves - 1, 0))),
                             kind="stable")]
    counts = np.bincount(leaf, minlength=n_leaves)
    ends = np.cumsum(counts)
    starts = ends - counts
    has = counts > 0
    if weight is None:
        w = np.ones(n)
    else:
        w = np.asarray(weight, dtype=np.float64)
        if w.shape != values.shape:
            raise ValueError(f"weight must have shape {values.shape}, got {w.shape}")
        empty = has & (np.bincount(leaf, weights=w, minlength=n_leaves) <= 0)
        w = w[order]
        if empty.any():         # no weight at all: every row of the leaf counts once
            w = np.where(empty[leaf[order]], 1.0, w)
    # the cumulative weight rises over the whole sorted array, so each leaf's first row
    # reaching (exceeding) its threshold is one binary search
    cum = np.cumsum(w)
    starts, last = starts[has], ends[has] - 1
    before = np.where(starts > 0, cum[starts - 1], 0.0)
    threshold = before + alpha * (cum[last] - before)
    lower = np.clip(np.searchsorted(cum, threshold, side="left"), starts, last)
    upper = np.clip(np.searchsorted(cum, threshold, side="right"), starts, last)
    a, b = values[order[lower]], values[order[upper]]
    out[has] = np.where(a == b, a, 0.5 * a + 0.5 * b)     # a == b: exact, even subnormal
    return out


def weighted_quantile(values: np.ndarray, alpha: float,
                      weight: Optional[np.ndarray] = None) -> float:
    """The weighted ``alpha``-quantile of ``values``: a minimiser of the weighted pinball
    loss ``sum_i w_i max(alpha (v_i - c), (alpha - 1) (v_i - c))`` over ``c``.

    Parameters
    ----------
    values : ndarray of shape (n,)
        Finite values, ``n >= 1``.
    alpha : float
        The quantile, in (0, 1).
    weight : ndarray of shape (n,), optional
        Non-negative weights (rows of weight 0 do not count; all 0: no weights).

    Returns
    -------
    float
        The midpoint of the lower and upper weighted ``alpha``-quantiles (see the module
        docstring); ``np.median(values)`` for ``alpha = 0.5`` without weights.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"weighted_quantile needs a non-empty 1-D array, got shape "
                         f"{values.shape}")
    return float(leaf_quantiles(values, alpha, weight, np.zeros(values.size, np.intp), 1)[0])


def _check_alpha(alpha: float) -> float:
    ok = (isinstance(alpha, (int, float, np.integer, np.floating))
          and not isinstance(alpha, (bool, np.bool_)))
    if not (ok and 0.0 < float(alpha) < 1.0):
        raise ValueError(f"loss 'quantile': alpha={alpha!r} is invalid; expected a number in "
                         "the open interval (0, 1)")
    return float(alpha)


class _QuantileFamily(Loss):
    """Shared parts: identity response, exact zero hessian floored at 1, the quantile start
    and leaf renewal. Subclasses set ``alpha``."""

    hessian_can_be_negative = True      # the hessian is 0: Newton leaves floor it at 1
    hessian_floor = 1.0
    renews_leaves = True
    link = "identity"
    alpha: float = 0.5

    def init_raw(self, y: np.ndarray, sample_weight: Optional[np.ndarray]) -> float:
        """The weighted ``alpha``-quantile of ``y`` (:func:`weighted_quantile`)."""
        return weighted_quantile(y, self.alpha, sample_weight)

    def renew_leaves(self, y: np.ndarray, raw: np.ndarray, weight: Optional[np.ndarray],
                     leaf: np.ndarray, n_leaves: int) -> np.ndarray:
        """Each leaf's weighted ``alpha``-quantile of the residuals ``y - raw``
        (:func:`leaf_quantiles`): the constant that minimises the loss of its rows.

        See :meth:`boostlib.api.Loss.renew_leaves` for the parameters.
        """
        return leaf_quantiles(np.subtract(y, raw), self.alpha, weight, leaf, n_leaves)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return raw


class QuantileLoss(_QuantileFamily):
    """Pinball (check) loss of the ``alpha``-quantile; the raw score is the prediction.

    ``L = alpha (y - z)`` if ``y >= z`` else ``(1 - alpha) (z - y)``. ``sgb`` renews every
    tree's leaves to the weighted ``alpha``-quantile of their rows' residuals (LightGBM's
    ``objective="quantile"``); the other built-in update rules train it by first-order steps
    (see :mod:`boostlib.builtin.quantile`).

    Parameters
    ----------
    alpha : float, default 0.5
        The quantile, in the open interval (0, 1): ``P(y <= prediction)`` is about
        ``alpha`` on data like the training set.
    """

    name = "quantile"

    def __init__(self, alpha: float = 0.5):
        self.alpha = _check_alpha(alpha)

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        np.copyto(gradient, np.where(y > raw, -self.alpha, 1.0 - self.alpha))
        hessian[...] = 0.0

    def loss(self, y, raw):
        d = np.subtract(y, raw)
        return np.maximum(self.alpha * d, (self.alpha - 1.0) * d)


class L1Loss(_QuantileFamily):
    """Absolute error ``|y - z|``: the conditional median; the raw score is the prediction.

    ``g = sign(z - y)`` (0 at ``y == z``). ``sgb`` renews every tree's leaves to the weighted
    median of their rows' residuals (LightGBM's ``objective="l1"``); the other built-in update
    rules train it by first-order steps (see :mod:`boostlib.builtin.quantile`).
    """

    name = "l1"
    alpha = 0.5

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        np.sign(np.subtract(raw, y), out=gradient)
        hessian[...] = 0.0

    def loss(self, y, raw):
        return np.abs(np.subtract(y, raw))


@hookimpl
def boostlib_add_losses():
    """Register the quantile losses."""
    return {"quantile": QuantileLoss, "l1": L1Loss}
