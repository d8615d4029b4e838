"""End-to-end behaviour of BoostClassifier / BoostRegressor."""
import numpy as np
import pytest

from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRegressor
from boostlib.engine.metrics import logloss

POLICIES = ["symmetric", "depthwise", "lossguide"]


def _sklearn_checks():
    sk = importorskip("sklearn.utils.estimator_checks")
    ests = [Est(n_estimators=10, random_state=0, n_jobs=1, grow_policy=pol)
            for Est in (BoostClassifier, BoostRegressor) for pol in POLICIES]
    return sk.parametrize_with_checks(ests)


try:
    _parametrize = _sklearn_checks()
except pytest.skip.Exception:  # scikit-learn absent: one skipped placeholder
    _parametrize = pytest.mark.skip(reason="scikit-learn is not installed")

    def test_sklearn_compatible_estimator():
        pass
else:
    @_parametrize
    def test_sklearn_compatible_estimator(estimator, check):
        check(estimator)


@pytest.mark.parametrize("policy", POLICIES)
def test_classifier_quality_close_to_hgb(higgs, policy):
    """At equal settings, boostlib's test logloss is within 2% of scikit-learn's HGB."""
    ensemble = importorskip("sklearn.ensemble")
    X, y, Xt, yt = higgs
    ours = BoostClassifier(n_estimators=150, learning_rate=0.1, max_depth=4,
                           grow_policy=policy, l2_regularization=1.0, min_samples_leaf=20,
                           random_state=0).fit(X, y)
    hgb = ensemble.HistGradientBoostingClassifier(
        max_iter=150, learning_rate=0.1, max_depth=4, max_leaf_nodes=16,
        l2_regularization=1.0, min_samples_leaf=20, early_stopping=False,
        random_state=0).fit(X, y)
    ll_ours = logloss(yt, ours.predict_proba(Xt)[:, 1])
    ll_hgb = logloss(yt, hgb.predict_proba(Xt)[:, 1])
    assert ll_ours < 0.56   # the constant model is at 0.69
    assert ll_ours <= ll_hgb * 1.02, (ll_ours, ll_hgb)


@pytest.mark.parametrize("policy", POLICIES)
def test_regressor_quality_close_to_hgb(policy):
    ensemble = importorskip("sklearn.ensemble")
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(3000, 5))
    f = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3]
    y = f + rng.normal(scale=0.3, size=3000)
    Xt = rng.uniform(-2, 2, size=(2000, 5))
    ft = np.sin(2 * Xt[:, 0]) + Xt[:, 1] * Xt[:, 2] + 0.5 * Xt[:, 3]
    ours = BoostRegressor(n_estimators=200, max_depth=4, grow_policy=policy,
                          min_samples_leaf=20, random_state=0).fit(X, y)
    hgb = ensemble.HistGradientBoostingRegressor(
        max_iter=200, max_depth=4, max_leaf_nodes=16, l2_regularization=1.0,
        min_samples_leaf=20, early_stopping=False).fit(X, y)
    mse_ours = np.mean((ours.predict(Xt) - ft) ** 2)
    mse_hgb = np.mean((hgb.predict(Xt) - ft) ** 2)
    assert mse_ours < 0.1 * np.var(ft)
    assert mse_ours <= mse_hgb * 1.15, (mse_ours, mse_hgb)


def _model_arrays(model):
    ens = model.ensemble_
    out = [np.array([ens.bias]), np.asarray(ens.coef)]
    for t in ens.trees:
        out += [t.feature, t.bin, t.nan_right, t.value]
    return out


@pytest.mark.parametrize("policy", POLICIES)
def test_same_seed_bit_identical_whatever_n_jobs(binary_data, policy):
    X, y = binary_data
    params = dict(n_estimators=20, grow_policy=policy, random_strength=1.0, subsample=0.7,
                  random_state=7)
    a = BoostClassifier(n_jobs=1, **params).fit(X, y)
    b = BoostClassifier(n_jobs=2, **params).fit(X, y)
    for u, v in zip(_model_arrays(a), _model_arrays(b)):
        assert u.dtype == v.dtype and np.array_equal(u, v)
    assert np.array_equal(a.decision_function(X), b.decision_function(X))
    c = BoostClassifier(n_jobs=2, **{**params, "random_state": 8}).fit(X, y)
    assert not np.array_equal(a.decision_function(X), c.decision_function(X))


def test_eval_set_records_loss_and_matches_predictions(binary_data):
    X, y = binary_data
    Xv, yv = X[:200], y[:200]
    m = BoostClassifier(n_estimators=15, random_state=0).fit(X[200:], y[200:],
                                                            eval_set=[(Xv, yv)])
    curve = m.evals_result_["valid_0"]["logloss"]
    assert len(curve) == 15
    p = m.predict_proba(Xv)[:, 1]
    assert curve[-1] == pytest.approx(logloss(yv, p), rel=1e-9)
    assert curve[-1] < curve[0]


@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
def test_training_loss_is_recorded_every_iteration(binary_data, policy):
    """``evals_result_["train"]`` is the weighted mean loss of the model after each iteration,
    on the training rows (sampling on, so the recorded value is not a by-product of fitting)."""
    X, y = binary_data
    w = np.random.default_rng(1).uniform(0.2, 2.0, size=y.size)
    kw = dict(grow_policy=policy, subsample=0.6, random_state=2, max_depth=3)
    m = BoostClassifier(n_estimators=6, **kw).fit(X, y, sample_weight=w)
    curve = m.evals_result_["train"]["logloss"]
    assert len(curve) == 6 and list(m.evals_result_) == ["train"]
    for k in (1, 6):
        mk = BoostClassifier(n_estimators=k, **kw).fit(X, y, sample_weight=w)
        p = mk.predict_proba(X)[:, 1]
        expected = np.average(-(y * np.log(p) + (1 - y) * np.log1p(-p)), weights=w)
        assert curve[k - 1] == pytest.approx(expected, rel=1e-9)
    t = np.nan_to_num(X[:, 1])
    r = BoostRegressor(n_estimators=4, max_depth=2).fit(X, t)
    mse = r.evals_result_["train"]["mse"]
    assert mse[-1] == pytest.approx(0.5 * np.mean((r.predict(X) - t) ** 2), rel=1e-9)
    assert mse[-1] < mse[0]


@pytest.mark.parametrize("update", ["sgb", "sglb", "agbm"])
def test_training_loss_is_the_same_recorded_lazily_or_at_once(binary_data, update):
    """Without callbacks the training loss comes with the next iteration's derivatives (or
    from a copy of the scores, for AGBM's derivatives at another sequence); with a callback
    it is computed at once. Both give the same numbers, bit for bit."""
    X, y = binary_data
    kw = dict(n_estimators=6, update=update, random_state=0, max_depth=3)
    lazy = BoostClassifier(**kw).fit(X, y).evals_result_["train"]["logloss"]
    now = BoostClassifier(**kw).fit(X, y, callbacks=[lambda info: None])
    assert lazy == now.evals_result_["train"]["logloss"]
    assert not np.any(np.isnan(lazy))
    p = now.predict_proba(X)[:, 1]
    assert lazy[-1] == pytest.approx(np.mean(-(y * np.log(p) + (1 - y) * np.log1p(-p))),
                                     rel=1e-9)


def test_early_stopping_truncates_to_best_iteration(binary_data):
    X, y = binary_data
    Xv, yv = X[:200], y[:200]
    kw = dict(learning_rate=0.5, max_depth=6, random_state=0)
    m = BoostClassifier(n_estimators=300, early_stopping_rounds=5, **kw).fit(
        X[200:], y[200:], eval_set=[(Xv, yv)])
    curve = m.evals_result_["valid_0"]["logloss"]
    assert len(curve) < 300                       # it stopped
    assert m.best_iteration_ == int(np.argmin(curve))
    assert len(curve) == m.best_iteration_ + 1 + 5
    assert m.n_trees_ == m.best_iteration_ + 1
    short = BoostClassifier(n_estimators=m.best_iteration_ + 1, **kw).fit(X[200:], y[200:])
    assert np.array_equal(short.decision_function(Xv), m.decision_function(Xv))


def test_feature_importances_rank_informative_feature_first():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 5))
    y = 3 * X[:, 2] + 0.1 * rng.normal(size=2000)
    m = BoostRegressor(n_estimators=30, random_state=0).fit(X, y)
    imp = m.feature_importances_
    assert imp.shape == (5,) and imp.sum() == pytest.approx(1.0)
    assert np.argmax(imp) == 2 and imp[2] > 0.9


def test_string_labels_and_classes(binary_data):
    X, y = binary_data
    labels = np.where(y == 1, "yes", "no")
    m = BoostClassifier(n_estimators=10, random_state=0).fit(X, labels)
    assert list(m.classes_) == ["no", "yes"]
    assert set(m.predict(X)) <= {"no", "yes"}
    proba = m.predict_proba(X)
    assert proba.shape == (len(X), 2) and np.allclose(proba.sum(1), 1)
    assert np.array_equal(m.predict(X) == "yes", proba[:, 1] > 0.5)


def test_nan_handling_learns_missing_direction():
    # y is 1 exactly when x is missing: only the missing direction can separate it.
    rng = np.random.default_rng(3)
    x = rng.normal(size=1000)
    missing = rng.random(1000) < 0.3
    y = missing.astype(int)
    x[missing] = np.nan
    for policy in POLICIES:
        m = BoostClassifier(n_estimators=20, max_depth=1, grow_policy=policy).fit(x[:, None], y)
        assert np.mean(m.predict(x[:, None]) == y) == 1.0
        assert m.predict(np.array([[np.nan]]))[0] == 1


def test_sample_weight_matters(binary_data):
    X, y = binary_data
    w = np.where(y == 1, 10.0, 1.0)
    plain = BoostClassifier(n_estimators=20, random_state=0).fit(X, y)
    weighted = BoostClassifier(n_estimators=20, random_state=0).fit(X, y, sample_weight=w)
    assert weighted.predict_proba(X)[:, 1].mean() > plain.predict_proba(X)[:, 1].mean() + 0.1


@pytest.mark.parametrize("leaf_estimation", ["newton", "gradient"])
def test_sla_loss_trains(binary_data, leaf_estimation):
    X, y = binary_data
    m = BoostClassifier(loss="sla", loss_params={"scale": 0.1}, n_estimators=50,
                        leaf_estimation=leaf_estimation, random_state=0).fit(X, y)
    acc = np.mean(m.predict(X) == y)
    assert acc > 0.75 and acc > max(y.mean(), 1 - y.mean()) + 0.1


def test_pandas_feature_names(binary_data):
    pd = importorskip("pandas")
    X, y = binary_data
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    m = BoostClassifier(n_estimators=5).fit(df, y)
    assert list(m.feature_names_in_) == list(df.columns)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        from_array = m.predict(X)
    assert np.array_equal(m.predict(df), from_array)
    with pytest.raises(ValueError, match="feature names should match"):
        m.predict(df[df.columns[::-1]])


def test_loss_and_update_instances_accepted(binary_data):
    from boostlib.builtin.losses import LogLoss
    from boostlib.builtin.updates import SGB

    X, y = binary_data
    a = BoostClassifier(n_estimators=5, random_state=0).fit(X, y)
    b = BoostClassifier(n_estimators=5, loss=LogLoss(), update=SGB(), random_state=0).fit(X, y)
    assert np.array_equal(a.decision_function(X), b.decision_function(X))


def test_single_row_and_constant_feature():
    X = np.array([[1.0, 5.0]])
    m = BoostRegressor(n_estimators=3).fit(X, [2.0])
    assert m.predict(X) == pytest.approx([2.0])
    Xc = np.ones((50, 3))
    yc = np.arange(50, dtype=float)
    mc = BoostRegressor(n_estimators=3).fit(Xc, yc)
    assert np.allclose(mc.predict(Xc), yc.mean())
    assert all(t.n_leaves() == 1 for t in mc.ensemble_.trees)


@pytest.mark.parametrize("policy", POLICIES)
def test_prediction_bins_on_used_borders_only_same_scores(policy):
    """predict() bins on the borders splits use (compact tables): same scores as binning on
    every border, including the "non-missing left, missing right" split of a feature that is
    constant apart from NaN."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2000, 4))
    X[:, 3] = np.where(rng.random(2000) < 0.3, np.nan, 1.0)
    y = (X[:, 0] + 2 * np.isnan(X[:, 3]) + 0.3 * rng.normal(size=2000) > 1).astype(int)
    m = BoostClassifier(n_estimators=30, grow_policy=policy, random_state=0).fit(X, y)
    ens = m.ensemble_
    assert any(3 in t.feature for t in ens.trees)
    Xt = rng.normal(size=(500, 4))
    Xt[:, 3] = np.where(rng.random(500) < 0.5, np.nan, 1.0)
    Xt[::7, 1] = np.nan
    full = ens.predict_binned(ens.bin_mapper.transform(Xt))
    assert np.array_equal(m.decision_function(Xt), full)
