"""Slow, obviously-correct references for the survival losses and metrics: explicit loops
over rows and pairs of rows, straight from the definitions, with the ``math`` module's
functions. None of them shares code with :mod:`boostlib`."""
from __future__ import annotations

import math

SQRT_2PI = math.sqrt(2.0 * math.pi)


def harrell_cindex(time, event, risk, w=None):
    """Harrell's C with censoring (scikit-survival's ``concordance_index_censored`` pairs):
    every ordered pair (i, j) with i an event and j outliving it (a later time, or the same
    time and censored) is comparable; it is concordant when i's risk is higher, half when
    equal. Pairs weigh ``w_i w_j``."""
    n = len(time)
    w = [1.0] * n if w is None else [float(v) for v in w]
    num = den = 0.0
    for i in range(n):
        if not event[i]:
            continue
        for j in range(n):
            if j == i:
                continue
            if time[j] > time[i] or (time[j] == time[i] and not event[j]):
                pair = w[i] * w[j]
                den += pair
                if risk[i] > risk[j]:
                    num += pair
                elif risk[i] == risk[j]:
                    num += 0.5 * pair
    return num / den


def cox_partial_loglik(y, raw):
    """Breslow's log partial likelihood of signed times ``y`` (positive: event) at log
    hazard ratios ``raw``: the sum over events i of ``raw_i - log(sum over j with
    |y_j| >= |y_i| of exp(raw_j))``."""
    total = 0.0
    for i in range(len(y)):
        if y[i] > 0:
            s = sum(math.exp(raw[j]) for j in range(len(y)) if abs(y[j]) >= abs(y[i]))
            total += raw[i] - math.log(s)
    return total


def _pdf(z, dist):
    if dist == "normal":
        return math.exp(-z * z / 2.0) / SQRT_2PI
    if dist == "logistic":
        return math.exp(-abs(z)) / (1.0 + math.exp(-abs(z))) ** 2
    return math.exp(z - math.exp(z))          # extreme value (Gumbel of the minimum)


def _cdf(z, dist):
    if dist == "normal":
        return 0.5 * math.erfc(-z / math.sqrt(2.0))
    if dist == "logistic":
        return 1.0 / (1.0 + math.exp(-z))
    return 1.0 - math.exp(-math.exp(z))


def aft_nloglik(lower, upper, raw, dist="normal", sigma=1.0):
    """Minus the log-likelihood of one AFT row: the density of ``log T = raw + sigma eps``
    at an exact time (with the Jacobian ``1 / t``), else the probability of the interval."""
    if lower == upper:
        z = (math.log(lower) - raw) / sigma
        return -math.log(_pdf(z, dist) / (sigma * lower))
    hi = 1.0 if math.isinf(upper) else _cdf((math.log(upper) - raw) / sigma, dist)
    lo = 0.0 if lower == 0 else _cdf((math.log(lower) - raw) / sigma, dist)
    return -math.log(hi - lo)
