"""The samplers' thresholds over the rows of every worker of a distributed fit.

In a distributed fit each worker holds the scores of its own rows, and GOSS's and MVS's
thresholds are order statistics of all of them. The two searches here find them with a
few :meth:`~boostlib.plugin.collective.Collective.allreduce` rounds of small arrays, and
every worker decides only from the summed arrays, so every worker returns the same value.

The search works on the scores' IEEE-754 bit patterns, whose order is the order of the
values for non-negative doubles:

1. *Statistics* (one round): each worker's largest and smallest positive score, each in its
   own slot of a one-hot-by-rank vector (a sum of one non-zero entry and zeros is exact),
   with the counts of rows and of positive scores (and, for MVS, the sum of the scores).
   Most edge cases end here (``k`` beyond the positive scores, all scores equal, the whole
   MVS sample below every score, ...).
2. *Refinement* (a round each): the bit patterns of the range still holding the answer,
   ``[lo, hi]``, are cut into at most :data:`BINS` equal bins (a power of two patterns
   each; the bins are nearly equal in relative width, whatever the scale of the scores);
   each worker counts (for MVS also sums) its scores per bin, and the bin holding the
   answer becomes the new range. After the first refinement each worker keeps only its
   scores in the range (few), and each later round also carries every worker's smallest
   and largest score in the range (one-hot), which ends the search when they are equal
   (ties) and narrows the range to them.
3. *Gather* (one round): once the range holds at most ``GATHER_VALUES / n_workers``
   scores over all workers, each worker writes its scores in the range to its own slot of
   a vector of ``n_workers * count`` values; the sum holds every one of them, and the
   answer is computed exactly from them (unused slots stay 0, never a score in the range,
   which is above 0).

Every refinement narrows the range at least ``BINS / 2``-fold, and a range of one bit
pattern holds one value, so the search always ends, with the exact answer. With continuous
scores the range holds a few thousandths of the rows after the first refinement and a
few millionths after the second, so a call takes 3 rounds (the statistics, one refinement
and the gather) while ``n_workers`` times the former is at most ``GATHER_VALUES`` (about a
million rows in all over 4 to 16 workers), and 4 up to hundreds of millions over tens of
workers. A large group of tied scores at the answer costs a round or so more (the search
ends when the range's smallest and largest scores are equal); only many distinct scores
within a few ulps of the answer cost more. Each worker's cost is a few NumPy passes over
its scores in the first two rounds (about 3 ms per million rows), and passes over the few
scores in the range after.

:func:`kth_largest` is exact (the ``k``-th largest value itself: the counts are integers).
:func:`mvs_threshold` finds the MVS ``mu`` exactly as the one-machine kernel
(``_kernels._order_stats.mvs_threshold``) defines it, ``mu = (sum of the scores below mu)
/ (target - the number of scores at or above it)``, from the same partition of the scores;
its sums of scores are floating-point sums in another order (per worker, per bin, then
across workers), so the two answers agree to a relative ``1e-12`` or so, not to the bit.
"""
from __future__ import annotations

import math
from typing import Optional, Tuple

import numpy as np

from ..plugin.collective import LOCAL, Collective

#: Bins per refinement round (a power of two, at least 2).
BINS = 4096
#: Largest ``n_workers * count`` a gather round sends (float64 values).
GATHER_VALUES = 1 << 15

_ABS = np.uint64((1 << 63) - 1)          # clears the sign bit (-0.0 becomes +0.0)


def _bits(x: float) -> int:
    """The bit pattern of the double ``x`` (>= 0)."""
    return int(np.array(x, dtype=np.float64).view(np.uint64))


def _value(bits: int) -> float:
    """The double of the bit pattern ``bits``."""
    return float(np.array(bits, dtype=np.uint64).view(np.float64))


def _as_scores(score: np.ndarray) -> np.ndarray:
    """``score`` as a contiguous 1-D float64 array (no copy when it is one)."""
    arr = np.ascontiguousarray(score, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"score must be 1-D, got shape {arr.shape}")
    return arr


class _Stats:
    """Round 1: the global count, positive count, largest and smallest positive score (and
    sum) of the scores, from one allreduce; raises ValueError on every worker when a score
    is negative, NaN or infinite on any worker."""

    def __init__(self, score: np.ndarray, collective: Collective, with_sum: bool):
        w, rank, n = collective.n_workers, collective.rank, score.size
        vec = np.zeros(2 * w + 4)
        vec[rank], vec[w + rank] = -math.inf, math.inf
        if n:
            top, bottom = float(score.max()), float(score.min())
            n_pos = int(np.count_nonzero(score))
            vec[rank] = top
            if bottom > 0.0:
                vec[w + rank] = bottom
            elif n_pos:
                vec[w + rank] = float(np.min(score, where=score > 0.0, initial=math.inf))
            vec[2 * w:] = (n, n_pos, float(score.sum()) if with_sum else 0.0,
                           not (bottom >= 0.0 and top < math.inf))
        collective.allreduce(vec)
        if vec[2 * w + 3]:
            raise ValueError("scores must be finite and non-negative (on every worker)")
        self.n, self.n_pos = int(vec[2 * w]), int(vec[2 * w + 1])
        self.total = float(vec[2 * w + 2])
        self.max = float(vec[:w].max())
        self.min_pos = float(vec[w:2 * w].min())


class _Search:
    """The refinement and gather rounds over the positive scores in a range of bit patterns
    (see the module notes), shared by both thresholds.

    ``values`` are this worker's scores; until the first refinement (``full``) they are all
    its scores, which may fall below the range (zeros) but never above it; afterwards only
    those in the range. ``count`` is the number of scores in the range over all workers.
    """

    def __init__(self, score: np.ndarray, lo: float, hi: float, count: int,
                 collective: Collective, with_sums: bool):
        self.values = score
        self.full = True
        self.lo, self.hi = _bits(lo), _bits(hi)
        self.count = count
        self.collective = collective
        self.with_sums = with_sums

    def gather_due(self) -> bool:
        """Whether the next round gathers the scores of the range."""
        return self.count * self.collective.n_workers <= GATHER_VALUES

    def local(self) -> np.ndarray:
        """This worker's scores in the range."""
        if self.full:
            self.values = self.values[self.values >= _value(self.lo)]
            self.full = False
        return self.values

    def gather(self) -> np.ndarray:
        """Every worker's scores in the range, ascending (one round; ``count`` of them)."""
        c = self.count
        mine = self.local()
        vec = np.zeros(self.collective.n_workers * c)
        vec[self.collective.rank * c:self.collective.rank * c + mine.size] = mine
        self.collective.allreduce(vec)
        return np.sort(vec[vec > 0.0])

    def refine(self) -> Tuple[np.ndarray, Optional[np.ndarray], np.ndarray, float, float]:
        """One refinement round: ``(counts, sums, edges, lo, hi)``, the global counts (and
        sums, else None) of the scores per bin, the bins' lower edges, and the smallest and
        largest score in the range (the range's ends in the first round).

        The caller then calls :meth:`narrow` with the bin holding the answer."""
        w, rank = self.collective.n_workers, self.collective.rank
        span = self.hi - self.lo
        shift = max(0, span.bit_length() - (BINS.bit_length() - 1))
        nb = (span >> shift) + 1
        u = self.values.view(np.uint64)
        d = np.bitwise_and(u, _ABS) if self.full else u.copy()
        np.subtract(d, np.uint64(self.lo), out=d)         # below the range: wraps past 2**63
        np.right_shift(d, np.uint64(shift), out=d)
        np.minimum(d, np.uint64(nb), out=d)               # bin nb: below the range
        idx = d.view(np.int64)
        m = 2 * nb if self.with_sums else nb
        vec = np.zeros(m + (0 if self.full else 2 * w))
        vec[:nb] = np.bincount(idx, minlength=nb + 1)[:nb]
        if self.with_sums:
            vec[nb:m] = np.bincount(idx, weights=self.values, minlength=nb + 1)[:nb]
        if not self.full:
            vec[m + rank], vec[m + w + rank] = math.inf, -math.inf
            if self.values.size:
                vec[m + rank] = float(self.values.min())
                vec[m + w + rank] = float(self.values.max())
        self.collective.allreduce(vec)
        self._idx, self._shift = idx, shift
        edges = (np.uint64(self.lo)
                 + (np.arange(nb, dtype=np.uint64) << np.uint64(shift))).view(np.float64)
        if self.full:
            lo, hi = _value(self.lo), _value(self.hi)
        else:
            lo, hi = float(vec[m:m + w].min()), float(vec[m + w:m + 2 * w].max())
        return vec[:nb], (vec[nb:m] if self.with_sums else None), edges, lo, hi

    def narrow(self, j: int, count: int, lo: float, hi: float) -> None:
        """Make bin ``j`` (``count`` scores over all workers) the range, within the scores'
        ``[lo, hi]`` (from :meth:`refine`), and keep this worker's scores in it."""
        start = self.lo + (j << self._shift)
        self.values = self.values[self._idx == j]
        self.full = False
        self.lo = max(start, _bits(lo))
        self.hi = min(self.hi, start + (1 << self._shift) - 1, _bits(hi))
        self.count = count
        del self._idx

    def single(self) -> bool:
        """Whether the range holds one value (then every score in it equals it)."""
        return self.lo >= self.hi


def kth_largest(score: np.ndarray, k: int, collective: Collective = LOCAL) -> float:
    """The ``k``-th largest of the scores of every worker (``k = 1``: the largest).

    Every worker of the fit calls it, with its own scores and the same ``k``, and gets the
    same value: exactly the ``k``-th largest value of the concatenation of all workers'
    scores (``np.sort(all)[::-1][k - 1]``), so at least ``k`` scores are at or above it.

    Parameters
    ----------
    score : float64 array (n,)
        This worker's scores, finite and >= 0 (may be empty: the worker still takes part in
        every round).
        Not modified.
    k : int
        The rank, >= 1, over all workers' scores; ``k`` at or above their total number gives
        their minimum.
    collective : Collective, default LOCAL
        The fit's collective (one machine by default).

    Returns
    -------
    float
        The threshold.

    Raises
    ------
    ValueError
        On every worker, when a score of any worker is negative, NaN or infinite, or no
        worker has a score; when ``k < 1`` (before any round).

    Notes
    -----
    Rounds: 1 when ``k`` reaches past the positive scores (the answer is 0 or the minimum)
    or all positive scores are equal; otherwise 1 + the refinements + 1 (see the module
    notes): 3 or 4 for continuous scores, more only with many distinct scores within a few
    ulps of the answer.
    """
    k = int(k)
    if k < 1:
        raise ValueError(f"k={k!r} must be >= 1")
    score = _as_scores(score)
    stats = _Stats(score, collective, with_sum=False)
    if stats.n == 0:
        raise ValueError("no worker has a score")
    if k >= stats.n:                                     # the minimum
        return 0.0 if stats.n_pos < stats.n else stats.min_pos
    if k > stats.n_pos:                                  # among the zeros
        return 0.0
    if stats.min_pos == stats.max:
        return stats.max
    search = _Search(score, stats.min_pos, stats.max, stats.n_pos, collective, False)
    while True:
        if search.gather_due():
            values = search.gather()
            return float(values[values.size - k])
        counts, _, _, lo, hi = search.refine()
        if lo == hi:                                     # every score in the range ties
            return lo
        above = np.cumsum(counts[::-1])                  # above[i]: the top i + 1 bins
        top = int(np.searchsorted(above, k))             # bins above the answer's
        j = counts.size - 1 - top
        k -= int(above[top - 1]) if top else 0
        search.narrow(j, int(counts[j]), lo, hi)
        if search.single():
            return _value(search.lo)


def _mvs_solve(values: np.ndarray, counts: np.ndarray, target: float, n_above: float,
               sum_below: float) -> float:
    """``mu`` with ``n_above + #(v >= mu) + (sum_below + sum(v < mu)) / mu == target``.

    ``values`` (ascending, distinct, > 0) with multiplicities ``counts`` are the scores the
    answer lies among; ``n_above`` scores are above all of them and ``sum_below`` is the
    sum of those below them. The left-hand side decreases in ``mu``: ``mu`` lies above the
    largest value where it is still >= ``target``, and below the next one, and the values up
    to it count in the sum, the others with probability 1.
    """
    c = counts.astype(np.float64)
    n = float(c.sum())
    count_le = np.cumsum(c)                              # #(v <= values[i])
    sum_le = np.cumsum(values * c)                       # sum(v <= values[i])
    sum_lt = sum_le - values * c
    lhs = n_above + (n - count_le + c) + (sum_below + sum_lt) / values
    at_or_above = np.flatnonzero(lhs >= target)
    if at_or_above.size == 0:                            # below every value: all kept
        return sum_below / (target - n_above - n)
    i = int(at_or_above[-1])
    if lhs[i] == target:
        return float(values[i])
    return float((sum_below + sum_le[i]) / (target - n_above - (n - count_le[i])))


def mvs_threshold(score: np.ndarray, target: float, collective: Collective = LOCAL) -> float:
    """MVS's ``mu`` over every worker's scores: ``sum_i min(1, score_i / mu) == target``.

    Every worker of the fit calls it, with its own scores and the same ``target``, and gets
    the same ``mu``, the one-machine kernel's (``_kernels._order_stats.mvs_threshold``) on
    the concatenation of the scores, to a relative ``1e-12`` or so (see the module notes).

    Parameters
    ----------
    score : float64 array (n,)
        This worker's scores, finite and >= 0 (may be empty: the worker still takes part in
        every round). Not modified.
    target : float
        The expected sample size over all workers, > 0 (``subsample`` times all rows).
    collective : Collective, default LOCAL
        The fit's collective (one machine by default).

    Returns
    -------
    float
        ``mu`` > 0 when ``0 < target < #{score > 0}``. When ``target`` is at or above the
        number of positive scores: the smallest positive score, so that every positive
        score is kept (``min(1, score / mu) == 1``). When no score is positive: 0.0.

    Raises
    ------
    ValueError
        On every worker, when a score of any worker is negative, NaN or infinite; when
        ``target`` is not positive (before any round).

    Notes
    -----
    Rounds: 1 in the edge cases above and when ``mu`` lies above every score
    (``mu = sum / target``); otherwise as :func:`kth_largest`, and sooner when the bin
    holding ``mu`` holds no score (``mu`` then follows from the bins' counts and sums).
    """
    target = float(target)
    if not target > 0.0:
        raise ValueError(f"target={target!r} must be positive")
    score = _as_scores(score)
    stats = _Stats(score, collective, with_sum=True)
    if stats.n_pos == 0:
        return 0.0
    if target >= stats.n_pos:
        return stats.min_pos
    mu = stats.total / target
    if mu >= stats.max:                                  # every probability below 1
        return mu
    n_above, sum_below = 0.0, 0.0                        # scores above / below the range
    search = _Search(score, stats.min_pos, stats.max, stats.n_pos, collective, True)
    while True:
        if search.gather_due():
            values, counts = np.unique(search.gather(), return_counts=True)
            return _mvs_solve(values, counts, target, n_above, sum_below)
        counts, sums, edges, lo, hi = search.refine()
        n_range = float(counts.sum())
        if lo == hi:                                     # every score in the range ties
            return _mvs_solve(np.array([lo]), np.array([n_range]), target, n_above,
                              sum_below)
        at_or_above = n_range - np.concatenate(([0.0], np.cumsum(counts)[:-1]))
        below = np.concatenate(([0.0], np.cumsum(sums)[:-1]))
        lhs = n_above + at_or_above + (sum_below + below) / edges
        holding = np.flatnonzero(lhs >= target)
        if holding.size == 0:       # below the range's lowest score: all of the range kept
            return sum_below / (target - n_above - n_range)
        j = int(holding[-1])
        n_above += at_or_above[j] - counts[j]
        sum_below += below[j]
        if counts[j] == 0:          # no score in the bin: the sum and count are all known
            return sum_below / (target - n_above)
        search.narrow(j, int(counts[j]), lo, hi)
        if search.single():
            return _mvs_solve(np.array([_value(search.lo)]), np.array([counts[j]]), target,
                              n_above, sum_below)
