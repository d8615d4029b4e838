"""Built-in survival losses and metrics: ``cox``, ``aft``, ``cindex`` and ``aft_nloglik``.

Labels (as XGBoost's ``survival:cox`` and ``survival:aft``):

* ``cox``: one signed time per row, ``y > 0`` an event at ``y``, ``y < 0`` a row
  right-censored at ``|y|`` (``y == 0`` is refused: its sign is undefined).
* ``aft``: two columns per row, the lower and upper bound of the time: ``lower == upper``
  an exact time, ``upper = inf`` right-censored at ``lower``, ``lower = 0`` left-censored
  at ``upper``, ``0 < lower < upper < inf`` interval-censored.

``cox`` is Cox's proportional hazards model with Breslow's handling of ties: the raw score
``z`` is the log hazard ratio and the loss of a data set is minus the log partial
likelihood, ``sum_i d_i (log S(t_i) - z_i)`` with ``S(t) = sum_{j: t_j >= t} exp(z_j)``
(``d_i`` 1 for an event). Its derivatives (XGBoost's; exact where times tie, see
:class:`CoxLoss`) are ``g_m = exp(z_m) A_m - d_m`` and
``h_m = exp(z_m) A_m - exp(2 z_m) B_m`` with ``A_m = sum_{i: d_i, t_i <= t_m} 1 / S(t_i)``
and ``B_m = sum_{i: d_i, t_i <= t_m} 1 / S(t_i)^2``.

``aft`` is the accelerated failure time model ``log T = z + sigma eps`` (XGBoost's,
Barnwal, Cho and Hocking 2020), its loss the negative log-likelihood of the interval,
computed with XGBoost's safeguards by ``_kernels/_survival.pyx``.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from .._kernels import _survival
from ..plugin.api import Loss, Metric, hookimpl

#: The distributions of the AFT noise ``eps``, in the order of the kernel's codes.
AFT_DISTRIBUTIONS = ("normal", "logistic", "extreme")


def _cox_target(y: np.ndarray, what: str) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"{what} needs one signed time per row (positive: event, negative: "
                         f"censored); got y of shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{what}: y contains NaN or infinite times")
    if np.any(y == 0):
        raise ValueError(f"{what}: y contains times of 0, which are neither events (y > 0) "
                         "nor censored rows (y < 0); give a positive time")
    return np.ascontiguousarray(y)


def _aft_target(y: np.ndarray, what: str) -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 2 or y.shape[1] != 2:
        raise ValueError(f"{what} needs two columns per row, the lower and upper bound of "
                         f"the time; got y of shape {y.shape}")
    lower, upper = y[:, 0], y[:, 1]
    if np.any(np.isnan(y)) or np.any(~np.isfinite(lower)) or np.any(np.isneginf(upper)):
        raise ValueError(f"{what}: y contains NaN, or an infinite lower bound, or an upper "
                         "bound of -inf (only the upper bound may be inf: right-censored)")
    if np.any(lower < 0):
        bad = np.unique(lower[lower < 0])[:5]
        raise ValueError(f"{what}: lower bounds must be >= 0 (0: left-censored); got "
                         f"{bad.tolist()}")
    if np.any(lower > upper):
        row = int(np.flatnonzero(lower > upper)[0])
        raise ValueError(f"{what}: a lower bound exceeds its upper bound (row {row}: "
                         f"{lower[row]!r} > {upper[row]!r})")
    if np.any(upper <= 0):
        raise ValueError(f"{what}: upper bounds must be > 0 (an exact time of 0, or an "
                         "interval ending at 0, has no log-time)")
    return np.ascontiguousarray(y)


def survival_times(y: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(time, event)`` of survival labels: signed Cox times (1-D) or AFT bounds (2-D).

    For bounds, an exact row (``lower == upper``) is an event at that time; every other
    row counts as censored at its lower bound (right-censoring; an interval- or
    left-censored row is only known to outlive its lower bound).
    """
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 1:
        return np.abs(y), y > 0
    return np.ascontiguousarray(y[:, 0]), y[:, 0] == y[:, 1]


class CoxLoss(Loss):
    """Cox proportional hazards: minus the log partial likelihood, Breslow's ties.

    The raw score is the log hazard ratio; ``transform`` gives the hazard ratio
    ``exp(z)`` (XGBoost's prediction for ``survival:cox``). Targets are signed times:
    ``y > 0`` an event at ``y``, ``y < 0`` right-censored at ``-y``.

    The loss of a data set is the sum over its rows of ``d_i (log S(t_i) - z_i)``, the
    risk set ``S(t) = sum_{j: t_j >= t} exp(z_j)`` taken within that data set (so a
    validation set's loss uses its own risk sets); :meth:`loss` returns these terms, so
    the recorded mean loss is the partial likelihood over the number of rows.

    Derivatives are XGBoost's (``CoxRegression`` in ``src/objective/regression_obj.cu``),
    with two differences: tied event times enter every tied row's sums (the exact
    derivative of Breslow's likelihood; XGBoost's loop adds a tied event only to the rows
    sorted after it), and the exponentials are taken relative to the largest raw score (no
    overflow). Sample weights multiply each row's gradient and hessian, as in XGBoost; they
    do not enter the risk sets (a row of weight 0 still counts in the others' risk sets).

    The derivatives of one row depend on every row (``couples_rows``): distributed training
    refuses this loss. The constant start is 0 (the likelihood does not change with a
    constant).
    """

    name = "cox"
    link = "log"
    couples_rows = True

    def validate_target(self, y: np.ndarray) -> np.ndarray:
        y = _cox_target(y, f"loss {self.name!r}")
        if y.size and not np.any(y > 0):
            raise ValueError(f"loss {self.name!r}: every row is censored (y < 0); the partial "
                             "likelihood needs at least one event (y > 0)")
        return y

    def init_raw(self, y: np.ndarray, sample_weight: Optional[np.ndarray]) -> float:
        return 0.0

    @staticmethod
    def _parts(y: np.ndarray, raw: np.ndarray):
        """Rows by decreasing time, each row's tie group, the scaled exponentials and risk
        sums (``exp(z - top)``, ``S / exp(top)`` per group) and the groups' event counts."""
        raw = np.asarray(raw, dtype=np.float64)
        time = np.abs(y)
        order = np.argsort(-time, kind="stable")
        t = time[order]
        start = np.empty(t.size, dtype=bool)
        start[:1] = True
        np.not_equal(t[1:], t[:-1], out=start[1:])
        group = np.cumsum(start) - 1                   # tie group of each sorted row
        ends = np.append(np.flatnonzero(start)[1:], t.size) - 1
        top = float(raw.max()) if raw.size else 0.0
        ex = np.exp(raw[order] - top)
        risk = np.cumsum(ex)[ends]                      # S of each group, scaled by e^-top
        events = np.bincount(group, weights=(y[order] > 0).astype(np.float64),
                             minlength=ends.size)
        return order, group, ex, risk, events, top

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        if y.size == 0:
            return
        order, group, ex, risk, events, _ = self._parts(y, raw)
        # groups run from the latest time to the earliest: a row's sums take the events
        # at its time and earlier, the groups from its own to the last
        a = np.cumsum((events / risk)[::-1])[::-1]
        b = np.cumsum((events / (risk * risk))[::-1])[::-1]
        p = ex
        g = p * a[group] - (y[order] > 0)
        h = p * a[group] - p * p * b[group]
        gradient[order] = g
        hessian[order] = np.maximum(h, 0.0)

    def loss(self, y, raw):
        raw = np.asarray(raw, dtype=np.float64)
        out = np.zeros(y.shape[0])
        if y.size == 0:
            return out
        order, group, _, risk, _, top = self._parts(y, raw)
        event = y[order] > 0
        log_s = np.log(risk[group]) + top
        out[order[event]] = log_s[event] - raw[order][event]
        return out

    def transform(self, raw: np.ndarray) -> np.ndarray:
        """The hazard ratio ``exp(raw)`` (relative to a raw score of 0)."""
        return np.exp(np.minimum(raw, 700.0))


def _aft_settings(distribution: str, sigma: float, what: str) -> Tuple[str, float]:
    if distribution not in AFT_DISTRIBUTIONS:
        raise ValueError(f"{what}: aft_distribution={distribution!r} is invalid; expected "
                         f"one of {AFT_DISTRIBUTIONS}")
    ok = isinstance(sigma, (int, float, np.integer, np.floating)) \
        and not isinstance(sigma, (bool, np.bool_))
    if not (ok and np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"{what}: aft_sigma={sigma!r} is invalid; expected a finite number "
                         "> 0")
    return distribution, float(sigma)


def aft_nloglik(y: np.ndarray, raw: np.ndarray, distribution: str = "normal",
                sigma: float = 1.0, n_threads: int = 1) -> np.ndarray:
    """Pointwise AFT negative log-likelihood of bounds ``y`` (n, 2) at raw scores
    (log-times) ``raw``."""
    raw = np.ascontiguousarray(raw, dtype=np.float64)
    out = np.empty(raw.shape[0])
    _survival.aft_loss(np.ascontiguousarray(y[:, 0]), np.ascontiguousarray(y[:, 1]), raw,
                       AFT_DISTRIBUTIONS.index(distribution), sigma, out, n_threads)
    return out


class AFTLoss(Loss):
    """Accelerated failure time: ``log T = z + sigma eps`` with ``eps`` normal, logistic or
    extreme-value (XGBoost's ``survival:aft``), on interval-censored labels.

    The target has two columns, each row's lower and upper bound of its time (see the
    module docstring); the loss is the negative log-likelihood of the interval, the
    derivatives XGBoost's, clipped as there (gradient to [-15, 15], hessian to
    [1e-16, 15]; limits taken where the likelihood underflows). ``transform`` gives the
    predicted time ``exp(z)``.

    Parameters
    ----------
    aft_distribution : {"normal", "logistic", "extreme"}, default "normal"
        The distribution of ``eps`` (XGBoost's ``aft_loss_distribution``).
    aft_sigma : float, default 1.0
        Its scale ``sigma > 0`` (XGBoost's ``aft_loss_distribution_scale``).
    """

    name = "aft"
    link = "log"
    target_bounds = True

    def __init__(self, aft_distribution: str = "normal", aft_sigma: float = 1.0):
        self.aft_distribution, self.aft_sigma = _aft_settings(
            aft_distribution, aft_sigma, f"loss {self.name!r}")
        self._dist = AFT_DISTRIBUTIONS.index(self.aft_distribution)

    def validate_target(self, y: np.ndarray) -> np.ndarray:
        y = _aft_target(y, f"loss {self.name!r}")
        if y.size and not np.any(np.isfinite(y[:, 1])):
            raise ValueError(f"loss {self.name!r}: every row is right-censored (upper bound "
                             "inf); the likelihood needs a row with a finite upper bound")
        return y

    def init_raw(self, y: np.ndarray, sample_weight: Optional[np.ndarray]) -> float:
        """The constant raw score of least weighted loss: bisection on the sum of the
        (monotone) gradients, between the extreme log-bounds widened by ``20 sigma``."""
        finite = np.concatenate([y[:, 0][y[:, 0] > 0], y[:, 1][np.isfinite(y[:, 1])]])
        logs = np.log(finite)
        lo = float(logs.min()) - 20.0 * self.aft_sigma
        hi = float(logs.max()) + 20.0 * self.aft_sigma
        lower, upper = np.ascontiguousarray(y[:, 0]), np.ascontiguousarray(y[:, 1])
        g, h, raw = np.empty(y.shape[0]), np.empty(y.shape[0]), np.empty(y.shape[0])
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            raw.fill(mid)
            _survival.aft_gradient(lower, upper, raw, self._dist, self.aft_sigma, g, h, 1)
            total = float(np.sum(g if sample_weight is None else g * sample_weight))
            if total > 0:
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-12 * max(1.0, abs(mid)):
                break
        return float(0.5 * (lo + hi))

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        _survival.aft_gradient(np.ascontiguousarray(y[:, 0]), np.ascontiguousarray(y[:, 1]),
                               np.ascontiguousarray(raw, dtype=np.float64), self._dist,
                               self.aft_sigma, gradient, hessian, n_threads)

    def loss(self, y, raw):
        return aft_nloglik(y, raw, self.aft_distribution, self.aft_sigma)

    def mean_loss(self, y, raw, weight=None, n_threads=1):
        values = aft_nloglik(y, raw, self.aft_distribution, self.aft_sigma, n_threads)
        return float(np.average(values, weights=weight))

    def transform(self, raw: np.ndarray) -> np.ndarray:
        """The predicted time ``exp(raw)``."""
        return np.exp(np.minimum(raw, 700.0))


def concordance_index(time: np.ndarray, event: np.ndarray, risk: np.ndarray,
                      sample_weight: Optional[np.ndarray] = None) -> float:
    """Harrell's concordance index of risk scores (higher: earlier event).

    A pair ``(i, j)`` is comparable when ``i`` has an event and ``time[j] > time[i]``, or
    the times are equal and ``j`` is censored (scikit-survival's
    ``concordance_index_censored``; lifelines counts the same pairs); it is concordant when
    ``risk[i] > risk[j]``, and counts one half when the risks tie. Each pair weighs
    ``w_i w_j`` (integer weights: repeated rows). The index is the weighted share of
    concordant pairs among the comparable ones.

    Raises
    ------
    ValueError
        When no pair is comparable (no event, or no row outlives one), or a risk is NaN.
    """
    time = np.ascontiguousarray(time, dtype=np.float64)
    risk = np.asarray(risk, dtype=np.float64)
    if np.isnan(risk).any():
        raise ValueError("the concordance index needs risk scores that are not NaN")
    _, rank = np.unique(risk, return_inverse=True)
    rank = np.ascontiguousarray(rank.ravel(), dtype=np.intp)
    order = np.ascontiguousarray(np.argsort(-time, kind="stable"), dtype=np.intp)
    w = np.empty(0) if sample_weight is None else np.ascontiguousarray(sample_weight,
                                                                         dtype=np.float64)
    num, den = _survival.concordance(time, np.ascontiguousarray(event, dtype=np.uint8), rank,
                                     int(rank.max()) + 1 if rank.size else 0, w, order)
    if not den > 0:
        raise ValueError("the concordance index has no comparable pair (it needs an event "
                         "and a row that outlives it)")
    return float(num / den)


class CIndexMetric(Metric):
    """Harrell's concordance index (C-index) of a survival model, higher is better.

    Reads the raw scores and the labels' form: signed Cox times (1-D ``y``; the raw score
    is a log hazard ratio, a risk) or AFT bounds (``(n, 2)``; the raw score is a log time,
    so the risk is its negative; only exact rows are events, the others censored at their
    lower bound). See :func:`concordance_index` for the pairs and ties.
    """

    name = "cindex"
    higher_is_better = True
    reads = "raw"
    survival_labels = "times"

    def check_task(self, n_outputs: int, is_classification: bool) -> None:
        if n_outputs != 1 or is_classification:
            raise ValueError(f"eval_metric {self.name!r} needs a survival model (loss 'cox' "
                             "or 'aft')")

    def evaluate(self, y_true, y_pred, sample_weight):
        if y_pred.ndim != 1:
            raise ValueError(f"metric {self.name!r} needs one raw score per row")
        time, event = survival_times(y_true)
        risk = y_pred if y_true.ndim == 1 else -y_pred
        try:
            return concordance_index(time, event, risk, sample_weight)
        except ValueError as exc:
            raise ValueError(f"metric {self.name!r}: {exc}") from None


class AFTNLogLikMetric(Metric):
    """Weighted mean AFT negative log-likelihood (XGBoost's ``aft-nloglik``) of the raw
    scores (log-times) on AFT bounds ``(n, 2)``.

    Parameters
    ----------
    aft_distribution : {"normal", "logistic", "extreme"}, default "normal"
    aft_sigma : float, default 1.0
        As for the loss ``aft`` (pass a metric instance to match a loss that does not use
        the defaults).
    """

    name = "aft_nloglik"
    reads = "raw"
    survival_labels = "bounds"

    def __init__(self, aft_distribution: str = "normal", aft_sigma: float = 1.0):
        self.aft_distribution, self.aft_sigma = _aft_settings(
            aft_distribution, aft_sigma, f"metric {self.name!r}")

    def check_task(self, n_outputs: int, is_classification: bool) -> None:
        if n_outputs != 1 or is_classification:
            raise ValueError(f"eval_metric {self.name!r} needs a survival model (loss 'aft')")

    def evaluate(self, y_true, y_pred, sample_weight):
        y = _aft_target(y_true, f"metric {self.name!r}")
        if y_pred.ndim != 1:
            raise ValueError(f"metric {self.name!r} needs one raw score per row")
        values = aft_nloglik(y, y_pred, self.aft_distribution, self.aft_sigma)
        if sample_weight is None:
            return float(np.mean(values))
        total = float(np.sum(sample_weight))
        if not total > 0:
            raise ValueError("sample_weight sums to 0; a weighted mean needs a positive total")
        return float(np.sum(values * sample_weight) / total)


@hookimpl
def boostlib_add_losses():
    """Register the survival losses."""
    return {"cox": CoxLoss, "aft": AFTLoss}


@hookimpl
def boostlib_add_metrics():
    """Register the survival metrics."""
    return {"cindex": CIndexMetric, "aft_nloglik": AFTNLogLikMetric}
