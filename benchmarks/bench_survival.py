"""C-index of boostlib's ``cox`` and ``aft`` against XGBoost's ``survival:cox`` and
``survival:aft`` at equal settings (see docs/survival.md).

Data:

* ``gbsg``: the German Breast Cancer Study Group 2 data (686 rows, 8 features,
  recurrence-free survival ``rfst`` in days, ``cens`` 1 for a recurrence), read from a CSV
  with the columns ``htreat, age, menostat, tumsize, tumgrad, posnodal, prm, esm, rfst,
  cens`` (the copy used was ``gbsg.csv`` of the GitHub repository ``LuyuLee/MY-SCT``,
  commit 57503503c2441336a181101ceb4f6e3feae7be68, sha256
  6b19eac7b64a787cc035b9e8105ef34ea6d73a66b0bfa73dc970c129d2c51f85; not bundled: its
  licence is not stated);
* ``synthetic``: 20,000 rows of 10 features, Cox times with log hazard
  ``x0 - x1 + 0.5 sin(3 x2)`` (exponential baseline), 30% censored at a uniform fraction
  of the time.

Protocol: 5-fold cross-validation repeated with 3 shuffles (seeds 0, 1, 2); both libraries
fit the same folds with depth-wise depth-3 trees, learning rate 0.05, 300 (gbsg: 100)
trees, L2 1, min child hessian 1, no minimum row count, 256 bins, one thread; the C-index
of every test fold is computed by ``boostlib.builtin.survival.concordance_index`` on both
libraries' raw scores, and the paired difference is given with its standard error over the
15 folds. For AFT XGBoost starts from boostlib's constant (``base_margin``), so both start
equal.

Usage::

    python benchmarks/bench_survival.py --gbsg /path/to/gbsg.csv
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from boostlib import BoostRegressor
from boostlib.builtin.survival import AFTLoss, concordance_index

#: boostlib's tree shape (``--grow-policy``): depth-wise, as XGBoost's, unless told otherwise
GROW_POLICY = ["depthwise"]


def load_gbsg(path: str):
    import pandas as pd
    frame = pd.read_csv(path)
    X = frame[["htreat", "age", "menostat", "tumsize", "tumgrad", "posnodal", "prm",
               "esm"]].to_numpy(np.float64)
    return X, frame["rfst"].to_numpy(np.float64), frame["cens"].to_numpy() == 1


def synthetic(n: int = 20000, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 10))
    log_hazard = X[:, 0] - X[:, 1] + 0.5 * np.sin(3 * X[:, 2])
    t = rng.exponential(1.0, n) / np.exp(log_hazard)
    censored = rng.random(n) < 0.3
    t = np.where(censored, t * rng.uniform(0.05, 1.0, n), t)
    return X, t, ~censored


def folds(n: int, seed: int, k: int = 5):
    order = np.random.default_rng(seed).permutation(n)
    for part in np.array_split(order, k):
        test = np.zeros(n, dtype=bool)
        test[part] = True
        yield ~test, test


def cox_pair(X, time, event, tr, te, trees):
    import xgboost as xgb
    y = np.where(event, time, -time)
    ours = BoostRegressor(early_stopping=False,
                          loss="cox", n_estimators=trees, learning_rate=0.05, max_depth=3,
                          grow_policy=GROW_POLICY[0], l2_regularization=1.0,
                          min_child_weight=1.0, min_samples_leaf=1,
                          max_bins=255, random_state=0, n_jobs=1).fit(X[tr], y[tr])
    d = xgb.DMatrix(X[tr], label=y[tr])
    theirs = xgb.train({"objective": "survival:cox", "eta": 0.05, "max_depth": 3,
                        "lambda": 1.0, "min_child_weight": 1.0, "tree_method": "hist",
                        "max_bin": 256, "nthread": 1}, d, num_boost_round=trees)
    raw_ours = ours.model_.predict(X[te], raw=True)
    raw_theirs = theirs.predict(xgb.DMatrix(X[te]), output_margin=True)
    return (concordance_index(time[te], event[te], raw_ours),
            concordance_index(time[te], event[te], raw_theirs))


def aft_pair(X, time, event, tr, te, trees, dist, sigma):
    import xgboost as xgb
    lower = time
    upper = np.where(event, time, np.inf)
    y = np.column_stack([lower, upper])
    ours = BoostRegressor(early_stopping=False, loss="aft", loss_params={"aft_distribution": dist,
                                                   "aft_sigma": sigma},
                          n_estimators=trees, learning_rate=0.05, max_depth=3,
                          grow_policy=GROW_POLICY[0], l2_regularization=1.0,
                          min_child_weight=1.0, min_samples_leaf=1,
                          max_bins=255, random_state=0, n_jobs=1).fit(X[tr], y[tr])
    bias = AFTLoss(dist, sigma).init_raw(y[tr], None)
    d = xgb.DMatrix(X[tr], base_margin=np.full(tr.sum(), bias))
    d.set_float_info("label_lower_bound", lower[tr])
    d.set_float_info("label_upper_bound", upper[tr])
    theirs = xgb.train({"objective": "survival:aft", "aft_loss_distribution": dist,
                        "aft_loss_distribution_scale": sigma, "eta": 0.05, "max_depth": 3,
                        "lambda": 1.0, "min_child_weight": 1.0, "tree_method": "hist",
                        "max_bin": 256, "nthread": 1}, d, num_boost_round=trees)
    raw_ours = ours.model_.predict(X[te], raw=True)
    raw_theirs = theirs.predict(xgb.DMatrix(X[te], base_margin=np.full(te.sum(), bias)),
                                output_margin=True)
    # a log time: the risk is its negative
    return (concordance_index(time[te], event[te], -raw_ours),
            concordance_index(time[te], event[te], -raw_theirs))


def run(name, X, time, event, trees):
    rows = []
    for model in ("cox", "aft normal 1.0", "aft logistic 1.0", "aft extreme 1.0"):
        ours, theirs = [], []
        for seed in (0, 1, 2):
            for tr, te in folds(len(time), seed):
                if model == "cox":
                    a, b = cox_pair(X, time, event, tr, te, trees)
                else:
                    _, dist, sigma = model.split()
                    a, b = aft_pair(X, time, event, tr, te, trees, dist, float(sigma))
                ours.append(a)
                theirs.append(b)
        o, t = float(np.mean(ours)), float(np.mean(theirs))
        diff = np.subtract(ours, theirs)
        se = float(np.std(diff, ddof=1) / np.sqrt(diff.size))
        rows.append((name, model, o, t, 100.0 * (o - t) / t))
        print(f"| {name} | {model} | {o:.4f} | {t:.4f} | {100.0 * (o - t) / t:+.2f}% | "
              f"{o - t:+.4f} ± {se:.4f} |", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gbsg", default=os.environ.get("BOOSTLIB_GBSG_CSV"),
                        help="path of gbsg.csv (skipped when not given)")
    parser.add_argument("--no-synthetic", action="store_true")
    parser.add_argument("--grow-policy", default="depthwise",
                        choices=["depthwise", "symmetric", "lossguide"],
                        help="boostlib's trees (XGBoost's are always depth-wise)")
    args = parser.parse_args()
    GROW_POLICY[0] = args.grow_policy
    print("| data | model | boostlib C-index | XGBoost C-index | difference | paired "
          "difference ± its standard error |")
    print("| --- | --- | --- | --- | --- | --- |")
    if args.gbsg:
        run("gbsg (686 rows)", *load_gbsg(args.gbsg), trees=100)
    if not args.no_synthetic:
        run("synthetic (20,000 rows)", *synthetic(), trees=300)


if __name__ == "__main__":
    main()
