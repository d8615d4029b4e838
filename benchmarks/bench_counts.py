"""Poisson test deviance on a real count data set: boostlib before and after the log-link
step cap (``max_delta_step``), against XGBoost ``count:poisson``, LightGBM ``poisson``,
CatBoost ``Poisson`` and scikit-learn's HGB ``poisson``, each at its defaults, and at equal
settings (100 trees, learning rate 0.1, depth 6). Accuracy only (no timings).

The data set is the UCI Bike Sharing ``hour.csv`` (17,379 hourly rows; the 12 columns
season .. windspeed as features, dropping the index and the date), read from the path given
on the command line: the target ``cnt`` (no zeros, mean 189) or ``casual`` (9% zeros,
mean 36). Three random 80/20 splits (seeds 0, 1, 2); each model runs in its own process
(the peers' OpenMP runtimes do not all share one process safely).

    python benchmarks/bench_counts.py /path/to/hour.csv --target casual
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

# this checkout's boostlib, not another installed copy
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

BOOST = {
    "boostlib cap=0 (before)": dict(max_delta_step=0.0),
    "boostlib default (cap=1.5)": dict(),
    "boostlib cap=0.3": dict(max_delta_step=0.3),
    "boostlib cap=0.7": dict(max_delta_step=0.7),
    "boostlib cap=1.5": dict(max_delta_step=1.5),
    "boostlib depthwise (cap=1.5)": dict(grow_policy="depthwise"),
    "boostlib depthwise cap=0.7": dict(grow_policy="depthwise", max_delta_step=0.7),
    "boostlib depthwise cap=0": dict(grow_policy="depthwise", max_delta_step=0.0),
}
PEERS = ["xgboost", "lightgbm", "catboost", "sklearn-hgb",
         "xgboost equal", "lightgbm equal"]


def load(path: str, target: str):
    import pandas as pd
    df = pd.read_csv(path)
    X = df.iloc[:, 2:14].to_numpy(np.float64)      # season .. windspeed
    y = df.iloc[:, 16 if target == "cnt" else 14].to_numpy(np.float64)
    return X, y


def make(name: str):
    if name in BOOST:
        import boostlib
        return boostlib.BoostRegressor(early_stopping=False,
                                       loss="poisson", random_state=0, n_jobs=2,
                                       **BOOST[name])
    if name.startswith("xgboost"):
        import xgboost
        extra = dict(learning_rate=0.1, max_depth=6) if "equal" in name else {}
        return xgboost.XGBRegressor(objective="count:poisson", n_jobs=2, **extra)
    if name.startswith("lightgbm"):
        import lightgbm
        extra = dict(num_leaves=64, max_depth=6) if "equal" in name else {}
        return lightgbm.LGBMRegressor(objective="poisson", verbose=-1, n_jobs=2, **extra)
    if name == "catboost":
        import catboost
        return catboost.CatBoostRegressor(loss_function="Poisson", verbose=0,
                                          thread_count=2)
    if name == "sklearn-hgb":
        from sklearn.ensemble import HistGradientBoostingRegressor
        return HistGradientBoostingRegressor(loss="poisson")
    raise ValueError(name)


def one(path: str, target: str, name: str) -> list:
    from sklearn.metrics import mean_poisson_deviance
    from sklearn.model_selection import train_test_split
    X, y = load(path, target)
    out = []
    for seed in range(3):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=seed)
        model = make(name).fit(Xtr, ytr)
        out.append(float(mean_poisson_deviance(yte, np.maximum(model.predict(Xte),
                                                                1e-12))))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="the Bike Sharing hour.csv")
    ap.add_argument("--target", choices=["cnt", "casual"], default="casual")
    ap.add_argument("--only", help=argparse.SUPPRESS)
    ap.add_argument("--models", help="comma-separated subset of the rows")
    a = ap.parse_args()
    if a.only:
        print(json.dumps(one(a.path, a.target, a.only)))
        return
    names = list(BOOST) + PEERS
    if a.models:
        names = [n for n in names if n in a.models.split(",")]
    print(f"target {a.target}: mean Poisson deviance on 20% test rows, 3 splits")
    for name in names:
        run = subprocess.run([sys.executable, __file__, a.path, "--target", a.target,
                              "--only", name], capture_output=True, text=True)
        if run.returncode != 0:
            last = (run.stderr.strip().splitlines() or ["?"])[-1]
            print(f"{name:28s} skipped ({last})")
            continue
        v = json.loads(run.stdout.strip().splitlines()[-1])
        print(f"{name:28s} {np.mean(v):8.4f}   " + " ".join(f"{x:.4f}" for x in v),
              flush=True)


if __name__ == "__main__":
    main()
