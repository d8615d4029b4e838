"""``boostlib train --offset COLUMN`` and ``boostlib predict --offset COLUMN``: a column of
raw-score offsets (the estimators' ``init_score``), not a feature."""
import csv

import numpy as np
import pytest

from boostlib import BoostRegressor, load_model
from boostlib.frontend.cli import main


def _write(path, rows, header):
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


@pytest.fixture
def claims(tmp_path):
    rng = np.random.default_rng(0)
    n = 600
    x = rng.normal(size=(n, 2))
    log_exposure = np.log(rng.uniform(0.5, 4.0, n))
    y = rng.poisson(np.exp(0.5 * x[:, 0] - 1.0 + log_exposure))
    path = tmp_path / "claims.csv"
    _write(path, [(repr(float(a)), repr(float(b)), repr(float(e)), int(c))
                  for (a, b), e, c in zip(x, log_exposure, y)],
           ["x0", "x1", "log_exposure", "claims"])
    return path, x, y.astype(float), log_exposure


def _error(capsys, *argv):
    assert main(list(map(str, argv))) == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_train_and_predict_with_an_offset_column(claims, tmp_path, capsys):
    path, x, y, log_exposure = claims
    model_path, pred_path = tmp_path / "model.json", tmp_path / "pred.csv"
    assert main(["train", str(path), "--target", "claims", "--offset", "log_exposure",
                 "--loss", "poisson", "--n-estimators", "20", "--random-state", "0",
                 "-o", str(model_path)]) == 0
    out = capsys.readouterr().out
    assert "2 features" in out              # the offset is not a feature
    assert main(["predict", str(model_path), str(path), "--offset", "log_exposure",
                 "-o", str(pred_path)]) == 0
    with open(pred_path) as fh:
        written = np.array([float(r["prediction"]) for r in csv.DictReader(fh)])
    same = BoostRegressor(loss="poisson", n_estimators=20, random_state=0)
    same.fit(x, y, init_score=log_exposure)
    np.testing.assert_array_equal(written, same.predict(x, init_score=log_exposure))
    model = load_model(str(model_path))
    assert list(model.feature_names_in_) == ["x0", "x1"]


def test_offset_errors_name_the_column(claims, tmp_path, capsys):
    path, x, y, log_exposure = claims
    assert "--offset 'nope': " in _error(capsys, "train", path, "--target", "claims",
                                         "--offset", "nope")
    assert "is the --target column" in _error(capsys, "train", path, "--target", "claims",
                                              "--offset", "claims")
    bad = tmp_path / "bad.csv"
    _write(bad, [(1.0, "a", 1), (2.0, "", 0), (3.0, "c", 1)], ["x", "off", "y"])
    assert "--offset 'off' holds text (e.g. 'a')" in _error(
        capsys, "train", bad, "--target", "y", "--offset", "off")
    _write(bad, [(1.0, 0.5, 1), (2.0, "NA", 0), (3.0, 1.0, 1)], ["x", "off", "y"])
    assert "--offset 'off' is missing in data row 2" in _error(
        capsys, "train", bad, "--target", "y", "--offset", "off")
