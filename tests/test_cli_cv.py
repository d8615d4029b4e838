"""``boostlib train --cv K``: k-fold cross-validation of the options' estimator on DATA."""
import csv

import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRanker, BoostRegressor, create
from boostlib.frontend.cli import main


def _write(path, header, rows):
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _read(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _error(capsys, *argv):
    code, out, err = _run(capsys, *argv)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert "Traceback" not in err and ": error: " in lines[-1], err
    return lines[-1]


@pytest.fixture
def binary(tmp_path):
    """600 rows, 4 numeric features, a 0/1 label with about 35% ones."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + 0.7 * rng.normal(size=600) > 0.5).astype(int)
    path = _write(tmp_path / "data.csv", ["y", "a", "b", "c", "d"],
                  [[label] + [repr(float(v)) for v in row] for label, row in zip(y, X)])
    return path, X, y


def _history(path):
    header, rows = _read(path)
    values = np.array(rows, dtype=float)
    return header, {name: values[:, i] for i, name in enumerate(header)}


def test_cv_table_and_oof_predictions_equal_separate_fits_on_the_folds(binary, tmp_path,
                                                                        capsys):
    path, X, y = binary
    table, oof = tmp_path / "cv.csv", tmp_path / "oof.csv"
    params = {"n_estimators": 15, "learning_rate": 0.3, "max_depth": 3}
    code, out, err = _run(capsys, "train", path, "--target", "y", "--cv", 4,
                          "--n-estimators", 15, "--learning-rate", 0.3, "--max-depth", 3,
                          "--eval-metric", "auc", "--cv-output", table, "--oof-output", oof,
                          "--random-state", 0, "--n-jobs", 1)
    assert code == 0, err
    assert "4-fold cross-validation of BoostClassifier" in out
    assert "(folds stratified by class, seed 0): 15 iterations each" in out
    assert f"scores of 15 iterations written to {table}" in out
    assert f"600 out-of-fold predictions written to {oof}" in out
    header, history = _history(table)
    assert header == ["iteration", "logloss-mean", "logloss-std", "auc-mean", "auc-std"]
    np.testing.assert_array_equal(history["iteration"], np.arange(15))
    oof_header, oof_rows = _read(oof)
    assert oof_header == ["fold", "prediction", "probability"] and len(oof_rows) == 600
    fold = np.array([int(r[0]) for r in oof_rows])
    assert sorted(set(fold.tolist())) == [0, 1, 2, 3]
    # stratified: every fold holds 150 rows and its share of the ones
    assert np.bincount(fold).tolist() == [150] * 4
    shares = [y[fold == k].mean() for k in range(4)]
    assert max(shares) - min(shares) <= 1 / 150 + 1e-12
    # each fold is a fit of the other folds' rows scored on its own: the table is the mean
    # and population standard deviation of those fits' curves
    curves = {"logloss": [], "auc": []}
    for k in range(4):
        fit, held = fold != k, fold == k
        model = BoostClassifier(**params, eval_metric="auc", random_state=0, n_jobs=1).fit(
            X[fit], y[fit], eval_set=[(X[held], y[held])])
        for name in curves:
            curves[name].append(model.evals_result_["valid_0"][name])
        proba = model.predict_proba(X[held])[:, 1]
        written = np.array([float(r[2]) for r in oof_rows])[held]
        np.testing.assert_array_equal(written, proba)
        assert [r[1] for r in np.array(oof_rows, dtype=object)[held]] == \
            [str(v) for v in model.predict(X[held])]
    for name, values in curves.items():
        values = np.array(values)
        np.testing.assert_allclose(history[f"{name}-mean"], values.mean(axis=0), rtol=0,
                                   atol=1e-12)
        np.testing.assert_allclose(history[f"{name}-std"], values.std(axis=0), rtol=0,
                                   atol=1e-12)
    # the best iteration is the best mean of the first metric (AUC: higher is better)
    best = int(np.argmax(history["auc-mean"]))
    assert f"best iteration: {best} (0-based; {best + 1} iterations), by the mean auc: " \
        in out
    line = next(ln for ln in out.splitlines() if ln.strip().endswith("<- best"))
    assert line.split()[0] == str(best)
    assert f"{history['auc-mean'][best]:.4f} ± {history['auc-std'][best]:.4f}" in line


def test_early_stopping_stops_every_fold_at_the_best_mean(binary, tmp_path, capsys):
    path, X, y = binary
    table, oof = tmp_path / "cv.csv", tmp_path / "oof.csv"
    code, out, err = _run(capsys, "train", path, "--target", "y", "--cv", 3,
                          "--n-estimators", 300, "--learning-rate", 0.8,
                          "--early-stopping-rounds", 5, "--cv-output", table,
                          "--oof-output", oof, "--random-state", 2)
    assert code == 0, err
    _, history = _history(table)
    n = history["iteration"].size
    best = int(np.argmin(history["logloss-mean"]))
    assert n == best + 6 < 300
    assert (f"early stopping: the mean logloss did not improve for 5 iterations after "
            f"iteration {best}; every fold stopped at iteration {n - 1}") in out
    # the out-of-fold predictions are those of the folds' models at the best iteration
    _, rows = _read(oof)
    fold = np.array([int(r[0]) for r in rows])
    for k in range(3):
        fit, held = fold != k, fold == k
        model = BoostClassifier(n_estimators=best + 1, learning_rate=0.8, random_state=2
                                ).fit(X[fit], y[fit])
        np.testing.assert_array_equal([float(r[2]) for r in np.array(rows)[held]],
                                      model.predict_proba(X[held])[:, 1])


def test_regression_with_an_offset_and_a_text_column(tmp_path, capsys):
    rng = np.random.default_rng(1)
    n = 400
    x = rng.normal(size=n)
    city = rng.choice(["Lima", "Oslo", "Paris"], size=n)
    offset = rng.normal(size=n)
    y = 2 * x + (city == "Lima") + offset + 0.1 * rng.normal(size=n)
    path = _write(tmp_path / "r.csv", ["y", "x", "city", "off"],
                  [[repr(float(a)), repr(float(b)), c, repr(float(o))]
                   for a, b, c, o in zip(y, x, city, offset)])
    oof = tmp_path / "oof.csv"
    code, out, err = _run(capsys, "train", path, "--target", "y", "--offset", "off", "--cv", 5,
                          "--n-estimators", 40, "--oof-output", oof, "--random-state", 0)
    assert code == 0, err
    assert "5-fold cross-validation of BoostRegressor" in out and "(folds of random rows" in out
    assert "categorical features: 'city' (3 levels)" in out
    header, rows = _read(oof)
    assert header == ["fold", "prediction"] and len(rows) == n
    pred = np.array([float(r[1]) for r in rows])
    fold = np.array([int(r[0]) for r in rows])
    assert np.bincount(fold).tolist() == [80] * 5
    # the offsets are added back: the predictions track y, offsets included
    assert np.sqrt(np.mean((pred - y) ** 2)) < 0.5 * np.std(y)
    codes = np.searchsorted(["Lima", "Oslo", "Paris"], city).astype(float)
    features = np.column_stack([x, codes])
    k0 = fold == 0
    model = BoostRegressor(n_estimators=40, random_state=0, categorical_features=[1]).fit(
        features[~k0], y[~k0], init_score=offset[~k0])
    np.testing.assert_array_equal(pred[k0], model.predict(features[k0], init_score=offset[k0]))


def _ranking_file(tmp_path, n_queries=30):
    rng = np.random.default_rng(2)
    sizes = rng.integers(4, 10, n_queries)
    X = rng.normal(size=(sizes.sum(), 3))
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=len(X)), [0.0, 1.0])
    qid = np.repeat(np.arange(100, 100 + n_queries), sizes)
    path = _write(tmp_path / "rank.csv", ["rel", "qid", "a", "b", "c"],
                  [[label, q] + [repr(float(v)) for v in row] for label, q, row in zip(y, qid, X)])
    return path, X, y, sizes, qid


def test_ranking_folds_hold_whole_queries(tmp_path, capsys):
    path, X, y, sizes, qid = _ranking_file(tmp_path)
    table, oof = tmp_path / "cv.csv", tmp_path / "oof.csv"
    code, out, err = _run(capsys, "train", path, "--target", "rel", "--task", "ranking",
                          "--group", "qid", "--cv", 3, "--eval-metric", "ndcg@5",
                          "--n-estimators", 10, "--cv-output", table, "--oof-output", oof,
                          "--random-state", 0)
    assert code == 0, err
    assert "3-fold cross-validation of BoostRanker" in out and "folds of whole queries" in out
    header, history = _history(table)
    assert header == ["iteration", "lambdarank-mean", "lambdarank-std", "ndcg@5-mean",
                      "ndcg@5-std"]
    _, rows = _read(oof)
    fold = np.array([int(r[0]) for r in rows])
    for q in np.unique(qid):
        assert np.unique(fold[qid == q]).size == 1          # a query is never split
    assert sorted(np.bincount([fold[qid == q][0] for q in np.unique(qid)]).tolist()) == \
        [10, 10, 10]
    # the NDCG@5 of the held-out queries, fold by fold, averaged: the table's last row
    ndcg = create("metric", "ndcg", {"k": 5})
    scores = np.array([float(r[1]) for r in rows])
    per_fold = []
    for k in range(3):
        held = fold == k
        fit = ~held
        model = BoostRanker(n_estimators=10, random_state=0, eval_metric="ndcg@5").fit(
            X[fit], y[fit], group=np.unique(qid[fit], return_counts=True)[1])
        np.testing.assert_array_equal(scores[held], model.predict(X[held]))
        per_fold.append(ndcg(y[held], scores[held],
                             group=np.unique(qid[held], return_counts=True)[1]))
    assert history["ndcg@5-mean"][-1] == pytest.approx(np.mean(per_fold), abs=1e-12)
    # more folds than queries
    message = _error(capsys, "train", path, "--target", "rel", "--task", "ranking", "--group",
                     "qid", "--cv", 31)
    assert message.endswith("--cv 31 asks for 31 folds, but " + str(path) + " has 30 queries; "
                            "expected at most 30 folds (each holds out at least one query, "
                            "whole queries for ranking)")
    message = _error(capsys, "train", path, "--target", "rel", "--task", "ranking", "--cv", 3)
    assert "--task ranking needs --group COLUMN" in message


def test_multiclass_oof_has_a_probability_per_class(tmp_path, capsys):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    label = np.array(["ant", "bee", "cat"])[np.argmax(X + rng.gumbel(size=(300, 3)), axis=1)]
    path = _write(tmp_path / "m.csv", ["kind", "a", "b", "c"],
                  [[k] + [repr(float(v)) for v in row] for k, row in zip(label, X)])
    oof = tmp_path / "oof.csv"
    code, out, err = _run(capsys, "train", path, "--target", "kind", "--cv", 3,
                          "--n-estimators", 5, "--oof-output", oof)
    assert code == 0, err
    assert "multiclass (mean ± std)" in out
    header, rows = _read(oof)
    assert header == ["fold", "prediction", "proba_ant", "proba_bee", "proba_cat"]
    proba = np.array([[float(v) for v in r[2:]] for r in rows])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert [r[1] for r in rows] == np.array(["ant", "bee", "cat"])[proba.argmax(axis=1)].tolist()


def test_cv_errors_name_the_options(binary, tmp_path, capsys):
    path, _, y = binary
    base = ("train", path, "--target", "y")
    for value in ("1", "0", "-3", "two"):
        with pytest.raises(SystemExit) as exc:
            main(["train", str(path), "--target", "y", f"--cv={value}"])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and ("argument --cv: expected the number of folds, an "
                                        f"integer >= 2, got '{value}'") in err
    assert _error(capsys, *base, "--cv", 601).endswith(
        f"--cv 601 asks for 601 folds, but {path} has 600 rows; expected at most 600 folds "
        "(each holds out at least one row)")
    message = _error(capsys, *base, "--cv", 3, "--output", tmp_path / "m.json")
    assert "--output" in message and "--cv 3 does not write" in message
    assert "--eval-fraction 0.2 and --cv 3 both choose the held-out rows" in _error(
        capsys, *base, "--cv", 3, "--eval-fraction", 0.2)
    assert "--cv-output 'x.csv' is for cross-validation; expected --cv K" in _error(
        capsys, *base, "--cv-output", "x.csv")
    assert "--oof-output 'x.csv' is for cross-validation" in _error(
        capsys, *base, "--oof-output", "x.csv")
    assert "--cv-output and --oof-output are both" in _error(
        capsys, *base, "--cv", 3, "--cv-output", tmp_path / "a.csv", "--oof-output",
        tmp_path / "a.csv")
    assert "--cv-output" in _error(capsys, *base, "--cv", 3, "--cv-output",
                                   tmp_path / "missing" / "a.csv")
    assert f"--oof-output '{path}' is the DATA file" in _error(
        capsys, *base, "--cv", 3, "--oof-output", path)
    # a class with fewer rows than folds
    rare = _write(tmp_path / "rare.csv", ["y", "a"],
                  [["no", i] for i in range(50)] + [["yes", i] for i in range(3)])
    assert _error(capsys, "train", rare, "--target", "y", "--cv", 4).endswith(
        "--cv 4: class 'yes' has only 3 rows, so some of the 4 folds (stratified by class) "
        "would hold none of it; expected at least 4 rows of every class: use --cv 3 or fewer "
        "folds")
    assert not list(tmp_path.glob("*.json"))            # --cv never writes a model file


def test_early_stopping_rounds_needs_no_eval_fraction_with_cv(binary, capsys):
    path, _, _ = binary
    code, out, err = _run(capsys, "train", path, "--target", "y", "--cv", 2,
                          "--n-estimators", 8, "--early-stopping-rounds", 20)
    assert code == 0, err
    assert "early stopping: did not stop (the mean logloss improved within the last 20 of the " \
           "8 iterations)" in out
