"""Distributed training on Dask against one machine and against the peers' Dask training.

W1 data (``bench_peers.make_data``: 28 features) in 8 partitions, 200 trees of depth 6 and
255 bins, side by side in one run, on one ``LocalCluster`` of ``--workers`` workers with one
thread each:

* boostlib trained locally on one thread (``n_jobs=1``), the reference, and LightGBM on
  one thread (the reference of its Dask speed-up);
* ``boostlib.dask`` on the cluster, depthwise and symmetric trees;
* ``lightgbm.dask`` (63 leaves, depth 6) and ``xgboost.dask`` (``hist``, depth 6) on the
  same cluster, when installed.

Prints the fit time, the speed-up over the same library's one-thread fit, the time
against ``lightgbm.dask``, the test logloss, and for
boostlib the time its workers spent in the collective sums. Run::

    python benchmarks/bench_dask.py --n-rows 1000000
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, Dict, List

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_peers import make_data  # noqa: E402


def _logloss(y: np.ndarray, p: np.ndarray) -> float:
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def _timed(fit: Callable[[], Any], repeats: int) -> List[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fit()
        times.append(time.perf_counter() - start)
    return times


class _ActorSum:
    """The design not taken, for comparison: one Dask actor adds every worker's array and
    answers each with the total."""

    def __init__(self, n_workers: int):
        self.n_workers = n_workers
        self.steps: Dict[int, Any] = {}

    async def contribute(self, step: int, rank: int, part: np.ndarray) -> np.ndarray:
        import asyncio
        entry = self.steps.setdefault(step, {"parts": {}, "done": asyncio.Event(), "out": 0})
        entry["parts"][rank] = part
        if len(entry["parts"]) == self.n_workers:
            entry["total"] = sum(entry["parts"][r] for r in range(self.n_workers))
            entry["done"].set()
        await entry["done"].wait()
        entry["out"] += 1
        if entry["out"] == self.n_workers:
            del self.steps[step]
        return entry["total"]


def _time_sums(how: str, rank: int, addresses: List[str], actor: Any, size: int,
               repeats: int) -> float:
    """Median seconds of one sum of ``size`` float64 over the workers, on worker ``rank``."""
    from boostlib.dask.collective import DaskCollective
    array = np.ones(size)
    collective = None if how == "actor" else DaskCollective(
        "bench-" + how + str(size), rank, addresses, 60.0, sockets=how == "sockets")
    times = []
    for step in range(repeats):
        start = time.perf_counter()
        if collective is not None:
            collective.allreduce(array)
        else:
            array = actor.contribute(step, rank, array).result()
        times.append(time.perf_counter() - start)
    if collective is not None:
        collective.close()
    return float(np.median(times))


def measure_sums(client: Any, repeats: int = 200) -> None:
    """The round trip of one sum across the workers: boostlib's collective (direct
    connections, their sockets used by the training thread or Dask messages on the event
    loop) against a Dask actor, for a few numbers, one node's W1 histogram and 16."""
    from boostlib.dask.collective import install
    from boostlib.dask.parts import worker_addresses
    addresses = worker_addresses(client)
    client.run(install, workers=addresses)
    actor = client.submit(_ActorSum, len(addresses), actor=True, workers=[addresses[0]],
                          pure=False).result()
    print("| array | sockets | Dask messages | Dask actor |")
    print("| --- | ---: | ---: | ---: |")
    for label, size in (("2 numbers", 2), ("115 KB", 28 * 256 * 2),
                        ("1.8 MB", 16 * 28 * 256 * 2)):
        row = []
        for how in ("sockets", "messages", "actor"):
            futures = [client.submit(_time_sums, how, r, addresses, actor, size, repeats,
                                     workers=[a], pure=False)
                       for r, a in enumerate(addresses)]
            row.append(max(client.gather(futures)) * 1e3)
        print(f"| {label} | {row[0]:.2f} ms | {row[1]:.2f} ms | {row[2]:.2f} ms |",
              flush=True)


def _warm_up() -> None:
    """Import every library the fits use in a worker process (a one-time cost that would
    otherwise land in the first fit timed)."""
    import importlib
    for name in ("boostlib.dask", "lightgbm", "xgboost"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-rows", type=int, default=1_000_000)
    parser.add_argument("--n-test", type=int, default=100_000)
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated subset of the rows")
    parser.add_argument("--sums", action="store_true",
                        help="only time one sum across the workers (the collective's "
                             "round trip) against a Dask actor")
    parser.add_argument("--no-profile", action="store_true",
                        help="turn off the Dask workers' statistical profiler")
    args = parser.parse_args()

    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    from boostlib import BoostClassifier
    from boostlib.dask import DaskBoostClassifier

    if args.sums:
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=None, memory_limit=0) as cluster, \
                Client(cluster) as client:
            measure_sums(client)
        return
    X, y, _ = make_data(args.n_rows + args.n_test, seed=0)
    X = X.astype(np.float32)
    Xtr, ytr, Xte, yte = X[:args.n_rows], y[:args.n_rows], X[args.n_rows:], y[args.n_rows:]
    chunk = -(-args.n_rows // args.partitions)
    common = dict(n_estimators=args.trees, max_depth=6, learning_rate=0.1, random_state=0)
    only = set(filter(None, args.only.split(",")))
    rows: Dict[str, Dict[str, Any]] = {}

    def record(name: str, times: List[float], proba: np.ndarray, extra: str = "") -> None:
        rows[name] = {"seconds": float(np.median(times)), "logloss": _logloss(yte, proba),
                      "extra": extra}
        print(f"  {name}: {np.median(times):.2f} s, test logloss "
              f"{rows[name]['logloss']:.5f} {extra}", flush=True)

    for policy in ("depthwise", "symmetric"):
        name = f"boostlib local 1 thread, {policy}"
        if only and "local" not in only:
            continue
        model = BoostClassifier(early_stopping=False, grow_policy=policy, n_jobs=1, **common)
        record(name, _timed(lambda: model.fit(Xtr, ytr), args.repeats),
               model.predict_proba(Xte)[:, 1])

    if args.no_profile:
        dask.config.set({"distributed.worker.profile.enabled": False})
    try:
        import lightgbm as lgb
    except ImportError:
        lgb = None
    if lgb is not None and (not only or "lightgbm" in only):
        model = lgb.LGBMClassifier(num_leaves=63, verbose=-1, max_bin=255, n_jobs=1, **common)
        record("lightgbm local 1 thread", _timed(lambda: model.fit(Xtr, ytr), args.repeats),
               model.predict_proba(Xte)[:, 1])

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, memory_limit=0) as cluster, \
            Client(cluster) as client:
        client.run(_warm_up)        # imports in the workers, before any fit is timed
        Xd = da.from_array(Xtr, chunks=(chunk, Xtr.shape[1])).persist()
        yd = da.from_array(ytr, chunks=chunk).persist()
        # one small fit of every library first: the one-time costs of a first fit in a
        # process (imports in the client and the workers) are not timed
        small = 20_000
        Xs = da.from_array(Xtr[:small], chunks=(small // args.partitions, Xtr.shape[1]))
        ys = da.from_array(ytr[:small], chunks=small // args.partitions)
        warm = dict(common, n_estimators=5)
        if not only or "dask" in only:
            DaskBoostClassifier(client=client, grow_policy="depthwise", **warm).fit(Xs, ys)
        for policy in ("depthwise", "symmetric"):
            if only and "dask" not in only:
                continue
            model = DaskBoostClassifier(client=client, grow_policy=policy, **common)
            times = _timed(lambda: model.fit(Xd, yd), args.repeats)
            info = model.dask_info_
            record(f"boostlib.dask {args.workers}x1, {policy}", times,
                   model.to_local().predict_proba(Xte)[:, 1],
                   f"(rows {info['rows']}, setup {info['setup_seconds']:.2f} s, worker fits "
                   f"{info['fit_seconds'][0]:.2f} s, sums: {info['steps']} in "
                   f"{info['seconds']:.2f} s)")
        if lgb is not None and (not only or "lightgbm" in only):
            lgb.DaskLGBMClassifier(client=client, num_leaves=63, verbose=-1, max_bin=255,
                                   **warm).fit(Xs, ys)
            model = lgb.DaskLGBMClassifier(client=client, num_leaves=63, verbose=-1,
                                           max_bin=255, **common)
            times = _timed(lambda: model.fit(Xd, yd), args.repeats)
            record(f"lightgbm.dask {args.workers}x1", times,
                   model.to_local().predict_proba(Xte)[:, 1])
        try:
            import xgboost as xgb
            import xgboost.dask  # noqa: F401
        except ImportError:
            xgb = None
        if xgb is not None and (not only or "xgboost" in only):
            model = xgb.dask.DaskXGBClassifier(tree_method="hist", max_bin=256, **warm)
            model.client = client
            model.fit(Xs, ys)
            model = xgb.dask.DaskXGBClassifier(tree_method="hist", max_bin=256, **common)
            model.client = client
            times = _timed(lambda: model.fit(Xd, yd), args.repeats)
            record(f"xgboost.dask {args.workers}x1", times,
                   model.get_booster().inplace_predict(Xte))

    print(f"\n{args.n_rows} rows x {Xtr.shape[1]} features, {args.trees} trees of depth 6, "
          f"{args.workers} workers x 1 thread, {args.partitions} partitions, median of "
          f"{args.repeats}")
    peer = rows.get(f"lightgbm.dask {args.workers}x1")
    print("| fit | seconds | speed-up over the same library on 1 thread | time vs "
          "lightgbm.dask | test logloss |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, row in rows.items():
        policy = "symmetric" if "symmetric" in name else "depthwise"
        base = (rows.get(f"boostlib local 1 thread, {policy}") if "boostlib" in name
                else rows.get("lightgbm local 1 thread") if "lightgbm" in name else None)
        speed = f"{base['seconds'] / row['seconds']:.2f}x" if base else "-"
        vs_peer = f"{row['seconds'] / peer['seconds']:.2f}x" if peer else "-"
        print(f"| {name} | {row['seconds']:.2f} | {speed} | {vs_peer} | "
              f"{row['logloss']:.5f} |")


if __name__ == "__main__":
    main()
