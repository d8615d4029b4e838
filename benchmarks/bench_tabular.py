"""Real tabular data, side by side with the peers (ratios, one run, one machine).

Two parts:

* ``--part adult``: UCI Adult from the raw CSVs (``../shared/datasets/adult``), 200 trees of
  depth 6, categorical columns native everywhere: boostlib depthwise vs LightGBM
  (``categorical_feature``), boostlib symmetric vs CatBoost (``cat_features``), and boostlib
  with ordinal codes; test logloss and fit time. A high-cardinality column (occupation x
  native-country x education, ~2,000 levels) is added in ``--high-card`` runs.
* ``--part cv``: 5-fold cross-validation on train + test together, native categories vs
  ordinal codes, both tree kinds, with and without the high-cardinality column (the
  single test split is too noisy to tell them apart: differences of 0.001 come and go).
* ``--part encodings``: ``categorical_encoding`` (``sets``, ``onehot``, ``target_stats``,
  ``auto``) for both tree kinds on the test split, beside LightGBM native and CatBoost at the
  same settings (200 trees of depth 6, learning rate 0.1); ``--high-card`` adds the column.
* ``--part encodings-cv``: the same encodings in 5-fold cross-validation on train + test
  together (paired folds), with and without the high-cardinality column (``--data``), on
  all rows and on row samples of them (``--sizes``: the data size ``"auto"`` looks at).
* ``--part encodings-synthetic``: set splits against target statistics on one categorical
  column of 30 to 10,000 levels (Zipf frequencies, a random effect per level): where each
  wins, by the share of rows in levels of at least ``min_data_per_group`` rows.
* ``--part speed``: fit time of 100 depthwise trees of depth 6 on 32,561 x 108 features:
  random binary, continuous, and Adult one-hot encoded; boostlib / LightGBM ratios.

Run: ``python benchmarks/bench_tabular.py --part adult`` (``--part cv``, ``--part encodings``,
``--part encodings-cv``, ``--part speed``).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "adult"
COLUMNS = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
           "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
           "hours_per_week", "native_country", "income"]


def load_adult(high_card: bool = False):
    import pandas as pd
    frames = []
    for name in ("adult-train.csv", "adult-test.csv"):
        df = pd.read_csv(DATA / name, header=None, names=COLUMNS, skipinitialspace=True,
                         na_values="?", comment="|")
        df = df.dropna(subset=["income"])
        frames.append(df)
    train, test = frames
    ys = [df.pop("income").str.startswith(">50K").astype(int).to_numpy() for df in frames]
    if high_card:
        for df in (train, test):
            df["combo"] = (df.occupation.astype(str) + "|" + df.native_country.astype(str)
                           + "|" + df.education.astype(str))
    cats = [c for c in train.columns if not pd.api.types.is_numeric_dtype(train[c])]
    for c in cats:
        levels = sorted(set(train[c].dropna()) | set(test[c].dropna()))
        for df in (train, test):
            df[c] = pd.Categorical(df[c], categories=levels)
    return train, ys[0], test, ys[1], cats


def logloss(y, p):
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def part_adult(args):
    import boostlib
    train, y, test, yt, cats = load_adult(args.high_card)
    n, lr, depth = args.trees, 0.1, 6
    rows = []

    def add(name, fit, predict):
        model, sec = timed(fit)
        rows.append((name, logloss(yt, predict(model)), sec))

    for policy in ("depthwise", "symmetric"):
        add(f"boostlib {policy} native", lambda: boostlib.BoostClassifier(early_stopping=False,
            n_estimators=n, learning_rate=lr, max_depth=depth, grow_policy=policy,
            random_state=0).fit(train, y), lambda m: m.predict_proba(test)[:, 1])
        codes = train.copy()
        tcodes = test.copy()
        for c in cats:
            codes[c] = codes[c].cat.codes.replace(-1, np.nan).astype(float)
            tcodes[c] = tcodes[c].cat.codes.replace(-1, np.nan).astype(float)
        add(f"boostlib {policy} ordinal", lambda: boostlib.BoostClassifier(early_stopping=False,
            n_estimators=n, learning_rate=lr, max_depth=depth, grow_policy=policy,
            random_state=0).fit(codes, y), lambda m: m.predict_proba(tcodes)[:, 1])
    try:
        import lightgbm as lgb
        add("lightgbm native", lambda: lgb.LGBMClassifier(
            n_estimators=n, learning_rate=lr, max_depth=depth, num_leaves=2 ** depth,
            verbose=-1, random_state=0).fit(train, y),
            lambda m: m.predict_proba(test)[:, 1])
    except ImportError:
        pass
    try:
        import catboost as cb
        ctrain, ctest = train.copy(), test.copy()
        for c in cats:
            ctrain[c] = ctrain[c].astype(object).fillna("NA").astype(str)
            ctest[c] = ctest[c].astype(object).fillna("NA").astype(str)
        add("catboost cat_features", lambda: cb.CatBoostClassifier(
            iterations=n, learning_rate=lr, depth=depth, verbose=0, random_seed=0,
            thread_count=2, cat_features=cats, allow_writing_files=False).fit(ctrain, y),
            lambda m: m.predict_proba(ctest)[:, 1])
    except ImportError:
        pass
    print(f"Adult{' + high-cardinality combo' if args.high_card else ''}: {n} trees, "
          f"depth {depth}, lr {lr}")
    print(f"{'model':32s} {'test logloss':>12s} {'fit s':>8s}")
    for name, ll, sec in rows:
        print(f"{name:32s} {ll:12.5f} {sec:8.2f}")


def part_cv(args):
    import boostlib
    import pandas as pd
    print(f"5-fold CV logloss (mean, standard error), {args.trees} trees, depth 6")
    for high_card in (False, True):
        tr, y, te, yt, cats = load_adult(high_card)
        X = pd.concat([tr, te], ignore_index=True)
        Y = np.r_[y, yt]
        codes = X.copy()
        for c in cats:
            codes[c] = codes[c].cat.codes.replace(-1, np.nan).astype(float)
        folds = np.random.default_rng(0).integers(0, 5, len(Y))
        for policy in ("depthwise", "symmetric"):
            for name, D in (("native", X), ("ordinal", codes)):
                losses = []
                for k in range(5):
                    fit, held = folds != k, folds == k
                    m = boostlib.BoostClassifier(early_stopping=False,
                                                 n_estimators=args.trees, max_depth=6,
                                                 grow_policy=policy, random_state=0
                                                 ).fit(D[fit], Y[fit])
                    losses.append(logloss(Y[held], m.predict_proba(D[held])[:, 1]))
                print(f"{'adult + combo' if high_card else 'adult':14s} {policy:10s} "
                      f"{name:8s} {np.mean(losses):.5f} +- {np.std(losses) / np.sqrt(5):.5f}",
                      flush=True)


ENCODINGS = ("sets", "onehot", "target_stats", "auto")


def part_encodings(args):
    import boostlib
    train, y, test, yt, cats = load_adult(args.high_card)
    n, lr, depth = args.trees, 0.1, 6
    rows = []
    for policy in ("depthwise", "symmetric"):
        for enc in args.encodings.split(","):
            model, sec = timed(lambda: boostlib.BoostClassifier(early_stopping=False,
                n_estimators=n, learning_rate=lr, max_depth=depth, grow_policy=policy,
                categorical_encoding=enc, random_state=0).fit(train, y))
            rows.append((f"boostlib {policy} {enc}",
                         logloss(yt, model.predict_proba(test)[:, 1]), sec))
    try:
        import lightgbm as lgb
        model, sec = timed(lambda: lgb.LGBMClassifier(
            n_estimators=n, learning_rate=lr, max_depth=depth, num_leaves=2 ** depth,
            verbose=-1, random_state=0).fit(train, y))
        rows.append(("lightgbm native", logloss(yt, model.predict_proba(test)[:, 1]), sec))
    except ImportError:
        pass
    try:
        import catboost as cb
        ctrain, ctest = train.copy(), test.copy()
        for c in cats:
            ctrain[c] = ctrain[c].astype(object).fillna("NA").astype(str)
            ctest[c] = ctest[c].astype(object).fillna("NA").astype(str)
        model, sec = timed(lambda: cb.CatBoostClassifier(
            iterations=n, learning_rate=lr, depth=depth, verbose=0, random_seed=0,
            thread_count=2, cat_features=cats, allow_writing_files=False).fit(ctrain, y))
        rows.append(("catboost cat_features", logloss(yt, model.predict_proba(ctest)[:, 1]),
                     sec))
    except ImportError:
        pass
    print(f"Adult{' + high-cardinality combo' if args.high_card else ''}: {n} trees, "
          f"depth {depth}, lr {lr}")
    print(f"{'model':36s} {'test logloss':>12s} {'fit s':>8s}")
    for name, ll, sec in rows:
        print(f"{name:36s} {ll:12.5f} {sec:8.2f}", flush=True)


def part_encodings_cv(args):
    import boostlib
    import pandas as pd
    print(f"5-fold CV logloss (mean, standard error), {args.trees} trees, depth 6")
    for high_card in {"both": (False, True), "plain": (False,), "combo": (True,)}[args.data]:
        tr, y, te, yt, cats = load_adult(high_card)
        X = pd.concat([tr, te], ignore_index=True)
        Y = np.r_[y, yt]
        for size in args.sizes.split(","):
            size = size if size == "all" else int(size)
            if size == "all":
                D, T = X, Y
            else:
                pick = np.sort(np.random.default_rng(1).choice(len(Y), size, replace=False))
                D, T = X.iloc[pick].reset_index(drop=True), Y[pick]
            folds = np.random.default_rng(0).integers(0, 5, len(T))
            for policy in ("depthwise", "symmetric"):
                for enc in args.encodings.split(","):
                    losses = []
                    for k in range(5):
                        fit, held = folds != k, folds == k
                        m = boostlib.BoostClassifier(early_stopping=False,
                            n_estimators=args.trees, max_depth=6, grow_policy=policy,
                            categorical_encoding=enc, random_state=0).fit(D[fit], T[fit])
                        losses.append(logloss(T[held], m.predict_proba(D[held])[:, 1]))
                    print(f"{'adult + combo' if high_card else 'adult':14s} {str(size):6s} "
                          f"{policy:10s} {enc:13s} {np.mean(losses):.5f} +- "
                          f"{np.std(losses) / np.sqrt(5):.5f}", flush=True)


def part_encodings_synthetic(args):
    """Set splits against target statistics on one categorical column of ``L`` levels with
    Zipf frequencies and a random effect each (plus two numeric columns), 20,000 training
    and 10,000 test rows: where each wins, by the share of the rows whose level holds at
    least ``min_data_per_group`` training rows (the rows set splits can place)."""
    import boostlib
    import pandas as pd
    from boostlib.engine.params import min_data_per_group
    n_train, n_test = 20_000, 10_000
    print(f"{'levels':>6s} {'covered':>8s} {'policy':10s} {'sets':>8s} {'target_stats':>12s}")
    for levels in (int(v) for v in args.levels.split(",")):
        rng = np.random.default_rng(levels)
        p = 1.0 / np.arange(1, levels + 1)
        p /= p.sum()
        n = n_train + n_test
        c = rng.choice(levels, n, p=p)
        effect = rng.normal(size=levels)
        x = rng.normal(size=(n, 2))
        logit = effect[c] + x[:, 0] - 0.5 * x[:, 1]
        y = (logit + rng.logistic(size=n) > 0).astype(int)
        df = pd.DataFrame({"c": pd.Categorical(c), "x0": x[:, 0], "x1": x[:, 1]})
        tr, te = slice(0, n_train), slice(n_train, None)
        counts = np.bincount(c[tr], minlength=levels)
        covered = counts[counts >= min_data_per_group(None, n_train)].sum() / n_train
        for policy in ("depthwise", "symmetric"):
            out = []
            for enc in ("sets", "target_stats"):
                m = boostlib.BoostClassifier(early_stopping=False,
                                             n_estimators=args.trees, max_depth=6,
                                             grow_policy=policy, categorical_encoding=enc,
                                             random_state=0).fit(df[tr], y[tr])
                out.append(logloss(y[te], m.predict_proba(df[te])[:, 1]))
            print(f"{levels:6d} {covered:8.3f} {policy:10s} {out[0]:8.5f} {out[1]:12.5f}",
                  flush=True)


def part_speed(args):
    import boostlib
    import lightgbm as lgb
    rng = np.random.default_rng(0)
    n, p = 32561, 108
    train, y, _, _, cats = load_adult()
    import pandas as pd
    onehot = pd.get_dummies(train[cats].astype(str)).to_numpy(float)
    onehot = np.c_[onehot, np.zeros((n, max(0, p - onehot.shape[1])))][:, :p]
    shapes = {"random binary": (rng.random((n, p)) < 0.5).astype(float),
              "continuous": rng.random((n, p)), "adult one-hot": onehot}
    print(f"{'data':16s} {'boostlib s':>10s} {'lightgbm s':>10s} {'ratio':>6s}")
    for name, X in shapes.items():
        yy = y if name == "adult one-hot" else (X[:, :5].sum(1) + rng.normal(size=n) > 2.5
                                                ).astype(int)
        times = {}
        for _ in range(args.repeats):
            _, b = timed(lambda: boostlib.BoostClassifier(early_stopping=False,
                n_estimators=100, max_depth=6, grow_policy="depthwise", n_jobs=2).fit(X, yy))
            _, g = timed(lambda: lgb.LGBMClassifier(
                n_estimators=100, max_depth=6, num_leaves=64, verbose=-1, n_jobs=2).fit(X, yy))
            times.setdefault("b", []).append(b)
            times.setdefault("g", []).append(g)
        b, g = min(times["b"]), min(times["g"])
        print(f"{name:16s} {b:10.2f} {g:10.2f} {b / g:6.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["adult", "cv", "encodings", "encodings-cv",
                                       "encodings-synthetic", "speed"], default="adult")
    ap.add_argument("--encodings", default=",".join(ENCODINGS),
                    help="categorical_encoding values, comma-separated (--part encodings*)")
    ap.add_argument("--data", choices=["both", "plain", "combo"], default="both",
                    help="--part encodings-cv: Adult, Adult + the combo column, or both")
    ap.add_argument("--levels", default="30,300,3000,10000",
                    help="--part encodings-synthetic: numbers of levels, comma-separated")
    ap.add_argument("--sizes", default="all,4000",
                    help="--part encodings-cv: 'all' rows and/or numbers of rows drawn from "
                         "them, comma-separated")
    ap.add_argument("--trees", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--high-card", action="store_true")
    args = ap.parse_args()
    if not DATA.exists():
        raise SystemExit(f"needs the Adult CSVs in {DATA}")
    {"adult": part_adult, "cv": part_cv, "encodings": part_encodings,
     "encodings-cv": part_encodings_cv, "encodings-synthetic": part_encodings_synthetic,
     "speed": part_speed}[args.part](args)


if __name__ == "__main__":
    main()
