"""Slow, obviously correct reference for ordered target statistics
(``boostlib.engine.encoding.ordered_sums`` and the statistic built from them): the rows
walked one by one in the permutation's order, each category's running sums kept in a dict."""
from __future__ import annotations

from typing import Dict, Tuple

import numpy as np


def ordered_sums(codes: np.ndarray, t: np.ndarray, w: np.ndarray, order: np.ndarray
                 ) -> Tuple[np.ndarray, np.ndarray]:
    """Per row: the sums of ``w_j * t_j`` and of ``w_j`` over the earlier rows ``j`` (in
    ``order``) of its category; zero for missing codes (-1)."""
    n, k = t.shape
    sums = np.zeros((n, k))
    weights = np.zeros(n)
    running: Dict[int, Tuple[np.ndarray, float]] = {}
    for i in order:
        c = int(codes[i])
        if c < 0:
            continue
        s, ws = running.get(c, (np.zeros(k), 0.0))
        sums[i], weights[i] = s, ws
        running[c] = (s + w[i] * t[i], ws + w[i])
    return sums, weights


def ordered_statistic(codes: np.ndarray, t: np.ndarray, w: np.ndarray, order: np.ndarray,
                      prior_weight: float) -> np.ndarray:
    """The statistic ``(earlier sum + a * prior) / (earlier weight + a)`` per row, with the
    prior the weighted mean of ``t`` over every row; NaN for missing codes."""
    prior = (w @ t) / w.sum()
    sums, weights = ordered_sums(codes, t, w, order)
    out = (sums + prior_weight * prior) / (weights[:, None] + prior_weight)
    out[codes < 0] = np.nan
    return out
