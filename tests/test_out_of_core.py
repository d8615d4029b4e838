"""Dataset.from_batches: data read in batches gives the model the same rows give in memory,
bit for bit (NumPy, pandas, Arrow and polars batches; categorical features, missing values,
weights; train(), the estimators, validation sets, continued fits, cv), and clear errors for
batches that are not alike, empty sources and one-shot iterators."""
import os

import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRanker, BoostRegressor, Dataset, cv, train
from boostlib.engine.binning import BinMapper
from boostlib.engine.random_streams import seed_sequence, stream_rng
from optional_imports import importorskip

# set splits: what "auto" keeps for a Dataset read in batches, so both routes compare
P = {"n_estimators": 12, "random_state": 5, "max_depth": 4, "categorical_encoding": "sets"}


def _data(n=3000, f=5, seed=0, dtype=np.float64, missing=0.05):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(dtype)
    X[:, 1] = np.round(X[:, 1] * 3)             # few distinct values
    X[rng.random((n, f)) < missing] = np.nan
    y = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) ** 2 / 4 + rng.normal(size=n) * 0.3
    return X, y


def _cuts(n, size):
    return [(s, min(s + size, n)) for s in range(0, n, size)]


def _same_model(a, b, X):
    assert a.n_trees == b.n_trees
    pa, pb = a.predict(X, raw=True), b.predict(X, raw=True)
    assert np.array_equal(pa, pb), np.abs(pa - pb).max()
    ma, mb = a.ensemble.bin_mapper, b.ensemble.bin_mapper
    for f in range(ma.n_features):
        assert np.array_equal(ma.borders_[f], mb.borders_[f])


@pytest.mark.parametrize("size", [1, 7, 500, 2999, 3000, 10_000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_batches_give_the_in_memory_model(size, dtype):
    X, y = _data(dtype=dtype)
    if size == 1:
        X, y = X[:300], y[:300]
    batches = [(X[a:b], y[a:b]) for a, b in _cuts(len(y), size)]
    ds = Dataset.from_batches(batches)
    assert (ds.n_rows, ds.n_features) == X.shape
    np.testing.assert_array_equal(ds.y, y)
    _same_model(train(P, Dataset(X, y)), train(P, ds), X)


def test_the_binned_matrix_is_the_in_memory_one():
    X, y = _data()
    ds = Dataset.from_batches([(X[a:b], y[a:b]) for a, b in _cuts(len(y), 333)])
    seed = seed_sequence(5)
    mapper, bins = ds.training_matrix(63, seed, 2)
    expected = BinMapper(63).fit(X, stream_rng(seed, "binning"), 1)
    for f in range(X.shape[1]):
        assert np.array_equal(mapper.borders_[f], expected.borders_[f])
    assert bins.dtype == np.uint8 and bins.shape == (X.shape[1], X.shape[0])
    assert np.array_equal(bins, expected.transform(X))
    # cached for the same settings, made again for others
    assert ds.training_matrix(63, seed, 2)[1] is bins
    assert ds.training_matrix(31, seed, 2)[1] is not bins


def test_weights_and_zero_weight_rows():
    X, y = _data(seed=1)
    rng = np.random.default_rng(1)
    w = rng.random(len(y)) * 2
    w[rng.random(len(y)) < 0.2] = 0.0           # these rows must not move the borders
    X[w == 0, 0] = 1e6
    batches = [(X[a:b], y[a:b], w[a:b]) for a, b in _cuts(len(y), 450)]
    ds = Dataset.from_batches(batches)
    np.testing.assert_array_equal(ds.sample_weight, w)
    _same_model(train(P, Dataset(X, y, sample_weight=w)), train(P, ds), X)
    assert ds.training_matrix(255, seed_sequence(5), 1)[0].borders_[0].max() < 1e5


def test_more_rows_than_the_border_sample():
    # 200,000 rows of positive weight at most go into the borders: the same rows as in memory
    rng = np.random.default_rng(2)
    n = 230_000
    X = rng.normal(size=(n, 3)).astype(np.float32)
    X[rng.random((n, 3)) < 0.01] = np.nan
    y = np.nan_to_num(X[:, 0]) + rng.normal(size=n)
    w = np.where(rng.random(n) < 0.05, 0.0, 1.0)          # 218,500 rows of positive weight
    batches = [(X[a:b], y[a:b], w[a:b]) for a, b in _cuts(n, 40_000)]
    p = {"n_estimators": 3, "random_state": 11, "max_depth": 3}
    a, b = train(p, Dataset(X, y, sample_weight=w)), train(p, Dataset.from_batches(batches))
    _same_model(a, b, X[:5000])
    # another seed draws other rows: other borders (so the draw really is the seed's)
    c = train({**p, "random_state": 12}, Dataset(X, y, sample_weight=w))
    assert not np.array_equal(a.ensemble.bin_mapper.borders_[0],
                              c.ensemble.bin_mapper.borders_[0])


def test_a_callable_source_and_a_spill_file(tmp_path):
    X, y = _data(seed=3)
    reads = []

    def batches():
        reads.append(1)
        return ((X[a:b], y[a:b]) for a, b in _cuts(len(y), 800))

    ds = Dataset.from_batches(batches, spill=tmp_path)
    model = train(P, ds)
    assert len(reads) == 3                      # scan, border sample, bins
    _, bins = ds.training_matrix(255, seed_sequence(5), 1)
    assert isinstance(bins, np.memmap)
    assert os.listdir(tmp_path) == []           # an unnamed file, gone with the matrix
    _same_model(train(P, Dataset(X, y)), model, X)


def test_validation_sets_continued_fits_and_cv():
    X, y = _data(seed=4)
    Xv, yv = _data(n=700, seed=5)
    train_b = Dataset.from_batches([(X[a:b], y[a:b]) for a, b in _cuts(len(y), 600)])
    valid_b = Dataset.from_batches([(Xv[a:b], yv[a:b]) for a, b in _cuts(700, 250)],
                                   reference=train_b)
    train_m = Dataset(X, y)
    p = {**P, "early_stopping_rounds": 3}
    a = train(p, train_m, valid_sets=[Dataset(Xv, yv, reference=train_m)])
    b = train(p, train_b, valid_sets=[valid_b])
    _same_model(a, b, X)
    assert a.evals_result == b.evals_result and a.best_iteration == b.best_iteration
    # continuing a model bins the batches with its borders
    more = {**P, "n_estimators": 5}
    _same_model(train(more, Dataset(X, y), init_model=a),
                train(more, Dataset.from_batches([(X, y)]), init_model=b), X)
    ra = cv(P, Dataset(X, y), nfold=3, return_models=True)
    rb = cv(P, train_b, nfold=3, return_models=True)
    assert ra.history == rb.history
    assert np.array_equal(ra.oof_prediction, rb.oof_prediction)


def test_estimators_fit_a_dataset():
    X, y = _data(n=12_000, seed=6)              # early_stopping="auto" holds out rows
    labels = (y > 0).astype(int) + (y > 1)
    batches = [(X[a:b], labels[a:b]) for a, b in _cuts(len(y), 5000)]
    for est in (BoostClassifier(n_estimators=8, random_state=1, class_weight="balanced"),
                BoostRegressor(n_estimators=8, random_state=1, early_stopping=True,
                               validation_fraction=0.2)):
        in_memory = est.fit(X, labels).predict(X)
        in_batches = est.fit(Dataset.from_batches(batches)).predict(X)
        assert np.array_equal(in_memory, in_batches)
        assert est.best_iteration_ is not None
    # eval_set given as Datasets, or as (X, y) pairs
    reg = BoostRegressor(n_estimators=8, random_state=1, early_stopping_rounds=2)
    ref = reg.fit(X[:9000], y[:9000], eval_set=[(X[9000:], y[9000:])]).evals_result_
    tr = Dataset.from_batches([(X[:4000], y[:4000]), (X[4000:9000], y[4000:9000])])
    va = Dataset.from_batches([(X[9000:], y[9000:])], reference=tr)
    assert reg.fit(tr, eval_set=[va]).evals_result_ == ref
    assert reg.fit(tr, eval_set=[(X[9000:], y[9000:])]).evals_result_ == ref


def test_estimators_fit_an_in_memory_dataset_with_groups():
    rng = np.random.default_rng(8)
    n = 12_000                                  # early_stopping="auto": whole queries held out
    X, y, group = rng.normal(size=(n, 4)), rng.integers(0, 4, n), np.full(n // 20, 20)
    ranker = BoostRanker(n_estimators=5, random_state=0)
    expected = ranker.fit(X, y, group=group).predict(X)
    assert np.array_equal(ranker.fit(Dataset(X, y, group=group)).predict(X), expected)
    classifier = BoostClassifier(n_estimators=5, random_state=0)
    expected = classifier.fit(X, y).predict_proba(X)
    assert np.array_equal(classifier.fit(Dataset(X, y)).predict_proba(X), expected)
    with pytest.raises(ValueError, match="group is given with a Dataset X"):
        ranker.fit(Dataset(X, y, group=group), group=group)


def test_estimator_errors_with_a_dataset():
    X, y = _data(n=200)
    ds = Dataset.from_batches([(X, y)])
    with pytest.raises(ValueError, match="y is given with a Dataset X"):
        BoostRegressor().fit(ds, y)
    with pytest.raises(ValueError, match="sample_weight is given with a Dataset X"):
        BoostRegressor().fit(ds, sample_weight=np.ones(200))
    with pytest.raises(ValueError, match=r"categorical_features=\[0\] is set on the estimator"):
        BoostRegressor(categorical_features=[0]).fit(ds)
    with pytest.raises(ValueError, match=r"eval_sample_weight\[0\] is given for eval_set\[0\]"):
        BoostRegressor(n_estimators=2).fit(ds, eval_set=[ds], eval_sample_weight=[np.ones(200)])
    with pytest.raises(ValueError, match="requires y to be passed"):
        BoostRegressor().fit(X)


def test_the_dataset_holds_no_feature_values():
    X, y = _data(n=100)
    ds = Dataset.from_batches([(X[:60], y[:60]), (X[60:], y[60:])])
    with pytest.raises(AttributeError, match="keeps no feature values"):
        ds.X
    assert repr(ds) == "<boostlib.Dataset from batches: 100 rows x 5 features>"
    sub = ds.subset(np.arange(10, 90))
    assert sub.n_rows == 80 and np.array_equal(sub.y, y[10:90])
    # the subset bins as a Dataset of those rows; a subset of it too
    _same_model(train(P, Dataset(X[10:90], y[10:90])), train(P, sub), X)
    _same_model(train(P, Dataset(X[20:50], y[20:50])), train(P, sub.subset(np.arange(10, 40))),
                X)
    for bad in ([], [3, 2], [5, 5], [-1, 2], [99, 100]):
        with pytest.raises(ValueError, match=r"rows must be increasing row numbers in \[0, "
                                             r"100\)"):
            ds.subset(np.array(bad, dtype=int))
    weighted = Dataset.from_batches([(X, y, np.r_[np.zeros(50), np.ones(50)])])
    with pytest.raises(ValueError, match="sample_weight must have a positive sum"):
        weighted.subset(np.arange(50))
    # the bins are kept until forgotten
    seed = seed_sequence(0)
    bins = ds.training_matrix(255, seed, 1)[1]
    assert ds.training_matrix(255, seed, 1)[1] is bins
    ds.forget_bins()
    again = ds.training_matrix(255, seed, 1)[1]
    assert again is not bins and np.array_equal(again, bins)


# -- tables ----------------------------------------------------------------------------------

def _frame(n=2500, seed=7):
    pd = importorskip("pandas")
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    x[::9] = np.nan
    text = np.array(["kiwi", "apple", "émeu", "fig", "date"], dtype=object)[
        rng.integers(0, 5, n)]
    text[::13] = None
    level = np.array(["lo", "mid", "hi"], dtype=object)[rng.integers(0, 3, n)]
    level[::17] = None
    code = rng.integers(0, 6, n).astype(float)
    code[::19] = np.nan
    df = pd.DataFrame({"x": x, "text": pd.Series(text, dtype=object),
                       "level": pd.Categorical(level, categories=["lo", "mid", "hi"]),
                       "code": code})
    df["target"] = (np.nan_to_num(x) + (text == "fig") + (level == "hi") * 0.5
                    + (code == 3) + rng.normal(size=n) * 0.2)
    df["w"] = np.where(rng.random(n) < 0.1, 0.0, rng.random(n) + 0.5)
    return df


def test_pandas_batches_with_categories_missing_values_and_weights():
    df = _frame()
    cats = ["text", "level", "code"]
    # the first batch lacks "date" (text levels are every batch's, sorted)
    df.loc[:499, "text"] = df.loc[:499, "text"].replace("date", "kiwi")
    X = df.drop(columns=["target", "w"])
    parts = [df.iloc[a:b] for a, b in _cuts(len(df), 500)]
    ds = Dataset.from_batches(parts, label="target", weight="w", categorical_features=cats)
    assert ds.levels[1] == ["apple", "date", "fig", "kiwi", "émeu"]
    assert ds.levels[2] == ["lo", "mid", "hi"] and ds.levels[3] is None
    memory = Dataset(X, df["target"], sample_weight=df["w"], categorical_features=cats)
    _same_model(train(P, memory), train(P, ds), X)


def test_arrow_batches_and_tables():
    pa = importorskip("pyarrow")
    df = _frame(seed=8)
    table = pa.Table.from_pandas(df, preserve_index=False)
    X = table.drop_columns(["target", "w"])
    memory = train(P, Dataset(X, df["target"].to_numpy(), sample_weight=df["w"].to_numpy()))
    for batches in (table.to_batches(max_chunksize=700),
                    [table.slice(a, b - a) for a, b in _cuts(len(df), 900)]):
        ds = Dataset.from_batches(batches, label="target", weight="w")
        assert ds.levels[2] == ["lo", "mid", "hi"]          # the dictionary's order
        _same_model(memory, train(P, ds), X)
    # (X, y) tuples of Arrow tables
    tuples = [(X.slice(a, b - a), df["target"].to_numpy()[a:b]) for a, b in _cuts(len(df), 1000)]
    _same_model(train(P, Dataset(X, df["target"].to_numpy())),
                train(P, Dataset.from_batches(tuples)), X)


def test_arrow_dictionaries_that_differ_between_batches():
    pa = importorskip("pyarrow")
    level = pa.array(["b", "c", "b", None, "a", "c", "a", "b"] * 50).dictionary_encode()
    x = pa.array(np.arange(400.0))
    y = np.arange(400.0) % 7
    full = pa.table({"level": level, "x": x, "y": y})
    parts = [full.slice(0, 100), full.slice(100, 300)]
    parts = [pa.table({"level": p.column("level").combine_chunks().dictionary_decode()
                       .dictionary_encode(), "x": p.column("x"), "y": p.column("y")})
             for p in parts]
    # levels in the order first seen: what concatenating the batches in Arrow gives
    together = pa.concat_tables(parts).unify_dictionaries()
    ds = Dataset.from_batches(parts, label="y")
    expected = together.column("level").chunk(0).dictionary.to_pylist()
    assert ds.levels[0] == expected
    _same_model(train(P, Dataset(together.drop_columns(["y"]), y)), train(P, ds),
                together.drop_columns(["y"]))


def test_polars_batches():
    pl = importorskip("polars")
    importorskip("pyarrow")
    df = _frame(seed=9).drop(columns=["level"])
    frame = pl.from_pandas(df)
    parts = [frame.slice(a, b - a) for a, b in _cuts(len(df), 800)]
    ds = Dataset.from_batches(parts, label="target", weight="w")
    X = frame.drop(["target", "w"])
    _same_model(train(P, Dataset(X, df["target"].to_numpy(),
                                 sample_weight=df["w"].to_numpy())), train(P, ds), X)


# -- errors ----------------------------------------------------------------------------------

def test_one_shot_iterators_and_single_tables_are_refused():
    X, y = _data(n=100)
    with pytest.raises(TypeError, match="one-shot iterator .generator.; the data is read "
                                        "three times"):
        Dataset.from_batches((X[a:b], y[a:b]) for a, b in _cuts(100, 10))
    with pytest.raises(TypeError, match="one-shot iterator"):
        Dataset.from_batches(iter([(X, y)]))
    with pytest.raises(TypeError, match=r"batches is one tuple of 2 items; expected several"):
        Dataset.from_batches((X, y))
    # a tuple of pairs is batches
    assert Dataset.from_batches(((X[:40], y[:40]), (X[40:], y[40:]))).n_rows == 100
    with pytest.raises(TypeError, match="batches is one numpy.ndarray"):
        Dataset.from_batches(X)
    with pytest.raises(TypeError, match="batches=int is invalid"):
        Dataset.from_batches(3)
    with pytest.raises(TypeError, match=r"batches\(\) returned int; expected an iterator"):
        Dataset.from_batches(lambda: 3)


def test_empty_sources():
    X, y = _data(n=10)
    with pytest.raises(ValueError, match="batches gave no batch; expected at least one batch "
                                         "with rows"):
        Dataset.from_batches([])
    with pytest.raises(ValueError, match="batches gave no row"):
        Dataset.from_batches([(X[:0], y[:0]), (X[:0], y[:0])])
    # empty batches among others are fine
    ds = Dataset.from_batches([(X[:0], y[:0]), (X, y), (X[:0], y[:0])])
    assert ds.n_rows == 10


def test_batches_unlike_the_first():
    X, y = _data(n=100)
    with pytest.raises(ValueError, match="batch 1 has 4 feature columns; batch 0 has 5"):
        Dataset.from_batches([(X, y), (X[:, :4], y)])
    with pytest.raises(ValueError, match=r"batch 2: y has 99 entries but X has 100 rows"):
        Dataset.from_batches([(X, y), (X, y), (X, y[:99])])
    with pytest.raises(ValueError, match=r"batch 1: Input y contains NaN"):
        Dataset.from_batches([(X, y), (X, np.full(100, np.nan))])
    with pytest.raises(ValueError, match=r"batch 1: Input X contains infinity"):
        Dataset.from_batches([(X, y), (np.full((3, 5), np.inf), y[:3])])
    with pytest.raises(ValueError, match=r"batch 1: sample_weight\[2\] is -1.0; expected "
                                         "finite weights >= 0"):
        Dataset.from_batches([(X[:3], y[:3], np.ones(3)), (X[:3], y[:3], [1, 1, -1])])
    with pytest.raises(ValueError, match="batch 1 has no weights, batch 0 has: every batch "
                                         "needs them, or none"):
        Dataset.from_batches([(X, y, np.ones(100)), (X, y)])
    with pytest.raises(ValueError, match="a tuple of 4 items; expected"):
        Dataset.from_batches([(X, y, y, y)])
    with pytest.raises(ValueError, match="batch 0 is an .X, y. tuple, and label='y' names a "
                                         "column"):
        Dataset.from_batches([(X, y)], label="y")
    with pytest.raises(TypeError, match="batch 1 is a numpy.ndarray; expected an .X, y."):
        Dataset.from_batches([(X, y), X], label=None)
    with pytest.raises(ValueError, match="categorical feature 2 .categorical_features.: "
                                         "value 0.5 is not an integer"):
        Dataset.from_batches([(np.full((2, 5), 0.5), y[:2])], categorical_features=[2])
    with pytest.raises(ValueError, match="feature_names has 2 entries; the batches have 5"):
        Dataset.from_batches([(X, y)], feature_names=["a", "b"])


def test_table_columns_unlike_the_first():
    df = _frame(n=100)
    with pytest.raises(ValueError, match=r"batch 1 lacks 'code' and has 'other', unseen in "
                                         "batch 0"):
        Dataset.from_batches([df, df.rename(columns={"code": "other"})], label="target")
    with pytest.raises(ValueError, match="batch 1 has the columns seen in batch 0 in another "
                                         "order: column 0 is 'text'"):
        Dataset.from_batches([df, df[["text", "x", "level", "code", "target", "w"]]],
                             label="target")
    as_text = df.assign(code=df["code"].astype(str))
    with pytest.raises(ValueError, match="batch 1: column 'code' holds text, batch 0's "
                                         "numbers: a column must have the same type in every "
                                         "batch"):
        Dataset.from_batches([df, as_text], label="target",
                             categorical_features=["code", "text", "level"])
    as_text = df.assign(level=df["level"].astype(object))
    with pytest.raises(ValueError, match="column 'level' holds text, batch 0's categories"):
        Dataset.from_batches([df, as_text], label="target")
    with pytest.raises(ValueError, match=r"batch 0: label='y' names no column; expected one "
                                         "of the batch's columns 'x', 'text'"):
        Dataset.from_batches([df], label="y")
    with pytest.raises(ValueError, match="batch 0 is a table .pandas.DataFrame. and label is "
                                         "None"):
        Dataset.from_batches([df])
    with pytest.raises(ValueError, match="batch 1: label column 'target': Input y contains "
                                         "NaN"):
        Dataset.from_batches([df, df.assign(target=np.nan)], label="target")
    with pytest.raises(ValueError, match="weight='target' is the label column"):
        Dataset.from_batches([df], label="target", weight="target")
    # integer and float columns are both numbers: a chunk with a missing value is float
    ints = df.assign(code=df["code"].fillna(0).astype(np.int64))
    Dataset.from_batches([ints, df], label="target", weight="w")


def test_batches_that_change_between_reads():
    X, y = _data(n=300)
    state = {"reads": 0}

    def changing():
        state["reads"] += 1
        n = 300 if state["reads"] == 1 else 250
        return iter([(X[:n], y[:n])])

    ds = Dataset.from_batches(changing)
    with pytest.raises(ValueError, match="batches changed between reads: reading them to "
                                         "sample bin borders, batch 0 has 250 rows, the first "
                                         "read 300"):
        train(P, ds)
    shuffled = {"reads": 0}

    def reordered():
        shuffled["reads"] += 1
        parts = [(X[:150], y[:150]), (X[150:], y[150:])]
        return iter(parts if shuffled["reads"] == 1 else parts[::-1])

    with pytest.raises(ValueError, match="batch 0 has other targets than on the first read"):
        train(P, Dataset.from_batches(reordered))


def test_spill_and_reference_checks(tmp_path):
    X, y = _data(n=50)
    with pytest.raises(ValueError, match="spill=.* is not a folder"):
        Dataset.from_batches([(X, y)], spill=tmp_path / "absent")
    with pytest.raises(ValueError, match="the batches have 5 feature columns, the reference 3"):
        Dataset.from_batches([(X, y)], reference=Dataset(X[:, :3], y))
    with pytest.raises(TypeError, match="reference=.* is invalid"):
        Dataset.from_batches([(X, y)], reference="train")
