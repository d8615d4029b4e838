#!/usr/bin/env python
"""Prediction speed: single-row latency and 200,000-row batches, against the peers.

This is a benchmark, not a test. Every library fits 200 trees of depth 6 (LightGBM: 63
leaves, ``max_depth=6``) on 50,000 W1 rows (``bench_peers``: 28 features) with 2 threads.
Then, side by side: the median time of ``predict_proba`` on one row (``--calls`` calls on
successive rows) and the median of 5 ``predict_proba`` calls on 200,000 other rows, with
their ratio to XGBoost's.

    python benchmarks/bench_latency.py
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Callable, Dict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_peers import make_data  # noqa: E402

from boostlib import BoostClassifier  # noqa: E402


def _median(call: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    X, y, _ = make_data(250_000, 0)
    X_fit, y_fit, X_batch = X[:50_000], y[:50_000], X[50_000:]
    n = args.threads
    models: Dict[str, Callable] = {}
    for policy in ("symmetric", "depthwise"):
        m = BoostClassifier(early_stopping=False,
                            n_estimators=200, max_depth=6, grow_policy=policy, n_jobs=n,
                            random_state=0).fit(X_fit, y_fit)
        models[f"boostlib {policy}"] = m.predict_proba
    try:
        import lightgbm as lgb
        models["lightgbm"] = lgb.LGBMClassifier(
            n_estimators=200, max_depth=6, num_leaves=63, n_jobs=n, verbose=-1,
            random_state=0).fit(X_fit, y_fit).predict_proba
    except ImportError:
        pass
    try:
        import xgboost as xgb
        models["xgboost"] = xgb.XGBClassifier(
            n_estimators=200, max_depth=6, tree_method="hist", n_jobs=n,
            random_state=0).fit(X_fit, y_fit).predict_proba
    except ImportError:
        pass
    try:
        import catboost
        models["catboost"] = catboost.CatBoostClassifier(
            iterations=200, depth=6, thread_count=n, verbose=False,
            random_seed=0).fit(X_fit, y_fit).predict_proba
    except ImportError:
        pass
    single, batch = {}, {}
    for name, predict in models.items():
        predict(X_batch[:1])                            # first call: tables built
        times = []
        for i in range(args.calls):
            row = X_batch[i:i + 1]
            start = time.perf_counter()
            predict(row)
            times.append(time.perf_counter() - start)
        single[name] = statistics.median(times)
        batch[name] = _median(lambda: predict(X_batch), 5)
    base = "xgboost" if "xgboost" in models else None
    print(f"200 trees of depth 6, 28 features, {n} threads")
    print(f"{'':20} {'1 row, us':>10} {'vs XGBoost':>11} {'200k rows, s':>13} "
          f"{'vs XGBoost':>11}")
    for name in models:
        r1 = f"{single[name] / single[base]:10.2f}x" if base else ""
        r2 = f"{batch[name] / batch[base]:10.2f}x" if base else ""
        print(f"{name:20} {single[name] * 1e6:10.0f} {r1:>11} {batch[name]:13.3f} {r2:>11}")


if __name__ == "__main__":
    main()
