#!/usr/bin/env python
"""Sampled against unsampled boostlib fits, timed in lockstep: a benchmark, not a test.

On a shared machine the speed of memory and of the CPUs drifts by 10-30% over seconds to
minutes, so two fits run one after the other compare the host's moods as much as the code.
This script runs every model in its own process and lets them take turns, one boosting
iteration at a time: a token passes round-robin between the processes, and only the one
holding it runs. Every model then sees the same host, iteration by iteration. The set-up
before the second tree takes four turns (to the end of the borders' computation, to the end
of the binned matrix, to the first tree, to the second tree), so that it too runs side by
side: in one turn each, the models whose set-up came last took 0.1-0.3 s longer over it,
whichever models they were (checked by reversing their order), mostly in the steps that
allocate memory. The test predictions take turns too (not timed). The idle processes wait
on a semaphore and use no CPU; after taking the token a process waits ``--settle`` ms (not
timed) so the previous one's OpenMP threads stop spinning first.

    python benchmarks/bench_lockstep.py                          # depthwise, 1M rows
    python benchmarks/bench_lockstep.py --policy symmetric --n-estimators 100

The models are those of ``bench_peers.py --suite sampling`` for one grow policy: unsampled,
a fixed random half of the rows, uniform, GOSS (with its default warm-up) and MVS at
``--subsample``, with the same settings. Each reports its fit time (the sum of its turns),
the ratio to the unsampled fit, the median over the iterations of the per-iteration
ratio, and its test logloss. ``--phases`` adds where the time went, step by step, with the
timers of ``bench_tree_phases.py`` (which add a little overhead of their own).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
import traceback
from typing import Any, Dict, List, Optional

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_peers import DEFAULTS, build_boostlib, half_rows, write_data  # noqa: E402

SETUP_TURNS = 4     # turns before the second tree: borders, binned matrix, the rest of the
#                     set-up with the first derivatives (and sample), the first tree
SAMPLERS = [("unsampled", None), ("half the rows", "half"), ("uniform", "uniform"),
            ("GOSS", "goss"), ("MVS", "mvs")]


class Turns:
    """Round-robin turns between ``k`` processes: one semaphore each, and done flags."""

    def __init__(self, ctx, k: int):
        self.sems = [ctx.Semaphore(0) for _ in range(k)]
        self.done = ctx.Array("b", k)
        # set by the parent once every model has finished: a finished process waits for it
        # before it exits, so its teardown (freeing its arrays) does not overlap the turns
        # of the models still running
        self.all_finished = ctx.Event()

    def pass_on(self, i: int) -> None:
        """Give the turn to the next process after ``i`` that has not finished."""
        k = len(self.sems)
        for step in range(1, k + 1):
            j = (i + step) % k
            if not self.done[j]:
                self.sems[j].release()
                return


class Clock:
    """The turns of process ``i``: the time it held the token, in total and per turn."""

    def __init__(self, turns: Turns, i: int, settle: float):
        self.turns, self.i, self.settle = turns, i, settle
        self.held: List[float] = []
        self.holding = False
        self._start = 0.0

    def take(self) -> None:
        """Wait for the token, let the last holder's threads settle, start timing."""
        self.turns.sems[self.i].acquire()
        self.holding = True
        time.sleep(self.settle)
        self._start = time.perf_counter()

    def give(self) -> None:
        """End the turn's timing and give the token to the next process."""
        self.stop()
        self.holding = False
        self.turns.pass_on(self.i)

    def stop(self) -> None:
        """End the last turn's timing (the process still holds the token)."""
        self.held.append(time.perf_counter() - self._start)

    def leave(self) -> None:
        """Drop out of the rotation; give the turn on if this process holds it."""
        self.turns.done[self.i] = 1
        if self.holding:
            self.holding = False
            self.turns.pass_on(self.i)


def _child(i: int, name: str, sampler: Optional[str], policy: str, data_dir: str,
           cfg: Dict[str, Any], turns: Turns, settle: float, phases: bool, out) -> None:
    """One model's process; a failure leaves the rotation (the others go on) and is
    reported to the parent."""
    clock = Clock(turns, i, settle)
    try:
        _run_child(i, name, sampler, policy, data_dir, cfg, clock, phases, out)
    except BaseException:
        clock.leave()
        out.put(("error", i, traceback.format_exc()))


def _run_child(i: int, name: str, sampler: Optional[str], policy: str, data_dir: str,
               cfg: Dict[str, Any], clock: Clock, phases: bool, out) -> None:
    from sklearn.metrics import log_loss

    from boostlib.engine import binning, context
    if phases:      # the engine steps' timers of bench_tree_phases.py, summed over the fit
        from bench_tree_phases import TIMES, install_timers
        install_timers()
    X = np.load(os.path.join(data_dir, "X_train.npy"))
    y = np.load(os.path.join(data_dir, "y_train.npy"))
    if sampler == "half":
        rows = half_rows(X.shape[0], cfg["seed"])
        X, y = X[rows], y[rows]
    model, proba, _ = build_boostlib(policy, None if sampler == "half" else sampler)(cfg)
    original = context.BoostingContext.fit_tree

    def setup_turn(step):       # the set-up's first turns end where the binning steps end
        def wrapped(self, *args, **kwargs):
            result = step(self, *args, **kwargs)
            if clock.holding and fit_tree.last == -1:
                clock.give()
                clock.take()
            return result
        return wrapped
    binning.BinMapper.fit = setup_turn(binning.BinMapper.fit)
    binning.BinMapper.transform = setup_turn(binning.BinMapper.transform)

    def fit_tree(self, *args, **kwargs):    # a turn ends where the next tree is fitted
        if self.iteration > fit_tree.last:
            fit_tree.last = self.iteration
            clock.give()
            clock.take()
        return original(self, *args, **kwargs)
    fit_tree.last = -1
    context.BoostingContext.fit_tree = fit_tree
    out.put(("ready", i, None))
    clock.take()
    model.fit(X, y)
    clock.stop()
    del X, y
    # still holding the token: the test predictions do not compete with the others' turns
    Xt = np.load(os.path.join(data_dir, "X_test.npy"))
    yt = np.load(os.path.join(data_dir, "y_test.npy"))
    logloss = float(log_loss(yt, np.clip(proba(model, Xt), 1e-15, 1 - 1e-15)))  # as bench_peers
    clock.leave()
    result = dict(name=name, held=clock.held, logloss=logloss)
    if phases:
        result["phases"] = dict(TIMES)
    out.put(("result", i, result))
    clock.turns.all_finished.wait()


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", choices=["depthwise", "symmetric"], default="depthwise")
    ap.add_argument("--n-train", type=int, default=1_000_000)
    ap.add_argument("--n-test", type=int, default=200_000)
    ap.add_argument("--n-estimators", type=int, default=DEFAULTS["n_estimators"])
    ap.add_argument("--threads", type=int, default=DEFAULTS["threads"])
    ap.add_argument("--subsample", type=float, default=DEFAULTS["subsample"])
    ap.add_argument("--seed", type=int, default=DEFAULTS["seed"], help="data seed")
    ap.add_argument("--settle", type=float, default=5.0,
                    help="ms a process waits, untimed, after taking its turn")
    ap.add_argument("--json", metavar="PATH", help="also write every turn's time as JSON")
    ap.add_argument("--phases", action="store_true",
                    help="also time the engine's steps (as bench_tree_phases.py does) and "
                         "print them in ms per tree")
    ap.add_argument("--models", default=",".join(s or "none" for _, s in SAMPLERS),
                    help="comma-separated subset of none, half, uniform, goss, mvs")
    args = ap.parse_args(argv)
    cfg = dict(DEFAULTS, n_estimators=args.n_estimators, threads=args.threads,
               subsample=args.subsample, seed=args.seed)
    wanted = args.models.split(",")
    unknown = sorted(set(wanted) - {s or "none" for _, s in SAMPLERS})
    if unknown:
        ap.error(f"--models: unknown {unknown}; expected a subset of none, half, uniform, "
                 "goss, mvs")
    models = [(n, s) for n, s in SAMPLERS if (s or "none") in wanted]
    if not models or models[0][1] is not None:
        ap.error("--models must include 'none' (the unsampled fit the ratios refer to)")
    ctx = mp.get_context("spawn")
    turns, out = Turns(ctx, len(models)), ctx.Queue()
    with tempfile.TemporaryDirectory(prefix="boostlib-lockstep-") as data_dir:
        write_data(data_dir, args.n_train, args.n_test, args.seed)
        procs = [ctx.Process(target=_child, args=(i, n, s, args.policy, data_dir, cfg, turns,
                                                  args.settle / 1e3, args.phases, out))
                 for i, (n, s) in enumerate(models)]
        for p in procs:
            p.start()
        results, errors = {}, {}
        for _ in procs:
            kind, i, res = out.get()
            if kind == "error":
                errors[i] = res
        turns.pass_on(len(procs) - 1)      # to the first process still in the rotation
        for _ in range(len(procs) - len(errors)):
            kind, i, res = out.get()
            (errors if kind == "error" else results)[i] = res
        turns.all_finished.set()
        for p in procs:
            p.join()
    if errors:
        for i, text in sorted(errors.items()):
            print(f"{models[i][0]} failed:\n{text}", file=sys.stderr)
        return 1
    ordered = [results[i] for i in range(len(models))]
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(args=vars(args), results=ordered), fh)
    print(render(args, ordered))
    return 0


def render(args, results: List[Dict[str, Any]]) -> str:
    """The Markdown table: fit time, ratios to the unsampled fit, test logloss."""
    base = results[0]
    b_held = np.asarray(base["held"])
    lines = [f"## Lockstep: boostlib {args.policy}, {args.n_train:,} rows, "
             f"{args.n_estimators} trees, subsample {args.subsample}, {args.threads} threads",
             "", "| model | fit s | ratio | median per-iteration ratio | logloss | logloss diff |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        held = np.asarray(r["held"])
        # turns SETUP_TURNS..n-2 are one iteration each (the first ones: binning, set-up and
        # the first tree; the last: wrap-up)
        k = min(held.size, b_held.size) - 1
        per_iter = (np.median(held[SETUP_TURNS:k] / b_held[SETUP_TURNS:k])
                    if k > SETUP_TURNS else float("nan"))
        diff = 100 * (r["logloss"] - base["logloss"]) / base["logloss"]
        lines.append(f"| {r['name']} | {held.sum():.2f} | {held.sum() / b_held.sum():.3f}x | "
                     f"{per_iter:.3f}x | {r['logloss']:.5f} | {diff:+.2f}% |")
    lines += ["", "ratio: fit time over the unsampled fit's; every process took turns with the "
              "others, one iteration at a time."]
    if all("phases" in r for r in results):
        lines += ["", phase_table(args.n_estimators, results)]
    return "\n".join(lines)


def phase_table(n_trees: int, results: List[Dict[str, Any]]) -> str:
    """The ``--phases`` table: each engine step's total over the fit, in ms per tree
    (binning in ms per fit), and "rest" (the turns' time outside the top-level steps)."""
    from bench_tree_phases import PER_FIT, TOP_LEVEL
    names = sorted({k for r in results for k in r["phases"]},
                   key=lambda k: -results[0]["phases"].get(k, 0.0))
    lines = ["| phase | " + " | ".join(r["name"] for r in results) + " |",
             "|---|" + "---:|" * len(results)]
    for k in names + ["rest"]:
        cells = []
        for r in results:
            t = r["phases"]
            v = (sum(r["held"]) - sum(t.get(p, 0.0) for p in TOP_LEVEL) if k == "rest"
                 else t.get(k, 0.0))
            cells.append(f"{v * (1e3 if k in PER_FIT else 1e3 / n_trees):.1f}")
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
