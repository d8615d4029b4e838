"""The link functions of losses: raw scores to predictions (``Loss.link``), shared by the
built-in losses and losses given as functions, so that the same raw scores give the same
predictions, bit for bit."""
from __future__ import annotations

import numpy as np


def sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))``, as ``(1 + tanh(x / 2)) / 2`` (no overflow)."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=np.float64)))


def softmax(raw: np.ndarray) -> np.ndarray:
    """Row-wise softmax of raw scores (n, K), computed stably (the row maximum subtracted)."""
    z = np.asarray(raw, dtype=np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    e /= e.sum(axis=1, keepdims=True)
    return e
