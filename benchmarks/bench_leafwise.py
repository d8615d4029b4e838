#!/usr/bin/env python
"""Leaf-wise trees against LightGBM's: test loss and fit time at equal leaves.

This is a benchmark, not a test. boostlib ``grow_policy="lossguide"`` and LightGBM (its
default leaf-wise growth) fit the same data at equal settings: 63 leaves, no depth limit
(boostlib: ``max_depth=30``, its largest), 200 trees, learning rate 0.1, at least 20 rows
and 1e-3 hessian per leaf, L2 1.0, 255 bins of at least 3 rows (LightGBM's default
``min_data_in_bin``, boostlib's ``min_samples_bin``), 2 threads. boostlib fits twice: with
exact greedy trees (the default) and with ``prune_features=True``, LightGBM's rule of not
searching, in a leaf's subtree, the features without a split of positive gain in that
leaf. It prints the test loss of each (logloss for binary targets, RMSE for regression),
boostlib's ratios to LightGBM's, and the median fit times (fits interleaved, ``--repeats``
each) with their ratios.

Data: W1 (``bench_peers.make_data``: HIGGS-like, ``--n-rows`` rows, 100,000 test rows)
always; from ``../shared/datasets`` when present: HIGGS (LightGBM's example), UCI Adult
(categorical columns native in both), agaricus, a1a, w1a (their test files), and California
housing (regression), german.numer and diabetes, which have no test file. Those three are
split at random, 25% test, ``--splits`` times (seeds 0, 1, ...), and their test loss is the
mean over the splits: on diabetes's 192 test rows, one split's loss ratio between the two
libraries ranges from 0.94 to 1.02 with the seed.

``--per-tree`` prints instead the time one tree adds to a fit, boostlib's pruned trees and
LightGBM's: from fits of 1 and of 200 trees, median of 7 each, on 1 and on 2 threads.
``--loops KEY=VALUE,...`` times boostlib's pruned trees with those extra parameters grown
by the compiled loop against the Python loop (``trees.compiled.ENABLED``), fits
interleaved, median of ``--repeats``.

    python benchmarks/bench_leafwise.py                      # W1 at 1,000,000 rows + real
    python benchmarks/bench_leafwise.py --n-rows 100000 --repeats 3
    python benchmarks/bench_leafwise.py --only a1a,w1a,german.numer,diabetes --best
    python benchmarks/bench_leafwise.py --only german.numer,diabetes --splits 1   # seed 0
    python benchmarks/bench_leafwise.py --only agaricus,a1a,w1a,diabetes --per-tree
    python benchmarks/bench_leafwise.py --n-rows 200000 --repeats 5 --loops colsample_bynode=0.5
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_peers import make_data  # noqa: E402

from boostlib import BoostClassifier, BoostRegressor  # noqa: E402

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                      "datasets")
COMMON = dict(n_estimators=200, learning_rate=0.1)
#: The sets without a test file: split at random, ``--splits`` times.
RESPLIT = ("California", "german.numer", "diabetes")


def _split(X, y, seed=0):
    test = np.random.default_rng(seed).random(y.size) < 0.25
    return X[~test], y[~test], X[test], y[test]


def _libsvm(train: str, test: str = None, n_features: int = None, seed: int = 0):
    from sklearn.datasets import load_svmlight_file, load_svmlight_files
    if test is None:
        X, y = load_svmlight_file(os.path.join(SHARED, train), n_features=n_features)
        X, y = X.toarray(), (y > 0).astype(float)
        return _split(X, y, seed)
    X, y, Xt, yt = load_svmlight_files([os.path.join(SHARED, train),
                                        os.path.join(SHARED, test)], n_features=n_features)
    return X.toarray(), (y > 0).astype(float), Xt.toarray(), (yt > 0).astype(float)


def datasets(n_rows: int) -> Dict[str, Tuple[str, Callable[..., Tuple]]]:
    """``{name: (task, load)}``; ``load(seed)`` gives the training and test rows (the seed
    draws the split of the sets in :data:`RESPLIT`, and is ignored by the others)."""
    def w1(seed=0):
        X, y, _ = make_data(n_rows + 100_000, 0)
        return X[:n_rows], y[:n_rows], X[n_rows:], y[n_rows:]

    def higgs(seed=0):
        a = np.loadtxt(os.path.join(SHARED, "higgs_lightgbm", "binary.train"))
        b = np.loadtxt(os.path.join(SHARED, "higgs_lightgbm", "binary.test"))
        return a[:, 1:], a[:, 0], b[:, 1:], b[:, 0]

    def adult(seed=0):
        from bench_tabular import load_adult
        train, y, test, yt = load_adult()[:4]
        return train, y.astype(float), test, yt.astype(float)

    def california(seed=0):
        a = np.loadtxt(os.path.join(SHARED, "california_housing", "cal_housing.data"),
                       delimiter=",")
        return _split(a[:, :8], a[:, 8] / 1e5, seed)

    out = {"W1": ("binary", w1)}
    if os.path.isdir(SHARED):
        out.update({
            "HIGGS": ("binary", higgs),
            "Adult": ("binary", adult),
            "California": ("regression", california),
            "agaricus": ("binary", lambda seed=0: _libsvm("agaricus/agaricus.txt.train",
                                                          "agaricus/agaricus.txt.test", 126)),
            "a1a": ("binary", lambda seed=0: _libsvm("a1a/a1a", "a1a/a1a.t", 123)),
            "w1a": ("binary", lambda seed=0: _libsvm("w1a/w1a", "w1a/w1a.t", 300)),
            "german.numer": ("binary", lambda seed=0: _libsvm("german.numer/german.numer",
                                                              seed=seed)),
            "diabetes": ("binary", lambda seed=0: _libsvm("diabetes/diabetes", seed=seed)),
        })
    return out


def fitters(task: str, threads: int, n_trees: int = COMMON["n_estimators"],
            extra: Dict[str, Any] = None) -> Dict[str, Callable[[Any, Any], Any]]:
    """The fits compared, by name; ``extra``: more parameters of boostlib's."""
    import lightgbm as lgb
    common = dict(COMMON, n_estimators=n_trees)

    def ours(X, y, prune=False):
        cls = BoostClassifier if task == "binary" else BoostRegressor
        return cls(grow_policy="lossguide", max_leaves=63, max_depth=30, min_samples_leaf=20,
                   min_child_weight=1e-3, l2_regularization=1.0, max_bins=255,
                   min_samples_bin=3, prune_features=prune, n_jobs=threads, random_state=0,
                   **common, **(extra or {})).fit(X, y)

    def lightgbm(X, y):
        cls = lgb.LGBMClassifier if task == "binary" else lgb.LGBMRegressor
        return cls(num_leaves=63, max_depth=-1, min_child_samples=20, min_child_weight=1e-3,
                   reg_lambda=1.0, max_bin=255, min_data_in_bin=3, n_jobs=threads,
                   verbose=-1, random_state=0, **common).fit(X, y)

    return {"boostlib": ours, "pruned": lambda X, y: ours(X, y, True), "lightgbm": lightgbm}


def test_loss(task: str, model: Any, X: Any, y: np.ndarray) -> float:
    if task == "binary":
        p = np.clip(model.predict_proba(X)[:, 1], 1e-15, 1 - 1e-15)
        return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))
    return float(np.sqrt(np.mean((model.predict(X) - y) ** 2)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-rows", type=int, default=1_000_000, help="W1 training rows")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--splits", type=int, default=10,
                    help="random splits of the sets without a test file (California, "
                         "german.numer, diabetes); their loss is the mean over the splits")
    ap.add_argument("--best", action="store_true",
                    help="also report each library's best test loss over the iterations "
                         "and its mean leaves per tree")
    ap.add_argument("--only", default=None, help="comma-separated dataset names (W1, HIGGS, "
                    "Adult, California, agaricus, a1a, w1a, german.numer, diabetes)")
    ap.add_argument("--per-tree", action="store_true",
                    help="print the time a tree adds to a fit (pruned, and LightGBM's) "
                         "on 1 and 2 threads instead")
    ap.add_argument("--loops", default=None, metavar="KEY=VALUE,...",
                    help="time the compiled loop against the Python loop with these extra "
                         "parameters instead")
    args = ap.parse_args(argv)
    if args.per_tree:
        return per_tree(args.n_rows, args.only)
    if args.loops is not None:
        return loops(args.n_rows, args.only, args.loops, args.repeats, args.threads)
    rows: List[str] = []
    best_rows: List[str] = []
    for name, (task, load) in datasets(args.n_rows).items():
        if args.only and name not in args.only.split(","):
            continue
        times: Dict[str, List[float]] = {}
        losses: Dict[str, List[float]] = {}
        splits = []                                 # (models, test rows, test target)
        for seed in range(args.splits if name in RESPLIT else 1):
            X, y, Xt, yt = load(seed)
            models: Dict[str, Any] = {}
            for r in range(args.repeats):
                items = list(fitters(task, args.threads).items())
                for lib, fit in (items if r % 2 == 0 else items[::-1]):
                    t0 = time.perf_counter()
                    models[lib] = fit(X, y)
                    times.setdefault(lib, []).append(time.perf_counter() - t0)
            for lib, model in models.items():
                losses.setdefault(lib, []).append(test_loss(task, model, Xt, yt))
            if args.best:
                splits.append((models, Xt, yt))
        loss = {lib: float(np.mean(v)) for lib, v in losses.items()}
        if args.best:
            best_rows.append(_best_row(name, task, splits))
        t = {k: statistics.median(v) for k, v in times.items()}
        lg, tl = loss["lightgbm"], t["lightgbm"]
        rows.append(f"| {name} | {'logloss' if task == 'binary' else 'RMSE'} | "
                    f"{loss['boostlib']:.5f} | {loss['pruned']:.5f} | {lg:.5f} | "
                    f"{loss['boostlib'] / lg:.4f} | {loss['pruned'] / lg:.4f} | "
                    f"{t['boostlib']:.3f} | {t['pruned']:.3f} | {tl:.3f} | "
                    f"{t['boostlib'] / tl:.2f} | {t['pruned'] / tl:.2f} |")
        print(rows[-1], file=sys.stderr, flush=True)
    print(f"## Leaf-wise trees, 63 leaves, 200 trees, {args.threads} threads, median of "
          f"{args.repeats} (W1: {args.n_rows:,} rows; {', '.join(RESPLIT)}: mean test loss "
          f"of {args.splits} splits)\n")
    print("| data | test loss | boostlib | pruned | LightGBM | ratio | pruned ratio | "
          "boostlib s | pruned s | LightGBM s | time ratio | pruned time ratio |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    if best_rows:
        print("\n## Best iteration (lowest test loss over the 200 trees) and mean leaves\n")
        print("| data | boostlib best (iteration) | pruned best | LightGBM best | ratio | "
              "pruned ratio | leaves per tree, boostlib / pruned / LightGBM |\n"
              "|---|---:|---:|---:|---:|---:|---:|")
        print("\n".join(best_rows))
    return 0


def per_tree(n_rows: int, only: str = None) -> int:
    """Print the time one tree adds to a fit: (median of 7 fits of 200 trees - median of 7
    of 1 tree) / 199, boostlib's pruned trees and LightGBM's, on 1 and 2 threads."""
    print("| data | threads | boostlib pruned, us a tree | LightGBM, us a tree | ratio |\n"
          "|---|---:|---:|---:|---:|")
    for name, (task, load) in datasets(n_rows).items():
        if only and name not in only.split(","):
            continue
        X, y = load()[:2]
        for threads in (1, 2):
            cost = {}
            for lib in ("pruned", "lightgbm"):
                medians = []
                for n_trees in (1, 200):
                    fit = fitters(task, threads, n_trees)[lib]
                    fit(X, y)                   # warm: first-call costs untimed
                    times = []
                    for _ in range(7):
                        t0 = time.perf_counter()
                        fit(X, y)
                        times.append(time.perf_counter() - t0)
                    medians.append(statistics.median(times))
                cost[lib] = (medians[1] - medians[0]) / 199 * 1e6
            print(f"| {name} | {threads} | {cost['pruned']:.0f} | {cost['lightgbm']:.0f} | "
                  f"{cost['pruned'] / cost['lightgbm']:.2f} |", flush=True)
    return 0


def loops(n_rows: int, only: str, extra: str, repeats: int, threads: int) -> int:
    """Print the fit times of the pruned trees with ``extra`` parameters (``key=value``
    pairs, values as Python literals) grown by the compiled loop and by the Python loop."""
    import ast
    import re
    from boostlib.engine.trees import compiled
    pairs = re.split(r",(?=\w+=)", extra)            # commas inside values stay
    params = {k: ast.literal_eval(v) for k, v in (kv.split("=", 1) for kv in pairs)}
    print(f"| data | compiled s | Python loop s | ratio |  ({extra}, median of {repeats})\n"
          "|---|---:|---:|---:|")
    for name, (task, load) in datasets(n_rows).items():
        if only and name not in only.split(","):
            continue
        X, y = load()[:2]
        fit = fitters(task, threads, extra=params)["pruned"]
        times: Dict[bool, List[float]] = {True: [], False: []}
        try:
            for r in range(repeats):
                for on in ((True, False) if r % 2 == 0 else (False, True)):
                    compiled.ENABLED = on
                    t0 = time.perf_counter()
                    fit(X, y)
                    times[on].append(time.perf_counter() - t0)
        finally:
            compiled.ENABLED = True
        a, b = statistics.median(times[True]), statistics.median(times[False])
        print(f"| {name} | {a:.3f} | {b:.3f} | {a / b:.2f} |", flush=True)
    return 0


def _best_row(name: str, task: str, splits: List[Tuple[Dict[str, Any], Any, np.ndarray]]
              ) -> str:
    """The lowest test loss over the iterations of each model (of the curve averaged over
    the splits), and its mean leaves."""
    def curve(model, Xt, yt):
        if task == "binary":
            probs = model.staged_predict_proba(Xt) if hasattr(model, "model_") else (
                model.predict_proba(Xt, num_iteration=k) for k in range(1, 201))
            return [float(-np.mean(yt * np.log(p) + (1 - yt) * np.log1p(-p)))
                    for p in (np.clip(q[:, 1], 1e-15, 1 - 1e-15) for q in probs)]
        preds = model.staged_predict(Xt) if hasattr(model, "model_") else (
            model.predict(Xt, num_iteration=k) for k in range(1, 201))
        return [float(np.sqrt(np.mean((p - yt) ** 2))) for p in preds]

    def leaves(model):
        if hasattr(model, "model_"):
            return np.mean([t.n_leaves() for t in model.model_.ensemble.scalar_trees()])
        return np.mean([t["num_leaves"] for t in model.booster_.dump_model()["tree_info"]])

    cells, best = [], {}
    for lib in ("boostlib", "pruned", "lightgbm"):
        c = np.mean([curve(models[lib], Xt, yt) for models, Xt, yt in splits], axis=0)
        i = int(np.argmin(c))
        best[lib] = c[i]
        cells.append(f"{c[i]:.5f} ({i + 1})")
    ratios = [f"{best[lib] / best['lightgbm']:.4f}" for lib in ("boostlib", "pruned")]
    counts = " / ".join(f"{np.mean([leaves(m[lib]) for m, _, _ in splits]):.1f}"
                        for lib in ("boostlib", "pruned", "lightgbm"))
    return f"| {name} | {' | '.join(cells)} | {' | '.join(ratios)} | {counts} |"


if __name__ == "__main__":
    sys.exit(main())
