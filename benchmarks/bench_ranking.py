#!/usr/bin/env python
"""LambdaMART against LightGBM's ``lambdarank`` (and XGBoost's ``rank:ndcg``): test NDCG@10;
``--loss rank_xendcg``: XE-NDCG against LightGBM's ``rank_xendcg``.

This is a benchmark, not a test. On LightGBM's lambdarank example data
(``../shared/datasets/lambdarank_lightgbm``: 3,005 training documents in 201 queries, 768
test documents in 50 queries, 300 features) it fits, at each setting of a small grid
(learning rate 0.05 and 0.1, at least 1 and 20 rows per leaf), boostlib's ``lambdarank``
(both tree kinds) and LightGBM's, 200 trees of depth 6 (LightGBM: up to 64 leaves), L2 1.0,
truncation level 30 and LightGBM's normalisation in both. It prints each setting's test
NDCG@10 (boostlib's ``ndcg`` metric on every model's scores), the mean over the grid with
boostlib's ratio to LightGBM's, and the median fit times.

With 50 test queries a single setting's NDCG@10 moves by about 1% with nothing but
rounding: LightGBM trained on boostlib's lambdas (its custom-objective path, same trees)
scores 0.745 where its own objective scores 0.750 at learning rate 0.1. Compare the means.

``--loss rank_xendcg`` fits XE-NDCG in both libraries at the same settings (no truncation
level: it has none). Its gradients draw random numbers, so the NDCG@10 of one fit depends on
the seed (``random_state`` in boostlib, ``objective_seed`` in LightGBM); ``--seeds N`` fits
every setting with seeds 0 .. N-1 and averages them.

    python benchmarks/bench_ranking.py
    python benchmarks/bench_ranking.py --repeats 3 --xgboost
    python benchmarks/bench_ranking.py --loss rank_xendcg --seeds 3
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Dict, List

import numpy as np

from boostlib import BoostRanker, create

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                    "datasets", "lambdarank_lightgbm")
GRID = [(lr, leaf) for lr in (0.05, 0.1) for leaf in (1, 20)]


def load():
    from sklearn.datasets import load_svmlight_files
    X, y, Xt, yt = load_svmlight_files([os.path.join(DATA, "rank.train"),
                                        os.path.join(DATA, "rank.test")], n_features=300)
    g = np.loadtxt(os.path.join(DATA, "rank.train.query"), dtype=int)
    gt = np.loadtxt(os.path.join(DATA, "rank.test.query"), dtype=int)
    return X.toarray(), y, g, Xt.toarray(), yt, gt


def fitters(lr: float, leaf: int, threads: int, xgboost: bool, loss: str = "lambdarank",
            seed: int = 0) -> Dict[str, object]:
    import lightgbm as lgb

    def ours(policy):
        def fit(X, y, g):
            return BoostRanker(early_stopping=False,
                               loss=loss, n_estimators=200, max_depth=6, learning_rate=lr,
                               grow_policy=policy, min_samples_leaf=leaf,
                               l2_regularization=1.0, random_state=seed, n_jobs=threads
                               ).fit(X, y, group=g)
        return fit

    def lightgbm(X, y, g):
        extra = ({"lambdarank_truncation_level": 30} if loss == "lambdarank" else
                 {"objective_seed": seed})
        return lgb.LGBMRanker(objective=loss, n_estimators=200, max_depth=6, num_leaves=64,
                              learning_rate=lr, min_child_samples=leaf, min_child_weight=1e-3,
                              reg_lambda=1.0, verbose=-1, n_jobs=threads, random_state=seed,
                              **extra).fit(X, y, group=g)

    out = {"boostlib symmetric": ours("symmetric"), "boostlib depthwise": ours("depthwise"),
           "lightgbm": lightgbm}
    if xgboost:
        import xgboost as xgb

        def xgboost_fit(X, y, g):
            qid = np.repeat(np.arange(g.size), g)
            return xgb.XGBRanker(n_estimators=200, max_depth=6, learning_rate=lr,
                                 min_child_weight=1e-3 if leaf == 1 else leaf * 0.01,
                                 reg_lambda=1.0, tree_method="hist", objective="rank:ndcg",
                                 n_jobs=threads).fit(X, y, qid=qid)
        out["xgboost"] = xgboost_fit
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1, help="fits per model, for the times")
    ap.add_argument("--xgboost", action="store_true", help="also XGBoost's rank:ndcg")
    ap.add_argument("--loss", choices=("lambdarank", "rank_xendcg"), default="lambdarank")
    ap.add_argument("--seeds", type=int, default=1,
                    help="fit every setting with seeds 0 .. N-1 and average the NDCG@10")
    args = ap.parse_args(argv)
    if args.xgboost and args.loss != "lambdarank":
        ap.error("--xgboost compares lambdarank only (XGBoost has no XE-NDCG)")
    if not os.path.isdir(DATA):
        print(f"needs {DATA}", file=sys.stderr)
        return 1
    X, y, g, Xt, yt, gt = load()
    ndcg = create("metric", "ndcg", {"k": 10})
    scores: Dict[str, List[float]] = {}
    times: Dict[str, List[float]] = {}
    title = "LambdaMART" if args.loss == "lambdarank" else "XE-NDCG (rank_xendcg)"
    seeds = f", mean of seeds 0 .. {args.seeds - 1}" if args.seeds > 1 else ""
    print(f"## {title} on the lambdarank example data: test NDCG@10, 200 trees, depth 6"
          f"{seeds}\n")
    rows = []
    for lr, leaf in GRID:
        row = {}
        for seed in range(args.seeds):
            for r in range(args.repeats):
                for name, fit in fitters(lr, leaf, args.threads, args.xgboost, args.loss,
                                         seed).items():
                    t0 = time.perf_counter()
                    model = fit(X, y, g)
                    times.setdefault(name, []).append(time.perf_counter() - t0)
                    value = ndcg(yt, model.predict(Xt), group=gt)
                    if r == 0:
                        row[name] = row.get(name, 0.0) + value / args.seeds
        for name, value in row.items():
            scores.setdefault(name, []).append(value)
        rows.append((lr, leaf, row))
    names = list(scores)
    print("| learning rate | min rows per leaf | " + " | ".join(names) + " |")
    print("|---:|---:|" + "---:|" * len(names))
    for lr, leaf, row in rows:
        print(f"| {lr} | {leaf} | " + " | ".join(f"{row[n]:.4f}" for n in names) + " |")
    base = statistics.mean(scores["lightgbm"])
    print("| **mean** | | " + " | ".join(
        f"**{statistics.mean(scores[n]):.4f}** ({statistics.mean(scores[n]) / base:.3f})"
        for n in names) + " |")
    tl = statistics.median(times["lightgbm"])
    print("| fit s (median) | | " + " | ".join(
        f"{statistics.median(times[n]):.2f} ({statistics.median(times[n]) / tl:.2f})"
        for n in names) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
