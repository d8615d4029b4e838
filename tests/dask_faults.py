"""Faults for the Dask tests: a signal sent to a worker's process once its fit is training.

A fault timed from the start of ``fit`` lands anywhere in the fit's set-up on a busy
machine (persisting, binning, connecting), and a fit whose worker was killed before
training trains on without it; this waits until every worker runs its training task.
"""
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
