"""How the workers of a Dask fit send arrays to each other once connected: the two
transports of :class:`~boostlib.dask.collective.DaskCollective`.

* :class:`SocketLinks`, over Dask's plain TCP connections: after Dask's handshake, each end
  takes the connection's socket out of Dask's event loop, and the training thread itself
  sends and receives on it. An array crosses as its raw bytes behind a 32-byte header
  (kind, step, length, type), read straight into a buffer kept for the fit. A sum wakes
  no other thread in either process (``docs/dask.md`` measures both transports).
* :class:`MessageLinks`, over any other connection (TLS, workers in one process): arrays go
  as Dask messages, on the worker's event loop, while the training thread waits.

Both raise :class:`~boostlib.plugin.collective.CollectiveError` when a peer fails, leaves
(its connection closes) or does not answer within the timeout.
"""
from __future__ import annotations

import asyncio
import select
import socket
import struct
import time
from typing import Any, Dict, Iterable, List, Optional, Sequence

import numpy as np

from ..plugin.checks import attributed
from ..plugin.collective import CollectiveError

#: The header of an array sent over a socket: kind, step, number of bytes, and the array's
#: type (``dtype.num``).
HEADER = struct.Struct("<qqqq")
DATA, FAIL = 0, 1

#: The byte each end of a connection sends once it has taken the socket from Dask: nothing
#: else crosses before it, so Dask's event loop never reads (and keeps) the fit's bytes.
READY = b"R"

#: Whether sockets send several buffers in one call (not on Windows).
_SENDMSG = hasattr(socket.socket, "sendmsg")

#: Seconds the training thread waits past the timeout for the worker's event loop to report
#: (a backstop: the loop's own timers end a wait at the timeout).
LOOP_MARGIN = 5.0


def workers(ranks: Iterable[int], addresses: Sequence[str]) -> str:
    """Words naming workers by rank and address: ``worker 1 (tcp://10.0.0.2:4001)``."""
    ranks = sorted(ranks)
    listed = ", ".join(f"{r} ({addresses[r]})" for r in ranks)
    return f"worker{'s' if len(ranks) > 1 else ''} {listed}"


class _Links:
    """What both transports say when a peer stops answering or its connection closes.

    These errors name the workers and what happened to them, so the plugin whose sum was
    under way is not blamed for them.
    """

    rank: int
    addresses: Sequence[str]
    timeout: float

    def silent(self, peers: Iterable[int]) -> CollectiveError:
        """The error for peers that did not answer within the timeout."""
        return attributed(CollectiveError(
            f"{workers([self.rank], self.addresses)}: {workers(peers, self.addresses)} "
            f"stopped answering: no reply within timeout={self.timeout:g} s"))

    def lost(self, peer: int, exc: Optional[BaseException]) -> CollectiveError:
        """The error for a peer whose connection closed."""
        how = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
        return attributed(CollectiveError(
            f"{workers([self.rank], self.addresses)}: the connection to "
            f"{workers([peer], self.addresses)} closed during the fit{how}: it failed or left "
            "the cluster"))


def detachable(comm: Any) -> bool:
    """Whether ``comm`` is a plain TCP connection whose socket the training thread can use
    (not TLS, whose bytes need the encryption layer, and not an in-process queue)."""
    stream = getattr(comm, "stream", None)
    sock = getattr(stream, "socket", None)
    if sock is None:
        return False
    import ssl
    return not isinstance(sock, ssl.SSLSocket) and sock.type == socket.SOCK_STREAM


def detach(comm: Any) -> socket.socket:
    """Take a TCP connection out of Dask's hands (call on the worker's event loop): a
    non-blocking socket on the same connection, which Dask no longer reads or closes."""
    stream = comm.stream
    if getattr(stream, "_read_buffer_size", 0):
        raise CollectiveError("Dask had read bytes past the handshake of a collective "
                              "connection; the two ends are out of step")
    sock = stream.socket.dup()
    comm.abort()            # closes Dask's descriptor only: the connection stays open
    sock.setblocking(False)
    return sock


class _Outgoing:
    """An array (behind its header) on its way to one peer."""

    def __init__(self, header: bytes, data: np.ndarray):
        self.parts: List[memoryview] = [memoryview(header)]
        if data.nbytes:
            self.parts.append(memoryview(data).cast("B"))

    def send(self, sock: socket.socket) -> None:
        """Send what the socket takes now."""
        sent = sock.sendmsg(self.parts) if _SENDMSG else sock.send(self.parts[0])
        while sent and self.parts:
            head = self.parts[0]
            if sent >= head.nbytes:
                sent -= head.nbytes
                self.parts.pop(0)
            else:
                self.parts[0] = head[sent:]
                sent = 0

    @property
    def done(self) -> bool:
        return not self.parts


class _Incoming:
    """An array on its way from one peer, read into ``buffer``."""

    def __init__(self, buffer: np.ndarray, like: np.ndarray):
        self.like = like
        self.buffer = buffer
        self.head = bytearray(HEADER.size)
        self.got = 0
        self.header: Optional[tuple] = None
        self.reason: Optional[bytearray] = None

    def target(self) -> memoryview:
        """Where the next bytes go."""
        if self.header is None:
            return memoryview(self.head)[self.got:]
        if self.reason is not None:
            return memoryview(self.reason)[self.got:]
        return memoryview(self.buffer)[self.got:self.like.nbytes]

    def advance(self, n: int, peer: int, rank: int, step: int) -> None:
        """Account for ``n`` bytes read; checks the header once it is whole."""
        self.got += n
        if self.header is None and self.got == HEADER.size:
            self.header = kind, at, nbytes, type_num = HEADER.unpack(self.head)
            self.got = 0
            if kind == FAIL:
                self.reason = bytearray(nbytes)
            elif at != step:
                raise CollectiveError(f"worker {peer} is at step {at}, worker {rank} at "
                                      f"step {step}: they are out of step")
            elif nbytes != self.like.nbytes or type_num != self.like.dtype.num:
                raise CollectiveError(
                    f"worker {peer} sent {nbytes} bytes (dtype number {type_num}) at step "
                    f"{step}, worker {rank} expected {self.like.nbytes} bytes of "
                    f"{self.like.dtype}: they are out of step")
        if self.reason is not None and self.got == len(self.reason):
            raise CollectiveError(self.reason.decode("utf-8", "replace"))

    @property
    def done(self) -> bool:
        return (self.header is not None and self.reason is None
                and self.got == self.like.nbytes)


class SocketLinks(_Links):
    """The sockets of one worker to its peers, used by the training thread.

    Parameters
    ----------
    rank : int
    socks : dict of int to socket.socket
        Peer rank -> non-blocking socket (from :func:`detach`).
    timeout : float
        Seconds an exchange may wait for the peers before it fails.
    addresses : sequence of str
        Every worker's address, by rank (for the errors).
    """

    def __init__(self, rank: int, socks: Dict[int, socket.socket], timeout: float,
                 addresses: Sequence[str]):
        self.rank = rank
        self.socks = dict(socks)
        self.timeout = timeout
        self.addresses = addresses
        self._buffers: Dict[int, np.ndarray] = {}

    def ready(self, peers: List[int], deadline: float) -> None:
        """Wait until ``deadline`` (``time.monotonic()``) at most for the :data:`READY` byte
        of each of ``peers``: each has taken its end of the connection from Dask, so this
        worker may send."""
        for peer in peers:
            got = bytearray(1)
            self._receive_into(peer, memoryview(got), deadline)
            if bytes(got) != READY:
                raise CollectiveError(f"worker {self.rank}: worker {peer} began the fit "
                                      f"with {bytes(got)!r}, not the ready byte")

    def _receive_into(self, peer: int, view: memoryview, deadline: float) -> None:
        got = 0
        while got < view.nbytes:
            self._wait([peer], [], deadline)
            got += self._recv(peer, view[got:])

    def exchange(self, outgoing: Dict[int, np.ndarray], incoming: Dict[int, np.ndarray],
                 step: int) -> Dict[int, np.ndarray]:
        """Send ``outgoing[peer]`` to every peer and receive from each an array of the size
        and type of ``incoming[peer]``, both at once (large arrays cannot deadlock). The
        arrays received live in this object's buffers until the next exchange."""
        sends = {p: _Outgoing(HEADER.pack(DATA, step, a.nbytes, a.dtype.num), a)
                 for p, a in outgoing.items()}
        receives = {p: _Incoming(self._buffer(p, like.nbytes), like)
                    for p, like in incoming.items()}
        deadline = time.monotonic() + self.timeout
        while True:
            for p, out in sends.items():
                if not out.done:
                    try:
                        out.send(self.socks[p])
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError as exc:
                        raise self.lost(p, exc) from exc
            for p, into in receives.items():
                while not into.done:
                    try:
                        n = self._recv(p, into.target())
                    except (BlockingIOError, InterruptedError):
                        break
                    into.advance(n, p, self.rank, step)
            reading = [p for p, into in receives.items() if not into.done]
            writing = [p for p, out in sends.items() if not out.done]
            if not reading and not writing:
                break
            self._wait(reading, writing, deadline)
        return {p: self._buffers[p][:like.nbytes].view(like.dtype)
                for p, like in incoming.items()}

    def _buffer(self, peer: int, nbytes: int) -> np.ndarray:
        buffer = self._buffers.get(peer)
        if buffer is None or buffer.nbytes < nbytes:
            buffer = self._buffers[peer] = np.empty(max(nbytes, 1), dtype=np.uint8)
        return buffer

    def _recv(self, peer: int, view: memoryview) -> int:
        try:
            n = self.socks[peer].recv_into(view)
        except (BlockingIOError, InterruptedError):
            raise
        except OSError as exc:
            raise self.lost(peer, exc) from exc
        if n == 0:
            raise self.lost(peer, None)
        return n

    def _wait(self, reading: List[int], writing: List[int], deadline: float) -> None:
        """Block (without the GIL) until a socket can go on, or fail at ``deadline``."""
        left = deadline - time.monotonic()
        if left > 0:
            r, w, _ = select.select([self.socks[p] for p in reading],
                                    [self.socks[p] for p in writing], [], left)
            if r or w:
                return
        raise self.silent(set(reading) | set(writing))

    def fail(self, reason: str) -> None:
        """Tell every peer the fit failed (best effort): their next read raises."""
        payload = reason.encode("utf-8")
        for peer, sock in self.socks.items():
            try:
                out = _Outgoing(HEADER.pack(FAIL, -1, len(payload), 0),
                                np.frombuffer(payload, dtype=np.uint8))
                deadline = time.monotonic() + 5.0
                while not out.done and time.monotonic() < deadline:
                    try:
                        out.send(sock)
                    except (BlockingIOError, InterruptedError):
                        select.select([], [sock], [], 0.1)
            except OSError:                 # that worker is gone already
                pass

    def close(self) -> None:
        for sock in self.socks.values():
            try:
                sock.close()
            except OSError:
                pass


class MessageLinks(_Links):
    """Dask connections of one worker to its peers, used on the worker's event loop.

    Parameters
    ----------
    rank : int
    comms : dict of int to distributed.comm.Comm
    loop : asyncio.AbstractEventLoop
        The worker's event loop.
    timeout : float
    addresses : sequence of str
        Every worker's address, by rank (for the errors).
    """

    def __init__(self, rank: int, comms: Dict[int, Any], loop: Any, timeout: float,
                 addresses: Sequence[str]):
        self.rank = rank
        self.comms = dict(comms)
        self.loop = loop
        self.timeout = timeout
        self.addresses = addresses

    def exchange(self, outgoing: Dict[int, np.ndarray], incoming: Dict[int, np.ndarray],
                 step: int) -> Dict[int, np.ndarray]:
        """As :meth:`SocketLinks.exchange`."""
        async def both() -> Dict[int, np.ndarray]:
            peers = sorted(outgoing)
            sends = {p: asyncio.ensure_future(self._send(p, step, outgoing[p])) for p in peers}
            receives = {p: asyncio.ensure_future(self._receive(p, step)) for p in peers}
            done, pending = await asyncio.wait([*sends.values(), *receives.values()],
                                               timeout=self.timeout,
                                               return_when=asyncio.FIRST_EXCEPTION)
            for task in pending:
                task.cancel()
            for task in done:
                if task.exception() is not None:
                    raise task.exception()
            if pending:
                raise self.silent(p for p in peers
                                  if sends[p] in pending or receives[p] in pending)
            return {p: task.result() for p, task in receives.items()}
        return run_on_loop(self.loop, both(), self.timeout + LOOP_MARGIN, self.rank)

    async def _send(self, peer: int, step: int, data: np.ndarray) -> None:
        from distributed.protocol import to_serialize
        # a copy: in one process the message is handed over by reference
        try:
            await self.comms[peer].write({"step": step, "data": to_serialize(data.copy())})
        except OSError as exc:              # distributed's CommClosedError among them
            raise self.lost(peer, exc) from exc

    async def _receive(self, peer: int, step: int) -> np.ndarray:
        try:
            msg = await self.comms[peer].read()
        except OSError as exc:
            raise self.lost(peer, exc) from exc
        if "fail" in msg:
            raise CollectiveError(msg["fail"])
        if msg.get("step") != step:
            raise CollectiveError(f"worker {peer} is at step {msg.get('step')}, worker "
                                  f"{self.rank} at step {step}: they are out of step")
        return msg["data"]

    def fail(self, reason: str) -> None:
        async def tell() -> None:
            for comm in self.comms.values():
                try:
                    await asyncio.wait_for(comm.write({"fail": reason}), 5.0)
                except Exception:           # noqa: BLE001 - that worker is gone already
                    pass
        try_on_loop(self.loop, tell())

    def close(self) -> None:
        async def close() -> None:
            for peer, comm in self.comms.items():
                if peer > self.rank:        # the ones this worker opened
                    try:
                        await comm.close()
                    except Exception:       # noqa: BLE001 - closed by the other side
                        pass
        try_on_loop(self.loop, close())


def run_on_loop(loop: Any, coroutine: Any, seconds: float, rank: int) -> Any:
    """Run a coroutine on the worker's event loop and wait for it (this thread blocks);
    a failure (a closed connection, a timeout, ...) raises
    :class:`~boostlib.plugin.collective.CollectiveError`."""
    future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    try:
        return future.result(seconds)
    except CollectiveError:
        raise
    except Exception as exc:
        future.cancel()
        raise CollectiveError(f"worker {rank}: {describe(exc)}") from exc


def try_on_loop(loop: Any, coroutine: Any, seconds: float = 10.0) -> None:
    """Run a coroutine on the worker's event loop and wait for it, ignoring failures (best
    effort: telling peers, closing connections)."""
    try:
        asyncio.run_coroutine_threadsafe(coroutine, loop).result(seconds)
    except Exception:                       # noqa: BLE001 - best effort
        pass


def describe(exc: BaseException) -> str:
    """Words for a failed sum's exception."""
    name = type(exc).__name__
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return f"a sum timed out ({name}): another worker stopped answering"
    return f"a connection to another worker failed ({name}: {exc})"
