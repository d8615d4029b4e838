"""Plain functions as losses (``loss=fn``, custom objectives) and metrics
(``eval_metric=fn``), wrapped into the plugin interfaces."""
import warnings

import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRanker, BoostRegressor, Dataset, load_model, train
from boostlib import registry
from boostlib.plugin.registry import PluginError


def _binary(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return X, (X[:, 0] + X[:, 1] ** 2 + rng.normal(size=n) > 1).astype(int)


def _builtin_as_function(name, **params):
    """A function computing exactly the built-in loss's derivatives and start."""
    loss = registry.create("loss", name, params)

    def objective(y_true, raw):
        g, h = np.empty_like(raw), np.empty_like(raw)
        loss.gradient_hessian(y_true, raw, g, h)
        return g, h

    objective.init_raw = loss.init_raw
    return objective


@pytest.mark.parametrize("policy", ["symmetric", "depthwise", "lossguide"])
def test_a_function_of_the_builtin_derivatives_gives_the_same_model(policy, tmp_path):
    X, y = _binary()
    params = dict(n_estimators=15, grow_policy=policy, random_state=0, subsample=0.8)
    ref = BoostClassifier(**params).fit(X, y)
    est = BoostClassifier(loss=_builtin_as_function("logloss"), **params).fit(X, y)
    np.testing.assert_array_equal(est.decision_function(X), ref.decision_function(X))
    np.testing.assert_array_equal(est.predict_proba(X), ref.predict_proba(X))
    reg = train({"n_estimators": 10, "loss": _builtin_as_function("mse")},
                Dataset(X, X[:, 0]))
    np.testing.assert_array_equal(
        reg.predict(X), train({"n_estimators": 10, "loss": "mse"}, Dataset(X, X[:, 0]))
        .predict(X))


def test_a_numpy_logloss_is_logloss_up_to_rounding():
    X, y = _binary()

    def logloss(y_true, raw):
        p = 1.0 / (1.0 + np.exp(-raw))
        return p - y_true, p * (1.0 - p)

    logloss.init_raw = registry.create("loss", "logloss").init_raw
    est = BoostClassifier(n_estimators=20, loss=logloss, random_state=0).fit(X, y)
    ref = BoostClassifier(n_estimators=20, random_state=0).fit(X, y)
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), atol=1e-12)


def test_multiclass_functions_take_and_give_one_column_per_class():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(900, 4))
    y = np.digitize(X[:, 0], [-0.5, 0.5])

    def softmax(y_true, raw):
        assert raw.shape == (900, 3)
        e = np.exp(raw - raw.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        return p - np.eye(3)[y_true.astype(int)], p * (1 - p)

    est = BoostClassifier(n_estimators=10, loss=softmax).fit(X, y)
    proba = est.predict_proba(X)
    assert proba.shape == (900, 3) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.mean(est.predict(X) == y) > 0.9


def test_a_metric_function_drives_early_stopping_as_the_builtin_does():
    X, y = _binary(3000)
    tr, va = slice(0, 2000), slice(2000, None)

    def error_rate(y_true, y_pred, sample_weight):
        return float(np.average((y_pred > 0.5) != y_true, weights=sample_weight))

    def auc(y_true, y_pred, sample_weight):
        return registry.create("metric", "auc")(y_true, y_pred, sample_weight)

    auc.higher_is_better = True
    runs = {}
    for metric in ("auc", auc):
        est = BoostClassifier(n_estimators=200, learning_rate=0.5, eval_metric=metric,
                              early_stopping_rounds=5, random_state=0)
        est.fit(X[tr], y[tr], eval_set=[(X[va], y[va])])
        runs[str(metric)] = est
    a, b = runs.values()
    assert a.best_iteration_ == b.best_iteration_ < 199
    assert a.evals_result_["valid_0"]["auc"] == b.evals_result_["valid_0"]["function:auc"]
    est = BoostClassifier(n_estimators=5, eval_metric=[error_rate, "logloss"])
    est.fit(X[tr], y[tr], eval_set=[(X[va], y[va])])
    assert set(est.evals_result_["valid_0"]) == {"function:error_rate", "logloss"}


def test_losses_without_values_record_none_and_need_a_metric_to_stop():
    X, y = _binary()

    def objective(y_true, raw):
        p = 1.0 / (1.0 + np.exp(-raw))
        return p - y_true, p * (1.0 - p)

    est = BoostClassifier(n_estimators=3, loss=objective).fit(X, y, eval_set=[(X, y)])
    assert est.evals_result_ == {"train": {}, "valid_0": {}}
    with pytest.raises(ValueError, match="early_stopping_rounds=3 has no score to watch"):
        BoostClassifier(n_estimators=3, loss=objective, early_stopping_rounds=3).fit(
            X, y, eval_set=[(X, y)])
    objective.loss = lambda y_true, raw: np.logaddexp(0, raw) - y_true * raw
    est = BoostClassifier(n_estimators=3, loss=objective).fit(X, y, eval_set=[(X, y)])
    assert len(est.evals_result_["valid_0"]["function:objective"]) == 3


def test_model_files_of_function_losses_predict_and_say_so(tmp_path):
    X, y = _binary()
    est = BoostClassifier(n_estimators=5, loss=_builtin_as_function("logloss")).fit(X, y)
    path = tmp_path / "m.json"
    est.save_model(path)
    with pytest.warns(UserWarning, match="loss 'function:objective', which is not installed"):
        loaded = load_model(path)
    np.testing.assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model(path).model_
    assert model.loss.name == "function:objective"
    with pytest.raises(TypeError, match="refitting needs the function"):
        train({"n_estimators": 1, "loss": model.loss}, Dataset(X, y.astype(float)))


def test_misbehaving_functions_are_named():
    X, y = _binary(200)
    with pytest.raises(ValueError, match=r"loss 'function:short' raised ValueError in "
                                         r"gradient_hessian.*shape \(5,\); expected \(200,\)"):
        def short(y_true, raw):
            return raw[:5], raw[:5]
        BoostRegressor(n_estimators=2, loss=short).fit(X, X[:, 0])
    with pytest.raises(PluginError, match="loss 'function:nan' returned a gradient with 200 "
                                          "non-finite"):
        def nan(y_true, raw):
            return raw * np.nan, np.ones_like(raw)
        BoostRegressor(n_estimators=2, loss=nan).fit(X, X[:, 0])
    with pytest.raises(PluginError, match="metric 'function:nan_metric' is NaN"):
        def nan_metric(y_true, y_pred, sample_weight):
            return float("nan")
        BoostRegressor(n_estimators=2, eval_metric=nan_metric).fit(
            X, X[:, 0], eval_set=[(X, X[:, 0])])
    with pytest.raises(PluginError, match="loss_params must be empty when loss is a function"):
        BoostRegressor(n_estimators=2, loss=short, loss_params={"a": 1}).fit(X, X[:, 0])


def test_a_ranker_takes_a_pointwise_function():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    y = rng.integers(0, 3, 400).astype(float)
    rk = BoostRanker(n_estimators=5, loss=_builtin_as_function("mse"))
    rk.fit(X, y, group=np.full(40, 10))
    assert rk.predict(X).shape == (400,)
