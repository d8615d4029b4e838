"""Slow, obviously-correct references for the classification and regression metrics:
explicit loops over rows, pairs of rows and thresholds, straight from the definitions. None
of them shares code with :mod:`boostlib` or scikit-learn."""
from __future__ import annotations

import itertools
import math


def _weights(n, w):
    return [1.0] * n if w is None else [float(v) for v in w]


def roc_auc(positive, score, w=None):
    """Weighted ROC AUC: over every (positive, negative) pair, the weight product of the
    pairs whose positive scores higher, plus half of the tied ones, over all pairs' weight."""
    w = _weights(len(score), w)
    above = total = 0.0
    for i in range(len(score)):
        if not positive[i]:
            continue
        for j in range(len(score)):
            if positive[j]:
                continue
            pair = w[i] * w[j]
            total += pair
            if score[i] > score[j]:
                above += pair
            elif score[i] == score[j]:
                above += 0.5 * pair
    return above / total


def auc_ovr(y, proba, w=None):
    """Mean over the classes of the AUC of each class's column for that class."""
    k = len(proba[0])
    return sum(roc_auc([v == c for v in y], [row[c] for row in proba], w)
               for c in range(k)) / k


def auc_ovo(y, proba, w=None):
    """Mean over the pairs of classes (a, b) of the mean of two AUCs on the rows of a and b
    only: column a for class a, column b for class b (Hand and Till)."""
    w = _weights(len(y), w)
    pairs = []
    for a, b in itertools.combinations(range(len(proba[0])), 2):
        rows = [i for i in range(len(y)) if y[i] in (a, b)]
        ww = [w[i] for i in rows]
        auc_a = roc_auc([y[i] == a for i in rows], [proba[i][a] for i in rows], ww)
        auc_b = roc_auc([y[i] == b for i in rows], [proba[i][b] for i in rows], ww)
        pairs.append((auc_a + auc_b) / 2)
    return sum(pairs) / len(pairs)


def average_precision(positive, score, w=None):
    """Weighted average precision: for every distinct score t, from the highest, the
    precision of the rows scoring >= t times the recall gained at t; 0 without positive
    weight."""
    w = _weights(len(score), w)
    total_pos = sum(wi for wi, p in zip(w, positive) if p)
    if total_pos <= 0:
        return 0.0
    ap, recall_before = 0.0, 0.0
    for t in sorted(set(score), reverse=True):
        tp = sum(wi for wi, p, s in zip(w, positive, score) if p and s >= t)
        seen = sum(wi for wi, s in zip(w, score) if s >= t)
        precision = tp / seen if seen > 0 else 0.0
        recall = tp / total_pos
        ap += (recall - recall_before) * precision
        recall_before = recall
    return ap


def f1(y, pred, w=None):
    """Weighted F1 of the class-1 predictions: 2 TP / (2 TP + FP + FN), 0 when that is 0/0."""
    w = _weights(len(y), w)
    tp = sum(wi for wi, t, p in zip(w, y, pred) if t == 1 and p == 1)
    fp = sum(wi for wi, t, p in zip(w, y, pred) if t != 1 and p == 1)
    fn = sum(wi for wi, t, p in zip(w, y, pred) if t == 1 and p != 1)
    return 0.0 if 2 * tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn)


def huber_loss(residual, alpha):
    """Huber loss of one residual: quadratic up to alpha, linear beyond."""
    r = abs(residual)
    return 0.5 * r * r if r <= alpha else alpha * (r - 0.5 * alpha)


def mean(values, w=None):
    """Weighted mean, summed exactly."""
    w = _weights(len(values), w)
    return math.fsum(v * wi for v, wi in zip(values, w)) / math.fsum(w)
