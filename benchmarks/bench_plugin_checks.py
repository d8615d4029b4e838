#!/usr/bin/env python
"""What the plugin-boundary checks cost: fits at BOOSTLIB_PLUGIN_CHECKS=off / fast / full.

This is a benchmark, not a test. It fits the same model (HIGGS-like data of
``bench_peers.py``, MVS sampling at 0.5 so the sampler checks run too) at the three check
levels, interleaved, ``--repeats`` times each, and prints the median fit time of each level and
its ratio to ``off``; then it times the checks alone on arrays of the training size.

    python benchmarks/bench_plugin_checks.py                       # 500,000 rows, 100 trees
    python benchmarks/bench_plugin_checks.py --n-train 50000 --n-estimators 20   # smoke run
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

import boostlib  # noqa: E402
from boostlib.plugin import checks  # noqa: E402
from boostlib.builtin.losses import LogLoss  # noqa: E402
from boostlib.builtin.samplers import MVSSampler  # noqa: E402


def _fit_seconds(X, y, args, how: str) -> float:
    os.environ[checks.ENV] = how
    model = boostlib.BoostClassifier(early_stopping=False,
        n_estimators=args.n_estimators, max_depth=6, sampler="mvs", subsample=0.5,
        n_jobs=args.threads, random_state=0)
    t0 = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - t0


def _best_ms(fn, repeats: int = 20) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-train", type=int, default=500_000)
    ap.add_argument("--n-estimators", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    X, y, _ = make_data(args.n_train, 0)
    levels = ("off", "fast", "full")
    times = {how: [] for how in levels}
    for r in range(args.repeats):
        for how in (levels if r % 2 == 0 else levels[::-1]):
            times[how].append(_fit_seconds(X, y, args, how))
            print(f"repeat {r + 1}: {how:<4} {times[how][-1]:.2f} s", file=sys.stderr)
    base = statistics.median(times["off"])
    print(f"## Plugin checks: {args.n_train:,} rows x 28, {args.n_estimators} trees, depth 6, "
          f"MVS 0.5, {args.threads} threads, median of {args.repeats}\n")
    print("| BOOSTLIB_PLUGIN_CHECKS | fit s | ratio to off |\n|---|---:|---:|")
    for how in levels:
        med = statistics.median(times[how])
        print(f"| {how} | {med:.2f} | {med / base:.3f} |")

    # The checks alone, per iteration, on arrays of the training size.
    n = args.n_train
    rng = np.random.default_rng(0)
    g, h = rng.normal(size=n), rng.random(n)
    res = MVSSampler(0.5).sample(g, h, rng, 0)
    loss = LogLoss()
    print(f"\nThe checks alone on {n:,} rows (best of 20, ms per iteration):\n")
    print("| check | fast | full |\n|---|---:|---:|")
    for what, fn in (
            ("gradient + hessian", lambda how: checks.derivatives(loss, None, g, h, 0, how)),
            # as a pass of its own (what fit_tree runs when it cannot check the sample in the
            # pass that gathers it: split noise, other dtypes)
            ("sampler result", lambda how: checks.sample(MVSSampler(0.5), res, n, how))):
        print(f"| {what} | {_best_ms(lambda: fn('fast')):.2f} | "
              f"{_best_ms(lambda: fn('full')):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
