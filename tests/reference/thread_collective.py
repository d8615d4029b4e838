"""Distributed fits simulated in one process: one thread per worker, a barrier per step.

``ThreadGroup(n)`` makes ``n`` :class:`boostlib.plugin.collective.Collective` objects that
sum across each other exactly as the Dask collective does (in rank order, in place), so the
engine's distributed paths are tested without a cluster; ``run_workers(fn, parts)`` runs
``fn(collective, part)`` on each part in its own thread and returns the results
(``run_group``: with the number of collective rounds).
"""
import threading

import numpy as np

from boostlib.plugin.collective import Collective, CollectiveError


class _Member(Collective):
    def __init__(self, group, rank):
        self._group, self.rank, self.n_workers = group, rank, group.n

    def allreduce(self, array):
        return self._group.reduce(self.rank, array)


class ThreadGroup:
    def __init__(self, n, timeout=60.0):
        self.n = n
        self._parts = [None] * n
        self._barrier = threading.Barrier(n, timeout=timeout)
        self.rounds = 0
        self.members = [_Member(self, r) for r in range(n)]

    def reduce(self, rank, array):
        self._parts[rank] = array.copy()
        try:
            self._barrier.wait()
            shapes = {p.shape for p in self._parts}
            if len(shapes) != 1:
                raise CollectiveError(f"workers reduced arrays of shapes {sorted(shapes)}")
            total = self._parts[0].copy()
            for part in self._parts[1:]:
                total += part
            self._barrier.wait()
        except threading.BrokenBarrierError:
            raise CollectiveError("a worker failed") from None
        if rank == 0:
            self.rounds += 1
        array[...] = total
        return array

    def abort(self):
        self._barrier.abort()


def run_group(fn, parts, timeout=60.0):
    """``([fn(collective, part) for part in parts], rounds)``: each call in its own thread,
    all in one group, and the number of collective rounds they took; the first exception
    (a worker's own error before the others' CollectiveError) is re-raised."""
    group = ThreadGroup(len(parts), timeout)
    results, errors = [None] * len(parts), [None] * len(parts)

    def work(rank):
        try:
            results[rank] = fn(group.members[rank], parts[rank])
        except BaseException as exc:        # noqa: BLE001 - re-raised below
            errors[rank] = exc
            group.abort()

    threads = [threading.Thread(target=work, args=(r,)) for r in range(len(parts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for exc in errors:
        if exc is not None and not isinstance(exc, CollectiveError):
            raise exc
    for exc in errors:
        if exc is not None:
            raise exc
    return results, group.rounds


def run_workers(fn, parts, timeout=60.0):
    """:func:`run_group`'s results alone."""
    return run_group(fn, parts, timeout)[0]


def split_rows(n, n_parts, seed=0):
    """Uneven contiguous row ranges covering ``range(n)`` (every part non-empty)."""
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, n), n_parts - 1, replace=False))
    edges = np.concatenate([[0], cuts, [n]])
    return [np.arange(edges[i], edges[i + 1]) for i in range(n_parts)]
