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
                  learning_rate=0.2)
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
    params = dict(n_estimators=20, grow_policy="lossguide", random_state=3)
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
    model = DaskBoostRegressor(client=client, **params).fit(ddf, y)
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
