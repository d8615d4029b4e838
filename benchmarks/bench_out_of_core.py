"""Training from a folder of Parquet files larger than memory (``Dataset.from_batches``): the
peak resident memory against the size of the binned matrix, and the same model as in memory.

The data is N x 28 float32 (standard normal features, a 0/1 label of a noisy function of
them, as HIGGS has 28 features), written once as Parquet files of ``--file-rows`` rows each
into ``--dir`` (kept for later runs). Each measurement runs in a fresh process:

* **out of core**: ``Dataset.from_batches(parquet_batches(dir), label="y")`` (the scan),
  the binned matrix made (border sample and bin passes), then ``train()`` of ``--trees``
  trees. The peak resident set size (``ru_maxrss``) is read after each stage, with the
  resident anonymous and file-backed memory (``/proc/self/status``), and compared with the
  binned matrix (``n_rows x 28`` bytes); the target of issue 59 is a peak of at most 1.5 times
  the binned matrix while the data is read and binned.
* **in memory** (``--in-memory``): the same files read into one ``pyarrow.Table``, then
  ``Dataset(table)`` binned and trained, measured the same way;
* **equality** (``--check-rows``, default 1M): the first files' rows trained in memory
  (``Dataset(table)`` of ``pyarrow.parquet.read_table``) and from batches; the predictions
  must be equal bit for bit.

    python benchmarks/bench_out_of_core.py                        # 50M rows if the disk allows
    python benchmarks/bench_out_of_core.py --rows 10000000 --trees 100
    python benchmarks/bench_out_of_core.py --rows 2000000 --trees 10 --check-rows 1000000
    python benchmarks/bench_out_of_core.py --rows 10000000 --in-memory   # and the same in memory
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

FEATURES = 28
BYTES_PER_ROW = 180            # 29 float32 columns of random values, as Parquet (168 measured)

_WRITE = r"""
import sys
import numpy as np
import pyarrow as pa, pyarrow.parquet as pq
path, rows, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(seed)
X = rng.standard_normal((rows, 28), dtype=np.float32)
X[rng.random((rows, 28)) < 0.01] = np.nan                   # 1% missing values
z = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2 - np.nan_to_num(X[:, 2]) \
    * np.nan_to_num(X[:, 3]) + rng.standard_normal(rows, dtype=np.float32)
columns = {f"f{j}": X[:, j] for j in range(28)}
columns["y"] = (z > 0.5).astype(np.float32)
pq.write_table(pa.table(columns), path, row_group_size=1 << 17, compression="snappy")
"""

_OUT_OF_CORE = r"""
import json, resource, sys, time
import numpy as np
from boostlib import Dataset, train
from boostlib.io.batches import parquet_batches
from boostlib.engine.random_streams import seed_sequence
from boostlib._kernels._openmp import effective_n_threads

folder, trees, n_jobs, spill = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
n_jobs = None if n_jobs == "None" else int(n_jobs)
spill = None if spill == "None" else spill

def memory():
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    kb = lambda key: int(status.get(key, "0 kB").split()[0]) / 1024
    return {"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_mb": kb("VmRSS"), "anon_mb": kb("RssAnon"), "file_mb": kb("RssFile")}

out = {"start": memory()}
params = {"n_estimators": trees, "random_state": 0, "n_jobs": n_jobs}
t = time.perf_counter()
data = Dataset.from_batches(parquet_batches(folder), label="y", spill=spill)
out["scan_s"] = time.perf_counter() - t
out["scan"] = memory()
t = time.perf_counter()
mapper, bins = data.training_matrix(255, seed_sequence(0), effective_n_threads(n_jobs))
out["bin_s"] = time.perf_counter() - t
out["binned"] = memory()
out["rows"], out["binned_mb"] = data.n_rows, bins.nbytes / 2**20
del mapper, bins
t = time.perf_counter()
model = train(params, data)
out["train_s"] = time.perf_counter() - t
out["trained"] = memory()
out["trees"] = model.n_trees
print(json.dumps(out))
"""

_IN_MEMORY = r"""
import json, resource, sys, time
import pyarrow as pa, pyarrow.parquet as pq
from boostlib import Dataset, train
from boostlib.engine.random_streams import seed_sequence
from boostlib._kernels._openmp import effective_n_threads

files, trees, n_jobs = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
n_jobs = None if n_jobs == "None" else int(n_jobs)

def memory():
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    kb = lambda key: int(status.get(key, "0 kB").split()[0]) / 1024
    return {"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_mb": kb("VmRSS"), "anon_mb": kb("RssAnon"), "file_mb": kb("RssFile")}

out = {"start": memory()}
t = time.perf_counter()
table = pa.concat_tables([pq.read_table(f) for f in files])
y = table.column("y").to_numpy()
data = Dataset(table.drop_columns(["y"]), y)
del table
out["scan_s"], out["scan"] = time.perf_counter() - t, memory()
t = time.perf_counter()
mapper, bins = data.training_matrix(255, seed_sequence(0), effective_n_threads(n_jobs))
out["bin_s"], out["binned"] = time.perf_counter() - t, memory()
out["rows"], out["binned_mb"] = data.n_rows, bins.nbytes / 2**20
del mapper, bins
t = time.perf_counter()
model = train({"n_estimators": trees, "random_state": 0, "n_jobs": n_jobs}, data)
out["train_s"], out["trained"], out["trees"] = time.perf_counter() - t, memory(), model.n_trees
print(json.dumps(out))
"""

_EQUALITY = r"""
import json, sys
import numpy as np
import pyarrow.parquet as pq
from boostlib import Dataset, train
from boostlib.io.batches import parquet_batches

files, trees, n_jobs = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
params = {"n_estimators": trees, "random_state": 0,
          "n_jobs": None if n_jobs == "None" else int(n_jobs)}
table = pq.ParquetFile(files[0]).read() if len(files) == 1 else \
    __import__("pyarrow").concat_tables([pq.read_table(f) for f in files])
y = table.column("y").to_numpy()
X = table.drop_columns(["y"])
in_memory = train(params, Dataset(X, y))
batched = train(params, Dataset.from_batches(parquet_batches(files, batch_rows=50_000),
                                             label="y"))
p, q = in_memory.predict(X, raw=True), batched.predict(X, raw=True)
print(json.dumps({"rows": len(y), "trees": batched.n_trees, "equal": bool(np.array_equal(p, q)),
                  "max_abs_difference": float(np.abs(p - q).max())}))
"""


def _files(folder: str, rows: int, file_rows: int) -> list:
    """The Parquet files of ``rows`` rows (written when absent, one process each)."""
    os.makedirs(folder, exist_ok=True)
    manifest = os.path.join(folder, "_rows.json")
    sizes = [min(file_rows, rows - s) for s in range(0, rows, file_rows)]
    names = [os.path.join(folder, f"part-{k:05d}.parquet") for k in range(len(sizes))]
    if os.path.exists(manifest) and json.load(open(manifest)) == sizes:
        return names
    for leftover in os.listdir(folder):
        if leftover.endswith(".parquet"):
            os.remove(os.path.join(folder, leftover))
    need = rows * BYTES_PER_ROW
    free = shutil.disk_usage(folder).free
    if need > 0.8 * free:
        raise SystemExit(f"{rows} rows need about {need / 2**30:.1f} GiB in {folder}, which has "
                         f"{free / 2**30:.1f} GiB free; pass --rows or --dir")
    start = time.perf_counter()
    for k, (name, n) in enumerate(zip(names, sizes)):
        subprocess.run([sys.executable, "-c", _WRITE, name, str(n), str(k)], check=True)
        print(f"  wrote {name} ({n} rows)", flush=True)
    json.dump(sizes, open(manifest, "w"))
    print(f"wrote {rows} rows in {len(names)} files, "
          f"{sum(os.path.getsize(n) for n in names) / 2**30:.2f} GiB, in "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    return names


def _child(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"the child process failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000_000)
    ap.add_argument("--file-rows", type=int, default=1_000_000)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--n-jobs", default="None", help="threads (default: all usable cores)")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "boostlib_ooc"),
                    help="folder of the Parquet files (default: %(default)s)")
    ap.add_argument("--spill", default="None",
                    help="folder for the binned matrix's memory-mapped file (default: memory)")
    ap.add_argument("--check-rows", type=int, default=1_000_000,
                    help="rows of the in-memory equality check (0: none)")
    ap.add_argument("--check-trees", type=int, default=100)
    ap.add_argument("--skip-main", action="store_true",
                    help="only the equality check")
    ap.add_argument("--in-memory", action="store_true",
                    help="also measure the same fit in memory (a pyarrow Table of the files)")
    args = ap.parse_args()
    folder = os.path.join(args.dir, f"{args.rows}x{FEATURES}")
    files = _files(folder, args.rows, args.file_rows)
    if args.check_rows:
        check = files[:max(1, -(-args.check_rows // args.file_rows))]
        r = _child(_EQUALITY, json.dumps(check), str(args.check_trees), args.n_jobs)
        print(f"equality, {r['rows']} rows, {r['trees']} trees: in memory and from batches "
              f"{'bit-identical' if r['equal'] else 'DIFFER'} (max |difference| "
              f"{r['max_abs_difference']:g})", flush=True)
    if args.skip_main:
        return
    runs = [("out of core", _child(_OUT_OF_CORE, folder, str(args.trees), args.n_jobs,
                                   args.spill),
             ("read and checked (scan)", "sampled and binned"))]
    if args.in_memory:
        runs.append(("in memory", _child(_IN_MEMORY, json.dumps(files), str(args.trees),
                                         args.n_jobs),
                     ("read into a Table", "binned")))
    for name, r, (first, second) in runs:
        binned = r["binned_mb"]
        print(f"{name}: {r['rows']} rows x {FEATURES} features, {r['trees']} trees; binned "
              f"matrix {binned:.0f} MB (times: wall clock on whatever host this ran)")
        print(f"{'stage':28s} {'peak MB':>9s} {'x binned':>9s} {'RSS MB':>8s} "
              f"{'anon MB':>8s} {'file MB':>8s} {'seconds':>8s}")
        for stage, label, seconds in (("start", "imports", None),
                                      ("scan", first, r["scan_s"]),
                                      ("binned", second, r["bin_s"]),
                                      ("trained", "trained", r["train_s"])):
            m = r[stage]
            print(f"{label:28s} {m['peak_mb']:9.0f} {m['peak_mb'] / binned:9.2f} "
                  f"{m['rss_mb']:8.0f} {m['anon_mb']:8.0f} {m['file_mb']:8.0f} "
                  f"{'' if seconds is None else f'{seconds:8.0f}'}")


if __name__ == "__main__":
    main()
