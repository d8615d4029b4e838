"""Brute-force SHAP values of trees over binned rows: the Shapley formula over every subset
of features, with the path-dependent value function (features outside the subset averaged
out by the trees' covers). Exponential in the number of features: for tests only."""
from itertools import combinations
from math import factorial

import numpy as np

CAT_SPLIT = 2


def goes_right(a, k, x, missing_bin):
    b = int(x[a["feature"][k]])
    if a["nan_right"][k] == CAT_SPLIT:
        words = a["cat_sets"][a["bin"][k]]
        return not (int(words[b >> 5]) >> (b & 31)) & 1
    if b == missing_bin:
        return bool(a["nan_right"][k])
    return b > a["bin"][k]


def n_leaves(a, k):
    if a["left"][k] < 0:
        return 1
    return n_leaves(a, a["left"][k]) + n_leaves(a, a["right"][k])


def share(a, k, child):
    """The share of node ``k``'s training rows going to ``child``; below a node no row
    reached, the share of its leaves."""
    if a["cover"][k] > 0:
        return a["cover"][child] / a["cover"][k]
    return n_leaves(a, child) / n_leaves(a, k)


def expectation(a, x, known, missing_bin, k=0):
    """E[tree(X) | X_S = x_S] as the path-dependent estimator defines it."""
    if a["left"][k] < 0:
        return a["value"][k]
    left, right = a["left"][k], a["right"][k]
    if a["feature"][k] in known:
        child = right if goes_right(a, k, x, missing_bin) else left
        return expectation(a, x, known, missing_bin, child)
    return sum(share(a, k, c) * expectation(a, x, known, missing_bin, c)
               for c in (left, right) if share(a, k, c) > 0)


def shapley(a, x, n_features, missing_bin):
    """SHAP values (n_features + 1,) of one tree at one binned row; the last entry is the
    expected value."""
    phi = np.zeros(n_features + 1)
    players = sorted(set(int(f) for f in a["feature"][a["left"] >= 0]))
    m = len(players)
    for i in players:
        others = [p for p in players if p != i]
        for size in range(m):
            weight = factorial(size) * factorial(m - size - 1) / factorial(m)
            for subset in combinations(others, size):
                s = set(subset)
                phi[i] += weight * (expectation(a, x, s | {i}, missing_bin)
                                    - expectation(a, x, s, missing_bin))
    phi[n_features] = expectation(a, x, set(), missing_bin)
    return phi


def interactions(a, x, n_features, missing_bin):
    """SHAP interaction values (n_features + 1, n_features + 1) of one tree at one row:
    off the diagonal half the Shapley interaction index, on it the main effects."""
    out = np.zeros((n_features + 1, n_features + 1))
    players = sorted(set(int(f) for f in a["feature"][a["left"] >= 0]))
    m = len(players)
    for i in players:
        for j in players:
            if j == i:
                continue
            others = [p for p in players if p not in (i, j)]
            for size in range(m - 1):
                weight = factorial(size) * factorial(m - size - 2) / (2 * factorial(m - 1))
                for subset in combinations(others, size):
                    s = set(subset)
                    out[i, j] += weight * (expectation(a, x, s | {i, j}, missing_bin)
                                           - expectation(a, x, s | {i}, missing_bin)
                                           - expectation(a, x, s | {j}, missing_bin)
                                           + expectation(a, x, s, missing_bin))
    phi = shapley(a, x, n_features, missing_bin)
    for i in players:
        out[i, i] = phi[i] - out[i].sum()
    out[n_features, n_features] = phi[n_features]
    return out
