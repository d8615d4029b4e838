"""The Dask estimators used carelessly: collections with empty partitions (filters make them
routinely), partitions whose dtypes differ from each other, and a worker that stops
answering in the middle of a fit (SIGSTOP: POSIX only). Every case either gives what the
local estimator gives on the same rows, or an error naming the column, the partition or
the worker."""
import os
import signal
import threading
import time

import numpy as np
import pytest

from dask_faults import import_boostlib, signal_at_call, signal_when_training
from optional_imports import importorskip

boostlib_dask = importorskip("boostlib.dask")
distributed = importorskip("distributed")
dask = importorskip("dask")
da = importorskip("dask.array")
dd = importorskip("dask.dataframe")
pd = importorskip("pandas")

from boostlib import BoostClassifier, BoostRegressor  # noqa: E402

DaskBoostClassifier = boostlib_dask.DaskBoostClassifier
DaskBoostRegressor = boostlib_dask.DaskBoostRegressor

N_ROWS = 1200


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit=0) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _frame(n=N_ROWS, seed=0):
    """Numeric columns, a categorical one and the row number ``i`` (to filter on)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2],
                         "k": pd.Categorical(rng.choice(list("pqrs"), n)),
                         "i": np.arange(n, dtype=np.float64)})


def _three_classes(frame):
    score = frame["a"] + 0.5 * (frame["k"] == "p") + 0.3 * frame["b"] * frame["c"]
    return np.digitize(score, [-0.5, 0.5])


#: Which of four equal partitions keep their rows.
LAYOUTS = {
    "first empty": [False, True, True, True],
    "last empty": [True, True, True, False],
    "all but one empty": [False, False, True, False],
    "empty between": [True, False, False, True],
    "wholly empty": [False, False, False, False],
}


def _array_with(X, keep):
    """``X``'s rows in the kept ones of four equal partitions, as a Dask array of four
    partitions, the others empty (0 rows); and the rows kept."""
    size = X.shape[0] // len(keep)
    rows = np.concatenate([np.arange(j * size, (j + 1) * size) for j, k in enumerate(keep)
                           if k] or [np.zeros(0, dtype=int)])
    chunks = tuple(size if k else 0 for k in keep)
    out = da.from_array(X[rows], chunks=(chunks, X.shape[1:]))
    assert out.chunks[0] == chunks
    return out, rows


def _frame_with(frame, keep):
    """``frame`` as a Dask DataFrame of four partitions, filtered so that the dropped ones
    are empty; and the rows kept."""
    size = len(frame) // len(keep)
    ddf = dd.from_pandas(frame, npartitions=len(keep), sort=False)
    wanted = np.concatenate([np.arange(j * size, (j + 1) * size) for j, k in enumerate(keep)
                             if k] or [np.zeros(0)])
    out = ddf[ddf["i"].isin(wanted.tolist())]
    assert out.npartitions == len(keep)
    assert out.map_partitions(len).compute().tolist() == [size if k else 0 for k in keep]
    return out, wanted.astype(int)


#: (method, keyword arguments)
PREDICTIONS = [("predict", {}), ("predict_proba", {}), ("decision_function", {}),
               ("predict", {"pred_contrib": True}),
               ("predict_proba", {"iteration_range": (1, 3)}), ("apply", {}),
               ("predict_virtual_ensembles", {"n_members": 2}), ("staged_predict", {}),
               ("staged_predict_proba", {}), ("staged_decision_function", {})]


def _check_every_prediction(model, collection, rows_in_memory):
    """Every prediction method of ``model`` on ``collection`` gives a Dask array equal, bit
    for bit and in shape and type, to the local estimator's on the same rows in memory."""
    local = model.to_local()
    for name, kwargs in PREDICTIONS:
        got = getattr(model, name)(collection, **kwargs)
        want = getattr(local, name)(rows_in_memory, **kwargs)
        if name.startswith("staged"):
            got, want = list(got), list(want)
            assert len(got) == len(want) == model.n_trees_, name
        else:
            got, want = [got], [want]
        assert all(isinstance(g, da.Array) for g in got), name
        for g, w in zip(dask.compute(*got), want):
            assert g.shape == w.shape and g.dtype == w.dtype, (name, g.shape, w.shape)
            np.testing.assert_array_equal(g, w, err_msg=name)


@pytest.fixture(scope="module")
def fitted(client):
    """A three-class model trained on a frame with a categorical column, and one on the same
    rows as an array."""
    frame = _frame()
    y = _three_classes(frame)
    params = dict(n_estimators=4, grow_policy="depthwise", random_state=0)
    on_frame = DaskBoostClassifier(client=client, **params).fit(frame, y)
    X = frame[["a", "b", "c"]].to_numpy()
    on_array = DaskBoostClassifier(client=client, **params).fit(X, y)
    return frame, on_frame, X, on_array


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_prediction_method_accepts_empty_partitions_of_arrays(fitted, layout):
    _, _, X, model = fitted
    collection, rows = _array_with(X, LAYOUTS[layout])
    _check_every_prediction(model, collection, X[rows])


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_prediction_method_accepts_empty_partitions_of_frames(fitted, layout):
    frame, model, _, _ = fitted
    collection, rows = _frame_with(frame, LAYOUTS[layout])
    _check_every_prediction(model, collection, frame.iloc[rows])


def test_a_wholly_empty_collection_gets_empty_predictions_of_the_right_shape(fitted):
    frame, model, _, _ = fitted
    collection, _ = _frame_with(frame, LAYOUTS["wholly empty"])
    assert model.predict(collection).compute().shape == (0,)
    assert model.predict(collection).dtype == model.classes_.dtype
    assert model.predict_proba(collection).compute().shape == (0, 3)
    assert model.decision_function(collection).compute().shape == (0, 3)
    assert model.apply(collection).compute().shape == (0, 4, 3)
    assert model.apply(collection).dtype == np.int32


@pytest.mark.parametrize("layout", [k for k in LAYOUTS if k != "wholly empty"])
def test_fits_on_empty_partitions_equal_the_local_fit(client, layout):
    frame = _frame(seed=1)
    y = frame["a"].to_numpy() + (frame["k"] == "q") + 0.1 * frame["b"].to_numpy()
    params = dict(n_estimators=8, grow_policy="symmetric", random_state=0,
                  categorical_encoding="sets")    # what a Dask fit's "auto" keeps
    for collection, rows in (_frame_with(frame, LAYOUTS[layout]),
                             _array_with(frame[["a", "b"]].to_numpy(), LAYOUTS[layout])):
        local_X = frame.iloc[rows] if hasattr(collection, "columns") else \
            frame[["a", "b"]].to_numpy()[rows]
        model = DaskBoostRegressor(client=client, **params).fit(collection, y[rows])
        local = BoostRegressor(n_jobs=1, **params).fit(local_X, y[rows])
        assert sum(model.dask_info_["rows"]) == rows.size
        close = np.abs(model.predict(local_X) - local.predict(local_X)) <= 1e-6
        assert close.mean() >= 0.99, layout


@pytest.mark.parametrize("estimator", [DaskBoostRegressor, DaskBoostClassifier])
def test_a_fit_on_no_rows_is_refused_by_name(client, estimator):
    collection, _ = _frame_with(_frame(), LAYOUTS["wholly empty"])
    with pytest.raises(ValueError, match="y has 0 entries.*at least 1 row"):
        estimator(client=client, n_estimators=2).fit(collection, np.zeros(0))


# -- a worker that stops answering ------------------------------------------------------------
@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP (POSIX)")
def test_a_stopped_worker_fails_the_fit_within_the_timeout_and_is_named():
    """A worker that stops answering without leaving the cluster (SIGSTOP, as a frozen VM
    or an endless pause) fails the fit about ``timeout`` seconds after it stopped, with an
    error naming its address; the client then trains again."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 6))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    timeout = 5.0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit=0) as cluster, \
            distributed.Client(cluster) as c:
        pids = c.run(os.getpid)
        victim = sorted(pids)[1]
        import_boostlib(c)
        stopped = []
        stopper = threading.Thread(target=signal_when_training, daemon=True,
                                   args=(c, pids[victim], signal.SIGSTOP, 1.0, stopped))
        stopper.start()
        try:
            with pytest.raises(boostlib_dask.CollectiveError) as info:
                DaskBoostClassifier(client=c, n_estimators=100000, timeout=timeout).fit(
                    da.from_array(X, chunks=(5000, 6)), da.from_array(y, chunks=5000))
            took = time.perf_counter() - stopped[0]
        finally:
            stopper.join()
            os.kill(pids[victim], signal.SIGCONT)
        assert f"({victim}) stopped answering" in str(info.value)
        assert f"timeout={timeout:g} s" in str(info.value)
        assert "update rule" not in str(info.value)      # the sum's caller is not blamed
        assert timeout - 1 <= took < timeout + 10, took
        assert c.submit(lambda: 1 + 1, pure=False).result(timeout=30) == 2


#: where the driver's set-up is when a worker stops: (function of the driver patched, whether
#: the worker stops once it returns, y as a Dask array, the step the error names)
SETUP_FAULTS = {
    "before the fit": (None, False, False, "computing the partitions of X"),
    "y on the cluster": (None, False, True, "computing y"),
    "sampling for the borders": ("gather_rows", False, False,
                                 "fetching the rows the bin borders are computed on"),
    "after the borders": ("global_mapper", True, False, "sending the bin borders"),
}


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP (POSIX)")
@pytest.mark.parametrize("fault", list(SETUP_FAULTS))
def test_a_worker_stopped_during_the_set_up_fails_the_fit_within_the_timeout(monkeypatch,
                                                                              fault):
    """A worker that stops answering before training starts (while the driver computes the
    partitions, samples rows for the borders or sends the workers their data) fails the fit
    about ``timeout`` seconds later (not heard from by the scheduler), naming the worker,
    the step and the timeout; it used to leave the fit waiting until the scheduler dropped
    the worker (worker-ttl, 5 minutes)."""
    from boostlib.dask import driver
    patched, after, dask_y, step = SETUP_FAULTS[fault]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 4))
    y = (X[:, 0] > 0).astype(int)
    timeout = 3.0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit=0) as cluster, \
            distributed.Client(cluster) as c:
        pids = c.run(os.getpid)
        victim = sorted(pids)[1]
        import_boostlib(c)
        stopped = []
        if patched is None:
            os.kill(pids[victim], signal.SIGSTOP)
            stopped.append(time.perf_counter())
        else:
            signal_at_call(monkeypatch, driver, patched, pids[victim], signal.SIGSTOP,
                           stopped, after)
        try:
            with pytest.raises(boostlib_dask.CollectiveError) as info:
                DaskBoostClassifier(client=c, n_estimators=5, timeout=timeout).fit(
                    da.from_array(X, chunks=(1000, 4)),
                    da.from_array(y, chunks=1000) if dask_y else y)
            took = time.perf_counter() - stopped[0]
        finally:
            os.kill(pids[victim], signal.SIGCONT)
        message = str(info.value)
        assert f"worker {victim} stopped answering while the fit was {step}" in message
        assert f"timeout={timeout:g} s" in message
        assert took < timeout + 6, took
        assert c.submit(lambda: 1 + 1, pure=False).result(timeout=30) == 2


def _lonely_rank(fit, rank, addresses, timeout):
    """Start a collective as worker ``rank`` of a fit whose other worker never starts."""
    from boostlib.dask.collective import DaskCollective
    start = time.perf_counter()
    try:
        DaskCollective(fit, rank, addresses, timeout)
    except boostlib_dask.CollectiveError as exc:
        return str(exc), time.perf_counter() - start
    return "connected", time.perf_counter() - start


def _lonely_sum(fit, addresses, timeout, sockets):
    """Sum as worker 0 of a fit whose worker 1 accepts the connection but never sums."""
    from boostlib.dask.collective import DaskCollective
    collective = DaskCollective(fit, 0, addresses, timeout, sockets=sockets)
    start = time.perf_counter()
    try:
        collective.allreduce(np.zeros(3))
    except boostlib_dask.CollectiveError as exc:
        return str(exc), time.perf_counter() - start
    finally:
        collective.close()
    return "summed", time.perf_counter() - start


@pytest.mark.parametrize("sockets", [True, False])
def test_a_worker_that_never_sums_is_named_within_the_timeout(client, sockets):
    """Over the training threads' sockets and over Dask messages alike."""
    from boostlib.dask.collective import install
    from boostlib.dask.parts import worker_addresses
    addresses = worker_addresses(client)
    client.run(install, workers=addresses)
    message, took = client.submit(_lonely_sum, f"never-sums-{sockets}", addresses, 2.0,
                                  sockets, workers=[addresses[0]], pure=False).result(60)
    assert message == (f"worker 0 ({addresses[0]}): worker 1 ({addresses[1]}) stopped "
                       "answering: no reply within timeout=2 s")
    assert 2.0 <= took < 2.0 + 2.0, took


def test_a_worker_that_never_connects_is_named_within_the_timeout(client):
    """Connecting is bounded by one timeout in all, and the error names the worker that
    never connected."""
    from boostlib.dask.collective import install
    from boostlib.dask.parts import worker_addresses
    addresses = worker_addresses(client)
    client.run(install, workers=addresses)
    message, took = client.submit(_lonely_rank, "never-connects", 1, addresses, 2.0,
                                  workers=[addresses[1]], pure=False).result(timeout=60)
    assert f"worker 0 ({addresses[0]}) did not connect within timeout=2 s" in message
    assert 2.0 <= took < 2.0 + 2.0, took


# -- partitions whose dtypes differ -----------------------------------------------------------
def _pieces(n_parts=4, n=400, seed=2):
    rng = np.random.default_rng(seed)
    return [pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                          "k": pd.Categorical(rng.choice(list("pqr"), n),
                                              categories=list("pqr"))})
            for _ in range(n_parts)]


def _built_from(pieces):
    """A Dask DataFrame whose partitions are ``pieces``, declaring the first one's dtypes
    (as ``dd.from_map`` builds one from files or a database)."""
    return dd.from_map(_same, pieces, meta=pieces[0].iloc[:0], enforce_metadata=False)


def _same(piece):
    return piece


def _target(frame):
    return (2 * frame["a"] + frame["b"] + (frame["k"].astype(str) == "p")).to_numpy()


def test_numbers_of_other_types_in_some_partitions_give_the_local_model(client):
    """ints, float32 and nullable ints where float64 is declared: every value becomes
    float64 on the workers, as in the partitions' concatenation, which a local fit gets."""
    pieces = _pieces()
    pieces[1]["b"] = np.round(pieces[1]["b"] * 10).astype(np.int64)
    pieces[2]["b"] = pieces[2]["b"].astype(np.float32)
    pieces[3]["b"] = np.round(pieces[3]["b"] * 10).astype("Int64")
    pieces[3].loc[5, "b"] = pd.NA
    whole = pd.concat(pieces, ignore_index=True)
    assert whole["b"].dtype.kind == "f"
    y = _target(whole.fillna(0))
    params = dict(n_estimators=10, grow_policy="depthwise", random_state=0,
                  categorical_encoding="sets")    # what a Dask fit's "auto" keeps
    model = DaskBoostRegressor(client=client, **params).fit(_built_from(pieces), y)
    local = BoostRegressor(n_jobs=1, **params).fit(whole, y)
    close = np.abs(model.predict(whole) - local.predict(whole)) <= 1e-6
    assert close.mean() >= 0.99


def _with_text(pieces):
    pieces[2]["b"] = pieces[2]["b"].astype(str)
    return ("column 'b' of partition 2 holds (str|string|object), where the DataFrame "
            "declares float64")


def _with_objects(pieces):
    pieces[3]["b"] = pieces[3]["b"].astype(object)
    # (Dask may convert an object column to strings: either is named)
    return ("column 'b' of partition 3 holds (object|string), where the DataFrame declares "
            "float64")


def _with_booleans(pieces):
    pieces[1]["b"] = pieces[1]["b"] > 0
    return "column 'b' of partition 1 holds bool, where the DataFrame declares float64"


def _with_other_categories(pieces):
    pieces[2]["k"] = pieces[2]["k"].cat.set_categories(list("rs"))
    return (r"column 'k' of partition 2 has the categories \['r', 's'\], where the DataFrame "
            r"declares the categories \['p', 'q', 'r'\]")


def _with_reordered_categories(pieces):
    pieces[1]["k"] = pieces[1]["k"].cat.reorder_categories(list("rqp"))
    return r"column 'k' of partition 1 has the categories \['r', 'q', 'p'\]"


def _with_numbers_for_categories(pieces):
    pieces[3]["k"] = pieces[3]["k"].cat.codes.astype(float)
    return (r"column 'k' of partition 3 holds float64, where the DataFrame declares the "
            r"categories \['p', 'q', 'r'\]")


def _with_a_renamed_column(pieces):
    pieces[1] = pieces[1].rename(columns={"b": "B"})
    return r"partition 1 has the columns \['a', 'B', 'k'\], where the DataFrame declares"


@pytest.mark.parametrize("spoil", [_with_text, _with_objects, _with_booleans,
                                   _with_other_categories, _with_reordered_categories,
                                   _with_numbers_for_categories, _with_a_renamed_column])
def test_a_partition_of_other_dtypes_is_named_with_its_column(client, spoil):
    pieces = _pieces()
    y = _target(pd.concat(pieces, ignore_index=True))
    expected = spoil(pieces)
    with pytest.raises(ValueError, match=expected):
        DaskBoostRegressor(client=client, n_estimators=2).fit(_built_from(pieces), y)


def _text_pieces(n_parts=4, n=300, seed=4):
    """Partitions with a text column ``t``: its labels are gathered (one pass over the
    partitions) before the partitions are checked one by one."""
    rng = np.random.default_rng(seed)
    return [pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                          "t": rng.choice(list("xyz"), n)}) for _ in range(n_parts)]


#: a partition's columns changed, and what the error says after "has the columns"
COLUMN_CHANGES = {
    "text column renamed": (lambda p: p.rename(columns={"t": "T"}),
                            r"\['a', 'b', 'T'\], where the DataFrame declares \['a', 'b', "
                            r"'t'\]: it lacks 't' and 'T' is not declared"),
    "text column missing": (lambda p: p.drop(columns=["t"]),
                            r"\['a', 'b'\], where the DataFrame declares \['a', 'b', 't'\]: "
                            r"it lacks 't';"),
    "numeric column renamed": (lambda p: p.rename(columns={"b": "B"}),
                               r"\['a', 'B', 't'\], .*: it lacks 'b' and 'B' is not declared"),
    "extra columns": (lambda p: p.assign(c=1.0, d=2.0),
                      r"\['a', 'b', 't', 'c', 'd'\], .*: 'c', 'd' are not declared"),
    "reordered": (lambda p: p[["t", "a", "b"]],
                  r"\['t', 'a', 'b'\], .*: they are in another order"),
}


@pytest.mark.parametrize("change", list(COLUMN_CHANGES))
def test_a_partition_of_other_columns_is_named_with_the_columns(client, change):
    """Columns renamed, missing, added or reordered in one partition (which a DataFrame
    built from files or a database declares as the first one's) are named with the
    partition and what was declared, before any labels are gathered: a text column
    renamed gave pandas' bare KeyError from Dask's ``categorize``."""
    pieces = _text_pieces()
    y = pd.concat(pieces, ignore_index=True)["a"].to_numpy()
    spoil, expected = COLUMN_CHANGES[change]
    pieces[2] = spoil(pieces[2])
    with pytest.raises(ValueError, match=r"X: partition 2 has the columns " + expected):
        DaskBoostRegressor(client=client, n_estimators=2).fit(_built_from(pieces), y)


def test_array_chunks_of_other_types(client):
    """Numbers of any type stand for numbers in an array (as NumPy concatenates them);
    text in a chunk of a float array names the chunk."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(900, 2))
    y = X[:, 0] + X[:, 1]
    blocks = [X[:300], (X[300:600] > 0), X[600:].astype(np.float32)]
    params = dict(n_estimators=5, random_state=0)
    Xd = da.concatenate([da.from_delayed(dask.delayed(b), shape=b.shape, dtype=np.float64)
                         for b in blocks])
    model = DaskBoostRegressor(client=client, **params).fit(Xd, y)
    whole = np.concatenate(blocks)
    local = BoostRegressor(n_jobs=1, **params).fit(whole, y)
    assert np.mean(np.abs(model.predict(whole) - local.predict(whole)) <= 1e-6) >= 0.99
    blocks[1] = blocks[1].astype(str)
    Xd = da.concatenate([da.from_delayed(dask.delayed(b), shape=b.shape, dtype=np.float64)
                         for b in blocks])
    with pytest.raises(ValueError, match="X: partition 1 holds <U5, where the Dask array "
                                         "declares float64"):
        DaskBoostRegressor(client=client, n_estimators=2).fit(Xd, y)


def test_a_prediction_names_the_partition_whose_data_is_wrong(client):
    pieces = _pieces()
    y = _target(pd.concat(pieces, ignore_index=True))
    model = DaskBoostRegressor(client=client, n_estimators=2).fit(_built_from(pieces), y)
    _with_objects(pieces)
    with pytest.raises(ValueError, match="partition 3 of X: .*'b' \\((object|string)\\)"):
        model.predict(_built_from(pieces)).compute()
