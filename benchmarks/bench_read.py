"""Time and peak memory of reading a large CSV file: boostlib's reader against pandas and
pyarrow (not a test).

Generates (once; later runs reuse it) a seeded CSV file of ``--rows`` rows (default 500,000,
about 190 MB) and 22 columns: a 0/1 label, 16 floats written with 17 significant digits
(every third float column with 5% missing values, written as ``""``, ``NA``, ``nan``,
``N/A``, ``null``, ``NaN`` or ``na``), an integer count and 4 text columns of 5 to 2,000
levels (2% ``NA``, 1% empty). Then it times, side by side, each reader on that file:

* ``boostlib``: ``boostlib.io.tables.read_table`` (what ``boostlib train`` reads with;
  pyarrow's parser when pyarrow is installed);
* ``boostlib-fallback`` (with ``--fallback``): the reader without pyarrow (the :mod:`csv`
  module); about 20 s and 1.4 GB at the default size;
* ``pandas``: ``pandas.read_csv(path)``;
* ``pandas-same-table``: ``pandas.read_csv(path, na_values=...)`` told the missing-value
  tokens boostlib reads (``boostlib.io.tables.NULL_SPELLINGS``): the same table as
  boostlib's, every float column parsed. Plain ``read_csv`` does not take ``na`` for
  missing, so it leaves the six float columns that hold it as text;
* ``pyarrow``: ``pyarrow.csv.read_csv(path)``.

Each measurement runs in a fresh interpreter, which imports its library first (untimed),
then reads the file once; it reports the time of the read and the peak resident set size
of the process (``ru_maxrss``, which includes the interpreter and the imported libraries:
the idle size after the imports is printed too). The readers take turns, round by round,
``--repeats`` rounds; the table gives the best and the median time and the largest peak of
each, and their ratios to pandas (the median is the steadier on a host whose speed varies). Readers whose library is missing are skipped.

Usage::

    python benchmarks/bench_read.py [--rows 500000] [--repeats 3] [--fallback]
                                    [--data-dir DIR] [--readers boostlib,pandas,...]

The file is kept in ``--data-dir`` (default: ``boostlib-bench-read`` in the temporary
folder), named by its row count and seed; delete it to generate it again.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

import numpy as np

SEED = 0
READERS = ("boostlib", "boostlib-fallback", "pandas", "pandas-same-table", "pyarrow")

#: Run in a fresh interpreter: argv = reader, path. Prints one JSON line.
CHILD = r"""
import json, os, resource, sys, time
reader, path = sys.argv[1], sys.argv[2]
if reader == "boostlib":
    from boostlib.io.tables import read_table
    import pyarrow, pyarrow.csv  # noqa: F401 - imported before timing, like the others
    read = lambda: read_table(path)
elif reader == "boostlib-fallback":
    from boostlib.io.tables import _default_sep, _read_csv_python
    read = lambda: _read_csv_python(path, "auto", _default_sep(path), (), False)
elif reader == "pandas":
    import pandas
    read = lambda: pandas.read_csv(path)
elif reader == "pandas-same-table":
    import pandas
    from boostlib.io.tables import NULL_SPELLINGS
    read = lambda: pandas.read_csv(path, na_values=NULL_SPELLINGS)
else:
    import pyarrow.csv
    read = lambda: pyarrow.csv.read_csv(path)
def peak_kb():  # VmHWM: this process's peak since exec (ru_maxrss may be the parent's)
    try:
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
idle = peak_kb()
start = time.perf_counter()
result = read()
seconds = time.perf_counter() - start
peak = peak_kb()
print(json.dumps({"seconds": seconds, "peak_kb": peak, "idle_kb": idle}))
"""


def make_csv(path: str, n_rows: int, seed: int = SEED) -> None:
    """Write the benchmark's CSV file (see the module docstring)."""
    rng = np.random.default_rng(seed)
    tokens = np.array(["", "NA", "nan", "N/A", "null", "NaN", "na"], dtype=object)
    names: List[str] = ["y"]
    columns = [np.array(["0", "1"], dtype=object)[rng.integers(0, 2, n_rows)]]
    for j in range(16):
        values = rng.standard_normal(n_rows) * 10.0 ** rng.integers(-2, 4)
        text = np.array(list(map(repr, values.tolist())), dtype=object)
        if j % 3 == 0:
            missing = rng.random(n_rows) < 0.05
            text[missing] = tokens[rng.integers(0, len(tokens), int(missing.sum()))]
        names.append(f"x{j}")
        columns.append(text)
    names.append("count")
    columns.append(np.array(list(map(str, rng.poisson(300000, n_rows).tolist())), dtype=object))
    for name, k in (("city", 60), ("color", 8), ("code", 2000), ("grade", 5)):
        levels = np.array([f"{name}-level-{i:04d}" for i in range(k)] + ["NA", ""], dtype=object)
        p = np.r_[rng.dirichlet(np.ones(k)) * 0.97, 0.02, 0.01]
        names.append(name)
        columns.append(levels[rng.choice(k + 2, n_rows, p=p)])
    partial = path + ".partial"
    with open(partial, "w", newline="") as fh:
        fh.write(",".join(names) + "\n")
        for start in range(0, n_rows, 50_000):
            part = [c[start:start + 50_000] for c in columns]
            fh.write("\n".join(map(",".join, zip(*part))) + "\n")
    os.replace(partial, path)


def measure(reader: str, path: str) -> Dict[str, float]:
    """One read in a fresh interpreter: seconds, peak and idle RSS in MB."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", CHILD, reader, path], env=env, check=True,
                         capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return {"seconds": result["seconds"], "peak_mb": result["peak_kb"] * 1024 / 1e6,
            "idle_mb": result["idle_kb"] * 1024 / 1e6}


def available(reader: str) -> bool:
    module = {"pandas": "pandas", "pandas-same-table": "pandas", "pyarrow": "pyarrow",
              "boostlib": "pyarrow"}.get(reader)
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fallback", action="store_true",
                        help="also time boostlib's reader without pyarrow (slow)")
    parser.add_argument("--readers", default="boostlib,pandas,pandas-same-table,pyarrow")
    parser.add_argument("--data-dir", default=os.path.join(tempfile.gettempdir(),
                                                           "boostlib-bench-read"))
    args = parser.parse_args(argv)
    readers = [r for r in args.readers.split(",") if r]
    if args.fallback and "boostlib-fallback" not in readers:
        readers.insert(1, "boostlib-fallback")
    unknown = [r for r in readers if r not in READERS]
    if unknown:
        parser.error(f"unknown readers {unknown}; expected some of {READERS}")
    for reader in [r for r in readers if not available(r)]:
        print(f"skipping {reader}: its library is not installed", file=sys.stderr)
        readers.remove(reader)

    os.makedirs(args.data_dir, exist_ok=True)
    path = os.path.join(args.data_dir, f"read_{args.rows}_seed{SEED}.csv")
    if not os.path.exists(path):
        print(f"writing {path} ...", file=sys.stderr)
        start = time.perf_counter()
        make_csv(path, args.rows)
        print(f"  {time.perf_counter() - start:.1f} s", file=sys.stderr)
    size_mb = os.path.getsize(path) / 1e6
    print(f"{path}: {args.rows} rows x 22 columns, {size_mb:.1f} MB; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", file=sys.stderr)

    runs: Dict[str, List[Dict[str, float]]] = {r: [] for r in readers}
    for round_ in range(args.repeats):
        for reader in readers:
            runs[reader].append(measure(reader, path))
            print(f"round {round_ + 1}: {reader:18s} {runs[reader][-1]['seconds']:7.2f} s "
                  f"{runs[reader][-1]['peak_mb']:7.0f} MB", file=sys.stderr)

    best = {r: min(x["seconds"] for x in runs[r]) for r in readers}
    median = {r: float(np.median([x["seconds"] for x in runs[r]])) for r in readers}
    peak = {r: max(x["peak_mb"] for x in runs[r]) for r in readers}
    idle = {r: max(x["idle_mb"] for x in runs[r]) for r in readers}
    print(f"\nReading {os.path.basename(path)} ({size_mb:.0f} MB), best of {args.repeats} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)\n")
    print("| reader | best (s) | / pandas | median (s) | / pandas | peak RSS (MB) | / pandas "
          "| / file size | RSS after imports (MB) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")

    def ratio(values: Dict[str, float], r: str) -> str:
        return f"{values[r] / values['pandas']:.2f}" if "pandas" in values else "-"

    for r in readers:
        print(f"| {r} | {best[r]:.2f} | {ratio(best, r)} | {median[r]:.2f} | "
              f"{ratio(median, r)} | {peak[r]:.0f} | {ratio(peak, r)} | "
              f"{peak[r] / size_mb:.2f} | {idle[r]:.0f} |")


if __name__ == "__main__":
    main()
