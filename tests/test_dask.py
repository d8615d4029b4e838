"""Distributed training on a Dask ``LocalCluster`` (2 workers x 1 thread): the models equal
one machine's on the same rows, every sampler and update rule trains, odd partitionings
work, and failures end the fit with a clear error instead of a hang."""
import os
import signal
import threading
import time

import numpy as np
import pytest

from dask_faults import signal_when_training
from optional_imports import importorskip

boostlib_dask = importorskip("boostlib.dask")
distributed = importorskip("distributed")
da = importorskip("dask.array")
dd = importorskip("dask.dataframe")
pd = importorskip("pandas")

from boostlib import BoostClassifier, BoostRegressor  # noqa: E402

CollectiveError = boostlib_dask.CollectiveError
DaskBoostClassifier = boostlib_dask.DaskBoostClassifier
DaskBoostRegressor = boostlib_dask.DaskBoostRegressor
KILL = getattr(signal, "SIGKILL", signal.SIGTERM)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit=0) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _data(n=8000, seed=0, classes=2, n_features=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < 0.05] = np.nan
    score = np.nansum(X[:, :3], axis=1) + X[:, 3] * np.nan_to_num(X[:, 4]) \
        + 0.7 * rng.normal(size=n)
    if classes == 2:
        y = (score > 0).astype(int)
    else:
        y = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y


def _logloss(y, p):
    p = np.clip(p, 1e-15, 1 - 1e-15)
    if p.ndim == 2:
        return float(-np.mean(np.log(p[np.arange(y.size), y])))
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def _split(X, y, n_test=2000):
    return X[:-n_test], y[:-n_test], X[-n_test:], y[-n_test:]


def _dask(X, y, chunks):
    return da.from_array(X, chunks=(chunks, X.shape[1])), da.from_array(y, chunks=chunks)


@pytest.mark.parametrize("policy, extra", [
    ("symmetric", {}), ("depthwise", {}), ("lossguide", {}),
    ("lossguide", {"prune_features": True, "min_samples_bin": 3, "min_samples_leaf": 10}),
    ("depthwise", {"linear_leaves": True, "linear_lambda": 0.5}),
])
def test_dask_model_equals_the_local_model(client, policy, extra):
    X, y, Xt, yt = _split(*_data())
    params = dict(n_estimators=30, grow_policy=policy, random_state=0, **extra)
    dask_model = DaskBoostClassifier(client=client, **params).fit(*_dask(X, y, 1700))
    local = BoostClassifier(n_jobs=1, **params).fit(X, y)
    p_dask = dask_model.predict_proba(da.from_array(Xt, chunks=(500, 6)))
    assert isinstance(p_dask, da.Array)
    p_dask = p_dask.compute()[:, 1]
    p_local = local.predict_proba(Xt)[:, 1]
    assert abs(_logloss(yt, p_dask) / _logloss(yt, p_local) - 1) < 1e-3
    assert np.mean(np.abs(p_dask - p_local) <= 1e-6) >= 0.99
    rows = dask_model.dask_info_["rows"]        # both workers trained, on every row
    assert len(rows) == 2 and min(rows) > 0 and sum(rows) == X.shape[0]


@pytest.mark.parametrize("given", [dict(early_stopping=True), dict(n_iter_no_change=5)])
def test_holding_out_training_rows_is_refused_by_name(given):
    X, y = _data(n=200)
    with pytest.raises(ValueError, match=f"{list(given)[0]}=.*does not hold out rows"):
        DaskBoostClassifier(**given).fit(X, y)


@pytest.mark.parametrize("sampler", ["uniform", "goss", "mvs"])
@pytest.mark.parametrize("update", ["sgb", "sglb", "agbm", "agbmr"])
def test_every_sampler_and_update_rule_trains(client, sampler, update):
    """Sampled fits draw other rows on a cluster than on one machine (each worker draws its
    own): their test loss, averaged over three seeds, is at most 1% above the local one
    (seed to seed, single fits here differ by about 1%)."""
    X, y, Xt, yt = _split(*_data(n=24000, seed=1), n_test=4000)
    Xd, yd = _dask(X, y, 5000)
    losses = {"dask": [], "local": []}
    for seed in range(3):
        params = dict(n_estimators=40, grow_policy="depthwise", random_state=seed,
                      sampler=sampler, subsample=0.5, update=update, learning_rate=0.1,
                      early_stopping=False)   # 20,000 rows: the local "auto" holds rows out
        dask_model = DaskBoostClassifier(client=client, **params).fit(Xd, yd)
        local = BoostClassifier(n_jobs=1, **params).fit(X, y)
        losses["dask"].append(_logloss(yt, dask_model.predict_proba(Xt)[:, 1]))
        losses["local"].append(_logloss(yt, local.predict_proba(Xt)[:, 1]))
    ratio = np.mean(losses["dask"]) / np.mean(losses["local"])
    assert ratio < 1.01, losses


def test_multiclass_weights_and_early_stopping_match_local(client):
    X, y, Xt, yt = _split(*_data(classes=3, seed=2))
    w = np.random.default_rng(0).uniform(0.5, 2.0, X.shape[0])
    params = dict(n_estimators=60, grow_policy="depthwise", random_state=1,
                  early_stopping_rounds=5, learning_rate=0.3)
    dask_model = DaskBoostClassifier(client=client, **params).fit(
        *_dask(X, y, 1500), sample_weight=da.from_array(w, chunks=1500),
        eval_set=[(Xt, yt)])
    local = BoostClassifier(n_jobs=1, **params).fit(X, y, sample_weight=w,
                                                     eval_set=[(Xt, yt)])
    assert dask_model.best_iteration_ == local.best_iteration_
    np.testing.assert_allclose(dask_model.predict_proba(Xt), local.predict_proba(Xt),
                               atol=1e-6)
    assert dask_model.predict(Xt).tolist() == local.predict(Xt).tolist()


def test_categorical_dataframe(client):
    rng = np.random.default_rng(3)
    n = 6000
    frame = pd.DataFrame({"a": rng.normal(size=n),
                          "c": pd.Categorical(rng.choice(list("pqrstu"), n)),
                          "b": rng.normal(size=n)})
    effect = frame["c"].map(dict(zip("pqrstu", [2, -1, 0, 1, -2, 0.5]))).astype(float)
    y = 3.0 * frame["a"] + effect + 0.1 * rng.normal(size=n)
    ddf = dd.from_pandas(frame, npartitions=5)
    params = dict(n_estimators=30, grow_policy="depthwise", random_state=0)
    dask_model = DaskBoostRegressor(client=client, **params).fit(
        ddf, dd.from_pandas(y, npartitions=5))
    local = BoostRegressor(n_jobs=1, **params).fit(frame, y)
    np.testing.assert_allclose(dask_model.predict(ddf).compute(), local.predict(frame),
                               atol=1e-6)
    assert list(dask_model.feature_names_in_) == ["a", "c", "b"]


@pytest.mark.parametrize("chunks", [(4999, 1, 1, 999), (2, 5998), (100,) * 60, (6000,)])
def test_uneven_empty_and_many_partitions(client, chunks):
    X, y = _data(n=6000, seed=4)
    if len(chunks) == 2:            # an empty partition among them
        chunks = (0,) + chunks
    Xd = da.from_array(X, chunks=(chunks, 6))
    params = dict(n_estimators=10, grow_policy="symmetric", random_state=0)
    dask_model = DaskBoostRegressor(client=client, **params).fit(Xd, y)
    local = BoostRegressor(n_jobs=1, **params).fit(X, y)
    assert np.mean(np.abs(dask_model.predict(X) - local.predict(X)) <= 1e-6) >= 0.99


def test_to_local_saves_and_loads(client, tmp_path):
    X, y = _data(n=3000, seed=5)
    model = DaskBoostClassifier(client=client, n_estimators=5).fit(*_dask(X, y, 1000))
    local = model.to_local()
    assert type(local) is BoostClassifier and local.get_params()["n_estimators"] == 5
    path = tmp_path / "model.json"
    local.save_model(path)
    from boostlib import load_model
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_bad_parameters_are_named(client):
    X, y = _data(n=500)
    with pytest.raises(ValueError, match="warm_start"):
        DaskBoostClassifier(client=client, warm_start=True).fit(X, y)
    with pytest.raises(ValueError, match="timeout"):
        DaskBoostClassifier(client=client, timeout=0).fit(X, y)
    with pytest.raises(ValueError, match="learning_rate"):
        DaskBoostClassifier(client=client, learning_rate=-1).fit(X, y)
    with pytest.raises(ValueError, match="quantile"):
        DaskBoostRegressor(client=client, loss="quantile").fit(X, y.astype(float))


def test_worker_failure_fails_the_fit_and_keeps_the_client(client, temp_plugin):
    """A plugin that raises on one worker only: the error reaches the caller at once (the
    other worker stops at its next sum), and the client trains again."""
    X, y = _data(n=3000)
    client.run(_register_in_worker, _breaks_plugin, "breaks", "breaks_on_rank_1")
    temp_plugin(_breaks_plugin(), "breaks")     # and here, where parameters are checked
    start = time.perf_counter()
    with pytest.raises(Exception, match="sampler broke on worker 1"):
        DaskBoostClassifier(client=client, sampler="breaks_on_rank_1", n_estimators=10,
                            timeout=60).fit(*_dask(X, y, 1500))
    assert time.perf_counter() - start < 30
    DaskBoostClassifier(client=client, n_estimators=3).fit(*_dask(X, y, 1500))


def _sampler_plugin(sampler):
    """A plugin adding the sampler class ``sampler`` under its ``name``."""
    from boostlib.api import hookimpl

    class Plugin:
        @hookimpl
        def boostlib_add_samplers(self):
            return {sampler.name: sampler}

    return Plugin()


def _register_in_worker(make_plugin, plugin_name, sampler_name):
    """Register ``make_plugin()`` in a worker's process (plugins are per process), once."""
    import boostlib.registry as registry
    if sampler_name not in registry.available("sampler"):
        registry.register_plugin(make_plugin(), plugin_name)


def _breaks_plugin():
    """A plugin with a sampler that breaks on worker 1."""
    from boostlib.api import Sampler

    class Breaks(Sampler):
        name = "breaks_on_rank_1"

        def begin(self, ctx):
            self.rank = ctx.collective.rank

        def sample(self, gradient, hessian, rng, iteration):
            if self.rank == 1 and iteration == 3:
                raise RuntimeError("sampler broke on worker 1")
            return None

    return _sampler_plugin(Breaks)


def _mismatch_plugin():
    """A plugin with a sampler whose workers sum arrays of different types."""
    from boostlib.api import Sampler

    class Mismatch(Sampler):
        name = "sums_mismatched_types"

        def begin(self, ctx):
            dtype = np.int64 if ctx.collective.rank == 1 else np.float64
            ctx.collective.allreduce(np.zeros(3, dtype=dtype))

        def sample(self, gradient, hessian, rng, iteration):
            return None

    return _sampler_plugin(Mismatch)


def test_workers_summing_different_arrays_fail_the_fit(client, temp_plugin):
    """Arrays of the same size but another type are not added as if they were alike: the
    fit fails, saying the workers are out of step, and the client trains again."""
    X, y = _data(n=3000)
    client.run(_register_in_worker, _mismatch_plugin, "mismatch", "sums_mismatched_types")
    temp_plugin(_mismatch_plugin(), "mismatch")
    with pytest.raises(CollectiveError, match="out of step"):
        DaskBoostClassifier(client=client, sampler="sums_mismatched_types", n_estimators=3,
                            timeout=60).fit(*_dask(X, y, 1500))
    DaskBoostClassifier(client=client, n_estimators=3).fit(*_dask(X, y, 1500))


def test_workers_are_asked_of_the_scheduler_not_the_clients_cache(client, monkeypatch):
    """The client refreshes its cached cluster info every few seconds without the workers,
    so ``client.scheduler_info()`` may hand back none (a refresh racing its own fetch).
    A fit, and the driver's check that its workers are still there, ask the scheduler."""
    info = client.scheduler_info(n_workers=-1)
    monkeypatch.setattr(client, "scheduler_info",
                        lambda *a, **k: dict(info, workers={}))
    X, y = _data(n=3000)
    model = DaskBoostClassifier(client=client, n_estimators=5).fit(*_dask(X, y, 1000))
    assert len(model.dask_info_["workers"]) == 2


def test_lost_worker_gives_an_error_not_a_hang():
    """A worker's process killed during training: the fit fails at once, naming it as gone,
    and the client trains again."""
    X, y = _data(n=20000)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit=0) as cluster, \
            distributed.Client(cluster) as c:
        model = DaskBoostClassifier(client=c, n_estimators=100000, timeout=20)
        pids = c.run(os.getpid)
        victim = sorted(pids)[1]
        killed = []
        killer = threading.Thread(target=signal_when_training, daemon=True,
                                  args=(c, pids[victim], KILL, 1.0, killed))
        killer.start()
        with pytest.raises(CollectiveError, match=f"{victim}.*left the cluster"):
            model.fit(*_dask(X, y, 5000))
        assert time.perf_counter() - killed[0] < 10
        killer.join()
        assert c.submit(lambda: 1 + 1, pure=False).result(timeout=30) == 2


@pytest.mark.parametrize("protocol", ["inproc://", "tcp://"])
@pytest.mark.parametrize("scatter_bytes", [0, 1 << 20])
def test_three_workers_in_one_process(monkeypatch, scatter_bytes, protocol):
    """Three workers (threads of this process, so that the test can force every sum
    through the reduce-scatter path), handing messages over in memory or sending raw
    bytes over TCP: the model equals the local one."""
    import boostlib.dask.collective as collective
    monkeypatch.setattr(collective, "SCATTER_BYTES", scatter_bytes)
    workers = _fit_in_process_like_local(
        _data(n=6000, seed=6), dict(n_estimators=10, grow_policy="depthwise"),
        n_workers=3, protocol=protocol)
    assert len(workers) == 3 and all(a.startswith(protocol) for a in workers)


def _fit_in_process_like_local(data, params, **cluster_kw):
    """Fit on a cluster of workers in this process (``cluster_kw``), check that the model
    equals the local one, and return the workers' addresses."""
    X, y = data
    params = dict(params, random_state=0)
    with distributed.LocalCluster(threads_per_worker=1, processes=False,
                                  dashboard_address=None, memory_limit=0,
                                  **cluster_kw) as cluster, \
            distributed.Client(cluster) as c:
        model = DaskBoostClassifier(client=c, **params).fit(*_dask(X, y, 1000))
    local = BoostClassifier(n_jobs=1, **params).fit(X, y)
    np.testing.assert_allclose(model.predict_proba(X), local.predict_proba(X), atol=1e-9)
    return model.dask_info_["workers"]


@pytest.mark.parametrize("n_workers", [2, 3, 5])
def test_every_rank_adds_the_terms_in_rank_order(n_workers):
    """Each worker adds its own term in place among the others' (buffers it may
    overwrite): every rank ends with the bits of ``((t0 + t1) + t2) + ...``."""
    from boostlib.dask.collective import _add_in_rank_order
    rng = np.random.default_rng(n_workers)
    terms = [rng.normal(size=257) * 10.0 ** rng.integers(-8, 8, 257) for _ in range(n_workers)]
    expected = terms[0].copy()
    for t in terms[1:]:
        expected = expected + t
    for rank in range(n_workers):
        own = terms[rank].copy()
        _add_in_rank_order({r: terms[r].copy() for r in range(n_workers) if r != rank},
                           rank, own)
        np.testing.assert_array_equal(own, expected)


def test_borders_are_the_local_fits_when_rows_are_sampled(client):
    """Above 200,000 rows the borders come from a sample: the driver draws the rows a local
    fit draws, from the same stream, and gathers them from the partitions."""
    from boostlib.dask import driver
    from boostlib.dask.parts import balance, persist, worker_addresses
    from boostlib.engine.dataset import Dataset
    from boostlib.engine.random_streams import seed_sequence
    rng = np.random.default_rng(7)
    n = 230_000
    X = rng.normal(size=(n, 2)).astype(np.float32)
    X[rng.random(n) < 0.1, 1] = np.nan
    w = rng.uniform(0, 1, n)
    w[rng.random(n) < 0.05] = 0.0
    local, _ = Dataset(X, sample_weight=w).training_matrix(255, seed_sequence(11), 1)
    parts = persist(client, da.from_array(X, chunks=(40_000, 2)))
    parts = balance(client, parts, worker_addresses(client))
    mapper = driver.global_mapper(client, parts, parts.by_worker(), 11, 255, w,
                                  {"feature_names": None, "categorical_features": "auto"}, 1)
    for f in range(2):
        np.testing.assert_array_equal(mapper.borders_[f], local.borders_[f])


def test_array_of_unknown_chunk_sizes(client):
    X, y = _data(n=3000, seed=8)
    frame = dd.from_pandas(pd.DataFrame(X), npartitions=3)
    Xd = frame.to_dask_array()                  # chunk sizes unknown (NaN)
    assert any(np.isnan(c) for c in Xd.chunks[0])
    params = dict(n_estimators=5, random_state=0)
    model = DaskBoostClassifier(client=client, **params).fit(Xd, y)
    local = BoostClassifier(n_jobs=1, **params).fit(X, y)
    np.testing.assert_allclose(model.predict_proba(Xd).compute(), local.predict_proba(X),
                               atol=1e-9)


def _sum_on_worker(fit, rank, addresses, sockets):
    from boostlib.dask.collective import DaskCollective
    collective = DaskCollective(fit, rank, addresses, 30.0, sockets=sockets)
    try:
        out = [collective.allreduce(np.arange(n, dtype=np.float64) * (rank + 1)).copy()
               for n in (0, 3, 300_000)]
        out.append(collective.total(rank, 1.0))
        return type(collective._links).__name__, out
    finally:
        collective.close()


@pytest.mark.parametrize("sockets", [True, False])
def test_sums_between_processes_over_sockets_and_messages(client, sockets):
    """Two worker processes sum arrays of every size (2.4 MB both ways at once) through the
    training threads' own sockets, or through Dask messages on the event loop."""
    from boostlib.dask.collective import install
    from boostlib.dask.parts import worker_addresses
    addresses = worker_addresses(client)
    client.run(install, workers=addresses)
    futures = [client.submit(_sum_on_worker, f"test-{sockets}", r, addresses, sockets,
                             workers=[a], pure=False) for r, a in enumerate(addresses)]
    for kind, out in client.gather(futures):
        assert kind == ("SocketLinks" if sockets else "MessageLinks")
        for got, n in zip(out, (0, 3, 300_000)):
            np.testing.assert_array_equal(got, np.arange(n, dtype=np.float64) * 3)
        np.testing.assert_array_equal(out[-1], [1.0, 2.0])


def test_tls_cluster_trains():
    """A cluster with TLS (temporary certificates): the workers connect to each other with
    the workers' security settings, and sum through Dask messages (the encryption lives in
    Dask's stream); the model equals the local one."""
    importorskip("cryptography")
    workers = _fit_in_process_like_local(
        _data(n=4000, seed=7), dict(n_estimators=8, grow_policy="lossguide"),
        n_workers=2, security=True)
    assert all(a.startswith("tls://") for a in workers)


# -- survival losses ---------------------------------------------------------------------------
def _survival(n=6000, seed=3):
    """Features, ``[lower, upper]`` bounds (30% right-censored: upper inf) and the signed
    Cox times of the same rows, with a known log hazard ``x0 - x1``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    t = rng.exponential(1.0, n) / np.exp(X[:, 0] - X[:, 1])
    censored = rng.random(n) < 0.3
    seen = np.where(censored, t * rng.uniform(0.1, 1.0, n), t)
    bounds = np.column_stack([seen, np.where(censored, np.inf, seen)])
    return X, bounds, np.where(censored, -seen, seen)


@pytest.mark.parametrize("labels", ["array", "frame"])
def test_aft_bounds_train_the_local_model(client, labels):
    """AFT is row-wise: every worker computes its rows' derivatives, and the model is the
    local fit's on the same rows (to the tolerance of the other fits here)."""
    X, y, _ = _survival()
    X, y, Xt, yt = X[:-1500], y[:-1500], X[-1500:], y[-1500:]
    params = dict(loss="aft", loss_params={"aft_distribution": "logistic"}, n_estimators=30,
                  grow_policy="depthwise", random_state=0, eval_metric="cindex")
    yd = da.from_array(y, chunks=(1500, 2)) if labels == "array" else \
        dd.from_pandas(pd.DataFrame(y, columns=["lower", "upper"]), npartitions=3)
    dask_model = DaskBoostRegressor(client=client, **params).fit(
        da.from_array(X, chunks=(1500, 5)), yd, eval_set=[(Xt, yt)])
    local = BoostRegressor(n_jobs=1, **params).fit(X, y, eval_set=[(Xt, yt)])
    np.testing.assert_allclose(dask_model.predict(Xt), local.predict(Xt), rtol=1e-6)
    np.testing.assert_allclose(dask_model.evals_result_["valid_0"]["cindex"],
                               local.evals_result_["valid_0"]["cindex"], atol=1e-6)
    assert dask_model.score(Xt, yt) == pytest.approx(local.score(Xt, yt), abs=1e-6)
    assert dask_model.score(Xt, yt) > 0.7          # the true log hazard orders them
    rows = dask_model.dask_info_["rows"]
    assert len(rows) == 2 and min(rows) > 0 and sum(rows) == X.shape[0]


def test_cox_is_refused_naming_the_loss_and_why(client):
    """A row's Cox gradient sums over risk sets that span every worker's rows: the fit is
    refused, not trained on each worker's own risk sets."""
    X, _, signed = _survival(n=2000)
    with pytest.raises(ValueError, match=r"loss 'cox' couples the rows \(the derivatives of "
                                         r"one row depend on every other row\), which "
                                         r"distributed training does not support"):
        DaskBoostRegressor(client=client, loss="cox", n_estimators=5).fit(
            da.from_array(X, chunks=(1000, 5)), da.from_array(signed, chunks=1000))
    # the cluster still trains afterwards
    model = DaskBoostRegressor(client=client, n_estimators=3).fit(
        da.from_array(X, chunks=(1000, 5)), da.from_array(np.abs(signed), chunks=1000))
    assert model.n_trees_ == 3
