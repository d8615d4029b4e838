#!/usr/bin/env python
"""Multi-target regression benchmark: boostlib (``multi_mse``, both ``multi_strategy``
values) against CatBoost ``MultiRMSE`` and XGBoost's ``multi_strategy="multi_output_tree"``.

This is a benchmark, not a test. Every model fits the same data at equal settings, in one
process, and the script prints Markdown tables: per model the test MSE (averaged over the
targets), its ratio to the best peer's, and the median fit time. Run it from the repository
root::

    python benchmarks/bench_multi_target.py                     # 100,000 rows, 5 targets
    python benchmarks/bench_multi_target.py --repeats 1        # accuracy, 5 seeds
    python benchmarks/bench_multi_target.py --n-samples 5000 --repeats 1        # smoke run

Data: ``X`` ~ N(0, 1), 20 features; five targets that share some structure and differ in
the rest (sums, products, a sine, a step, a noisy linear term), each plus N(0, 0.5^2)
noise; split 80/20 (same seed).

Seeds: ``--seeds N`` draws the data ``N`` times, with seeds ``--seed``, ``--seed + 1``, ...,
and fits every model on each draw (the models' own settings never change with the seed:
they have no randomness here). The first table gives per model the mean test MSE over the
seeds and the mean, standard deviation, minimum and maximum of the per-seed ratios
``MSE / best peer's MSE on that seed``; a second table gives every seed's MSEs. The
default is 5 seeds: the models differ by tenths of a percent, and one model's ratio to a
peer moves by as much from one data seed to the next (boostlib's depthwise vector-leaf
trees against XGBoost's: 1.0075, 1.0011, 1.0000, 1.0074 on seeds 0-3), so one seed cannot
order them; the mean of five such ratios has about 0.45 times their spread as its standard
error, at five times the cost of one seed. ``--seeds 1`` fits one draw.

Same bins: ``--grid G`` rounds every feature to ``G`` evenly spaced values over its
training range (test values clipped to it). With ``G`` at most every library's bin count,
each bin holds one value, so every library can choose among the same partitions and the
models differ only in how they grow trees, not in where their bin borders fall. Model
``catboost-l2`` (run only when named in ``--models``; not a peer in the ratios) is CatBoost
with ``score_function="L2"``, the Newton gain boostlib's trees use, instead of its default
``"Cosine"``::

    python benchmarks/bench_multi_target.py --seeds 1 --repeats 1 --grid 200 \
        --models boostlib-symmetric-vector,catboost,catboost-l2,boostlib-depthwise-vector,xgboost-vector

Settings: ``--n-estimators`` rounds (default 300), depth 6 (symmetric trees for boostlib's
``symmetric`` models and CatBoost, depth-limited trees for boostlib's ``depthwise`` models
and XGBoost), learning rate 0.1, L2 1, 255 bins, no sampling, ``--threads`` threads.
CatBoost: ``MultiRMSE``, ``SymmetricTree``, no bootstrap, ``random_strength=0``; XGBoost:
``hist``, ``multi_strategy="multi_output_tree"``. Fit time is ``time.perf_counter()``
around ``fit``, the median of ``--repeats`` round-robin repeats on every seed; say whether
the host was quiet when you quote it.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

MODELS = ("boostlib-symmetric-vector", "boostlib-symmetric", "boostlib-depthwise-vector",
          "boostlib-depthwise", "catboost", "xgboost-vector")
# Not run by default: CatBoost with boostlib's split score (the Newton gain, CatBoost's
# score_function="L2"; its default is "Cosine"). Not a peer in the ratios.
EXTRA_MODELS = ("catboost-l2",)
PEERS = {"catboost": "catboost", "xgboost-vector": "xgboost"}
NEEDS = dict(PEERS, **{"catboost-l2": "catboost"})


def make_data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 20))
    Y = np.column_stack([
        X[:, 0] + X[:, 1] * X[:, 2],
        X[:, 0] - 2.0 * np.abs(X[:, 3]),
        np.sin(2.0 * X[:, 1]) + 0.5 * X[:, 4],
        (X[:, 5] > 0.3).astype(float) * (1.0 + X[:, 0]),
        0.3 * X[:, 6:12].sum(axis=1) + X[:, 2] * X[:, 7],
    ]) + 0.5 * rng.normal(size=(n, 5))
    cut = int(0.8 * n)
    return X[:cut], Y[:cut], X[cut:], Y[cut:]


def on_grid(X: np.ndarray, Xt: np.ndarray, n_values: int):
    """``X`` and ``Xt`` with every feature rounded to ``n_values`` evenly spaced values over
    its training range (test values clipped to it): with ``n_values`` at most every
    library's bin count, each bin holds one value, so all libraries split the same
    partitions and differ only in how they grow trees, not in where their borders fall."""
    lo, step = X.min(axis=0), (X.max(axis=0) - X.min(axis=0)) / (n_values - 1)

    def snap(A: np.ndarray) -> np.ndarray:
        return lo + np.clip(np.round((A - lo) / step), 0, n_values - 1) * step
    return snap(X), snap(Xt)


def build(name: str, a: argparse.Namespace) -> Any:
    if name.startswith("boostlib-"):
        import boostlib
        return boostlib.BoostRegressor(early_stopping=False,
            n_estimators=a.n_estimators, learning_rate=0.1, max_depth=6,
            grow_policy=name.split("-")[1], l2_regularization=1.0, max_bins=255,
            min_samples_leaf=1, min_child_weight=1e-3, n_jobs=a.threads, random_state=0,
            multi_strategy="multi_output_tree" if name.endswith("-vector")
            else "one_output_per_tree")
    if name in ("catboost", "catboost-l2"):
        import catboost
        return catboost.CatBoostRegressor(
            score_function="L2" if name == "catboost-l2" else "Cosine",
            loss_function="MultiRMSE", iterations=a.n_estimators, learning_rate=0.1, depth=6,
            grow_policy="SymmetricTree", border_count=254, bootstrap_type="No",
            random_strength=0, l2_leaf_reg=1.0, boosting_type="Plain",
            thread_count=a.threads, verbose=0, allow_writing_files=False)
    if name == "xgboost-vector":
        import xgboost
        return xgboost.XGBRegressor(
            tree_method="hist", multi_strategy="multi_output_tree",
            n_estimators=a.n_estimators, learning_rate=0.1, max_depth=6, max_bin=256,
            reg_lambda=1.0, min_child_weight=1e-3, n_jobs=a.threads)
    raise ValueError(f"unknown model {name!r}")


def summarise(per_seed: Sequence[float]) -> Tuple[float, float, float, float]:
    """Mean, sample standard deviation (0 for one value), minimum and maximum."""
    mean = statistics.fmean(per_seed)
    sd = statistics.stdev(per_seed) if len(per_seed) > 1 else 0.0
    return mean, sd, min(per_seed), max(per_seed)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-samples", type=int, default=100_000)
    ap.add_argument("--n-estimators", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0, help="the first data seed")
    ap.add_argument("--seeds", type=int, default=5,
                    help="data seeds --seed, --seed + 1, ... (default 5)")
    ap.add_argument("--models", default=",".join(MODELS),
                    help=f"comma-separated, of {list(MODELS + EXTRA_MODELS)}")
    ap.add_argument("--grid", type=int, default=0,
                    help="round every feature to this many values (2-255; 0: no rounding)")
    a = ap.parse_args(argv)
    names = [m for m in a.models.split(",") if m]
    unknown = sorted(set(names) - set(MODELS + EXTRA_MODELS))
    if unknown:
        ap.error(f"unknown model(s) {unknown}; choose from {list(MODELS + EXTRA_MODELS)}")
    if a.grid != 0 and not 2 <= a.grid <= 255:
        ap.error(f"--grid must be 0 or from 2 to 255; got {a.grid}")
    if a.seeds < 1:
        ap.error(f"--seeds must be at least 1; got {a.seeds}")
    if a.repeats < 1:
        ap.error(f"--repeats must be at least 1; got {a.repeats}")
    names = [m for m in names if m not in NEEDS or importlib.util.find_spec(NEEDS[m])]
    seeds = list(range(a.seed, a.seed + a.seeds))
    fits: Dict[str, List[float]] = {m: [] for m in names}
    mse: Dict[str, Dict[int, float]] = {m: {} for m in names}
    for seed in seeds:
        X, Y, Xt, Yt = make_data(a.n_samples, seed)
        if a.grid:
            X, Xt = on_grid(X, Xt, a.grid)
        for rep in range(a.repeats):
            for name in names:
                model = build(name, a)
                t0 = time.perf_counter()
                model.fit(X, Y)
                fits[name].append(time.perf_counter() - t0)
                pred = np.asarray(model.predict(Xt)).reshape(Yt.shape)
                err = float(np.mean((pred - Yt) ** 2))
                mse[name].setdefault(seed, err)
                print(f"[seed {seed}, {rep + 1}/{a.repeats}] {name}: fit "
                      f"{fits[name][-1]:.2f} s, test MSE {err:.5f}", file=sys.stderr,
                      flush=True)
    peers = [m for m in names if m in PEERS]
    best = {s: min(mse[m][s] for m in peers) for s in seeds} if peers else None
    print(f"## Multi-target regression: {int(0.8 * a.n_samples):,} train / "
          f"{a.n_samples - int(0.8 * a.n_samples):,} test rows x 20 features, 5 targets"
          + (f", every feature rounded to {a.grid} values" if a.grid else "") + "\n")
    print(f"Command: `python {' '.join(sys.argv)}`; {a.n_estimators} rounds, depth 6, "
          f"learning rate 0.1, L2 1, {a.threads} threads; data seeds {seeds}; fit time the "
          f"median of {a.repeats} fit(s) on each seed.\n")
    print("| model | fit s (median) | mean test MSE | MSE / best peer's: mean | sd | min | "
          "max |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in names:
        mean_mse = statistics.fmean(mse[name][s] for s in seeds)
        cells = ["", "", "", ""]
        if best is not None:
            r_mean, r_sd, r_min, r_max = summarise([mse[name][s] / best[s] for s in seeds])
            cells = [f"{r_mean:.4f}", f"{r_sd:.4f}", f"{r_min:.4f}", f"{r_max:.4f}"]
        print(f"| {name} | {statistics.median(fits[name]):.2f} | {mean_mse:.5f} | "
              + " | ".join(cells) + " |")
    print("\nTest MSE by data seed:\n")
    print("| model | " + " | ".join(f"seed {s}" for s in seeds) + " |")
    print("|---|" + "---:|" * len(seeds))
    for name in names:
        print(f"| {name} | " + " | ".join(f"{mse[name][s]:.5f}" for s in seeds) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
