"""The collective of a Dask fit: sums across workers over Dask's own connections.

Before the fit, every worker taking part installs a handler (:func:`install`); at the start
of the fit every pair of workers opens one connection (``distributed.comm``: Dask's TCP or
TLS transport), kept for the whole fit. After Dask's handshake message, an array crosses
it as its raw bytes behind a 32-byte header (kind, step, length, type), and is read into a
buffer kept for the fit.
A sum is one exchange per pair, run on the worker's event loop while the training thread
waits:

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
import struct
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..plugin.collective import Collective, CollectiveError

#: The handler name every worker of a fit registers (see :func:`install`).
HANDLER = "boostlib_collective"

#: The header of an array sent between processes: kind, step, number of bytes, and the
#: array's type (``dtype.num``).
_HEADER = struct.Struct("<qqqq")
_DATA, _FAIL = 0, 1

#: Sums whose all-gather would send more than this many bytes from each worker (the array
#: times the other workers) are reduce-scattered instead (with more than two workers).
SCATTER_BYTES = 1 << 20


class _Inbox:
    """The connections other workers opened to one worker for one fit."""

    def __init__(self) -> None:
        self.comms: Dict[int, Any] = {}
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
    worker's address. The handler keeps a connection another worker opens for a fit until
    that fit ends."""
    address = dask_worker.address

    async def accept(comm: Any, fit: str = "", rank: int = -1, **_: Any) -> None:
        box = _inbox(address, fit)
        box.comms[int(rank)] = comm
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
    """

    def __init__(self, fit: str, rank: int, addresses: List[str], timeout: float):
        from distributed import get_worker
        worker = get_worker()
        self.fit = fit
        self.rank = int(rank)
        self.n_workers = len(addresses)
        self._addresses = list(addresses)
        self._timeout = float(timeout)
        self._loop = worker.loop.asyncio_loop
        self._address = worker.address
        #: workers in one process pass arrays by reference ("inproc://" addresses)
        self._in_process = any(a.startswith("inproc") for a in addresses)
        self._comms: Dict[int, Any] = {}
        #: per peer: the buffer its arrays are read into
        self._buffers: Dict[int, np.ndarray] = {}
        self._failed: Optional[str] = None
        #: seconds spent in sums, and their number
        self.seconds = 0.0
        self.steps = 0
        if self.n_workers > 1:
            self._run(self._connect())

    # -- plumbing ------------------------------------------------------------------------------
    def _run(self, coroutine: Any) -> Any:
        """Run a coroutine on the worker's event loop and wait for it (this thread blocks)."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(self._timeout + 30.0)
        except CollectiveError:
            raise
        except Exception as exc:            # a closed connection, a timeout, ...
            future.cancel()
            raise CollectiveError(f"worker {self.rank}: {self._failed or _describe(exc)}") \
                from exc

    async def _connect(self) -> None:
        """Open a connection to every higher rank and wait for every lower one's."""
        from distributed.comm import connect
        for peer in range(self.rank + 1, self.n_workers):
            comm = await asyncio.wait_for(connect(self._addresses[peer]), self._timeout)
            await comm.write({"op": HANDLER, "fit": self.fit, "rank": self.rank,
                              "reply": False})
            self._comms[peer] = comm
        deadline = time.monotonic() + self._timeout
        box = _inbox(self._address, self.fit)
        while len(box.comms) < self.rank:
            box.arrived.clear()
            if len(box.comms) >= self.rank:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                missing = sorted(set(range(self.rank)) - set(box.comms))
                raise CollectiveError(f"worker {self.rank}: workers {missing} did not connect "
                                      f"within {self._timeout:g} s")
            await asyncio.wait_for(box.arrived.wait(), left)
        self._comms.update(box.comms)

    async def _exchange(self, outgoing: Dict[int, np.ndarray],
                        incoming: Dict[int, np.ndarray], step: int) -> Dict[int, np.ndarray]:
        """Send ``outgoing[peer]`` to every peer and receive from each an array of the size
        and type of ``incoming[peer]``, at once (reading while writing: large messages
        cannot deadlock). The arrays received live in this collective's buffers until the
        next exchange."""
        peers = sorted(outgoing)
        send = self._send_message if self._in_process else self._send_raw
        receive = self._receive_message if self._in_process else self._receive_raw
        results = await asyncio.wait_for(
            asyncio.gather(*(send(p, step, outgoing[p]) for p in peers),
                           *(receive(p, step, incoming[p]) for p in peers)),
            self._timeout)
        return dict(zip(peers, results[len(peers):]))

    # Between processes, an array goes over the connection as its raw bytes behind a
    # fixed header (Dask's message protocol, msgpack and pickle, cost 0.3 ms per message
    # and a copy of every array received); it is read straight into a buffer kept for
    # the fit. Workers in one process hand messages over by reference.
    async def _send_raw(self, peer: int, step: int, data: np.ndarray) -> None:
        stream = self._stream(peer)
        stream.write(_HEADER.pack(_DATA, step, data.nbytes, data.dtype.num))
        if data.nbytes:
            await stream.write(memoryview(data).cast("B"))

    async def _receive_raw(self, peer: int, step: int, like: np.ndarray) -> np.ndarray:
        stream = self._stream(peer)
        head = bytearray(_HEADER.size)
        await stream.read_into(head)
        kind, at, nbytes, type_num = _HEADER.unpack(head)
        if kind == _FAIL:
            reason = bytearray(nbytes)
            if nbytes:
                await stream.read_into(reason)
            self._failed = reason.decode("utf-8", "replace")
            raise CollectiveError(self._failed)
        if at != step:
            raise CollectiveError(f"worker {peer} is at step {at}, worker {self.rank} at "
                                  f"step {step}: they are out of step")
        if nbytes != like.nbytes or type_num != like.dtype.num:
            raise CollectiveError(f"worker {peer} sent {nbytes} bytes (dtype number "
                                  f"{type_num}) at step {step}, worker {self.rank} expected "
                                  f"{like.nbytes} bytes of {like.dtype}: they are out of step")
        buffer = self._buffers.get(peer)
        if buffer is None or buffer.nbytes < nbytes:
            buffer = self._buffers[peer] = np.empty(max(nbytes, 1), dtype=np.uint8)
        if nbytes:
            await stream.read_into(memoryview(buffer[:nbytes]))
        return buffer[:nbytes].view(like.dtype)

    def _stream(self, peer: int) -> Any:
        stream = getattr(self._comms[peer], "stream", None)
        if stream is None:
            raise CollectiveError(f"worker {self.rank}: the connection to worker {peer} "
                                  "is closed")
        return stream

    async def _send_message(self, peer: int, step: int, data: np.ndarray) -> None:
        from distributed.protocol import to_serialize
        # handed over by reference: the buffer changes next
        await self._comms[peer].write({"step": step, "data": to_serialize(data.copy())})

    async def _receive_message(self, peer: int, step: int, like: np.ndarray) -> np.ndarray:
        msg = await self._comms[peer].read()
        if "fail" in msg:
            self._failed = msg["fail"]
            raise CollectiveError(msg["fail"])
        if msg.get("step") != step:
            raise CollectiveError(f"worker {peer} is at step {msg.get('step')}, worker "
                                  f"{self.rank} at step {step}: they are out of step")
        return msg["data"]

    # -- the collective ------------------------------------------------------------------------
    def allreduce(self, array: np.ndarray) -> np.ndarray:
        if self.n_workers == 1:
            return array
        if self._failed is not None:
            raise CollectiveError(self._failed)
        start = time.perf_counter()
        in_place = array.flags.c_contiguous     # the sum is then written into ``array``
        flat = (array if in_place else np.ascontiguousarray(array)).reshape(-1)
        step = self.steps
        if self.n_workers == 2 or flat.nbytes * (self.n_workers - 1) <= SCATTER_BYTES:
            everyone = {p: flat for p in self._comms}
            got = self._run(self._exchange(everyone, everyone, step))
            _add_in_rank_order(got, self.rank, flat)
        else:
            self._run(self._scatter_sum(flat, step))
        if not in_place:
            array[...] = flat.reshape(array.shape)
        self.steps += 1
        self.seconds += time.perf_counter() - start
        return array

    async def _scatter_sum(self, flat: np.ndarray, step: int) -> None:
        """Reduce-scatter (this worker adds its slice), then all-gather the slices, into
        ``flat``."""
        edges = np.linspace(0, flat.size, self.n_workers + 1).astype(np.intp)
        piece = [slice(int(edges[j]), int(edges[j + 1])) for j in range(self.n_workers)]
        mine = flat[piece[self.rank]]
        got = await self._exchange({p: flat[piece[p]] for p in self._comms},
                                   {p: mine for p in self._comms}, step)
        _add_in_rank_order(got, self.rank, mine)
        totals = await self._exchange({p: mine for p in self._comms},
                                      {p: flat[piece[p]] for p in self._comms}, step)
        for j, total in totals.items():
            flat[piece[j]] = total

    # -- ending --------------------------------------------------------------------------------
    def fail(self, reason: str) -> None:
        """Tell every other worker the fit failed: their next (or current) sum raises."""
        if self.n_workers == 1 or not self._comms:
            return

        async def tell() -> None:
            payload = reason.encode("utf-8")
            for peer, comm in self._comms.items():
                try:
                    if self._in_process:
                        await asyncio.wait_for(comm.write({"fail": reason}), 5.0)
                    else:
                        stream = self._stream(peer)
                        stream.write(_HEADER.pack(_FAIL, -1, len(payload), 0))
                        await asyncio.wait_for(stream.write(payload), 5.0)
                except Exception:           # noqa: BLE001 - that worker is gone already
                    pass
        try:
            asyncio.run_coroutine_threadsafe(tell(), self._loop).result(10.0)
        except Exception:                   # noqa: BLE001 - best effort
            pass

    def close(self) -> None:
        """Close this fit's connections (every worker calls it when its fit ends)."""
        if self.n_workers == 1:
            return

        async def close() -> None:
            for peer, comm in self._comms.items():
                if peer > self.rank:        # the ones this worker opened
                    try:
                        await comm.close()
                    except Exception:       # noqa: BLE001 - closed by the other side
                        pass
            box = _INBOXES.pop((self._address, self.fit), None)
            if box is not None:
                box.closed.set()
        try:
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(10.0)
        except Exception:                   # noqa: BLE001 - best effort
            pass


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


def _describe(exc: BaseException) -> str:
    name = type(exc).__name__
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return f"a sum timed out ({name}): another worker stopped answering"
    return f"a connection to another worker failed ({name}: {exc})"
