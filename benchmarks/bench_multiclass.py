#!/usr/bin/env python
"""Multiclass benchmark: boostlib against LightGBM, CatBoost, XGBoost and scikit-learn HGB.

This is a benchmark, not a test. It fits every model on the same synthetic multiclass
problem at equal settings, in one process and one run, and prints a Markdown report to
stdout (progress goes to stderr): per model the test multiclass logloss, the test accuracy,
the median fit time and the ``predict_proba`` time; then, per pair, the fit-time ratio and
the relative logloss difference of boostlib to its peer. Run it from the repository root::

    python benchmarks/bench_multiclass.py                          # 30,000 rows, 5 classes
    python benchmarks/bench_multiclass.py --n-samples 3000 --repeats 1        # smoke run
    python benchmarks/bench_multiclass.py --models lightgbm,catboost --json mc.json

Notes
-----
Data: ``sklearn.datasets.make_classification(n_samples, n_features, n_informative=12,
n_classes, random_state=seed)`` (20 features by default), split 80/20 into train and test
(stratified, same seed).

Every model gets ``--n-estimators`` rounds (one tree per class and round), depth
``--depth``, learning rate ``--learning-rate``, L2 = 1, 255 bins, ``--threads`` threads and
no row or column sampling. ``boostlib-depthwise`` is compared with LightGBM
(``num_leaves=64``) and, for reference, XGBoost (``hist``; ``max_bin=256`` counts the
missing bin) and scikit-learn's HGB (``max_leaf_nodes=64``, OpenMP threads limited by
threadpoolctl); ``boostlib-symmetric`` with CatBoost (``SymmetricTree``,
``border_count=254``, no bootstrap, ``random_strength=0``, one Newton leaf step, Plain
boosting). The LightGBM and CatBoost pairs carry a target: boostlib's test logloss at most
3% above the peer's ("ok", else "MISS").

The ``-vector`` models grow one tree per round with a value per class in each leaf
(``multi_strategy="multi_output_tree"``): ``boostlib-symmetric-vector`` against CatBoost
(whose ``MultiClass`` trees are such trees), ``boostlib-depthwise-vector`` against XGBoost's
``multi_strategy="multi_output_tree"`` (``xgboost-vector``); their target is 1%. The cell of
the vector-leaf issue::

    python benchmarks/bench_multiclass.py --n-samples 1250000 --n-features 28 --n-classes 10 \
        --models boostlib-symmetric-vector,catboost,boostlib-depthwise-vector,xgboost-vector

Fit time is ``time.perf_counter()`` around ``fit`` only. ``--repeats R`` fits every model
R times, round-robin (each round fits every model once), so drift of the machine reaches
all models alike; the report gives the median and the min..max range. "other load" (needs
psutil) is the number of CPUs that other processes kept busy during a fit; above 0.25 the
report warns. Accuracy metrics come from the first round (the libraries are deterministic
here; a difference between rounds is flagged).

A model that raises is reported as ``failed: <message>`` and dropped from later rounds,
and the script then exits with status 1; a peer that is not installed is skipped with a
note. Compare ratios from one run, not absolute seconds across runs or machines.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.metadata
import importlib.util
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
from sklearn.datasets import make_classification
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split

from bench_peers import _system_busy_s, write_json  # bench_peers' load measure

MODELS = ("boostlib-depthwise", "boostlib-symmetric", "lightgbm", "catboost", "xgboost",
          "sklearn-hgb", "boostlib-symmetric-vector", "boostlib-depthwise-vector",
          "xgboost-vector")
PEER_MODULES = {"lightgbm": "lightgbm", "catboost": "catboost", "xgboost": "xgboost",
                "sklearn-hgb": "sklearn", "xgboost-vector": "xgboost"}
# (boostlib model, peer, the pair's logloss target in % above the peer, or None)
PAIRS = (("boostlib-depthwise", "lightgbm", 3.0), ("boostlib-symmetric", "catboost", 3.0),
         ("boostlib-depthwise", "xgboost", None), ("boostlib-depthwise", "sklearn-hgb", None),
         # vector leaves, one tree per round: CatBoost's MultiClass trees, XGBoost's
         # multi_output_tree (issue: fit time at most the peer's, logloss at most 1.01x)
         ("boostlib-symmetric-vector", "catboost", 1.0),
         ("boostlib-depthwise-vector", "xgboost-vector", 1.0))
CONTENTION_WARN = 0.25        # "other load" above which a model's timings are flagged
# libraries whose versions the report prints, with their distribution names on PyPI
DISTRIBUTIONS = {"boostlib": ("boostlib",), "numpy": ("numpy",), "scikit-learn": ("scikit-learn",),
                 "threadpoolctl": ("threadpoolctl",), "lightgbm": ("lightgbm",),
                 "catboost": ("catboost",), "xgboost": ("xgboost", "xgboost-cpu")}


def build(name: str, a: argparse.Namespace) -> Tuple[Any, Callable, Callable]:
    """Return (estimator, predict_proba function, thread-limit context factory) for ``name``."""
    proba, limit = (lambda m, X: m.predict_proba(X)), contextlib.nullcontext
    if name.startswith("boostlib-"):
        import boostlib
        model = boostlib.BoostClassifier(early_stopping=False,
            n_estimators=a.n_estimators, learning_rate=a.learning_rate, max_depth=a.depth,
            grow_policy=name.split("-")[1], l2_regularization=1.0, max_bins=255,
            min_samples_leaf=1, min_child_weight=1e-3, n_jobs=a.threads, random_state=0,
            multi_strategy="multi_output_tree" if name.endswith("-vector")
            else "one_output_per_tree")
    elif name == "lightgbm":
        import lightgbm
        model = lightgbm.LGBMClassifier(
            objective="multiclass", n_estimators=a.n_estimators, learning_rate=a.learning_rate,
            max_depth=a.depth, num_leaves=2 ** a.depth, min_child_samples=1,
            min_child_weight=1e-3, reg_lambda=1.0, max_bin=255, subsample=1.0,
            colsample_bytree=1.0, n_jobs=a.threads, verbose=-1)
    elif name == "catboost":
        import catboost
        model = catboost.CatBoostClassifier(
            loss_function="MultiClass", iterations=a.n_estimators, learning_rate=a.learning_rate,
            depth=a.depth, grow_policy="SymmetricTree", border_count=254, bootstrap_type="No",
            random_strength=0, l2_leaf_reg=1.0, score_function="L2",
            leaf_estimation_iterations=1, leaf_estimation_method="Newton",
            boosting_type="Plain", thread_count=a.threads,
            verbose=0, allow_writing_files=False)
        proba = lambda m, X: m.predict_proba(X, thread_count=a.threads)  # noqa: E731
    elif name in ("xgboost", "xgboost-vector"):
        import xgboost
        model = xgboost.XGBClassifier(
            tree_method="hist", objective="multi:softprob", n_estimators=a.n_estimators,
            learning_rate=a.learning_rate, max_depth=a.depth, max_bin=256, reg_lambda=1.0,
            min_child_weight=1e-3, n_jobs=a.threads,
            multi_strategy="multi_output_tree" if name == "xgboost-vector"
            else "one_output_per_tree")
    elif name == "sklearn-hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier
        from threadpoolctl import threadpool_limits
        model = HistGradientBoostingClassifier(
            max_iter=a.n_estimators, learning_rate=a.learning_rate, max_depth=a.depth,
            max_leaf_nodes=2 ** a.depth, min_samples_leaf=1, l2_regularization=1.0,
            max_bins=255, early_stopping=False)
        limit = lambda: threadpool_limits(limits=a.threads, user_api="openmp")  # noqa: E731
    else:
        raise ValueError(f"unknown model {name!r}")
    return model, proba, limit


def _fmt_load(load: Optional[float]) -> str:
    return "n/a" if load is None else f"{load:.2f}"


def run_once(name: str, a: argparse.Namespace, data: Dict[str, np.ndarray]) -> Dict[str, float]:
    """Fit and score ``name`` once; the timers cover ``fit`` and ``predict_proba`` only."""
    model, proba, limit = build(name, a)
    gc.collect()
    with limit():
        busy0, cpu0, t0 = _system_busy_s(), time.process_time(), time.perf_counter()
        model.fit(data["X_train"], data["y_train"])
        fit_s = time.perf_counter() - t0
        own_cpu_s, busy1 = time.process_time() - cpu0, _system_busy_s()
        t0 = time.perf_counter()
        p = np.asarray(proba(model, data["X_test"]))
        predict_s = time.perf_counter() - t0
    if p.shape != (len(data["y_test"]), a.n_classes):
        raise ValueError(f"predict_proba returned shape {p.shape}, expected "
                         f"({len(data['y_test'])}, {a.n_classes})")
    labels = np.arange(a.n_classes)
    other = None if busy0 is None else max(0.0, (busy1 - busy0 - own_cpu_s) / fit_s)
    return dict(fit_s=fit_s, predict_s=predict_s, other_load=other,
                logloss=float(log_loss(data["y_test"], p, labels=labels)),
                accuracy=float(np.mean(labels[p.argmax(axis=1)] == data["y_test"])))


def summarize(runs: List[Dict[str, float]]) -> Dict[str, Any]:
    fits = [r["fit_s"] for r in runs]
    losses = [r["logloss"] for r in runs]
    loads = [r["other_load"] for r in runs if r["other_load"] is not None]
    return dict(fit_s=statistics.median(fits), fit_min=min(fits), fit_max=max(fits),
                predict_s=statistics.median(r["predict_s"] for r in runs),
                logloss=losses[0], accuracy=runs[0]["accuracy"],
                logloss_varies=max(losses) - min(losses) > 1e-12,
                other_load=max(loads) if loads else None,
                contended=bool(loads) and max(loads) > CONTENTION_WARN, runs=runs)


def pairs(results: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    rows = []
    for ours, peer, target in PAIRS:
        if ours not in results or peer not in results:
            continue
        row: Dict[str, Any] = dict(boostlib=ours, peer=peer, target=target)
        a, b = results[ours], results[peer]
        if "fit_s" in a and "fit_s" in b:
            row["fit_ratio"] = a["fit_s"] / b["fit_s"]
            row["contended"] = a["contended"] or b["contended"]
            row["logloss_diff_pct"] = 100.0 * (a["logloss"] - b["logloss"]) / b["logloss"]
            if target is not None:
                row["status"] = "ok" if row["logloss_diff_pct"] <= target else "MISS"
        rows.append(row)
    return rows


def _version(dists: Tuple[str, ...]) -> str:
    for dist in dists:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version(dist)
    return "not installed"


def environment() -> Dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh
                        if line.startswith("model name")), cpu)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return dict(cpu=cpu, cpu_count=os.cpu_count(), python=platform.python_version(),
                versions={lib: _version(d) for lib, d in DISTRIBUTIONS.items()},
                boostlib_commit=commit or None,
                command=" ".join(shlex.quote(x) for x in ["python"] + sys.argv))


def render(cfg: Dict[str, Any], env: Dict[str, Any], results: Dict[str, Dict[str, Any]],
           rows: List[Dict[str, Any]]) -> str:
    lines = [
        f"## Multiclass: {cfg['n_train']:,} train / {cfg['n_test']:,} test rows x "
        f"{cfg['n_features']} features, {cfg['n_classes']} classes",
        "",
        f"Command: `{env['command']}`",
        f"Settings: {cfg['n_estimators']} rounds, depth {cfg['depth']}, learning rate "
        f"{cfg['learning_rate']}, L2 1, 255 bins, no sampling, {cfg['threads']} threads; "
        f"{cfg['repeats']} interleaved repeat(s), data seed {cfg['seed']}.",
        f"Machine: {env['cpu']}, {env['cpu_count']} CPUs.",
        f"Versions: Python {env['python']}, "
        + ", ".join(f"{lib} {ver}" for lib, ver in env["versions"].items())
        + (f" (boostlib commit {env['boostlib_commit']})." if env["boostlib_commit"] else "."),
        "",
        "| model | fit s (median) | fit range s | predict s | logloss | accuracy | other load |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    notes = ["other load = CPUs kept busy by other processes during the fit (the largest over "
             "the repeats; about 0 on a quiet machine, needs psutil)."]
    contended = []
    for name, r in results.items():
        if "fit_s" in r:
            lines.append(f"| {name} | {r['fit_s']:.2f} | {r['fit_min']:.2f}..{r['fit_max']:.2f} "
                         f"| {r['predict_s']:.3f} | {r['logloss']:.5f} | {r['accuracy']:.4f} "
                         f"| {_fmt_load(r['other_load'])} |")
            if r["contended"]:
                contended.append(name)
            if r["logloss_varies"]:
                notes.append(f"- {name}: the test logloss differed between repeats "
                             "(the first repeat's is shown).")
        else:
            notes.append(f"- {name}: {r['status']}")
    if contended:
        notes.append(f"- **WARNING: other processes competed for the CPUs while "
                     f"{', '.join(contended)} fitted (other load > {CONTENTION_WARN}); those "
                     "timings are inflated, rerun on a quiet machine.**")
    lines += [""] + notes
    if rows:
        lines += ["", "| boostlib | peer | fit ratio | logloss diff % | logloss target |",
                  "|---|---|---:|---:|---|"]
        for q in rows:
            if "fit_ratio" in q:
                flag = " (contended)" if q["contended"] else ""
                target = "" if q["target"] is None else f"{q['target']:+.0f}%: "
                lines.append(f"| {q['boostlib']} | {q['peer']} | {q['fit_ratio']:.2f}x{flag} | "
                             f"{q['logloss_diff_pct']:+.2f}% | "
                             f"{target}{q.get('status', '(reference)')} |")
            else:
                lines.append(f"| {q['boostlib']} | {q['peer']} | | | n/a |")
        lines += ["", "fit ratio = boostlib median fit / peer median fit (< 1: boostlib is "
                  "faster). logloss diff % = 100 * (boostlib - peer) / peer (negative: boostlib "
                  "is more accurate); the target is met (ok) at its percentage or below."]
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-samples", type=int, default=30_000, help="rows before the 80/20 split")
    ap.add_argument("--n-classes", type=int, default=5)
    ap.add_argument("--n-features", type=int, default=20)
    ap.add_argument("--n-estimators", type=int, default=200, help="boosting rounds")
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--learning-rate", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3, help="fits per model, round-robin")
    ap.add_argument("--seed", type=int, default=0, help="data and split seed")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated subset of: " + ", ".join(MODELS))
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    a = ap.parse_args(argv)
    names = list(dict.fromkeys(m.strip() for m in a.models.split(",") if m.strip()))
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        ap.error(f"unknown model(s) {unknown}; choose from {list(MODELS)}")
    if a.repeats < 1:
        ap.error("--repeats must be >= 1")

    X, y = make_classification(n_samples=a.n_samples, n_features=a.n_features,
                               n_informative=min(12, a.n_features), n_classes=a.n_classes,
                               random_state=a.seed)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, stratify=y,
                                                        random_state=a.seed)
    data = dict(X_train=X_train, X_test=X_test, y_train=y_train, y_test=y_test)
    cfg = dict(vars(a), n_train=len(y_train), n_test=len(y_test))

    results: Dict[str, Dict[str, Any]] = {}
    runs: Dict[str, List[Dict[str, float]]] = {}
    for name in names:
        module = PEER_MODULES.get(name)
        if module and importlib.util.find_spec(module) is None:
            results[name] = dict(status=f"skipped: {module} is not installed")
            print(f"{name}: skipped ({module} is not installed)", file=sys.stderr)
        else:
            runs[name] = []
    for rep in range(a.repeats):
        for name in [n for n in runs if n not in results]:     # round-robin, skip failures
            try:
                r = run_once(name, a, data)
            except Exception as exc:  # noqa: BLE001 - report and go on with the other models
                message = " ".join(str(exc).split())            # one line, for the table
                results[name] = dict(status=f"failed: {type(exc).__name__}: {message}")
                print(f"[{rep + 1}/{a.repeats}] {name}: {results[name]['status']}",
                      file=sys.stderr, flush=True)
                continue
            runs[name].append(r)
            print(f"[{rep + 1}/{a.repeats}] {name}: fit {r['fit_s']:.2f} s, predict "
                  f"{r['predict_s']:.3f} s, logloss {r['logloss']:.5f}, accuracy "
                  f"{r['accuracy']:.4f}, other load {_fmt_load(r['other_load'])}",
                  file=sys.stderr, flush=True)
    for name in runs:
        if name not in results:
            results[name] = summarize(runs[name])
    results = {n: results[n] for n in names}               # the order asked for
    env, rows = environment(), pairs(results)
    print(render(cfg, env, results, rows))
    if a.json:
        write_json(dict(config=cfg, environment=env, results=results, pairs=rows), a.json)
    return 1 if any(r.get("status", "").startswith("failed") for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
