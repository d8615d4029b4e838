"""``boostlib.cv``: k-fold cross-validation with early stopping on the folds' mean."""
import numpy as np
import pytest

from boostlib import Dataset, cv, train
from optional_imports import importorskip


def _binary(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=n) > 0.3).astype(float)
    return X, y


P = {"n_estimators": 30, "learning_rate": 0.3, "random_state": 0, "eval_metric": "auc"}


def test_each_round_is_the_mean_of_separate_train_runs():
    X, y = _binary()
    data = Dataset(X, y)
    result = cv(P, data, nfold=4, return_models=True)
    curves = []
    for fit_rows, held in result.folds:
        model = train(P, Dataset(X[fit_rows], y[fit_rows]),
                      valid_sets=[Dataset(X[held], y[held])], valid_names=["valid"])
        curves.append(model.evals_result["valid"])
    for name in ("logloss", "auc"):
        values = np.array([c[name] for c in curves])
        np.testing.assert_allclose(result.history[f"{name}-mean"], values.mean(axis=0),
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(result.history[f"{name}-std"], values.std(axis=0),
                                   rtol=0, atol=1e-12)
    assert result.metric == "auc"
    assert result.best_iteration == int(np.argmax(result.history["auc-mean"]))
    # folds: disjoint held-out parts covering every row, classes in proportion
    held = np.concatenate([h for _, h in result.folds])
    assert np.array_equal(np.sort(held), np.arange(X.shape[0]))
    shares = [y[h].mean() for _, h in result.folds]
    assert max(shares) - min(shares) < 0.01
    # out-of-fold predictions: each row by its fold's model
    for (fit_rows, h), model in zip(result.folds, result.models):
        np.testing.assert_array_equal(result.oof_prediction[h], model.predict(X[h]))


def test_early_stopping_watches_the_mean_and_stops_every_fold_together():
    X, y = _binary(1500)
    params = {**P, "n_estimators": 300, "learning_rate": 0.8, "eval_metric": "logloss"}
    result = cv(params, Dataset(X, y), nfold=3, early_stopping_rounds=5,
                return_models=True)
    n_rounds = len(result.history["logloss-mean"])
    assert n_rounds == result.best_iteration + 6 < 300
    assert result.best_iteration == int(np.argmin(result.history["logloss-mean"]))
    assert all(m.n_iterations == result.best_iteration + 1 for m in result.models)
    assert result.best_score == min(result.history["logloss-mean"])


def test_query_groups_fold_whole_queries_and_splitters_are_accepted():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 4))
    y = rng.integers(0, 4, 600).astype(float)
    group = np.full(60, 10)
    data = Dataset(X, y, group=group)
    result = cv({"n_estimators": 5, "loss": "lambdarank", "eval_metric": "ndcg@5"}, data,
                nfold=3)
    query = np.repeat(np.arange(60), 10)
    for fit_rows, held in result.folds:
        assert not set(query[fit_rows]) & set(query[held])
    model_selection = importorskip("sklearn.model_selection")
    result = cv({"n_estimators": 5, "loss": "lambdarank"}, data,
                folds=model_selection.GroupKFold(n_splits=3))
    assert len(result.folds) == 3 and "lambdarank-mean" in result.history


def test_offsets_and_weights_follow_their_rows():
    X, y = _binary()
    w = np.random.default_rng(2).uniform(0.5, 2, y.size)
    offset = X[:, 0]
    result = cv({"n_estimators": 5}, Dataset(X, y, sample_weight=w, init_score=offset),
                nfold=3, return_models=True)
    fit_rows, held = result.folds[0]
    alone = train({"n_estimators": 5},
                  Dataset(X[fit_rows], y[fit_rows], sample_weight=w[fit_rows],
                          init_score=offset[fit_rows]),
                  valid_sets=[Dataset(X[held], y[held], sample_weight=w[held],
                                      init_score=offset[held])], valid_names=["valid"])
    np.testing.assert_array_equal(result.models[0].predict(X, raw=True),
                                  alone.predict(X, raw=True))
    np.testing.assert_array_equal(result.oof_prediction[held],
                                  alone.predict(X[held], init_score=offset[held]))


def test_bad_folds_and_failing_folds_raise_without_hanging():
    X, y = _binary(100)
    data = Dataset(X, y)
    with pytest.raises(ValueError, match=r"nfold=1 is invalid; expected an int in \[2, 100\]"):
        cv(P, data, nfold=1)
    with pytest.raises(ValueError, match=r"folds\[0\]: expected two non-empty, disjoint"):
        cv(P, data, folds=[(np.arange(50), np.arange(40, 100)), (np.arange(50), [])])
    calls = []

    def explode(info):
        calls.append(info.iteration)
        if len(calls) == 7:
            raise RuntimeError("boom")

    with pytest.raises(Exception, match="boom"):
        cv({**P, "n_estimators": 50}, data, nfold=3, callbacks=[explode])


def test_callbacks_see_the_history_and_can_stop():
    X, y = _binary(300)
    seen = []

    def stop_at_4(info):
        seen.append(len(info.evals_result["cv"]["auc-mean"]))
        return info.iteration == 3

    result = cv(P, Dataset(X, y), nfold=3, callbacks=[stop_at_4])
    assert seen == [1, 2, 3, 4] and len(result.history["auc-mean"]) == 4
    pd = importorskip("pandas")
    frame = result.to_frame()
    assert isinstance(frame, pd.DataFrame) and list(frame.columns)[:2] == ["logloss-mean",
                                                                           "logloss-std"]


def test_estimator_training_inputs_cross_validate_what_fit_trains():
    """``training_inputs`` gives cv the parameters and rows fit would train on: a fold's
    model is the estimator fitted on that fold's rows (three string classes, class weights,
    early stopping from the estimator)."""
    from boostlib import BoostClassifier
    rng = np.random.default_rng(5)
    X = rng.normal(size=(900, 4))
    labels = np.array(["ant", "bee", "cat"])[np.argmax(X[:, :3] + rng.gumbel(size=(900, 3)),
                                                       axis=1)]
    est = BoostClassifier(n_estimators=200, learning_rate=0.5, max_depth=3,
                          class_weight={"cat": 2.0}, early_stopping_rounds=4, random_state=0)
    params, data, classes = est.training_inputs(X, labels)
    assert list(classes) == ["ant", "bee", "cat"]
    assert params["loss"] == "multiclass" and params["early_stopping_rounds"] == 4
    np.testing.assert_array_equal(data.y, np.searchsorted(classes, labels))
    np.testing.assert_array_equal(data.sample_weight, np.where(labels == "cat", 2.0, 1.0))
    assert not hasattr(est, "_fitting_classes") and not hasattr(est, "model_")
    result = cv(params, data, nfold=3, return_models=True)
    best = result.best_iteration
    assert len(result.history["multiclass-mean"]) == best + 5 < 200
    fit_rows, held = result.folds[1]
    alone = BoostClassifier(**{**est.get_params(), "n_estimators": best + 1,
                               "early_stopping_rounds": None}).fit(X[fit_rows],
                                                                   labels[fit_rows])
    np.testing.assert_array_equal(result.oof_prediction[held], alone.predict_proba(X[held]))
    with pytest.raises(ValueError, match="class_weight"):
        BoostClassifier(class_weight="heavy").training_inputs(X, labels)
