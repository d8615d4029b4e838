"""Ranking with query groups: the ``lambdarank`` (LambdaMART) and ``rank_xendcg`` (XE-NDCG)
losses and the ``ndcg`` and ``map`` metrics, registered through the same hooks as
third-party plugins.

Rows of one query are consecutive; the data set's ``group`` gives the number of rows of
each query, and the engine binds every loss and metric of this module to the boundaries of
the set it evaluates (:meth:`boostlib.api.Loss.bind_groups`).

Conventions (those of LightGBM and XGBoost): the gain of a relevance label ``r`` is
``2**r - 1`` (``gain="linear"``: ``r``), position ``p`` (0-based) is discounted by
``1 / log2(p + 2)``, and a query without any relevant document scores NDCG 1 and AP 1.
Equal scores are averaged over their orders, as scikit-learn's ``ndcg_score`` and
``average_precision_score`` do, so a metric never depends on the rows' order.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

from .._kernels import _ranking
from ..plugin.api import Loss, Metric, hookimpl

#: Labels a ``lambdarank`` loss accepts without an explicit ``label_gain``: 0 .. 30.
MAX_DEFAULT_LABEL = 30
#: Floor of ``1 - rho`` in :func:`xendcg_gradients` (boostlib's guard; LightGBM divides by
#: ``1 - rho`` as it is).
XENDCG_EPS = 1e-15


def _query_ids(group_ptr: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(group_ptr.size - 1), np.diff(group_ptr))


def _discounts(positions: np.ndarray, k: Optional[int]) -> np.ndarray:
    disc = 1.0 / np.log2(positions + 2.0)
    if k is not None:
        disc[positions >= k] = 0.0
    return disc


class _Ranked:
    """The rows of every query ordered by score (descending), with the runs of tied scores
    within each query; computed once per evaluation."""

    def __init__(self, score: np.ndarray, group_ptr: np.ndarray):
        qid = _query_ids(group_ptr)
        self.order = np.lexsort((-score, qid))
        self.qid = qid                       # the order keeps queries in place
        self.position = np.arange(score.size) - group_ptr[qid]
        s = score[self.order]
        change = np.r_[True, (s[1:] != s[:-1]) | (qid[1:] != qid[:-1])]
        self.start = np.flatnonzero(change)          # first row of each run of ties
        self.size = np.diff(np.r_[self.start, score.size])
        self.run_query = qid[self.start]

    def run_sums(self, values: np.ndarray) -> np.ndarray:
        """Sum of ``values`` (in ranked order) over each run of ties."""
        return np.add.reduceat(values, self.start)


def dcg(gain: np.ndarray, score: np.ndarray, group_ptr: np.ndarray,
        k: Optional[int]) -> np.ndarray:
    """DCG@k of every query, ties in ``score`` averaged over their orders (each tied
    document gets the run's mean gain at every position the run covers)."""
    ranked = _Ranked(score, group_ptr)
    mean_gain = ranked.run_sums(gain[ranked.order]) / ranked.size
    disc = ranked.run_sums(_discounts(ranked.position, k))
    return np.bincount(ranked.run_query, weights=mean_gain * disc,
                       minlength=group_ptr.size - 1)


def ideal_dcg(gain: np.ndarray, group_ptr: np.ndarray, k: Optional[int]) -> np.ndarray:
    """The largest DCG@k of every query: its documents sorted by gain."""
    qid = _query_ids(group_ptr)
    order = np.lexsort((-gain, qid))
    disc = _discounts(np.arange(gain.size) - group_ptr[qid], k)
    return np.bincount(qid, weights=gain[order] * disc, minlength=group_ptr.size - 1)


def ndcg_per_query(gain: np.ndarray, score: np.ndarray, group_ptr: np.ndarray,
                   k: Optional[int]) -> np.ndarray:
    """NDCG@k of every query (1 for a query whose ideal DCG is 0)."""
    best = ideal_dcg(gain, group_ptr, k)
    out = np.ones(best.size)
    some = best > 0
    out[some] = dcg(gain, score, group_ptr, k)[some] / best[some]
    return out


def average_precision_per_query(relevant: np.ndarray, score: np.ndarray,
                                group_ptr: np.ndarray, k: Optional[int]) -> np.ndarray:
    """AP@k of every query: the precision at each relevant document within the first k
    positions, summed and divided by ``min(k, n_relevant)`` (1 without relevant
    documents). Tied scores count as scikit-learn's ``average_precision_score`` counts
    them (one threshold per run of ties); a run cut by position k contributes the share of
    its relevant documents that falls before k."""
    ranked = _Ranked(score, group_ptr)
    n_queries = group_ptr.size - 1
    rel = relevant[ranked.order].astype(np.float64)
    tp = ranked.run_sums(rel)
    first = ranked.position[ranked.start]
    inside = ranked.size.astype(np.float64) if k is None else \
        np.clip(k - first, 0, ranked.size).astype(np.float64)
    tp_in = tp * inside / ranked.size
    # cumulative true positives before each run, within its query
    cum = np.cumsum(tp_in)
    query_start = np.searchsorted(ranked.run_query, np.arange(n_queries))
    before = cum - tp_in - np.r_[0.0, cum][query_start][ranked.run_query]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(inside > 0, (before + tp_in) / (first + inside), 0.0)
    total = np.bincount(ranked.run_query, weights=tp_in * precision, minlength=n_queries)
    n_rel = np.bincount(_query_ids(group_ptr), weights=relevant.astype(np.float64),
                        minlength=n_queries)
    denom = n_rel if k is None else np.minimum(n_rel, k)
    out = np.ones(n_queries)
    some = n_rel > 0
    out[some] = total[some] / denom[some]
    return out


def _query_weights(weight: Optional[np.ndarray], group_ptr: np.ndarray) -> Optional[np.ndarray]:
    """A query's weight: the mean of its rows' weights."""
    if weight is None:
        return None
    return np.add.reduceat(weight, group_ptr[:-1]) / np.diff(group_ptr)


def _check_k(k: Optional[int], what: str) -> Optional[int]:
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"{what}: k={k!r} is invalid; expected a positive int or None "
                         "(every position)")
    return int(k)


def _bound_groups(loss: Loss, n_rows: int) -> np.ndarray:
    """The query boundaries a ranking loss was bound to, checked against ``n_rows``."""
    if loss.group_ptr is None:
        raise ValueError(f"loss {loss.name!r} ranks within query groups: pass group= (the "
                         "number of rows of each query) with the data")
    if int(loss.group_ptr[-1]) != n_rows:
        raise ValueError(f"loss {loss.name!r}: the query groups cover "
                         f"{int(loss.group_ptr[-1])} rows, the data has {n_rows}")
    return loss.group_ptr


class LambdaRankLoss(Loss):
    """LambdaMART with NDCG-driven lambdas (LightGBM's ``lambdarank``).

    Parameters
    ----------
    truncation_level : int, default 30
        Pairs count only when their better-ranked document is among the first
        ``truncation_level`` positions (and NDCG is normalised at that depth).
    sigma : float, default 1.0
        Slope of the pairwise logistic function.
    normalize : bool, default True
        LightGBM's ``lambdarank_norm``: scale each pair by ``1 / (0.01 + |score gap|)``
        and each query's lambdas by ``log2(1 + S) / S``.
    label_gain : sequence of float, optional
        The gain of each label ``0, 1, ...`` (default ``2**label - 1`` for labels 0 .. 30).

    Notes
    -----
    Relevance labels are non-negative integers. The raw score is the ranking score
    (``predict`` returns it). The recorded loss is ``1 - NDCG@truncation_level`` of each
    row's query, averaged over rows: queries count by their number of documents; the
    ``ndcg`` metric averages over queries.
    """

    name = "lambdarank"
    needs_groups = True
    link = "identity"

    def __init__(self, truncation_level: int = 30, sigma: float = 1.0, normalize: bool = True,
                 label_gain: Optional[Sequence[float]] = None):
        if isinstance(truncation_level, bool) or not isinstance(
                truncation_level, (int, np.integer)) or truncation_level < 1:
            raise ValueError(f"lambdarank: truncation_level={truncation_level!r} is invalid; "
                             "expected an int >= 1")
        if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) \
                or not (0 < sigma < np.inf):
            raise ValueError(f"lambdarank: sigma={sigma!r} is invalid; expected a positive "
                             "finite number")
        if not isinstance(normalize, (bool, np.bool_)):
            raise ValueError(f"lambdarank: normalize={normalize!r} is invalid; expected a "
                             "bool")
        if label_gain is None:
            gain = 2.0 ** np.arange(MAX_DEFAULT_LABEL + 1) - 1.0
        else:
            gain = np.asarray(label_gain, dtype=np.float64)
            if gain.ndim != 1 or gain.size == 0 or not np.all(np.isfinite(gain)) \
                    or np.any(gain < 0):
                raise ValueError(f"lambdarank: label_gain={label_gain!r} is invalid; "
                                 "expected a non-empty list of finite gains >= 0")
            label_gain = [float(v) for v in gain]
        self.truncation_level = int(truncation_level)
        self.sigma = float(sigma)
        self.normalize = bool(normalize)
        self.label_gain = label_gain
        self._gain = np.ascontiguousarray(gain)
        self._inverse_max_dcg: Optional[tuple] = None

    def validate_target(self, y: np.ndarray) -> np.ndarray:
        y = super().validate_target(y)
        top = self._gain.size - 1
        if np.any(y < 0) or np.any(y != np.round(y)) or np.any(y > top):
            bad = y[(y < 0) | (y != np.round(y)) | (y > top)][0]
            raise ValueError(f"loss 'lambdarank': relevance labels must be integers 0 .. {top}"
                             f" (the length of label_gain); got {bad!r}")
        return y

    def bind_groups(self, group_ptr: np.ndarray) -> "LambdaRankLoss":
        bound = super().bind_groups(group_ptr)
        bound._inverse_max_dcg = None
        return bound

    def _ptr(self, n_rows: int) -> np.ndarray:
        return _bound_groups(self, n_rows)

    def _inverse_ideal(self, y: np.ndarray, ptr: np.ndarray) -> np.ndarray:
        """``1 / maxDCG@truncation_level`` of every query (0 without relevant documents),
        kept for the target it was computed for (the training target, every iteration)."""
        cached = self._inverse_max_dcg
        if cached is not None and cached[0] is y:
            return cached[1]
        best = ideal_dcg(self._gain[y.astype(np.intp)], ptr, self.truncation_level)
        inv = np.zeros_like(best)
        np.divide(1.0, best, out=inv, where=best > 0)
        self._inverse_max_dcg = (y, inv)
        return inv

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        ptr = self._ptr(y.shape[0])
        _ranking.lambdarank_gradients(y, np.ascontiguousarray(raw), ptr, self._gain,
                                      self._inverse_ideal(y, ptr), self.truncation_level,
                                      self.sigma, self.normalize, gradient, hessian,
                                      n_threads)

    def loss(self, y, raw):
        ptr = self._ptr(y.shape[0])
        inv = self._inverse_ideal(y, ptr)
        ndcg = dcg(self._gain[y.astype(np.intp)], np.asarray(raw, np.float64), ptr,
                   self.truncation_level) * inv
        ndcg[inv == 0] = 1.0
        return np.repeat(1.0 - ndcg, np.diff(ptr))


def _segment_sums(values: np.ndarray, group_ptr: np.ndarray) -> np.ndarray:
    """The sum of ``values`` over every query, repeated on each of its rows."""
    return np.repeat(np.add.reduceat(values, group_ptr[:-1]), np.diff(group_ptr))


def _log_softmax(score: np.ndarray, group_ptr: np.ndarray) -> np.ndarray:
    """``log softmax`` of the scores within every query (its maximum subtracted first)."""
    sizes = np.diff(group_ptr)
    shifted = score - np.repeat(np.maximum.reduceat(score, group_ptr[:-1]), sizes)
    return shifted - np.log(_segment_sums(np.exp(shifted), group_ptr))


def xendcg_gradients(y: np.ndarray, score: np.ndarray, group_ptr: np.ndarray,
                     gamma: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """XE-NDCG's gradients and hessians (LightGBM's ``RankXENDCG``), all queries at once.

    Within a query, ``rho = softmax(score)`` and the target distribution is
    ``p_i = phi_i / sum_j phi_j`` with ``phi_i = 2**y_i - gamma_i``. With
    ``L1_i = rho_i - p_i`` (the cross entropy's gradient), ``L2_i = sum_(j != i) L1_j /
    (1 - rho_j)`` and ``L3_i = sum_(j != i) rho_j L2_j / (1 - rho_j)``, the gradient is
    ``L1_i + rho_i L2_i + rho_i L3_i`` and the hessian ``rho_i (1 - rho_i)``. Both are 0 on a
    query of one row. ``1 - rho_j`` is floored at ``XENDCG_EPS`` (a document holding all
    of the softmax's mass would divide by 0).

    Parameters
    ----------
    y : ndarray of float64, shape (n,)
        Relevance labels, non-negative integers.
    score : ndarray of float64, shape (n,)
        Raw scores.
    group_ptr : ndarray of int64, shape (n_queries + 1,)
        Query boundaries; every query has at least one row.
    gamma : ndarray of float64, shape (n,)
        The draws in ``[0, 1)``, one per row.

    Returns
    -------
    (gradient, hessian) : two ndarrays of float64, shape (n,)
    """
    rho = np.exp(_log_softmax(score, group_ptr))
    phi = np.exp2(y) - gamma
    l1 = rho - phi / _segment_sums(phi, group_ptr)
    inverse = 1.0 / np.maximum(1.0 - rho, XENDCG_EPS)
    a = l1 * inverse
    l2 = _segment_sums(a, group_ptr) - a
    b = rho * l2 * inverse
    l3 = _segment_sums(b, group_ptr) - b
    gradient = l1 + rho * (l2 + l3)
    hessian = rho * (1.0 - rho)
    single = np.repeat(np.diff(group_ptr) == 1, np.diff(group_ptr))
    gradient[single] = 0.0
    hessian[single] = 0.0
    return gradient, hessian


class RankXENDCGLoss(Loss):
    """XE-NDCG: a listwise cross entropy for ranking (Bruch et al., 2019, "An Alternative
    Cross Entropy Loss for Learning-to-Rank"; LightGBM's ``rank_xendcg``).

    Within each query the scores' softmax ``rho`` is fitted to the distribution
    ``p_i proportional to 2**y_i - gamma_i``, where the ``gamma_i`` are drawn uniformly from
    ``[0, 1)`` afresh for every document at every gradient computation, as LightGBM does.
    The draws come from the fit's random stream ``"loss"`` (the loss declares
    ``needs_rng``), one per row in row order, so a ``random_state`` gives the same model
    whatever ``n_jobs``. :func:`xendcg_gradients` gives the formulas (LightGBM's: the cross
    entropy's gradient plus its second- and third-order correction terms).

    It has no parameters and costs a few vectorised passes over the rows per iteration,
    against LambdaRank's pairs. Relevance labels are non-negative integers up to 30. The
    raw score is the ranking score (``predict`` returns it). The recorded loss is the
    cross entropy ``-sum_i p_i log rho_i`` of each row's query at ``gamma = 1/2`` (the
    draws' mean), averaged over rows: queries count by their number of documents.

    Unbound to a fit's stream (``rng`` None, e.g. in :func:`boostlib.testing.check_loss`),
    every call draws from a generator seeded with 0, so the derivatives are deterministic.
    """

    name = "rank_xendcg"
    needs_groups = True
    needs_rng = True
    link = "identity"

    def validate_target(self, y: np.ndarray) -> np.ndarray:
        y = super().validate_target(y)
        bad = (y < 0) | (y != np.round(y)) | (y > MAX_DEFAULT_LABEL)
        if np.any(bad):
            raise ValueError(f"loss 'rank_xendcg': relevance labels must be integers 0 .. "
                             f"{MAX_DEFAULT_LABEL}; got {y[bad][0]!r}")
        return y

    def _ptr(self, n_rows: int) -> np.ndarray:
        return _bound_groups(self, n_rows)

    def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
        ptr = self._ptr(y.shape[0])
        rng = self.rng if self.rng is not None else np.random.default_rng(0)
        g, h = xendcg_gradients(y, np.asarray(raw, dtype=np.float64), ptr,
                                rng.random(y.shape[0]))
        gradient[...] = g
        hessian[...] = h

    def loss(self, y, raw):
        ptr = self._ptr(y.shape[0])
        phi = np.exp2(y) - 0.5
        p = phi / _segment_sums(phi, ptr)
        cross = -p * _log_softmax(np.asarray(raw, dtype=np.float64), ptr)
        return _segment_sums(cross, ptr)


class _RankingMetric(Metric):
    """A metric averaged over queries (weighted by each query's mean row weight)."""

    higher_is_better = True
    reads = "raw"
    needs_groups = True
    base_name = ""

    def __init__(self, k: Optional[int] = None):
        self.k = _check_k(k, f"metric {self.base_name!r}")
        self.name = self.base_name if self.k is None else f"{self.base_name}@{self.k}"

    def check_task(self, n_outputs: int, is_classification: bool) -> None:
        if n_outputs != 1:
            raise ValueError(f"eval_metric {self.name!r} ranks by one score per row; this "
                             f"model has {n_outputs} outputs")

    def evaluate(self, y_true, y_pred, sample_weight):
        if y_pred.ndim != 1:
            raise ValueError(f"metric {self.name!r} needs one score per row (a 1-D y_pred)")
        if np.any(y_true < 0):
            raise ValueError(f"metric {self.name!r}: relevance labels must be >= 0")
        ptr = self.group_ptr
        per_query = self.per_query(y_true, y_pred, ptr)
        weight = _query_weights(sample_weight, ptr)
        if weight is None:
            return float(np.mean(per_query))
        total = float(np.sum(weight))
        if not total > 0:
            raise ValueError(f"metric {self.name!r}: sample_weight sums to 0")
        return float(np.sum(per_query * weight) / total)

    def per_query(self, y_true: np.ndarray, score: np.ndarray,
                  group_ptr: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class NDCGMetric(_RankingMetric):
    """Normalized discounted cumulative gain at ``k`` (``ndcg@k`` in ``eval_metric``),
    averaged over queries; scikit-learn's ``ndcg_score`` of the gains.

    Parameters
    ----------
    k : int, optional
        Positions counted (default: all).
    gain : {"exponential", "linear"}
        ``2**label - 1`` (LightGBM, XGBoost) or the label itself (scikit-learn).
    """

    base_name = "ndcg"

    def __init__(self, k: Optional[int] = None, gain: str = "exponential"):
        super().__init__(k)
        if gain not in ("exponential", "linear"):
            raise ValueError(f"metric 'ndcg': gain={gain!r} is invalid; expected "
                             "'exponential' or 'linear'")
        self.gain = gain

    def per_query(self, y_true, score, group_ptr):
        gains = np.exp2(y_true) - 1.0 if self.gain == "exponential" else y_true
        return ndcg_per_query(gains, score, group_ptr, self.k)


class MAPMetric(_RankingMetric):
    """Mean average precision at ``k`` (``map@k``): documents with label > 0 are relevant.
    With ``k`` at least the query size, each query's AP is scikit-learn's
    ``average_precision_score``.

    Parameters
    ----------
    k : int, optional
        Positions counted (default: all).
    """

    base_name = "map"

    def per_query(self, y_true, score, group_ptr):
        return average_precision_per_query(y_true > 0, score, group_ptr, self.k)


@hookimpl
def boostlib_add_losses():
    """Register the ranking losses."""
    return {"lambdarank": LambdaRankLoss, "rank_xendcg": RankXENDCGLoss}


@hookimpl
def boostlib_add_metrics():
    """Register the ranking metrics."""
    return {"ndcg": NDCGMetric, "map": MAPMetric}
