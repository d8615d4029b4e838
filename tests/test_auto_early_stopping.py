"""Early stopping without an eval set: the estimators hold out ``validation_fraction`` of
the rows (per class, whole queries for ranking), as scikit-learn's HGB does."""
import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRanker, BoostRegressor
from boostlib.engine.holdout import holdout
from optional_imports import importorskip


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] + rng.normal(size=n) * 1.5 > 0).astype(int)
    return X, y


def test_holdout_is_stratified_and_keeps_whole_queries():
    rng = np.random.default_rng(0)
    classes = np.r_[np.zeros(900, int), np.ones(90, int), np.full(10, 2)]
    fit, held = holdout(1000, 0.1, rng, classes=classes)
    assert np.array_equal(np.sort(np.r_[fit, held]), np.arange(1000))
    assert [int(np.sum(classes[held] == c)) for c in range(3)] == [90, 9, 1]
    group = np.array([3, 5, 2, 4, 6])
    fit, held = holdout(20, 0.4, rng, group=group)
    query = np.repeat(np.arange(5), group)
    assert not set(query[fit]) & set(query[held]) and len(set(query[held])) == 2
    with pytest.raises(ValueError, match="holds out no row"):
        holdout(3, 0.1, rng)


def test_early_stopping_holds_out_rows_when_there_is_no_eval_set():
    X, y = _data()
    est = BoostClassifier(n_estimators=500, learning_rate=0.5, early_stopping=True,
                          random_state=0).fit(X, y)
    assert set(est.evals_result_) == {"train", "valid_0"}
    assert len(est.evals_result_["valid_0"]["logloss"]) < 500
    assert est.best_iteration_ < 490 and est.model_.n_iterations == est.best_iteration_ + 1
    again = BoostClassifier(n_estimators=500, learning_rate=0.5, early_stopping=True,
                            random_state=0).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X), est.predict_proba(X))
    # early_stopping_rounds alone, and n_iter_no_change, do the same
    for key in ("early_stopping_rounds", "n_iter_no_change"):
        other = BoostClassifier(n_estimators=500, learning_rate=0.5, random_state=0,
                                **{key: 10}).fit(X, y)
        np.testing.assert_array_equal(other.predict_proba(X), est.predict_proba(X))


def test_auto_turns_on_from_ten_thousand_rows():
    X, y = _data(12000)
    big = BoostRegressor(n_estimators=300, learning_rate=0.5, early_stopping="auto",
                         random_state=0).fit(X, y.astype(float))
    assert "valid_0" in big.evals_result_
    small = BoostRegressor(n_estimators=5, early_stopping="auto").fit(X[:500], y[:500])
    assert set(small.evals_result_) == {"train"}


def test_default_rounds_follow_early_stopping():
    """n_estimators=None: 100 iterations below 10,000 rows; from there up to 1,000 with
    early stopping after 50 without improvement (the best iteration kept)."""
    X, y = _data(12000)
    big = BoostClassifier(random_state=0).fit(X, y)
    curve = big.evals_result_["valid_0"]["logloss"]
    assert big.n_estimators is None and len(curve) < 1000
    assert len(curve) - 1 - big.best_iteration_ == 50            # the patience of None
    assert big.model_.n_iterations == big.best_iteration_ + 1
    set_count = BoostClassifier(n_estimators=len(curve), early_stopping=True,
                                n_iter_no_change=50, random_state=0).fit(X, y)
    np.testing.assert_array_equal(set_count.predict_proba(X), big.predict_proba(X))
    small = BoostClassifier(random_state=0).fit(X[:3000], y[:3000])
    assert small.model_.n_iterations == 100 and set(small.evals_result_) == {"train"}
    ten = BoostClassifier(n_estimators=300, early_stopping=True, learning_rate=0.5,
                          random_state=0).fit(X[:3000], y[:3000])
    curve = ten.evals_result_["valid_0"]["logloss"]
    assert len(curve) - 1 - ten.best_iteration_ == 10            # a count given: 10


def test_a_warm_start_needs_a_number_of_iterations():
    X, y = _data()
    est = BoostClassifier(n_estimators=5, warm_start=True).fit(X, y)
    est.set_params(n_estimators=None)
    with pytest.raises(ValueError, match="n_estimators=None: a warm_start fit needs"):
        est.fit(X, y)


def test_an_eval_set_is_used_as_given():
    X, y = _data()
    est = BoostClassifier(n_estimators=50, early_stopping=True, random_state=0)
    est.fit(X[:2000], y[:2000], eval_set=[(X[2000:], y[2000:])])
    assert len(est.evals_result_["train"]["logloss"]) == \
        len(est.evals_result_["valid_0"]["logloss"])
    ref = BoostClassifier(n_estimators=50, early_stopping_rounds=10, random_state=0)
    ref.fit(X[:2000], y[:2000], eval_set=[(X[2000:], y[2000:])])
    np.testing.assert_array_equal(est.predict_proba(X), ref.predict_proba(X))


def test_ranking_holds_out_whole_queries():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 4))
    y = rng.integers(0, 4, 2000)
    rk = BoostRanker(n_estimators=50, early_stopping=True, random_state=0)
    rk.fit(X, y, group=np.full(100, 20))
    assert "valid_0" in rk.evals_result_


def test_conflicting_names_and_bad_values_are_refused():
    X, y = _data(300)
    with pytest.raises(ValueError, match="early_stopping_rounds=5 and n_iter_no_change=6"):
        BoostClassifier(early_stopping_rounds=5, n_iter_no_change=6).fit(X, y)
    with pytest.raises(ValueError, match="early_stopping='yes' is invalid"):
        BoostClassifier(early_stopping="yes").fit(X, y)
    with pytest.raises(ValueError, match="validation_fraction=0 is invalid"):
        BoostClassifier(validation_fraction=0).fit(X, y)


def test_early_stopping_works_inside_grid_search():
    model_selection = importorskip("sklearn.model_selection")
    X, y = _data(2000)
    search = model_selection.GridSearchCV(
        BoostClassifier(n_estimators=400, learning_rate=0.5, early_stopping=True,
                        random_state=0),
        {"max_depth": [2, 4]}, cv=3, scoring="neg_log_loss")
    search.fit(X, y)
    best = search.best_estimator_
    assert best.model_.n_iterations < 400
