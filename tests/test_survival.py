"""Survival losses (``cox``, ``aft``) and metrics (``cindex``, ``aft_nloglik``): derivatives
against finite differences of the likelihoods in tests/reference/survival.py, the
concordance index against its pairwise definition, label checks, and the estimators, model
files, SHAP values and staged predictions with these losses."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import boostlib
from boostlib import BoostRegressor, Dataset, train
from boostlib.booster.training import distributed_start
from boostlib.testing import check_loss
from boostlib.builtin.survival import (AFTLoss, AFTNLogLikMetric, CIndexMetric, CoxLoss,
                                       concordance_index)
from reference import survival as ref


def _cox_data(n=300, seed=0, censor=0.3, p=4):
    """Times from a Cox model with log hazard ``x0 - x1`` (exponential baseline), a share
    ``censor`` of rows censored at a uniform fraction of their time."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    risk = X[:, 0] - X[:, 1]
    t = rng.exponential(1.0, n) / np.exp(risk)
    censored = rng.random(n) < censor
    t = np.where(censored, t * rng.uniform(0.1, 1.0, n), t)
    y = np.where(censored, -t, t)
    return X, y, risk


def _aft_data(n=300, seed=0, p=4):
    """Log-normal AFT times ``log T = 1 + x0 - 0.5 x1 + 0.5 eps``, with rows of every
    censoring kind."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    t = np.exp(1.0 + X[:, 0] - 0.5 * X[:, 1] + 0.5 * rng.normal(size=n))
    lower, upper = t.copy(), t.copy()
    kind = rng.integers(0, 4, n)
    upper[kind == 1] = np.inf                       # right-censored below the time
    lower[kind == 1] = t[kind == 1] * rng.uniform(0.3, 1.0, (kind == 1).sum())
    lower[kind == 2] = 0.0                          # left-censored above the time
    upper[kind == 2] = t[kind == 2] * rng.uniform(1.0, 3.0, (kind == 2).sum())
    lower[kind == 3] = t[kind == 3] * 0.8           # interval
    upper[kind == 3] = t[kind == 3] * 1.25
    return X, np.column_stack([lower, upper])


# -- Cox ----------------------------------------------------------------------------------


def test_cox_loss_is_minus_the_breslow_partial_likelihood_with_ties():
    y = np.array([2.0, -2.0, 2.0, 1.0, -3.0, 3.0, 5.0, -1.0])
    raw = np.array([0.3, -0.2, 0.1, 0.5, 0.0, -0.4, 0.2, 0.7])
    total = CoxLoss().loss(y, raw).sum()
    assert total == pytest.approx(-ref.cox_partial_loglik(y, raw), rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cox_gradient_and_hessian_are_derivatives_of_the_partial_likelihood(seed):
    rng = np.random.default_rng(seed)
    n = 25
    t = rng.integers(1, 8, n).astype(float)             # many ties
    y = np.where(rng.random(n) < 0.3, -t, t)
    y[0] = abs(y[0])
    raw = rng.normal(size=n)
    loss = CoxLoss()
    g, h = np.empty(n), np.empty(n)
    loss.gradient_hessian(loss.validate_target(y), raw, g, h)
    eps = 1e-5
    for m in range(n):
        up, dn = raw.copy(), raw.copy()
        up[m] += eps
        dn[m] -= eps
        fd = -(ref.cox_partial_loglik(y, up) - ref.cox_partial_loglik(y, dn)) / (2 * eps)
        assert g[m] == pytest.approx(fd, abs=1e-7)
        g_up, g_dn, h_ = np.empty(n), np.empty(n), np.empty(n)
        loss.gradient_hessian(y, up, g_up, h_)
        loss.gradient_hessian(y, dn, g_dn, h_)
        assert h[m] == pytest.approx((g_up[m] - g_dn[m]) / (2 * eps), abs=1e-6)


def test_cox_derivatives_do_not_overflow_and_ignore_a_constant_shift():
    X, y, _ = _cox_data(50)
    raw = np.linspace(-3, 3, 50)
    loss = CoxLoss()
    g1, h1, g2, h2 = (np.empty(50) for _ in range(4))
    loss.gradient_hessian(y, raw, g1, h1)
    loss.gradient_hessian(y, raw + 800.0, g2, h2)      # exp(800) overflows without care
    np.testing.assert_allclose(g2, g1, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(h2, h1, rtol=1e-9, atol=1e-12)
    assert np.isclose(g1.sum(), 0.0, atol=1e-9)        # the gradients of a likelihood
    assert np.all(h1 >= 0)                             # invariant to shifts sum to 0


@pytest.mark.parametrize("y, match", [
    (np.array([1.0, 0.0, -2.0]), "times of 0"),
    (np.array([-1.0, -2.0, -3.0]), "every row is censored"),
    (np.array([1.0, np.nan, 2.0]), "NaN"),
    (np.ones((3, 2)), "one signed time per row"),
])
def test_cox_labels_are_checked(y, match):
    with pytest.raises(ValueError, match=match):
        CoxLoss().validate_target(y)


# -- AFT ----------------------------------------------------------------------------------


ROWS = [(2.0, 2.0), (1.5, np.inf), (0.0, 3.0), (1.0, 4.0), (0.5, 0.5)]


@pytest.mark.parametrize("dist", ["normal", "logistic", "extreme"])
@pytest.mark.parametrize("sigma", [0.7, 1.0, 1.6])
def test_aft_loss_and_derivatives_match_the_likelihood(dist, sigma):
    y = np.array(ROWS * 5)
    raw = np.repeat(np.linspace(-1.0, 1.5, 5), len(ROWS))
    loss = AFTLoss(aft_distribution=dist, aft_sigma=sigma)
    values = loss.loss(y, raw)
    expected = [ref.aft_nloglik(lo, up, z, dist, sigma) for (lo, up), z in zip(y, raw)]
    np.testing.assert_allclose(values, expected, rtol=1e-9)
    n = y.shape[0]
    g, h = np.empty(n), np.empty(n)
    loss.gradient_hessian(y, raw, g, h)
    eps = 1e-5
    for i in range(n):
        lo, up = y[i]
        fd = (ref.aft_nloglik(lo, up, raw[i] + eps, dist, sigma)
              - ref.aft_nloglik(lo, up, raw[i] - eps, dist, sigma)) / (2 * eps)
        assert g[i] == pytest.approx(np.clip(fd, -15, 15), rel=1e-5, abs=1e-7)
        fd2 = (ref.aft_nloglik(lo, up, raw[i] + eps, dist, sigma)
               - 2 * ref.aft_nloglik(lo, up, raw[i], dist, sigma)
               + ref.aft_nloglik(lo, up, raw[i] - eps, dist, sigma)) / eps ** 2
        # XGBoost's clipping of the hessian to [1e-16, 15]
        assert h[i] == pytest.approx(np.clip(fd2, 1e-16, 15), rel=1e-3, abs=1e-4)


@pytest.mark.parametrize("dist", ["normal", "logistic", "extreme"])
def test_aft_derivatives_stay_finite_and_clipped_far_out(dist):
    y = np.array(ROWS * 2)
    raw = np.array([-200.0] * len(ROWS) + [200.0] * len(ROWS))
    loss = AFTLoss(aft_distribution=dist)
    g, h = np.empty(raw.size), np.empty(raw.size)
    loss.gradient_hessian(y, raw, g, h)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))
    assert np.all((g >= -15) & (g <= 15)) and np.all((h >= 1e-16) & (h <= 15))
    # a prediction far below the times pushes up, far above pushes down, except for the
    # right-censored row (index 1) above and the left-censored one (index 2) below, which
    # are then (almost) not pushed at all
    below, above = np.delete(g[:len(ROWS)], 2), np.delete(g[len(ROWS):], 1)
    assert np.all(below < 0) and np.all(above > 0)
    assert abs(g[2]) < 1e-12 and abs(g[len(ROWS) + 1]) < 1e-12
    assert np.all(np.isfinite(loss.loss(y, raw)))


def test_aft_start_minimises_the_constant_loss():
    _, y = _aft_data(200)
    loss = AFTLoss(aft_distribution="logistic", aft_sigma=0.8)
    b = loss.init_raw(loss.validate_target(y), None)
    mean = [loss.loss(y, np.full(200, b + d)).mean() for d in (-1e-3, 0.0, 1e-3)]
    assert mean[1] <= min(mean[0], mean[2])


@pytest.mark.parametrize("y, match", [
    (np.array([[-1.0, 2.0], [1.0, 1.0]]), "lower bounds must be >= 0"),
    (np.array([[3.0, 2.0], [1.0, 1.0]]), "lower bound exceeds its upper bound"),
    (np.array([[1.0, np.inf], [2.0, np.inf]]), "every row is right-censored"),
    (np.array([[0.0, 0.0], [1.0, 1.0]]), "upper bounds must be > 0"),
    (np.array([[np.nan, 1.0], [1.0, 1.0]]), "NaN"),
    (np.array([1.0, 2.0]), "two columns per row"),
])
def test_aft_labels_are_checked(y, match):
    with pytest.raises(ValueError, match=match):
        AFTLoss().validate_target(y)


@pytest.mark.parametrize("params, match", [
    ({"aft_distribution": "weibull"}, "aft_distribution='weibull' is invalid"),
    ({"aft_sigma": 0.0}, "aft_sigma=0.0 is invalid"),
    ({"aft_sigma": True}, "aft_sigma=True is invalid"),
])
def test_aft_parameters_are_checked(params, match):
    with pytest.raises(ValueError, match=match):
        AFTLoss(**params)


def test_aft_nloglik_metric_is_the_weighted_mean_loss():
    _, y = _aft_data(40)
    raw = np.linspace(0, 2, 40)
    w = np.arange(1.0, 41.0)
    m = AFTNLogLikMetric(aft_distribution="extreme", aft_sigma=1.3)
    expected = [ref.aft_nloglik(lo, up, z, "extreme", 1.3) for (lo, up), z in zip(y, raw)]
    assert m(y, raw) == pytest.approx(np.mean(expected), rel=1e-9)
    assert m(y, raw, sample_weight=w) == pytest.approx(np.average(expected, weights=w),
                                                       rel=1e-9)


# -- concordance index --------------------------------------------------------------------


def test_cindex_of_a_small_example_by_hand():
    # pairs: row 0 (event, t=2) vs row 1 (censored at 2): tied risks, 1/2; vs row 2 (t=3):
    # concordant. Row 2's event has no later row. C = 1.5 / 2.
    assert concordance_index([2, 2, 3], [1, 0, 1], [1, 1, 0]) == 0.75
    assert concordance_index([1, 2, 3], [1, 1, 0], [3, 2, 1]) == 1.0
    assert concordance_index([1, 2, 3], [1, 1, 0], [1, 2, 3]) == 0.0
    # two events at the same time are not comparable
    assert concordance_index([1, 1, 2], [1, 1, 1], [5, 0, 1]) == 0.5


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.booleans(), st.integers(0, 3),
                          st.integers(0, 3)), min_size=2, max_size=30))
def test_cindex_equals_its_pairwise_definition(rows):
    time = [r[0] for r in rows]
    event = [r[1] for r in rows]
    risk = [r[2] for r in rows]
    w = [r[3] + 0.5 for r in rows]
    try:
        expected = ref.harrell_cindex(time, event, risk)
    except ZeroDivisionError:
        with pytest.raises(ValueError, match="no comparable pair"):
            concordance_index(time, event, risk)
        return
    assert concordance_index(time, event, risk) == pytest.approx(expected, rel=1e-12)
    assert concordance_index(time, event, risk, np.array(w)) == pytest.approx(
        ref.harrell_cindex(time, event, risk, w), rel=1e-12)


def test_integer_weights_are_repeated_rows():
    rng = np.random.default_rng(3)
    time, event, risk = rng.integers(1, 6, 30), rng.random(30) < 0.6, rng.integers(0, 4, 30)
    w = rng.integers(0, 3, 30)
    rep = np.repeat(np.arange(30), w)
    assert concordance_index(time, event, risk, w.astype(float)) == pytest.approx(
        ref.harrell_cindex(time[rep], event[rep], risk[rep]), rel=1e-12)


def test_cindex_metric_reads_cox_risks_and_aft_times():
    y_cox = np.array([1.0, -2.0, 3.0, 4.0])
    raw = np.array([2.0, 1.0, 0.5, 0.0])              # risk falls with time: concordant
    assert CIndexMetric()(y_cox, raw) == 1.0
    y_aft = np.column_stack([np.abs(y_cox), np.where(y_cox > 0, np.abs(y_cox), np.inf)])
    assert CIndexMetric()(y_aft, -raw) == 1.0         # AFT raw is a log time
    assert CIndexMetric()(y_aft, raw) == 0.0


# -- training ----------------------------------------------------------------------------


def test_cox_model_ranks_like_the_true_hazard():
    X, y, risk = _cox_data(2000, seed=1)
    Xt, yt, risk_t = _cox_data(2000, seed=2)
    m = BoostRegressor(loss="cox", n_estimators=100, learning_rate=0.05, max_depth=3,
                       random_state=0).fit(X, y)
    truth = concordance_index(np.abs(yt), yt > 0, risk_t)
    got = concordance_index(np.abs(yt), yt > 0, np.log(m.predict(Xt)))
    assert got > truth - 0.03, (got, truth)
    np.testing.assert_allclose(m.predict(Xt), np.exp(m.model_.predict(Xt, raw=True)))


def test_aft_model_predicts_times_of_the_right_scale():
    X, y = _aft_data(2000, seed=1)
    Xt, yt = _aft_data(2000, seed=2)
    m = BoostRegressor(loss="aft", loss_params={"aft_sigma": 0.5}, n_estimators=150,
                       learning_rate=0.1, max_depth=3, random_state=0).fit(X, y)
    exact = yt[:, 0] == yt[:, 1]
    pred = m.predict(Xt)
    truth = np.exp(1.0 + Xt[:, 0] - 0.5 * Xt[:, 1])    # the median of the true time
    assert np.median(np.abs(np.log(pred[exact]) - np.log(truth[exact]))) < 0.25
    assert CIndexMetric()(yt, np.log(pred)) > 0.8


def test_eval_metrics_are_recorded_and_stop_early():
    X, y, _ = _cox_data(600, seed=4)
    m = BoostRegressor(loss="cox", n_estimators=300, learning_rate=0.3, eval_metric="cindex",
                       early_stopping_rounds=10, random_state=0)
    m.fit(X[:400], y[:400], eval_set=[(X[400:], y[400:])])
    scores = m.evals_result_["valid_0"]["cindex"]
    assert m.best_iteration_ < 299 and max(scores) == pytest.approx(
        scores[m.best_iteration_])
    X2, y2 = _aft_data(400, seed=4)
    m2 = BoostRegressor(loss="aft", n_estimators=20, eval_metric=["aft_nloglik", "cindex"])
    m2.fit(X2[:300], y2[:300], eval_set=[(X2[300:], y2[300:])])
    rec = m2.evals_result_["valid_0"]
    assert rec["aft_nloglik"][-1] == pytest.approx(rec["aft"][-1], rel=1e-9)


@pytest.mark.parametrize("loss, data", [("cox", _cox_data), ("aft", _aft_data)])
def test_model_files_shap_and_staged_predictions(loss, data, tmp_path):
    X, y = data(300, seed=5)[:2]
    m = BoostRegressor(loss=loss, n_estimators=15, max_depth=3, random_state=0).fit(X, y)
    path = tmp_path / "m.json"
    m.model_.save(path)
    back = boostlib.Model.load(path)
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
    assert back.loss.name == loss
    contrib = m.predict(X, pred_contrib=True)
    np.testing.assert_allclose(contrib.sum(axis=1), m.model_.predict(X, raw=True),
                               rtol=1e-9, atol=1e-9)
    staged = list(m.staged_predict(X))
    assert len(staged) == 15
    np.testing.assert_allclose(staged[-1], m.predict(X), rtol=1e-12)


def test_aft_parameters_survive_the_model_file(tmp_path):
    X, y = _aft_data(200, seed=6)
    params = {"loss": "aft", "loss_params": {"aft_distribution": "extreme", "aft_sigma": 2.0},
              "n_estimators": 5}
    model = train(params, Dataset(X, y))
    model.save(tmp_path / "m.json")
    back = boostlib.Model.load(tmp_path / "m.json")
    assert (back.loss.aft_distribution, back.loss.aft_sigma) == ("extreme", 2.0)
    np.testing.assert_array_equal(back.predict(X, raw=True), model.predict(X, raw=True))


def test_estimator_and_train_build_the_same_model():
    X, y = _aft_data(200, seed=7)
    p = {"loss": "aft", "n_estimators": 10, "random_state": 3}
    a = train(p, Dataset(X, y)).predict(X, raw=True)
    b = BoostRegressor(**p).fit(X, y).model_.predict(X, raw=True)
    np.testing.assert_array_equal(a, b)


def test_training_errors_name_the_label_problem():
    X = np.random.default_rng(0).normal(size=(4, 2))
    with pytest.raises(ValueError, match="lower bound exceeds its upper bound"):
        BoostRegressor(loss="aft").fit(X, [[1, 2], [3, 1], [1, 1], [2, 2]])
    with pytest.raises(ValueError, match="two columns"):
        BoostRegressor(loss="aft").fit(X, [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="every row is censored"):
        BoostRegressor(loss="cox").fit(X, [-1.0, -2.0, -3.0, -4.0])
    with pytest.raises(ValueError, match="infinite"):
        BoostRegressor(loss="multi_mse").fit(X, [[1, np.inf], [1, 1], [1, 1], [2, 2]])


def test_distributed_training_refuses_cox():
    _, y, _ = _cox_data(20)
    with pytest.raises(ValueError, match="couples the rows"):
        distributed_start({"loss": "cox"}, y, None)


# -- the plugin test kit -------------------------------------------------------------------


def test_cox_passes_the_plugin_kit():
    check_loss(CoxLoss())
    X, y, _ = _cox_data(120, seed=8)
    check_loss(CoxLoss(), y, np.random.default_rng(0).normal(size=120))


@pytest.mark.parametrize("dist, sigma", [("normal", 1.0), ("normal", 2.0), ("logistic", 0.5),
                                         ("logistic", 1.0), ("extreme", 1.0),
                                         ("extreme", 2.0)])
def test_aft_passes_the_plugin_kit(dist, sigma):
    loss = AFTLoss(dist, sigma)
    if dist == "extreme":
        # near the times: far out, the gradient is clipped to [-15, 15] and the loss floored
        # (XGBoost's safeguards), which finite differences do not see
        _, y = _aft_data(200, seed=9)
        mid = np.where(np.isfinite(y[:, 1]), y[:, 1], y[:, 0])
        raw = np.log(mid) + np.random.default_rng(1).normal(0, 0.3, 200)
        check_loss(loss, y, raw)
    else:
        check_loss(loss)


def test_regressor_scores_survival_models_by_the_cindex():
    X, y, _ = _cox_data(300, seed=10)
    m = BoostRegressor(loss="cox", n_estimators=10, random_state=0).fit(X, y)
    assert m.score(X, y) == pytest.approx(
        concordance_index(np.abs(y), y > 0, m.model_.predict(X, raw=True)), rel=1e-12)
    X2, y2 = _aft_data(300, seed=10)
    m2 = BoostRegressor(loss="aft", n_estimators=10, random_state=0).fit(X2, y2)
    assert m2.score(X2, y2) == pytest.approx(
        CIndexMetric()(y2, m2.model_.predict(X2, raw=True)), rel=1e-12)
    with pytest.raises(ValueError, match="lower bound exceeds"):
        m2.score(X2[:2], [[2.0, 1.0], [1.0, 1.0]])
    mse = BoostRegressor(n_estimators=5).fit(X, np.abs(y))
    assert mse.score(X, np.abs(y)) < 1.0               # R² as before


# -- against XGBoost ----------------------------------------------------------------------


def _xgb_settings(depth):
    return dict(grow_policy="depthwise", n_estimators=3, learning_rate=0.5, max_depth=depth,
                l2_regularization=1.0, min_child_weight=1.0, min_samples_leaf=1, n_jobs=1)


@pytest.mark.parametrize("depth", [1, 3, 5])
def test_cox_trees_are_xgboosts_without_ties(depth):
    xgb = pytest.importorskip("xgboost")
    X, y, _ = _cox_data(500, seed=11)
    X = np.round(X, 1)                              # < 256 values: the same bins in both
    ours = BoostRegressor(loss="cox", **_xgb_settings(depth)).fit(X, y)
    theirs = xgb.train({"objective": "survival:cox", "eta": 0.5, "max_depth": depth,
                        "lambda": 1.0, "min_child_weight": 1.0, "tree_method": "hist",
                        "max_bin": 256, "nthread": 1}, xgb.DMatrix(X, label=y), 3)
    a = ours.model_.predict(X, raw=True)
    b = theirs.predict(xgb.DMatrix(X), output_margin=True).astype(np.float64)
    # the same trees up to XGBoost's float32 arithmetic and its constant start
    np.testing.assert_allclose(a - a.mean(), b - b.mean(), atol=1e-5)


@pytest.mark.parametrize("dist", ["normal", "logistic", "extreme"])
def test_aft_trees_are_xgboosts(dist):
    xgb = pytest.importorskip("xgboost")
    X, y = _aft_data(500, seed=12)
    X = np.round(X, 1)
    ours = BoostRegressor(loss="aft", loss_params={"aft_distribution": dist},
                          **_xgb_settings(3)).fit(X, y)
    start = np.full(500, AFTLoss(dist).init_raw(y, None))
    d = xgb.DMatrix(X, base_margin=start)
    d.set_float_info("label_lower_bound", y[:, 0])
    d.set_float_info("label_upper_bound", y[:, 1])
    theirs = xgb.train({"objective": "survival:aft", "aft_loss_distribution": dist,
                        "eta": 0.5, "max_depth": 3, "lambda": 1.0, "min_child_weight": 1.0,
                        "tree_method": "hist", "max_bin": 256, "nthread": 1}, d, 3)
    b = theirs.predict(xgb.DMatrix(X, base_margin=start), output_margin=True)
    np.testing.assert_allclose(ours.model_.predict(X, raw=True), b, atol=1e-5)


@pytest.mark.parametrize("loss, data", [("cox", _cox_data), ("aft", _aft_data)])
def test_onnx_export_predicts_the_response(loss, data):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from boostlib.export import to_onnx
    X, y = data(200, seed=13)[:2]
    m = BoostRegressor(loss=loss, n_estimators=5, random_state=0).fit(X, y)
    session = ort.InferenceSession(to_onnx(m).SerializeToString())
    out = session.run(None, {session.get_inputs()[0].name: X.astype(np.float32)})[0]
    np.testing.assert_allclose(np.ravel(out), m.predict(X), rtol=1e-5)


def test_cross_validation_takes_survival_labels():
    X, y = _aft_data(300, seed=14)
    result = boostlib.cv({"loss": "aft", "n_estimators": 5, "eval_metric": "cindex"},
                         Dataset(X, y), nfold=3)
    X2, y2, _ = _cox_data(300, seed=14)
    result2 = boostlib.cv({"loss": "cox", "n_estimators": 5, "eval_metric": "cindex"},
                          Dataset(X2, y2), nfold=3)
    for r in (result, result2):
        assert r.metric == "cindex" and 0.6 < r.history["cindex-mean"][-1] <= 1.0


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["exact", "right", "left", "interval"]),
       dist=st.sampled_from(["normal", "logistic", "extreme"]),
       t=st.floats(0.05, 50.0), width=st.floats(1.01, 4.0), shift=st.floats(-2.0, 2.0),
       sigma=st.floats(0.5, 2.0))
def test_aft_kernel_equals_the_reference_likelihood(kind, dist, t, width, shift, sigma):
    lower, upper = {"exact": (t, t), "right": (t, np.inf), "left": (0.0, t),
                    "interval": (t, t * width)}[kind]
    raw = math.log(t) + shift * sigma                  # within 2 scales of the time
    got = AFTLoss(dist, sigma).loss(np.array([[lower, upper]]), np.array([raw]))[0]
    assert got == pytest.approx(ref.aft_nloglik(lower, upper, raw, dist, sigma),
                                rel=1e-9, abs=1e-12)


def test_only_survival_metrics_take_two_label_columns():
    y = np.array([[1.0, 1.0], [2.0, np.inf], [3.0, 3.0]])
    assert boostlib.create("metric", "aft_nloglik")(y, np.zeros(3)) > 0
    with pytest.raises(ValueError, match=r"expected y_true of shape \(n,\) and"):
        boostlib.create("metric", "rmse")(y, np.zeros(3))
