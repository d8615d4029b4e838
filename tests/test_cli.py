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

from boostlib import BoostRegressor, __version__, load_model
from boostlib.frontend.cli import build_parser, estimator_parameters, main
from boostlib.datasets import load_higgs


def test_demo_prints_a_comparison(capsys):
    assert main(["demo", "--n-estimators", "5", "--n-jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "HIGGS" in out
    rows = [line for line in out.splitlines() if line.startswith(("symmetric", "depthwise"))]
    assert len(rows) >= 4
    for line in rows:
        logloss = float(line.split()[-3])
        assert 0.3 < logloss < 0.7


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
    assert "--sep ';;' is invalid" in _error(capsys, "train", tmp_path / "data.txt", "--sep",
                                             ";;", "--target", "0")


def test_every_estimator_parameter_is_an_option(tmp_path, capsys):
    names = [p.name for p in estimator_parameters()]
    assert set(names) == set(BoostRegressor().get_params())
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
    assert "--grow-policy {symmetric,depthwise}" in out and "examples:" in out


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


def _error(capsys, *argv):
    code, out, err = _run(capsys, *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


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
    assert "non-numeric column 'a'" in _error(capsys, "train", tmp_path / "text.csv",
                                              "--target", "y")
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
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
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
