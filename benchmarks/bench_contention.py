#!/usr/bin/env python
"""Fit time on a busy machine: each library's slowdown beside competing busy processes
(not a test).

A 2-thread fit on a 2-core host should take about twice its quiet time when another
process keeps one core busy: its threads then share the cores with that process. OpenMP
threads that spin while they wait for each other (GCC's libgomp spins 300,000 times by
default before it sleeps) take the CPU the other threads need, and the fit slows down far
more. This script measures it, side by side:

* the ``bench_peers.py`` data (``--rows`` rows, 28 features, float32), ``--trees`` trees
  of depth 6, learning rate 0.1; each library's default thread count (all the cores the
  process may use; boostlib leaves out the cores other processes keep busy when the fit
  starts), or ``--threads`` threads for every library;
* libraries: ``boostlib-depthwise``, ``boostlib-symmetric``, ``lightgbm`` (depth 6, 64
  leaves), ``xgboost`` (``hist``, depth 6), ``catboost`` (depth 6) -- those installed;
* conditions: ``quiet``, then beside ``1`` and ``2`` busy processes (Python loops at normal
  priority, started before and stopped after the condition's fits), then one busy process
  started halfway through each fit (at half the quiet median): load that arrives while a
  fit runs.

Each library runs in a fresh interpreter (its OpenMP runtime reads its settings when it
loads: boostlib's own spin limit must not reach the peers, nor theirs boostlib), fits once
untimed, then ``--repeats`` timed fits per condition; the table gives the median fit time
and its ratio to the quiet median ("slowdown"). Run it on an otherwise quiet host.

Usage::

    python benchmarks/bench_contention.py [--rows 200000] [--trees 100] [--repeats 3]
                                          [--threads N] [--libraries boostlib-depthwise,xgboost]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Dict, List

LIBRARIES = ("boostlib-depthwise", "boostlib-symmetric", "lightgbm", "xgboost", "catboost")
CONDITIONS = (0, 1, 2)           # busy processes beside the fit
MARKER = "@@CONTENTION@@ "

#: Run in a fresh interpreter: argv = library, rows, trees, threads, repeats.
CHILD = r"""
import json, os, statistics, subprocess, sys, threading, time, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, os.environ["BENCH_DIR"])
import numpy as np
from bench_peers import make_data
library, rows, trees, threads, repeats = sys.argv[1], *map(int, sys.argv[2:6])
X, y, _ = make_data(rows, 0)
X = X.astype(np.float32)
common = dict(n_estimators=trees, max_depth=6, learning_rate=0.1)
jobs = {} if threads <= 0 else {"n_jobs": threads}   # 0: the library's default
if library.startswith("boostlib"):
    import boostlib
    make = lambda: boostlib.BoostClassifier(early_stopping=False,
                                            grow_policy=library.split("-")[1], **jobs,
                                            **common)
elif library == "lightgbm":
    import lightgbm
    make = lambda: lightgbm.LGBMClassifier(num_leaves=64, verbose=-1, **jobs, **common)
elif library == "xgboost":
    import xgboost
    make = lambda: xgboost.XGBClassifier(tree_method="hist", **jobs, **common)
else:
    import catboost
    make = lambda: catboost.CatBoostClassifier(iterations=trees, depth=6, learning_rate=0.1,
                                               thread_count=threads if threads > 0 else -1,
                                               verbose=False)
def fit():
    model = make()
    start = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - start
def spin():
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])
def stop(busy):
    for p in busy:
        p.kill()
        p.wait()
fit()
out = {}
for n_busy in (0, 1, 2):
    busy = [spin() for _ in range(n_busy)]
    time.sleep(0.3)
    try:
        out[n_busy] = statistics.median(fit() for _ in range(repeats))
    finally:
        stop(busy)
# "late": one busy process started halfway through each fit (of its quiet time)
late = []
for _ in range(repeats):
    busy = []
    timer = threading.Timer(out[0] / 2, lambda: busy.append(spin()))
    timer.start()
    late.append(fit())
    timer.join()
    stop(busy)
    time.sleep(0.3)
out["late"] = statistics.median(late)
print("@@CONTENTION@@ " + json.dumps(out))
"""


def run(library: str, args: argparse.Namespace) -> Dict[int, float]:
    """The library's median fit time per number of busy processes (empty when it is not
    installed)."""
    env = dict(os.environ, BENCH_DIR=os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", CHILD, library, str(args.rows),
                           str(args.trees), str(args.threads), str(args.repeats)],
                          capture_output=True, text=True, env=env)
    for line in proc.stdout.splitlines():
        if line.startswith(MARKER):
            return {(int(k) if k.isdigit() else k): v
                    for k, v in json.loads(line[len(MARKER):]).items()}
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    print(f"{library}: skipped ({tail})", file=sys.stderr)
    return {}


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--threads", type=int, default=0,
                        help="threads of every library (default: each one's default)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    threads = f"{args.threads} threads" if args.threads > 0 else "default threads"
    print(f"{args.rows} rows x 28, {args.trees} trees of depth 6, {threads}, "
          f"median of {args.repeats}; load average {load:.1f} on {os.cpu_count()} CPUs")
    lines = ["| library | quiet (s) | 1 busy (s) | slowdown | 2 busy (s) | slowdown | "
             "1 busy from halfway (s) | slowdown |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for library in args.libraries.split(","):
        times = run(library, args)
        if not times:
            continue
        quiet = times[0]
        lines.append(f"| {library} | {quiet:.2f} | {times[1]:.2f} | {times[1] / quiet:.1f}x | "
                     f"{times[2]:.2f} | {times[2] / quiet:.1f}x | {times['late']:.2f} | "
                     f"{times['late'] / quiet:.1f}x |")
        print(lines[-1], flush=True)
    print("\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
