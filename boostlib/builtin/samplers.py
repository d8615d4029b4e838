"""Built-in row samplers, registered through the public hook.

Every sampler returns the selected rows (sorted, unique) and their weights, which multiply
both the gradient and the hessian of each row, so the weighted sums the tree sees are
unbiased estimates of the full ones (uniform sampling keeps weight 1, as Friedman's
stochastic gradient boosting, LightGBM bagging and XGBoost do, so its sums estimate
``subsample`` times the full ones). With ``subsample=1`` every sampler returns None: no
sampling, exactly as ``sampler=None``. The sample is never empty. Every random draw comes
from the ``rng`` the context passes (the estimator's seeded "sampler" stream).

``uniform``
    Each row is kept independently with probability ``subsample``, weight 1.
``goss``
    Gradient-based one-side sampling (LightGBM): the ``top_rate`` fraction of rows with the
    largest scores, plus ``other_rate * n`` rows drawn uniformly without replacement from the
    rest, amplified by ``n_rest / n_drawn``.
``mvs``
    Minimal Variance Sampling (CatBoost): row ``i`` is kept with probability
    ``p_i = min(1, sqrt(g_i^2 + lambda * h_i^2) / mu)``, ``mu`` such that
    ``sum_i p_i = subsample * n``, and weighted ``1 / p_i``.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from .._kernels import _order_stats, _sampling
from ..plugin.api import Context, SampleResult, Sampler, hookimpl


class _Buffers:
    """Work arrays reused across iterations (fresh ones would page-fault on every call)."""

    def __init__(self):
        self._arrays = {}

    def get(self, name: str, n: int, dtype=np.float64) -> np.ndarray:
        arr = self._arrays.get(name)
        if arr is None or arr.size < n:
            arr = self._arrays[name] = np.empty(n, dtype=dtype)
        return arr[:n]


def _draw_seed(rng: np.random.Generator) -> int:
    """One 64-bit seed for a compiled draw (one step of the sampler's stream)."""
    return int(rng.integers(0, 2**64, dtype=np.uint64))


def _bernoulli(n: int, p: float, rng: np.random.Generator, buffers: "_Buffers",
               n_threads: int) -> np.ndarray:
    """Rows kept independently with probability ``p``; one uniform row if none is."""
    rows = _sampling.bernoulli_select(p, _draw_seed(rng), buffers.get("rows", n, np.int32),
                                      n_threads)
    if rows.size == 0:
        return np.array([rng.integers(n)], dtype=np.int32)
    return rows


class _Bracket:
    """A guess at this iteration's threshold from the last one: ``[last / (1 + w),
    last * (1 + w))``, ``w`` four times the last relative move, within ``[1e-3, 0.25]``.

    The order-statistics kernels' ``*_near`` variants find a threshold inside the guess in
    one pass over the scores, and return NaN otherwise (the caller then runs the full
    kernel). A sampler's threshold moves little from one boosting iteration to the next (on
    the 1M-row benchmark, GOSS's by a median 0.03% and MVS's by 0.06%), so the guess rarely
    misses. ``hits`` and ``misses`` count the outcomes since the last :meth:`reset`.
    """

    MIN_WIDTH, MAX_WIDTH, MARGIN = 1e-3, 0.25, 4.0

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        """Forget the last threshold (a new fit)."""
        self.last: Optional[float] = None
        self.width = self.MIN_WIDTH
        self.hits = self.misses = 0

    def bounds(self) -> Optional[tuple]:
        """``(lo, hi)`` around the last threshold, or None (none yet, or not positive)."""
        last = self.last
        if last is None or not 0.0 < last < math.inf:
            return None
        return last / (1.0 + self.width), last * (1.0 + self.width)

    def find(self, near: Callable[[float, float], float], full: Callable[[], float]) -> float:
        """``near(lo, hi)`` when there is a guess and it holds the answer, else ``full()``;
        the answer becomes the next guess's centre."""
        guess = self.bounds()
        value = math.nan if guess is None else near(*guess)
        hit = value == value
        if not hit:
            value = full()
        self.record(value, guessed=guess is not None, hit=hit)
        return value

    def record(self, value: float, guessed: bool, hit: bool) -> None:
        """Count a search's outcome (``guessed``: there was a guess; ``hit``: it held the
        answer) and make its answer ``value`` the next guess's centre."""
        if hit:
            self.hits += 1
        else:
            self.misses += guessed
        if self.last is not None and self.last > 0.0 and value > 0.0:
            move = abs(value / self.last - 1.0)
            self.width = min(self.MAX_WIDTH, max(self.MIN_WIDTH, self.MARGIN * move))
        self.last = value


def _check_rate(sampler: str, name: str, value: Optional[float], upper_open: bool = False):
    if value is None:
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 < value <= 1.0
    if not ok or (upper_open and value >= 1.0):
        interval = "(0, 1)" if upper_open else "(0, 1]"
        raise ValueError(f"sampler {sampler!r}: {name}={value!r} is invalid; expected a "
                         f"number in {interval}")


class _CompiledSampler(Sampler):
    """Base of the built-ins: the kernels' thread count (from :meth:`begin`) and reused
    work arrays."""

    def __init__(self, subsample: float = 1.0, leaf_values: str = "sample"):
        super().__init__(subsample, leaf_values)
        self._n_threads = 1
        self._buffers = _Buffers()

    def begin(self, ctx: Context) -> None:
        """Take the kernels' thread count from the fit (``ctx.n_threads``)."""
        self._n_threads = int(getattr(ctx, "n_threads", 1))


class UniformSampler(_CompiledSampler):
    """Bernoulli row sampling: each row kept with probability ``subsample``, weight 1.

    Stochastic gradient boosting (Friedman 2002). The expected sample size is
    ``n * subsample``; when no row is drawn (tiny ``n * subsample``), one row is picked
    uniformly.

    Parameters
    ----------
    subsample : float, default 1.0
        Probability of keeping each row, in (0, 1].
    leaf_values : {"sample", "all"}, default "sample"
        See :class:`boostlib.api.Sampler`.
    """

    name = "uniform"

    def sample(self, gradient: np.ndarray, hessian: np.ndarray, rng: np.random.Generator,
               iteration: int) -> Optional[SampleResult]:
        """Draw the rows of one iteration (see :meth:`boostlib.api.Sampler.sample`)."""
        n = gradient.shape[0]
        if self.subsample >= 1.0:
            return None
        return SampleResult(indices=_bernoulli(n, self.subsample, rng, self._buffers,
                                               self._n_threads))


class GOSSSampler(_CompiledSampler):
    """Gradient-based one-side sampling, as LightGBM does it.

    Each iteration keeps the ``top_k = max(1, floor(n * top_rate))`` rows of largest score,
    all of them, with weight 1, and draws ``other_k = floor(n * other_rate)`` of the other
    ``n_rest`` rows uniformly without replacement, with weight ``n_rest / other_k`` on both
    gradient and hessian: the Horvitz-Thompson factor, so the weighted sums are exactly
    unbiased (the paper's ``(1 - top_rate) / other_rate`` is that factor when the counts are
    integral).

    Parameters
    ----------
    subsample : float, default 1.0
        Fraction of rows kept, ``top_rate + other_rate``. When neither rate is given it is
        split 2:1 as LightGBM's defaults are (``top_rate=0.2, other_rate=0.1`` is
        ``subsample=0.3``); when one is given, the other is ``subsample`` minus it; when both
        are given ``subsample`` must be 1 (the default) or their sum.
    top_rate, other_rate : float, optional
        The two fractions of *all* rows, in (0, 1), with ``top_rate + other_rate <= 1``.
    score : {"gh", "g"}, default "gh"
        Ranking key: ``|g * h|`` (what LightGBM's code uses) or ``|g|`` (the GOSS paper). For
        losses with a constant hessian (MSE) the two give the same sample.
    warmup : bool, default True
        As LightGBM: no sampling during the first ``int(1 / learning_rate)`` iterations.
    leaf_values : {"sample", "all"}, default "sample"
        See :class:`boostlib.api.Sampler`.

    Notes
    -----
    Ties at the threshold: every row whose score equals the ``top_k``-th largest joins the
    top set (so it can hold more than ``top_k`` rows, as in LightGBM), and the ``other_k``
    rows are drawn from the remaining ``n_rest``; with all scores equal every row is kept
    with weight 1. Unlike LightGBM, which ranks and samples each block of at least 1024 rows
    on its own, the ranking and the draw are over all rows, so the counts are exact.
    """

    name = "goss"
    SCORES = ("gh", "g")

    def __init__(self, subsample: float = 1.0, top_rate: Optional[float] = None,
                 other_rate: Optional[float] = None, score: str = "gh", warmup: bool = True,
                 leaf_values: str = "sample"):
        super().__init__(subsample, leaf_values)
        _check_rate(self.name, "top_rate", top_rate, upper_open=True)
        _check_rate(self.name, "other_rate", other_rate, upper_open=True)
        s = self.subsample
        if top_rate is None and other_rate is None:
            top_rate, other_rate = 2.0 * s / 3.0, s / 3.0
        elif top_rate is None:
            top_rate = s - other_rate if s < 1.0 else 1.0 - other_rate
        elif other_rate is None:
            other_rate = s - top_rate if s < 1.0 else 1.0 - top_rate
        elif s < 1.0 and not math.isclose(top_rate + other_rate, s, rel_tol=1e-9):
            raise ValueError(f"sampler 'goss': subsample={s!r} contradicts top_rate={top_rate!r}"
                             f" + other_rate={other_rate!r}; give the rates or subsample")
        if not (top_rate > 0.0 and other_rate > 0.0 and top_rate + other_rate <= 1.0 + 1e-12):
            raise ValueError(f"sampler 'goss': top_rate={top_rate!r} and other_rate="
                             f"{other_rate!r} must be positive with a sum <= 1 (subsample={s!r})")
        if score not in self.SCORES:
            raise ValueError(f"sampler 'goss': score={score!r} is invalid; expected one of "
                             f"{self.SCORES}")
        if not isinstance(warmup, (bool, np.bool_)):
            raise ValueError(f"sampler 'goss': warmup={warmup!r} must be True or False")
        self.top_rate = float(top_rate)
        self.other_rate = float(other_rate)
        self.score = score
        self.warmup = bool(warmup)
        self._warmup_iterations = 0
        self._bracket = _Bracket()

    def begin(self, ctx: Context) -> None:
        """Set the warm-up length from ``ctx.learning_rate`` and the kernels' threads."""
        super().begin(ctx)
        self._warmup_iterations = int(1.0 / ctx.learning_rate) if self.warmup else 0
        self._bracket.reset()

    def sample(self, gradient: np.ndarray, hessian: np.ndarray, rng: np.random.Generator,
               iteration: int) -> Optional[SampleResult]:
        """Draw the rows of one iteration (see :meth:`boostlib.api.Sampler.sample`)."""
        n = gradient.shape[0]
        if iteration < self._warmup_iterations or self.top_rate + self.other_rate >= 1.0 - 1e-12:
            return None
        top_k = max(1, int(math.floor(n * self.top_rate)))
        other_k = int(math.floor(n * self.other_rate))
        if top_k + other_k >= n:
            return None
        buf = self._buffers
        score = buf.get("score", n)
        # the threshold, and each block's rows below it (ties at the threshold are "top"),
        # first sought near the last one
        rest = np.empty(-(-n // _sampling.BLOCK_ROWS), dtype=np.int64)
        work, threads = buf.get("work", n), self._n_threads
        _sampling.goss_scores(gradient, hessian, self.score == "gh", score, threads)

        def near(lo: float, hi: float) -> float:
            return _order_stats.kth_largest_near(score, top_k, lo, hi, work, threads, rest)

        def full() -> float:
            return _order_stats.kth_largest(score, top_k, work, threads, rest)

        threshold = self._bracket.find(near, full)
        n_rest = int(rest.sum())
        if n_rest == 0:                                  # all scores tied: keep every row
            return None
        other_k = min(other_k, n_rest)
        # A uniform subset of other_k rest rows: its count in each block of rows is one
        # multivariate hypergeometric draw; the kernel draws within the blocks in parallel.
        take = rng.multivariate_hypergeometric(rest, other_k).astype(np.int64)
        factor = n_rest / other_k if other_k else 1.0
        rows, weights = _sampling.goss_select(score, threshold, rest, take, factor,
                                              _draw_seed(rng), self._n_threads)
        return SampleResult(indices=rows, weights=weights)


class MVSSampler(_CompiledSampler):
    """Minimal Variance Sampling (Ibragimov & Gusev, NeurIPS 2019), as in CatBoost.

    Row ``i`` gets the score ``r_i = sqrt(g_i^2 + lambda * h_i^2)`` and is kept with
    probability ``p_i = min(1, r_i / mu)``, independently, with weight ``1 / p_i`` (exactly 1
    when ``p_i = 1``). The draws are multiples of 2**-32, so the probability a row is really
    kept with is ``p_i`` rounded up to a multiple of 2**-32, and its weight is the exact
    inverse of that (``_kernels._sampling.mvs_select``): the weighted sums stay unbiased for
    the tiniest ``p_i``, and no weight exceeds 2**32. ``mu`` solves ``sum_i p_i = n *
    subsample`` exactly, over all rows (CatBoost solves it per block of 8192 rows), in
    expected O(n) by a compiled kernel, first in one pass near the last iteration's ``mu``
    (see ``docs/samplers.md``).

    Parameters
    ----------
    subsample : float, default 1.0
        Expected fraction of rows kept, in (0, 1].
    mvs_reg : float or None, default None
        ``lambda`` >= 0. 0 is pure importance sampling (``p`` proportional to ``|g|`` below
        ``mu``); a large value tends to uniform sampling. None (default) chooses it adaptively
        each iteration as ``(learning_rate * sum_i |g_i| / sum_i |h_i|)^2``, the square of a
        learning-rate-scaled mean Newton step. CatBoost (whose score has no hessian term, i.e.
        unit hessians) uses ``(mean |g|)^2`` for its first tree and then the squared mean
        absolute leaf value of the previous tree, which includes the learning rate; the rule
        here is on that later scale from the first tree on, and needs no state. (The MVS
        variance bound weighs ``h^2`` by a quarter of the squared leaf value, which is small
        when gradients cancel within leaves; a large ``lambda`` wastes the sample on rows
        with small gradients.) The learning rate comes from :meth:`begin`; outside a fit it
        is 1.
    leaf_values : {"sample", "all"}, default "sample"
        See :class:`boostlib.api.Sampler`.

    Notes
    -----
    * All scores zero (all-zero gradients with ``lambda * h = 0``): uniform sampling,
      ``p_i = subsample`` and weight ``1 / subsample`` (``subsample`` rounded up to a
      multiple of 2**-32, as the draw does).
    * When fewer than ``n * subsample`` rows have a positive score, those rows are all kept
      with weight 1 and the zero-score rows are dropped (they hold no gradient).
    * All scores equal: ``p_i = subsample`` for every row.
    * If the draw keeps no row (``n * subsample`` below about 1), one row is drawn with
      probability proportional to ``p_i`` and weighted ``1 / p_i``.
    """

    name = "mvs"

    def __init__(self, subsample: float = 1.0, mvs_reg: Optional[float] = None,
                 leaf_values: str = "sample"):
        super().__init__(subsample, leaf_values)
        if mvs_reg is not None and not (isinstance(mvs_reg, (int, float))
                                        and not isinstance(mvs_reg, bool)
                                        and 0.0 <= mvs_reg < math.inf):
            raise ValueError(f"sampler 'mvs': mvs_reg={mvs_reg!r} is invalid; expected None "
                             "(adaptive) or a finite number >= 0")
        self.mvs_reg = None if mvs_reg is None else float(mvs_reg)
        self._learning_rate = 1.0
        self._bracket = _Bracket()

    def begin(self, ctx: Context) -> None:
        """Take the learning rate of the adaptive ``lambda`` and the kernels' threads."""
        super().begin(ctx)
        self._learning_rate = float(ctx.learning_rate)
        self._bracket.reset()

    def regularization(self, gradient: np.ndarray, hessian: np.ndarray) -> float:
        """The ``lambda`` of this iteration (``mvs_reg``, or the adaptive rule; ``inf`` when
        the adaptive value overflows, with tiny hessians)."""
        scale, norm = self._hessian_scale(gradient, hessian)
        try:
            return (scale / norm) ** 2
        except OverflowError:
            return math.inf

    def _hessian_scale(self, gradient: np.ndarray, hessian: np.ndarray):
        """``(h_scale, h_norm)`` with ``lambda = (h_scale / h_norm)^2``, both finite: the
        adaptive rule's ``(learning_rate * sum|g|, sum|h|)``, or ``(sqrt(mvs_reg), 1)``."""
        if self.mvs_reg is not None:
            return math.sqrt(self.mvs_reg), 1.0
        g_sum, h_sum, _ = _sampling.abs_sums(gradient, hessian, self._n_threads)
        if h_sum == 0.0:
            return 0.0, 1.0
        return self._learning_rate * g_sum, h_sum

    def probabilities(self, gradient: np.ndarray, hessian: np.ndarray) -> np.ndarray:
        """Per-row keep probabilities ``p_i`` (for analysis and tests; ``sample`` draws with
        them rounded up to multiples of 2**-32)."""
        score, mu = self._score_threshold(gradient, hessian, guess=False)
        if mu is None:
            return np.full(score.size, self.subsample)
        return np.minimum(1.0, score / mu) if mu > 0 else (score > 0).astype(np.float64)

    def _score_threshold(self, gradient, hessian, guess: bool = True):
        """Scores, and ``mu`` (None: uniform fallback; 0: keep every positive score).

        With ``guess``, ``mu`` is first sought near the last iteration's (see
        :class:`_Bracket`); that answer can differ from the full kernel's in the last bits
        (its sum of the small scores is a plain, fixed-order floating-point sum)."""
        n = gradient.shape[0]
        h_scale, h_norm = self._hessian_scale(gradient, hessian)
        score = self._buffers.get("score", n)
        work, threads = self._buffers.get("work", n), self._n_threads
        target = n * self.subsample
        bounds = self._bracket.bounds() if guess and n else None
        try:
            n_pos = _sampling.mvs_scores(gradient, hessian, h_scale, h_norm, score, threads)
        except ValueError as exc:
            raise ValueError(f"sampler 'mvs': {exc}") from None
        if n_pos == 0:
            return score, None
        if target >= n_pos:
            return score, 0.0
        mu = math.nan
        if bounds is not None:
            mu = _order_stats.mvs_threshold_near(score, target, *bounds, work, threads)
        hit = mu == mu
        if not hit:
            mu = _order_stats.mvs_threshold(score, target, work, threads)
        if guess:
            self._bracket.record(mu, guessed=bounds is not None, hit=hit)
        return score, mu

    def sample(self, gradient: np.ndarray, hessian: np.ndarray, rng: np.random.Generator,
               iteration: int) -> Optional[SampleResult]:
        """Draw the rows of one iteration (see :meth:`boostlib.api.Sampler.sample`)."""
        n = gradient.shape[0]
        if self.subsample >= 1.0:
            return None
        score, mu = self._score_threshold(gradient, hessian)
        if mu is None:                                   # nothing to rank: uniform
            idx = _bernoulli(n, self.subsample, rng, self._buffers, self._n_threads)
            weight = 1.0 / _sampling.keep_probability(self.subsample)
            return SampleResult(indices=idx, weights=np.full(idx.size, weight))
        if mu == 0.0:                                    # every positive score kept
            idx = np.flatnonzero(score).astype(np.int32)
            return SampleResult(indices=idx, weights=np.ones(idx.size))
        buf = self._buffers
        rows, weights = _sampling.mvs_select(score, mu, _draw_seed(rng),
                                             buf.get("rows", n, np.int32),
                                             buf.get("weights", n), self._n_threads)
        if rows.size == 0:
            p = np.minimum(1.0, score / mu)
            i = int(rng.choice(n, p=p / p.sum()))
            return SampleResult(indices=np.array([i], dtype=np.int32),
                                weights=np.array([1.0 / p[i]]))
        return SampleResult(indices=rows, weights=weights)


@hookimpl
def boostlib_add_samplers():
    """Register the built-in samplers."""
    return {"uniform": UniformSampler, "goss": GOSSSampler, "mvs": MVSSampler}
