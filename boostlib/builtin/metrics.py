"""Built-in evaluation metrics, registered through the same hook as third-party ones.

They avoid ``np.dot``: it calls the BLAS, whose threads keep spinning after the call and
would take the cores from the next tree's OpenMP threads (a fit with ``auc`` on 200,000
validation rows ran 2.5x slower per tree that way).

Every metric is a weighted mean (or, for ``auc`` and ``r2``, a weighted statistic) that
agrees with scikit-learn's function of the same meaning; ``tests/test_metrics.py`` checks
each against it.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..plugin.api import Metric, hookimpl

#: Probabilities are clipped to ``[EPS, 1 - EPS]`` before their logarithm.
EPS = 1e-15


def _mean(values: np.ndarray, w: Optional[np.ndarray]) -> float:
    if w is None:
        return float(np.mean(values))
    total = float(np.sum(w))
    if not total > 0:
        raise ValueError("sample_weight sums to 0; a weighted mean needs a positive total")
    return float(np.sum(values * w) / total)


def _classification(name: str, n_outputs: int, is_classification: bool,
                    binary: bool = False) -> None:
    if not is_classification:
        raise ValueError(f"eval_metric {name!r} needs a classifier (a classification loss)")
    if binary and n_outputs != 1:
        raise ValueError(f"eval_metric {name!r} is for two classes; this model has "
                         f"{n_outputs} (use 'multi_logloss' or 'accuracy')")


class LogLossMetric(Metric):
    """Binary cross-entropy of the probability of class 1 (scikit-learn's ``log_loss``)."""

    name = "logloss"
    reads = "response"

    def check_task(self, n_outputs: int, is_classification: bool) -> None:
        _classification(self.name, n_outputs, is_classification, binary=True)

    def evaluate(self, y_true, y_pred, sample_weight):
        if y_pred.ndim == 2 and y_pred.shape[1] == 2:
            y_pred = y_pred[:, 1]
        p = np.clip(y_pred, EPS, 1 - EPS)
        return _mean(-(y_true * np.log(p) + (1 - y_true) * np.log1p(-p)), sample_weight)


class MultiLogLossMetric(Metric):
    """Multiclass cross-entropy: minus the log of the probability of each row's class."""

    name = "multi_logloss"
    reads = "response"

    def check_task(self, n_outputs: int, is_classification: bool) -> None:
        _classification(self.name, n_outputs, is_classification)

    def evaluate(self, y_true, y_pred, sample_weight):
        if y_pred.ndim == 1:                     # two classes: the probability of class 1
            y_pred = np.column_stack([1 - y_pred, y_pred])
        index = y_true.astype(np.intp)
        if np.any(index != y_true) or index.min() < 0 or index.max() >= y_pred.shape[1]:
            raise ValueError(f"metric {self.name!r}: y_true must hold class indices 0 .. "
                             f"{y_pred.shape[1] - 1}")
        p = np.clip(y_pred[np.arange(index.size), index], EPS, None)
        return _mean(-np.log(p), sample_weight)


class AUCMetric(Metric):
    """Area under the ROC curve of a binary classifier, weighted, ties counted one half
    (scikit-learn's ``roc_auc_score``). Reads the raw scores: the same order as the
    probabilities, without the ties that rounding probabilities to 1.0 would create.

    It runs the compiled ``_kernels._auc.roc_auc``: an exact radix sort of the scores and
    one pass in their order, about 2 ms on one thread for 200,000 rows in a fit. NaN scores
    are refused (they have no order)."""

    name = "auc"
    higher_is_better = True
    reads = "raw"

    def check_task(self, n_outputs: int, is_classification: bool) -> None:
        _classification(self.name, n_outputs, is_classification, binary=True)

    def evaluate(self, y_true, y_pred, sample_weight):
        from .._kernels import _auc

        if y_pred.ndim != 1:
            raise ValueError(f"metric {self.name!r} is for binary scores (a 1-D y_pred)")
        if sample_weight is not None:
            sample_weight = np.ascontiguousarray(sample_weight)
        try:
            return _auc.roc_auc(np.ascontiguousarray(y_pred), np.ascontiguousarray(y_true),
                                sample_weight)
        except ValueError as exc:
            raise ValueError(f"metric {self.name!r} {exc}") from None


class AccuracyMetric(Metric):
    """Weighted fraction of rows whose predicted class is right."""

    name = "accuracy"
    higher_is_better = True
    reads = "class"

    def check_task(self, n_outputs: int, is_classification: bool) -> None:
        _classification(self.name, n_outputs, is_classification)

    def evaluate(self, y_true, y_pred, sample_weight):
        return _mean((y_true == y_pred).astype(np.float64), sample_weight)


class ErrorMetric(AccuracyMetric):
    """Weighted fraction of rows whose predicted class is wrong (1 - accuracy)."""

    name = "error"
    higher_is_better = False

    def evaluate(self, y_true, y_pred, sample_weight):
        return _mean((y_true != y_pred).astype(np.float64), sample_weight)


class RMSEMetric(Metric):
    """Root of the weighted mean squared error."""

    name = "rmse"

    def evaluate(self, y_true, y_pred, sample_weight):
        return math.sqrt(_mean((y_true - y_pred) ** 2, sample_weight))


class MAEMetric(Metric):
    """Weighted mean absolute error."""

    name = "mae"

    def evaluate(self, y_true, y_pred, sample_weight):
        return _mean(np.abs(y_true - y_pred), sample_weight)


class R2Metric(Metric):
    """Coefficient of determination, ``1 - SS_res / SS_tot`` (weighted; scikit-learn's
    ``r2_score``: 1 for a perfect fit of a constant target, else 0 for it)."""

    name = "r2"
    higher_is_better = True

    def evaluate(self, y_true, y_pred, sample_weight):
        w = np.ones(y_true.size) if sample_weight is None else sample_weight
        residual = float(np.sum(w * (y_true - y_pred) ** 2))
        if np.all(y_true == y_true[0]):          # a constant target (its mean may round)
            return 1.0 if residual == 0.0 else 0.0
        mean = np.sum(w * y_true) / w.sum()
        return 1.0 - residual / float(np.sum(w * (y_true - mean) ** 2))


class _RegressionMetric(Metric):
    """A metric of regression predictions only (refuses classifiers)."""

    def check_task(self, n_outputs: int, is_classification: bool) -> None:
        if is_classification:
            raise ValueError(f"eval_metric {self.name!r} is a regression metric; this model "
                             "is a classifier")


class QuantileMetric(_RegressionMetric):
    """Weighted mean pinball loss at ``alpha`` (scikit-learn's ``mean_pinball_loss``).

    Parameters
    ----------
    alpha : float, default 0.5
        The quantile, in (0, 1).
    """

    name = "quantile"

    def __init__(self, alpha: float = 0.5):
        if not (isinstance(alpha, (int, float)) and 0.0 < alpha < 1.0):
            raise ValueError(f"quantile: alpha={alpha!r} is invalid; expected a number in "
                             "(0, 1)")
        self.alpha = float(alpha)

    def evaluate(self, y_true, y_pred, sample_weight):
        diff = y_true - y_pred
        return _mean(np.maximum(self.alpha * diff, (self.alpha - 1.0) * diff), sample_weight)


class TweedieMetric(_RegressionMetric):
    """Weighted mean Tweedie deviance of power ``variance_power`` (scikit-learn's
    ``mean_tweedie_deviance``): 0 is the squared error, 1 Poisson, 2 Gamma.

    Parameters
    ----------
    variance_power : float, default 1.5
        0, or at least 1 (powers in (0, 1) have no distribution).
    """

    name = "tweedie"

    def __init__(self, variance_power: float = 1.5):
        p = variance_power
        if not (isinstance(p, (int, float)) and math.isfinite(p) and (p == 0 or p >= 1)):
            raise ValueError(f"{self.name}: variance_power={p!r} is invalid; expected 0 or a "
                             "number >= 1")
        self.variance_power = float(p)

    def evaluate(self, y_true, y_pred, sample_weight):
        p, y, mu = self.variance_power, y_true, y_pred
        if p > 0 and np.any(mu <= 0):
            raise ValueError(f"metric {self.name!r}: predictions must be > 0 for "
                             f"variance_power={p:g}")
        if (1 <= p < 2 and np.any(y < 0)) or (p >= 2 and np.any(y <= 0)):
            raise ValueError(f"metric {self.name!r}: y_true must be "
                             f"{'> 0' if p >= 2 else '>= 0'} for variance_power={p:g}")
        if p == 0:
            dev = (y - mu) ** 2
        elif p == 1:
            with np.errstate(divide="ignore", invalid="ignore"):
                dev = 2 * (np.where(y > 0, y * np.log(y / mu), 0.0) - y + mu)
        elif p == 2:
            dev = 2 * (np.log(mu / y) + y / mu - 1)
        else:
            dev = 2 * (np.power(np.maximum(y, 0), 2 - p) / ((1 - p) * (2 - p))
                       - y * np.power(mu, 1 - p) / (1 - p) + np.power(mu, 2 - p) / (2 - p))
        return _mean(dev, sample_weight)


class PoissonMetric(TweedieMetric):
    """Weighted mean Poisson deviance (scikit-learn's ``mean_poisson_deviance``)."""

    name = "poisson"

    def __init__(self):
        super().__init__(1.0)


class GammaMetric(TweedieMetric):
    """Weighted mean Gamma deviance (scikit-learn's ``mean_gamma_deviance``)."""

    name = "gamma"

    def __init__(self):
        super().__init__(2.0)


@hookimpl
def boostlib_add_metrics():
    """Register the built-in metrics."""
    return {m.name: m for m in (LogLossMetric, MultiLogLossMetric, AUCMetric, AccuracyMetric,
                                ErrorMetric, RMSEMetric, MAEMetric, R2Metric, QuantileMetric,
                                PoissonMetric, GammaMetric, TweedieMetric)}
