#!/usr/bin/env python
"""What evaluation metrics cost a fit: ``eval_metric`` None against each metric asked for.

This is a benchmark, not a test. It fits the same binary model (HIGGS-like data of
``bench_peers.py``) with a validation set as large as the training set, without metrics and
with each metric, interleaved ``--repeats`` times, and prints the median fit time of each
and its ratio to the fit without metrics.

    python benchmarks/bench_metrics.py                          # 200,000 rows, auc, 100 trees
    python benchmarks/bench_metrics.py --metrics auc,logloss,error --n-train 50000
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_peers import make_data  # noqa: E402

from boostlib import BoostClassifier  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-train", type=int, default=200_000)
    ap.add_argument("--n-estimators", type=int, default=100)
    ap.add_argument("--metrics", default="auc", help="comma-separated metric names")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    X, y, _ = make_data(2 * args.n_train, 0)
    X, y, Xv, yv = X[:args.n_train], y[:args.n_train], X[args.n_train:], y[args.n_train:]
    cases = [None] + args.metrics.split(",")
    times = {str(c): [] for c in cases}
    for r in range(args.repeats):
        for case in (cases if r % 2 == 0 else cases[::-1]):
            model = BoostClassifier(early_stopping=False,
                                    n_estimators=args.n_estimators, eval_metric=case,
                                    n_jobs=args.threads, random_state=0)
            t0 = time.perf_counter()
            model.fit(X, y, eval_set=[(Xv, yv)])
            times[str(case)].append(time.perf_counter() - t0)
            print(f"repeat {r + 1}: {case}: {times[str(case)][-1]:.2f} s", file=sys.stderr)
    base = statistics.median(times["None"])
    print(f"## Metrics: {args.n_train:,} training and validation rows x 28, "
          f"{args.n_estimators} trees, {args.threads} threads, median of {args.repeats}\n")
    print("| eval_metric | fit s | ratio to none |\n|---|---:|---:|")
    for case in cases:
        med = statistics.median(times[str(case)])
        print(f"| {case} | {med:.2f} | {med / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
