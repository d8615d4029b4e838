#!/usr/bin/env python
"""The log-link, quantile and Huber objectives against LightGBM's: test loss at equal settings.

This is a benchmark, not a test. For each objective (``poisson``, ``gamma``, ``tweedie`` with
power 1.5, ``quantile`` with alpha 0.9, ``l1``, ``huber`` with alpha 0.9) it fits boostlib
(both tree kinds) and LightGBM's objective of the same name on the same split, 200 trees of
depth 6 (LightGBM: 64 leaves), learning rate 0.1, L2 1.0 and at least 20 rows per leaf in
both, and prints the test loss (the deviance of the log-link objectives, the pinball loss of
``quantile``, the mean absolute error of ``l1``, the mean Huber loss of ``huber``) and
boostlib's ratio to LightGBM's. Data: generated counts and positive amounts with a
log-linear mean, and a continuous target with heteroscedastic heavy-tailed noise for
``quantile``, ``l1`` and ``huber`` (always), and California housing from
``../shared/datasets`` when present (gamma, tweedie, quantile, l1 and huber on the house
value, poisson on the households count).

    python benchmarks/bench_objectives.py
    python benchmarks/bench_objectives.py --objectives quantile l1
    python benchmarks/bench_objectives.py --objectives huber
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, Tuple

import numpy as np

from boostlib import BoostRegressor, create

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                      "datasets", "california_housing", "cal_housing.data")
PARAMS = {"poisson": {}, "gamma": {}, "tweedie": {"variance_power": 1.5},
          "quantile": {"alpha": 0.9}, "l1": {}, "huber": {"alpha": 0.9}}
#: the test metric of each objective: its name and parameters
METRICS = {"poisson": ("poisson", None), "gamma": ("gamma", None),
           "tweedie": ("tweedie", {"variance_power": 1.5}),
           "quantile": ("quantile", {"alpha": 0.9}), "l1": ("mae", None),
           "huber": ("huber", {"alpha": 0.9})}
#: LightGBM's parameters of the objective
PEER_PARAMS = {"tweedie": {"tweedie_variance_power": 1.5}, "quantile": {"alpha": 0.9},
               "huber": {"alpha": 0.9}}
OBJECTIVES = tuple(PARAMS)


def generated(seed: int = 0, n: int = 20_000) -> Dict[str, Tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    mu = np.exp(0.5 * X[:, 0] - 0.3 * X[:, 1] + 0.4 * np.sin(2 * X[:, 2]))
    sets = {"poisson": (X, rng.poisson(mu).astype(float)),
            "gamma": (X, rng.gamma(2.0, mu / 2.0)),
            "tweedie": (X, np.where(rng.random(n) < 0.4, 0.0, rng.gamma(2.0, mu / 2.0)))}
    # a mean structure, a noise scale growing with |x_4| and Student-t (3) noise
    y = (X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3]
         + (0.5 + np.abs(X[:, 4])) * rng.standard_t(3.0, n))
    sets.update(quantile=(X, y), l1=(X, y), huber=(X, y))
    return sets


def california() -> Dict[str, Tuple[np.ndarray, np.ndarray]]:
    if not os.path.exists(SHARED):
        return {}
    a = np.loadtxt(SHARED, delimiter=",")
    value = a[:, 8] / 1e5
    without_households = np.delete(a[:, :8], 6, axis=1)
    return {"gamma": (a[:, :8], value), "tweedie": (a[:, :8], value),
            "poisson": (without_households, a[:, 6]), "quantile": (a[:, :8], value),
            "l1": (a[:, :8], value), "huber": (a[:, :8], value)}


def run(name: str, X: np.ndarray, y: np.ndarray, seed: int) -> List[str]:
    import lightgbm as lgb

    rng = np.random.default_rng(seed)
    test = rng.random(y.size) < 0.25
    deviance = create("metric", *METRICS[name])
    common = dict(n_estimators=200, max_depth=6, learning_rate=0.1)
    out = {}
    for policy in ("symmetric", "depthwise"):
        model = BoostRegressor(early_stopping=False,
                               loss=name, loss_params=PARAMS[name], grow_policy=policy,
                               l2_regularization=1.0, min_samples_leaf=20, random_state=0,
                               **common).fit(X[~test], y[~test])
        out[policy] = deviance(y[test], model.predict(X[test]))
    peer = lgb.LGBMRegressor(objective=name, num_leaves=64, reg_lambda=1.0,
                             min_child_samples=20, verbose=-1, random_state=0,
                             **PEER_PARAMS.get(name, {}), **common).fit(X[~test], y[~test])
    out["lightgbm"] = deviance(y[test], peer.predict(X[test]))
    return [f"{out['symmetric']:.5f} ({out['symmetric'] / out['lightgbm']:.3f})",
            f"{out['depthwise']:.5f} ({out['depthwise'] / out['lightgbm']:.3f})",
            f"{out['lightgbm']:.5f}"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--objectives", nargs="+", choices=OBJECTIVES, default=list(OBJECTIVES),
                    help="the objectives to run (default: all)")
    args = ap.parse_args(argv)
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        print("needs lightgbm: pip install lightgbm", file=sys.stderr)
        return 1
    print("## Test loss (deviance; quantile: pinball loss at alpha 0.9; l1: mean absolute "
          "error; huber: mean Huber loss at alpha 0.9): boostlib symmetric / depthwise "
          "(ratio to LightGBM) and LightGBM\n")
    print("| data | objective | symmetric | depthwise | LightGBM |\n|---|---|---:|---:|---:|")
    for data, sets in (("generated", generated(args.seed)), ("california", california())):
        for name, (X, y) in sets.items():
            if name not in args.objectives:
                continue
            print(f"| {data} | {name} | " + " | ".join(run(name, X, y, args.seed)) + " |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
