"""Slow, obviously-correct references for linear leaves: each leaf's ridge fit by explicit
weighted least squares on its rows, and the linear part of a row's value by a loop. None of
them shares code with :mod:`boostlib`."""
from __future__ import annotations

import math

import numpy as np


def leaf_fit(x, g, h, lam):
    """The linear part of one leaf fitted on its rows: ``x`` (n, k) raw values (NaN:
    missing), ``g``, ``h`` (n,). Only rows with every value finite count. Returns
    ``(keep, w, m)``: the features that get a slope (those that vary among the rows), their
    slopes and centres (the hessian-weighted means), or None when the leaf stays constant
    (no more complete rows than features, or no hessian mass).

    The slopes minimise ``sum_i g_i e_i + h_i e_i^2 / 2 + lam |w|^2 / 2`` with
    ``e_i = c + w.(x_i - m)`` for the fixed constant ``c`` (the hessian-weighted mean of
    ``x_i - m`` is 0, so ``c`` drops out of the slopes' normal equations).
    """
    x = np.asarray(x, dtype=float)
    rows = [i for i in range(x.shape[0]) if all(math.isfinite(v) for v in x[i])]
    k = x.shape[1]
    H = sum(h[i] for i in rows)
    if not (len(rows) > k and H > 0):
        return None
    m = [sum(h[i] * x[i, j] for i in rows) / H for j in range(k)]
    keep = []
    for j in range(k):
        spread = sum(h[i] * (x[i, j] - m[j]) ** 2 for i in rows)
        second = sum(h[i] * x[i, j] ** 2 for i in rows)
        if spread > 1e-9 * max(second, 1e-300):
            keep.append(j)
    if not keep:
        return None
    A = np.array([[sum(h[i] * (x[i, a] - m[a]) * (x[i, b] - m[b]) for i in rows)
                   for b in keep] for a in keep]) + lam * np.eye(len(keep))
    r = np.array([sum(g[i] * (x[i, a] - m[a]) for i in rows) for a in keep])
    w = np.linalg.lstsq(A, -r, rcond=None)[0]
    return np.array(keep), w, np.array([m[j] for j in keep])


def linear_part(ptr, feature, weight, mean, slot, X):
    """``sum_e weight_e (X[i, feature_e] - mean_e)`` over the entries of each row's slot, 0
    for a row missing one of them, by a loop over rows and entries."""
    out = np.zeros(len(slot))
    for i, s in enumerate(slot):
        total, complete = 0.0, True
        for e in range(ptr[s], ptr[s + 1]):
            v = X[i][feature[e]]
            if not math.isfinite(v):
                complete = False
                break
            total += weight[e] * (v - mean[e])
        out[i] = total if complete else 0.0
    return out
