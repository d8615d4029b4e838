#!/usr/bin/env python
"""SHAP values: boostlib's ``pred_contrib`` against LightGBM's and XGBoost's, and against
shap.TreeExplainer on ``boostlib.explain.to_shap(model)``.

This is a benchmark, not a test. Every library fits 200 trees of depth 6 (LightGBM: 63
leaves, ``max_depth=6``; XGBoost: ``max_depth=6``, hist) on W1 data (``bench_peers``:
HIGGS-like, 28 features, ``--n-train`` rows, 2 threads); then the SHAP values of
``--n-rows`` other rows are timed, calls interleaved, median of ``--repeats``, and printed
with their ratio to LightGBM's (XGBoost's for interaction values, which LightGBM lacks). The largest difference between boostlib's values and
shap's on the same model, and between the row sums and the raw scores, are printed too.

    python benchmarks/bench_shap.py                  # 10,000 rows, 3 repeats
    python benchmarks/bench_shap.py --interactions --n-rows 1000   # ratios to XGBoost
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_peers import make_data  # noqa: E402

from boostlib import BoostClassifier  # noqa: E402
from boostlib.explain import to_shap  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-train", type=int, default=100_000)
    parser.add_argument("--n-rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--interactions", action="store_true",
                        help="time SHAP interaction values instead")
    args = parser.parse_args()
    X, y, _ = make_data(args.n_train + args.n_rows, 0)
    X_fit, y_fit, X_explain = X[:args.n_train], y[:args.n_train], X[args.n_train:]
    n = args.threads
    flag = "pred_interactions" if args.interactions else "pred_contrib"
    calls, models = {}, {}
    for policy in ("symmetric", "depthwise"):
        model = BoostClassifier(early_stopping=False,
                                n_estimators=200, max_depth=6, grow_policy=policy, n_jobs=n,
                                random_state=0).fit(X_fit, y_fit)
        models[policy] = model
        calls[f"boostlib {policy}"] = (lambda m=model: m.predict(X_explain, **{flag: True}))
    try:
        import lightgbm as lgb
        lg = lgb.LGBMClassifier(n_estimators=200, max_depth=6, num_leaves=63, n_jobs=n,
                                verbose=-1, random_state=0).fit(X_fit, y_fit)
        if not args.interactions:            # LightGBM has no interaction values
            calls["lightgbm"] = lambda: lg.predict(X_explain, pred_contrib=True)
    except ImportError:
        print("lightgbm not installed: no ratios")
    try:
        import xgboost as xgb
        xg = xgb.XGBClassifier(n_estimators=200, max_depth=6, tree_method="hist", n_jobs=n,
                               random_state=0).fit(X_fit, y_fit)
        dm = xgb.DMatrix(X_explain)
        key = "pred_interactions" if args.interactions else "pred_contribs"
        calls["xgboost"] = lambda: xg.get_booster().predict(dm, **{key: True})
    except ImportError:
        pass
    times = {name: [] for name in calls}
    for _ in range(args.repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    peer = next((p for p in ("lightgbm", "xgboost") if p in times), None)
    base = statistics.median(times[peer]) if peer else None
    what = "interaction values" if args.interactions else "SHAP values"
    print(f"{what} of {args.n_rows:,} rows, 200 trees of depth 6, {n} threads, median of "
          f"{args.repeats}")
    print(f"{'':22} {'seconds':>9} {'vs ' + (peer or '-'):>12}")
    for name, ts in times.items():
        t = statistics.median(ts)
        ratio = f"{t / base:11.3f}x" if base else ""
        print(f"{name:22} {t:9.3f} {ratio:>12}")
    try:
        import shap
    except ImportError:
        return
    rows = X_explain[:500]
    for policy, model in models.items():
        ours = model.predict(rows, pred_contrib=True)
        theirs = np.asarray(shap.TreeExplainer(to_shap(model)).shap_values(rows))
        raw = model.decision_function(rows)
        print(f"boostlib {policy}: max |ours - shap's| = "
              f"{np.abs(ours[:, :-1] - theirs).max():.2e}, max |row sum - raw score| = "
              f"{np.abs(ours.sum(axis=1) - raw).max():.2e} (500 rows)")


if __name__ == "__main__":
    main()
