"""Fork safety: a process forked after a multi-threaded fit trains and predicts (on one
thread, with a warning) instead of hanging in OpenMP, and gets the same model."""
import os
import sys
import time
import warnings

import numpy as np
import pytest

from boostlib import BoostClassifier
from boostlib._kernels import _openmp

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin",
                                reason="needs fork() (POSIX, not macOS)")

TIMEOUT = 60.0


def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6))
    return X, (X[:, 0] + rng.normal(size=3000) > 0).astype(int)


def fit(n_jobs, policy):
    X, y = data()
    return BoostClassifier(n_estimators=10, grow_policy=policy, random_state=0,
                           n_jobs=n_jobs).fit(X, y)


def wait(pid):
    """The child's exit code, or -1 after killing it at the timeout (a hang)."""
    start = time.monotonic()
    while time.monotonic() - start < TIMEOUT:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return -1


@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
@pytest.mark.parametrize("child_jobs", [None, 2])
def test_forked_child_trains_and_predicts(policy, child_jobs):
    X, _ = data()
    expected = fit(2, policy).predict_proba(X)       # the parent's OpenMP threads exist now
    pid = os.fork()
    if pid == 0:                                     # the child: never return into pytest
        code = 1
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                got = fit(child_jobs, policy).predict_proba(X)
            warned = any("forked" in str(w.message) for w in caught)
            same = np.array_equal(got, expected)     # the same model whatever the threads
            code = 0 if warned and same else 2 if not warned else 3
        finally:
            os._exit(code)
    assert wait(pid) == 0


def test_forked_child_reports_one_thread():
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                code = 0 if (_openmp.in_forked_child()
                             and _openmp.effective_n_threads(None) == 1) else 2
        finally:
            os._exit(code)
    assert wait(pid) == 0
    assert not _openmp.in_forked_child()


def _fit_in_worker(policy):
    X, _ = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fit(None, policy).predict_proba(X)


def test_multiprocessing_fork_pool_after_a_fit():
    import multiprocessing

    X, _ = data()
    expected = fit(2, "depthwise").predict_proba(X)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        result = pool.map_async(_fit_in_worker, ["depthwise", "depthwise"])
        got = result.get(timeout=TIMEOUT)         # a hang raises TimeoutError here
    for g in got:
        np.testing.assert_array_equal(g, expected)
