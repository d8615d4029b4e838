"""The socket transport of Dask fits (``boostlib.dask.links``), on socket pairs in one
process: arrays of any size cross both ways at once, bit for bit; a peer that fails, closes
or stops answering, or is out of step, raises ``CollectiveError`` naming what happened."""
import socket
import threading
import time

import numpy as np
import pytest

from optional_imports import importorskip

from boostlib.plugin.collective import CollectiveError

links = importorskip("boostlib.dask.links")
FAIL, HEADER, READY, SocketLinks = links.FAIL, links.HEADER, links.READY, links.SocketLinks


ADDRESSES = ["tcp://10.0.0.1:4001", "tcp://10.0.0.2:4002"]


def _pair(timeout=5.0):
    a, b = socket.socketpair()
    for s in (a, b):
        s.setblocking(False)
    return (SocketLinks(0, {1: a}, timeout, ADDRESSES),
            SocketLinks(1, {0: b}, timeout, ADDRESSES))


def _both(fa, fb):
    """Run ``fb`` in a thread and ``fa`` here; returns both results (re-raises)."""
    out = {}

    def run():
        try:
            out["b"] = fb()
        except BaseException as exc:        # noqa: BLE001 - re-raised below
            out["b_exc"] = exc
    thread = threading.Thread(target=run)
    thread.start()
    try:
        a = fa()
    finally:
        thread.join(30)
    if "b_exc" in out:
        raise out["b_exc"]
    return a, out["b"]


@pytest.mark.parametrize("size", [0, 1, 3, 1000, 4_000_000])
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32])
def test_arrays_cross_both_ways_bit_for_bit(size, dtype):
    """Both ends send at once: 4M float64 (32 MB) is far more than a socket buffer holds,
    so this deadlocks unless reads and writes interleave."""
    a, b = _pair()
    rng = np.random.default_rng(size)
    xa = (rng.normal(size=size) * 1e6).astype(dtype)
    xb = (rng.normal(size=size) * 1e6).astype(dtype)
    for step in range(3):               # buffers are reused across steps
        got_a, got_b = _both(lambda: a.exchange({1: xa}, {1: xa}, step)[1].copy(),
                             lambda: b.exchange({0: xb}, {0: xb}, step)[0].copy())
        np.testing.assert_array_equal(got_a, xb)
        np.testing.assert_array_equal(got_b, xa)
        assert got_a.dtype == dtype
    a.close()
    b.close()


def test_ready_byte_then_data():
    a, b = _pair()
    b.socks[0].send(READY)
    a.ready([1], time.monotonic() + 5.0)
    x = np.arange(5.0)
    got, _ = _both(lambda: a.exchange({1: x}, {1: x}, 0)[1].copy(),
                   lambda: b.exchange({0: x * 2}, {0: x}, 0))
    np.testing.assert_array_equal(got, x * 2)


def test_wrong_ready_byte_is_named():
    a, b = _pair()
    b.socks[0].send(b"X")
    with pytest.raises(CollectiveError, match="ready byte"):
        a.ready([1], time.monotonic() + 5.0)


def test_failure_message_reaches_the_peer():
    a, b = _pair()
    b.fail("worker 1 failed: ValueError: broken plugin")
    with pytest.raises(CollectiveError, match="broken plugin"):
        a.exchange({1: np.zeros(3)}, {1: np.zeros(3)}, 0)


def test_closed_peer_fails_the_sum():
    a, b = _pair()
    b.close()
    with pytest.raises(CollectiveError,
                       match=r"connection to worker 1 \(tcp://10.0.0.2:4002\) closed"):
        a.exchange({1: np.zeros(3)}, {1: np.zeros(3)}, 0)


def test_silent_peer_times_out_and_is_named():
    a, _b = _pair(timeout=0.3)
    with pytest.raises(CollectiveError, match=r"worker 0 \(tcp://10.0.0.1:4001\): worker 1 "
                       r"\(tcp://10.0.0.2:4002\) stopped answering: no reply within "
                       r"timeout=0.3 s"):
        a.exchange({1: np.zeros(3)}, {1: np.zeros(3)}, 0)
    a, b = _pair(timeout=0.3)
    with pytest.raises(CollectiveError, match="worker 1 .* stopped answering"):
        a.ready([1], time.monotonic() + 0.3)


def test_out_of_step_and_wrong_size_are_named():
    a, b = _pair()
    b.socks[0].send(HEADER.pack(0, 7, 24, np.dtype(np.float64).num) + bytes(24))
    with pytest.raises(CollectiveError, match="worker 1 is at step 7, worker 0 at step 0"):
        a.exchange({1: np.zeros(3)}, {1: np.zeros(3)}, 0)
    a, b = _pair()
    b.socks[0].send(HEADER.pack(0, 0, 16, np.dtype(np.float64).num) + bytes(16))
    with pytest.raises(CollectiveError, match="sent 16 bytes .* expected 24 bytes"):
        a.exchange({1: np.zeros(3)}, {1: np.zeros(3)}, 0)


def test_empty_failure_reason():
    a, b = _pair()
    b.socks[0].send(HEADER.pack(FAIL, -1, 0, 0))
    with pytest.raises(CollectiveError):
        a.exchange({1: np.zeros(3)}, {1: np.zeros(3)}, 0)
