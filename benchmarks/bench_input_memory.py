"""Memory a fit adds over its input, for the same data as a NumPy array and as other
tables (issue 56: a polars or Arrow table should add no more than the array does).

Each form runs in its own process: the data is built, the resident set size noted, one fit
run, and the peak resident set size read (``ru_maxrss``); "added" is peak minus the size
before the fit. The table is built from the array, which is then dropped, so the process
holds one copy of the data when the fit starts.

    python benchmarks/bench_input_memory.py                    # 1M x 28 float32
    python benchmarks/bench_input_memory.py --rows 200000 --forms numpy polars
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

FORMS = ("numpy", "polars", "pyarrow", "pandas")

_CHILD = r"""
import gc, json, resource, sys
import numpy as np
rows, cols, form, trees = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rng = np.random.default_rng(0)
X = rng.normal(size=(rows, cols)).astype(np.float32)
y = X[:, 0] + X[:, 1] ** 2 + rng.normal(size=rows).astype(np.float32)
if form == "polars":
    import polars as pl
    X = pl.DataFrame(X, schema=[f"f{j}" for j in range(cols)])
elif form == "pyarrow":
    import pyarrow as pa
    X = pa.table({f"f{j}": X[:, j].copy() for j in range(cols)})
elif form == "pandas":
    import pandas as pd
    X = pd.DataFrame(X, columns=[f"f{j}" for j in range(cols)])
import boostlib
gc.collect()
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize()
before = rss()
boostlib.BoostRegressor(n_estimators=trees, early_stopping=False, random_state=0,
                        n_jobs=2).fit(X, y)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"form": form, "before_mb": before / 2**20, "peak_mb": peak / 2**20,
                  "added_mb": (peak - before) / 2**20}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--cols", type=int, default=28)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--forms", nargs="+", default=list(FORMS), choices=FORMS)
    args = ap.parse_args()
    print(f"{args.rows} x {args.cols} float32, {args.trees} trees of depth 6")
    print(f"{'form':10s} {'before MB':>10s} {'peak MB':>10s} {'added MB':>10s} "
          f"{'vs numpy':>9s}")
    base = None
    for form in args.forms:
        out = subprocess.run([sys.executable, "-c", _CHILD, str(args.rows), str(args.cols),
                              form, str(args.trees)], capture_output=True, text=True)
        if out.returncode:
            print(f"{form:10s} failed: {out.stderr.strip().splitlines()[-1]}")
            continue
        r = json.loads(out.stdout)
        base = r["added_mb"] if form == "numpy" else base
        ratio = f"{r['added_mb'] / base:9.2f}" if base else " " * 9
        print(f"{form:10s} {r['before_mb']:10.0f} {r['peak_mb']:10.0f} {r['added_mb']:10.0f} "
              f"{ratio}")


if __name__ == "__main__":
    main()
