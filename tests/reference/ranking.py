"""Slow, obviously-correct references for the ranking kernels and metrics: explicit loops
over queries, positions and pairs, straight from the definitions."""
from __future__ import annotations

import itertools
import math

import numpy as np


def ranking_order(score):
    """Row indices by descending score, equal scores by row index."""
    return sorted(range(len(score)), key=lambda i: (-score[i], i))


def lambdarank(y, score, sizes, gain, truncation, sigma, normalize):
    """LambdaRank gradients and hessians, query by query and pair by pair."""
    n = len(y)
    grad, hess = np.zeros(n), np.zeros(n)
    start = 0
    for size in sizes:
        rows = list(range(start, start + size))
        start += size
        labels = [int(y[r]) for r in rows]
        ideal = sorted((gain[v] for v in labels), reverse=True)
        max_dcg = sum(g / math.log2(p + 2) for p, g in enumerate(ideal) if p < truncation)
        if size < 2 or max_dcg == 0:
            continue
        local = ranking_order([score[r] for r in rows])
        ranked = [rows[i] for i in local]
        best, worst = score[ranked[0]], score[ranked[-1]]
        g_q = {r: 0.0 for r in rows}
        h_q = {r: 0.0 for r in rows}
        total = 0.0
        for i in range(min(size - 1, truncation)):
            for j in range(i + 1, size):
                a, b = ranked[i], ranked[j]
                if y[a] == y[b]:
                    continue
                (hi, hi_pos), (lo, lo_pos) = ((a, i), (b, j)) if y[a] > y[b] else \
                    ((b, j), (a, i))
                delta = score[hi] - score[lo]
                dndcg = abs(gain[int(y[hi])] - gain[int(y[lo])]) * abs(
                    1 / math.log2(hi_pos + 2) - 1 / math.log2(lo_pos + 2)) / max_dcg
                if normalize and best != worst:
                    dndcg /= 0.01 + abs(delta)
                rho = 1 / (1 + math.exp(sigma * delta))
                g_q[hi] -= sigma * rho * dndcg
                g_q[lo] += sigma * rho * dndcg
                h_q[hi] += sigma * sigma * rho * (1 - rho) * dndcg
                h_q[lo] += sigma * sigma * rho * (1 - rho) * dndcg
                total += 2 * sigma * rho * dndcg
        factor = math.log2(1 + total) / total if normalize and total > 0 else 1.0
        for r in rows:
            grad[r], hess[r] = g_q[r] * factor, h_q[r] * factor
    return grad, hess


def pairwise_cost(y, score, sizes, gain, truncation, sigma, ranks):
    """The RankNet cost weighted by |delta NDCG| at fixed ranks ``ranks`` (LambdaRank's
    lambdas without normalisation are its gradient while no two scores swap)."""
    total, start = 0.0, 0
    for size in sizes:
        rows = list(range(start, start + size))
        start += size
        ideal = sorted((gain[int(y[r])] for r in rows), reverse=True)
        max_dcg = sum(g / math.log2(p + 2) for p, g in enumerate(ideal) if p < truncation)
        if max_dcg == 0:
            continue
        for a, b in itertools.combinations(rows, 2):
            if y[a] == y[b] or min(ranks[a], ranks[b]) >= truncation:
                continue
            hi, lo = (a, b) if y[a] > y[b] else (b, a)
            dndcg = abs(gain[int(y[hi])] - gain[int(y[lo])]) * abs(
                1 / math.log2(ranks[hi] + 2) - 1 / math.log2(ranks[lo] + 2)) / max_dcg
            total += dndcg * math.log1p(math.exp(-sigma * (score[hi] - score[lo])))
    return total


def ndcg_without_ties(gains, score, k):
    """NDCG@k of one query with distinct scores (1 without relevant documents)."""
    order = ranking_order(score)
    dcg = sum(gains[r] / math.log2(p + 2) for p, r in enumerate(order) if k is None or p < k)
    ideal = sorted(gains, reverse=True)
    best = sum(g / math.log2(p + 2) for p, g in enumerate(ideal) if k is None or p < k)
    return 1.0 if best == 0 else dcg / best


def average_precision_without_ties(relevant, score, k):
    """AP@k of one query with distinct scores: precision at each relevant document in the
    first k positions, over min(k, n_relevant) (1 without relevant documents)."""
    order = ranking_order(score)
    n_rel = int(sum(relevant))
    if n_rel == 0:
        return 1.0
    hits, total = 0, 0.0
    for p, r in enumerate(order):
        if k is not None and p >= k:
            break
        if relevant[r]:
            hits += 1
            total += hits / (p + 1)
    return total / (n_rel if k is None else min(k, n_rel))


def xendcg(y, score, sizes, gamma):
    """XE-NDCG gradients and hessians, query by query, as LightGBM's ``RankXENDCG`` writes
    them: softmax ``rho``, ``phi = 2**label - gamma``, first-order terms ``L1``, second-order
    sums ``L2_i = sum_(j != i) L1_j / (1 - rho_j)``, third-order sums
    ``L3_i = sum_(j != i) rho_j L2_j / (1 - rho_j)``; zeros for a query of one row."""
    n = len(y)
    grad, hess = np.zeros(n), np.zeros(n)
    start = 0
    for size in sizes:
        rows = list(range(start, start + size))
        start += size
        if size < 2:
            continue
        top = max(score[r] for r in rows)
        total = math.fsum(math.exp(score[r] - top) for r in rows)
        rho = {r: math.exp(score[r] - top) / total for r in rows}
        phi = {r: 2.0 ** int(y[r]) - gamma[r] for r in rows}
        phi_sum = math.fsum(phi.values())
        l1 = {r: rho[r] - phi[r] / phi_sum for r in rows}
        l2 = {i: math.fsum(l1[j] / (1 - rho[j]) for j in rows if j != i) for i in rows}
        l3 = {i: math.fsum(rho[j] * l2[j] / (1 - rho[j]) for j in rows if j != i)
              for i in rows}
        for r in rows:
            grad[r] = l1[r] + rho[r] * l2[r] + rho[r] * l3[r]
            hess[r] = rho[r] * (1 - rho[r])
    return grad, hess


def xendcg_cross_entropy(y, score, rows, gamma):
    """The cross entropy ``-sum_i p_i log softmax(score)_i`` of one query's ``rows``, with
    ``p`` proportional to ``2**label - gamma``."""
    top = max(score[r] for r in rows)
    log_total = top + math.log(math.fsum(math.exp(score[r] - top) for r in rows))
    phi = [2.0 ** int(y[r]) - gamma[r] for r in rows]
    return -math.fsum(f / math.fsum(phi) * (score[r] - log_total) for f, r in zip(phi, rows))
