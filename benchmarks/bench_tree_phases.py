#!/usr/bin/env python
"""Where a boosting iteration spends its time, per tree, with and without row sampling.

This is a benchmark, not a test. It fits boostlib on the ``bench_peers.py`` data and times the
engine's steps with wall-clock timers wrapped around them (private methods of the engine, so
this script follows the code, not the public API):

    python benchmarks/bench_tree_phases.py                       # depthwise, 1M rows
    python benchmarks/bench_tree_phases.py --policy symmetric --trees 60 --repeats 3
    python benchmarks/bench_tree_phases.py --policy lossguide --data agaricus --trees 200 \
        --repeats 5 --threads 1

``--policy lossguide`` fits ``bench_leafwise.py``'s pruned leaf-wise trees (63 leaves, 20
rows a leaf, bins of at least 3 rows); ``--data`` takes one of that script's data sets
(``../shared/datasets``) instead of the W1 rows.

Models: the unsampled fit on all rows ("full"), the same on a fixed random half of the rows
("half": what a sampled fit at 0.5 would cost if drawing the sample and updating the other
rows' scores were free), and ``uniform``, ``goss`` (no warm-up) and ``mvs`` at
``--subsample``. Each model is fitted ``--repeats`` times, round by round; every phase reports
its minimum over the rounds, in ms per tree (binning in ms per fit); "rest" is the total minus
the phases that do not nest (the update rule's Python, the training curve, callbacks, ...).
The last lines are the ratios to "full" of the per-tree total, with binning excluded and with
it spread over ``--amortize`` trees (the peer benchmark's 200).
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from typing import Callable, Dict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_peers import half_rows, make_data  # noqa: E402

import boostlib  # noqa: E402
from boostlib.engine import binning, context, evaluation, grower, histograms  # noqa: E402
from boostlib._kernels import _leafwise, _partition, _splitting  # noqa: E402

TIMES: Dict[str, float] = collections.defaultdict(float)

# (owner, attribute, phase): the timed steps. Nested steps are timed on their own as well
# ("grow" contains "histograms", "partition", "sample inputs", ...).
PHASES = [
    (binning.BinMapper, "fit", "binning"),
    (binning.BinMapper, "transform", "binning"),
    (context.BoostingContext, "gradients", "derivatives"),
    (context.BoostingContext, "sample", "sampler"),
    (context.BoostingContext, "add_tree", "score update"),
    (context.BoostingContext, "fit_tree", "fit tree"),
    (grower.TreeGrower, "grow", "grow"),
    (histograms.Histograms, "build", "histograms"),
    (grower.TreeGrower, "_set_values", "leaf values"),
    (histograms.Histograms, "gather_sample", "sample inputs"),
    (_partition, "apply_level", "partition"),
    (_partition, "apply_level_oblivious", "partition"),
    (_splitting, "find_split_nodes", "split finding"),
    (_splitting, "find_split_level", "split finding"),
    (_leafwise, "grow_tree", "compiled tree"),
    (evaluation.Evaluator, "record", "training curve"),
]
PER_FIT = {"binning"}
# the phases that do not nest in each other: "rest" is the total minus these
TOP_LEVEL = ["binning", "derivatives", "sampler", "fit tree", "score update",
             "training curve"]


def _timed(fn: Callable, phase: str) -> Callable:
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES[phase] += time.perf_counter() - t0
    return wrapper


def install_timers() -> None:
    """Wrap every step of ``PHASES``; a step this version of the engine does not have is
    reported on stderr (its phase then reads 0)."""
    for owner, name, phase in PHASES:
        fn = getattr(owner, name, None)
        if fn is None:
            print(f"warning: {owner.__name__}.{name} not found: phase {phase!r} is not timed",
                  file=sys.stderr)
            continue
        setattr(owner, name, _timed(fn, phase))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", choices=["depthwise", "symmetric", "lossguide"],
                    default="depthwise")
    ap.add_argument("--data", default="W1", help="W1 (--n-train rows) or a data set of "
                    "bench_leafwise.py (agaricus, a1a, w1a, diabetes, ...)")
    ap.add_argument("--n-train", type=int, default=1_000_000)
    ap.add_argument("--trees", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--subsample", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--amortize", type=int, default=200,
                    help="trees the binning is spread over in the last ratio line")
    args = ap.parse_args(argv)

    if args.data == "W1":
        X, y, _ = make_data(args.n_train, 0)
    else:
        from bench_leafwise import datasets
        sets = datasets(1000)
        if args.data not in sets or sets[args.data][0] != "binary":
            ap.error(f"--data {args.data!r}: expected W1 or a binary data set of "
                     f"bench_leafwise.py found here: {sorted(sets)}")
        X, y = sets[args.data][1]()[:2]
    half = half_rows(y.size, 0)
    shape = dict(max_depth=6, min_samples_leaf=1) if args.policy != "lossguide" else dict(
        max_leaves=63, max_depth=30, min_samples_leaf=20, min_samples_bin=3,
        prune_features=True)
    Xh, yh = X[half], y[half]
    boostlib.BoostClassifier(early_stopping=False,
                             n_estimators=2).fit(X[:1000], y[:1000])    # imports, first calls
    install_timers()

    sampled = {"uniform": {}, "goss": {"warmup": False}, "mvs": {}}
    models = ["full", "half"] + list(sampled)
    best: Dict[str, Dict[str, float]] = {}
    for _ in range(args.repeats):
        for name in models:
            extra = {}
            if name in sampled:
                extra = dict(sampler=name, subsample=args.subsample,
                             sampler_params=sampled[name] or None)
            est = boostlib.BoostClassifier(early_stopping=False,
                n_estimators=args.trees, grow_policy=args.policy, learning_rate=0.1,
                max_bins=255, l2_regularization=1.0, min_child_weight=1e-3,
                n_jobs=args.threads, random_state=0, **shape, **extra)
            TIMES.clear()
            t0 = time.perf_counter()
            est.fit(Xh, yh) if name == "half" else est.fit(X, y)
            TIMES["total"] = time.perf_counter() - t0
            TIMES["rest"] = TIMES["total"] - sum(TIMES.get(k, 0.0) for k in TOP_LEVEL)
            prev = best.get(name)
            best[name] = (dict(TIMES) if prev is None else
                          {k: min(v, prev.get(k, v)) for k, v in TIMES.items()})

    phases = ["total"] + sorted({k for r in best.values() for k in r} - {"total", "rest"},
                                key=lambda k: -best["full"].get(k, 0.0)) + ["rest"]
    # microseconds when a tree takes under 5 ms
    unit, per_unit = ("us", 1e6) if best["full"]["total"] / args.trees < 5e-3 else ("ms", 1e3)
    print(f"{args.policy}, {args.data} ({y.size:,} rows), {args.trees} trees, "
          f"{args.threads} threads, "
          f"subsample {args.subsample}; minimum of {args.repeats} fits; {unit} per tree "
          "(binning: ms per fit)\n")
    print("| phase | " + " | ".join(models) + " |")
    print("|---|" + "---:|" * len(models))
    for k in phases:
        scale = 1e3 if k in PER_FIT else per_unit / args.trees
        print(f"| {k} | " + " | ".join(f"{scale * best[m].get(k, 0.0):.1f}" for m in models)
              + " |")

    def per_tree(m: str, amortize: int) -> float:
        spread = best[m].get("binning", 0.0) / amortize if amortize else 0.0
        return (best[m]["total"] - best[m].get("binning", 0.0)) / args.trees + spread

    for label, n in (("binning excluded", 0), (f"binning over {args.amortize} trees",
                                                args.amortize)):
        ratios = ", ".join(f"{m} {per_tree(m, n) / per_tree('full', n):.2f}x"
                           for m in models[1:])
        print(f"\nper-tree ratio to full, {label}: {ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
