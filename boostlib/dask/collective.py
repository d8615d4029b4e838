"""The collective of a Dask fit: sums across workers over Dask's own connections.

Before the fit, every worker taking part installs a handler (:func:`install`); at the start
of the fit every pair of workers opens one connection through Dask (``distributed.comm``),
kept for the whole fit. After Dask's handshake message, a plain TCP connection is taken out
of Dask's event loop, and the training thread sends and receives on its socket itself;
other connections (TLS, workers in one process) carry Dask messages on the event loop
(:mod:`boostlib.dask.links`). A sum is one or two exchanges per pair:

* small arrays, and any array with two workers: every worker sends its array to every
  other one and adds all of them in rank order (one exchange: the lowest latency);
* large arrays with more workers: reduce-scatter then all-gather. Worker ``j`` owns slice
  ``j`` of the array: every worker sends slice ``j`` to worker ``j``, which adds them in
  rank order and sends the total back (two exchanges; each worker sends and receives about
  twice the array's size in all, whatever the number of workers).

Every worker adds the same numbers in the same order, so the sums are bit-identical on
every worker and from one run to the next. A worker that fails tells the others, and a
worker that leaves closes its connections: either way every other worker's next sum
raises :class:`~boostlib.plugin.collective.CollectiveError` at once; a worker that stops
answering fails the fit after ``timeout`` seconds.
"""
from __future__ import annotations

import asyncio
import socket
import time
from typing import Any, Dict, List, Tuple, Union

import numpy as np

from ..plugin.collective import Collective, CollectiveError
from .links import (LOOP_MARGIN, READY, MessageLinks, SocketLinks, detach, detachable,
                    run_on_loop, try_on_loop, workers)

#: The handler name every worker of a fit registers (see :func:`install`).
HANDLER = "boostlib_collective"

#: Sums whose all-gather would send more than this many bytes from each worker (the array
#: times the other workers) are reduce-scattered instead (with more than two workers).
SCATTER_BYTES = 1 << 20


class _Inbox:
    """The connections other workers opened to one worker for one fit."""

    def __init__(self) -> None:
        #: rank -> a socket taken from Dask, or a Dask connection
        self.links: Dict[int, Any] = {}
        self.arrived = asyncio.Event()
        self.closed = asyncio.Event()


#: (worker address, fit id) -> the connections that worker accepted for that fit.
_INBOXES: Dict[Tuple[str, str], _Inbox] = {}


def _inbox(address: str, fit: str) -> _Inbox:
    box = _INBOXES.get((address, fit))
    if box is None:
        box = _INBOXES[(address, fit)] = _Inbox()
    return box


def install(dask_worker: Any) -> str:
    """Register the collective's handler on a worker (``client.run(install)``); returns the
    worker's address. The handler takes the socket of a connection another worker opens
    for a fit (``raw=True``: it answers with the ready byte), or keeps the Dask connection
    until that fit ends."""
    address = dask_worker.address

    async def accept(comm: Any, fit: str = "", rank: int = -1, raw: bool = False,
                     **_: Any) -> None:
        box = _inbox(address, fit)
        if raw:
            sock = detach(comm)
            sock.send(READY)                # a fresh connection: one byte never blocks
            box.links[int(rank)] = sock
            box.arrived.set()
            return
        box.links[int(rank)] = comm
        box.arrived.set()
        await box.closed.wait()

    dask_worker.handlers[HANDLER] = accept
    return address


class DaskCollective(Collective):
    """One worker's end of a Dask fit's connections (see the module docstring).

    Parameters
    ----------
    fit : str
        The fit's id (distinguishes connections of fits running at once).
    rank : int
    addresses : list of str
        Every worker's address, by rank.
    timeout : float
        Seconds one sum may wait for the other workers before the fit fails.
    sockets : bool, default=True
        Take the sockets of plain TCP connections (the training thread sends itself); with
        False, every connection carries Dask messages on the event loop (as TLS ones do).
    """

    def __init__(self, fit: str, rank: int, addresses: List[str], timeout: float,
                 sockets: bool = True):
        from distributed import get_worker
        worker = get_worker()
        self.fit = fit
        self.rank = int(rank)
        self.n_workers = len(addresses)
        self._addresses = list(addresses)
        self._timeout = float(timeout)
        self._loop = worker.loop.asyncio_loop
        self._address = worker.address
        #: the worker's security settings for connections it opens (TLS: its context)
        self._connection_args = dict(getattr(worker, "connection_args", None) or {})
        self._sockets = bool(sockets)
        self._links: Union[SocketLinks, MessageLinks, None] = None
        self._failed: str = ""
        #: seconds spent in sums, and their number
        self.seconds = 0.0
        self.steps = 0
        if self.n_workers > 1:
            self._connect()

    # -- connecting ----------------------------------------------------------------------------
    def _connect(self) -> None:
        """Open a connection to every higher rank and wait for every lower one's; take the
        sockets of plain TCP connections (all of them or none: the ends must agree). All of
        it within one timeout: a peer that does not answer by then is named."""
        deadline = time.monotonic() + self._timeout
        links = run_on_loop(self._loop, self._open(deadline), self._timeout + LOOP_MARGIN,
                            self.rank)
        raw = {p for p, link in links.items() if isinstance(link, socket.socket)}
        if raw and len(raw) < len(links):
            raise CollectiveError(f"worker {self.rank}: the workers' connections differ in "
                                  f"kind (plain TCP to workers {sorted(raw)} only); use one "
                                  "protocol for the whole cluster")
        if raw:
            self._links = SocketLinks(self.rank, links, self._timeout, self._addresses)
            self._links.ready([p for p in links if p < self.rank], deadline)
        else:
            self._links = MessageLinks(self.rank, links, self._loop, self._timeout,
                                       self._addresses)

    async def _open(self, deadline: float) -> Dict[int, Any]:
        """The connections to every peer, opened or accepted by ``deadline``
        (``time.monotonic()``)."""
        from distributed.comm import connect
        links: Dict[int, Any] = {}
        for peer in range(self.rank + 1, self.n_workers):
            try:
                comm = await asyncio.wait_for(
                    connect(self._addresses[peer], **self._connection_args), _left(deadline))
                raw = self._sockets and detachable(comm)
                await comm.write({"op": HANDLER, "fit": self.fit, "rank": self.rank,
                                  "raw": raw, "reply": False})
                if raw:
                    # the peer answers once it has taken its end; only then is it safe to
                    # take ours (Dask would otherwise read the peer's first array)
                    ready = bytearray(1)
                    await asyncio.wait_for(comm.stream.read_into(ready), _left(deadline))
            except asyncio.TimeoutError:
                raise self._silent([peer]) from None
            if raw:
                comm = detach(comm)
                comm.send(READY)
            links[peer] = comm
        box = _inbox(self._address, self.fit)
        while len(box.links) < self.rank:
            box.arrived.clear()
            if len(box.links) >= self.rank:
                break
            try:
                await asyncio.wait_for(box.arrived.wait(), _left(deadline))
            except asyncio.TimeoutError:
                raise self._silent(set(range(self.rank)) - set(box.links)) from None
        links.update(box.links)
        return links

    def _silent(self, peers: Any) -> CollectiveError:
        """The error for peers that did not connect within the timeout."""
        return CollectiveError(f"{workers([self.rank], self._addresses)}: "
                               f"{workers(peers, self._addresses)} did not connect within "
                               f"timeout={self._timeout:g} s: stopped answering, or busy")

    # -- the collective ------------------------------------------------------------------------
    def allreduce(self, array: np.ndarray) -> np.ndarray:
        if self.n_workers == 1:
            return array
        if self._failed:
            raise CollectiveError(self._failed)
        start = time.perf_counter()
        in_place = array.flags.c_contiguous     # the sum is then written into ``array``
        flat = (array if in_place else np.ascontiguousarray(array)).reshape(-1)
        step = self.steps
        try:
            if self.n_workers == 2 or flat.nbytes * (self.n_workers - 1) <= SCATTER_BYTES:
                everyone = {p: flat for p in range(self.n_workers) if p != self.rank}
                _add_in_rank_order(self._links.exchange(everyone, everyone, step),
                                   self.rank, flat)
            else:
                self._scatter_sum(flat, step)
        except CollectiveError as exc:
            self._failed = str(exc)
            raise
        if not in_place:
            array[...] = flat.reshape(array.shape)
        self.steps += 1
        self.seconds += time.perf_counter() - start
        return array

    def _scatter_sum(self, flat: np.ndarray, step: int) -> None:
        """Reduce-scatter (this worker adds its slice), then all-gather the slices, into
        ``flat``."""
        edges = np.linspace(0, flat.size, self.n_workers + 1).astype(np.intp)
        piece = [slice(int(edges[j]), int(edges[j + 1])) for j in range(self.n_workers)]
        peers = [p for p in range(self.n_workers) if p != self.rank]
        mine = flat[piece[self.rank]]
        got = self._links.exchange({p: flat[piece[p]] for p in peers},
                                   {p: mine for p in peers}, step)
        _add_in_rank_order(got, self.rank, mine)
        totals = self._links.exchange({p: mine for p in peers},
                                      {p: flat[piece[p]] for p in peers}, step)
        for j, total in totals.items():
            flat[piece[j]] = total

    # -- ending --------------------------------------------------------------------------------
    def fail(self, reason: str) -> None:
        """Tell every other worker the fit failed: their next (or current) sum raises."""
        if self._links is not None:
            self._links.fail(reason)

    def close(self) -> None:
        """Close this fit's connections (every worker calls it when its fit ends)."""
        if self._links is not None:
            self._links.close()

        async def forget() -> None:
            box = _INBOXES.pop((self._address, self.fit), None)
            if box is not None:
                box.closed.set()
        if self.n_workers > 1:
            try_on_loop(self._loop, forget())


def _left(deadline: float) -> float:
    """Seconds until ``deadline`` (``time.monotonic()``), 0 once it has passed."""
    return max(0.0, deadline - time.monotonic())


def _add_in_rank_order(got: Dict[int, np.ndarray], rank: int, own: np.ndarray) -> None:
    """Set ``own`` (worker ``rank``'s term) to the sum of every worker's term, added in rank
    order: ``((t0 + t1) + t2) + ...``. The order is the same on every worker, so the sums
    are bit-identical everywhere (``a + b == b + a`` exactly; the grouping is what
    matters). ``got`` holds the other workers' terms, buffers that may be overwritten."""
    n = len(got) + 1
    if rank == 0:
        for r in range(1, n):
            own += got[r]
        return
    total = got[0]
    for r in range(1, n):
        total += own if r == rank else got[r]
    own[...] = total
