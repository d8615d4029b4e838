"""Raw-score offsets (``init_score``): training starts from them, the model learns the rest,
and predictions add them back."""
import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRanker, BoostRegressor, Dataset, train
from optional_imports import importorskip


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return rng, X


def _poisson(seed=0, n=6000):
    rng, X = _data(n, seed)
    exposure = rng.uniform(0.2, 5.0, n)
    y = rng.poisson(np.exp(0.4 * X[:, 0] - 0.3 * np.abs(X[:, 1]) - 0.5) * exposure)
    return X, y.astype(float), np.log(exposure)


def _deviance(y, mu):
    ratio = np.where(y > 0, y / mu, 1.0)
    return 2 * np.mean(np.where(y > 0, y * np.log(ratio), 0.0) - (y - mu))


def test_offsets_replace_the_start_and_are_added_back_at_prediction():
    X, y, log_exposure = _poisson()
    est = BoostRegressor(loss="poisson", n_estimators=60, random_state=0)
    est.fit(X, y, init_score=log_exposure)
    assert np.array_equal(est.model_.ensemble.bias_array, [0.0])
    rate = est.predict(X)                                   # per unit of exposure
    counts = est.predict(X, init_score=log_exposure)
    np.testing.assert_allclose(counts, rate * np.exp(log_exposure), rtol=1e-12)
    # the offset model fits the rate: far better than one that ignores the exposure
    plain = BoostRegressor(loss="poisson", n_estimators=60, random_state=0).fit(X, y)
    assert _deviance(y, counts) < 0.8 * _deviance(y, plain.predict(X))


def test_an_offset_of_another_models_raw_scores_continues_it():
    rng, X = _data()
    y = X[:, 0] * 2 + np.sin(X[:, 1]) + rng.normal(size=X.shape[0]) * 0.1
    params = {"n_estimators": 15, "random_state": 0, "grow_policy": "depthwise"}
    first = train(params, Dataset(X, y))
    raw = first.predict(X, raw=True)
    by_offset = train(params, Dataset(X, y, init_score=raw))
    by_model = train(params, Dataset(X, y), init_model=first)
    np.testing.assert_allclose(by_offset.predict(X, init_score=raw), by_model.predict(X),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("update", ["sgb", "sglb", "agbm"])
def test_rules_that_rescale_or_combine_the_model_leave_offsets_out_of_it(update):
    """SGLB shrinks the model and AGBM combines models every iteration: the offsets are
    part of the scores but not of the model, so they must stay as they are; the recorded
    validation loss is the loss of the predictions with the offsets added back."""
    rng, X = _data(1500)
    offset = rng.normal(size=X.shape[0]) * 3
    y = X[:, 0] + offset
    est = BoostRegressor(n_estimators=25, update=update, learning_rate=0.3, random_state=0)
    est.fit(X, y, init_score=offset, eval_set=[(X, y)], eval_init_score=[offset])
    pred = est.predict(X, init_score=offset)
    recorded = est.evals_result_["valid_0"]["mse"][-1]
    np.testing.assert_allclose(recorded, 0.5 * np.mean((pred - y) ** 2), rtol=1e-9)
    assert np.mean((pred - y) ** 2) < 0.1 * np.var(y)


def test_multiclass_takes_one_offset_per_class():
    rng, X = _data(900)
    y = rng.integers(0, 3, X.shape[0])
    offset = rng.normal(size=(X.shape[0], 3))
    clf = BoostClassifier(n_estimators=5, random_state=0)
    clf.fit(X, y, init_score=offset, eval_set=[(X, y)], eval_init_score=[offset])
    proba = clf.predict_proba(X, init_score=offset)
    raw = clf.decision_function(X) + offset
    expected = np.exp(raw - raw.max(axis=1, keepdims=True))
    np.testing.assert_allclose(proba, expected / expected.sum(axis=1, keepdims=True),
                               rtol=1e-12)
    assert clf.evals_result_["valid_0"]["multiclass"] == clf.evals_result_["train"]["multiclass"]
    with pytest.raises(ValueError, match=r"init_score has 1 column\(s\); the loss has 3 "):
        clf.fit(X, y, init_score=offset[:, 0])


def test_a_ranker_takes_offsets():
    rng, X = _data(600)
    y = rng.integers(0, 4, X.shape[0])
    group = np.full(60, 10)
    offset = X[:, 0]
    rk = BoostRanker(n_estimators=5, random_state=0).fit(X, y, group=group,
                                                         init_score=offset)
    np.testing.assert_allclose(rk.predict(X, init_score=offset), rk.predict(X) + offset)


def test_staged_predictions_end_at_predict_with_offsets():
    X, y, log_exposure = _poisson(n=800)
    model = train({"loss": "poisson", "n_estimators": 6},
                  Dataset(X, y, init_score=log_exposure))
    *_, last = model.staged_predict(X, init_score=log_exposure)
    np.testing.assert_array_equal(last, model.predict(X, init_score=log_exposure))


@pytest.mark.parametrize("value, match", [
    (lambda n: np.zeros(n - 1), r"init_score has shape \(\d+,\); expected \(\d+,\) or"),
    (lambda n: np.where(np.arange(n) == 7, np.nan, 0.0), r"init_score\[7\] is \[nan\]; "
                                                          "expected finite"),
    (lambda n: np.zeros((n, 2, 2)), r"init_score has shape"),
    (lambda n: ["a"] * n, r"init_score holds text"),
])
def test_bad_offsets_are_named(value, match):
    rng, X = _data(50)
    with pytest.raises(ValueError, match=match):
        BoostRegressor(n_estimators=2).fit(X, X[:, 0], init_score=value(50))


def test_eval_sets_need_offsets_when_training_has_them():
    rng, X = _data(100)
    est = BoostRegressor(n_estimators=2)
    with pytest.raises(ValueError, match="eval_init_score is not"):
        est.fit(X, X[:, 0], init_score=X[:, 1], eval_set=[(X, X[:, 0])])
    with pytest.raises(ValueError, match=r"eval_init_score\[0\] has shape"):
        est.fit(X, X[:, 0], init_score=X[:, 1], eval_set=[(X, X[:, 0])],
                eval_init_score=[X[:10, 1]])
    with pytest.raises(ValueError, match="eval_init_score is given without eval_set"):
        est.fit(X, X[:, 0], eval_init_score=[X[:, 1]])


def test_shap_values_explain_the_model_without_the_offsets():
    X, y, log_exposure = _poisson(n=800)
    est = BoostRegressor(loss="poisson", n_estimators=8).fit(X, y, init_score=log_exposure)
    contrib = est.predict(X, pred_contrib=True)
    np.testing.assert_allclose(contrib.sum(axis=1) + log_exposure,
                               np.log(est.predict(X, init_score=log_exposure)), atol=1e-9)
    with pytest.raises(ValueError, match="init_score does not apply to pred_contrib"):
        est.predict(X, pred_contrib=True, init_score=log_exposure)


def test_poisson_exposure_matches_lightgbm_init_score():
    """Issue 56: at equal settings, boostlib's and LightGBM's Poisson models with
    ``init_score=log(exposure)`` reach the same test deviance (within 1%)."""
    lgb = importorskip("lightgbm")
    X, y, log_exposure = _poisson(seed=3, n=20000)
    tr, te = slice(0, 15000), slice(15000, None)
    settings = dict(n_estimators=200, learning_rate=0.05, random_state=0)
    ours = BoostRegressor(loss="poisson", grow_policy="lossguide", max_leaves=31,
                          max_depth=30, min_samples_leaf=20, l2_regularization=0.0,
                          **settings).fit(X[tr], y[tr], init_score=log_exposure[tr])
    theirs = lgb.LGBMRegressor(objective="poisson", num_leaves=31, min_child_samples=20,
                               verbose=-1, **settings)
    theirs.fit(X[tr], y[tr], init_score=log_exposure[tr])
    mine = _deviance(y[te], ours.predict(X[te], init_score=log_exposure[te]))
    other = _deviance(y[te], np.exp(theirs.predict(X[te], raw_score=True) + log_exposure[te]))
    assert mine <= 1.01 * other, (mine, other)
