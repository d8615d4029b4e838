"""Time and memory of binning and training on a sparse bag-of-words matrix (not a test).

Generates a CSR matrix of ``--rows`` x ``--features`` at ``--density`` (default 100,000 x
20,000 at 0.1%: two million stored entries), whose values are small word counts 1..3 and
whose columns have Zipf-like frequencies, and a binary target that depends on a few frequent
columns. Then, in one process and in this order, it measures:

* ``binning: borders``: ``BinMapper().fit(X)`` on the sparse matrix;
* ``binning: binned matrix``: ``BinMapper.transform(X, layout="engine")`` (what training
  keeps: a ``SparseBinned``, each feature's bin of 0.0 and the rows that differ);
* ``fit``: ``BoostClassifier(grow_policy=..., n_estimators=--trees).fit(X, y)`` for each
  policy of ``--grow-policy`` (it bins again, then trains);
* with ``--lightgbm``, LightGBM's ``Dataset.construct()`` and ``lgb.train`` on the same
  CSR matrix, with the same number of trees and a matching tree size.

Memory is the peak *added* resident set size (RSS) of the process during each phase: the
RSS is sampled every ``--sample-ms`` milliseconds by a thread using psutil (so it counts
every allocation, numpy's, the C kernels' and LightGBM's alike; allocations shorter than the
sampling period may be missed), minus the RSS at the start of the phase. Without psutil the
script falls back to tracemalloc (numpy and Python allocations only, not the kernels'
malloc) and says so.

Training keeps the binned matrix sparse, drops the columns no split can use
(``engine/working_features.py``) and builds histograms over bundles of mutually exclusive
features (``engine/bundling.py``), so memory follows the stored values and the number of
bundles, not ``rows * features`` (a dense uint8 copy would be 2 GB at the default size, the
float matrix 16 GB).

Usage::

    python benchmarks/bench_sparse.py [--rows 100000] [--features 20000] [--density 0.001]
                                      [--trees 10] [--threads 2] [--lightgbm]
                                      [--grow-policy depthwise[,symmetric,lossguide]]

A smoke run: ``python benchmarks/bench_sparse.py --rows 10000 --features 2000``. The wide
shape of issue 54 (2,000 rows, a million columns, 40,000 stored values):
``--rows 2000 --features 1000000 --density 0.00002``.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

try:
    import psutil
except ImportError:  # pragma: no cover - psutil is optional
    psutil = None

import scipy.sparse as sp

from boostlib import BoostClassifier
from boostlib.engine.binning import BinMapper


def make_data(n_rows: int, n_features: int, density: float, seed: int
              ) -> Tuple[sp.csr_matrix, np.ndarray]:
    """A bag-of-words-like CSR matrix (counts 1..3, Zipf-like column frequencies) and a 0/1
    target depending on four frequent columns."""
    rng = np.random.default_rng(seed)
    per_row = rng.poisson(density * n_features, size=n_rows)
    rows = np.repeat(np.arange(n_rows, dtype=np.int32), per_row)
    weights = 1.0 / (np.arange(n_features) + 10.0)          # word j has frequency ~ 1/(j+10)
    cols = rng.choice(n_features, size=rows.size, p=weights / weights.sum()).astype(np.int32)
    vals = rng.integers(1, 4, size=rows.size).astype(np.float64)
    X = sp.csr_matrix((vals, (rows, cols)), shape=(n_rows, n_features))
    X.sum_duplicates()
    X.data = np.minimum(X.data, 3.0)                         # a repeated word still counts 1..3
    signal = [min(j, n_features - 1) for j in (0, 3, 7, 12)]
    c = X[:, signal].toarray()
    logit = 1.5 * c[:, 0] - 1.2 * c[:, 1] + 0.8 * c[:, 2] * c[:, 3] - 0.5
    y = (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    return X, y


class PeakMemory:
    """Peak added memory of the process while the ``with`` block runs (bytes), by RSS
    sampling (psutil) or, without psutil, by tracemalloc."""

    def __init__(self, period_s: float):
        self.period_s = period_s
        self.method = "psutil RSS sampling" if psutil is not None else "tracemalloc"
        self.peak_added = 0

    def __enter__(self) -> "PeakMemory":
        gc.collect()
        if psutil is None:
            import tracemalloc
            tracemalloc.start()
            return self
        self._proc = psutil.Process(os.getpid())
        self._base = self._proc.memory_info().rss
        self._peak = self._base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.is_set():
            self._peak = max(self._peak, self._proc.memory_info().rss)
            self._stop.wait(self.period_s)

    def __exit__(self, *exc: Any) -> None:
        if psutil is None:
            import tracemalloc
            self.peak_added = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            return
        self._stop.set()
        self._thread.join()
        self._peak = max(self._peak, self._proc.memory_info().rss)
        self.peak_added = self._peak - self._base


def measure(name: str, fn: Callable[[], Any], period_s: float,
            results: List[Dict[str, Any]]) -> Any:
    """Run ``fn``, record its wall time and peak added memory under ``name``."""
    print(f"running {name} ...", file=sys.stderr, flush=True)
    with PeakMemory(period_s) as mem:
        t0 = time.perf_counter()
        out = fn()
        seconds = time.perf_counter() - t0
    results.append({"phase": name, "seconds": seconds, "peak_added": mem.peak_added,
                    "method": mem.method})
    return out


def _mb(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.1f}"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=20_000)
    ap.add_argument("--density", type=float, default=0.001)
    ap.add_argument("--trees", type=int, default=10)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sample-ms", type=float, default=5.0,
                    help="RSS sampling period in milliseconds (default 5)")
    ap.add_argument("--grow-policy", default="depthwise",
                    help="comma-separated grow policies to fit (default depthwise)")
    ap.add_argument("--lightgbm", action="store_true",
                    help="also measure LightGBM on the same CSR matrix (if installed)")
    args = ap.parse_args(argv)
    period = args.sample_ms / 1000.0

    t0 = time.perf_counter()
    X, y = make_data(args.rows, args.features, args.density, args.seed)
    n, p = X.shape
    print(f"data: {n:,} x {p:,} CSR, {X.nnz:,} stored entries ({X.nnz / (n * p):.4%}), "
          f"CSR size {_mb(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)} MB, "
          f"positives {y.mean():.1%}, generated in {time.perf_counter() - t0:.1f} s")
    print(f"for scale: dense float64 X = {_mb(8.0 * n * p)} MB; one binned uint8 matrix = "
          f"{_mb(1.0 * n * p)} MB (training holds two)")

    results: List[Dict[str, Any]] = []
    mapper = measure("boostlib binning: borders", lambda: BinMapper().fit(X), period, results)
    binned = measure("boostlib binning: binned matrix",
                     lambda: mapper.transform(X, args.threads, "engine"), period, results)
    del binned
    for policy in args.grow_policy.split(","):
        clf = BoostClassifier(early_stopping=False, grow_policy=policy, n_estimators=args.trees,
                              max_depth=args.depth, random_state=0, n_jobs=args.threads)
        measure(f"boostlib fit ({args.trees} {policy} trees, bins included)",
                lambda: clf.fit(X, y), period, results)
        proba = clf.predict_proba(X)[:, 1]
        print(f"boostlib {policy} training accuracy {np.mean((proba > 0.5) == y):.4f}",
              file=sys.stderr)
        del clf

    if args.lightgbm:
        try:
            import lightgbm as lgb
        except ImportError:
            print("LightGBM is not installed: skipped", file=sys.stderr)
        else:
            lparams = {"objective": "binary", "num_leaves": 2 ** args.depth,
                       "max_depth": args.depth, "learning_rate": 0.1, "max_bin": 255,
                       "min_child_samples": 1, "min_child_weight": 1e-3, "lambda_l2": 1.0,
                       "num_threads": args.threads, "verbose": -1, "seed": 0}
            ds = measure("lightgbm binning: Dataset.construct()",
                         lambda: lgb.Dataset(X, y, params=lparams).construct(), period,
                         results)
            del ds
            measure(f"lightgbm fit ({args.trees} trees, bins included)",
                    lambda: lgb.train(lparams, lgb.Dataset(X, y, params=lparams),
                                      num_boost_round=args.trees), period, results)

    print(f"\nmemory: peak added memory by {results[0]['method']}"
          + (f" every {args.sample_ms:g} ms" if psutil is not None else ""))
    print("| phase | seconds | peak added MB |")
    print("|---|---:|---:|")
    for r in results:
        print(f"| {r['phase']} | {r['seconds']:.2f} | {_mb(r['peak_added'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
