"""Evaluation metrics as plain functions, for the demo and the command line: the built-in
metric plugins, found through the registry by name, under their former names."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..plugin import registry


def logloss(y: np.ndarray, p: np.ndarray, sample_weight: Optional[np.ndarray] = None) -> float:
    """Mean binary cross-entropy of probabilities ``p`` (clipped to [1e-15, 1 - 1e-15]): the
    built-in metric ``logloss``."""
    return registry.create("metric", "logloss")(np.asarray(y, dtype=np.float64), p, sample_weight)


def roc_auc(y: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve (ties count one half) of a boolean or 0/1 ``y``: the
    built-in metric ``auc``."""
    return registry.create("metric", "auc")(np.asarray(y, dtype=bool).astype(np.float64), score)


def accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    """Fraction of equal entries."""
    return float(np.mean(np.asarray(y) == np.asarray(pred)))


def multiclass_logloss(y: np.ndarray, proba: np.ndarray,
                       sample_weight: Optional[np.ndarray] = None) -> float:
    """Mean multiclass cross-entropy: minus the log of the probability each row's class gets.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        Class indices ``0 .. n_classes - 1``, i.e. column numbers of ``proba``.
    proba : ndarray of shape (n_samples, n_classes)
        Class probabilities (rows summing to 1); clipped below at 1e-15.
    sample_weight : ndarray of shape (n_samples,), optional
        Row weights of the mean.

    Returns
    -------
    float
        With two classes, ``logloss(y, proba[:, 1])`` up to the clipping.

    Raises
    ------
    ValueError
        When ``proba`` is not 2-D with one row per entry of ``y``, or ``y`` holds something
        other than column numbers of ``proba``.
    """
    proba = np.asarray(proba, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if proba.ndim != 2 or y.ndim != 1 or proba.shape[0] != y.shape[0]:
        raise ValueError(f"multiclass_logloss: expected y of shape (n,) and proba of shape "
                         f"(n, n_classes); got {y.shape} and {proba.shape}")
    bad = (y != np.round(y)) | (y < 0) | (y >= proba.shape[1])     # NaN is bad too
    if bad.any():
        raise ValueError(f"multiclass_logloss: y must hold class indices 0 .. "
                         f"{proba.shape[1] - 1} (columns of proba); got "
                         f"{np.unique(y[bad])[:5].tolist()}")
    return registry.create("metric", "multi_logloss")(y, proba, sample_weight)
