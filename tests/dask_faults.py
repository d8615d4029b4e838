"""Faults for the Dask tests: a signal sent to a worker's process once its fit is training,
or at a chosen step of the driver's set-up.

A fault timed from the start of ``fit`` lands anywhere in the fit's set-up on a busy
machine (persisting, binning, connecting), and a fit whose worker was killed before
training trains on without it; :func:`signal_when_training` waits until every worker runs
its training task, and :func:`signal_at_call` sends the signal when the driver calls one of
its functions.
"""
import importlib
import os
import time

#: Seconds to wait for every worker to run its training task.
TRAINING_STARTS_WITHIN = 120.0


def signal_when_training(client, pid, signum, delay, sent):
    """Send ``signum`` to process ``pid`` (a worker's) ``delay`` seconds after every worker
    of ``client``'s cluster runs its training task (``fit_part``), and append the time
    (``time.perf_counter()``) to the list ``sent``. Meant for a thread beside ``fit``."""
    deadline = time.monotonic() + TRAINING_STARTS_WITHIN
    while time.monotonic() < deadline:
        busy = client.processing()
        if busy and all(any("fit_part" in str(key) for key in keys) for keys in busy.values()):
            break
        time.sleep(0.2)
    time.sleep(delay)
    os.kill(pid, signum)
    sent.append(time.perf_counter())


def signal_at_call(monkeypatch, owner, name, pid, signum, sent, after=False):
    """Make ``owner.name`` (a function of a module the fit calls) send ``signum`` to process
    ``pid`` when it is called (``after``: once it returns), and append the time
    (``time.perf_counter()``) to the list ``sent``: a fault at a chosen step of the
    driver's set-up, which runs in the test's process."""
    original = getattr(owner, name)

    def send():
        os.kill(pid, signum)
        sent.append(time.perf_counter())

    def wrapper(*args, **kwargs):
        if not after:
            send()
        result = original(*args, **kwargs)
        if after:
            send()
        return result

    monkeypatch.setattr(owner, name, wrapper)


def import_boostlib(client):
    """Import boostlib's Dask modules on every worker of ``client``'s cluster. The first
    boostlib task a worker runs imports them, which on a busy machine can keep its event
    loop, and so its heartbeats, from running for longer than a test's short ``timeout``:
    a fault test calls this first, so that only the fault it injects is silent."""
    client.run(importlib.import_module, "boostlib.dask")
