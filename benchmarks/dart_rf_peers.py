"""Accuracy of ``update="dart"`` and ``update="rf"`` next to LightGBM's ``boosting="dart"``
and ``boosting="rf"`` at equal settings (docs/model_families.md).

Data: the HIGGS subset LightGBM ships (7,000 train / 500 test rows) and UCI Adult (32,561 /
16,281 rows; the eight categorical columns as integer codes, read as numbers by both
libraries), from the shared dataset folder. Leaf-wise trees of 31 leaves, at least 20 rows a
leaf, L2 1, 255 bins. DART: learning rate 0.1, drop rate 0.1, skip_drop 0.5, max_drop 50,
weighted drops (LightGBM's defaults); RF: bagging 0.632 every tree, 70% of the features a
tree. ``--families dart_tree``: DART with XGBoost's ``tree`` normalisation (LightGBM's
``xgboost_dart_mode``). Reports test logloss and AUC, mean and spread over seeds. Accuracy
only: fit times on a shared machine mean nothing and are not printed.

Run from the repository: ``PYTHONPATH=. python benchmarks/dart_rf_peers.py [--data
../shared/datasets] [--rounds 300] [--seeds 3] [--sets higgs,adult]``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "datasets"


def load_higgs(root: Path):
    tr = np.loadtxt(root / "higgs_lightgbm" / "binary.train", delimiter="\t")
    te = np.loadtxt(root / "higgs_lightgbm" / "binary.test", delimiter="\t")
    return tr[:, 1:], tr[:, 0], te[:, 1:], te[:, 0]


def load_adult(root: Path):
    import pandas as pd
    cols = list(range(15))
    tr = pd.read_csv(root / "adult" / "adult-train.csv", header=None, names=cols,
                     skipinitialspace=True, na_values="?")
    te = pd.read_csv(root / "adult" / "adult-test.csv", header=None, names=cols,
                     skipinitialspace=True, na_values="?")
    both = pd.concat([tr, te], ignore_index=True)
    y = both[14].astype(str).str.rstrip(".").eq(">50K").to_numpy(float)
    X = np.empty((len(both), 14))
    for j in range(14):
        col = both[j]
        if not pd.api.types.is_numeric_dtype(col):
            codes = col.astype("category").cat.codes.to_numpy(float)
            codes[codes < 0] = np.nan
            X[:, j] = codes
        else:
            X[:, j] = col.to_numpy(float)
    n = len(tr)
    return X[:n], y[:n], X[n:], y[n:]


def logloss(y, p):
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def auc(y, p):
    from sklearn.metrics import roc_auc_score
    return float(roc_auc_score(y, p))


def run(family: str, X, y, Xt, seed: int, rounds: int, library: str) -> np.ndarray:
    common_lgb = dict(num_leaves=31, min_data_in_leaf=20, lambda_l2=1.0, max_bin=255,
                      min_sum_hessian_in_leaf=1e-3, verbose=-1, num_threads=1, seed=seed,
                      objective="binary", n_estimators=rounds)
    common_bl = dict(grow_policy="lossguide", max_leaves=31, max_depth=30,
                     min_samples_leaf=20, l2_regularization=1.0, max_bins=255,
                     min_child_weight=1e-3, n_jobs=1, random_state=seed,
                     n_estimators=rounds)
    if family in ("dart", "dart_tree"):
        tree = family == "dart_tree"        # XGBoost's normalisation on both sides
        lgb_p = dict(boosting_type="dart", learning_rate=0.1, drop_rate=0.1, skip_drop=0.5,
                     max_drop=50, uniform_drop=False, xgboost_dart_mode=tree)
        bl_p = dict(update="dart", learning_rate=0.1,
                    update_params={"rate_drop": 0.1, "skip_drop": 0.5, "max_drop": 50,
                                   "sample_type": "weighted",
                                   "normalize_type": "tree" if tree else "lightgbm"})
    else:
        lgb_p = dict(boosting_type="rf", bagging_fraction=0.632, bagging_freq=1,
                     feature_fraction=0.7)
        bl_p = dict(update="rf", learning_rate=1.0, subsample=0.632, colsample_bytree=0.7)
    if library == "lightgbm":
        import lightgbm
        model = lightgbm.LGBMClassifier(**common_lgb, **lgb_p).fit(X, y)
    else:
        from boostlib import BoostClassifier
        model = BoostClassifier(early_stopping=False, **common_bl, **bl_p).fit(X, y)
    return model.predict_proba(Xt)[:, 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--sets", default="higgs,adult")
    ap.add_argument("--families", default="dart,rf")
    args = ap.parse_args()
    loaders = {"higgs": load_higgs, "adult": load_adult}
    print(f"| data | family | library | test logloss | test AUC |\n|---|---|---|---|---|")
    for name in args.sets.split(","):
        X, y, Xt, yt = loaders[name](args.data)
        for family in args.families.split(","):
            for library in ("boostlib", "lightgbm"):
                ll, au = [], []
                for seed in range(args.seeds):
                    p = run(family, X, y, Xt, seed, args.rounds, library)
                    ll.append(logloss(yt, p))
                    au.append(auc(yt, p))
                print(f"| {name} | {family} | {library} | {np.mean(ll):.4f} ± "
                      f"{np.std(ll):.4f} | {np.mean(au):.4f} ± {np.std(au):.4f} |",
                      flush=True)


if __name__ == "__main__":
    main()
