"""Threads: models are shared read-only between threads (prediction releases the GIL), and
fits in concurrent threads give exactly the models they give one at a time."""
import sys
import threading

import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRegressor

RNG = np.random.default_rng(0)
X = RNG.normal(size=(1000, 5))
X[RNG.random(X.shape) < 0.05] = np.nan
Y = (np.nan_to_num(X[:, 0]) + RNG.normal(size=1000) > 0).astype(int)
TIMEOUT = 120.0


def _run_in_threads(target, n):
    """``target(i)`` in ``n`` threads at once; their results, or the first exception."""
    results, errors = [None] * n, []
    start = threading.Barrier(n)

    def run(i):
        try:
            start.wait()
            results[i] = target(i)
        except BaseException as exc:          # noqa: BLE001 - re-raised in the caller
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
        assert not t.is_alive(), "a thread hung"
    if errors:
        raise errors[0]
    return results


@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_one_model_predicts_the_same_from_many_threads(policy, n_jobs):
    model = BoostClassifier(n_estimators=20, grow_policy=policy, random_state=0,
                            n_jobs=n_jobs).fit(X, Y)
    expected = model.predict_proba(X)
    for got in _run_in_threads(lambda i: model.predict_proba(X), 4):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("params", [
    {"grow_policy": "symmetric"}, {"grow_policy": "depthwise", "sampler": "goss",
                                   "subsample": 0.5},
    {"update": "sglb"}, {"update": "agbm", "sampler": "mvs", "subsample": 0.5},
])
def test_concurrent_fits_equal_sequential_ones(params):
    def fit(i):
        return BoostRegressor(n_estimators=15, random_state=i, n_jobs=2,
                              **params).fit(X, Y * 1.0).predict(X)

    expected = [fit(i) for i in range(3)]
    for want, got in zip(expected, _run_in_threads(fit, 3)):
        np.testing.assert_array_equal(got, want)


def test_predictions_during_refits_come_from_one_fit_or_the_other():
    # A refit that changes the number of classes swaps every fitted attribute at once: a
    # prediction running meanwhile reads the old fit or the new one, never a mix (it was
    # seen giving shape (n, 4) with rows summing to 2: new raw scores, old binary link).
    four = Y + 2 * (np.nan_to_num(X[:, 1]) > 0)
    targets = [Y, four]

    def model():
        return BoostClassifier(n_estimators=3, max_depth=2, random_state=0, n_jobs=1)

    expected = [model().fit(X, y) for y in targets]
    proba = [m.predict_proba(X) for m in expected]
    labels = [m.predict(X) for m in expected]
    shared = model().fit(X, Y)
    refits_done = threading.Event()
    mixed = []

    def work(i):
        if i == 0:                                  # refit, alternating the class count
            for k in range(40):
                shared.fit(X, targets[(k + 1) % 2])
            refits_done.set()
            return
        while not refits_done.is_set():
            got = shared.predict_proba(X) if i % 2 else shared.predict(X)
            want = proba if i % 2 else labels
            if not any(got.shape == w.shape and np.array_equal(got, w) for w in want):
                mixed.append(got)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)                     # switch threads often
    try:
        _run_in_threads(work, 4)
    finally:
        sys.setswitchinterval(interval)
    assert not mixed, f"{len(mixed)} predictions mixed two fits, e.g. {mixed[0][:2]}"
