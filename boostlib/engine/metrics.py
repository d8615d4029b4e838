"""Evaluation metrics without scikit-learn (used by the demo and the command line)."""
from __future__ import annotations

from typing import Optional

import numpy as np


def logloss(y: np.ndarray, p: np.ndarray, sample_weight: Optional[np.ndarray] = None) -> float:
    """Mean binary cross-entropy of probabilities ``p`` (clipped to [1e-15, 1 - 1e-15])."""
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-15, 1 - 1e-15)
    y = np.asarray(y, dtype=np.float64)
    return float(np.average(-(y * np.log(p) + (1 - y) * np.log1p(-p)), weights=sample_weight))


def roc_auc(y: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve (ties count one half), by the rank-sum formula."""
    y = np.asarray(y, dtype=bool)
    score = np.asarray(score, dtype=np.float64)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("roc_auc needs both classes in y")
    order = np.argsort(score, kind="mergesort")
    sorted_scores = score[order]
    ranks = np.empty(score.size)
    # average ranks over ties
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    avg = first + (counts + 1) / 2.0
    ranks[order] = np.repeat(avg, counts)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    """Fraction of equal entries."""
    return float(np.mean(np.asarray(y) == np.asarray(pred)))
