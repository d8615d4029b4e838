"""Samplers inside a fit: where the sample acts, what the trees see, and the edge cases."""
import numpy as np
import pytest

import boostlib.engine.histograms
from boostlib import BoostClassifier, BoostRegressor, available
from boostlib.api import UpdateRule
from boostlib.engine.metrics import logloss

SAMPLERS = ("uniform", "goss", "mvs")
POLICIES = ("symmetric", "depthwise")


class Recorder(UpdateRule):
    """Runs ``body(ctx)`` each iteration."""

    name = "recorder"

    def __init__(self, body):
        self.body = body

    def step(self, ctx):
        self.body(ctx)


def _data(n=400, seed=0, nan=True):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    if nan:
        X[rng.random(n) < 0.1, 2] = np.nan
    y = X[:, 0] - 0.7 * X[:, 1] ** 2 + np.nan_to_num(X[:, 2]) + 0.3 * rng.normal(size=n)
    return X, y


def _groups(out):
    """Rows sharing a leaf value."""
    return [out == v for v in np.unique(out)]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("sampler", SAMPLERS)
def test_subsample_one_is_identical_to_no_sampler(sampler, policy):
    X, y = _data()
    a = BoostRegressor(n_estimators=15, grow_policy=policy, random_state=3).fit(X, y)
    b = BoostRegressor(n_estimators=15, grow_policy=policy, random_state=3, sampler=sampler,
                       subsample=1.0).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("sampler", SAMPLERS)
def test_same_seed_same_model_whatever_n_jobs(sampler, policy):
    X, y = _data(600)
    kw = dict(n_estimators=20, grow_policy=policy, sampler=sampler, subsample=0.4,
              sampler_params={"warmup": False} if sampler == "goss" else None)
    a = BoostRegressor(random_state=5, n_jobs=1, **kw).fit(X, y)
    b = BoostRegressor(random_state=5, n_jobs=2, **kw).fit(X, y)
    c = BoostRegressor(random_state=6, n_jobs=1, **kw).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert not np.array_equal(a.predict(X), c.predict(X))     # sampling really happens


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("sampler", SAMPLERS)
def test_training_scores_of_sampled_fits_equal_predictions(sampler, policy):
    # The training scores are updated from each row's leaf: rows in the sample take the leaf
    # the grower put them in, the others are walked (depthwise) or predicted. The recorded
    # training loss after each iteration must equal the loss of that model's predictions.
    X, y = _data(3000, seed=4)
    kw = dict(grow_policy=policy, sampler=sampler, subsample=0.3, random_state=2,
              sampler_params={"warmup": False} if sampler == "goss" else None)
    model = BoostRegressor(n_estimators=12, **kw).fit(X, y)
    for n_trees in (1, 5, 12):
        pred = BoostRegressor(n_estimators=n_trees, **kw).fit(X, y).predict(X)
        expected = np.mean((pred - y) ** 2) / 2.0
        assert model.evals_result_["train"]["mse"][n_trees - 1] == pytest.approx(expected,
                                                                               rel=1e-9)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("sampler", SAMPLERS)
def test_sampled_tree_equals_tree_on_masked_gradients(sampler, policy):
    # Fitting on the sample is fitting on every row with the unsampled rows' gradient and
    # hessian set to 0 and the others multiplied by their weights: same splits, same leaves.
    X, y = _data()
    checked = []

    def body(ctx):
        g, h = ctx.gradients()
        sample = ctx.sample(g, h)
        tree = ctx.fit_tree(g, h, sample)
        w = np.zeros(ctx.n_rows)
        w[sample.indices] = 1.0 if sample.weights is None else sample.weights
        twin = ctx.fit_tree(g * w, h * w)
        for field in ("feature", "bin", "nan_right", "value"):
            np.testing.assert_array_equal(getattr(tree, field), getattr(twin, field))
        ctx.add_tree(tree, ctx.learning_rate)
        checked.append(sample.indices.size)

    BoostRegressor(n_estimators=4, grow_policy=policy, sampler=sampler, subsample=0.3,
                   sampler_params={"warmup": False} if sampler == "goss" else None,
                   update=Recorder(body), random_state=0).fit(X, y)
    assert len(checked) == 4 and all(k < 0.6 * len(y) for k in checked)


def test_histograms_read_only_the_sampled_rows(monkeypatch):
    seen = []
    real = boostlib.engine.histograms._histogram.build_histograms

    def spy(X_rows, rows, node, *args):
        seen.append((X_rows.shape[0], rows.shape[0], node.shape[0]))
        return real(X_rows, rows, node, *args)

    monkeypatch.setattr(boostlib.engine.histograms._histogram, "build_histograms", spy)
    X, y = _data(1000)
    sizes = []

    def body(ctx):
        g, h = ctx.gradients()
        sample = ctx.sample(g, h)
        sizes.append(sample.indices.size)
        ctx.add_tree(ctx.fit_tree(g, h, sample), 0.1)

    BoostRegressor(n_estimators=3, max_depth=3, sampler="uniform", subsample=0.2,
                   update=Recorder(body)).fit(X, y)
    assert seen and {s[2] for s in seen} == set(sizes)
    # a compact matrix of exactly the sampled rows, read without indirection
    assert all(n_x == n_node and n_rows == 0 for n_x, n_rows, n_node in seen)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("leaf_values", ["sample", "all"])
@pytest.mark.parametrize("sampler", SAMPLERS)
def test_where_the_sample_acts(sampler, leaf_values, policy):
    # "sample": leaves are Newton steps over the sampled rows with their weights;
    # "all": over every row (CatBoost). Training scores follow the tree either way.
    X, y = _data()
    lam = 1.0
    w_user = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    done = []

    def body(ctx):
        g, h = ctx.gradients()
        sample = ctx.sample(g, h)
        tree = ctx.fit_tree(g, h, sample)
        out = ctx.tree_output(tree)
        sw = np.zeros(ctx.n_rows)
        sw[sample.indices] = 1.0 if sample.weights is None else sample.weights
        if leaf_values == "all":
            sw[:] = 1.0
        for rows in _groups(out):
            v = out[rows][0]
            if np.sum(sw[rows]) == 0:
                continue
            expected = -np.dot(sw[rows], g[rows]) / (np.dot(sw[rows], h[rows]) + lam)
            assert v == pytest.approx(expected, rel=1e-9, abs=1e-12)
        before = ctx.raw.copy()
        ctx.add_tree(tree, 0.5)
        np.testing.assert_allclose(ctx.raw, before + 0.5 * out, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ctx.raw, ctx.ensemble.predict_binned(ctx.X_binned),
                                   rtol=0, atol=1e-9)
        done.append(1)

    BoostRegressor(n_estimators=3, grow_policy=policy, sampler=sampler, subsample=0.3,
                   l2_regularization=lam,
                   sampler_params={"leaf_values": leaf_values,
                                   **({"warmup": False} if sampler == "goss" else {})},
                   update=Recorder(body), random_state=2).fit(X, y, sample_weight=w_user)
    assert len(done) == 3


@pytest.mark.parametrize("policy", POLICIES)
def test_sampled_tree_added_before_its_output_is_asked(policy):
    # A depthwise tree fitted on a sample updates the training scores by one walk over the
    # other rows, adding each one's value as it lands; adding it again (another coefficient,
    # a tracked model) and asking its output afterwards must agree with the prediction.
    X, y = _data(n=3000)
    done = []

    def body(ctx):
        g, h = ctx.gradients()
        tree = ctx.fit_tree(g, h, ctx.sample(g, h))
        aux = ctx.track(f"aux{ctx.iteration}")
        before, before_aux = ctx.raw.copy(), aux.raw.copy()
        ctx.add_tree(tree, 0.4)                     # first: the walk adds the values
        pred = ctx.ensemble.predict_binned(ctx.X_binned)
        np.testing.assert_allclose(ctx.raw, pred, rtol=0, atol=1e-9)
        ctx.add_tree(tree, 0.25)                    # again: its coefficient becomes 0.65
        ctx.add_tree(tree, 1.5, to=aux)
        out = ctx.tree_output(tree)
        expected = np.zeros(ctx.n_rows)
        ctx.ensemble.add_trees_binned(ctx.X_binned, expected, [tree], np.ones(1), 1)
        np.testing.assert_array_equal(out, expected)
        np.testing.assert_allclose(ctx.raw, before + 0.65 * out, rtol=0, atol=1e-12)
        np.testing.assert_allclose(aux.raw, before_aux + 1.5 * out, rtol=0, atol=1e-12)
        done.append(1)

    BoostRegressor(n_estimators=2, grow_policy=policy, sampler="mvs", subsample=0.4,
                   update=Recorder(body), random_state=3).fit(X, y)
    assert len(done) == 2


def test_sampler_weights_multiply_user_weights():
    # With user weights w and an MVS sample of weights v, the leaf value is
    # -sum(v w g) / (sum(v w h) + l2) with g, h the unweighted loss derivatives.
    X, y = _data()
    w_user = np.random.default_rng(4).uniform(0.2, 3.0, len(y))

    def body(ctx):
        g, h = ctx.gradients()                      # already times w_user
        raw_g = ctx.raw - y                         # MSE: dL/dz = z - y, d2L/dz2 = 1
        np.testing.assert_allclose(g, w_user * raw_g, rtol=1e-12)
        np.testing.assert_allclose(h, w_user, rtol=1e-12)
        sample = ctx.sample(g, h)
        out = ctx.tree_output(ctx.fit_tree(g, h, sample))
        v = np.zeros(ctx.n_rows)
        v[sample.indices] = sample.weights
        for rows in _groups(out):
            if v[rows].sum() == 0:
                continue
            expected = -np.sum(v[rows] * w_user[rows] * raw_g[rows]) / (
                np.sum(v[rows] * w_user[rows]) + 1.0)
            assert out[rows][0] == pytest.approx(expected, rel=1e-9)

    BoostRegressor(n_estimators=2, sampler="mvs", subsample=0.3, update=Recorder(body),
                   random_state=0).fit(X, y, sample_weight=w_user)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("sampler", SAMPLERS)
def test_tiny_samples_give_single_leaf_trees(sampler, policy):
    # Fewer selected rows than 2 * min_samples_leaf: no split is allowed, every tree is a
    # single leaf fitted on the sample, and the fit neither fails nor produces NaN.
    X, y = _data(40)
    m = BoostRegressor(n_estimators=5, grow_policy=policy, sampler=sampler, subsample=0.1,
                       min_samples_leaf=5, random_state=0,
                       sampler_params={"warmup": False} if sampler == "goss" else None)
    m.fit(X, y)
    pred = m.predict(X)
    assert np.all(np.isfinite(pred))
    assert np.unique(pred).size == 1


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_all_zero_gradients(sampler):
    # A constant target: after the bias every gradient is 0 (MVS falls back to uniform, GOSS
    # sees only ties); the model stays the constant.
    X, _ = _data(300)
    y = np.full(300, 2.5)
    m = BoostRegressor(n_estimators=5, sampler=sampler, subsample=0.3, random_state=0,
                       sampler_params={"warmup": False} if sampler == "goss" else None)
    np.testing.assert_allclose(m.fit(X, y).predict(X), 2.5, rtol=1e-12)


@pytest.mark.parametrize("leaf_estimation", ["newton", "gradient"])
@pytest.mark.parametrize("sampler", SAMPLERS)
def test_sla_loss_with_negative_hessians(sampler, leaf_estimation, binary_data):
    # SLA's hessian is negative for misclassified rows: the samplers get the floored
    # (Newton) or unit (gradient) hessians from the context and stay finite and useful.
    X, y = binary_data
    m = BoostClassifier(n_estimators=30, loss="sla", leaf_estimation=leaf_estimation,
                        sampler=sampler, subsample=0.5, random_state=0).fit(X, y)
    p = m.predict_proba(X)[:, 1]
    assert np.all(np.isfinite(p))
    assert np.mean((p > 0.5) == y) > 0.7


@pytest.mark.parametrize("update", sorted(available("update")))
@pytest.mark.parametrize("sampler", SAMPLERS)
def test_every_update_rule_takes_every_sampler(update, sampler, binary_data):
    X, y = binary_data
    # a forest averages unshrunk trees and needs some sampling even without a sampler
    rf = {"learning_rate": 1.0, "colsample_bynode": 0.7} if update == "rf" else {}
    base = BoostClassifier(n_estimators=20, update=update, random_state=0, **rf).fit(X, y)
    m = BoostClassifier(n_estimators=20, update=update, sampler=sampler, subsample=0.5,
                        random_state=0, **rf).fit(X, y)
    assert logloss(y, m.predict_proba(X)[:, 1]) < 0.69
    assert not np.array_equal(m.predict_proba(X), base.predict_proba(X))
