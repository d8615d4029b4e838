"""Tables of every common kind give the model pandas gives, bit for bit: polars frames,
pyarrow Tables and RecordBatches, objects with the Arrow PyCapsule stream interface, and
pandas' nullable and Arrow-backed dtypes (numbers, booleans, text, categories, nulls)."""
import datetime
import subprocess
import sys

import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRegressor, Dataset, train
from optional_imports import importorskip

pd = importorskip("pandas")
pa = importorskip("pyarrow")


def _frame(seed=0, n=400):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    x[::7] = np.nan
    k = rng.integers(0, 5, n).astype(float)
    k[::11] = np.nan
    text = np.array(["cat", "dog", "émeu", "ant"], dtype=object)[rng.integers(0, 4, n)]
    text[::13] = None
    level = np.array(["lo", "mid", "hi"], dtype=object)[rng.integers(0, 3, n)]
    level[::17] = None
    flag = rng.random(n) < 0.3
    X = pd.DataFrame({"x": x, "k": k, "text": pd.Series(text, dtype=object),
                      "level": pd.Categorical(level, categories=["lo", "mid", "hi", "unused"]),
                      "flag": flag})
    y = np.nan_to_num(x) + (text == "dog") + (level == "hi") * 0.5 + flag \
        + rng.normal(size=n) * 0.1
    return X, y


def _model_bytes(est, tmp_path, name):
    path = tmp_path / f"{name}.json"
    est.model_.save(path)
    return path.read_bytes()


class _Stream:
    """Only the Arrow PyCapsule stream interface (as DuckDB's and other libraries' results
    expose it)."""

    def __init__(self, table):
        self._table = table

    def __arrow_c_stream__(self, requested_schema=None):
        return self._table.__arrow_c_stream__(requested_schema)


def _forms(X):
    table = pa.Table.from_pandas(X, preserve_index=False)
    forms = {"pyarrow Table": table,
             "pyarrow RecordBatch": table.to_batches()[0] if table.num_rows else table,
             "chunked pyarrow Table": pa.Table.from_batches(
                 table.to_batches(max_chunksize=97)),
             "Arrow stream": _Stream(table),
             "pandas nullable": X.assign(k=X.k.astype("Int64"), x=X.x.astype("Float64"),
                                         text=X.text.astype("string"),
                                         flag=X.flag.astype("boolean")),
             "pandas Arrow dtypes": X.assign(
                 x=X.x.astype(pd.ArrowDtype(pa.float64())),
                 text=X.text.astype("string[pyarrow]")),
             "pandas Arrow text": X.assign(text=X.text.astype(pd.ArrowDtype(pa.string()))),
             "pandas Arrow large text": X.assign(
                 text=X.text.astype(pd.ArrowDtype(pa.large_string())))}
    try:
        pl = importorskip("polars")
    except pytest.skip.Exception:
        return forms
    # polars has no category order but an Enum's: the pandas categories as an Enum
    enum = pl.Enum(list(X.level.cat.categories))
    forms["polars"] = pl.from_pandas(X).with_columns(
        pl.col("level").cast(pl.String).cast(enum))
    return forms


@pytest.mark.parametrize("grow_policy", ["symmetric", "depthwise"])
def test_every_table_kind_gives_the_pandas_model(tmp_path, grow_policy):
    X, y = _frame()
    params = dict(n_estimators=8, grow_policy=grow_policy, random_state=0, n_jobs=1)
    ref = BoostRegressor(**params).fit(X, y)
    ref_bytes = _model_bytes(ref, tmp_path, "pandas")
    expected = ref.predict(X)
    for name, form in _forms(X).items():
        est = BoostRegressor(**params).fit(form, y)
        assert _model_bytes(est, tmp_path, "form") == ref_bytes, name
        assert list(est.feature_names_in_) == list(X.columns), name
        np.testing.assert_array_equal(est.predict(form), expected, err_msg=name)
        np.testing.assert_array_equal(ref.predict(form), expected, err_msg=name)


def test_dataset_train_and_eval_sets_take_arrow_tables():
    X, y = _frame()
    table = pa.Table.from_pandas(X, preserve_index=False)
    a = train({"n_estimators": 5, "random_state": 0}, Dataset(X, y))
    b = train({"n_estimators": 5, "random_state": 0}, Dataset(table, y))
    np.testing.assert_array_equal(a.predict(X), b.predict(table))
    clf = BoostClassifier(n_estimators=5, random_state=0, eval_metric="auc")
    clf.fit(table, y > 1, eval_set=[(table, y > 1)])
    ref = BoostClassifier(n_estimators=5, random_state=0, eval_metric="auc")
    ref.fit(X, y > 1, eval_set=[(X, y > 1)])
    assert clf.evals_result_ == ref.evals_result_
    np.testing.assert_array_equal(clf.predict_proba(table), ref.predict_proba(X))


def test_polars_categoricals_are_coded_as_text_and_enums_by_their_categories(tmp_path):
    """A polars ``Categorical`` has no category order of its own (its categories are
    global to the process): it is coded as text, by its sorted values, as pandas codes an
    object column. An ``Enum`` is coded by its categories, as pandas codes a
    ``category``."""
    pl = importorskip("polars")
    X, y = _frame(1)
    as_text = X.assign(level=X.level.astype(object))
    frame = pl.from_pandas(as_text).with_columns(pl.col("level").cast(pl.Categorical))
    ref = BoostRegressor(n_estimators=6, random_state=0).fit(as_text, y)
    est = BoostRegressor(n_estimators=6, random_state=0).fit(frame, y)
    assert _model_bytes(est, tmp_path, "cat") == _model_bytes(ref, tmp_path, "pandas")
    enum = pl.Enum(["hi", "lo", "mid", "unused"])
    frame = pl.from_pandas(as_text).with_columns(pl.col("level").cast(enum))
    ref = BoostRegressor(n_estimators=6, random_state=0).fit(
        X.assign(level=X.level.cat.reorder_categories(["hi", "lo", "mid", "unused"])), y)
    est = BoostRegressor(n_estimators=6, random_state=0).fit(frame, y)
    assert _model_bytes(est, tmp_path, "enum") == _model_bytes(ref, tmp_path, "pandas")
    # new levels at prediction are missing, as with pandas
    test = frame.head(20).with_columns(pl.lit("zebra").alias("text"))
    np.testing.assert_array_equal(est.predict(test), ref.predict(
        test.to_pandas().assign(level=lambda d: d.level.astype(object))))


def test_float32_tables_stay_float32():
    from boostlib.engine.frames import from_arrow
    t = pa.table({"a": pa.array([1.5, None, 2.0], pa.float32()),
                  "b": pa.array([1, 2, None], pa.int16())})
    m = from_arrow(t)
    assert m.values.dtype == np.float32 and m.values.flags.f_contiguous
    np.testing.assert_array_equal(m.values, [[1.5, 1], [np.nan, 2], [2, np.nan]])


@pytest.mark.parametrize("column, expected", [
    (lambda: pa.array([datetime.date(2020, 1, 1)] * 3), "dates or durations"),
    (lambda: pa.array([[1], [2], [3]]), "expected numbers, booleans, text"),
    (lambda: pa.array([1.5, 2.5, 3.5]).dictionary_encode(), "neither text nor integers"),
])
def test_unusable_column_types_are_named(column, expected):
    t = pa.table({"ok": [1.0, 2.0, 3.0], "bad": column()})
    with pytest.raises(TypeError, match=rf"X: column 'bad' has type .*{expected}"):
        BoostRegressor(n_estimators=2).fit(t, [1.0, 2.0, 3.0])


def test_a_lazy_frame_is_refused_with_what_to_do():
    pl = importorskip("polars")
    lazy = pl.DataFrame({"a": [1.0, 2.0]}).lazy()
    with pytest.raises(TypeError, match=r"LazyFrame.*\.collect\(\)"):
        BoostRegressor(n_estimators=2).fit(lazy, [1.0, 2.0])


def test_boostlib_needs_neither_pyarrow_nor_polars():
    code = ("import sys; sys.modules['pyarrow'] = sys.modules['polars'] = None; "
            "import numpy as np, boostlib; "
            "boostlib.BoostRegressor(n_estimators=2).fit(np.eye(3), [1.0, 2.0, 3.0]); "
            "print('fitted')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "fitted"


def test_an_arrow_table_without_pyarrow_says_what_to_install():
    from boostlib.engine import frames
    with pytest.raises(ImportError, match=r'_Stream.*pyarrow.*pip install "boostlib\[io\]"'):
        _import_without_pyarrow(frames)


def _import_without_pyarrow(frames):
    saved = sys.modules.get("pyarrow")
    sys.modules["pyarrow"] = None
    try:
        return frames._pyarrow(_Stream(None))
    finally:
        sys.modules["pyarrow"] = saved


def test_tables_of_numbers_are_read_as_columns_without_a_copy(tmp_path):
    """A table of numbers only is kept as its columns (no copy where Arrow allows: one
    chunk, no nulls, the matrix's type), binned a column at a time, and gives the model
    the NumPy array gives, with weights too."""
    from boostlib.engine.frames import Columns, from_arrow
    rng = np.random.default_rng(4)
    X = rng.normal(size=(700, 6))
    X[::9, 2] = np.nan
    y = X[:, 0] - X[:, 1] ** 2 + rng.normal(size=700) * 0.1
    w = rng.uniform(0, 2, 700)
    w[::5] = 0
    table = pa.table({f"f{j}": X[:, j].copy() for j in range(6)})
    data = from_arrow(table).data
    assert isinstance(data, Columns)
    clean = table.column("f0").chunk(0).to_numpy()
    assert np.shares_memory(data.column(0), clean)
    for policy in ("symmetric", "depthwise", "lossguide"):
        params = dict(n_estimators=6, grow_policy=policy, random_state=0)
        ref = BoostRegressor(**params).fit(pd.DataFrame(X, columns=table.column_names), y,
                                           sample_weight=w)
        est = BoostRegressor(**params).fit(table, y, sample_weight=w)
        assert _model_bytes(est, tmp_path, "t") == _model_bytes(ref, tmp_path, "r"), policy
        np.testing.assert_array_equal(est.predict(table), ref.predict(table.to_pandas()))
    inf = table.set_column(1, "f1", pa.array(np.r_[np.inf, X[1:, 1]]))
    with pytest.raises(ValueError, match="contains infinity"):
        BoostRegressor(n_estimators=2).fit(inf, y)
