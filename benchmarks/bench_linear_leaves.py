#!/usr/bin/env python
"""Linear leaves against LightGBM's ``linear_tree``: test MSE and fit time at equal settings.

This is a benchmark, not a test (issue 60: on data with linear structure, boostlib's linear
leaves should reach a test loss within 1% of LightGBM ``linear_tree``'s, or better, in at
most 1.5 times its fit time). Every model fits the same matrices in one process, and the
script prints a Markdown table per data set: each model's test MSE, its ratio to LightGBM
``linear_tree``'s, the median fit time and its ratio to LightGBM ``linear_tree``'s. Run it
from the repository root::

    python benchmarks/bench_linear_leaves.py                        # both data sets
    python benchmarks/bench_linear_leaves.py --n-samples 20000 --n-estimators 50 \
        --repeats 1 --splits 1
    python benchmarks/bench_linear_leaves.py --datasets california --splits 10
    python benchmarks/bench_linear_leaves.py --datasets california --linear-lambda 1
    python benchmarks/bench_linear_leaves.py --models boostlib-lossguide-linear,lightgbm-linear

The second command is the smoke run (a minute or two). ``--splits K`` (default 3) repeats
everything on K data sets drawn and split with seeds ``--seed``, ``--seed + 1``, ...; the
table gives the mean test MSE and the range of the per-split MSE ratios. One split's ratio
is not enough for a 1% target: on California it moves by several percent with the seed
(4,128 test rows), and on the generated set most of the difference between two linear
models comes from the test rows within 0.05 of a cut, where the target jumps and where
it matters how close each library's nearest bin border (about 0.01 wide there) happens to
lie to the cut; which library's border is closer changes with the seed.

Progress goes to stderr, the report to stdout. Fit time is ``time.perf_counter()`` around
``fit``, the median over all fits of ``--repeats`` round-robin repeats (every model once per
round) on every split; say whether the host was quiet when you quote it.

Data:

* ``california``: California housing (Pace & Barry 1997) from the shared dataset folder,
  ``california_housing/cal_housing.data`` (``--data-dir``; default ``../shared/datasets``
  next to the repository; the set is skipped with a message when the file is absent). The
  target is the last column, ``medianHouseValue``, divided by 100,000; the features are
  scikit-learn's ``fetch_california_housing`` ones, built from the raw columns:
  ``medianIncome``, ``housingMedianAge``, rooms, bedrooms and people per household,
  ``population``, latitude, longitude. 20,640 rows, split 80/20 at random (``--seed``).
* ``piecewise``: ``--n-samples`` generated rows (default 200,000), split 80/20 the same way:
  10 features ~ N(0, 1); four regions cut by ``x0 > 0.3`` and ``x1 > -0.5``; in each, the
  target is a region constant plus the region's slopes times ``x0, x2, x3, x4`` (constants
  and slopes fixed, the slopes drawn once from U(-2, 2)), plus N(0, 0.5^2) noise; ``x5 ..
  x9`` are noise features.

By default the features are prepared for linear models before either library sees them
(trees are unchanged by it: every step is monotone per feature): California's four
heavy-tailed features (rooms, bedrooms, population, people per household) are replaced by
their logarithms, and then every feature is standardised with the training rows' means and
standard deviations (LightGBM's documentation recommends rescaling for ``linear_tree``; the
slopes' penalty and LightGBM's float32 sums depend on the scale). Without the logarithms a
few test rows far outside their leaves' ranges (people per household up to 1,243: 260
standard deviations out in the test rows of split seed 0) get slopes extrapolated to
squared errors in the hundreds or thousands, and those few rows decide the test MSE of
every linear model, of either library. ``--raw`` passes the features as they are.

Models (``--models``, comma-separated):

* ``boostlib-lossguide-linear``: ``BoostRegressor(grow_policy="lossguide", max_leaves=31,
  max_depth=30, linear_leaves=True, linear_lambda=...)``;
* ``boostlib-lossguide``: the same without linear leaves;
* ``boostlib-depthwise-linear``: ``grow_policy="depthwise"``, ``max_depth=5`` (at most 32
  leaves), linear leaves;
* ``lightgbm-linear``: ``LGBMRegressor(linear_tree=True, num_leaves=31, linear_lambda=...)``,
  the reference of the ratios;
* ``lightgbm``: the same without ``linear_tree``.

Settings, the same for all: ``--n-estimators`` rounds (default 300), learning rate 0.1,
L2 ``--l2`` (default 1; ``l2_regularization`` / ``lambda_l2``), ``--linear-lambda``
(default 0, both libraries' default), at least 20 rows and 1e-3 hessian in a leaf
(``min_samples_leaf`` / ``min_data_in_leaf``, ``min_child_weight`` /
``min_sum_hessian_in_leaf``), 255 bins of at least 3 rows (``min_samples_bin`` /
``min_data_in_bin``), no row or feature sampling, squared error, ``--threads`` threads
(default 2), ``random_state=0``.

What cannot be made equal (LightGBM 4.x, ``src/treelearner/linear_tree_learner.cpp``):

* LightGBM's first tree keeps constant leaves ("the first tree has constant leaf values");
  boostlib fits linear leaves from the first tree on.
* LightGBM's leaf constant is the intercept of the leaf's regression, not penalised by
  ``lambda_l2`` (which then only enters the split gains and the value of rows with a
  missing feature); boostlib keeps the leaf's Newton value ``-G/(H + l2)`` at the leaf's
  hessian-weighted mean point and fits the slopes about it. With ``--l2 0`` the two are the
  same least-squares fit.
* LightGBM reads the raw values as float32 and sums the normal equations (uncentred) in
  float32; boostlib sums them in float64 about a centre per feature. That can matter with
  ``--raw`` (large, uncentred features such as California's population; not measured).
* LightGBM drops slopes of absolute value at most 1e-35; boostlib drops a feature with no
  spread among a leaf's rows. Both leave a leaf constant when it has too few rows for its
  features.
* ``max_depth``: LightGBM's leaf-wise trees have no depth limit (-1); boostlib's is at most
  30. Each library places its bin borders by its own equal-frequency rule, so the borders
  differ slightly (see the note on the generated set above).
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "datasets"
CALIFORNIA = Path("california_housing") / "cal_housing.data"

MODELS = ("boostlib-lossguide-linear", "boostlib-lossguide", "boostlib-depthwise-linear",
          "lightgbm-linear", "lightgbm")
REFERENCE = "lightgbm-linear"
DATASETS = ("california", "piecewise")

Split = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def split(X: np.ndarray, y: np.ndarray, seed: int) -> Split:
    """A fixed random 80/20 split."""
    order = np.random.default_rng(seed).permutation(y.size)
    cut = int(0.8 * y.size)
    tr, te = order[:cut], order[cut:]
    return X[tr], y[tr], X[te], y[te]


def load_california(data_dir: Path, seed: int) -> Split:
    """California housing with scikit-learn's features and target (see the docstring)."""
    a = np.loadtxt(data_dir / CALIFORNIA, delimiter=",")
    lon, lat, age, rooms, bedrooms, population, households, income, value = a.T
    X = np.column_stack([income, age, rooms / households, bedrooms / households, population,
                         population / households, lat, lon])
    return split(X, value / 1e5, seed)


def make_piecewise(n: int, seed: int) -> Split:
    """Generated piecewise-linear regression data (see the docstring)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 10))
    region = 2 * (X[:, 0] > 0.3) + (X[:, 1] > -0.5)
    const = np.array([-1.0, 0.5, 1.5, -0.5])
    slopes = np.random.default_rng(12345).uniform(-2.0, 2.0, size=(4, 4))
    linear = np.einsum("ij,ij->i", X[:, [0, 2, 3, 4]], slopes[region])
    y = const[region] + linear + 0.5 * rng.normal(size=n)
    return split(X, y, seed)


def with_logs(d: Split) -> Split:
    """California with the logarithms of its heavy-tailed features (columns 2 to 5: rooms,
    bedrooms, population and people per household; all positive)."""
    X, y, Xt, yt = (v.copy() for v in d)
    X[:, 2:6], Xt[:, 2:6] = np.log(X[:, 2:6]), np.log(Xt[:, 2:6])
    return X, y, Xt, yt


def standardised(d: Split) -> Split:
    """The features centred and scaled by the training rows' means and deviations."""
    X, y, Xt, yt = d
    mean, std = X.mean(axis=0), X.std(axis=0)
    std[std == 0] = 1.0
    return (X - mean) / std, y, (Xt - mean) / std, yt


def build(name: str, a: argparse.Namespace) -> Any:
    """The unfitted model ``name`` (one of :data:`MODELS`) at the options' settings."""
    linear = name.endswith("-linear")
    if name.startswith("boostlib-"):
        import boostlib
        policy = name.split("-")[1]
        shape = (dict(grow_policy="lossguide", max_leaves=31, max_depth=30)
                 if policy == "lossguide" else dict(grow_policy="depthwise", max_depth=5))
        extra = dict(linear_leaves=True, linear_lambda=a.linear_lambda) if linear else {}
        return boostlib.BoostRegressor(early_stopping=False,
            n_estimators=a.n_estimators, learning_rate=0.1, l2_regularization=a.l2,
            min_samples_leaf=20, min_child_weight=1e-3, max_bins=255, min_samples_bin=3,
            n_jobs=a.threads, random_state=0, **shape, **extra)
    if name.startswith("lightgbm"):
        import lightgbm
        extra = dict(linear_tree=True, linear_lambda=a.linear_lambda) if linear else {}
        return lightgbm.LGBMRegressor(
            n_estimators=a.n_estimators, learning_rate=0.1, num_leaves=31, max_depth=-1,
            reg_lambda=a.l2, min_child_samples=20, min_child_weight=1e-3, max_bin=255,
            min_data_in_bin=3, subsample=1.0, subsample_freq=0, colsample_bytree=1.0,
            n_jobs=a.threads, random_state=0, verbose=-1, **extra)
    raise ValueError(f"unknown model {name!r}")


def run(title: str, load: Callable[[int], Split], names: List[str],
        a: argparse.Namespace) -> None:
    """Fit every model ``a.repeats`` times round-robin on each of ``a.splits`` splits
    (``load(seed)``, seeds ``a.seed``, ``a.seed + 1``, ...) and print the data set's table:
    the test MSE is the mean over the splits, the fit time the median over all fits."""
    fits: Dict[str, List[float]] = {m: [] for m in names}
    mse: Dict[str, List[float]] = {m: [] for m in names}
    for k in range(a.splits):
        X, y, Xt, yt = load(a.seed + k)
        for rep in range(a.repeats):
            for name in names:
                model = build(name, a)
                t0 = time.perf_counter()
                model.fit(X, y)
                fits[name].append(time.perf_counter() - t0)
                err = float(np.mean((np.asarray(model.predict(Xt), dtype=np.float64) - yt)
                                    ** 2))
                if rep == 0:
                    mse[name].append(err)
                print(f"[{title}, split {k + 1}/{a.splits}, {rep + 1}/{a.repeats}] {name}: "
                      f"fit {fits[name][-1]:.2f} s, test MSE {err:.6f}", file=sys.stderr,
                      flush=True)
    ref = REFERENCE if REFERENCE in names else None
    ref_time = statistics.median(fits[ref]) if ref else None
    per_split = a.splits > 1 and ref is not None
    print(f"## {title}: {len(y):,} train / {len(yt):,} test rows x {X.shape[1]} features"
          + (f", mean of {a.splits} splits (seeds {a.seed} to {a.seed + a.splits - 1})"
             if a.splits > 1 else f", split seed {a.seed}") + "\n")
    print("| model | test MSE | MSE / LightGBM linear_tree's | "
          + ("per-split ratios, min to max | " if per_split else "")
          + "fit s (median) | time / LightGBM linear_tree's |")
    print("|---|---:|---:|" + ("---:|" if per_split else "") + "---:|---:|")
    for name in names:
        t = statistics.median(fits[name])
        m = float(np.mean(mse[name]))
        r_mse = "" if ref is None else f"{m / np.mean(mse[ref]):.4f}"
        r_time = "" if ref is None else f"{t / ref_time:.2f}"
        spread = ""
        if per_split:
            r = np.asarray(mse[name]) / np.asarray(mse[ref])
            spread = f" {r.min():.4f} to {r.max():.4f} |"
        print(f"| {name} | {m:.6f} | {r_mse} |{spread} {t:.2f} | {r_time} |")
    print(flush=True)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-samples", type=int, default=200_000,
                    help="rows of the generated piecewise-linear set (train + test)")
    ap.add_argument("--n-estimators", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0, help="seed of the data and the splits")
    ap.add_argument("--splits", type=int, default=3,
                    help="data sets drawn and split with seeds --seed, --seed + 1, ...: the "
                         "test MSE is their mean")
    ap.add_argument("--l2", type=float, default=1.0,
                    help="l2_regularization (boostlib) and lambda_l2 (LightGBM)")
    ap.add_argument("--linear-lambda", type=float, default=0.0)
    ap.add_argument("--raw", action="store_true",
                    help="pass the features as they are (no logarithms, no standardising)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA,
                    help=f"folder of the shared datasets (default: {DEFAULT_DATA})")
    a = ap.parse_args(argv)
    for opt in ("n_samples", "n_estimators", "repeats", "threads", "splits"):
        if getattr(a, opt) < 1:
            ap.error(f"--{opt.replace('_', '-')} must be at least 1, not {getattr(a, opt)}")
    names = [m for m in a.models.split(",") if m]
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        ap.error(f"unknown model(s) {unknown}; choose from {list(MODELS)}")
    sets = [d for d in a.datasets.split(",") if d]
    unknown = sorted(set(sets) - set(DATASETS))
    if unknown:
        ap.error(f"unknown data set(s) {unknown}; choose from {list(DATASETS)}")
    if not importlib.util.find_spec("lightgbm"):
        print("lightgbm is not installed: its models are skipped and no ratios are given",
              file=sys.stderr)
        names = [m for m in names if not m.startswith("lightgbm")]
    print(f"Command: `python {' '.join(sys.argv)}`; {a.n_estimators} rounds, learning rate "
          f"0.1, 31 leaves (depthwise: depth 5), L2 {a.l2:g}, linear_lambda "
          f"{a.linear_lambda:g}, features {'raw' if a.raw else 'prepared'}, "
          f"{a.threads} threads, median fit time of {a.repeats} per split.\n")

    def prepared(d: Split, key: str) -> Split:
        if a.raw:
            return d
        return standardised(with_logs(d) if key == "california" else d)

    loaders: Dict[str, Tuple[str, Callable[[int], Split]]] = {
        "california": ("California housing", lambda seed: prepared(
            load_california(a.data_dir, seed), "california")),
        "piecewise": ("Piecewise-linear (generated)", lambda seed: prepared(
            make_piecewise(a.n_samples, seed), "piecewise")),
    }
    for key in sets:
        title, load = loaders[key]
        if key == "california" and not (a.data_dir / CALIFORNIA).is_file():
            print(f"Skipping {title}: {a.data_dir / CALIFORNIA} not found (pass --data-dir, "
                  "the folder of the shared datasets README).\n", flush=True)
            continue
        run(title, load, names, a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
