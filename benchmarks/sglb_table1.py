#!/usr/bin/env python
"""Reproduce Table 1 of the SGLB paper (Ustimenko & Prokhorenkova, ICML 2021, Section 7.3).

Data: ``x ~ N(0, I_3)``, ``y = 1{N(sin(x1 x2 x3), 1) > 0}``; 100 folds, each a fresh draw of
1000 training and 1000 test rows. Models: depth-1 trees, 5 borders per feature
(``max_bins=6``), learning rate 0.1, gradient leaves (the paper's setting), SLA smoothing 0.1:

* Logloss + GB       ``loss="logloss"``, ``update="sgb"``
* SLA + GB           ``loss="sla"``, ``update="sgb"``
* SLA + SGB          ``loss="sla"``, ``update="sgb"``, ``subsample=0.5`` (Bernoulli)
* SLA + SGLB         ``loss="sla"``, ``update="sglb"``, ``T = 1e3``, ``gamma = 1e-3``

The paper does not state the number of iterations, so every model is trained once for the
largest count of ``--iterations`` and the test 0-1 loss is read at each count from the
model's earlier states (``Ensemble.predict_states_raw``: exact, SGLB's shrinkage undone).
The p-values are paired t-tests over the folds against SLA + SGLB (scipy).

With ``--catboost`` the same four models are also trained with CatBoost (``langevin=True``,
``leaf_estimation_method="Gradient"``, ``border_count=5``, ``random_strength=0``, SLA through
its Python custom-objective interface) as an external reference.

    python benchmarks/sglb_table1.py                          # 100 folds, ~5 min on 2 cores
    python benchmarks/sglb_table1.py --folds 10 --iterations 100,300   # smoke run
    python benchmarks/sglb_table1.py --catboost --json table1.json
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Dict, List, Sequence

import numpy as np

METHODS = ("Logloss + GB", "SLA + GB", "SLA + SGB", "SLA + SGLB")
PAPER = {"Logloss + GB": 0.482, "SLA + GB": 0.475, "SLA + SGB": 0.474, "SLA + SGLB": 0.470}


def make_fold(fold: int, seed: int):
    """One fold: 1000 training and 1000 test rows from the paper's generator."""
    rng = np.random.default_rng([seed, fold])
    X = rng.normal(size=(2000, 3))
    y = (np.sin(X[:, 0] * X[:, 1] * X[:, 2]) + rng.normal(size=2000) > 0).astype(int)
    return X[:1000], y[:1000], X[1000:], y[1000:]


def boostlib_params(method: str, l2: float, n_iter: int, seed: int) -> dict:
    params = dict(n_estimators=n_iter, learning_rate=0.1, max_depth=1, max_bins=6,
                  l2_regularization=l2, leaf_estimation="gradient", random_state=seed,
                  n_jobs=1, loss="logloss" if method.startswith("Logloss") else "sla",
                  loss_params=None if method.startswith("Logloss") else {"scale": 0.1})
    if method == "SLA + SGB":
        params.update(sampler="uniform", subsample=0.5)
    if method == "SLA + SGLB":
        params.update(update="sglb", update_params={"diffusion_temperature": 1e3,
                                                    "model_shrink_rate": 1e-3})
    return params


def run_boostlib(fold: int, seed: int, iterations: Sequence[int], l2: float) -> Dict[str, list]:
    """Test 0-1 loss of every method at every iteration count, on one fold."""
    from boostlib import BoostClassifier

    X, y, Xt, yt = make_fold(fold, seed)
    out = {}
    for method in METHODS:
        m = BoostClassifier(early_stopping=False,
                            **boostlib_params(method, l2, max(iterations), seed + fold))
        m.fit(X, y)
        raw = m.ensemble_.predict_states_raw(Xt, list(iterations))
        out[method] = [float(np.mean((raw[:, k] > 0) != (yt == 1)))
                       for k in range(len(iterations))]
    return out


class SLAObjective:
    """SLA ``1 - sigmoid((2y-1) z / s)`` for CatBoost, which wants the derivatives of the
    quantity it maximises: ``-dL/dz`` and ``-d2L/dz2``."""

    def __init__(self, scale: float = 0.1):
        self.scale = scale

    def calc_ders_range(self, approxes, targets, weights):
        z = np.asarray(approxes, dtype=np.float64)
        t = 2.0 * np.asarray(targets, dtype=np.float64) - 1.0
        q = 1.0 / (1.0 + np.exp(-t * z / self.scale))
        g = -(t / self.scale) * q * (1 - q)
        h = -(q * (1 - q) * (1 - 2 * q)) / self.scale ** 2
        if weights is not None:
            w = np.asarray(weights, dtype=np.float64)
            g, h = g * w, h * w
        return list(zip(-g, -h))


def run_catboost(fold: int, seed: int, iterations: Sequence[int], l2: float) -> Dict[str, list]:
    """The four methods in CatBoost, evaluated at every count with ``staged_predict``."""
    import catboost

    X, y, Xt, yt = make_fold(fold, seed)
    out = {}
    for method in METHODS:
        params = dict(iterations=max(iterations), depth=1, learning_rate=0.1, border_count=5,
                      l2_leaf_reg=l2, leaf_estimation_method="Gradient",
                      leaf_estimation_iterations=1, random_strength=0, bootstrap_type="No",
                      boost_from_average=False, random_seed=seed + fold, thread_count=1,
                      verbose=0, allow_writing_files=False)
        if method.startswith("Logloss"):
            params.update(loss_function="Logloss")
        else:
            params.update(loss_function=SLAObjective(0.1), eval_metric="Accuracy")
        if method == "SLA + SGB":
            params.update(bootstrap_type="Bernoulli", subsample=0.5)
        if method == "SLA + SGLB":
            params.update(langevin=True, diffusion_temperature=1e3, model_shrink_rate=1e-3)
        model = catboost.CatBoost(params).fit(X, y)
        wanted = set(iterations)
        errs = {}
        for i, raw in enumerate(model.staged_predict(Xt, prediction_type="RawFormulaVal"), 1):
            if i in wanted:
                errs[i] = float(np.mean((np.asarray(raw) > 0) != (yt == 1)))
        out[method] = [errs[i] for i in iterations]
    return out


def paired_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided paired t-test p-value."""
    from scipy import stats
    if np.all(a == b):
        return 1.0
    return float(stats.ttest_rel(a, b).pvalue)


def table(results: List[Dict[str, list]], iterations: Sequence[int], title: str) -> str:
    lines = [f"### {title}", "",
             "| approach | paper | " + " | ".join(f"{n} iter" for n in iterations) + " |",
             "|---|---|" + "---|" * len(iterations)]
    err = {m: np.array([r[m] for r in results]) for m in METHODS}
    for m in METHODS:
        cells = []
        for k in range(len(iterations)):
            mean = err[m][:, k].mean()
            se = err[m][:, k].std(ddof=1) / math.sqrt(len(results))
            if m == "SLA + SGLB":
                cells.append(f"{mean:.4f} ± {se:.4f}")
            else:
                p = paired_p(err[m][:, k], err["SLA + SGLB"][:, k])
                cells.append(f"{mean:.4f} ± {se:.4f} (p={p:.1e})")
        lines.append(f"| {m} | {PAPER[m]:.3f} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Mean test 0-1 loss over {len(results)} folds ± its standard error; p: paired "
                 "t-test against SLA + SGLB at the same iteration count.")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folds", type=int, default=100)
    ap.add_argument("--iterations", default="100,300,1000,3000",
                    help="comma-separated iteration counts to report")
    ap.add_argument("--l2", type=float, default=3.0,
                    help="l2 regularisation (default 3, CatBoost's default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--catboost", action="store_true", help="also run CatBoost")
    ap.add_argument("--json", help="write the raw per-fold errors here")
    args = ap.parse_args(argv)
    iterations = sorted(int(x) for x in args.iterations.split(","))
    runs = {"boostlib": run_boostlib}
    if args.catboost:
        try:
            import catboost  # noqa: F401
            runs["CatBoost"] = run_catboost
        except ImportError:
            print("catboost is not installed: skipping it", file=sys.stderr)
    report, raw = [], {}
    for name, fn in runs.items():
        t0 = time.perf_counter()
        with ProcessPoolExecutor(args.processes) as pool:
            results = list(pool.map(fn, range(args.folds), [args.seed] * args.folds,
                                    [iterations] * args.folds, [args.l2] * args.folds))
        secs = time.perf_counter() - t0
        print(f"{name}: {args.folds} folds in {secs:.0f} s", file=sys.stderr)
        raw[name] = results
        report.append(table(results, iterations, f"{name} (l2={args.l2:g}, "
                                                 f"{args.folds} folds, {secs:.0f} s)"))
    print("\n\n".join(report))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"iterations": iterations, "l2": args.l2, "seed": args.seed,
                       "results": raw}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
