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
    ``lambda = (learning_rate * sum|g| / sum|h|)^2`` when ``lam`` is None."""
    if lam is None:
        hs = np.abs(h).sum()
        lam = (learning_rate * np.abs(g).sum() / hs) ** 2 if hs > 0 else 0.0
    return np.sqrt(g * g + lam * (h * h))


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


def goss_select(score: np.ndarray, threshold: float, u: np.ndarray, other_k: int):
    """GOSS's draw, row by row: rows at or above the threshold are kept with weight 1; the
    j-th row below it is kept with probability (still needed) / (rows below still to come),
    Knuth's selection sampling, with weight n_rest / other_k."""
    n_rest = int(np.sum(score < threshold))
    need, left = other_k, n_rest
    idx, weight = [], []
    for i in range(score.size):
        if score[i] >= threshold:
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
