#!/usr/bin/env python
"""Benchmark matrix: boostlib and its peers side by side, cell by cell, with ratios.

This is a benchmark, not a test. Run it from the repository root; progress goes to stderr,
a Markdown report to stdout::

    python benchmarks/bench_matrix.py                                 # the full matrix
    python benchmarks/bench_matrix.py --cells w1-1m,small-1k --repeats 5
    python benchmarks/bench_matrix.py --models boostlib-depthwise,lightgbm --json m.json
    python benchmarks/bench_matrix.py --quick --threads 1 --repeats 1    # smoke run

Cells
-----
``w1-10k``, ``w1-100k``, ``w1-1m``
    W1 dense data (``bench_peers.make_data``: 28 float64 features, NaN in two of them),
    10k / 100k / 1M train rows, 50k / 50k / 200k test rows; 200 trees.
``small-1k``, ``small-10k``
    ``make_classification(n_features=20, n_informative=10, random_state=0)``, 1k / 10k
    train rows + 10k test rows; 300 trees.
``onehot``
    20 categorical variables of 10 levels one-hot encoded: 200 binary 0/1 columns, 100k
    train + 50k test rows; 200 trees.
``categorical``
    pandas ``category`` columns of 5, 50 and 500 levels (skewed frequencies) plus 4 numeric
    columns, 100k train + 50k test rows; 200 trees. Every library gets its native
    categorical support: boostlib ``categorical_features="auto"``, LightGBM the pandas
    dtype, XGBoost ``enable_categorical=True``, CatBoost ``cat_features`` (integer codes),
    HGB ``categorical_features="from_dtype"`` (skipped: it allows at most ``max_bins``
    levels).
``multiclass``
    ``make_classification(n_features=20, n_informative=12, n_classes=10, random_state=0)``,
    50k train + 10k test rows; 100 rounds; multiclass logloss (CatBoost ``MultiClass``,
    which has no ``boost_from_average``).
``wide``
    ``make_classification(n_features=1000, n_informative=50, n_redundant=0)``, 20k train +
    10k test rows; 100 trees.
``predict-1row``, ``predict-200k``
    Models fitted on 50k W1 rows (200 trees); the median latency of ``predict_proba`` on one
    row (300 calls on successive test rows, after one warm-up call), or the median of 5
    ``predict_proba`` calls on 200k test rows (``bench_latency.py``'s approach).

``--quick`` divides every row count by 100 (at least 500 rows) and caps the trees at 20.

Settings
--------
``bench_peers.py``'s builders and ``DEFAULTS``: depth 6, 255 bins, learning rate 0.1, L2 = 1,
``--threads`` threads. ``boostlib-depthwise`` is paired with LightGBM, XGBoost (hist) and
HGB; ``boostlib-symmetric`` with CatBoost at matched settings (``catboost-matched``). In the
predict cells both boostlib models are paired with XGBoost and CatBoost.

Measurement
-----------
The parent generates each cell's data once (``.npy``, DataFrames pickled) in a temporary
directory removed at the end. Every (cell, model) fit runs in a fresh interpreter (this
script with ``--single``), never two at a time. Before the timed fit, the child fits the
same model with 2 trees on 300 of the rows (every class among them), so that one-time
costs of a process's first fit (lazy imports, plugin discovery, starting threads) are not
timed, for every library alike: they are a constant per process, not a cost per fit. Rounds are interleaved: in each of the
``--repeats`` rounds every model of the cell runs once, in order. Reported: each model's
median time, the median over rounds of the per-round boostlib / peer ratio (with its
min-max range), the best boostlib / best peer ratio (per round, the faster boostlib model
over the fastest peer), the test logloss difference in %, and "other load" (CPUs kept busy
by other processes, from ``bench_peers``; above 0.25 the report warns). Peers that are not
installed are skipped with a note. The report ends with the issue 29 targets: "met" or
"MISS" on the median ratio.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_peers import (CONTENTION_WARN, DEFAULTS, MODELS, RESULT_MARKER,  # noqa: E402
                         _children_cpu_s, _git_commit, _system_busy_s, environment, make_data,
                         write_json)

Data = Tuple[Any, np.ndarray, Any, np.ndarray]          # X_train, y_train, X_test, y_test

# matrix model -> bench_peers.MODELS key
PEER_KEY = {"boostlib-depthwise": "boostlib-depthwise", "boostlib-symmetric": "boostlib-symmetric",
            "lightgbm": "lightgbm", "xgboost": "xgboost", "catboost": "catboost-matched",
            "sklearn-hgb": "sklearn-hgb"}
BOOSTLIB = ["boostlib-depthwise", "boostlib-symmetric"]
PEERS = ["lightgbm", "xgboost", "catboost", "sklearn-hgb"]
GROUPS = {"best boostlib": BOOSTLIB, "best peer": PEERS}
FIT_PAIRS = [("boostlib-depthwise", "lightgbm"), ("boostlib-depthwise", "xgboost"),
             ("boostlib-depthwise", "sklearn-hgb"), ("boostlib-symmetric", "catboost"),
             ("best boostlib", "best peer")]
PREDICT_PAIRS = [(b, p) for b in BOOSTLIB for p in ("xgboost", "catboost")] \
    + [("best boostlib", "best peer")]
# kind -> (timed result key, column label, display scale, format)
METRICS = {"fit": ("fit_s", "fit s", 1.0, ".2f"),
           "latency": ("latency_s", "1-row us", 1e6, ".0f"),
           "batch": ("batch_s", "batch s", 1.0, ".4f")}
LATENCY_CALLS = 300
BATCH_CALLS = 5
QUICK_DIVISOR, QUICK_MIN_ROWS, QUICK_TREES = 100, 500, 20
CAT_LEVELS = (5, 50, 500)


# -- Data ------------------------------------------------------------------------------------------
def _w1(n_train: int, n_test: int) -> Data:
    X, y, _ = make_data(n_train, 0)
    X_test, y_test, _ = make_data(n_test, 1)
    return X, y, X_test, y_test


def _split(X: Any, y: np.ndarray, n_train: int) -> Data:
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def _sklearn(**kwargs: Any) -> Callable[[int, int], Data]:
    def make(n_train: int, n_test: int) -> Data:
        from sklearn.datasets import make_classification
        X, y = make_classification(n_samples=n_train + n_test, random_state=0, **kwargs)
        return _split(X, y, n_train)
    return make


def _sigmoid_labels(rng: np.random.Generator, logit: np.ndarray) -> np.ndarray:
    p = 1.0 / (1.0 + np.exp(-(logit - logit.mean())))
    return (rng.uniform(size=logit.size) < p).astype(np.float64)


def _onehot(n_train: int, n_test: int, groups: int = 20, levels: int = 10) -> Data:
    """``groups`` one-hot encoded variables of ``levels`` levels; 8 carry main effects, two
    pairs interact."""
    n = n_train + n_test
    rng = np.random.default_rng(0)
    X = np.zeros((n, groups * levels))
    codes = []
    logit = np.zeros(n)
    for g in range(groups):
        c = rng.choice(levels, size=n, p=rng.dirichlet(np.ones(levels)))
        X[np.arange(n), g * levels + c] = 1.0
        if g < 8:
            logit += rng.normal(0.0, 0.7, levels)[c]
        codes.append(c)
    logit += 0.8 * ((codes[0] < 3) & (codes[1] >= 5)) - 0.6 * (codes[2] == codes[3])
    return _split(X, _sigmoid_labels(rng, logit), n_train)


def _categorical(n_train: int, n_test: int) -> Data:
    """Category columns of ``CAT_LEVELS`` levels (Zipf-like frequencies, random effects, one
    category-numeric interaction) and 4 numeric columns (one irrelevant)."""
    import pandas as pd
    n = n_train + n_test
    rng = np.random.default_rng(0)
    cols: Dict[str, Any] = {}
    logit = np.zeros(n)
    effects = []
    for k in CAT_LEVELS:
        weights = 1.0 / np.arange(1, k + 1) ** 0.7
        c = rng.choice(k, size=n, p=weights / weights.sum())
        effects.append(rng.normal(0.0, 1.0, k)[c])
        cols[f"cat{k}"] = pd.Categorical.from_codes(c, categories=[f"v{i}" for i in range(k)])
    num = rng.standard_normal((n, 4))
    for j in range(4):
        cols[f"num{j}"] = num[:, j]
    logit += sum(effects) + 0.7 * np.sin(num[:, 0]) - 0.4 * num[:, 1] ** 2 \
        + 0.5 * num[:, 2] * effects[0]
    X = pd.DataFrame(cols)
    y = _sigmoid_labels(rng, logit)
    return X.iloc[:n_train].reset_index(drop=True), y[:n_train], \
        X.iloc[n_train:].reset_index(drop=True), y[n_train:]


@dataclass(frozen=True)
class Cell:
    title: str
    make: Callable[[int, int], Data]
    n_train: int
    n_test: int
    n_estimators: int
    kind: str = "fit"           # what is timed and compared: a key of METRICS
    n_classes: int = 2


W1, SMALL = "W1 dense (28 features, NaN)", _sklearn(n_features=20, n_informative=10)
CELLS: Dict[str, Cell] = {
    "w1-10k": Cell(W1, _w1, 10_000, 50_000, 200),
    "w1-100k": Cell(W1, _w1, 100_000, 50_000, 200),
    "w1-1m": Cell(W1, _w1, 1_000_000, 200_000, 200),
    "small-1k": Cell("make_classification, 20 features", SMALL, 1_000, 10_000, 300),
    "small-10k": Cell("make_classification, 20 features", SMALL, 10_000, 10_000, 300),
    "onehot": Cell("one-hot, 200 binary columns", _onehot, 100_000, 50_000, 200),
    "categorical": Cell(f"pandas categories ({', '.join(map(str, CAT_LEVELS))} levels) + 4 "
                        "numeric", _categorical, 100_000, 50_000, 200),
    "multiclass": Cell("make_classification, 10 classes", _sklearn(
        n_features=20, n_informative=12, n_classes=10), 50_000, 10_000, 100, n_classes=10),
    "wide": Cell("make_classification, 1,000 columns (50 informative)", _sklearn(
        n_features=1000, n_informative=50, n_redundant=0), 20_000, 10_000, 100),
    "predict-1row": Cell("W1, predict_proba on one row", _w1, 50_000, 200_000, 200,
                         kind="latency"),
    "predict-200k": Cell("W1, predict_proba on the test rows", _w1, 50_000, 200_000, 200,
                         kind="batch"),
}


def cell_sizes(cell: Cell, quick: bool) -> Tuple[int, int, int]:
    """(train rows, test rows, trees) of a cell, shrunk by ``--quick``."""
    if not quick:
        return cell.n_train, cell.n_test, cell.n_estimators
    return (max(cell.n_train // QUICK_DIVISOR, QUICK_MIN_ROWS),
            max(cell.n_test // QUICK_DIVISOR, QUICK_MIN_ROWS), min(cell.n_estimators, QUICK_TREES))


def write_cell(directory: str, name: str, quick: bool, threads: int) -> Dict[str, Any]:
    """Generate a cell's data into ``directory`` with its spec (``cell.json``); return it."""
    cell = CELLS[name]
    n_train, n_test, trees = cell_sizes(cell, quick)
    X, y, X_test, y_test = cell.make(n_train, n_test)
    for part, Xp, yp in (("train", X, y), ("test", X_test, y_test)):
        if isinstance(Xp, np.ndarray):
            np.save(os.path.join(directory, f"X_{part}.npy"), Xp)
        else:
            Xp.to_pickle(os.path.join(directory, f"X_{part}.pkl"))
        np.save(os.path.join(directory, f"y_{part}.npy"), yp)
    spec = dict(cell=name, title=cell.title, kind=cell.kind, n_classes=cell.n_classes,
                n_train=n_train, n_test=n_test, n_features=int(X.shape[1]),
                cfg=dict(DEFAULTS, n_estimators=trees, threads=threads))
    with open(os.path.join(directory, "cell.json"), "w") as fh:
        json.dump(spec, fh)
    return spec


def _load(directory: str, part: str) -> Tuple[Any, np.ndarray]:
    path = os.path.join(directory, f"X_{part}")
    if os.path.exists(path + ".pkl"):
        import pandas as pd
        X = pd.read_pickle(path + ".pkl")
    else:
        X = np.load(path + ".npy")
    return X, np.load(os.path.join(directory, f"y_{part}.npy"))


# -- Child: one model of one cell in a fresh process -----------------------------------------------
class Skip(Exception):
    """A model that cannot run this cell (the reason is the message)."""


def _adapt(name: str, model: Any, X: Any, X_test: Any, spec: Dict[str, Any]
           ) -> Tuple[Any, Any, Dict[str, Any]]:
    """Multiclass and native categorical settings: (X, X_test, fit keyword arguments)."""
    if spec["n_classes"] > 2 and name == "catboost":    # no boost_from_average for MultiClass
        model.set_params(loss_function="MultiClass", boost_from_average=False)
    if isinstance(X, np.ndarray):
        return X, X_test, {}
    import pandas as pd
    cats = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
    if name == "xgboost":
        model.set_params(enable_categorical=True)
    elif name == "catboost":            # CatBoost wants int or str columns: integer codes
        X, X_test = (Z.assign(**{c: Z[c].cat.codes.astype(np.int64) for c in cats})
                     for Z in (X, X_test))
        return X, X_test, dict(cat_features=cats)
    elif name == "sklearn-hgb":
        import sklearn
        if tuple(int(p) for p in sklearn.__version__.split(".")[:2]) < (1, 4):
            raise Skip(f"sklearn {sklearn.__version__} has no categorical_features='from_dtype'")
        widest = max(cats, key=lambda c: len(X[c].cat.categories))
        if len(X[widest].cat.categories) > spec["cfg"]["max_bins"]:
            raise Skip(f"HGB allows at most max_bins={spec['cfg']['max_bins']} categories; "
                       f"{widest} has {len(X[widest].cat.categories)}")
        model.set_params(categorical_features="from_dtype")
    return X, X_test, {}


def _seconds(call: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def _row_latency(proba: Callable[[Any], Any], X: np.ndarray) -> float:
    """Median time of ``proba`` on one row, over ``LATENCY_CALLS`` successive rows."""
    rows = [X[i:i + 1] for i in range(1, LATENCY_CALLS + 1)]
    proba(X[:1])                                    # warm-up (first-call setup)
    return statistics.median(_seconds(lambda r=r: proba(r)) for r in rows)


def _warm_up(name: str, model: Any, X: Any, y: np.ndarray, fit_kwargs: Dict[str, Any]
             ) -> None:
    """Fit a copy of ``model`` with 2 trees on 300 rows and every class (untimed)."""
    from sklearn.base import clone
    rows = np.union1d(np.arange(min(300, len(y))),
                      np.unique(np.asarray(y), return_index=True)[1])
    params = model.get_params()
    key = next(k for k in ("max_iter", "iterations", "n_estimators") if k in params)
    warm = clone(model).set_params(**{key: 2})
    warm.fit(X.iloc[rows] if hasattr(X, "iloc") else X[rows], np.asarray(y)[rows],
             **fit_kwargs)


def run_single(name: str, data_dir: str) -> Dict[str, Any]:
    from contextlib import nullcontext
    from sklearn.metrics import log_loss
    with open(os.path.join(data_dir, "cell.json")) as fh:
        spec = json.load(fh)
    cfg = spec["cfg"]
    out: Dict[str, Any] = dict(name=name)
    _, module, builder, _ = MODELS[PEER_KEY[name]]
    model, _, out["version"] = builder(cfg)
    if module == "boostlib":
        out["boostlib_commit"] = _git_commit()
    X, y = _load(data_dir, "train")
    X_test, y_test = _load(data_dir, "test")
    try:
        X, X_test, fit_kwargs = _adapt(name, model, X, X_test, spec)
    except Skip as exc:
        return dict(out, skipped=str(exc))
    if name == "catboost":
        def proba(Z: Any) -> np.ndarray:
            return model.predict_proba(Z, thread_count=cfg["threads"])
    else:
        proba = model.predict_proba
    limit: Any = nullcontext()
    if name == "sklearn-hgb":          # HGB has no n_jobs
        from threadpoolctl import threadpool_limits
        limit = threadpool_limits(limits=cfg["threads"], user_api="openmp")
    with limit:
        _warm_up(name, model, X, y, fit_kwargs)
        out["fit_s"] = _seconds(lambda: model.fit(X, y, **fit_kwargs))
        t0 = time.perf_counter()
        p = np.asarray(proba(X_test), dtype=np.float64)
        out["predict_s"] = time.perf_counter() - t0
        if spec["kind"] == "latency":
            out["latency_s"] = _row_latency(proba, X_test)
        elif spec["kind"] == "batch":
            out["batch_s"] = statistics.median(_seconds(lambda: proba(X_test))
                                               for _ in range(BATCH_CALLS))
    out["logloss"] = float(log_loss(y_test.astype(np.int64), p,
                                    labels=np.arange(spec["n_classes"])))
    return out


# -- Parent: orchestration -------------------------------------------------------------------------
def spawn(name: str, data_dir: str, timeout: Optional[float]) -> Dict[str, Any]:
    """Run one model of one cell in a fresh interpreter; its result with "other load"."""
    module = MODELS[PEER_KEY[name]][1]
    if importlib.util.find_spec(module) is None:
        return dict(name=name, skipped=f"{module} is not installed")
    cmd = [sys.executable, os.path.abspath(__file__), "--single", name, "--data-dir", data_dir]
    busy0, child0, t0 = _system_busy_s(), _children_cpu_s(), time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(name=name, skipped=f"timed out after {timeout} s")
    wall = time.perf_counter() - t0
    busy1, child1 = _system_busy_s(), _children_cpu_s()
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_MARKER):
            res = json.loads(line[len(RESULT_MARKER):])
            if busy0 is not None and busy1 is not None and wall > 0:
                res["other_load"] = max((busy1 - busy0) - (child1 - child0), 0.0) / wall
            return res
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return dict(name=name, skipped=f"failed (exit {proc.returncode}): "
                + " | ".join(line.strip() for line in tail))


def _progress(cell: str, rnd: int, repeats: int, res: Dict[str, Any], key: str) -> str:
    head = f"[{cell} {rnd + 1}/{repeats}] {res['name']}:"
    if "skipped" in res:
        return f"{head} skipped ({res['skipped']})"
    load = res.get("other_load")
    timed = "" if key == "fit_s" else f" {key} {res[key]:.3g},"
    return (f"{head}{timed} fit {res['fit_s']:.2f} s, logloss {res['logloss']:.5f}"
            + ("" if load is None else f", other load {load:.2f}"))


def run_cell(name: str, models: List[str], root: str, repeats: int,
             args: argparse.Namespace) -> Dict[str, Any]:
    """Generate a cell's data, run ``repeats`` interleaved rounds, remove the data."""
    directory = os.path.join(root, name)
    os.makedirs(directory)
    t0 = time.perf_counter()
    spec = write_cell(directory, name, args.quick, args.threads)
    print(f"[{name}] data: {spec['n_train']:,} train + {spec['n_test']:,} test rows x "
          f"{spec['n_features']} in {time.perf_counter() - t0:.1f} s", file=sys.stderr,
          flush=True)
    key = METRICS[spec["kind"]][0]
    rounds: Dict[str, List[Dict[str, Any]]] = {m: [] for m in models}
    for rnd in range(repeats):
        for model in models:
            res = spawn(model, directory, args.timeout)
            rounds[model].append(res)
            print(_progress(name, rnd, repeats, res, key), file=sys.stderr, flush=True)
    shutil.rmtree(directory, ignore_errors=True)
    return dict(spec=spec, rounds=rounds, **summarize(rounds, spec["kind"]))


# -- Summaries -------------------------------------------------------------------------------------
def model_summary(runs: List[Dict[str, Any]], key: str) -> Dict[str, Any]:
    """A model's medians over its completed rounds, or why it has none."""
    done = [r for r in runs if key in r]
    failed = [r.get("skipped", "no result") for r in runs if key not in r]
    if not done:
        return dict(skipped=failed[0])
    loads = [r["other_load"] for r in done if "other_load" in r]
    out = dict(version=done[0]["version"], rounds=len(done),
               metric=statistics.median(r[key] for r in done),
               fit_s=statistics.median(r["fit_s"] for r in done),
               predict_s=statistics.median(r["predict_s"] for r in done),
               logloss=statistics.median(r["logloss"] for r in done),
               other_load=max(loads) if loads else None)
    if failed:
        out["failed"] = f"{len(failed)} of {len(runs)} rounds failed: {failed[0]}"
    return out


def _per_round(rounds: Dict[str, List[Dict[str, Any]]], name: str, key: str
               ) -> List[Optional[float]]:
    """A model's timed value per round; for a group ("best boostlib", "best peer") the
    group's smallest in that round."""
    members = [m for m in GROUPS.get(name, [name]) if m in rounds]
    n = max((len(rounds[m]) for m in members), default=0)
    out = []
    for i in range(n):
        vals = [rounds[m][i][key] for m in members if key in rounds[m][i]]
        out.append(min(vals) if vals else None)
    return out


def _representative(models: Dict[str, Dict[str, Any]], name: str) -> Optional[str]:
    """``name``, or for a group the member with the smallest median timed value."""
    done = [m for m in GROUPS.get(name, [name]) if "metric" in models.get(m, {})]
    return min(done, key=lambda m: models[m]["metric"]) if done else None


def pair_ratio(rounds: Dict[str, List[Dict[str, Any]]], models: Dict[str, Dict[str, Any]],
               num: str, den: str, key: str) -> Optional[Dict[str, Any]]:
    """Median over rounds of the per-round ratio num / den, its range, the logloss diff %."""
    per = [a / b for a, b in zip(_per_round(rounds, num, key), _per_round(rounds, den, key))
           if a is not None and b]
    ra, rb = _representative(models, num), _representative(models, den)
    if not per or ra is None or rb is None:
        return None
    la, lb = models[ra]["logloss"], models[rb]["logloss"]
    label = f"{num} ({ra}) / {den} ({rb})" if num in GROUPS else f"{num} / {den}"
    return dict(num=num, den=den, label=label, median=statistics.median(per), min=min(per),
                max=max(per), rounds=len(per), logloss_diff_pct=100.0 * (la - lb) / lb)


def summarize(rounds: Dict[str, List[Dict[str, Any]]], kind: str) -> Dict[str, Any]:
    key = METRICS[kind][0]
    models = {m: model_summary(runs, key) for m, runs in rounds.items()}
    pairs = [pair_ratio(rounds, models, a, b, key)
             for a, b in (FIT_PAIRS if kind == "fit" else PREDICT_PAIRS)]
    return dict(models=models, ratios=[p for p in pairs if p is not None])


# issue 29: (cell, numerator, denominator, at most this median ratio)
TARGETS = [("w1-1m", "boostlib-depthwise", "lightgbm", 0.9),
           ("w1-1m", "boostlib-depthwise", "xgboost", 0.9),
           ("w1-1m", "boostlib-symmetric", "catboost", 0.9),
           ("predict-1row", "boostlib-depthwise", "xgboost", 1.0),
           ("predict-1row", "boostlib-symmetric", "catboost", 1.2),
           ("predict-200k", "boostlib-depthwise", "xgboost", 1.0),
           ("small-1k", "best boostlib", "lightgbm", 1.0),
           ("small-1k", "boostlib-depthwise", "lightgbm", 1.0),
           ("small-10k", "best boostlib", "lightgbm", 1.0),
           ("small-10k", "boostlib-depthwise", "lightgbm", 1.0)]


def targets(cells: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    rows = []
    for cell, num, den, limit in TARGETS:
        row: Dict[str, Any] = dict(cell=cell, num=num, den=den, limit=limit,
                                   what=METRICS[CELLS[cell].kind][1].split()[0])
        res = cells.get(cell)
        q = res and pair_ratio(res["rounds"], res["models"], num, den,
                               METRICS[CELLS[cell].kind][0])
        if q:
            row.update(ratio=q["median"], min=q["min"], max=q["max"],
                       logloss_diff_pct=q["logloss_diff_pct"],
                       status="met" if q["median"] <= limit else "MISS")
        else:
            row["status"] = "no result" if res else "not run"
        rows.append(row)
    return rows


# -- Report ----------------------------------------------------------------------------------------
def _fmt(v: Optional[float], spec: str, suffix: str = "") -> str:
    return "n/a" if v is None else format(v, spec) + suffix


def render_cell(name: str, res: Dict[str, Any]) -> List[str]:
    spec = res["spec"]
    key, label, scale, fmt = METRICS[spec["kind"]]
    other_key, other_label = ("predict_s", "predict s") if spec["kind"] == "fit" \
        else ("fit_s", "fit s")
    cfg = spec["cfg"]
    lines = [f"### {name}: {spec['title']}", "",
             f"{spec['n_train']:,} train / {spec['n_test']:,} test rows x "
             f"{spec['n_features']} features, {cfg['n_estimators']} trees depth "
             f"{cfg['max_depth']}" + (f", {spec['n_classes']} classes"
                                      if spec["n_classes"] > 2 else "") + ".", "",
             f"| model | {label} | {other_label} | logloss | other load |",
             "|---|---:|---:|---:|---:|"]
    notes = []
    for model, s in res["models"].items():
        if "skipped" in s:
            notes.append(f"- {model}: skipped ({s['skipped']})")
            continue
        lines.append(f"| {model} | {s['metric'] * scale:{fmt}} | {s[other_key]:.3f} | "
                     f"{s['logloss']:.5f} | {_fmt(s['other_load'], '.2f')} |")
        if "failed" in s:
            notes.append(f"- {model}: {s['failed']}")
    if res["ratios"]:
        lines += ["", "| boostlib / peer | ratio (median) | range | logloss diff % |",
                  "|---|---:|---:|---:|"]
        lines += [f"| {q['label']} | {q['median']:.2f}x | {q['min']:.2f}-{q['max']:.2f} "
                  f"({q['rounds']}) | {q['logloss_diff_pct']:+.2f}% |" for q in res["ratios"]]
    return lines + ([""] + notes if notes else []) + [""]


def render(report: Dict[str, Any]) -> str:
    env, cfg = report["environment"], report["config"]
    versions = {MODELS[PEER_KEY[m]][1]: s["version"] for c in report["cells"].values()
                for m, s in c["models"].items() if "version" in s}
    lines = ["## boostlib benchmark matrix", "",
             f"CPU: {env['cpu']} ({env['cpu_count']} CPUs), Python {env['python']}, "
             f"commit {env['boostlib_commit']}; threads {cfg['threads']}, repeats "
             f"{cfg['repeats']}" + (", **--quick (smoke sizes: ratios are not meaningful)**"
                             if cfg["quick"] else "") + ".",
             "Versions: " + ", ".join(f"{m} {v}" for m, v in versions.items()) + ".", "",
             "Ratios: median over rounds of the per-round boostlib / peer time (< 1: boostlib "
             "faster), range = min-max (rounds). logloss diff % = 100 (boostlib - peer) / peer "
             "test logloss (> 0: boostlib less accurate).", ""]
    for name, res in report["cells"].items():
        lines += render_cell(name, res)
    loads = {c: [s["other_load"] for s in res["models"].values() if s.get("other_load")]
             for c, res in report["cells"].items()}
    busy = [f"{c} ({sum(v > CONTENTION_WARN for v in vs)}/{len(vs)} models, max {max(vs):.2f})"
            for c, vs in loads.items() if vs and max(vs) > CONTENTION_WARN]
    if busy:
        lines += [f"**WARNING: the host was busy (other load > {CONTENTION_WARN} CPUs) in "
                  f"{', '.join(busy)}; those timings are inflated.**", ""]
    commits = {r.get("boostlib_commit") for c in report["cells"].values()
               for runs in c["rounds"].values() for r in runs if "boostlib_commit" in r}
    if commits - {env["boostlib_commit"]}:
        lines += [f"**WARNING: the boostlib checkout changed during the run "
                  f"({', '.join(sorted(map(str, commits)))}).**", ""]
    lines += ["### Issue 29 targets", "",
              "| cell | target | median ratio | range | logloss diff % | status |",
              "|---|---|---:|---:|---:|---|"]
    for t in report["targets"]:
        lines.append(f"| {t['cell']} | {t['what']}: {t['num']} / {t['den']} <= {t['limit']}x | "
                     f"{_fmt(t.get('ratio'), '.2f', 'x')} | "
                     + (f"{t['min']:.2f}-{t['max']:.2f}" if "min" in t else "") + " | "
                     f"{_fmt(t.get('logloss_diff_pct'), '+.2f', '%')} | {t['status']} |")
    return "\n".join(lines)


# -- Command line ----------------------------------------------------------------------------------
def _choice(ap: argparse.ArgumentParser, value: Optional[str], allowed: List[str],
            what: str) -> List[str]:
    picked = [v.strip() for v in value.split(",") if v.strip()] if value else allowed
    unknown = [v for v in picked if v not in allowed]
    if unknown:
        ap.error(f"unknown {what} {unknown}; choose from {allowed}")
    return picked


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", help="comma-separated cells (default all): " + ", ".join(CELLS))
    ap.add_argument("--models", help="comma-separated models (default all): "
                    + ", ".join(PEER_KEY))
    ap.add_argument("--repeats", type=int, default=3, metavar="R",
                    help="interleaved rounds per cell")
    ap.add_argument("--threads", type=int, default=DEFAULTS["threads"])
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: rows / {QUICK_DIVISOR} (at least {QUICK_MIN_ROWS}), "
                         f"at most {QUICK_TREES} trees")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--timeout", type=float, help="per (cell, model) process, seconds")
    ap.add_argument("--single", help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.single:
        print(RESULT_MARKER + json.dumps(run_single(args.single, args.data_dir)), flush=True)
        return 0
    cells = _choice(ap, args.cells, list(CELLS), "cell(s)")
    models = _choice(ap, args.models, list(PEER_KEY), "model(s)")
    if args.repeats < 1:
        ap.error(f"--repeats={args.repeats} must be >= 1")

    env = environment()
    print(f"bench_matrix: {len(cells)} cells x {len(models)} models x {args.repeats} rounds, "
          f"{args.threads} threads, commit {env['boostlib_commit']}", file=sys.stderr, flush=True)
    root = tempfile.mkdtemp(prefix="boostlib-matrix-")
    try:
        results = {c: run_cell(c, models, root, args.repeats, args) for c in cells}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report = dict(config=dict(DEFAULTS, threads=args.threads, repeats=args.repeats,
                              quick=args.quick, cells=cells, models=models),
                  environment=env, cells=results, targets=targets(results))
    print(render(report))
    if args.json:
        write_json(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
