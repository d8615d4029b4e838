"""Issue 56 on Dask: raw-score offsets (``init_score``) partitioned like ``X``, and Dask
DataFrames whose partitions hold pandas nullable, Arrow-backed, text and categorical columns
with ``pd.NA``. Each fit must give the model a local fit gives on the same rows (the
partitions concatenated), to the tolerance of ``tests/test_dask.py``'s equality tests."""
import numpy as np
import pytest

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


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None, memory_limit=0) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _features(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    return rng, X


def _poisson(n=3000, seed=0):
    """Counts over an exposure: ``log(exposure)`` is the offset."""
    rng, X = _features(n, seed)
    exposure = rng.uniform(0.2, 5.0, n)
    y = rng.poisson(np.exp(0.4 * np.nan_to_num(X[:, 0]) - 0.5) * exposure).astype(float)
    return X, y, np.log(exposure)


# -- offsets ------------------------------------------------------------------------------

def test_poisson_offsets_give_the_local_model(client):
    X, y, off = _poisson()
    Xv, yv, offv = _poisson(n=600, seed=1)
    params = dict(n_estimators=25, grow_policy="depthwise", random_state=0, loss="poisson")
    chunks = (900, 900, 700, 500)
    model = DaskBoostRegressor(client=client, **params).fit(
        da.from_array(X, chunks=(chunks, 4)), da.from_array(y, chunks=chunks),
        init_score=da.from_array(off, chunks=chunks), eval_set=[(Xv, yv)],
        eval_init_score=[offv])
    local = BoostRegressor(n_jobs=1, **params).fit(X, y, init_score=off, eval_set=[(Xv, yv)],
                                                   eval_init_score=[offv])
    assert np.array_equal(model.model_.ensemble.bias_array, [0.0])
    Xd, offd = da.from_array(Xv, chunks=(200, 4)), da.from_array(offv, chunks=200)
    counts = model.predict(Xd, init_score=offd)
    assert isinstance(counts, da.Array)
    np.testing.assert_allclose(counts.compute(), local.predict(Xv, init_score=offv),
                               rtol=1e-9)
    rates = model.predict(Xd).compute()         # per unit of exposure
    np.testing.assert_allclose(rates, local.predict(Xv), rtol=1e-9)
    np.testing.assert_allclose(counts.compute(), rates * np.exp(offv), rtol=1e-12)
    np.testing.assert_allclose(model.evals_result_["valid_0"]["poisson"],
                               local.evals_result_["valid_0"]["poisson"], rtol=1e-9)


def test_binary_offsets_from_a_column_of_the_frame(client):
    """The usual layout: features and offsets are columns of one Dask DataFrame, so they
    share its partitions."""
    rng, X = _features(2400, 2)
    off = rng.normal(size=2400)
    y = (np.nan_to_num(X[:, 0]) + off + 0.5 * rng.normal(size=2400) > 0).astype(int)
    frame = pd.DataFrame(X, columns=list("abcd")).assign(offset=off)
    ddf = dd.from_pandas(frame, npartitions=5, sort=False)
    features, offsets = ddf.drop(columns="offset"), ddf["offset"]
    params = dict(n_estimators=20, grow_policy="symmetric", random_state=1)
    model = DaskBoostClassifier(client=client, **params).fit(
        features, dd.from_pandas(pd.Series(y), npartitions=5, sort=False), init_score=offsets)
    local = BoostClassifier(n_jobs=1, **params).fit(frame.drop(columns="offset"), y,
                                                    init_score=off)
    proba = model.predict_proba(features, init_score=offsets).compute()
    np.testing.assert_allclose(proba, local.predict_proba(frame.drop(columns="offset"),
                                                          init_score=off), atol=1e-9)
    raw = model.decision_function(features).compute() + off
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-raw)), rtol=1e-12)
    labels = model.predict(features, init_score=offsets).compute()
    np.testing.assert_array_equal(labels, (raw > 0).astype(int))


def test_multiclass_offsets_one_per_class_with_early_stopping(client):
    rng, X = _features(3000, 3)
    off = rng.normal(size=(3000, 3))
    score = np.nan_to_num(X[:, 0]) + 0.5 * rng.normal(size=3000)
    y = np.digitize(score + off[:, 2] - off[:, 0], [-0.7, 0.7])
    tr, va = slice(0, 2400), slice(2400, None)
    params = dict(n_estimators=80, grow_policy="lossguide", random_state=2,
                  learning_rate=0.3, early_stopping_rounds=4)
    model = DaskBoostClassifier(client=client, **params).fit(
        da.from_array(X[tr], chunks=(600, 2)), y[tr],       # chunked across columns too
        init_score=da.from_array(off[tr], chunks=(600, 2)),
        eval_set=[(X[va], y[va])], eval_init_score=[da.from_array(off[va], chunks=300)])
    local = BoostClassifier(n_jobs=1, **params).fit(
        X[tr], y[tr], init_score=off[tr], eval_set=[(X[va], y[va])],
        eval_init_score=[off[va]])
    assert model.best_iteration_ == local.best_iteration_ < 79
    assert np.array_equal(model.model_.ensemble.bias_array, np.zeros(3))
    proba = model.predict_proba(da.from_array(X, chunks=(1000, 4)),
                                init_score=da.from_array(off, chunks=(1000, 3))).compute()
    np.testing.assert_allclose(proba, local.predict_proba(X, init_score=off), atol=1e-9)
    raw = model.decision_function(X) + off
    expected = np.exp(raw - raw.max(axis=1, keepdims=True))
    np.testing.assert_allclose(proba, expected / expected.sum(axis=1, keepdims=True),
                               rtol=1e-12)


def test_in_memory_offsets_with_dask_X(client):
    """Offsets in memory are cut like the rows of X: at fit (by the driver, as the target
    is) and at prediction on a Dask array."""
    X, y, off = _poisson(n=2000, seed=4)
    params = dict(n_estimators=10, random_state=0, loss="poisson")
    model = DaskBoostRegressor(client=client, **params).fit(
        dd.from_pandas(pd.DataFrame(X), npartitions=3), y, init_score=off)
    local = BoostRegressor(n_jobs=1, **params).fit(pd.DataFrame(X), y, init_score=off)
    Xd = da.from_array(X, chunks=(300, 4))
    np.testing.assert_allclose(model.predict(Xd, init_score=off).compute(),
                               local.predict(X, init_score=off), rtol=1e-9)
    np.testing.assert_allclose(model.predict(X, init_score=da.from_array(off, chunks=500)),
                               local.predict(X, init_score=off), rtol=1e-9)
    # X in memory (cut by the estimator) with Dask offsets: computed, cut as y is
    model = DaskBoostRegressor(client=client, **params).fit(
        pd.DataFrame(X), y, init_score=da.from_array(off, chunks=700))
    np.testing.assert_allclose(model.predict(X, init_score=off),
                               local.predict(X, init_score=off), rtol=1e-9)


def _poisson_dask(n=1200, chunks=400):
    X, y, off = _poisson(n=n, seed=5)
    return (da.from_array(X, chunks=(chunks, 4)), da.from_array(y, chunks=chunks),
            da.from_array(off, chunks=chunks), X, y, off)


@pytest.mark.parametrize("offsets, match", [
    (lambda off: off.rechunk(300), r"init_score has 4 partitions.* X has 3"),
    (lambda off: off.rechunk(((400, 300, 500),)),
     r"init_score: partition 1 has 300 rows, where partition 1 of X has 400"),
    (lambda off: da.concatenate([off[:-1], da.from_array(np.ones(2), chunks=2)])
     .rechunk(((400, 400, 401),)), r"partition 2 has 401 rows, where partition 2 of X"),
    (lambda off: da.where(da.arange(1200, chunks=400) == 923, np.nan, off),
     r"init_score\[923\] is \[nan\]; expected finite raw-score offsets"),
    (lambda off: da.where(da.arange(1200, chunks=400) == 5, np.inf, off),
     r"init_score\[5\] is \[inf\]; expected finite"),
    (lambda off: da.stack([off, off], axis=1), r"init_score has 2 column\(s\); the loss has 1"),
    (lambda off: off.astype(str), r"init_score holds text"),
    (lambda off: np.zeros(1199), r"init_score has shape \(1199,\); expected \(1200,\)"),
])
def test_bad_offsets_are_named_before_training(client, offsets, match):
    Xd, yd, off, *_ = _poisson_dask()
    with pytest.raises(ValueError, match=match):
        DaskBoostRegressor(client=client, n_estimators=2, loss="poisson").fit(
            Xd, yd, init_score=offsets(off))


def test_offsets_of_a_frame_whose_partitions_do_not_line_up(client):
    frame = pd.DataFrame(_poisson(n=1200, seed=6)[0], columns=list("abcd"))
    ddf = dd.from_pandas(frame, npartitions=3, sort=False)
    off = dd.from_pandas(pd.Series(np.zeros(1200)), npartitions=2, sort=False)
    with pytest.raises(ValueError, match=r"init_score has 2 partitions.* X has 3.*"
                                         r"partitions of the DataFrame"):
        DaskBoostRegressor(client=client, n_estimators=2).fit(ddf, np.zeros(1200),
                                                               init_score=off)


def test_multiclass_offsets_need_a_column_per_class(client):
    rng, X = _features(900, 7)
    y = rng.integers(0, 3, 900)
    with pytest.raises(ValueError, match=r"init_score has 1 column\(s\); the loss has 3 "
                                         r"output\(s\): expected shape \(900, 3\)"):
        DaskBoostClassifier(client=client, n_estimators=2).fit(
            da.from_array(X, chunks=(300, 4)), y, init_score=np.zeros(900))
    with pytest.raises(ValueError, match=r"eval_init_score\[0\] has 2 column\(s\); the loss "
                                         r"has 3"):
        DaskBoostClassifier(client=client, n_estimators=2).fit(
            da.from_array(X, chunks=(300, 4)), y, init_score=np.zeros((900, 3)),
            eval_set=[(X, y)], eval_init_score=[np.zeros((900, 2))])


def test_eval_sets_need_offsets_when_training_has_them(client):
    Xd, yd, off, X, y, _ = _poisson_dask()
    est = DaskBoostRegressor(client=client, n_estimators=2, loss="poisson")
    with pytest.raises(ValueError, match="init_score is given but eval_init_score is not"):
        est.fit(Xd, yd, init_score=off, eval_set=[(X, y)])
    with pytest.raises(ValueError, match=r"eval_init_score\[0\] has shape \(10,\)"):
        est.fit(Xd, yd, init_score=off, eval_set=[(X, y)], eval_init_score=[off[:10]])
    with pytest.raises(ValueError, match="eval_init_score is given without eval_set"):
        est.fit(Xd, yd, eval_init_score=[off])


def test_bad_offsets_at_prediction_are_named(client):
    Xd, yd, off, X, y, off_np = _poisson_dask()
    model = DaskBoostRegressor(client=client, n_estimators=3, loss="poisson").fit(Xd, yd)
    with pytest.raises(ValueError, match=r"init_score has 4 partitions.* X has 3"):
        model.predict(Xd, init_score=off.rechunk(300))
    with pytest.raises(ValueError, match=r"init_score: partition 1 has 300 rows, where "
                                         r"partition 1 of X has 400"):
        model.predict(Xd, init_score=off.rechunk(((400, 300, 500),)))
    with pytest.raises(ValueError, match=r"init_score has shape \(1199,\)"):
        model.predict(Xd, init_score=off_np[:-1])
    frame = dd.from_pandas(pd.DataFrame(X), npartitions=3, sort=False)
    with pytest.raises(ValueError, match=r"init_score: X is a Dask DataFrame.*Dask "
                                         r"collection"):
        model.predict(frame, init_score=off_np)
    bad = dd.from_pandas(pd.Series(np.where(np.arange(1200) == 1000, np.nan, off_np)),
                         npartitions=3, sort=False)
    with pytest.raises(ValueError, match=r"partition 2 of init_score: init_score\[200\] is "
                                         r"\[nan\]"):
        model.predict(frame, init_score=bad).compute()
    short = dd.from_pandas(pd.Series(off_np[:-2]), npartitions=3, sort=False)
    with pytest.raises(ValueError, match=r"init_score: partition \d has 39\d rows, where "
                                         r"partition \d of X has 400"):
        model.predict(frame, init_score=short).compute()


# -- nullable, Arrow-backed, text and categorical columns ---------------------------------

def _typed_frame(n=2400, seed=10):
    """A frame of every column kind, with ``pd.NA`` as missing, whose rows are sorted so that
    the first partitions lack some text levels (and one column is wholly missing there);
    and a target that depends on every column."""
    pa = importorskip("pyarrow")
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = rng.integers(0, 8, n)
    c = rng.random(n) < 0.4
    later = np.arange(n) >= n // 2
    t = np.where(later, rng.choice(["x", "y", "z"], n), rng.choice(["w", "x"], n))
    u = rng.choice(["k", "l", "m", "n"], n)
    v = rng.choice(["p", "q", "r"], n)
    g = rng.choice(["lo", "mid", "hi"], n)
    d = np.where(later, rng.choice([30, 10, 20], n), rng.choice([10, 40], n))

    def missing(values, rate=0.08):
        return np.where(rng.random(n) < rate, None, values).tolist()

    frame = pd.DataFrame({
        "a": pd.array(missing(a), dtype="Float64"),
        "b": pd.array(missing(b), dtype="Int64"),
        "c": pd.array(missing(c), dtype="boolean"),
        "t": pd.array(missing(t), dtype="string[pyarrow]"),
        "u": pd.array(missing(u), dtype=pd.ArrowDtype(pa.string())),
        "v": pd.array(missing(v), dtype=pd.ArrowDtype(pa.large_string())),
        "w": pd.array(missing(v), dtype=pd.ArrowDtype(pa.dictionary(pa.int32(),
                                                                     pa.string()))),
        "e": pd.array(missing(a * 2 + rng.normal(size=n)), dtype=pd.ArrowDtype(pa.float64())),
        "i": pd.array(missing(b * 3 - 1), dtype=pd.ArrowDtype(pa.int64())),
        "f": pd.array(missing(rng.random(n) < 0.5), dtype=pd.ArrowDtype(pa.bool_())),
        "g": pd.Categorical(missing(g), categories=["lo", "mid", "hi"]),
        "s": pd.array(missing(np.where(later, rng.choice(["a", "b"], n), None), 0.0),
                      dtype="string[pyarrow]"),
        "o": pd.Series(missing(u), dtype=object),
        "di": pd.array(missing(d), dtype=pd.ArrowDtype(pa.dictionary(pa.int8(), pa.int64()))),
    })
    effect = {"w": -1.0, "x": 1.0, "y": 0.0, "z": 2.0, "k": 0.5, "l": -0.5, "m": 0.0,
              "n": 1.0, "p": 0.3, "q": -0.3, "r": 0.0, "lo": -1.0, "mid": 0.0, "hi": 1.0}
    y = (np.nan_to_num(frame["a"].to_numpy(dtype=float, na_value=np.nan))
         + 0.2 * b + c + np.vectorize(lambda s: effect.get(s, 0.0))(t)
         + np.vectorize(lambda s: effect.get(s, 0.0))(u)
         + np.vectorize(lambda s: effect.get(s, 0.0))(v)
         + np.vectorize(lambda s: effect.get(s, 0.0))(g) + 0.01 * d
         + 0.1 * rng.normal(size=n))
    return frame, y


def _levels(model):
    return [None if lv is None else list(lv) for lv in model.model_.ensemble.bin_mapper.levels_]


@pytest.mark.parametrize("convert_string", [True, False])
def test_nullable_arrow_and_text_partitions_give_the_local_model(client, convert_string):
    """Partitions of nullable, Arrow-backed, text, dictionary and categorical columns:
    the Dask fit equals the local fit on the partitions concatenated (the same levels,
    sorted for text, and the same predictions), with Dask's default string conversion
    or without it (``object`` columns kept)."""
    frame, y = _typed_frame()
    params = dict(n_estimators=25, grow_policy="depthwise", random_state=0,
                  learning_rate=0.2, categorical_encoding="sets")  # a Dask fit's "auto"
    with dask.config.set({"dataframe.convert-string": convert_string}):
        ddf = dd.from_pandas(frame, npartitions=4, sort=False)
        yd = dd.from_pandas(pd.Series(y), npartitions=4, sort=False)
        model = DaskBoostRegressor(client=client, **params).fit(ddf, yd)
        predicted = model.predict(ddf).compute()
        together = pd.concat([part.compute() for part in ddf.to_delayed()])
    local = BoostRegressor(n_jobs=1, **params).fit(together, y)
    assert _levels(model) == _levels(local)
    levels = dict(zip(frame.columns, _levels(local)))
    assert levels["t"] == ["w", "x", "y", "z"] and levels["g"] == ["lo", "mid", "hi"]
    assert levels["w"] == ["p", "q", "r"] and levels["di"] == [10, 20, 30, 40]
    assert levels["s"] == ["a", "b"] and levels["a"] is None
    np.testing.assert_allclose(predicted, local.predict(together), atol=1e-9)
    np.testing.assert_allclose(predicted, local.predict(frame), atol=1e-9)
    assert list(model.feature_names_in_) == list(frame.columns)


def test_typed_partitions_give_the_model_of_the_same_polars_frame(client):
    """The same data as a polars frame (nulls, String, Enum for the ordered categories)
    fitted locally gives the Dask model too."""
    pl = importorskip("polars")
    frame, y = _typed_frame(seed=11)
    frame = frame.drop(columns=["w", "di", "o"])     # polars has no pandas-dictionary twin
    polars = pl.DataFrame({
        "a": pl.Series(frame["a"].astype(object).where(frame["a"].notna(), None).tolist(),
                       dtype=pl.Float64),
        "b": pl.Series(frame["b"].astype(object).where(frame["b"].notna(), None).tolist(),
                       dtype=pl.Int64),
        "c": pl.Series(frame["c"].astype(object).where(frame["c"].notna(), None).tolist(),
                       dtype=pl.Boolean),
        **{k: pl.Series(frame[k].astype(object).where(frame[k].notna(), None).tolist(),
                        dtype=pl.String) for k in ("t", "u", "v")},
        "e": pl.Series(frame["e"].astype(object).where(frame["e"].notna(), None).tolist(),
                       dtype=pl.Float64),
        "i": pl.Series(frame["i"].astype(object).where(frame["i"].notna(), None).tolist(),
                       dtype=pl.Int64),
        "f": pl.Series(frame["f"].astype(object).where(frame["f"].notna(), None).tolist(),
                       dtype=pl.Boolean),
        "g": pl.Series(frame["g"].astype(object).where(frame["g"].notna(), None).tolist(),
                       dtype=pl.Enum(["lo", "mid", "hi"])),
        "s": pl.Series(frame["s"].astype(object).where(frame["s"].notna(), None).tolist(),
                       dtype=pl.String),
    })
    params = dict(n_estimators=20, grow_policy="lossguide", random_state=3,
                  categorical_encoding="sets")    # what a Dask fit's "auto" keeps
    model = DaskBoostRegressor(client=client, **params).fit(
        dd.from_pandas(frame, npartitions=3, sort=False), y)
    local = BoostRegressor(n_jobs=1, **params).fit(polars, y)
    assert _levels(model) == _levels(local)
    np.testing.assert_allclose(model.predict(frame), local.predict(polars), atol=1e-9)


def test_categories_that_differ_by_partition_are_agreed_on(client):
    """Categorical partitions whose categories differ (Dask declares them unknown): coded
    as the local fit codes their concatenation, whose categories pandas turns into labels
    (sorted); partitions sharing one category order keep it."""
    rng = np.random.default_rng(12)
    n = 1800
    labels = np.where(np.arange(n) < 900, rng.choice(["q", "b"], n), rng.choice(["q", "m"], n))
    x = rng.normal(size=n)
    y = x + (labels == "q") - (labels == "m") + 0.1 * rng.normal(size=n)
    pieces = [pd.DataFrame({"x": x[s], "k": pd.Categorical(labels[s])})
              for s in (slice(0, 900), slice(900, None))]
    ddf = _unknown_categories(pieces)
    assert not ddf["k"].cat.known
    params = dict(n_estimators=10, random_state=0)
    # the Dask fit at the default categorical_encoding ("auto") keeps set splits: the
    # local fit with "sets" (a local "auto" one-hot encodes a feature of 3 levels)
    model = DaskBoostRegressor(client=client, **params).fit(ddf, y)
    params["categorical_encoding"] = "sets"
    together = pd.concat(pieces)
    assert str(together["k"].dtype) != "category"       # pandas: the categories differ
    local = BoostRegressor(n_jobs=1, **params).fit(together, y)
    assert _levels(model) == _levels(local) == [None, ["b", "m", "q"]]
    np.testing.assert_allclose(model.predict(together), local.predict(together), atol=1e-9)
    same = [pd.DataFrame({"x": x[s], "k": pd.Categorical(labels[s], categories=["q", "m", "b"])})
            for s in (slice(0, 900), slice(900, None))]
    model = DaskBoostRegressor(client=client, **params).fit(_unknown_categories(same), y)
    assert _levels(model) == [None, ["q", "m", "b"]]
    np.testing.assert_allclose(model.predict(together),
                               BoostRegressor(n_jobs=1, **params).fit(pd.concat(same), y)
                               .predict(together), atol=1e-9)


def _unknown_categories(pieces):
    """The frames ``pieces`` as the partitions of a Dask DataFrame whose column ``k`` has
    categories Dask does not know."""
    ddf = dd.from_delayed([dask.delayed(p) for p in pieces], meta=pieces[0].iloc[:0],
                          verify_meta=False)
    return ddf.assign(k=ddf["k"].cat.as_unknown())
