#!/usr/bin/env python
"""Is a loss from a plugin distribution as fast as a built-in one? Fit time, same trees.

Trains ``BoostRegressor`` with the built-in ``mse`` loss (compiled Cython kernel) and with
the Huber loss of the example plugin ``plugins/boostlib-huber`` (vectorised numpy, registered
as ``boostlib_huber``). With a huge
``delta`` every residual is inside the quadratic zone, so the Huber model has exactly the
gradients, hessians and bias of the MSE model, hence the same trees: only the cost of the
plugin's Python/numpy code differs. The runs alternate (mse, huber, huber, mse, ...) so that
drift in machine load hits both equally; the script prints the median and best fit times (wall
clock, and CPU time of this process, which other processes disturb much less), their ratios,
the cost of one ``gradient_hessian`` call of each loss, and the largest prediction difference
(0 up to rounding when the trees are identical).

    python benchmarks/bench_plugin_loss.py                       # 200,000 x 28, 100 trees
    python benchmarks/bench_plugin_loss.py --n-rows 20000 --repeats 1   # smoke run

The plugin is used through its entry point when installed (``pip install
./plugins/boostlib-huber``), otherwise registered in-process from the source tree.
``--samplers`` also times the ``bayesian_bootstrap`` sampler plugin against no sampler (not a
like-for-like comparison: the sampler adds work by design).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _ensure(kind: str, name: str, dist_dir: str, module: str) -> str:
    """Make ``name`` available; return where it comes from."""
    from boostlib import registry

    entry = next((e for e in registry.entries(kind) if e.name == name), None)
    if entry is not None:
        return f"{entry.distribution} {entry.version} (entry point)"
    sys.path.insert(0, str(ROOT / "plugins" / dist_dir / "src"))
    registry.register_plugin(__import__(module), module)
    return f"{module} from plugins/{dist_dir}/src (registered in-process)"


def make_data(n_rows: int, n_features: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A smooth nonlinear regression target on correlated Gaussian features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    X[:, 1::2] += 0.5 * X[:, 0::2][:, : X[:, 1::2].shape[1]]
    y = (np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] - np.abs(X[:, 3]) + 0.3 * X[:, 4] ** 2
         + 0.2 * X[:, 5:].sum(axis=1) + rng.normal(0, 0.5, n_rows))
    return X, y


def time_call(fn: Callable[[], Any], repeats: int) -> float:
    """Best wall time of ``repeats`` calls, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-rows", type=int, default=200_000)
    parser.add_argument("--n-features", type=int, default=28)
    parser.add_argument("--n-estimators", type=int, default=100)
    parser.add_argument("--max-depth", type=int, default=6)
    parser.add_argument("--grow-policy", default="symmetric")
    parser.add_argument("--repeats", type=int, default=3, help="fits per configuration")
    parser.add_argument("--threads", type=int, default=None, help="n_jobs (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samplers", action="store_true",
                        help="also time the bayesian_bootstrap sampler plugin")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)

    import boostlib
    from boostlib import BoostRegressor

    huber_src = _ensure("loss", "boostlib_huber", "boostlib-huber", "boostlib_huber")
    X, y = make_data(args.n_rows, args.n_features, args.seed)
    common = {"n_estimators": args.n_estimators, "max_depth": args.max_depth,
              "grow_policy": args.grow_policy, "learning_rate": 0.1, "random_state": 0,
              "n_jobs": args.threads}
    configs: dict[str, dict[str, Any]] = {
        "mse (built-in)": {"loss": "mse"},
        "huber delta=1e12 (plugin)": {"loss": "boostlib_huber",
                                      "loss_params": {"delta": 1e12}},
    }
    if args.samplers:
        bb_src = _ensure("sampler", "bayesian_bootstrap", "boostlib-bayesian-bootstrap",
                         "boostlib_bayesian_bootstrap")
        configs["mse + bayesian_bootstrap (plugin)"] = {"loss": "mse",
                                                        "sampler": "bayesian_bootstrap"}
    print(f"boostlib {boostlib.__version__}, numpy {np.__version__}, python "
          f"{sys.version.split()[0]}, {os.cpu_count()} CPUs, n_jobs={args.threads}",
          file=sys.stderr)
    print(f"huber from {huber_src}" + (f"; bayesian_bootstrap from {bb_src}"
                                       if args.samplers else ""), file=sys.stderr)
    print(f"data: {args.n_rows} x {args.n_features}, {args.n_estimators} trees, depth "
          f"{args.max_depth}, {args.grow_policy}; load average before "
          f"{os.getloadavg()[0]:.2f}", file=sys.stderr)

    # Warm-up (imports, first-touch of the kernels), not timed.
    for cfg in configs.values():
        BoostRegressor(early_stopping=False,
                       **{**common, "n_estimators": 2}, **cfg).fit(X[:5000], y[:5000])

    times: dict[str, list[float]] = {name: [] for name in configs}
    cpu: dict[str, list[float]] = {name: [] for name in configs}
    preds: dict[str, np.ndarray] = {}
    names = list(configs)
    for rep in range(args.repeats):
        order = names if rep % 2 == 0 else names[::-1]
        for name in order:
            model = BoostRegressor(early_stopping=False, **common, **configs[name])
            t0, c0 = time.perf_counter(), time.process_time()
            model.fit(X, y)
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            preds[name] = model.predict(X[:20000])
            print(f"  run {rep + 1}: {name:<34} {times[name][-1]:7.2f} s wall "
                  f"{cpu[name][-1]:7.2f} s CPU", file=sys.stderr, flush=True)

    # One gradient_hessian call of each loss (the only code that differs between the two).
    raw = y + np.random.default_rng(1).normal(size=y.shape)
    g, h = np.empty_like(y), np.empty_like(y)
    per_call = {}
    for label, loss in (("mse", boostlib.create("loss", "mse")),
                        ("huber", boostlib.create("loss", "boostlib_huber", {"delta": 1e12}))):
        per_call[label] = time_call(lambda loss=loss: loss.gradient_hessian(
            y, raw, g, h, args.threads or os.cpu_count() or 1), 30)

    base, plug = names[0], names[1]
    med = {n: statistics.median(t) for n, t in times.items()}
    best = {n: min(t) for n, t in times.items()}
    cpu_med = {n: statistics.median(t) for n, t in cpu.items()}
    result = {
        "n_rows": args.n_rows, "n_features": args.n_features,
        "n_estimators": args.n_estimators, "max_depth": args.max_depth,
        "grow_policy": args.grow_policy, "threads": args.threads, "repeats": args.repeats,
        "fit_seconds": times, "fit_cpu_seconds": cpu, "median": med, "best": best,
        "cpu_median": cpu_med,
        "ratio_median": med[plug] / med[base], "ratio_best": best[plug] / best[base],
        "ratio_cpu_median": cpu_med[plug] / cpu_med[base],
        "gradient_hessian_ms": {k: v * 1e3 for k, v in per_call.items()},
        "max_abs_prediction_difference": float(np.max(np.abs(preds[plug] - preds[base]))),
        "load_average_after": os.getloadavg()[0],
    }
    print("| model | median fit s | best fit s | median CPU s | ratio to mse (median wall, "
          "median CPU) |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        print(f"| {name} | {med[name]:.2f} | {best[name]:.2f} | {cpu_med[name]:.2f} | "
              f"{med[name] / med[base]:.3f}, {cpu_med[name] / cpu_med[base]:.3f} |")
    print()
    print(f"huber/mse fit-time ratio: {result['ratio_median']:.3f} (median wall of "
          f"{args.repeats}), {result['ratio_best']:.3f} (best wall), "
          f"{result['ratio_cpu_median']:.3f} (median CPU)")
    print(f"gradient_hessian per call on {args.n_rows} rows: mse "
          f"{result['gradient_hessian_ms']['mse']:.2f} ms, huber "
          f"{result['gradient_hessian_ms']['huber']:.2f} ms "
          f"(x {args.n_estimators} iterations = "
          f"{(per_call['huber'] - per_call['mse']) * args.n_estimators:.2f} s difference)")
    print(f"largest |prediction difference| huber(delta=1e12) vs mse: "
          f"{result['max_abs_prediction_difference']:.3g}")
    print(f"load average after: {result['load_average_after']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
