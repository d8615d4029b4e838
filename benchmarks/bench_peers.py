#!/usr/bin/env python
"""Benchmark boostlib against LightGBM, XGBoost, CatBoost and scikit-learn's HGB.

This is a benchmark, not a test: it prints a Markdown table (fit seconds, predict seconds,
peak memory, test logloss and AUC per model) and ratios of boostlib to its peers.

    python benchmarks/bench_peers.py                                   # 1,000,000 x 28, 200k test
    python benchmarks/bench_peers.py --n-train 50000 --n-test 20000    # smoke run
    python benchmarks/bench_peers.py --json results.json               # also write JSON
    python benchmarks/bench_peers.py --suite sampling                  # row samplers, 0.5

How it works
------------
* The parent process generates the data once (deterministic, numpy seed) and saves it as
  ``.npy`` files in a temporary directory.
* Every model runs in its own fresh interpreter (this script again, with ``--single NAME``),
  one after the other, never concurrently.  The child imports the model's library, loads the
  data fully into memory (no memory map), records its resident set size (RSS), then fits and
  predicts.  "peak MB" is the peak RSS during fit + predict_proba minus the RSS after the data
  was loaded, so neither the data arrays nor the interpreter / imported libraries are counted;
  what remains is the library's own working memory (binned copy of the data, histograms,
  gradients, the model, the prediction output, any internal float32 copy...).  On Linux the
  RSS high-water mark is reset just before the fit (``/proc/self/clear_refs``), so the peak
  is exactly that of fit + predict; elsewhere it is ``getrusage(RUSAGE_SELF).ru_maxrss``.
* "other load" = CPUs kept busy by *other* processes while a model ran (machine busy time
  minus the child's CPU time, over wall time); above 0.25 the report warns that those
  timings are inflated (``--retry-contended K`` reruns such models).
* ``--repeats R`` runs the whole model list R times, round by round, and reports each model's
  median fit; a sampling ratio is then the median of the ratios within each round, with their
  range (the host's timing noise, +-10% and more, is larger than many of the differences).
* Peers that are not installed are skipped with a note; they are all optional.

Settings (all models): 200 trees, depth 6, 255 bins, learning rate 0.1, 2 threads, L2 = 1.
boostlib ``grow_policy="depthwise"`` is compared with LightGBM, XGBoost (hist) and HGB;
boostlib ``grow_policy="symmetric"`` with CatBoost at matched settings (plus CatBoost with its
default settings, for reference only).  ``--suite sampling`` runs every library with and
without row sampling at ``--subsample`` (boostlib uniform / GOSS / MVS, LightGBM bagging and
GOSS, XGBoost subsample, CatBoost Bernoulli and MVS) and reports, per library, the sampled /
unsampled fit-time ratio and the change in test logloss.  Its controls, boostlib's unsampled
models fitted on a fixed random half of the rows, give the ratio a sampled fit would reach if
drawing the sample and updating the other rows' scores cost nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

# ----------------------------------------------------------------------------------------------
# Shared settings
# ----------------------------------------------------------------------------------------------
N_FEATURES = 28
NAN_FEATURES = (5, 11)        # features with ~5% missing values (missing completely at random)
NAN_RATE = 0.05
SIGNAL_SCALE = 0.9            # scales the log-odds; sets the difficulty (Bayes logloss ~0.56)

DEFAULTS = dict(n_estimators=200, max_depth=6, learning_rate=0.1, max_bins=255,
                l2=1.0, threads=2, seed=0, subsample=0.5)

RESULT_MARKER = "@@BENCH_RESULT@@ "


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------
def make_data(n: int, seed: int) -> Tuple[np.ndarray, np.ndarray, float]:
    """HIGGS-like binary classification data.

    28 float64 features: correlated Gaussians (0-5), uniforms (6-9), heavy-tailed positive
    "momenta" (10-13), angles (14-15), two discrete features (16-17), six noisy "high-level"
    features derived from the low-level ones (18-23) and four irrelevant features (24-27).
    The log-odds are a sum of smooth nonlinearities, thresholds and pairwise / three-way
    interactions; labels are drawn from Bernoulli(sigmoid(log-odds)), which is the label noise
    (Bayes-optimal test logloss ~0.56, a good GBDT reaches ~0.57).  Features 5 and 11 then get
    ~5% NaN each (after the target was computed from their true values).

    Returns ``(X, y, bayes_logloss)``; ``y`` is float64 in {0, 1}.
    """
    rng = np.random.default_rng(seed)
    X = np.empty((n, N_FEATURES), dtype=np.float64)
    z = rng.standard_normal((n, 6))
    X[:, 0] = z[:, 0]
    X[:, 1] = 0.6 * z[:, 0] + 0.8 * z[:, 1]
    X[:, 2] = z[:, 2]
    X[:, 3] = z[:, 3]
    X[:, 4] = 0.5 * z[:, 3] + np.sqrt(0.75) * z[:, 4]
    X[:, 5] = z[:, 5]
    del z
    X[:, 6:10] = rng.uniform(-2.0, 2.0, (n, 4))
    X[:, 10:14] = rng.lognormal(0.0, 0.7, (n, 4))
    X[:, 14:16] = rng.uniform(-np.pi, np.pi, (n, 2))
    X[:, 16] = rng.integers(0, 10, n)
    X[:, 17] = rng.binomial(3, 0.4, n)
    # invariant mass of two "particles" (true value used in the target, noisy one is a feature)
    mass = np.sqrt(X[:, 10] ** 2 + X[:, 11] ** 2
                   + 2.0 * X[:, 10] * X[:, 11] * np.cos(X[:, 14] - X[:, 15]))
    X[:, 18] = mass + 0.3 * rng.standard_normal(n)
    X[:, 19] = X[:, 0] * X[:, 2] + 0.5 * rng.standard_normal(n)
    X[:, 20] = np.abs(X[:, 6] - X[:, 7]) + 0.3 * rng.standard_normal(n)
    X[:, 21] = X[:, 12] / (1.0 + X[:, 13]) + 0.2 * rng.standard_normal(n)
    X[:, 22] = np.sin(X[:, 3]) * X[:, 5] + 0.4 * rng.standard_normal(n)
    X[:, 23] = X[:, 8] + X[:, 9] + 0.5 * rng.standard_normal(n)
    X[:, 24:26] = rng.standard_normal((n, 2))       # irrelevant
    X[:, 26] = rng.uniform(0.0, 1.0, n)              # irrelevant
    X[:, 27] = rng.lognormal(0.0, 1.0, n)            # irrelevant

    x = X
    f = (1.0 * np.sin(1.5 * x[:, 0])
         + 0.8 * x[:, 1] * x[:, 2]
         + 0.7 * (np.abs(x[:, 3]) - 0.8)
         - 0.6 * x[:, 4] * (x[:, 5] > 0.3)
         + 0.9 * ((x[:, 6] > 0.5) & (x[:, 7] < 0.0))
         - 0.5 * np.cos(x[:, 8] * x[:, 9])
         + 0.8 * np.tanh(mass - 2.0)
         + 0.4 * np.log(x[:, 12]) * np.sign(x[:, 13] - 1.0)
         + 0.25 * (x[:, 16] % 3 == 0)
         - 0.3 * (x[:, 17] >= 2) * x[:, 2]
         + 0.3 * np.sin(x[:, 14] + x[:, 15]) * x[:, 0]
         + 0.15 * x[:, 5])
    del mass
    f = SIGNAL_SCALE * (f - f.mean())
    p = 1.0 / (1.0 + np.exp(-f))
    del f
    y = (rng.uniform(size=n) < p).astype(np.float64)
    bayes = float(-np.mean(p * np.log(p) + (1.0 - p) * np.log1p(-p)))
    del p
    for j in NAN_FEATURES:
        X[rng.uniform(size=n) < NAN_RATE, j] = np.nan
    return X, y, bayes


def half_rows(n: int, seed: int) -> np.ndarray:
    """A fixed random half of ``n`` rows, in row order (the half-rows controls' rows)."""
    return np.sort(np.random.default_rng(seed).permutation(n)[: n // 2])


def write_data(directory: str, n_train: int, n_test: int, seed: int,
               dtype: str = "float64") -> Dict[str, Any]:
    """Generate train (seed) and test (seed + 1) sets and save them as .npy in ``directory``,
    the features as ``dtype`` (every library then reads the same values)."""
    info: Dict[str, Any] = {}
    for part, n, s in (("train", n_train, seed), ("test", n_test, seed + 1)):
        X, y, bayes = make_data(n, s)
        X = X.astype(dtype, copy=False)
        np.save(os.path.join(directory, f"X_{part}.npy"), X)
        np.save(os.path.join(directory, f"y_{part}.npy"), y)
        info[part] = dict(n_rows=n, seed=s, positive_rate=float(y.mean()),
                          nan_rate=float(np.isnan(X).mean()), bayes_logloss=bayes)
        del X, y
    info["n_features"] = N_FEATURES
    info["dtype"] = dtype
    info["nan_features"] = list(NAN_FEATURES)
    return info


# ----------------------------------------------------------------------------------------------
# Models.  Each builder imports its library lazily and returns
# (estimator, predict_proba_function, library version).
# ----------------------------------------------------------------------------------------------
Builder = Callable[[Dict[str, Any]], Tuple[Any, Callable[[Any, np.ndarray], np.ndarray], str]]


def _proba(model, X):
    return model.predict_proba(X)[:, 1]


def build_boostlib(grow_policy: str, sampler: Optional[str] = None) -> Builder:
    def build(cfg):
        import boostlib
        model = boostlib.BoostClassifier(early_stopping=False,
            n_estimators=cfg["n_estimators"], learning_rate=cfg["learning_rate"],
            max_depth=cfg["max_depth"], grow_policy=grow_policy, max_bins=cfg["max_bins"],
            l2_regularization=cfg["l2"], min_samples_leaf=1, min_child_weight=1e-3,
            sampler=sampler, subsample=cfg["subsample"] if sampler else 1.0,
            n_jobs=cfg["threads"], random_state=cfg["seed"])
        return model, _proba, getattr(boostlib, "__version__", "?")
    return build


def build_lightgbm(sampling: Optional[str] = None) -> Builder:
    def build(cfg):
        import lightgbm
        extra: Dict[str, Any] = {}
        if sampling == "bagging":
            extra = dict(subsample=cfg["subsample"], subsample_freq=1)
        elif sampling == "goss":    # boostlib's split of subsample: top 2/3, other 1/3
            extra = dict(data_sample_strategy="goss", top_rate=2 * cfg["subsample"] / 3,
                         other_rate=cfg["subsample"] / 3)
        model = lightgbm.LGBMClassifier(
            n_estimators=cfg["n_estimators"], learning_rate=cfg["learning_rate"],
            max_depth=cfg["max_depth"], num_leaves=2 ** cfg["max_depth"],
            max_bin=cfg["max_bins"], reg_lambda=cfg["l2"], min_child_samples=1,
            min_child_weight=1e-3, n_jobs=cfg["threads"], random_state=cfg["seed"],
            verbose=-1, **extra)
        return model, _proba, lightgbm.__version__
    return build


def build_xgboost(subsample: bool = False) -> Builder:
    def build(cfg):
        import xgboost
        model = xgboost.XGBClassifier(
            n_estimators=cfg["n_estimators"], learning_rate=cfg["learning_rate"],
            max_depth=cfg["max_depth"], tree_method="hist",
            max_bin=cfg["max_bins"] + 1,      # XGBoost's max_bin counts the missing bin too
            reg_lambda=cfg["l2"], min_child_weight=1e-3,
            subsample=cfg["subsample"] if subsample else 1.0,
            n_jobs=cfg["threads"], random_state=cfg["seed"])
        return model, _proba, xgboost.__version__
    return build


def build_hgb(cfg):
    import sklearn
    from sklearn.ensemble import HistGradientBoostingClassifier
    model = HistGradientBoostingClassifier(
        max_iter=cfg["n_estimators"], learning_rate=cfg["learning_rate"],
        max_depth=cfg["max_depth"], max_leaf_nodes=2 ** cfg["max_depth"],
        max_bins=cfg["max_bins"], l2_regularization=cfg["l2"], min_samples_leaf=1,
        early_stopping=False, random_state=cfg["seed"])
    # HGB has no n_jobs: its OpenMP thread count is limited with threadpoolctl in the child
    return model, _proba, sklearn.__version__


def build_catboost(matched: bool, bootstrap: str = "No") -> Builder:
    def build(cfg):
        import catboost
        params = dict(iterations=cfg["n_estimators"], learning_rate=cfg["learning_rate"],
                      depth=cfg["max_depth"], thread_count=cfg["threads"],
                      random_seed=cfg["seed"], verbose=False, allow_writing_files=False)
        if matched:
            params.update(
                grow_policy="SymmetricTree",
                border_count=cfg["max_bins"] - 1,   # + the missing-value border = 255 bins
                bootstrap_type=bootstrap, random_strength=0, l2_leaf_reg=cfg["l2"],
                score_function="L2", leaf_estimation_iterations=1,
                leaf_estimation_method="Newton", boost_from_average=True,
                boosting_type="Plain")               # CatBoost picks Ordered on small data
            if bootstrap != "No":
                params["subsample"] = cfg["subsample"]
        model = catboost.CatBoostClassifier(**params)

        def proba(m, X):
            return m.predict_proba(X, thread_count=cfg["threads"])[:, 1]
        return model, proba, catboost.__version__
    return build


def _n_trees(name: str, model) -> Optional[int]:
    try:
        if name.startswith("boostlib"):
            return int(model.n_trees_)
        if name.startswith("lightgbm"):
            return int(model.booster_.num_trees())
        if name.startswith("xgboost"):
            return int(model.get_booster().num_boosted_rounds())
        if name == "sklearn-hgb":
            return int(model.n_iter_)
        if name.startswith("catboost"):
            return int(model.tree_count_)
    except Exception:  # pragma: no cover - informational only
        pass
    return None


# name -> (label, importable module, builder, note)
MODELS: Dict[str, Tuple[str, str, Builder, str]] = {
    "boostlib-depthwise": ("boostlib depthwise", "boostlib", build_boostlib("depthwise"),
                           "grow_policy='depthwise'"),
    "lightgbm": ("LightGBM", "lightgbm", build_lightgbm(),
                 "max_depth 6, num_leaves 64, min_child_samples 1"),
    "xgboost": ("XGBoost hist", "xgboost", build_xgboost(),
                "tree_method hist, max_bin 256 (incl. missing)"),
    "sklearn-hgb": ("sklearn HGB", "sklearn", build_hgb,
                    "max_leaf_nodes 64, early_stopping off"),
    "boostlib-symmetric": ("boostlib symmetric", "boostlib", build_boostlib("symmetric"),
                           "grow_policy='symmetric'"),
    "catboost-matched": ("CatBoost matched", "catboost", build_catboost(True),
                         "SymmetricTree, 254 borders, no bootstrap, random_strength 0, L2 "
                         "score, 1 Newton step, Plain"),
    "catboost-default": ("CatBoost default", "catboost", build_catboost(False),
                         "defaults except iterations/lr/depth/threads (reference only)"),
    # --suite sampling: the models above with row sampling at --subsample
    "boostlib-symmetric-uniform": ("boostlib symmetric uniform", "boostlib",
                                   build_boostlib("symmetric", "uniform"), "sampler='uniform'"),
    "boostlib-symmetric-goss": ("boostlib symmetric GOSS", "boostlib",
                                build_boostlib("symmetric", "goss"),
                                "sampler='goss' (top 2/3, other 1/3 of subsample; warm-up)"),
    "boostlib-symmetric-mvs": ("boostlib symmetric MVS", "boostlib",
                               build_boostlib("symmetric", "mvs"),
                               "sampler='mvs' (adaptive lambda)"),
    "boostlib-depthwise-uniform": ("boostlib depthwise uniform", "boostlib",
                                   build_boostlib("depthwise", "uniform"), "sampler='uniform'"),
    "boostlib-depthwise-goss": ("boostlib depthwise GOSS", "boostlib",
                                build_boostlib("depthwise", "goss"), "sampler='goss'"),
    "boostlib-depthwise-mvs": ("boostlib depthwise MVS", "boostlib",
                               build_boostlib("depthwise", "mvs"), "sampler='mvs'"),
    # controls: the unsampled model fitted on a fixed random half of the training rows (the
    # rows are chosen before the timer starts): what a sampled fit at 0.5 would cost if
    # drawing the sample and updating the other rows' scores were free
    "boostlib-symmetric-half": ("boostlib symmetric on half the rows", "boostlib",
                                build_boostlib("symmetric"),
                                "control: unsampled, a fixed random half of the rows"),
    "boostlib-depthwise-half": ("boostlib depthwise on half the rows", "boostlib",
                                build_boostlib("depthwise"),
                                "control: unsampled, a fixed random half of the rows"),
    "lightgbm-bagging": ("LightGBM bagging", "lightgbm", build_lightgbm("bagging"),
                         "bagging_fraction=subsample, bagging_freq 1"),
    "lightgbm-goss": ("LightGBM GOSS", "lightgbm", build_lightgbm("goss"),
                      "top_rate 2/3 and other_rate 1/3 of subsample"),
    "xgboost-subsample": ("XGBoost subsample", "xgboost", build_xgboost(True),
                          "subsample (uniform)"),
    "catboost-bernoulli": ("CatBoost matched Bernoulli", "catboost",
                           build_catboost(True, "Bernoulli"), "bootstrap_type Bernoulli"),
    "catboost-mvs": ("CatBoost matched MVS", "catboost", build_catboost(True, "MVS"),
                     "bootstrap_type MVS"),
}

SUITES = {
    "peers": ["boostlib-depthwise", "lightgbm", "xgboost", "sklearn-hgb", "boostlib-symmetric",
              "catboost-matched", "catboost-default"],
    "sampling": ["boostlib-symmetric", "boostlib-symmetric-half", "boostlib-symmetric-uniform",
                 "boostlib-symmetric-goss", "boostlib-symmetric-mvs", "boostlib-depthwise",
                 "boostlib-depthwise-half", "boostlib-depthwise-uniform",
                 "boostlib-depthwise-goss", "boostlib-depthwise-mvs", "lightgbm",
                 "lightgbm-bagging", "lightgbm-goss", "xgboost", "xgboost-subsample",
                 "catboost-matched", "catboost-bernoulli", "catboost-mvs"],
}

# (sampled, unsampled) pairs of the sampling section: what sampling does to each library
SAMPLING_PAIRS = [
    ("boostlib-symmetric-half", "boostlib-symmetric"),
    ("boostlib-symmetric-uniform", "boostlib-symmetric"),
    ("boostlib-symmetric-goss", "boostlib-symmetric"),
    ("boostlib-symmetric-mvs", "boostlib-symmetric"),
    ("boostlib-depthwise-half", "boostlib-depthwise"),
    ("boostlib-depthwise-uniform", "boostlib-depthwise"),
    ("boostlib-depthwise-goss", "boostlib-depthwise"),
    ("boostlib-depthwise-mvs", "boostlib-depthwise"),
    ("lightgbm-bagging", "lightgbm"),
    ("lightgbm-goss", "lightgbm"),
    ("xgboost-subsample", "xgboost"),
    ("catboost-bernoulli", "catboost-matched"),
    ("catboost-mvs", "catboost-matched"),
]

# (numerator, denominator) pairs of the ratio section
RATIO_PAIRS = [
    ("boostlib-depthwise", "lightgbm"),
    ("boostlib-depthwise", "xgboost"),
    ("boostlib-depthwise", "sklearn-hgb"),
    ("boostlib-symmetric", "catboost-matched"),
    ("boostlib-symmetric", "sklearn-hgb"),
]


# ----------------------------------------------------------------------------------------------
# Child: one model in a fresh process
# ----------------------------------------------------------------------------------------------
def _rss_bytes() -> int:
    try:
        import psutil
        return int(psutil.Process().memory_info().rss)
    except ImportError:  # Linux fallback
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _maxrss_bytes() -> int:
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(r) if sys.platform == "darwin" else int(r) * 1024   # Linux reports KiB


def _reset_peak_rss() -> bool:
    """Reset the RSS high-water mark to the current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def run_single(name: str, data_dir: str, cfg: Dict[str, Any]) -> Dict[str, Any]:
    from contextlib import nullcontext
    label, module, builder, note = MODELS[name]
    out: Dict[str, Any] = dict(name=name, label=label, note=note)
    mb = 1024.0 ** 2
    rss_start = _rss_bytes()
    try:
        model, proba, version = builder(cfg)
    except ImportError as exc:
        out["skipped"] = f"{module} is not installed ({exc})"
        return out
    out["version"] = version
    if module == "boostlib":
        out["boostlib_commit"] = _git_commit()
    limit = nullcontext()
    if name == "sklearn-hgb":
        from threadpoolctl import threadpool_limits
        limit = threadpool_limits(limits=cfg["threads"], user_api="openmp")
    rss_import = _rss_bytes()

    X_train = np.load(os.path.join(data_dir, "X_train.npy"))
    y_train = np.load(os.path.join(data_dir, "y_train.npy"))
    X_test = np.load(os.path.join(data_dir, "X_test.npy"))
    y_test = np.load(os.path.join(data_dir, "y_test.npy"))
    if name.endswith("-half"):      # the control
        keep = half_rows(len(y_train), cfg["seed"])
        X_train, y_train = X_train[keep], y_train[keep]
    rss_base = _rss_bytes()
    hwm_reset = _reset_peak_rss()
    maxrss_base = _maxrss_bytes()

    with limit:
        t0 = time.perf_counter()
        c0 = time.process_time()
        model.fit(X_train, y_train)
        fit_s = time.perf_counter() - t0
        fit_cpu = time.process_time() - c0
        t0 = time.perf_counter()
        p = np.asarray(proba(model, X_test), dtype=np.float64)
        predict_s = time.perf_counter() - t0
    peak = _maxrss_bytes()

    from sklearn.metrics import log_loss, roc_auc_score
    out.update(
        fit_s=fit_s, predict_s=predict_s, fit_cpu_s=fit_cpu,
        peak_mb=max(peak - rss_base, 0) / mb,
        logloss=float(log_loss(y_test, np.clip(p, 1e-15, 1 - 1e-15))),
        auc=float(roc_auc_score(y_test, p)),
        n_trees=_n_trees(name, model),
        rss_interpreter_mb=rss_start / mb, rss_after_import_mb=rss_import / mb,
        rss_after_data_mb=rss_base / mb, peak_rss_mb=peak / mb,
        peak_rss_reset=hwm_reset,
        peak_before_fit_exceeded_baseline_mb=max(maxrss_base - rss_base, 0) / mb,
    )
    return out


# ----------------------------------------------------------------------------------------------
# Parent: orchestration and reporting
# ----------------------------------------------------------------------------------------------
def _system_busy_s() -> Optional[float]:
    """CPU seconds all CPUs of the machine spent busy since boot (None without psutil)."""
    try:
        import psutil
    except ImportError:
        return None
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0) - getattr(t, "guest", 0.0) \
        - getattr(t, "guest_nice", 0.0)


def _children_cpu_s() -> float:
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


CONTENTION_WARN = 0.25   # warn when other processes kept > 0.25 CPU busy during a model


def spawn(name: str, data_dir: str, cfg: Dict[str, Any],
          timeout: Optional[float]) -> Dict[str, Any]:
    import importlib.util
    label, module, _, note = MODELS[name]
    if importlib.util.find_spec(module) is None:
        return dict(name=name, label=label, note=note, skipped=f"{module} is not installed")
    cmd = [sys.executable, os.path.abspath(__file__), "--single", name, "--data-dir", data_dir,
           "--n-estimators", str(cfg["n_estimators"]), "--threads", str(cfg["threads"])]
    busy0, child0, t0 = _system_busy_s(), _children_cpu_s(), time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(name=name, label=label, note=note, skipped=f"timed out after {timeout} s")
    wall = time.perf_counter() - t0
    busy1, child1 = _system_busy_s(), _children_cpu_s()
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_MARKER):
            res = json.loads(line[len(RESULT_MARKER):])
            if busy0 is not None and busy1 is not None and wall > 0:
                # CPUs kept busy by *other* processes while this model's process ran
                res["other_cpus_busy"] = max((busy1 - busy0) - (child1 - child0), 0.0) / wall
            return res
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
    return dict(name=name, label=label, note=note,
                skipped=f"failed (exit code {proc.returncode}): " + " | ".join(tail))


def ratios(results: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    rows = []
    for a, b in RATIO_PAIRS:
        ra, rb = results.get(a), results.get(b)
        if not ra or not rb or "skipped" in ra or "skipped" in rb:
            continue
        rows.append(dict(
            numerator=a, denominator=b,
            label=f"{ra['label']} / {rb['label']}",
            fit=ra["fit_s"] / rb["fit_s"],
            predict=ra["predict_s"] / rb["predict_s"],
            memory=ra["peak_mb"] / rb["peak_mb"] if rb["peak_mb"] > 0 else None,
            logloss_diff_pct=100.0 * (ra["logloss"] - rb["logloss"]) / rb["logloss"],
            auc_diff=ra["auc"] - rb["auc"],
        ))
    return rows


def _median_run(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One model's result over its rounds: the round with the median fit time, plus every
    round's fit time (``fit_s_rounds``) when there were several."""
    done = [r for r in runs if "skipped" not in r]
    if len(done) != len(runs):
        return next(r for r in runs if "skipped" in r)
    if len(runs) == 1:
        return runs[0]
    order = sorted(range(len(runs)), key=lambda k: runs[k]["fit_s"])
    out = dict(runs[order[(len(runs) - 1) // 2]])
    out["fit_s_rounds"] = [r["fit_s"] for r in runs]
    return out


def sampling_ratios(results: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """What row sampling does to each library: sampled / unsampled fit time, logloss change.

    With repeated rounds (``fit_s_rounds``), ``fit`` is the median over the rounds of the
    ratio within each round (the two models ran minutes apart, not hours), and ``fit_min`` /
    ``fit_max`` its range.
    """
    rows = []
    for a, b in SAMPLING_PAIRS:
        ra, rb = results.get(a), results.get(b)
        if not ra or not rb or "skipped" in ra or "skipped" in rb:
            continue
        per_round = [x / y for x, y in zip(ra.get("fit_s_rounds", [ra["fit_s"]]),
                                           rb.get("fit_s_rounds", [rb["fit_s"]]))]
        rows.append(dict(sampled=a, unsampled=b, label=ra["label"],
                         fit=float(np.median(per_round)), fit_min=min(per_round),
                         fit_max=max(per_round), rounds=len(per_round),
                         logloss_diff_pct=100.0 * (ra["logloss"] - rb["logloss"])
                         / rb["logloss"]))
    return rows


def _fmt(v: Optional[float], spec: str) -> str:
    return "n/a" if v is None else format(v, spec)


def render(report: Dict[str, Any]) -> str:
    cfg, data, env = report["config"], report["data"], report["environment"]
    lines = [
        f"## boostlib vs peers: {data['train']['n_rows']:,} train x {data['n_features']} "
        f"features, {data['test']['n_rows']:,} test",
        "",
        f"{cfg['n_estimators']} trees, depth {cfg['max_depth']}, {cfg['max_bins']} bins, "
        f"learning rate {cfg['learning_rate']}, L2 {cfg['l2']}, {cfg['threads']} threads. "
        f"Data: {data['dtype']}, {100 * data['train']['nan_rate'] * data['n_features'] / len(data['nan_features']):.1f}% "
        f"NaN in features {data['nan_features']}, Bayes-optimal test logloss "
        f"{data['test']['bayes_logloss']:.4f}.",
        f"Machine: {env['cpu']}, {env['cpu_count']} CPUs, Python {env['python']}.",
        "",
        "| model | version | fit s | predict s | peak MB | logloss | AUC | other load |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    skipped, contended = [], []
    for r in report["results"]:
        if "skipped" in r:
            skipped.append(f"- {r['label']}: skipped, {r['skipped']}")
            continue
        other = r.get("other_cpus_busy")
        if other is not None and other > CONTENTION_WARN:
            contended.append(r["label"])
        lines.append(f"| {r['label']} | {r['version']} | {r['fit_s']:.2f} | "
                     f"{r['predict_s']:.3f} | {r['peak_mb']:.0f} | {r['logloss']:.5f} | "
                     f"{r['auc']:.5f} | {_fmt(other, '.2f')} |")
    lines += ["", "peak MB = peak resident set size during fit + predict_proba minus the RSS "
              "after the data was loaded (data arrays, interpreter and imported libraries "
              "not counted); each model ran alone in its own process.  other load = average "
              "number of CPUs kept busy by other processes on the machine while the model "
              "ran (0 on a quiet machine)."]
    if contended:
        lines += ["", f"**WARNING: other processes competed for the CPUs while "
                  f"{', '.join(contended)} ran (other load > {CONTENTION_WARN}); those "
                  f"timings are inflated - rerun on a quiet machine.**"]
    commits = {r.get("boostlib_commit") for r in report["results"] if "boostlib_commit" in r}
    commits.add(env.get("boostlib_commit"))
    if len(commits) > 1:
        lines += ["", f"**WARNING: the boostlib checkout changed during the run "
                  f"({', '.join(sorted(str(c) for c in commits))}); rerun.**"]
    elif env.get("boostlib_commit"):
        lines += ["", f"boostlib commit {env['boostlib_commit']}."]
    if skipped:
        lines += [""] + skipped
    if report["ratios"]:
        lines += ["", "### Ratios (boostlib / peer; < 1 means boostlib is faster / smaller)", "",
                  "| pair | fit | predict | memory | logloss diff % | AUC diff |",
                  "|---|---:|---:|---:|---:|---:|"]
        for q in report["ratios"]:
            lines.append(f"| {q['label']} | {q['fit']:.2f}x | {q['predict']:.2f}x | "
                         f"{_fmt(q['memory'], '.2f')}x | {q['logloss_diff_pct']:+.2f}% | "
                         f"{q['auc_diff']:+.4f} |")
        lines += ["", "logloss diff % = 100 * (boostlib - peer) / peer (negative: boostlib "
                  "is more accurate).  Timings on shared machines drift by about +-10%; "
                  "compare ratios from one run."]
    if report.get("sampling"):
        lines += ["", f"### Row sampling at subsample={cfg['subsample']} (sampled / unsampled, "
                  "same library)", "",
                  "| sampled model | fit ratio | per-round range | logloss diff % |",
                  "|---|---:|---:|---:|"]
        for q in report["sampling"]:
            spread = (f"{q['fit_min']:.2f}-{q['fit_max']:.2f} ({q['rounds']} rounds)"
                      if q.get("rounds", 1) > 1 else "")
            lines.append(f"| {q['label']} | {q['fit']:.2f}x | {spread} | "
                         f"{q['logloss_diff_pct']:+.2f}% |")
        lines += ["", "fit ratio < 1: sampling made the fit faster (with --repeats: the median "
                  "over the rounds of the ratio within a round); logloss diff % = 100 * "
                  "(sampled - unsampled) / unsampled test logloss."]
    return "\n".join(lines)


def environment() -> Dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return dict(cpu=cpu, cpu_count=os.cpu_count(), python=platform.python_version(),
                platform=platform.platform(), numpy=np.__version__,
                boostlib_commit=_git_commit())


def _git_commit() -> Optional[str]:
    """Short HEAD of the checkout this script lives in, '+dirty' if boostlib/ has changes."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--", "boostlib"],
                               capture_output=True, text=True).stdout.strip()
    except OSError:
        return None
    return (head + ("+dirty" if dirty else "")) if head else None


def write_json(report: Dict[str, Any], path: str) -> None:
    """Write a benchmark's report as indented JSON (the ``--json`` option)."""
    with open(path, "w") as fh:
        json.dump(report, fh, indent=2)
        fh.write("\n")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-train", type=int, default=1_000_000)
    ap.add_argument("--n-test", type=int, default=200_000)
    ap.add_argument("--n-estimators", type=int, default=DEFAULTS["n_estimators"])
    ap.add_argument("--threads", type=int, default=DEFAULTS["threads"])
    ap.add_argument("--seed", type=int, default=DEFAULTS["seed"], help="data seed")
    ap.add_argument("--suite", choices=sorted(SUITES), default="peers",
                    help="default model list: 'peers' (no sampling) or 'sampling' (every "
                         "library with and without row sampling at --subsample)")
    ap.add_argument("--models", default=None,
                    help="comma-separated models (default: the suite's); any of: "
                         + ", ".join(MODELS))
    ap.add_argument("--subsample", type=float, default=DEFAULTS["subsample"],
                    help="row sampling rate of the sampled models")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                    help="dtype of the feature matrices every library is given (float32: "
                         "the W1 memory setting)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--timeout", type=float, default=None, help="per-model timeout, seconds")
    ap.add_argument("--retry-contended", type=int, default=0, metavar="K",
                    help="rerun a model up to K more times when other processes competed for "
                         f"the CPUs while it ran (other load > {CONTENTION_WARN})")
    ap.add_argument("--repeats", type=int, default=1, metavar="R",
                    help="run the model list R times, round by round (every model once per "
                         "round); each model reports its median fit, and sampling ratios the "
                         "median of the within-round ratios")
    ap.add_argument("--single", metavar="NAME", help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    cfg = dict(DEFAULTS, n_estimators=args.n_estimators, threads=args.threads,
               subsample=args.subsample)

    if args.single:
        res = run_single(args.single, args.data_dir, cfg)
        print(RESULT_MARKER + json.dumps(res), flush=True)
        return 0

    names = ([m.strip() for m in args.models.split(",") if m.strip()] if args.models
             else SUITES[args.suite])
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; choose from {list(MODELS)}")

    env = environment()
    tmp = tempfile.mkdtemp(prefix="boostlib-bench-")
    try:
        t0 = time.perf_counter()
        data = write_data(tmp, args.n_train, args.n_test, args.seed, args.dtype)
        print(f"data: {args.n_train:,} train + {args.n_test:,} test rows generated in "
              f"{time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        if args.repeats < 1:
            ap.error(f"--repeats={args.repeats} must be >= 1")
        rounds: Dict[str, List[Dict[str, Any]]] = {name: [] for name in names}
        for name in names * args.repeats:       # round by round
            for attempt in range(args.retry_contended + 1):
                r = spawn(name, tmp, cfg, args.timeout)
                other = r.get("other_cpus_busy")
                if other is None or other <= CONTENTION_WARN or attempt == args.retry_contended:
                    break
                print(f"{name}: other processes kept {other:.2f} CPUs busy; waiting 30 s and "
                      f"running it again", file=sys.stderr, flush=True)
                time.sleep(30)
            r["attempts"] = attempt + 1
            rounds[name].append(r)
            if "skipped" in r:
                print(f"{name}: skipped ({r['skipped']})", file=sys.stderr, flush=True)
            else:
                print(f"{name}: fit {r['fit_s']:.2f} s, predict {r['predict_s']:.3f} s, "
                      f"peak {r['peak_mb']:.0f} MB, logloss {r['logloss']:.5f}, "
                      f"AUC {r['auc']:.5f}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    results = [_median_run(runs) for runs in rounds.values()]
    by_name = {r["name"]: r for r in results}
    report = dict(config=dict(cfg, n_train=args.n_train, n_test=args.n_test,
                              input_dtype=args.dtype),
                  data=data, environment=env, results=results,
                  ratios=ratios(by_name), sampling=sampling_ratios(by_name),
                  memory_note="peak_mb = peak RSS during fit + predict_proba minus RSS after "
                              "the data was loaded; each model in its own process")
    print(render(report))
    if args.json:
        write_json(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
