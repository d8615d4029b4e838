"""Built-in row samplers, registered through the public hook.

Every sampler returns the selected rows (sorted, unique) and their weights, which multiply
both the gradient and the hessian of each row, so the weighted sums the tree sees are
unbiased estimates of the full ones (uniform sampling keeps weight 1, as Friedman's
stochastic gradient boosting, LightGBM bagging and XGBoost do, so its sums estimate
``subsample`` times the full ones). With ``subsample=1`` every sampler returns None: no
sampling, exactly as ``sampler=None``. The sample is never empty. Every random draw comes
from the ``rng`` the context passes (the estimator's seeded "sampler" stream).

In a distributed fit (``ctx.collective`` with several workers), ``goss`` and ``mvs`` sample
the rows of all workers as one, from thresholds over every worker's scores
(:mod:`boostlib.builtin.global_thresholds`); see their notes. ``uniform`` keeps each
worker's rows with probability ``subsample`` as on one machine (see its notes for an empty
draw).

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
from ..plugin.collective import LOCAL, Collective
from . import global_thresholds


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
    """Base of the built-ins: the fit's context (its kernels' thread count) and collective
    (from :meth:`begin`), and reused work arrays."""

    def __init__(self, subsample: float = 1.0, leaf_values: str = "sample"):
        super().__init__(subsample, leaf_values)
        self._context: Optional[Context] = None
        self._buffers = _Buffers()
        self._collective: Collective = LOCAL
        self._rows: Optional[tuple] = None

    def begin(self, ctx: Context) -> None:
        """Keep the fit's context, whose thread count (``ctx.n_threads``) the kernels read
        at every draw (a default thread count follows the machine's load through the fit),
        and take its collective (``ctx.collective``; one machine when it has none)."""
        self._context = ctx
        self._collective = getattr(ctx, "collective", LOCAL)
        self._rows = None

    @property
    def _n_threads(self) -> int:
        """The fit's thread count now (1 before :meth:`begin`); the rows drawn do not
        depend on it."""
        return int(getattr(self._context, "n_threads", 1))

    def __getstate__(self) -> dict:
        """The state to pickle: without the fit's context and collective (a distributed
        fit's holds connections), which the next :meth:`begin` sets again."""
        state = self.__dict__.copy()
        state["_context"], state["_collective"], state["_rows"] = None, LOCAL, None
        return state

    def _total_rows(self, n: int) -> int:
        """The rows of every worker of a distributed fit, this worker having ``n``: one
        collective round at the first call of a fit, cached for the next ones (every worker
        samples its same rows at every iteration of a fit)."""
        if self._rows is None or self._rows[0] != n:
            self._rows = (n, int(self._collective.total(n)[0]))
        return self._rows[1]

    def _shared_seed(self, rng: np.random.Generator) -> float:
        """This worker's part of a seed every worker shares: rank 0 draws it (< 2**53, so
        exact in a float64 sum), the others contribute 0."""
        return float(rng.integers(0, 2**53)) if self._collective.rank == 0 else 0.0


class UniformSampler(_CompiledSampler):
    """Bernoulli row sampling: each row kept with probability ``subsample``, weight 1.

    Stochastic gradient boosting (Friedman 2002). The expected sample size is
    ``n * subsample``; when no row is drawn (tiny ``n * subsample``), one row is picked
    uniformly.

    In a distributed fit each worker keeps its own rows with probability ``subsample``; its
    part may be empty. Only when ``subsample * n`` (all workers' rows) is below
    ``SMALL_TARGET`` does one more round check that some worker drew a row, and if none did,
    one row of all workers' is picked uniformly (by the worker holding it).

    Parameters
    ----------
    subsample : float, default 1.0
        Probability of keeping each row, in (0, 1].
    leaf_values : {"sample", "all"}, default "sample"
        See :class:`boostlib.api.Sampler`.
    """

    name = "uniform"
    #: Below this expected sample size (all workers' rows), a distributed fit checks that
    #: the sample is not empty (one more round).
    SMALL_TARGET = 40.0

    def sample(self, gradient: np.ndarray, hessian: np.ndarray, rng: np.random.Generator,
               iteration: int) -> Optional[SampleResult]:
        """Draw the rows of one iteration (see :meth:`boostlib.api.Sampler.sample`)."""
        n = gradient.shape[0]
        if self.subsample >= 1.0:
            return None
        if not self._collective.distributed:
            return SampleResult(indices=_bernoulli(n, self.subsample, rng, self._buffers,
                                                   self._n_threads))
        rows = _sampling.bernoulli_select(self.subsample, _draw_seed(rng),
                                          self._buffers.get("rows", n, np.int32),
                                          self._n_threads)
        coll = self._collective
        n_all = self._total_rows(n)
        if n_all * self.subsample < self.SMALL_TARGET:
            w = coll.n_workers
            shared = np.zeros(w + 2)        # rows per worker, rows drawn, a shared seed
            shared[coll.rank] = n
            shared[w] = rows.size
            shared[w + 1] = self._shared_seed(rng)
            coll.allreduce(shared)
            if shared[w] == 0:              # no worker drew a row: pick one of all rows
                counts = shared[:w].astype(np.int64)
                pick = int(np.random.default_rng(int(shared[w + 1])).integers(counts.sum()))
                start = int(counts[:coll.rank].sum())
                if start <= pick < start + n:
                    rows = np.array([pick - start], dtype=np.int32)
        return SampleResult(indices=rows)


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

    In a distributed fit (``ctx.collective`` with several workers) the sample is drawn as if
    all workers' rows were one: ``n``, ``top_k`` and ``other_k`` are those of every
    worker's rows, the threshold is the ``top_k``-th largest score over all of them
    (:func:`boostlib.builtin.global_thresholds.kth_largest`, exact), and each worker keeps
    its rows at or above it. The ``other_k`` rows are split among the workers by one
    multivariate hypergeometric draw over their numbers of rest rows, the same on every
    worker (from a seed rank 0 draws and shares in the round that sums those numbers), and
    each worker draws its share uniformly from its own rest rows: the union is a uniform
    subset of ``other_k`` of all ``n_rest`` rest rows, exactly as on one machine, with the
    same factor ``n_rest / other_k`` on every worker (so the weighted sums stay exactly
    unbiased and the sample size is exactly the one-machine one). A worker's own sample may
    be empty (no rows, or none at or above the threshold and none drawn); the global one
    never is. Cost per iteration: the threshold's rounds (3 or 4, see that function) and
    one round for the split, plus one at the first iteration for the number of rows.
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
        if self._collective.distributed:
            return self._sample_distributed(gradient, hessian, rng)
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

    def _sample_distributed(self, gradient: np.ndarray, hessian: np.ndarray,
                            rng: np.random.Generator) -> Optional[SampleResult]:
        """:meth:`sample` in a distributed fit: this worker's part of the sample of all
        workers' rows (see the class notes). Every worker takes the same branches, from
        sums over all workers."""
        coll, n, threads = self._collective, gradient.shape[0], self._n_threads
        n_all = self._total_rows(n)
        top_k = max(1, int(math.floor(n_all * self.top_rate)))
        other_k = int(math.floor(n_all * self.other_rate))
        if top_k + other_k >= n_all:
            return None
        score = self._buffers.get("score", n)
        _sampling.goss_scores(gradient, hessian, self.score == "gh", score, threads)
        threshold = global_thresholds.kth_largest(score, top_k, coll)
        rest = _sampling.goss_rest_counts(score, threshold, threads)
        # every worker's rest rows, and a seed for the split of other_k among them
        w, rank = coll.n_workers, coll.rank
        shared = np.zeros(w + 1)
        shared[rank] = float(rest.sum())
        shared[w] = self._shared_seed(rng)
        coll.allreduce(shared)
        rests = shared[:w].astype(np.int64)
        n_rest = int(rests.sum())
        if n_rest == 0:                                  # all scores tied: keep every row
            return None
        other_k = min(other_k, n_rest)
        split = np.random.default_rng(int(shared[w])).multivariate_hypergeometric(rests,
                                                                                  other_k)
        mine = int(split[rank])
        take = (rng.multivariate_hypergeometric(rest, mine).astype(np.int64) if mine
                else np.zeros(rest.size, dtype=np.int64))
        factor = n_rest / other_k if other_k else 1.0
        rows, weights = _sampling.goss_select(score, threshold, rest, take, factor,
                                              _draw_seed(rng), threads)
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

    In a distributed fit (``ctx.collective`` with several workers) the probabilities are
    those of all workers' rows as one: the adaptive ``lambda`` is computed from the sums of
    ``|g|`` and ``|h|`` over every worker (one collective round), ``mu`` solves
    ``sum_i p_i = subsample * n`` over every worker's rows
    (:func:`boostlib.builtin.global_thresholds.mvs_threshold`; when no more scores than
    that are positive, ``mu`` is the smallest positive score: each is kept, weight 1), and
    each worker keeps its own rows with probabilities ``p_i`` and weights ``1 / p_i`` as
    above (the uniform case, too, is decided over all workers). A worker's own sample may
    be empty. The global one is made non-empty as above (the one row drawn over all
    workers' rows, by a worker chosen in proportion to its ``sum p_i``) only when
    ``subsample * n < 40`` (one more round); above that, an empty draw has a probability
    below ``exp(-40)``.
    """

    name = "mvs"
    #: Below this expected sample size (all workers' rows), a distributed fit checks that
    #: the sample is not empty (one more round).
    SMALL_TARGET = 40.0

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
        the adaptive value overflows, with tiny hessians). In a distributed fit the adaptive
        rule's sums are over every worker (a collective round: every worker calls it)."""
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
        if self._collective.distributed:                 # every worker's sums
            g_sum, h_sum = (float(x) for x in self._collective.total(g_sum, h_sum))
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
        (its sum of the small scores is a plain, fixed-order floating-point sum). In a
        distributed fit, see :meth:`_global_score_threshold`."""
        if self._collective.distributed:
            return self._global_score_threshold(gradient, hessian)
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

    def _global_score_threshold(self, gradient: np.ndarray, hessian: np.ndarray) -> tuple:
        """:meth:`_score_threshold` in a distributed fit: this worker's scores, and ``mu``
        over every worker's rows (None: no positive score on any worker, uniform fallback;
        when at most ``subsample * n`` scores are positive, the smallest of them, which
        keeps every one with weight 1, instead of the one-machine 0)."""
        n = gradient.shape[0]
        n_all = self._total_rows(n)
        h_scale, h_norm = self._hessian_scale(gradient, hessian)
        score = self._buffers.get("score", n)
        try:
            _sampling.mvs_scores(gradient, hessian, h_scale, h_norm, score, self._n_threads)
        except ValueError as exc:
            raise ValueError(f"sampler 'mvs': {exc}") from None
        mu = global_thresholds.mvs_threshold(score, n_all * self.subsample, self._collective)
        return score, (None if mu == 0.0 else mu)

    def sample(self, gradient: np.ndarray, hessian: np.ndarray, rng: np.random.Generator,
               iteration: int) -> Optional[SampleResult]:
        """Draw the rows of one iteration (see :meth:`boostlib.api.Sampler.sample`)."""
        n = gradient.shape[0]
        if self.subsample >= 1.0:
            return None
        if self._collective.distributed:
            return self._sample_distributed(gradient, hessian, rng)
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

    def _sample_distributed(self, gradient: np.ndarray, hessian: np.ndarray,
                            rng: np.random.Generator) -> SampleResult:
        """:meth:`sample` in a distributed fit: this worker's rows of the sample of all
        workers' rows (see the class notes; possibly none)."""
        n, buf, threads = gradient.shape[0], self._buffers, self._n_threads
        score, mu = self._global_score_threshold(gradient, hessian)
        if mu is None:                                   # nothing to rank: uniform
            rows = _sampling.bernoulli_select(self.subsample, _draw_seed(rng),
                                              buf.get("rows", n, np.int32), threads)
            weight = 1.0 / _sampling.keep_probability(self.subsample)
            weights = np.full(rows.size, weight)

            def mass() -> float:
                return n * self.subsample

            def pick() -> tuple:
                return int(rng.integers(n)), weight
        else:
            rows, weights = _sampling.mvs_select(score, mu, _draw_seed(rng),
                                                 buf.get("rows", n, np.int32),
                                                 buf.get("weights", n), threads)

            def mass() -> float:
                return float(np.minimum(1.0, score / mu).sum())

            def pick() -> tuple:
                p = np.minimum(1.0, score / mu)
                i = int(rng.choice(n, p=p / p.sum()))
                return i, 1.0 / p[i]
        if self._total_rows(n) * self.subsample < self.SMALL_TARGET:
            rows, weights = self._never_empty(rows, weights, rng, mass, pick)
        return SampleResult(indices=rows, weights=weights)

    def _never_empty(self, rows: np.ndarray, weights: np.ndarray, rng: np.random.Generator,
                     mass: Callable[[], float], pick: Callable[[], tuple]) -> tuple:
        """``(rows, weights)``, or, when no worker kept a row, one row over all workers: a
        worker chosen with probability proportional to its ``mass()`` (its rows' summed
        keep probabilities) draws it with ``pick()`` (row, weight). One collective round."""
        coll = self._collective
        w, rank = coll.n_workers, coll.rank
        shared = np.zeros(w + 2)
        shared[rank] = mass() if rows.size == 0 else 0.0
        shared[w] = rows.size
        shared[w + 1] = self._shared_seed(rng)
        coll.allreduce(shared)
        if shared[w] > 0:
            return rows, weights
        masses = shared[:w]
        chosen = int(np.random.default_rng(int(shared[w + 1])).choice(
            w, p=masses / masses.sum()))
        if chosen != rank:
            return rows, weights
        i, weight = pick()
        return np.array([i], dtype=np.int32), np.array([weight])


@hookimpl
def boostlib_add_samplers():
    """Register the built-in samplers."""
    return {"uniform": UniformSampler, "goss": GOSSSampler, "mvs": MVSSampler}
