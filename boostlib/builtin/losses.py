"""Built-in losses: ``logloss``, ``mse``, ``huber``, ``sla``, ``multiclass`` and
``multi_mse`` (half squared error summed over several targets) and ``multilabel`` (logloss
summed over several 0/1 labels), registered through the public hook.

Formulas (``z`` is the raw score, ``g = dL/dz``, ``h = d2L/dz2``):

========  ==============================  ============================  ==================================
name      ``L(z, y)``                     ``g``                         ``h``
========  ==============================  ============================  ==================================
logloss   ``softplus(z) - y z``           ``sigmoid(z) - y``            ``p (1 - p)``
mse       ``(z - y)^2 / 2``               ``z - y``                     ``1``
huber     ``r^2 / 2`` if ``|r| <= a``,    ``clip(r, -a, a)``            ``1`` if ``|r| <= a``, else ``0``
          else ``a (|r| - a / 2)``                                      (Newton leaves floor it at 1)
sla       ``1 - sigmoid(t z / s)``        ``-(t/s) q (1 - q)``          ``-(1/s^2) q (1-q) (1-2q)``
========  ==============================  ============================  ==================================

``multiclass`` is the softmax cross-entropy over ``K`` classes, a loss with ``K`` outputs:
``L(z, y) = logsumexp(z) - z_y``, ``g_k = p_k - [y = k]`` and the diagonal of the hessian
``h_k = p_k (1 - p_k)`` with ``p = softmax(z)`` (each output's tree takes a Newton step on its
own coordinate, as CatBoost's ``MultiClass`` does; LightGBM scales this hessian by
``K/(K-1)``, which is a smaller step).

with ``r = z - y`` and ``a`` the ``alpha`` of ``huber`` (Huber's delta, LightGBM's
``alpha``: default 0.9), and ``t = 2y - 1`` and ``q = sigmoid(t z / s)`` for SLA, the
smoothed 0-1 loss of the SGLB paper (Section 7.2, eq. 12), whose smoothing scale ``s``
defaults to 0.1. SLA is not convex:
its hessian is negative on the misclassified side. Use ``leaf_estimation="gradient"`` with it
(the SGLB paper's setting: split scores and leaf values then use the row weights instead of
hessians); with Newton leaves the hessian is floored at ``hessian_floor = 0.01 / s^2``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .._kernels import _loss
from ..plugin.api import Loss, hookimpl
from ..plugin.links import sigmoid, softmax
from .quantile import weighted_quantile

_EMPTY = np.empty(0, dtype=np.float64)


def _mean(total: float, y: np.ndarray, weight: Optional[np.ndarray]) -> float:
    return total / (y.shape[0] if weight is None else float(np.sum(weight)))


def _weight(weight: Optional[np.ndarray]) -> np.ndarray:
    return _EMPTY if weight is None else np.ascontiguousarray(weight, dtype=np.float64)


def _rows(y: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(y, dtype=np.float64)


def _scores(raw: np.ndarray) -> np.ndarray:
    return np.asarray(raw, dtype=np.float64)


class _BinaryLoss(Loss):
    is_classification = True
    link = "logit"

    def validate_target(self, y: np.ndarray) -> np.ndarray:
        y = super().validate_target(y)
        if not np.all((y == 0.0) | (y == 1.0)):
            bad = np.unique(y[(y != 0.0) & (y != 1.0)])[:5]
            raise ValueError(f"loss {self.name!r} needs targets in {{0, 1}}; got {bad.tolist()}")
        return y

    def transform(self, raw: np.ndarray) -> np.ndarray:
        return sigmoid(raw)


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
        return _mean(_loss.logloss_gradient_sum(y, raw, _weight(weight), gradient, hessian,
                                                n_threads), y, weight)


class MSELoss(Loss):
    """Half squared error; the raw score is the prediction."""

    name = "mse"
    link = "identity"

    def init_raw(self, y: np.ndarray, sample_weight: Optional[np.ndarray]) -> float:
        return float(np.average(y, weights=sample_weight))

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        _loss.mse_gradient(y, raw, _EMPTY, gradient, hessian, n_threads)

    def loss(self, y, raw):
        return 0.5 * (raw - y) ** 2

    def mean_loss(self, y, raw, weight=None, n_threads=1):
        return _mean(_loss.mse_sum(y, raw, _weight(weight), n_threads), y, weight)


def check_huber_alpha(alpha: float, what: str) -> float:
    """``alpha`` as a float when it is a finite number > 0, else ValueError naming ``what``."""
    ok = isinstance(alpha, (int, float, np.integer, np.floating)) \
        and not isinstance(alpha, (bool, np.bool_))
    if not (ok and np.isfinite(alpha) and alpha > 0):
        raise ValueError(f"{what}: alpha={alpha!r} is invalid; expected a finite number > 0")
    return float(alpha)


def huber(residual: np.ndarray, alpha: float) -> np.ndarray:
    """Pointwise Huber loss of ``residual``: ``r**2 / 2`` where ``|r| <= alpha``, else
    ``alpha (|r| - alpha / 2)``."""
    a = np.abs(residual)
    return np.where(a <= alpha, 0.5 * a * a, alpha * (a - 0.5 * alpha))


class HuberLoss(Loss):
    """Huber loss of the residual ``r = z - y``: quadratic up to ``alpha``, linear beyond,
    so a few wild targets pull the model far less than under ``mse``. The raw score is the
    prediction. LightGBM's ``objective="huber"``, whose ``alpha`` is Huber's delta.

    ``gradient_hessian`` writes the exact derivatives, ``g = clip(r, -alpha, alpha)`` and
    ``h = 1`` inside ``alpha``, ``0`` outside. The loss declares
    ``hessian_can_be_negative`` with ``hessian_floor = 1``, so Newton leaves use a hessian of
    1 on every row, as LightGBM does: a leaf is the regularised mean of its rows' clipped
    residuals and never moves more than ``alpha`` per tree (before the learning rate). The
    example plugin ``plugins/boostlib-huber`` shows a tunable floor.

    Parameters
    ----------
    alpha : float, default 0.9
        The residual size, in target units, where the loss turns from quadratic to linear;
        finite and > 0 (LightGBM's default 0.9). Pick it near the scale of the ordinary
        noise.
    """

    name = "huber"
    link = "identity"
    hessian_can_be_negative = True      # 0 outside alpha: Newton leaves floor it at 1
    hessian_floor = 1.0

    def __init__(self, alpha: float = 0.9):
        self.alpha = check_huber_alpha(alpha, "loss 'huber'")

    def init_raw(self, y: np.ndarray, sample_weight: Optional[np.ndarray]) -> float:
        """The constant ``c`` that minimises the weighted Huber loss.

        ``D(c) = sum_i w_i clip(c - y_i, -alpha, alpha)`` is increasing and piecewise
        linear; its root is found by Newton steps from the weighted median (exact once a
        step lands in the root's linear piece), with bisection when a step leaves the
        bracket. Rows of weight 0 do not count.
        """
        w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, np.float64)
        active = w > 0
        lo, hi = float(np.min(y[active])), float(np.max(y[active]))
        c = weighted_quantile(y, 0.5, sample_weight)
        for _ in range(200):
            r = c - y
            d = float(np.sum(w * np.clip(r, -self.alpha, self.alpha)))
            if d == 0.0:
                break
            if d > 0:
                hi = c
            else:
                lo = c
            slope = float(np.sum(w[np.abs(r) <= self.alpha]))
            step = c - d / slope if slope > 0 else np.nan
            new = step if lo < step < hi else 0.5 * (lo + hi)
            if new == c or abs(new - c) <= 1e-15 * max(1.0, abs(c)):
                break
            c = new
        return float(c)

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        np.subtract(raw, y, out=gradient)
        np.abs(gradient, out=hessian)
        np.less_equal(hessian, self.alpha, out=hessian)     # 1.0 inside alpha, 0.0 outside
        np.clip(gradient, -self.alpha, self.alpha, out=gradient)

    def loss(self, y, raw):
        return huber(np.subtract(raw, y), self.alpha)


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
        return sigmoid(-t * raw / self.scale)

    def mean_loss(self, y, raw, weight=None, n_threads=1):
        return _mean(_loss.sla_sum(y, raw, _weight(weight), self.scale, n_threads), y, weight)


class MulticlassLoss(Loss):
    """Softmax cross-entropy over ``K`` classes: ``K`` raw outputs, one per class.

    Targets are class indices ``0 .. K-1`` (the classifier encodes its labels so).

    Parameters
    ----------
    n_classes : int, optional
        ``K`` (at least 2). Taken from the training target (its largest label plus one) when
        not given; the classifier passes the number of classes it saw.
    """

    name = "multiclass"
    link = "softmax"
    is_classification = True
    is_multiclass = True

    def __init__(self, n_classes: Optional[int] = None):
        if n_classes is not None and (isinstance(n_classes, bool) or not isinstance(
                n_classes, (int, np.integer)) or n_classes < 2):
            raise ValueError(f"loss 'multiclass': n_classes={n_classes!r} is invalid; expected "
                             "an int >= 2 or None")
        self.n_classes = None if n_classes is None else int(n_classes)

    @property
    def n_outputs(self) -> int:
        """``K``: one raw score per class."""
        if self.n_classes is None:
            raise ValueError("loss 'multiclass': the number of classes is not known yet (pass "
                             "n_classes or call validate_target on the training target)")
        return self.n_classes

    def validate_target(self, y: np.ndarray) -> np.ndarray:
        y = super().validate_target(y)
        if y.size and not np.all((y >= 0) & (y == np.floor(y))):
            bad = np.unique(y[(y < 0) | (y != np.floor(y))])[:5]
            raise ValueError(f"loss 'multiclass' needs class indices 0, 1, 2, ...; got "
                             f"{bad.tolist()}")
        top = int(y.max()) + 1 if y.size else 0
        if self.n_classes is None:
            if top < 2:
                raise ValueError("loss 'multiclass' needs at least 2 classes in the training "
                                 f"target; got {top}")
            self.n_classes = top
        elif top > self.n_classes:
            raise ValueError(f"loss 'multiclass' has n_classes={self.n_classes}; the target "
                             f"holds class index {top - 1}")
        return y

    def init_raw(self, y: np.ndarray, sample_weight: Optional[np.ndarray]) -> np.ndarray:
        """Log of the (weighted) class frequencies, centred: the best constant model."""
        counts = np.bincount(y.astype(np.intp), weights=sample_weight,
                             minlength=self.n_outputs)
        p = np.maximum(counts / counts.sum(), 1e-12)
        logp = np.log(p)
        return logp - logp.mean()

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        _loss.multiclass_gradient(_rows(y), _scores(raw), gradient, hessian, _EMPTY, n_threads)

    def loss(self, y, raw):
        z = np.asarray(raw, dtype=np.float64)
        top = z.max(axis=1)
        lse = top + np.log(np.exp(z - top[:, None]).sum(axis=1))
        return lse - z[np.arange(y.shape[0]), y.astype(np.intp)]

    def mean_loss(self, y, raw, weight=None, n_threads=1):
        g = np.empty(np.shape(raw))     # the kernel writes the derivatives too
        return self.gradient_hessian_loss(y, raw, g, np.empty_like(g), weight, n_threads)

    def gradient_hessian_loss(self, y, raw, gradient, hessian, weight=None, n_threads=1):
        return _mean(_loss.multiclass_gradient(_rows(y), _scores(raw), gradient, hessian,
                                               _weight(weight), n_threads), y, weight)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        """Class probabilities, shape (n, K), each row summing to 1."""
        return softmax(raw)


class MultiMSELoss(Loss):
    """Half squared error summed over ``K`` targets (CatBoost's ``MultiRMSE``, XGBoost's
    ``reg:squarederror`` on a 2-D target): ``L(z, y) = sum_k (z_k - y_k)^2 / 2``, ``K`` raw
    outputs, each the prediction of its target.

    Parameters
    ----------
    n_targets : int, optional
        ``K`` (at least 2); taken from the training target's columns when not given.
    """

    name = "multi_mse"
    link = "identity"
    target_columns = True

    def __init__(self, n_targets: Optional[int] = None):
        if n_targets is not None and (isinstance(n_targets, bool) or not isinstance(
                n_targets, (int, np.integer)) or n_targets < 2):
            raise ValueError(f"loss 'multi_mse': n_targets={n_targets!r} is invalid; expected "
                             "an int >= 2 or None")
        self.n_targets = None if n_targets is None else int(n_targets)

    @property
    def n_outputs(self) -> int:
        """``K``: one raw score per target."""
        if self.n_targets is None:
            raise ValueError("loss 'multi_mse': the number of targets is not known yet (pass "
                             "n_targets or call validate_target on the training target)")
        return self.n_targets

    def validate_target(self, y: np.ndarray) -> np.ndarray:
        y = super().validate_target(y)
        if y.ndim != 2 or y.shape[1] < 2:
            raise ValueError(f"loss 'multi_mse' needs a 2-D target of at least 2 columns; got "
                             f"shape {y.shape}")
        if self.n_targets is None:
            self.n_targets = y.shape[1]
        elif y.shape[1] != self.n_targets:
            raise ValueError(f"loss 'multi_mse' has n_targets={self.n_targets}; the target "
                             f"has {y.shape[1]} columns")
        return y

    def init_raw(self, y: np.ndarray, sample_weight: Optional[np.ndarray]) -> np.ndarray:
        """Each target's (weighted) mean (as ``mse`` takes it of that target alone)."""
        return np.array([np.average(np.ascontiguousarray(y[:, k]), weights=sample_weight)
                         for k in range(y.shape[1])])

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        np.subtract(raw, y, out=gradient)
        hessian[...] = 1.0

    def loss(self, y, raw):
        d = np.asarray(raw, dtype=np.float64) - y
        return 0.5 * np.einsum("ij,ij->i", d, d)


class MultiLabelLoss(Loss):
    """Logloss summed over ``K`` binary labels (multilabel classification, one sigmoid per
    label): a target of 0/1 columns, ``K`` raw outputs, ``L(z, y) = sum_k softplus(z_k) -
    y_k z_k``, ``g_k = p_k - y_k``, ``h_k = p_k (1 - p_k)`` with ``p_k = sigmoid(z_k)``.

    Parameters
    ----------
    n_labels : int, optional
        ``K`` (at least 2); taken from the training target's columns when not given.
    """

    name = "multilabel"
    link = "logit"
    is_classification = True
    target_columns = True

    def __init__(self, n_labels: Optional[int] = None):
        if n_labels is not None and (isinstance(n_labels, bool) or not isinstance(
                n_labels, (int, np.integer)) or n_labels < 2):
            raise ValueError(f"loss 'multilabel': n_labels={n_labels!r} is invalid; expected "
                             "an int >= 2 or None")
        self.n_labels = None if n_labels is None else int(n_labels)

    @property
    def n_outputs(self) -> int:
        """``K``: one raw score per label."""
        if self.n_labels is None:
            raise ValueError("loss 'multilabel': the number of labels is not known yet (pass "
                             "n_labels or call validate_target on the training target)")
        return self.n_labels

    def validate_target(self, y: np.ndarray) -> np.ndarray:
        y = super().validate_target(y)
        if y.ndim != 2 or y.shape[1] < 2:
            raise ValueError(f"loss 'multilabel' needs a 2-D target of at least 2 label "
                             f"columns; got shape {y.shape}")
        if not np.all((y == 0.0) | (y == 1.0)):
            bad = np.unique(y[(y != 0.0) & (y != 1.0)])[:5]
            raise ValueError(f"loss 'multilabel' needs targets in {{0, 1}}; got {bad.tolist()}")
        if self.n_labels is None:
            self.n_labels = y.shape[1]
        elif y.shape[1] != self.n_labels:
            raise ValueError(f"loss 'multilabel' has n_labels={self.n_labels}; the target has "
                             f"{y.shape[1]} columns")
        return y

    def init_raw(self, y: np.ndarray, sample_weight: Optional[np.ndarray]) -> np.ndarray:
        """Each label's log-odds (of its weighted frequency), as ``logloss`` takes it."""
        p = np.array([np.average(np.ascontiguousarray(y[:, k]), weights=sample_weight)
                      for k in range(y.shape[1])])
        p = np.clip(p, 1e-12, 1.0 - 1e-12)
        return np.log(p / (1.0 - p))

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        p = sigmoid(raw)
        np.multiply(p, 1.0 - p, out=hessian)
        np.subtract(p, y, out=gradient)

    def loss(self, y, raw):
        z = np.asarray(raw, dtype=np.float64)
        return (np.logaddexp(0.0, z) - y * z).sum(axis=1)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        """Each label's probability, shape (n, K) (the rows do not sum to 1)."""
        return sigmoid(raw)


@hookimpl
def boostlib_add_losses():
    """Register the built-in losses."""
    return {"logloss": LogLoss, "mse": MSELoss, "huber": HuberLoss, "sla": SLALoss,
            "multiclass": MulticlassLoss, "multi_mse": MultiMSELoss,
            "multilabel": MultiLabelLoss}
