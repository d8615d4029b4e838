"""The ``boostlib`` command."""
import csv
import json
import os
import subprocess
import sys
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from optional_imports import importorskip

from boostlib import BoostRegressor, __version__, load_model
from boostlib.frontend.cli import build_parser, main
from boostlib.frontend.cli.options import estimator_parameters
from boostlib.datasets import load_higgs


def test_demo_prints_a_comparison(capsys):
    assert main(["demo", "--n-estimators", "5", "--n-jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "HIGGS" in out
    binary, _, multiclass = out.partition("\nmulticlass: 5 classes")
    rows = [line for line in binary.splitlines() if line.startswith(("symmetric", "depthwise"))]
    assert len(rows) >= 4
    for line in rows:
        logloss = float(line.split()[-3])
        assert 0.3 < logloss < 0.7
    assert "multiclass logloss" in multiclass and "accuracy" in multiclass
    rows = [line.split() for line in multiclass.splitlines()
            if line.startswith(("symmetric", "depthwise"))]
    assert [r[0] for r in rows] == ["symmetric", "depthwise"]
    for _, trees, _, mlogloss, acc in rows:
        # 5 trees at learning rate 0.1 move away from the class frequencies (ln 5 = 1.61)
        assert trees == "5" and 0.8 < float(mlogloss) < np.log(5) and 0.3 < float(acc) <= 1


def test_plugins_lists_builtins(capsys):
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    for name in ("logloss", "sla", "mse", "uniform", "sgb"):
        assert name in out
    line = next(ln for ln in out.splitlines() if ln.split()[:1] == ["logloss"])
    assert line.split()[1:] == ["boostlib", __version__, "built-in", "(boostlib.builtin.losses)"]


_PLUGIN = """
    from boostlib.api import hookimpl
    from boostlib.builtin.samplers import UniformSampler

    class Halves(UniformSampler):
        name = "halves"

    @hookimpl
    def boostlib_add_samplers():
        return {"halves": Halves}
"""


def test_plugins_shows_distributions_and_failures(fake_distribution, capsys):
    fake_distribution("boostlib-halves", "0.3.1", {"halves": "halves_mod"},
                      {"halves_mod": _PLUGIN})
    fake_distribution("boostlib-broken", "2.0", {"broken": "broken_mod"},
                      {"broken_mod": "raise ImportError('needs a GPU')"})
    with pytest.warns(RuntimeWarning, match="needs a GPU"):
        assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    sampler_lines = out.split("sampler:")[1].split("update:")[0].splitlines()
    line = next(ln for ln in sampler_lines if ln.split()[:1] == ["halves"])
    assert line.split()[1:] == ["boostlib-halves", "0.3.1", "entry", "point", "halves"]
    failed = out.partition("failed to load:")[2]
    assert "entry point 'broken' (broken_mod) of boostlib-broken 2.0 failed to load: " \
           "ImportError('needs a GPU')" in failed

    assert main(["plugins", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"kind": "sampler", "name": "halves", "distribution": "boostlib-halves",
            "version": "0.3.1", "plugin": "halves"} in report["components"]
    assert len(report["failures"]) == 1 and not report["autoload_disabled"]


def test_plugins_says_when_autoload_is_disabled(monkeypatch, capsys):
    from boostlib import registry

    monkeypatch.setenv("BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD", "1")
    registry.reset()
    try:
        assert main(["plugins"]) == 0
    finally:
        monkeypatch.undo()
        registry.reset()
    out = capsys.readouterr().out
    assert "BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD is set" in out and "failed to load: none" in out


def test_console_entry_point_runs():
    res = subprocess.run([sys.executable, "-m", "boostlib", "--version"],
                         capture_output=True, text=True)
    assert res.returncode == 0 and "boostlib" in res.stdout


def test_bad_arguments_exit_nonzero():
    res = subprocess.run([sys.executable, "-m", "boostlib", "demo", "--max-depth", "0"],
                         capture_output=True, text=True)
    assert res.returncode == 2
    assert "max_depth=0 is invalid" in res.stderr and "Traceback" not in res.stderr


# -- train / predict ---------------------------------------------------------------------------
NAMES = [f"f{i}" for i in range(28)]


def _write_csv(path, X, y, names=NAMES, target="label", header=True):
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        if header:
            writer.writerow([target] + list(names))
        for label, row in zip(y, X):
            writer.writerow([label] + ["" if np.isnan(v) else repr(float(v)) for v in row])
    return str(path)


@pytest.fixture
def higgs_csv(tmp_path):
    """A 1,500-row training CSV (with a few missing values) and the 500-row test CSV."""
    X, y = load_higgs("train")
    X, y = X[:1500].copy(), y[:1500].astype(int)
    X[::37, 3] = np.nan
    Xt, yt = load_higgs("test")
    return (_write_csv(tmp_path / "train.csv", X, y), _write_csv(tmp_path / "test.csv", Xt,
                                                                  yt.astype(int)), Xt)


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _read_predictions(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def test_train_then_predict_equals_the_python_api(higgs_csv, tmp_path, capsys):
    train, test, Xt = higgs_csv
    model_path, pred_path = tmp_path / "m.json", tmp_path / "pred.csv"
    code, out, err = _run(capsys, "train", train, "--target", "label", "--output", model_path,
                          "--n-estimators", 20, "--eval-fraction", 0.2, "--random-state", 0,
                          "--n-jobs", 1)
    assert code == 0, err
    assert "1500 rows, 28 features, target 'label' -> classification (classes 0, 1)" in out
    assert "trained BoostClassifier on 1200 rows" in out
    assert "evaluation on 300 held-out rows: logloss 0." in out and "AUC" in out
    assert f"model written to {model_path}" in out
    code, out, err = _run(capsys, "predict", model_path, test, "--output", pred_path)
    assert code == 0 and "500 predictions written" in out, err
    header, rows = _read_predictions(pred_path)
    assert header == ["prediction", "probability"]
    model = load_model(model_path)
    assert list(model.feature_names_in_) == NAMES
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # an array has no feature names
        proba = model.predict_proba(Xt)[:, 1]
        labels = model.predict(Xt)
    assert np.array_equal(np.array([float(r[1]) for r in rows]), proba)   # bit-identical
    assert [r[0] for r in rows] == [str(v) for v in labels]
    assert model.get_params()["n_estimators"] == 20
    assert model.evals_result_["valid_0"]["logloss"]


def test_regression_predictions_to_stdout(higgs_csv, tmp_path, capsys):
    train, test, Xt = higgs_csv
    model_path = tmp_path / "r.json"
    code, out, err = _run(capsys, "train", train, "--target", "label", "--task", "regression",
                          "-o", model_path, "--n-estimators", 5, "--grow-policy", "depthwise")
    assert code == 0 and "-> regression" in out and "RMSE" in out and "R^2" in out, err
    code, out, err = _run(capsys, "predict", model_path, test)
    lines = out.splitlines()
    assert code == 0 and lines[0] == "prediction" and len(lines) == 501
    model = load_model(model_path)
    assert isinstance(model, BoostRegressor) and model.grow_policy == "depthwise"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert np.array_equal([float(v) for v in lines[1:]], model.predict(Xt))


def test_bundled_headerless_gzipped_tsv(tmp_path, capsys):
    data = resources.files("boostlib.datasets").joinpath("higgs_train.tsv.gz")
    with resources.as_file(data) as path:
        code, out, err = _run(capsys, "train", path, "--target", "0", "-o", tmp_path / "m.json",
                              "--n-estimators", 3, "--max-depth", 2)
        assert code == 0, err
        assert "7000 rows, 28 features, target '0' -> classification" in out
        code, out, err = _run(capsys, "predict", tmp_path / "m.json", path)
    assert code == 0 and len(out.splitlines()) == 7001
    assert list(load_model(tmp_path / "m.json").feature_names_in_) == [str(i) for i in
                                                                        range(1, 29)]


def test_tab_separator_option(tmp_path, capsys):
    X, y = load_higgs("test")
    lines = ["\t".join([str(int(a))] + [repr(float(v)) for v in row]) for a, row in zip(y, X)]
    (tmp_path / "data.txt").write_text("\n".join(lines) + "\n")
    code, out, err = _run(capsys, "train", tmp_path / "data.txt", "--sep", "\\t", "--target",
                          "0", "-o", tmp_path / "m.json", "--n-estimators", 2)
    assert code == 0 and "500 rows, 28 features" in out, err
    # a separator of several characters is valid; the one-column message names it
    message = _error(capsys, "train", tmp_path / "data.txt", "--sep", ";;", "--target", "0")
    assert "splitting fields at ';;' as --sep says" in message and "--sep '\\t'" in message


def test_every_estimator_parameter_is_an_option(tmp_path, capsys):
    from boostlib.engine.params import DEFAULTS
    names = [p.name for p in estimator_parameters()]
    assert set(DEFAULTS) <= set(names) <= set(BoostRegressor().get_params())
    assert "--warm-start" not in build_parser().format_help()
    args = build_parser().parse_args(
        ["train", "d.csv", "--target", "y", "--n-estimators", "7", "--learning-rate", "0.5",
         "--grow-policy", "depthwise", "--loss", "sla", "--loss-params", '{"scale": 0.2}',
         "--update-params", '{"diffusion_temperature": 1000}', "--random-state", "3",
         "--n-jobs", "-1", "--early-stopping-rounds", "4", "--subsample", "0.5"])
    assert (args.n_estimators, args.learning_rate, args.grow_policy) == (7, 0.5, "depthwise")
    assert args.loss_params == {"scale": 0.2} and args.random_state == 3 and args.n_jobs == -1
    assert args.update_params == {"diffusion_temperature": 1000}
    assert not hasattr(args, "max_depth")        # not given: the estimator's default applies
    with pytest.raises(SystemExit) as exc:
        main(["train", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name in names:
        assert f"--{name.replace('_', '-')}" in out
    assert "--grow-policy {symmetric,depthwise,lossguide}" in out and "examples:" in out


def test_options_reach_the_model(higgs_csv, tmp_path, capsys):
    train, _, _ = higgs_csv
    code, _, err = _run(capsys, "train", train, "--target", "label", "-o", tmp_path / "m.json",
                        "--n-estimators", 4, "--max-depth", 3, "--sampler", "goss",
                        "--subsample", 0.5, "--sampler-params", '{"top_rate": 0.3}',
                        "--loss", "sla", "--loss-params", '{"scale": 0.2}',
                        "--leaf-estimation", "gradient", "--random-state", 5)
    assert code == 0, err
    params = load_model(tmp_path / "m.json").get_params()
    assert params["sampler"] == "goss" and params["sampler_params"] == {"top_rate": 0.3}
    assert params["loss"] == "sla" and params["loss_params"] == {"scale": 0.2}
    assert (params["max_depth"], params["random_state"], params["subsample"]) == (3, 5, 0.5)


def test_string_labels_and_task_inference(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    path = _write_csv(tmp_path / "s.csv", X, np.where(X[:, 0] > 0, "yes", "no"), ["a", "b", "c"],
                      target="answer")
    code, out, err = _run(capsys, "train", path, "--target", "answer", "-o", tmp_path / "m.json",
                          "--n-estimators", 5)
    assert code == 0 and "classification (classes no, yes)" in out, err
    code, out, _ = _run(capsys, "predict", tmp_path / "m.json", path)
    assert {line.split(",")[0] for line in out.splitlines()[1:]} <= {"yes", "no"}
    path = _write_csv(tmp_path / "r.csv", X, np.round(X[:, 0], 3), ["a", "b", "c"], target="t")
    code, out, err = _run(capsys, "train", path, "--target", "t", "-o", tmp_path / "r.json",
                          "--n-estimators", 5)
    assert code == 0 and "-> regression" in out, err
    assert err == "boostlib: task: regression, inferred because target 't' has non-integer " \
                  "values (e.g. 0.126) (--task overrides)\n"


# -- multiclass and the task rule -----------------------------------------------------------
SPECIES = np.array(["setosa", "versicolor", "virginica"])


def _features(n=300, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 3))


def _bins(X, borders):
    """Class index of each row: ``X[:, 0] + X[:, 1] / 3`` cut at ``borders``."""
    return np.digitize(X[:, 0] + X[:, 1] / 3, borders)


def _train_ok(capsys, path, target, *options):
    code, out, err = _run(capsys, "train", path, "--target", target, "--n-estimators", 10,
                          "--n-jobs", 1, *options)
    assert code == 0, err
    return out, err


def test_text_target_with_three_classes_trains_multiclass(tmp_path, capsys):
    X = _features()
    y = SPECIES[_bins(X, [-0.5, 0.5])]
    path = _write_csv(tmp_path / "iris.csv", X, y, ["a", "b", "c"], target="species")
    model_path = tmp_path / "m.json"
    out, err = _train_ok(capsys, path, "species", "-o", model_path)
    assert err == ("boostlib: task: multiclass classification (3 classes), inferred because "
                   "target 'species' is text with 3 distinct values (--task overrides)\n")
    assert "target 'species' -> classification (classes setosa, versicolor, virginica)" in out
    model = load_model(model_path)
    assert model.classes_.tolist() == SPECIES.tolist() and model.loss_.name == "multiclass"
    # the evaluation on the training rows, recomputed from the model file
    from boostlib.engine.metrics import accuracy, multiclass_logloss

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # an array has no feature names
        proba, labels = model.predict_proba(X), model.predict(X)
    want = (f"evaluation on the training rows: multiclass logloss "
            f"{multiclass_logloss(np.searchsorted(SPECIES, y), proba):.4f}  accuracy "
            f"{accuracy(y, labels):.4f}\n")
    assert want in out and "AUC" not in out


def test_multiclass_predictions_have_one_probability_column_per_class(tmp_path, capsys):
    X = _features()
    y = SPECIES[_bins(X, [-0.5, 0.5])]
    path = _write_csv(tmp_path / "iris.csv", X, y, ["a", "b", "c"], target="species")
    _train_ok(capsys, path, "species", "-o", tmp_path / "m.json")
    code, out, err = _run(capsys, "predict", tmp_path / "m.json", path, "-o",
                          tmp_path / "pred.csv")
    assert code == 0 and "300 predictions written" in out, err
    header, rows = _read_predictions(tmp_path / "pred.csv")
    assert header == ["prediction", "proba_setosa", "proba_versicolor", "proba_virginica"]
    proba = np.array([[float(v) for v in r[1:]] for r in rows])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert [r[0] for r in rows] == SPECIES[np.argmax(proba, axis=1)].tolist()
    assert len(set(r[0] for r in rows)) == 3
    model = load_model(tmp_path / "m.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert np.array_equal(proba, model.predict_proba(X))      # bit-identical


def test_integer_target_with_four_values_trains_multiclass(tmp_path, capsys):
    X = _features()
    y = 2 * _bins(X, [-0.7, 0.0, 0.7]) + 1                        # labels 1, 3, 5, 7
    path = _write_csv(tmp_path / "g.csv", X, y, ["a", "b", "c"], target="grade")
    out, err = _train_ok(capsys, path, "grade", "-o", tmp_path / "m.json",
                         "--eval-fraction", 0.25, "--random-state", 0)
    assert err == ("boostlib: task: multiclass classification (4 classes), inferred because "
                   "target 'grade' has 4 distinct integer values, each in at least 5 rows "
                   "(--task overrides)\n")
    assert "-> classification (classes 1, 3, 5, 7)" in out
    evaluation = next(line for line in out.splitlines() if line.startswith("evaluation"))
    assert evaluation.startswith("evaluation on 75 held-out rows: multiclass logloss 0.")
    words = evaluation.split()
    assert words[-2] == "accuracy" and 0.5 < float(words[-1]) <= 1.0
    assert 0 < float(words[-3]) < np.log(4)
    model = load_model(tmp_path / "m.json")
    assert model.classes_.tolist() == [1, 3, 5, 7] and model.loss_.name == "multiclass"
    code, out, _ = _run(capsys, "predict", tmp_path / "m.json", path)
    lines = out.splitlines()
    assert code == 0 and lines[0] == "prediction,proba_1,proba_3,proba_5,proba_7"
    assert {line.split(",")[0] for line in lines[1:]} <= {"1", "3", "5", "7"}


def test_binary_output_is_unchanged_by_the_multiclass_rule(tmp_path, capsys):
    X = _features(200)
    path = _write_csv(tmp_path / "b.csv", X, np.where(X[:, 0] > 0, 4, 9), ["a", "b", "c"],
                      target="y")
    out, err = _train_ok(capsys, path, "y", "-o", tmp_path / "m.json")
    assert err == "boostlib: task: binary classification, inferred because target 'y' has " \
                  "2 distinct integer values (--task overrides)\n"
    assert "logloss 0." in out and "AUC" in out and "multiclass" not in out
    code, out, _ = _run(capsys, "predict", tmp_path / "m.json", path)
    assert code == 0 and out.splitlines()[0] == "prediction,probability"


@pytest.mark.parametrize("y, reason", [
    (lambda X: np.arange(X.shape[0]) / 4, "has non-integer values (e.g. 0.25)"),
    (lambda X: np.arange(X.shape[0]) % 25, "has 25 distinct integer values, more than the 20 "
                                           "a class label may have"),
    (lambda X: np.where(np.arange(X.shape[0]) < 4, 9, _bins(X, [-0.5, 0.5])),
     "has 4 distinct integer values, but 9 occurs in only 4 rows (a class needs 5)"),
    (lambda X: np.full(X.shape[0], 3), "has a single value"),
])
def test_other_numeric_targets_train_a_regression(y, reason, tmp_path, capsys):
    X = _features()
    path = _write_csv(tmp_path / "r.csv", X, y(X), ["a", "b", "c"], target="t")
    out, err = _train_ok(capsys, path, "t", "-o", tmp_path / "r.json")
    assert err == f"boostlib: task: regression, inferred because target 't' {reason} " \
                  "(--task overrides)\n"
    assert "-> regression (numeric target)" in out and "RMSE" in out
    assert isinstance(load_model(tmp_path / "r.json"), BoostRegressor)


def test_task_option_overrides_the_rule(tmp_path, capsys):
    X = _features()
    path = _write_csv(tmp_path / "g.csv", X, _bins(X, [-0.7, 0.0, 0.7]), ["a", "b", "c"],
                      target="y")
    out, err = _train_ok(capsys, path, "y", "--task", "regression", "-o", tmp_path / "r.json")
    assert err == "boostlib: task: regression, from --task regression\n"
    assert "-> regression" in out and "RMSE" in out
    assert isinstance(load_model(tmp_path / "r.json"), BoostRegressor)
    # 25 integer values would be regressed; --task classification makes them classes
    path = _write_csv(tmp_path / "many.csv", X, np.arange(300) % 25, ["a", "b", "c"],
                      target="y")
    out, err = _train_ok(capsys, path, "y", "--task", "classification", "-o",
                         tmp_path / "c.json", "--n-estimators", 2)
    assert err == "boostlib: task: multiclass classification (25 classes), from --task " \
                  "classification\n"
    assert "(classes 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 15 more)" in out
    assert "multiclass logloss" in out
    assert load_model(tmp_path / "c.json").classes_.size == 25


def test_text_target_with_too_many_values_is_an_error(tmp_path, capsys):
    X = _features()
    cities = np.array([f"city{i:02d}" for i in range(30)])[np.arange(300) % 30]
    path = _write_csv(tmp_path / "c.csv", X, cities, ["a", "b", "c"], target="city")
    err = _error(capsys, "train", path, "--target", "city", "-o", tmp_path / "m.json")
    assert err == ("boostlib: error: --target 'city' is text with 30 distinct values; without "
                   "--task a text target must be a class label with at most 20 distinct "
                   "values. Pass --task classification to train a 30-class classifier anyway "
                   "(text cannot be regressed), or choose another --target")
    assert not (tmp_path / "m.json").exists()
    _train_ok(capsys, path, "city", "--task", "classification", "-o", tmp_path / "m.json",
              "--n-estimators", 2)
    assert load_model(tmp_path / "m.json").classes_.tolist() == sorted(set(cities))


def test_targets_that_cannot_serve_the_task_are_errors(tmp_path, capsys):
    X = _features(60)
    text = _write_csv(tmp_path / "t.csv", X, SPECIES[np.arange(60) % 3], ["a", "b", "c"],
                      target="y")
    assert "--task regression needs a numeric target, but --target 'y' is text (3 distinct " \
           "values such as 'setosa'); use --task classification" in \
        _error(capsys, "train", text, "--target", "y", "--task", "regression")
    floats = _write_csv(tmp_path / "f.csv", X, X[:, 0].round(2), ["a", "b", "c"], target="y")
    assert "--task classification needs class labels, but --target 'y' holds non-integer " \
           "numbers such as" in _error(capsys, "train", floats, "--target", "y", "--task",
                                       "classification")
    single = _write_csv(tmp_path / "s.csv", X, ["a"] * 60, ["a", "b", "c"], target="y")
    assert "--target 'y' has the single value 'a'; classification needs at least two " \
           "classes" in _error(capsys, "train", single, "--target", "y")
    # a class only in the held-out rows: the model could not learn it
    rare = _write_csv(tmp_path / "r.csv", X, ["x"] * 59 + ["y"], ["a", "b", "c"], target="y")
    for seed in range(20):
        code, _, err = _run(capsys, "train", rare, "--target", "y", "--eval-fraction", 0.2,
                            "--random-state", seed, "-o", tmp_path / "m.json",
                            "--n-estimators", 2)
        if code:
            break
    assert code == 2 and "--eval-fraction 0.2 holds out every row of class 'y'" in err
    assert "use a smaller --eval-fraction or another --random-state" in err


def test_help_states_the_task_rule(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "text -> classification (at most 20 distinct values); integers with 2 distinct " \
           "values, or 3 to 20 each in at least 5 rows -> classification (binary, " \
           "multiclass); other numbers -> regression" in out
    assert "multiclass logloss and accuracy" in out
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    assert "prediction,proba_<label>" in capsys.readouterr().out


def test_multiclass_logloss_metric():
    from boostlib.engine.metrics import logloss, multiclass_logloss

    proba = np.array([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]])
    y = np.array([1, 0, 1])
    assert multiclass_logloss(y, proba) == pytest.approx(logloss(y, proba[:, 1]), rel=1e-12)
    proba = np.array([[0.7, 0.2, 0.1], [0.0, 0.0, 1.0]])
    assert multiclass_logloss([0, 1], proba) == pytest.approx(
        (-np.log(0.7) - np.log(1e-15)) / 2)                        # clipped, not infinite
    assert multiclass_logloss([0, 2], proba, sample_weight=[1, 0]) == pytest.approx(
        -np.log(0.7))
    with pytest.raises(ValueError, match="class indices 0 .. 2"):
        multiclass_logloss([0, 3], proba)
    with pytest.raises(ValueError, match="shape"):
        multiclass_logloss([0, 1, 2], proba)


def _error(capsys, *argv):
    """The one-line error of a failing command (after ``train``'s task line, if any)."""
    code, out, err = _run(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert "Traceback" not in err and ": error: " in lines[-1], err
    assert all(line.startswith("boostlib: task: ") for line in lines[:-1]), err
    return lines[-1]


def test_user_errors_are_one_line(higgs_csv, tmp_path, capsys):
    train, test, _ = higgs_csv
    model = tmp_path / "m.json"
    t = ("train", train, "--target", "label", "-o", model, "--n-estimators", 2)
    assert "No such file" in _error(capsys, "train", tmp_path / "nope.csv", "--target", "y")
    assert "no column 'y'; columns are 'label', 'f0'" in _error(capsys, "train", train,
                                                                 "--target", "y")
    assert "loss='hinge' is not registered; available:" in _error(capsys, *t, "--loss",
                                                                  "hinge")
    assert "max_depth=0 is invalid" in _error(capsys, *t, "--max-depth", 0)
    assert "folder" in _error(capsys, "train", train, "--target", "label", "-o",
                              tmp_path / "no" / "m.json")
    assert main([str(a) for a in t]) == 0
    capsys.readouterr()
    short = _write_csv(tmp_path / "short.csv", np.ones((3, 2)), [0, 1, 0], ["f0", "f1"])
    assert "missing columns 'f2', 'f3'" in _error(capsys, "predict", model, short)
    (tmp_path / "bad.json").write_text('{"format": "boostlib-model", "format_version": 9}')
    assert "format version 9" in _error(capsys, "predict", tmp_path / "bad.json", test)
    assert "cannot read model file" in _error(capsys, "predict", tmp_path / "x.json", test)
    (tmp_path / "text.csv").write_text("y,a,b\n1,x,2\n0,y,3\n")
    assert "has no column 'z'" in _error(capsys, "train", tmp_path / "text.csv",
                                         "--target", "y", "--categorical", "z")
    (tmp_path / "ragged.csv").write_text("y,a\n1,2\n0\n")
    assert "data row 2 has 1 fields" in _error(capsys, "train", tmp_path / "ragged.csv",
                                               "--target", "y")


@pytest.mark.parametrize("argv, message", [
    (["--update-params", "{bad"], "argument --update-params: invalid JSON"),
    (["--loss-params", "[1]"], "expected a JSON object"),
    (["--max-depth", "abc"], "argument --max-depth: invalid int value: 'abc'"),
    (["--eval-fraction", "1.5"], "expected a number in [0, 1)"),
])
def test_bad_option_values_are_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "d.csv", "--target", "y"] + argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_user_error_from_the_console_has_no_traceback(tmp_path):
    res = subprocess.run([sys.executable, "-m", "boostlib", "predict", str(tmp_path / "m.json"),
                          str(tmp_path / "d.csv")], capture_output=True, text=True)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.startswith("boostlib: error: cannot read model file")


def test_parquet_input(higgs_csv, tmp_path, capsys):
    pa = importorskip("pyarrow")
    pq = importorskip("pyarrow.parquet")
    X, y = load_higgs("test")
    columns = {"label": pa.array(y.astype(int))}
    columns.update({n: pa.array(X[:, i]) for i, n in enumerate(NAMES)})
    pq.write_table(pa.table(columns), tmp_path / "test.parquet")
    code, _, err = _run(capsys, "train", tmp_path / "test.parquet", "--target", "label",
                        "-o", tmp_path / "m.json", "--n-estimators", 3)
    assert code == 0, err
    code, out, _ = _run(capsys, "predict", tmp_path / "m.json", higgs_csv[1])
    code2, out2, _ = _run(capsys, "predict", tmp_path / "m.json", tmp_path / "test.parquet")
    assert code == code2 == 0 and out == out2


SONAR = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "sonar" / "sonar.csv"


@pytest.mark.skipif(not SONAR.exists(), reason="../shared/datasets is not available")
def test_real_dataset_end_to_end(tmp_path, capsys):
    model_path, pred_path = tmp_path / "sonar.json", tmp_path / "pred.csv"
    code, out, err = _run(capsys, "train", SONAR, "--target", "60", "--eval-fraction", 0.25,
                          "--random-state", 0, "-o", model_path, "--n-estimators", 30)
    assert code == 0 and "208 rows, 60 features, target '60' -> classification (classes M, R)" \
        in out, err
    assert main(["predict", str(model_path), str(SONAR), "-o", str(pred_path)]) == 0
    _, rows = _read_predictions(pred_path)
    X = np.loadtxt(SONAR, delimiter=",", usecols=range(60))
    model = load_model(model_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert np.array_equal([float(r[1]) for r in rows], model.predict_proba(X)[:, 1])
        assert [r[0] for r in rows] == model.predict(X).tolist()
    assert os.path.getsize(model_path) > 0


def test_ranking_holds_out_whole_queries_and_predicts_scores(tmp_path, capsys):
    from boostlib import create
    rng = np.random.default_rng(0)
    sizes = rng.integers(4, 12, 60)
    X = rng.normal(size=(sizes.sum(), 4))
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=len(X)), [0.0, 1.0]).astype(int)
    qid = np.repeat(rng.permutation(1000)[:sizes.size], sizes)       # ids in any order
    path = tmp_path / "rank.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["rel", "qid", "a", "b", "c", "d"])
        for label, q, row in zip(y, qid, X):
            writer.writerow([label, q] + [repr(float(v)) for v in row])
    model_path, pred_path = tmp_path / "r.json", tmp_path / "p.csv"
    code, out, err = _run(capsys, "train", path, "--target", "rel", "--task", "ranking",
                          "--group", "qid", "--eval-fraction", 0.25, "--random-state", 1,
                          "--eval-metric", "ndcg@5", "-o", model_path, "--n-estimators", 30)
    assert code == 0, err
    assert f"-> ranking ({sizes.size} queries in column 'qid')" in out
    n_eval = int(out.split("evaluation on ")[1].split()[0])
    held = sizes[np.sort(np.random.default_rng(1).permutation(sizes.size)[:15])]
    assert n_eval == held.sum()                  # 15 of the 60 queries, whole
    assert "NDCG@10 0." in out and "MAP@10 0." in out
    model = load_model(model_path)
    assert type(model).__name__ == "BoostRanker"
    assert list(model.feature_names_in_) == ["a", "b", "c", "d"]     # qid is not a feature
    assert list(model.evals_result_["valid_0"]) == ["lambdarank", "ndcg@5"]
    code, out, err = _run(capsys, "predict", model_path, path, "--output", pred_path)
    assert code == 0, err
    header, rows = _read_predictions(pred_path)
    assert header == ["prediction"]
    scores = np.array([float(r[0]) for r in rows])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # an array has no feature names
        assert np.array_equal(scores, model.predict(X))
    assert create("metric", "ndcg", {"k": 5})(y, scores, group=sizes) > 0.8


# -- issue 27: what new users hit -----------------------------------------------------------------
_ADULT = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "adult" / "adult-train.csv"


def _adult_like(path, n=300, seed=0):
    """Rows as the raw UCI Adult files write them: ", " between fields, no header, "?" for
    a missing value, text and numbers mixed."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        age = int(rng.integers(18, 80))
        work = ["Private", "State-gov", "?", "Self-emp-not-inc"][i % 4]
        hours = int(rng.integers(10, 70))
        label = ">50K" if age + hours + rng.normal(0, 15) > 90 else "<=50K"
        lines.append(f"{age}, {work}, {hours}, {label}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("sep", [None, ",", ", ", ",  "])
def test_spaces_after_separators_are_skipped(tmp_path, capsys, sep):
    """The raw Adult files separate fields by ", ": they read without --sep, and
    --sep ", " (what a user copies from the file) means the same."""
    data = _adult_like(tmp_path / "adult.data")
    options = [] if sep is None else ["--sep", sep]
    code, out, err = _run(capsys, "train", data, "--target", "3", "-o", tmp_path / "m.json",
                          "--n-estimators", 3, *options)
    assert code == 0, err
    assert "300 rows, 3 features, target '3' -> classification (classes <=50K, >50K)" in out
    assert "categorical features: '1' (3 levels)" in out     # "?" is missing, not a level
    model = load_model(tmp_path / "m.json")
    assert model.classes_.tolist() == ["<=50K", ">50K"]
    code, out, err = _run(capsys, "predict", tmp_path / "m.json", data, *options)
    assert code == 0 and out.splitlines()[0] == "prediction,probability", err


@pytest.mark.skipif(not _ADULT.exists(), reason="needs ../shared/datasets/adult")
def test_the_raw_adult_file_trains(tmp_path, capsys):
    head = tmp_path / "adult.csv"
    head.write_text("".join(_ADULT.open().readlines()[:3000]))
    for options in ([], ["--sep", ", "]):
        code, out, err = _run(capsys, "train", head, "--target", "14", "--n-estimators", 5,
                              "-o", tmp_path / "m.json", *options)
        assert code == 0, err
        assert "3000 rows, 14 features, target '14' -> classification (classes <=50K, >50K)" \
            in out


def test_separators_of_several_characters(tmp_path, capsys):
    rows = ['y::city::x'] + [f'{i % 2}::"{"Paris::FR" if i % 3 else "Lima"}"::{i}'
                             for i in range(60)]
    data = tmp_path / "d.txt"
    data.write_text("\n".join(rows) + "\n")
    code, out, err = _run(capsys, "train", data, "--target", "y", "--sep", "::",
                          "-o", tmp_path / "m.json", "--n-estimators", 2)
    assert code == 0, err
    assert "60 rows, 2 features" in out and "'city' (2 levels)" in out
    from boostlib.io.tables import read_table

    # the quoted "Paris::FR" is one level, with its separator inside
    table = read_table(data, sep="::")
    assert sorted(set(table.column("city"))) == ["Lima", "Paris::FR"]


def test_a_one_column_file_names_the_separator_tried(tmp_path, capsys):
    data = tmp_path / "semi.csv"
    data.write_text("y;a;b\n1;2;3\n0;3;4\n")
    message = _error(capsys, "train", data, "--target", "y")
    assert "splitting fields at ',', the default separator for this file name" in message
    assert "then pass --sep ';'" in message
    message = _error(capsys, "train", data, "--target", "y", "--sep", "|")
    assert "splitting fields at '|' as --sep says" in message and "--sep ';'" in message
    plain = tmp_path / "words.csv"
    plain.write_text("y\n1\n0\n1\n")
    message = _error(capsys, "train", plain, "--target", "y")
    assert "only the --target column" in message
    assert "splitting fields at ','" in message and "pass that with --sep" in message


#: Options that fail on their own, whatever the data: each must fail before it is read.
_BAD_PARAMETERS = [
    (["--learning-rate=-1"], "--learning-rate: learning_rate=-1.0 is invalid"),
    (["--max-depth", "0"], "--max-depth: max_depth=0 is invalid"),
    (["--subsample", "2"], "--subsample: subsample=2.0 is invalid"),
    (["--loss", "hinge"], "--loss: loss='hinge' is not registered"),
    (["--sampler", "nope"], "--sampler: sampler='nope' is not registered"),
    (["--update-params", '{"zzz": 1}'], "--update-params: update 'sgb'"),
    (["--update", "agbm", "--update-params", '{"momentum": 3}'],
     "--update-params: update rule 'agbm': momentum=3 is invalid"),
    (["--sampler", "goss", "--sampler-params", '{"top_rate": 3}'],
     "--sampler-params: sampler 'goss': top_rate=3 is invalid"),
    (["--sampler-params", '{"top_rate": 0.1}'], "--sampler NAME"),
    (["--eval-metric", "nope"], "--eval-metric: eval_metric: metric='nope' is not registered"),
    (["--eval-metric", "ndcg@x"], "--eval-metric: eval_metric: metric 'ndcg@x' is invalid"),
    (["--early-stopping-rounds", "5"], "--early-stopping-rounds 5 needs held-out rows"),
    (["--task", "ranking", "--group", "q", "--n-jobs", "0"], "--n-jobs: n_jobs=0"),
]


@pytest.mark.parametrize("options, message", _BAD_PARAMETERS,
                         ids=[" ".join(o) for o, _ in _BAD_PARAMETERS])
def test_parameters_are_checked_before_the_data_is_read(monkeypatch, capsys, options,
                                                        message):
    import boostlib.frontend.cli.train as cli

    def read_table(*args, **kwargs):
        raise AssertionError("the data was read before the parameters were checked")

    monkeypatch.setattr(cli, "read_table", read_table)
    code, out, err = _run(capsys, "train", "huge.csv", "--target", "y", *options)
    assert code == 2 and out == "" and message in err, err
    assert err.count("\n") == 1 and "task:" not in err      # one line, before any reading
    with pytest.raises(AssertionError, match="data was read"):     # valid ones read the data
        main(["train", "huge.csv", "--target", "y", "--learning-rate", "0.05",
              "--early-stopping-rounds", "5", "--eval-fraction", "0.2"])


def test_early_stopping_without_eval_fraction_names_the_options(tmp_path, capsys):
    data = _adult_like(tmp_path / "adult.data")
    message = _error(capsys, "train", data, "--target", "3", "--early-stopping-rounds", 10)
    assert message == ("boostlib: error: --early-stopping-rounds 10 needs held-out rows to "
                       "watch, but there are none; expected --eval-fraction F too (e.g. "
                       "--eval-fraction 0.2 holds out 20% of the rows), or --cv K (each "
                       "fold's held-out rows)")
    assert "eval_set" not in message and not (tmp_path / "model.json").exists()
    code, out, err = _run(capsys, "train", data, "--target", "3", "--early-stopping-rounds", 3,
                          "--eval-fraction", 0.3, "-o", tmp_path / "m.json",
                          "--n-estimators", 50)
    assert code == 0, err


def _train_parser():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices["train"]


def test_train_help_lists_every_parameter_with_its_description_and_default(capsys):
    """Every estimator parameter is an option under "estimator parameters", with a
    description (not its bare name) and its default."""
    from boostlib.frontend.cli.options import TRAIN_SET_PARAMETERS

    train = _train_parser()
    group = next(g for g in train._action_groups if g.title == "estimator parameters")
    helps = {a.dest: a.help for a in group._group_actions}
    names = [p.name for p in estimator_parameters()]
    assert sorted(helps) == sorted(names) and not set(names) & set(TRAIN_SET_PARAMETERS)
    for p in estimator_parameters():
        text = helps[p.name]
        assert len(text) > 30 and text != p.name.replace("_", " "), (p.name, text)
        assert "default" in text, (p.name, text)
        assert ":class:" not in text and "``" not in text, (p.name, text)
    assert "auc,logloss" in helps["eval_metric"] and "--eval-fraction" in \
        helps["early_stopping_rounds"]
    assert "differs from run to run" in helps["random_state"]
    assert '"gradient"' in helps["leaf_estimation"]          # both choices described
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    for name in names:
        assert f"--{name.replace('_', '-')}" in out
    assert "categorical_features is set by --categorical" in " ".join(out.split())
    assert "--group qid \\\n" in out          # the ranking example keeps its line break


def test_demo_explains_rows_worse_than_a_constant_model(capsys):
    """Without early stopping, at a high learning rate, the accelerated rules overfit past
    the constant model: the rows are marked and the note says why."""
    import argparse
    from boostlib.frontend.cli.demo import _demo_binary

    _demo_binary(argparse.Namespace(n_estimators=40, learning_rate=0.5, max_depth=6,
                                    random_state=0, n_jobs=1, early_stopping_rounds=0))
    out = capsys.readouterr().out
    constant = float(out.split("constant model")[1].split("logloss ")[1].split(",")[0])
    rows = [line.split() for line in out.splitlines()
            if line.startswith(("symmetric", "depthwise"))]
    marked = [r for r in rows if r[-1] == "*"]
    assert marked and all(float(r[-4]) > constant for r in marked)
    assert all(float(r[-3]) <= constant for r in rows if r[-1] != "*")
    assert {r[1] for r in marked} & {"agbm", "agbmr", "vagbm"}
    note = " ".join(out.split("* worse than the constant model:")[1].split())
    assert "--early-stopping-rounds" in note
    if {r[1] for r in marked} <= {"agbm", "agbmr", "vagbm"}:
        assert "accelerated update rules" in note
    else:                       # sgb overfits too at learning rate 0.5 on some builds
        assert "the model overfits the training rows" in note


def test_demo_stops_early_by_default(capsys):
    assert main(["demo", "--n-estimators", "30", "--n-jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "early stopping: fitted on 5600 training rows" in out and "patience 20" in out
    assert "constant model (the training rows' positive rate" in out
    binary = out.partition("\nmulticlass:")[0]
    assert "Early stopping picks each model's number of iterations" in " ".join(binary.split())
    assert " *\n" not in binary
