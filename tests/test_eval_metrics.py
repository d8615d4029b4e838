"""Evaluation metrics in training: eval_metric, evals_result, early stopping on a metric,
verbose=N, and what callbacks see."""
import io

import numpy as np
import pytest

from optional_imports import importorskip

import boostlib
from boostlib import BoostClassifier, BoostRegressor, Dataset, train
from boostlib.api import Metric
from boostlib.callbacks import EarlyStopping, ProgressBar

sk = importorskip("sklearn.metrics")


def _binary(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = (X[:, 0] - X[:, 1] ** 2 + rng.normal(size=n) > -0.5).astype(int)
    return X[: n // 2], y[: n // 2], X[n // 2:], y[n // 2:]


def test_early_stopping_on_auc_stops_at_its_peak_and_matches_sklearn():
    X, y, Xv, yv = _binary()
    model = BoostClassifier(n_estimators=400, learning_rate=0.3, eval_metric="auc",
                            early_stopping_rounds=15, random_state=0)
    model.fit(X, y, eval_set=[(Xv, yv)])
    auc = model.evals_result_["valid_0"]["auc"]
    assert len(auc) < 400                                   # it stopped
    assert model.best_iteration_ == int(np.argmax(auc))     # at the peak (first one)
    assert len(auc) == model.best_iteration_ + 16           # 15 rounds of patience
    assert auc[model.best_iteration_] == pytest.approx(
        sk.roc_auc_score(yv, model.predict_proba(Xv)[:, 1]), abs=1e-12)


def test_every_metric_is_recorded_every_round_on_every_eval_set():
    X, y, Xv, yv = _binary()
    metrics = ["auc", "accuracy", "error", "logloss"]
    model = BoostClassifier(n_estimators=12, eval_metric=metrics, random_state=0)
    model.fit(X, y, eval_set=[(Xv, yv), (X[:300], y[:300])])
    assert list(model.evals_result_) == ["train", "valid_0", "valid_1"]
    assert list(model.evals_result_["train"]) == ["logloss"]    # the training rows: the loss
    for name in ("valid_0", "valid_1"):
        curves = model.evals_result_[name]
        assert list(curves) == metrics           # "logloss" is the metric, not a second curve
        assert all(len(v) == 12 for v in curves.values())
    p = model.predict_proba(Xv)[:, 1]
    last = {k: v[-1] for k, v in model.evals_result_["valid_0"].items()}
    assert last["accuracy"] == pytest.approx(sk.accuracy_score(yv, p > 0.5), abs=1e-12)
    assert last["error"] == pytest.approx(1 - last["accuracy"], abs=1e-12)
    assert last["logloss"] == pytest.approx(sk.log_loss(yv, p), rel=1e-9)
    assert model.best_iteration_ == int(np.argmax(model.evals_result_["valid_1"]["auc"]))


def test_multiclass_and_regression_metrics():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(900, 4))
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=900), [-0.5, 0.5])
    clf = BoostClassifier(n_estimators=10, eval_metric=["multi_logloss", "accuracy"],
                          random_state=0).fit(X[:600], y[:600], eval_set=[(X[600:], y[600:])])
    proba = clf.predict_proba(X[600:])
    assert clf.evals_result_["valid_0"]["multi_logloss"][-1] == pytest.approx(
        sk.log_loss(y[600:], proba), rel=1e-9)
    assert clf.evals_result_["valid_0"]["accuracy"][-1] == pytest.approx(
        sk.accuracy_score(y[600:], clf.predict(X[600:])), abs=1e-12)
    target = X[:, 1] * 2 + 5
    reg = BoostRegressor(n_estimators=10, eval_metric=["r2", "mae"], early_stopping_rounds=3,
                         random_state=0).fit(X[:600], target[:600],
                                             eval_set=[(X[600:], target[600:])])
    assert reg.evals_result_["valid_0"]["r2"][reg.best_iteration_] == pytest.approx(
        sk.r2_score(target[600:], reg.predict(X[600:])), abs=1e-12)


@pytest.mark.parametrize("metric,cls,match", [
    ("auc", BoostRegressor, "'auc' needs a classifier"),
    ("rmse", None, None), ("nope", BoostClassifier, "eval_metric: metric='nope' is not "
                                                    "registered"),
    ([], BoostClassifier, "eval_metric=\\[\\] is invalid"),
    (["auc", "auc"], BoostClassifier, "names a metric twice"),
    (3, BoostClassifier, "eval_metric=3 is invalid"),
    ("poisson", BoostClassifier, "'poisson' is a regression metric"),
])
def test_unusable_metrics_are_refused_before_training(metric, cls, match):
    X, y, Xv, yv = _binary(400)
    if match is None:       # rmse on a classifier's probabilities: a Brier-like score, allowed
        BoostClassifier(n_estimators=2, eval_metric=metric).fit(X, y, eval_set=[(Xv, yv)])
        return
    with pytest.raises((ValueError, TypeError), match=match):
        cls(n_estimators=2, eval_metric=metric).fit(X, y, eval_set=[(Xv, yv)])


class Brier(Metric):
    """A metric defined in user code, passed as an instance."""

    name = "brier"
    reads = "response"

    def evaluate(self, y_true, y_pred, sample_weight):
        return float(np.average((y_pred - y_true) ** 2, weights=sample_weight))


def test_a_metric_instance_is_recorded_and_saved_by_name(tmp_path):
    X, y, Xv, yv = _binary(600)
    model = BoostClassifier(n_estimators=5, eval_metric=[Brier(), "auc"]).fit(
        X, y, eval_set=[(Xv, yv)])
    assert model.evals_result_["valid_0"]["brier"][-1] == pytest.approx(
        np.mean((model.predict_proba(Xv)[:, 1] - yv) ** 2), rel=1e-12)
    model.save_model(tmp_path / "m.json")
    loaded = boostlib.load_model(tmp_path / "m.json")
    assert loaded.get_params()["eval_metric"] == ["brier", "auc"]
    assert loaded.evals_result_ == model.evals_result_


def test_verbose_n_prints_every_n_rounds_and_the_last(caplog):
    X, y, Xv, yv = _binary(600)
    with caplog.at_level("INFO", logger="boostlib"):     # (logging is configured in pytest)
        BoostClassifier(n_estimators=10, verbose=4, eval_metric="auc").fit(
            X, y, eval_set=[(Xv, yv)])
    lines = [r.getMessage() for r in caplog.records if "[boostlib]" in r.getMessage()]
    assert [ln.split()[2] for ln in lines] == ["1/10", "5/10", "9/10", "10/10"]
    assert "valid_0 auc=" in lines[0] and "train logloss=" in lines[0]
    BoostClassifier(n_estimators=3, verbose=True).fit(X, y)       # accepted (a bar or lines)
    with pytest.raises(ValueError, match="verbose=-1 is invalid"):
        BoostClassifier(n_estimators=3, verbose=-1).fit(X, y)


def test_callbacks_see_the_model_and_every_score():
    X, y, Xv, yv = _binary(800)
    seen = []

    def spy(info):
        seen.append((info.iteration, info.model.n_trees, info.model.predict(Xv, raw=True),
                     info.evaluation_results(), info.metric))

    model = BoostClassifier(n_estimators=6, eval_metric="auc")
    model.fit(X, y, eval_set=[(Xv, yv)], callbacks=[spy])
    assert [s[1] for s in seen] == list(range(1, 7))
    np.testing.assert_array_equal(seen[-1][2], model.decision_function(Xv))
    assert ("valid_0", "auc", model.evals_result_["valid_0"]["auc"][-1], True) in seen[-1][3]
    assert ("train", "logloss", model.evals_result_["train"]["logloss"][-1], False) \
        in seen[-1][3]
    assert all(s[4] == "auc" for s in seen)


def test_early_stopping_callback_on_a_chosen_metric_and_set():
    X, y, Xv, yv = _binary()
    stop = EarlyStopping(5, data_name="valid_0", metric_name="error")
    model = BoostClassifier(n_estimators=300, learning_rate=0.5, eval_metric=["auc", "error"],
                            random_state=0)
    model.fit(X, y, eval_set=[(Xv, yv)], callbacks=[stop])
    err = model.evals_result_["valid_0"]["error"]
    assert stop.best_iteration == int(np.argmin(err)) and stop.best_score == min(err)
    with pytest.raises(ValueError, match="metric_name='nope' is not recorded"):
        BoostClassifier(n_estimators=3).fit(X, y, eval_set=[(Xv, yv)],
                                            callbacks=[EarlyStopping(2, metric_name="nope")])


def test_train_takes_eval_metric_and_progress_goes_to_a_stream():
    X, y, Xv, yv = _binary(600)
    out = io.StringIO()
    model = train({"n_estimators": 4, "eval_metric": ["auc"]}, Dataset(X, y),
                  valid_sets=[Dataset(Xv, yv)], valid_names=["holdout"],
                  callbacks=[ProgressBar(stream=out, period=2)])
    assert list(model.evals_result["holdout"]) == ["logloss", "auc"]
    assert "holdout auc=" in out.getvalue()
