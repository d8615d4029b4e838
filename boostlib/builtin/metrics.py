"""Built-in evaluation metrics, registered through the same hook as third-party ones.

They avoid ``np.dot``: it calls the BLAS, whose threads keep spinning after the call and
would take the cores from the next tree's OpenMP threads (a fit with ``auc`` on 200,000
validation rows ran 2.5x slower per tree that way).

Every metric is a weighted mean (or, for ``auc``, ``r2``, ``f1``, ``average_precision``,
``auc_ovr`` and ``auc_ovo``, a weighted statistic) that agrees with scikit-learn's function
of the same meaning; ``tests/test_metrics.py`` and ``tests/test_metrics_new.py`` check each
against it. (``auc_ovo`` with weights has no scikit-learn counterpart: see its class.)
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..plugin.api import Metric, hookimpl
from .losses import check_huber_alpha, huber

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


def _binary_auc(name: str, score: np.ndarray, positive: np.ndarray,
                sample_weight: Optional[np.ndarray]) -> float:
    """The compiled weighted ROC AUC (ties count one half), errors named after ``name``."""
    from .._kernels import _auc

    if sample_weight is not None:
        sample_weight = np.ascontiguousarray(sample_weight)
    try:
        return _auc.roc_auc(np.ascontiguousarray(score, dtype=np.float64),
                            np.ascontiguousarray(positive, dtype=np.float64), sample_weight)
    except ValueError as exc:
        raise ValueError(f"metric {name!r} {exc}") from None


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
        if y_pred.ndim != 1:
            raise ValueError(f"metric {self.name!r} is for binary scores (a 1-D y_pred)")
        return _binary_auc(self.name, y_pred, y_true, sample_weight)


class AveragePrecisionMetric(Metric):
    """Average precision of a binary classifier: the area under the precision-recall curve
    as the weighted sum ``sum_k (R_k - R_(k-1)) P_k`` over the distinct scores, highest
    first (scikit-learn's ``average_precision_score``). Rows of tied scores share one
    threshold. Reads the raw scores (the probabilities' order, without the ties rounding
    creates).

    Without a positive row of positive weight the recall is undefined; it returns 0.0 then,
    as scikit-learn does (which also warns). Rows of weight 0 do not count.
    """

    name = "average_precision"
    higher_is_better = True
    reads = "raw"

    def check_task(self, n_outputs: int, is_classification: bool) -> None:
        _classification(self.name, n_outputs, is_classification, binary=True)

    def evaluate(self, y_true, y_pred, sample_weight):
        if y_pred.ndim != 1:
            raise ValueError(f"metric {self.name!r} is for binary scores (a 1-D y_pred)")
        return average_precision(y_true == 1.0, y_pred, sample_weight)


def average_precision(positive: np.ndarray, score: np.ndarray,
                      sample_weight: Optional[np.ndarray]) -> float:
    """Weighted average precision of ``score`` for the rows where ``positive`` is True.

    Parameters
    ----------
    positive : ndarray of bool, shape (n,)
        Which rows are positives.
    score : ndarray of float64, shape (n,)
        Scores, higher meaning more likely positive; not NaN.
    sample_weight : ndarray of float64, shape (n,), or None
        Non-negative row weights (None: all 1).

    Returns
    -------
    float
        ``sum_k (R_k - R_(k-1)) P_k`` over the runs of equal scores in descending order,
        ``P_k`` and ``R_k`` the weighted precision and recall of the rows scoring at least
        the ``k``-th score; 0.0 when the positives weigh nothing.
    """
    order = np.argsort(-score, kind="stable")
    s = score[order]
    pos = positive[order]
    w = np.ones(s.size) if sample_weight is None else sample_weight[order]
    tp = np.cumsum(np.where(pos, w, 0.0))
    fp = np.cumsum(np.where(pos, 0.0, w))
    last = np.flatnonzero(np.r_[s[1:] != s[:-1], True])    # the end of each run of ties
    tp, fp = tp[last], fp[last]
    if not tp.size or not tp[-1] > 0:
        return 0.0
    seen = tp + fp
    precision = np.divide(tp, seen, out=np.zeros_like(tp), where=seen > 0)
    # the recall gained at each threshold is its true positives over all of them
    return float(np.sum(np.diff(tp, prepend=0.0) * precision) / tp[-1])


class F1Metric(Metric):
    """F1 score of a binary classifier's predicted class (probability of class 1 above
    0.5, as ``predict``): ``2 TP / (2 TP + FP + FN)`` with weighted counts
    (scikit-learn's ``f1_score``).

    When there is neither a positive row nor a positive prediction (the denominator is 0)
    it returns 0.0, as scikit-learn's default ``zero_division`` does (which also warns).
    """

    name = "f1"
    higher_is_better = True
    reads = "class"

    def check_task(self, n_outputs: int, is_classification: bool) -> None:
        _classification(self.name, n_outputs, is_classification, binary=True)

    def evaluate(self, y_true, y_pred, sample_weight):
        w = np.ones(y_true.size) if sample_weight is None else sample_weight
        truth, said = y_true == 1.0, y_pred == 1.0
        tp = float(np.sum(w[truth & said]))
        wrong = float(np.sum(w[truth != said]))          # FP + FN
        return 0.0 if 2.0 * tp + wrong == 0.0 else 2.0 * tp / (2.0 * tp + wrong)


class _MulticlassAUC(Metric):
    """Shared parts of ``auc_ovr`` and ``auc_ovo``: multiclass probabilities, every class
    present in ``y_true`` with positive weight (its AUC is undefined otherwise)."""

    higher_is_better = True
    reads = "response"

    def check_task(self, n_outputs: int, is_classification: bool) -> None:
        _classification(self.name, n_outputs, is_classification)
        if n_outputs < 2:
            raise ValueError(f"eval_metric {self.name!r} is for more than two classes; this "
                             "model has two (use 'auc')")

    def _classes(self, y_true: np.ndarray, y_pred: np.ndarray,
                 sample_weight: Optional[np.ndarray]) -> int:
        if y_pred.ndim != 2 or y_pred.shape[1] < 2:
            raise ValueError(f"metric {self.name!r} needs class probabilities, a y_pred of "
                             "shape (n, K) with K >= 2")
        k = y_pred.shape[1]
        index = y_true.astype(np.intp)
        if np.any(index != y_true) or np.any(index < 0) or np.any(index >= k):
            raise ValueError(f"metric {self.name!r}: y_true must hold class indices 0 .. "
                             f"{k - 1}")
        present = np.bincount(index, weights=sample_weight, minlength=k) > 0
        if not present.all():
            raise ValueError(f"metric {self.name!r}: class {int(np.argmin(present))} of "
                             f"{k} does not occur in y_true (with positive weight); its AUC "
                             "is undefined")
        return k


class AUCOvRMetric(_MulticlassAUC):
    """Multiclass AUC, one class against the rest: the mean over the classes ``k`` of the
    weighted ROC AUC of ``p_k`` for the rows of class ``k`` against all others (scikit-learn's
    ``roc_auc_score(multi_class="ovr", average="macro")``). Every class must occur in
    ``y_true``, else it raises ValueError (scikit-learn refuses that too)."""

    name = "auc_ovr"

    def evaluate(self, y_true, y_pred, sample_weight):
        k = self._classes(y_true, y_pred, sample_weight)
        return float(np.mean([_binary_auc(self.name, y_pred[:, c], y_true == c, sample_weight)
                              for c in range(k)]))


class AUCOvOMetric(_MulticlassAUC):
    """Multiclass AUC, one class against another (Hand and Till, 2001): the mean over the
    pairs of classes ``a < b`` of the mean of two ROC AUCs on the rows of classes ``a`` and
    ``b`` only, that of ``p_a`` for class ``a`` and that of ``p_b`` for class ``b``
    (scikit-learn's ``roc_auc_score(multi_class="ovo", average="macro")``). Every class must
    occur in ``y_true``, else it raises ValueError.

    With ``sample_weight`` each of those binary AUCs is weighted by its rows' weights (the
    pairs are still averaged with equal weight). scikit-learn refuses weights for ``ovo``,
    so the weighted value has no scikit-learn counterpart; it is the macro mean over pairs of
    scikit-learn's weighted binary ``roc_auc_score``, and without weights (or with equal
    weights) it is scikit-learn's ``ovo`` value.
    """

    name = "auc_ovo"

    def evaluate(self, y_true, y_pred, sample_weight):
        k = self._classes(y_true, y_pred, sample_weight)
        pairs = []
        for a in range(k):
            for b in range(a + 1, k):
                rows = (y_true == a) | (y_true == b)
                w = None if sample_weight is None else sample_weight[rows]
                y = y_true[rows]
                pairs.append(0.5 * (_binary_auc(self.name, y_pred[rows, a], y == a, w)
                                    + _binary_auc(self.name, y_pred[rows, b], y == b, w)))
        return float(np.mean(pairs))


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


class MAPEMetric(Metric):
    """Weighted mean absolute percentage error, ``|y - p| / max(|y|, eps)`` with ``eps``
    float64's machine epsilon (scikit-learn's ``mean_absolute_percentage_error``, which
    returns a fraction, not a percentage). A target of 0 therefore gives a huge but finite
    error unless the prediction is exactly 0 too."""

    name = "mape"

    def evaluate(self, y_true, y_pred, sample_weight):
        eps = np.finfo(np.float64).eps
        return _mean(np.abs(y_pred - y_true) / np.maximum(np.abs(y_true), eps), sample_weight)


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


class HuberMetric(_RegressionMetric):
    """Weighted mean Huber loss of the predictions at ``alpha`` (LightGBM's ``huber``
    metric): ``r**2 / 2`` for a residual ``|r| <= alpha``, else
    ``alpha (|r| - alpha / 2)``, with ``r = prediction - y``.

    Parameters
    ----------
    alpha : float, default 0.9
        The residual size where the loss turns from quadratic to linear (Huber's delta;
        LightGBM's ``alpha``), finite and > 0.
    """

    name = "huber"

    def __init__(self, alpha: float = 0.9):
        self.alpha = check_huber_alpha(alpha, f"metric {self.name!r}")

    def evaluate(self, y_true, y_pred, sample_weight):
        return _mean(huber(y_pred - y_true, self.alpha), sample_weight)


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
    return {m.name: m for m in (LogLossMetric, MultiLogLossMetric, AUCMetric,
                                AveragePrecisionMetric, F1Metric, AUCOvRMetric, AUCOvOMetric,
                                AccuracyMetric, ErrorMetric, RMSEMetric, MAEMetric, MAPEMetric,
                                R2Metric, QuantileMetric, HuberMetric, PoissonMetric,
                                GammaMetric, TweedieMetric)}
