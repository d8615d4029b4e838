"""Categorical features from data files: text columns, ``--categorical`` and ``--drop``."""
import csv
import inspect

import numpy as np
import pytest

from optional_imports import importorskip

import boostlib
import boostlib.frontend.estimator_files
from boostlib import BoostClassifier, BoostRegressor, load_model
from boostlib.frontend.cli import train as cli_train
from boostlib.frontend.cli import build_parser, main
from boostlib.io.tables import NamedMatrix, categorical_codes, read_table


def _write(path, header, rows):
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        if header is not None:
            writer.writerow(header)
        writer.writerows(rows)
    return str(path)


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _error(capsys, *argv):
    """The one-line error of a failing command."""
    code, out, err = _run(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err and ": error: " in lines[-1], err
    return lines[-1]


# -- tables ----------------------------------------------------------------------------------
@pytest.fixture
def shops_csv(tmp_path):
    """Text, forced-categorical-looking (zip codes) and numeric columns, with missing fields."""
    return _write(tmp_path / "shops.csv", ["y", "city", "zip", "x", "id"], [
        [1, "Paris", "75001", "0.5", "a1"],
        [0, "  Lyon", "069001", "NA", "a2"],
        [1, "", "75001", "2", "a3"],
        [0, "NA", "13001", "3", "a4"],
        [1, "Berlin", "?", "1", "a5"],
        [0, "Paris", "13001", "", "a6"],
    ])


def test_text_columns_become_codes_and_sorted_levels(shops_csv):
    table = read_table(shops_csv)
    assert table.text_names == ["city", "id"]
    assert table.columns["zip"].dtype == np.float64          # numbers stay numbers
    X = table.features(["x", "city", "zip"])
    assert X.columns == ["x", "city", "zip"]
    assert X.categories == {"city": ["Berlin", "Lyon", "Paris"]}
    nan = np.nan
    np.testing.assert_array_equal(X.values[:, 1], [2, 1, nan, nan, 0, 2])   # '' and NA
    np.testing.assert_array_equal(X.values[:, 0], [0.5, nan, 2, 3, 1, nan])
    np.testing.assert_array_equal(X.values[:, 2], [75001, 69001, 75001, 13001, nan, 13001])
    assert X.to_numpy().dtype == np.float64 and all(d == np.float64 for d in X.dtypes)


def test_forced_categorical_keeps_the_text_of_numbers(shops_csv):
    table = read_table(shops_csv, categorical=["zip", "not-there"])   # absent names ignored
    X = table.features(["zip", "x"])
    assert X.categories == {"zip": ["069001", "13001", "75001"]}    # text order, zeros kept
    np.testing.assert_array_equal(X.values[:, 0], [2, 0, 2, 1, np.nan, 1])


def test_take_and_features_carry_their_categories(shops_csv):
    X = read_table(shops_csv).features(["city", "x", "id"])
    assert set(X.categories) == {"city", "id"}
    part = X.take(np.array([0, 4]))
    assert part.categories == X.categories and part.columns == X.columns
    np.testing.assert_array_equal(part.values[:, 0], [2, 0])      # the codes do not change
    assert read_table(shops_csv).features(["x", "id"]).categories == {
        "id": ["a1", "a2", "a3", "a4", "a5", "a6"]}
    assert read_table(shops_csv).features(["x"]).categories == {}
    with pytest.raises(ValueError, match="categories name column 'b' that the matrix does "
                                         "not have; expected names among its columns 'a'"):
        NamedMatrix(np.zeros((2, 1)), ["a"], {"b": ["u"]})


def test_categorical_codes():
    codes, levels = categorical_codes(["b", " a", "N/A", "b", "10", "9", "none"])
    assert levels == ["10", "9", "a", "b"]
    np.testing.assert_array_equal(codes, [3, 2, np.nan, 3, 0, 1, np.nan])
    codes, levels = categorical_codes(["", "?"])
    assert levels == [] and np.isnan(codes).all()


def test_mixed_and_headerless_columns(tmp_path):
    path = _write(tmp_path / "mixed.csv", None, [[1, "3", "x"], [0, "k", "y"], [1, "2", "x"]])
    X = read_table(path, header="no").features(["1", "2"])
    assert X.categories == {"1": ["2", "3", "k"], "2": ["x", "y"]}
    np.testing.assert_array_equal(X.values, [[1, 0], [2, 1], [0, 0]])


def test_parquet_string_and_dictionary_columns(tmp_path):
    pa = importorskip("pyarrow")
    pq = importorskip("pyarrow.parquet")
    pq.write_table(pa.table({
        "city": pa.array(["Oslo", None, "Lima", "Oslo"]),
        "kind": pa.array(["b", "a", None, "b"]).dictionary_encode(),
        "store": pa.array([3, 1, None, 12]),
        "x": pa.array([0.5, None, 1.0, 2.0]),
    }), tmp_path / "t.parquet")
    X = read_table(tmp_path / "t.parquet", categorical=["store"]).features(
        ["city", "kind", "store", "x"])
    assert X.categories == {"city": ["Lima", "Oslo"], "kind": ["a", "b"],
                            "store": ["1", "12", "3"]}
    np.testing.assert_array_equal(X.values, [[1, 1, 2, 0.5], [np.nan, 0, 0, np.nan],
                                             [0, np.nan, np.nan, 1.0], [1, 1, 1, 2.0]])
    X = read_table(tmp_path / "t.parquet").features(["store"])
    assert X.categories == {} and np.isnan(X.values[2, 0]) and X.values[3, 0] == 12


# -- options and their errors ----------------------------------------------------------------
def test_options_parse_comma_separated_names():
    args = build_parser().parse_args(["train", "d.csv", "--target", "y", "--drop", "id, when",
                                      "--categorical", "zip", "--drop", "note",
                                      "--categorical-features", "store,zip"])
    assert args.drop == ["id", "when", "note"] and args.categorical == ["zip", "store", "zip"]
    assert "categorical_features" not in args.estimator_params    # set by --categorical
    args = build_parser().parse_args(["train", "d.csv", "--target", "y"])
    assert args.drop is None and args.categorical is None


def test_help_documents_the_options(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--categorical COLS, --categorical-features COLS" in out
    assert "--drop COLS comma-separated columns to leave out of the features" in out
    assert "text columns (and --categorical ones) as categorical features" in out
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    assert "a level the model did not see is a missing value" in \
        " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("options, message", [
    (["--drop", "id,nope,zap"], "--drop 'id,nope,zap': {path} has no columns 'nope', 'zap'; "
                                "expected names among its columns 'y', 'city', 'zip', 'x', 'id'"),
    (["--categorical", "town"], "--categorical 'town': {path} has no column 'town'; expected "
                                "names among its columns 'y', 'city', 'zip', 'x', 'id'"),
    (["--drop", "y"], "--drop 'y' names the --target column 'y'; expected feature columns "
                      "only (the target is never a feature)"),
    (["--categorical", "zip,y"], "--categorical 'zip,y' names the --target column 'y'; "
                                 "expected feature columns only"),
    (["--drop", "zip,id", "--categorical", "zip"], "--drop and --categorical both name column "
                                                   "'zip'; expected each column in at most one"),
    (["--drop", "city,zip,x,id"], "--drop 'city,zip,x,id' leaves no feature column in {path}; "
                                  "expected at least one column besides the --target 'y'"),
])
def test_column_option_errors(options, message, shops_csv, tmp_path, capsys):
    err = _error(capsys, "train", shops_csv, "--target", "y", "-o", tmp_path / "m.json",
                 *options)
    assert message.format(path=shops_csv) in err
    assert not (tmp_path / "m.json").exists()


def test_a_missing_target_is_reported_before_the_options(shops_csv, capsys):
    assert "no column 'label'; columns are 'y', 'city'" in _error(
        capsys, "train", shops_csv, "--target", "label", "--drop", "nope")


@pytest.mark.parametrize("value", ["", ",", " , "])
def test_empty_column_lists_are_usage_errors(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "d.csv", "--target", "y", "--drop", value])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1
    assert f"argument --drop: expected comma-separated column names such as 'city,zip', " \
           f"got {value!r}" in err


# -- what train and predict hand to the estimator (recording stand-ins) ----------------------
class _Stop(Exception):
    """Raised by the stand-in's fit once it has recorded its input."""


class _Recorder:
    """An estimator stand-in that records its parameters and the matrix it is fitted on."""

    seen = {}

    def __init__(self, categorical_features=None, **params):
        self.seen.update(categorical_features=categorical_features, params=params)

    def fit(self, X, y, eval_set=None):
        self.seen.update(X=X, y=y, eval_set=eval_set)
        raise _Stop

    def _check_params(self):
        """The CLI checks parameters before reading data; nothing to check here."""


class _NoCategorical:
    """An estimator without a categorical_features parameter."""

    def __init__(self, **params):
        pass

    def _check_params(self):
        """Nothing to check."""


def test_train_passes_the_categorical_columns(shops_csv, monkeypatch, capsys):
    _Recorder.seen = {}
    monkeypatch.setattr(cli_train, "estimator_classes", lambda: (_Recorder, _Recorder, _Recorder))
    with pytest.raises(_Stop):
        main(["train", shops_csv, "--target", "y", "--drop", "id", "--categorical", "zip",
              "--eval-fraction", "0.5"])
    out = capsys.readouterr().out
    assert "6 rows, 3 features, target 'y' -> classification" in out
    assert "categorical features: 'city' (3 levels), 'zip' (3 levels)\n" in out
    assert "dropped column: 'id'\n" in out
    seen = _Recorder.seen
    assert seen["categorical_features"] == ["city", "zip"] and seen["params"] == {}
    X = seen["X"]
    assert isinstance(X, NamedMatrix) and X.columns == ["city", "zip", "x"] and len(X) == 3
    assert X.categories == {"city": ["Berlin", "Lyon", "Paris"],
                            "zip": ["069001", "13001", "75001"]}
    assert seen["eval_set"][0][0].categories == X.categories       # held-out rows too


def test_numeric_files_pass_no_categorical_features(shops_csv, monkeypatch, capsys):
    _Recorder.seen = {}
    monkeypatch.setattr(cli_train, "estimator_classes", lambda: (_Recorder, _Recorder, _Recorder))
    with pytest.raises(_Stop):
        main(["train", shops_csv, "--target", "y", "--drop", "city,id"])
    assert _Recorder.seen["categorical_features"] is None        # the default, not []
    assert _Recorder.seen["X"].categories == {}
    assert "categorical features" not in capsys.readouterr().out


def test_an_estimator_without_categorical_features_is_a_clear_error(shops_csv, monkeypatch,
                                                                    capsys):
    monkeypatch.setattr(cli_train, "estimator_classes", lambda: (_NoCategorical, _NoCategorical, _NoCategorical))
    err = _error(capsys, "train", shops_csv, "--target", "y", "--categorical", "zip")
    assert f"{shops_csv}: non-numeric columns 'city', 'id' and --categorical column 'zip' " \
           "would be categorical features, but _NoCategorical has no categorical_features " \
           "parameter" in err


class _FittedStandIn:
    """A fitted regressor stand-in that records the matrix it predicts."""

    def __init__(self, features, categorical):
        self.feature_names_in_ = np.array(features, dtype=object)
        self.n_features_in_ = len(features)
        self.categorical_features = categorical
        self.X = None

    def predict(self, X):
        self.X = X
        return np.zeros(len(X))


def test_predict_reads_the_models_categorical_columns(tmp_path, monkeypatch, capsys):
    model = _FittedStandIn(["x", "city", "store"], ["city", "store"])
    monkeypatch.setattr(boostlib.frontend.estimator_files, "load_estimator", lambda path: model)
    path = _write(tmp_path / "new.csv", ["id", "store", "x", "city", "note"], [
        ["r1", "12", "1.5", "Tokyo", "free text"],
        ["r2", "3", "0.5", "Berlin", ""],
        ["r3", "", "2.5", "NA", "more text"],
    ])
    code, out, err = _run(capsys, "predict", tmp_path / "m.json", path)
    assert code == 0 and out.splitlines() == ["prediction", "0.0", "0.0", "0.0"], err
    X = model.X
    assert X.columns == ["x", "city", "store"]          # the model's order; id, note ignored
    assert X.categories == {"city": ["Berlin", "Tokyo"], "store": ["12", "3"]}
    np.testing.assert_array_equal(X.values, [[1.5, 1, 0], [0.5, 0, 1], [2.5, np.nan, np.nan]])


def test_predict_rejects_text_in_a_numeric_feature(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(boostlib.frontend.estimator_files, "load_estimator",
                        lambda path: _FittedStandIn(["x", "city"], ["city"]))
    path = _write(tmp_path / "bad.csv", ["x", "city"], [["1", "Oslo"], ["high", "Lima"]])
    assert f"{path}: column 'x' holds text (e.g. 'high'), but the model was trained on it " \
           "as a numeric feature; expected numbers" in _error(capsys, "predict", "m.json", path)
    no_names = _FittedStandIn(["x", "city"], None)
    del no_names.feature_names_in_
    monkeypatch.setattr(boostlib.frontend.estimator_files, "load_estimator",
                        lambda path: no_names)
    path = _write(tmp_path / "text.csv", ["x", "city"], [["1", "Oslo"], ["2", "Lima"]])
    assert "must hold numbers only; expected numeric columns, but column 'city' holds text" \
        in _error(capsys, "predict", "m.json", path)


# -- end to end with the real estimators -----------------------------------------------------
SUPPORTED = "categorical_features" in inspect.signature(BoostRegressor.__init__).parameters
needs_support = pytest.mark.skipif(not SUPPORTED, reason="the estimators have no "
                                                         "categorical_features parameter yet")
CITIES = ["Berlin", "Lima", "Oslo", "Paris", "Tokyo"]
#: P(y = 1) by city: not monotone in the (alphabetical) code order.
POSITIVE = {"Berlin": 0.1, "Lima": 0.9, "Oslo": 0.15, "Paris": 0.85, "Tokyo": 0.1}


@pytest.fixture
def cities_csv(tmp_path):
    """300 rows: the label depends on the city only; x is noise, id a unique text."""
    rng = np.random.default_rng(7)
    city = np.array(CITIES)[rng.integers(0, 5, 300)]
    y = (rng.random(300) < np.array([POSITIVE[c] for c in city])).astype(int)
    x = rng.normal(size=300).round(3)
    rows = [[label, c, repr(float(v)), f"row{i:03d}"]
            for i, (label, c, v) in enumerate(zip(y, city, x))]
    return _write(tmp_path / "cities.csv", ["y", "city", "x", "id"], rows), city, y


def _predictions(capsys, model, path):
    code, out, err = _run(capsys, "predict", model, path)
    assert code == 0, err
    return [line.split(",") for line in out.splitlines()[1:]]


@needs_support
def test_end_to_end_the_model_learns_the_city(cities_csv, tmp_path, capsys):
    path, city, y = cities_csv
    model_path = tmp_path / "m.json"
    code, out, err = _run(capsys, "train", path, "--target", "y", "--drop", "id", "-o",
                          model_path, "--n-estimators", 30, "--max-depth", 2, "--n-jobs", 1)
    assert code == 0, err
    assert "300 rows, 2 features" in out and "categorical features: 'city' (5 levels)" in out
    model = load_model(model_path)
    assert isinstance(model, BoostClassifier) and list(model.feature_names_in_) == ["city", "x"]
    assert list(model.get_params()["categorical_features"]) == ["city"]
    rows = _predictions(capsys, model_path, path)
    predicted = np.array([int(r[0]) for r in rows])
    proba = np.array([float(r[1]) for r in rows])
    # the best accuracy from the city alone (each city's majority label), and without it
    best = sum(max(np.sum(y[city == c]), np.sum(1 - y[city == c])) for c in CITIES) / y.size
    baseline = max(y.mean(), 1 - y.mean())
    accuracy = np.mean(predicted == y)
    assert accuracy >= best - 0.03 and accuracy > baseline + 0.2
    mean = {c: proba[city == c].mean() for c in CITIES}
    assert min(mean["Lima"], mean["Paris"]) > 0.6 > 0.4 > max(
        mean["Berlin"], mean["Oslo"], mean["Tokyo"])


@needs_support
def test_end_to_end_levels_are_matched_by_text(cities_csv, tmp_path, capsys):
    path, _, _ = cities_csv
    model_path = tmp_path / "m.json"
    code, _, err = _run(capsys, "train", path, "--target", "y", "--drop", "id", "-o",
                        model_path, "--n-estimators", 30, "--max-depth", 2, "--n-jobs", 1)
    assert code == 0, err
    # every level, in the training file's order of codes, and a missing city
    reference = _write(tmp_path / "ref.csv", ["city", "x"],
                       [[c, "0.25"] for c in CITIES] + [["", "0.25"]])
    ref = {c: r for c, r in zip(CITIES + [""], _predictions(capsys, model_path, reference))}
    assert len({r[1] for r in ref.values()}) >= 3     # the city changes the probability
    # other levels (one unseen), in another order, with other columns around them
    other = _write(tmp_path / "other.csv", ["id", "x", "city", "y"],
                   [["a", "0.25", "Tokyo", 1], ["b", "0.25", "Quito", 0],
                    ["c", "0.25", "Lima", 1], ["d", "0.25", "Paris", 0]])
    got = _predictions(capsys, model_path, other)
    assert got == [ref["Tokyo"], ref[""], ref["Lima"], ref["Paris"]]  # Quito: missing


@needs_support
def test_end_to_end_forced_categorical_numbers(tmp_path, capsys):
    rng = np.random.default_rng(3)
    store = rng.choice([1, 2, 3, 10], size=300)
    effect = {1: 0.0, 2: 3.0, 3: -2.0, 10: 1.0}         # not monotone in the store number
    y = np.array([effect[s] for s in store]) + 0.1 * rng.normal(size=300)
    path = _write(tmp_path / "stores.csv", ["y", "store", "x"],
                  [[repr(float(t)), s, repr(float(v))]
                   for t, s, v in zip(y, store, rng.normal(size=300))])
    model_path = tmp_path / "m.json"
    code, out, err = _run(capsys, "train", path, "--target", "y", "--categorical", "store",
                          "-o", model_path, "--n-estimators", 40, "--max-depth", 2,
                          "--learning-rate", 0.3, "--n-jobs", 1)
    assert code == 0 and "-> regression" in out, err
    assert "categorical features: 'store' (4 levels)" in out
    # the stores as numbers in the predict file, with an unseen store "0" that comes first in
    # the text order (so every code differs from training's): matched as text
    new = _write(tmp_path / "new.csv", ["x", "store"],
                 [["0", "10"], ["0", "3"], ["0", "2"], ["0", "1"], ["0", "0"], ["0", ""]])
    got = [float(r[0]) for r in _predictions(capsys, model_path, new)]
    np.testing.assert_allclose(got[:4], [1.0, -2.0, 3.0, 0.0], atol=0.3)
    assert got[4] == got[5]                                  # unseen: a missing value
