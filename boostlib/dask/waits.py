"""The driver's waits while a Dask fit sets up, ended by a worker silent for ``timeout``.

Before the workers train, the driver computes and checks the partitions, moves some to
balance the workers, samples rows for the bin borders, counts categories and sends the
workers what they train with. A worker that stops answering meanwhile (a frozen machine,
an endless pause) would leave such a wait blocked until the scheduler drops the worker
(``distributed.scheduler.worker-ttl``, 5 minutes by default). Here every one of them is
watched: once a worker of the cluster has not been heard from (its heartbeats to the
scheduler, every half second on a small cluster) for the fit's ``timeout``, the wait fails
the fit with a :class:`~boostlib.plugin.collective.CollectiveError` naming the worker, the
step and the timeout, as a fit that is training fails. Work that takes long while every
worker answers (computing a large collection) is waited for, however long it takes.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import time
from typing import Any, Callable, Dict, List

from ..plugin.collective import CollectiveError

#: The estimators' default ``timeout`` (seconds).
TIMEOUT = 300.0

#: Seconds between the driver's checks for silent workers while it waits.
POLL_SECONDS = 0.5


def _scheduler_workers(dask_scheduler: Any) -> List[str]:
    return list(dask_scheduler.workers)


def worker_addresses(client: Any) -> List[str]:
    """The addresses of the cluster's workers, in the scheduler's order, asked of the
    scheduler at the call.

    Not ``client.scheduler_info()["workers"]``: the client refreshes the cache that call
    returns every few seconds without the workers (``n_workers=0``), and a refresh landing
    between ``scheduler_info``'s own fetch and its return hands back no workers
    (distributed 2026.8), so that every live worker looked gone.
    """
    return client.run_on_scheduler(_scheduler_workers)


def _silences(dask_scheduler: Any) -> Dict[str, float]:
    now = time.time()
    return {a: now - ws.last_seen for a, ws in dask_scheduler.workers.items()}


def silent_workers(client: Any, timeout: float) -> List[str]:
    """The workers the scheduler has not heard from for more than ``timeout`` seconds."""
    return [a for a, s in client.run_on_scheduler(_silences).items() if s > timeout]


def _watch(client: Any, done: Callable[[float], bool], timeout: float, step: str,
           stop: Callable[[], Any] = lambda: None) -> None:
    """Call ``done(seconds)`` (waits at most that long; whether the awaited work is done)
    until it is done, or until a worker is silent for ``timeout`` seconds: then ``stop()``
    and raise the error of :func:`stalled`."""
    while not done(POLL_SECONDS):
        silent = silent_workers(client, timeout)
        if silent:
            stop()
            raise stalled(silent, step, timeout)


def bounded(client: Any, call: Callable[..., Any], timeout: float, step: str) -> Any:
    """What the client method call ``call`` gives (``functools.partial(client.scatter,
    data, ...)``), waited for until it is done or a worker is silent for ``timeout``.

    Parameters
    ----------
    client : distributed.Client
    call : callable
        A client method with its arguments; it is called with ``asynchronous=True`` on the
        client's event loop.
    timeout : float
        The fit's ``timeout``.
    step : str
        What the fit is doing, for the error: ``"sending the bin borders"``.

    Raises
    ------
    CollectiveError
        When a worker is silent for ``timeout`` seconds before ``call`` is done (see
        :func:`stalled`); ``call`` is then cancelled.
    """
    async def awaited() -> Any:
        return await call(asynchronous=True)

    future = asyncio.run_coroutine_threadsafe(awaited(), client.loop.asyncio_loop)

    def done(seconds: float) -> bool:
        return bool(concurrent.futures.wait([future], seconds).done)

    _watch(client, done, timeout, step, future.cancel)
    return future.result()


def finished(client: Any, futures: List[Any], timeout: float, step: str) -> None:
    """Wait for ``futures`` to finish (or fail), or a worker to be silent for ``timeout``;
    :func:`bounded` says what that raises."""
    from distributed import wait

    def done(seconds: float) -> bool:
        try:
            wait(futures, timeout=seconds)
        except TimeoutError:
            return False
        return True

    _watch(client, done, timeout, step)


def results(client: Any, futures: List[Any], timeout: float, step: str) -> List[Any]:
    """The results of ``futures`` (a task's own error raised as it is), waited for as
    :func:`bounded` waits."""
    finished(client, futures, timeout, step)
    return bounded(client, lambda **kw: client.gather(futures, **kw), timeout, step)


def stalled(silent: List[str], step: str, timeout: float) -> CollectiveError:
    """The error of a set-up wait ended by the workers ``silent``: it names them, the step
    and the timeout."""
    who = (f"worker {silent[0]}" if len(silent) == 1 else f"workers {', '.join(silent)}")
    return CollectiveError(f"{who} stopped answering while the fit was {step}, before "
                           f"training: not heard from within timeout={timeout:g} s (the "
                           "estimator's timeout parameter); the fit was stopped and the "
                           "client remains usable")
