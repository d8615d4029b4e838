#!/usr/bin/env python
"""``boostlib.cv`` and ``early_stopping="auto"`` on UCI Adult, beside LightGBM.

This is a benchmark, not a test. It reads the raw UCI Adult files
(``../shared/datasets/adult``, as ``bench_tabular.load_adult`` does: the eight text columns
as pandas categories, native categorical features in both libraries) and runs three parts:

* ``--part equality``: ``boostlib.cv`` with 5 stratified folds on the 32,561 training
  rows, up to 1,000 rounds, early stopping after 50 rounds without improvement of the mean
  logloss; then five separate ``boostlib.train`` runs, one per fold (its training rows as
  a new Dataset, its held-out rows as the validation set, as many rounds as the folds ran),
  and the largest difference between ``cv``'s per-round mean (and standard deviation) and
  the mean (standard deviation) of the five runs' curves. It must be below 1e-12.
* ``--part lightgbm``: the best round, the best mean logloss and the out-of-fold logloss
  of the same ``boostlib.cv`` run beside ``lightgbm.cv`` on the same folds at the same
  settings (``SETTINGS`` below: learning rate, leaf-wise trees of 31 leaves, rows per
  leaf, hessian per leaf, L2, bins, rows per bin, the categorical-split constants).
* ``--part grid``: ``BoostClassifier(early_stopping="auto")`` in ``GridSearchCV`` (a
  2 x 2 grid of learning rate and leaves, 3 folds): whether every fit stopped early, then
  the test logloss (the 16,281 rows of ``adult-test.csv``) of the grid's best estimator,
  refitted on all training rows with 10% held out for early stopping by ``fit`` itself,
  beside the same model fitted with an explicit ``eval_set``: first the very rows ``fit``
  held out (the same model: a check that nothing else differs), then 10% of the rows
  drawn by scikit-learn's ``train_test_split`` (stratified) with seeds 0 .. 4, whose mean
  test logloss is the comparison (one draw moves it by up to ~0.7%).

    python benchmarks/bench_cv.py                  # all three parts
    python benchmarks/bench_cv.py --part lightgbm --threads 2
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict, List

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_tabular import DATA, load_adult, logloss  # noqa: E402

#: The settings both libraries train with: (boostlib parameter, value, LightGBM parameter,
#: value). LightGBM's other parameters are its defaults (no bagging, no feature fraction,
#: ``max_cat_to_onehot`` 4, ``min_gain_to_split`` 0).
SETTINGS = [
    ("learning_rate", 0.1, "learning_rate", 0.1),
    ("grow_policy", "lossguide", "(leaf-wise)", "-"),
    ("max_leaves", 31, "num_leaves", 31),
    ("max_depth", 30, "max_depth", -1),         # 31 leaves never reach depth 30: no cap
    ("min_samples_leaf", 20, "min_data_in_leaf", 20),
    ("min_child_weight", 1e-3, "min_sum_hessian_in_leaf", 1e-3),
    ("l2_regularization", 1.0, "lambda_l2", 1.0),
    ("max_bins", 255, "max_bin", 255),
    ("min_samples_bin", 3, "min_data_in_bin", 3),
    ("cat_smooth", 10.0, "cat_smooth", 10.0),
    ("cat_l2", 10.0, "cat_l2", 10.0),
    ("max_cat_threshold", 32, "max_cat_threshold", 32),
    ("min_data_per_group", 100, "min_data_per_group", 100),
]
ROUNDS, PATIENCE, NFOLD = 1000, 50, 5


def boostlib_params(threads: int) -> Dict[str, Any]:
    params = {name: value for name, value, _, _ in SETTINGS}
    return {**params, "n_estimators": ROUNDS, "random_state": 0, "n_jobs": threads}


def lightgbm_params(threads: int) -> Dict[str, Any]:
    params = {name: value for _, _, name, value in SETTINGS if not name.startswith("(")}
    return {**params, "objective": "binary", "metric": "binary_logloss", "verbose": -1,
            "num_threads": threads, "seed": 0, "deterministic": True, "force_row_wise": True}


def run_cv(train, y, threads: int):
    import boostlib
    return boostlib.cv(boostlib_params(threads), boostlib.Dataset(train, y), nfold=NFOLD,
                       early_stopping_rounds=PATIENCE, return_models=True, random_state=0)


def part_equality(train, y, result, threads: int) -> float:
    import boostlib
    n_rounds = len(result.history["logloss-mean"])
    params = {**boostlib_params(threads), "n_estimators": n_rounds}
    curves = []
    for fit_rows, held in result.folds:
        model = boostlib.train(params, boostlib.Dataset(train.iloc[fit_rows], y[fit_rows]),
                               valid_sets=[boostlib.Dataset(train.iloc[held], y[held])],
                               valid_names=["valid"])
        curves.append(model.evals_result["valid"]["logloss"])
    values = np.array(curves)
    mean_gap = float(np.max(np.abs(values.mean(axis=0) - result.history["logloss-mean"])))
    std_gap = float(np.max(np.abs(values.std(axis=0) - result.history["logloss-std"])))
    print(f"## boostlib.cv against {NFOLD} separate train() runs on the same folds\n")
    print(f"{n_rounds} rounds (best {result.best_iteration}); largest |difference| of the "
          f"per-round mean logloss: {mean_gap:.3g}, of the standard deviation: "
          f"{std_gap:.3g} (target: below 1e-12)\n")
    return max(mean_gap, std_gap)


def part_lightgbm(train, y, result, threads: int) -> None:
    import lightgbm as lgb
    data = lgb.Dataset(train, y, free_raw_data=False)
    out = lgb.cv(lightgbm_params(threads), data, num_boost_round=ROUNDS,
                 folds=[(a, b) for a, b in result.folds],
                 callbacks=[lgb.early_stopping(PATIENCE, verbose=False)],
                 return_cvbooster=True)
    means = out["valid binary_logloss-mean"]
    best = int(np.argmin(means))
    oof = np.empty(y.size)
    for (_, held), booster in zip(result.folds, out["cvbooster"].boosters):
        oof[held] = booster.predict(train.iloc[held], num_iteration=best + 1)
    rows = [("boostlib.cv", result.best_iteration, result.best_score,
             result.history["logloss-std"][result.best_iteration],
             logloss(y, result.oof_prediction)),
            ("lightgbm.cv", best, means[best], out["valid binary_logloss-stdv"][best],
             logloss(y, oof))]
    print(f"## Adult, {NFOLD}-fold cross-validation, up to {ROUNDS} rounds, early stopping "
          f"{PATIENCE}: boostlib beside LightGBM {lgb.__version__}\n")
    print("| library | best iteration (0-based) | mean logloss at it | std over the folds | "
          "out-of-fold logloss |")
    print("|---|---:|---:|---:|---:|")
    for name, it, mean, std, oof_ll in rows:
        print(f"| {name} | {it} | {mean:.5f} | {std:.5f} | {oof_ll:.5f} |")
    ratio = rows[0][4] / rows[1][4]
    print(f"\nout-of-fold logloss ratio boostlib / LightGBM: {ratio:.4f}\n")
    print("| boostlib | LightGBM |\n|---|---|")
    for ours, value, theirs, their_value in SETTINGS:
        print(f"| `{ours}={value!r}` | `{theirs}={their_value!r}` |"
              if not theirs.startswith("(") else f"| `{ours}={value!r}` | {theirs} |")
    print()


class _StopRecorder:
    """A GridSearchCV scorer: the negative log loss of the held-out fold, recording whether
    the fitted estimator stopped early (its rounds run, best iteration and ``n_estimators``)."""

    def __init__(self):
        self.fits: List[Dict[str, Any]] = []

    def __call__(self, estimator, X, y) -> float:
        curve = next(iter(estimator.evals_result_["valid_0"].values()))
        self.fits.append({"params": {k: estimator.get_params()[k]
                                     for k in ("learning_rate", "max_leaves")},
                          "rounds": len(curve), "best": estimator.best_iteration_,
                          "n_estimators": estimator.n_estimators})
        p = estimator.predict_proba(X)[:, 1]
        return -logloss(np.asarray(y), p)


def part_grid(train, y, test, yt, threads: int, seeds: int) -> Dict[str, float]:
    from sklearn.model_selection import GridSearchCV, train_test_split

    import boostlib
    from boostlib.engine.holdout import holdout
    from boostlib.engine.random_streams import seed_sequence, stream_rng
    base = {**boostlib_params(threads)}
    grid = {"learning_rate": [0.05, 0.1], "max_leaves": [15, 31]}
    for name in grid:
        base.pop(name)
    scorer = _StopRecorder()
    search = GridSearchCV(boostlib.BoostClassifier(**base, early_stopping="auto"), grid,
                          cv=3, scoring=scorer, n_jobs=1, refit=True)
    search.fit(train, y)
    print("## BoostClassifier(early_stopping=\"auto\") in GridSearchCV (3 folds)\n")
    print("| learning_rate | max_leaves | rounds run | best iteration | stopped early |")
    print("|---:|---:|---:|---:|---|")
    stopped_all = True
    for fit in scorer.fits:
        stopped = fit["rounds"] < fit["n_estimators"]
        stopped_all &= stopped
        print(f"| {fit['params']['learning_rate']} | {fit['params']['max_leaves']} | "
              f"{fit['rounds']} | {fit['best']} | {'yes' if stopped else 'NO'} |")
    best = search.best_estimator_
    rounds = len(next(iter(best.evals_result_["valid_0"].values())))
    print(f"\nevery fit stopped early: {'yes' if stopped_all else 'NO'}; best "
          f"{search.best_params_}, refitted on all {y.size} rows ({rounds} rounds, best "
          f"iteration {best.best_iteration_})\n")
    auto_ll = logloss(yt, best.predict_proba(test)[:, 1])
    params = {**best.get_params(), "early_stopping": False,
              "early_stopping_rounds": best._stopping_rounds(y.size)}
    print("| model | held-out rows for early stopping | best iteration | test logloss | "
          "ratio to auto |")
    print("|---|---|---:|---:|---:|")
    print(f"| `early_stopping=\"auto\"` | 10% drawn by fit (`random_state=0`) | "
          f"{best.best_iteration_} | {auto_ll:.5f} | 1 |")
    # the rows fit held out itself, given explicitly: the same model (a check of the split)
    fit_rows, held = holdout(y.size, best.validation_fraction,
                             stream_rng(seed_sequence(best.random_state), "validation"),
                             classes=y.astype(float))
    same = boostlib.BoostClassifier(**params).fit(
        train.iloc[fit_rows], y[fit_rows], eval_set=[(train.iloc[held], y[held])])
    same_ll = logloss(yt, same.predict_proba(test)[:, 1])
    print(f"| explicit `eval_set` | the rows `fit` held out | {same.best_iteration_} | "
          f"{same_ll:.5f} | {same_ll / auto_ll:.4f} |")
    explicit = []
    for seed in range(seeds):
        fit_X, hold_X, fit_y, hold_y = train_test_split(train, y, test_size=best.
                                                        validation_fraction,
                                                        stratify=y, random_state=seed)
        model = boostlib.BoostClassifier(**params).fit(fit_X, fit_y,
                                                       eval_set=[(hold_X, hold_y)])
        ll = logloss(yt, model.predict_proba(test)[:, 1])
        explicit.append(ll)
        print(f"| explicit `eval_set` | 10% by `train_test_split(random_state={seed})` | "
              f"{model.best_iteration_} | {ll:.5f} | {ll / auto_ll:.4f} |")
    mean = float(np.mean(explicit))
    print(f"| explicit `eval_set`, mean of {seeds} | | | {mean:.5f} | {mean / auto_ll:.4f} |")
    print(f"\ntest logloss of early_stopping=\"auto\" / explicit eval_set (mean): "
          f"{auto_ll / mean:.4f} (target: within 0.5%)\n")
    return {"auto": auto_ll, "explicit": mean}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("all", "equality", "lightgbm", "grid"), default="all")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=5,
                    help="grid part: explicit eval sets drawn with seeds 0 .. N-1")
    args = ap.parse_args(argv)
    if not DATA.is_dir():
        print(f"needs {DATA}", file=sys.stderr)
        return 1
    train, y, test, yt, _ = load_adult()
    status = 0
    if args.part in ("all", "equality", "lightgbm"):
        result = run_cv(train, y, args.threads)
        if args.part in ("all", "equality"):
            if part_equality(train, y, result, args.threads) >= 1e-12:
                status = 1
        if args.part in ("all", "lightgbm"):
            part_lightgbm(train, y, result, args.threads)
    if args.part in ("all", "grid"):
        part_grid(train, y, test, yt, args.threads, args.seeds)
    return status


if __name__ == "__main__":
    sys.exit(main())
