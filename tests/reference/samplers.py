"""Slow, obviously correct NumPy references of the row samplers.

They take the uniform draws (or the drawn "other" rows) as inputs, so the deterministic part of
each sampler can be compared exactly with boostlib's, and the random part by its law.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np


def mvs_threshold(score: np.ndarray, target: float) -> float:
    """``mu`` with ``sum min(1, score/mu) == target``, by sorting and prefix sums.

    Sort the positive scores in decreasing order ``r_1 >= r_2 >= ...``. If the ``k`` largest
    have probability 1, ``mu = (sum of the others) / (target - k)``; the right ``k`` is the
    smallest one for which that ``mu`` is consistent, i.e. ``r_k >= mu >= r_{k+1}`` (with
    ``r_0 = +inf``). ``mu == r_{k+1}`` (a tie at the threshold, or a rounding of tiny
    subnormal scores) is consistent too: that row then has probability exactly 1.
    """
    r = np.sort(score[score > 0])[::-1]
    assert 0 < target < r.size
    tail = np.cumsum(r[::-1])[::-1]          # tail[k] = r_{k+1} + ... (0-based: sum r[k:])
    for k in range(r.size):
        if target - k <= 0:
            break
        mu = tail[k] / (target - k)
        if (k == 0 or r[k - 1] >= mu) and r[k] <= mu:
            return float(mu)
    raise AssertionError("no consistent threshold")


def mvs_probabilities(score: np.ndarray, subsample: float) -> np.ndarray:
    """``p_i`` of MVS, every special case spelled out (see ``MVSSampler``'s notes)."""
    n = score.size
    n_pos = int(np.count_nonzero(score))
    target = n * subsample
    if subsample >= 1.0:
        return np.ones(n)
    if n_pos == 0:
        return np.full(n, subsample)
    if target >= n_pos:
        return (score > 0).astype(float)
    mu = mvs_threshold(score, target)
    return np.minimum(1.0, score / mu)


def mvs_score(g: np.ndarray, h: np.ndarray, lam: Optional[float],
              learning_rate: float = 1.0) -> np.ndarray:
    """``sqrt(g^2 + lambda h^2)``, with the adaptive
    ``lambda = (learning_rate * sum|g| / sum|h|)^2`` when ``lam`` is None, written as
    ``(learning_rate * sum|g| * (h / sum|h|))^2`` so that it stays finite when ``lambda``
    overflows (tiny hessians)."""
    if lam is None:
        hs = np.abs(h).sum()
        if hs == 0:
            return np.abs(g)
        a = learning_rate * np.abs(g).sum() * (h / hs)
        return np.hypot(g, a)         # the root without under- or overflow of the squares
    return np.hypot(g, np.sqrt(lam) * h)


_GAMMA = np.uint64(0x9E3779B97F4A7C15)
GOSS_BLOCK = 1 << 16      # rows per block of the GOSS draw


def splitmix64_uniforms(seed: int, n: int, start: int = 0) -> np.ndarray:
    """Uniforms in [0, 1) of rows ``start .. start + n`` under ``seed``, written out from
    SplitMix64's definition (Steele, Lea & Flood 2014) in wrapping uint64 arithmetic: output
    ``q`` is the state ``seed + (q + 1) * gamma`` through the three xor-shift-multiply
    steps; row ``2q`` takes its high 32 bits and row ``2q + 1`` its low 32 bits, times
    2**-32 (exact)."""
    with np.errstate(over="ignore"):
        i = np.arange(start, start + n, dtype=np.uint64)
        z = np.uint64(seed) + ((i >> np.uint64(1)) + np.uint64(1)) * _GAMMA
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    odd = (i & np.uint64(1)).astype(bool)
    u32 = np.where(odd, z & np.uint64(0xFFFFFFFF), z >> np.uint64(32))
    return u32.astype(np.float64) * 2.0 ** -32


def sampler_uniforms(rng: np.random.Generator, n: int) -> np.ndarray:
    """The uniforms a built-in sampler's draw compares with: one 64-bit seed from ``rng``
    (as ``boostlib.builtin.samplers._draw_seed``), then the counter-based stream of that seed."""
    return splitmix64_uniforms(int(rng.integers(0, 2**64, dtype=np.uint64)), n)


def mvs_inclusion(score: np.ndarray, mu: float) -> np.ndarray:
    """The probability with which the MVS draw keeps each row: ``p_i = min(1, score_i /
    mu)`` rounded up to a multiple of 2**-32, computed as the kernel defines it,
    ``ceil(min(x_i, 2**32)) / 2**32`` with ``x_i = score_i * (2**32 / mu)`` (both scaled by
    2**600 when the factor overflows, as the kernel does)."""
    pre = 1.0 if np.isfinite(2.0 ** 32 / mu) else 2.0 ** 600
    x = (score * pre) * (2.0 ** 32 / (mu * pre))
    return np.ceil(np.minimum(x, 2.0 ** 32)) * 2.0 ** -32


def mvs_select(score: np.ndarray, mu: float, u: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """MVS's draw: row ``i`` is kept when ``u_i < pi_i`` (:func:`mvs_inclusion`), which for
    uniforms on multiples of 2**-32 is ``u_i * 2**32 < x_i``; weight ``1 / pi_i`` (exactly
    1 when ``score_i >= mu``)."""
    pi = mvs_inclusion(score, mu)
    keep = u < pi
    idx = np.flatnonzero(keep)
    return idx, 1.0 / pi[idx]


def bernoulli_select(p: np.ndarray, u: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Rows with ``u < p`` and their weights ``1/p``."""
    keep = u < p
    idx = np.flatnonzero(keep)
    return idx, 1.0 / p[idx]


def goss_split(score: np.ndarray, top_rate: float, other_rate: float):
    """The deterministic part of GOSS: the top set (ties at the threshold included), the
    rest, the number of rest rows to draw and their weight."""
    n = score.size
    top_k = max(1, int(np.floor(n * top_rate)))
    other_k = int(np.floor(n * other_rate))
    threshold = np.sort(score)[::-1][top_k - 1]
    top = np.flatnonzero(score >= threshold)
    rest = np.flatnonzero(score < threshold)
    other_k = min(other_k, rest.size)
    weight = rest.size / other_k if other_k else None
    return top, rest, other_k, weight


def goss_select(score: np.ndarray, threshold: float, u: np.ndarray, take: np.ndarray):
    """GOSS's draw, row by row: rows at or above the threshold are kept with weight 1; in each
    block of ``GOSS_BLOCK`` rows, the j-th row below the threshold is kept with probability
    (still needed in the block) / (block's rows below still to come), Knuth's selection
    sampling, and weighted n_rest / other_k (``take[b]`` rows are drawn in block b)."""
    below = score < threshold
    n_rest, other_k = int(below.sum()), int(np.sum(take))
    idx, weight = [], []
    for b, start in enumerate(range(0, score.size, GOSS_BLOCK)):
        block = range(start, min(start + GOSS_BLOCK, score.size))
        need, left = int(take[b]), int(below[start:block.stop].sum())
        for i in block:
            if not below[i]:
                idx.append(i)
                weight.append(1.0)
            else:
                if u[i] * left < need:
                    idx.append(i)
                    weight.append(n_rest / other_k)
                    need -= 1
                left -= 1
        assert need == 0
    return np.array(idx, dtype=np.int64), np.array(weight)
