"""Accelerated gradient boosting: ``agbm``, ``agbmr``, ``vagbm`` and the context's tracked models.

Differential tests against ``tests/reference/agbm.py`` (a NumPy transcription of the paper's
Algorithms 2-4 with an independent weak learner on 0/1 features), the paper's testable
properties (``algorithms.md`` A1-A7), and the engine contract (grow policies, losses,
samplers, ``n_jobs``, early stopping, ``BOOSTLIB_PLUGIN_CHECKS=full``). The conformance
helper ``boostlib.testing.check_update_rule`` runs on every built-in rule in
``tests/test_testing.py``.
"""
import math

import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRegressor, create
from boostlib.plugin.checks import ENV
from boostlib.builtin.agbm import AGBM, AGBMR, VAGBM
from boostlib.api import UpdateRule
from boostlib.registry import PluginError
from reference import agbm as ref


@pytest.fixture(autouse=True)
def _full_checks(monkeypatch):
    """Every fit here also checks, each iteration, that the training and validation scores of
    the model and of ``h`` equal their predictions."""
    monkeypatch.setenv(ENV, "full")


def _recording(cls):
    """``cls`` that keeps ``f``, ``h``, ``theta`` and the carried error after every step."""

    class Recording(cls):
        def begin(self, ctx):
            super().begin(ctx)
            self.log = {"f": [], "h": [], "theta": [], "error": []}

        def step(self, ctx):
            self.log["theta"].append(self.theta)
            super().step(ctx)
            self.log["f"].append(ctx.raw.copy())
            self.log["h"].append(self._h.raw.copy())
            error = getattr(self, "_error", None)
            self.log["error"].append(None if error is None else error.copy())

    Recording.name = cls.name
    return Recording


def _binary_data(n=240, k=5, seed=0):
    """0/1 features (so the reference learner is exact) and a logistic target."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, k)).astype(float)
    logit = 1.5 * X[:, 0] - X[:, 1] + X[:, 2] * X[:, 3] - 0.5 + 0.7 * rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(float)
    return X, y


def _real_data(n=300, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3] + 0.2 * rng.normal(size=n)
    return X, y


def _fit_logloss(rule, X, y, *, weight=None, leaf="gradient", depth=2, policy="depthwise",
                 n_iter=12, lr=0.5, **kw):
    model = BoostClassifier(n_estimators=n_iter, learning_rate=lr, max_depth=depth,
                            grow_policy=policy, leaf_estimation=leaf, update=rule,
                            random_state=0, **kw)
    return model.fit(X, y.astype(int), sample_weight=weight)


def _problem(X, y, *, weight=None, leaf="gradient", depth=2, l2=1.0):
    return ref.Problem(y=y, loss=ref.logloss, derivatives=ref.logloss_derivatives,
                       learner=ref.BinaryTree(X, depth, l2).fit,
                       bias=ref.logloss_bias(y, weight), weight=weight,
                       newton=leaf == "newton")


def _assert_paths(got, want, rtol=1e-9):
    assert len(got) == len(want)
    for m, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12, err_msg=f"iteration {m}")


# -- differential tests against the reference ---------------------------------------------------
@pytest.mark.parametrize("leaf", ["gradient", "newton"])
@pytest.mark.parametrize("weighted", [False, True])
def test_agbm_matches_reference(leaf, weighted):
    X, y = _binary_data()
    w = np.random.default_rng(3).uniform(0.2, 2.0, y.size) if weighted else None
    rule = _recording(AGBM)(momentum=0.5)
    model = _fit_logloss(rule, X, y, weight=w, leaf=leaf)
    want = ref.agbm(_problem(X, y, weight=w, leaf=leaf), 12, eta=0.5, gamma=0.5)
    _assert_paths(rule.log["f"], want.f)
    _assert_paths(rule.log["h"], want.h)
    assert rule.log["theta"] == pytest.approx(want.theta, abs=0)
    np.testing.assert_allclose(model.decision_function(X), want.f[-1], rtol=1e-9)


def test_agbm_symmetric_stumps_match_reference():
    X, y = _binary_data(seed=5)
    rule = _recording(AGBM)(momentum=0.3)
    _fit_logloss(rule, X, y, depth=1, policy="symmetric", n_iter=15, lr=1.0)
    want = ref.agbm(_problem(X, y, depth=1), 15, eta=1.0, gamma=0.3)
    _assert_paths(rule.log["f"], want.f)


@pytest.mark.parametrize("gamma", [1.0, 0.4])
def test_vagbm_matches_reference(gamma):
    X, y = _binary_data(seed=2)
    rule = _recording(VAGBM)(momentum=gamma)
    model = _fit_logloss(rule, X, y, leaf="newton", n_iter=10, lr=0.8)
    want = ref.vagbm(_problem(X, y, leaf="newton"), 10, eta=0.8, gamma=gamma)
    _assert_paths(rule.log["f"], want.f)
    _assert_paths(rule.log["h"][:-1], want.h[:-1])     # h is not updated in the last one
    assert model.n_trees_ == 10                          # one tree per iteration


def test_agbmr_fixed_period_is_a_chain_of_fresh_agbm_runs():
    X, y = _binary_data(seed=4)
    rule = _recording(AGBMR)(momentum=0.5, restart=4)
    model = _fit_logloss(rule, X, y, n_iter=11, lr=1.0)
    want = ref.agbm(_problem(X, y), 11, eta=1.0, gamma=0.5, restart=4)
    _assert_paths(rule.log["f"], want.f)
    assert rule.restarts_ == want.restarts == [3, 7]
    # a restart iteration fits no momentum tree: 11 iterations - 2 restarts - the last one
    assert model.n_trees_ == 2 * 11 - 2 - 1
    assert [rule.log["theta"][r + 1] for r in rule.restarts_] == [1.0, 1.0]


def test_agbmr_adaptive_restart_matches_reference():
    X, y = _binary_data(seed=6)
    rule = _recording(AGBMR)(momentum=1.0)
    model = _fit_logloss(rule, X, y, leaf="newton", n_iter=25, lr=1.0, depth=3)
    want = ref.agbm(_problem(X, y, leaf="newton", depth=3), 25, eta=1.0, gamma=1.0,
                    restart="adaptive")
    _assert_paths(rule.log["f"], want.f)
    assert rule.restarts_ == want.restarts and len(want.restarts) >= 1
    # A7: every increase of the training loss triggered a restart, after which theta = 1
    curve = np.array(model.evals_result_["train"]["logloss"])
    ups = np.flatnonzero(np.diff(curve) > 0) + 1
    assert set(ups) <= set(rule.restarts_)
    assert all(rule.log["theta"][r + 1] == 1.0 for r in rule.restarts_ if r + 1 < 25)


# -- the paper's testable properties -------------------------------------------------------------
def test_a1_first_iteration_fits_both_trees_to_the_same_targets():
    X, y = _real_data()
    model = BoostRegressor(n_estimators=3, max_depth=3, leaf_estimation="gradient",
                           update="agbm", random_state=0).fit(X, y)
    b1, b2 = model.ensemble_.trees[:2]
    np.testing.assert_array_equal(b1.feature, b2.feature)
    np.testing.assert_array_equal(b1.value, b2.value)
    sgb = BoostRegressor(n_estimators=1, max_depth=3, leaf_estimation="gradient",
                         random_state=0).fit(X, y)
    np.testing.assert_array_equal(sgb.ensemble_.trees[0].value, b1.value)


@pytest.mark.parametrize("policy,sampler", [("symmetric", "mvs"), ("depthwise", "goss"),
                                            ("symmetric", None)])
def test_a2_momentum_tracks_the_accumulated_residuals(policy, sampler):
    """``h^{m+1} + (gamma eta/theta_m)(c^m - b2^m(X)) = h^0 + sum_j (gamma eta/theta_j) r^j``
    on the training rows, whatever the learner (here sampled trees on real features)."""
    X, y = _binary_data(n=300, seed=7)
    X = X + np.random.default_rng(0).normal(size=X.shape)
    rule = _recording(AGBM)(momentum=0.4)
    eta, gamma, n_iter = 0.5, 0.4, 10
    model = _fit_logloss(rule, X, y, depth=3, policy=policy, n_iter=n_iter, lr=eta,
                         sampler=sampler, subsample=0.5 if sampler else 1.0)
    bias = model.ensemble_.bias
    f_prev, h_prev = np.full(y.size, bias), np.full(y.size, bias)
    accumulated = np.full(y.size, bias)
    for m in range(n_iter - 1):               # the last iteration fits no b2
        theta = 2.0 / (m + 2.0)
        assert rule.log["theta"][m] == theta
        g = (1 - theta) * f_prev + theta * h_prev
        accumulated += gamma * eta / theta * -ref.logloss_derivatives(y, g)[0]
        h, error = rule.log["h"][m], rule.log["error"][m]
        np.testing.assert_allclose(h + gamma * eta / theta * error, accumulated, rtol=1e-10,
                                   atol=1e-10, err_msg=f"iteration {m}")
        f_prev, h_prev = rule.log["f"][m], h


@pytest.mark.parametrize("policy,loss", [("symmetric", "logloss"), ("symmetric", "mse"),
                                         ("depthwise", "mse")])
@pytest.mark.parametrize("gamma", [1.0, 0.3])
def test_a3_strong_learner_is_nesterov_accelerated_gradient_descent(policy, loss, gamma):
    """One leaf per row (bit features, depth log2(n), l2=0): AGBM is AGD on the rows.

    (Depthwise trees need continuous targets: with two label values a greedy node can face
    an XOR pattern where no single split has a positive gain.)
    """
    d = 5
    n = 2 ** d
    X = ((np.arange(n)[:, None] >> np.arange(d)) & 1).astype(float)
    rng = np.random.default_rng(8)
    rule = _recording(AGBM)(momentum=gamma)
    kw = dict(n_estimators=8, learning_rate=0.8, max_depth=d, grow_policy=policy,
              l2_regularization=0.0, leaf_estimation="gradient", update=rule, random_state=0)
    if loss == "logloss":
        y = (rng.random(n) < 0.4).astype(float)
        BoostClassifier(**kw).fit(X, y.astype(int))
        x0, derivatives = np.full(n, ref.logloss_bias(y)), ref.logloss_derivatives
    else:
        y = rng.normal(size=n)
        BoostRegressor(**kw).fit(X, y)
        x0, derivatives = np.full(n, y.mean()), ref.mse_derivatives
    want = ref.nesterov(lambda z: derivatives(y, z)[0], x0, 0.8, gamma, 8)
    _assert_paths(rule.log["f"], want, rtol=1e-10)
    assert all(e is None or np.abs(e).max() < 1e-12 for e in rule.log["error"])  # c = r


def test_a5_final_model_is_f_with_2m_minus_1_trees():
    X, y = _real_data()
    rule = _recording(AGBM)(momentum=0.3)
    model = BoostRegressor(n_estimators=7, max_depth=3, update=rule, random_state=0).fit(X, y)
    assert model.n_trees_ == 2 * 7 - 1
    assert model.ensemble_.coef[-1] != 0.0
    np.testing.assert_allclose(model.predict(X), rule.log["f"][-1], rtol=1e-10, atol=1e-10)


def test_a6_agbmr_with_a_long_period_is_agbm():
    X, y = _real_data()
    kw = dict(n_estimators=8, max_depth=3, random_state=0, sampler="mvs", subsample=0.6)
    a = BoostRegressor(update="agbm", update_params={"momentum": 0.3}, **kw).fit(X, y)
    for params in ({"momentum": 0.3, "restart": 8}, {"momentum": 0.3, "restart": 50}):
        b = BoostRegressor(update="agbmr", update_params=params, **kw).fit(X, y)
        np.testing.assert_array_equal(a.predict(X), b.predict(X))
        assert a.n_trees_ == b.n_trees_


def test_agbmr_mu_sets_the_period():
    X, y = _real_data()
    eta, gamma, mu = 0.5, 0.2, 0.9
    period = math.ceil(math.sqrt(2 / (eta * gamma * mu)))
    rule = AGBMR(momentum=gamma, mu=mu)
    kw = dict(n_estimators=12, max_depth=2, learning_rate=eta, random_state=0)
    a = BoostRegressor(update=rule, **kw).fit(X, y)
    assert rule.period_ == period == 5 and rule.restarts_ == [4, 9]
    b = BoostRegressor(update="agbmr", update_params={"momentum": gamma, "restart": period},
                       **kw).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_agbm_trains_faster_than_sgb_per_tree():
    """The paper's main claim (Figure 1): lower training loss for the same number of trees."""
    X, y = _binary_data(n=400, seed=9)
    X = X + 0.3 * np.random.default_rng(1).normal(size=X.shape)
    kw = dict(max_depth=2, learning_rate=1.0, leaf_estimation="gradient", random_state=0)
    sgb = BoostClassifier(n_estimators=39, **kw).fit(X, y.astype(int))
    agbm = BoostClassifier(n_estimators=20, update="agbm", update_params={"momentum": 0.3},
                           **kw).fit(X, y.astype(int))
    assert agbm.n_trees_ == sgb.n_trees_ == 39
    assert agbm.evals_result_["train"]["logloss"][-1] < \
        sgb.evals_result_["train"]["logloss"][-1] - 0.01


# -- the engine contract -------------------------------------------------------------------------
RULES = [("agbm", {"momentum": 0.3}), ("agbmr", {"momentum": 0.3}),
         ("agbmr", {"restart": 3}), ("vagbm", {"momentum": 0.5})]


@pytest.mark.parametrize("update,params", RULES)
@pytest.mark.parametrize("policy", ["symmetric", "depthwise"])
@pytest.mark.parametrize("loss", ["mse", "logloss", "sla"])
@pytest.mark.parametrize("sampler", [None, "uniform", "goss", "mvs"])
def test_every_loss_sampler_and_policy(update, params, policy, loss, sampler):
    X, y = _real_data(n=200)
    Xv, yv = _real_data(n=80, seed=11)
    kw = dict(n_estimators=5, max_depth=3, learning_rate=0.3, grow_policy=policy, loss=loss,
              update=update, update_params=params, sampler=sampler,
              subsample=0.5 if sampler else 1.0, random_state=0)
    if loss == "mse":
        model = BoostRegressor(**kw).fit(X, y, eval_set=[(Xv, yv)])
        raw, raw_v = model.predict(X), model.predict(Xv)
    else:
        kw["leaf_estimation"] = "gradient" if loss == "sla" else "newton"
        y, yv = (y > 0).astype(int), (yv > 0).astype(int)
        model = BoostClassifier(**kw).fit(X, y, eval_set=[(Xv, yv)])
        raw, raw_v = model.decision_function(X), model.decision_function(Xv)
    curves = model.evals_result_
    name = model.loss_.name
    enc = y.astype(float)
    assert np.isfinite(raw).all()
    assert np.mean(model.loss_.loss(enc, raw)) == pytest.approx(curves["train"][name][-1],
                                                                 rel=1e-9)
    assert np.mean(model.loss_.loss(yv.astype(float), raw_v)) == pytest.approx(
        curves["valid_0"][name][-1], rel=1e-9)
    assert curves["train"][name][-1] < curves["train"][name][0]


@pytest.mark.parametrize("update,params", [RULES[0], RULES[2], RULES[3]])
def test_same_random_state_same_model_for_any_n_jobs(update, params):
    X, y = _real_data(n=400)
    kw = dict(n_estimators=6, max_depth=4, update=update, update_params=params,
              sampler="mvs", subsample=0.5, random_strength=0.5, random_state=3)
    a = BoostRegressor(n_jobs=1, **kw).fit(X, y, eval_set=[(X[:50], y[:50])])
    b = BoostRegressor(n_jobs=2, **kw).fit(X, y, eval_set=[(X[:50], y[:50])])
    np.testing.assert_array_equal(a.ensemble_.coef, b.ensemble_.coef)
    for ta, tb in zip(a.ensemble_.trees, b.ensemble_.trees):
        np.testing.assert_array_equal(ta.value, tb.value)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert a.evals_result_ == b.evals_result_


@pytest.mark.parametrize("update", ["agbm", "agbmr", "vagbm"])
def test_early_stopping_restores_the_best_coefficients(update):
    """AGBM rewrites old coefficients every iteration: the truncated model must be the model
    of the best iteration, identical to a fit that ran exactly that many iterations."""
    X, y = _real_data(n=160, seed=4)
    Xv, yv = _real_data(n=160, seed=5)
    kw = dict(max_depth=4, learning_rate=0.7, update=update,
              update_params={"momentum": 0.8}, random_state=0, sampler="uniform",
              subsample=0.7)
    model = BoostRegressor(n_estimators=60, early_stopping_rounds=3, **kw).fit(
        X, y, eval_set=[(Xv, yv)])
    best = model.best_iteration_
    assert len(model.evals_result_["valid_0"]["mse"]) < 60           # it did stop early
    fresh = BoostRegressor(n_estimators=best + 1, **kw).fit(X, y)
    assert model.n_trees_ == fresh.n_trees_
    np.testing.assert_array_equal(model.ensemble_.coef, fresh.ensemble_.coef)
    np.testing.assert_array_equal(model.predict(Xv), fresh.predict(Xv))
    recorded = model.evals_result_["valid_0"]["mse"][best]
    assert np.mean(0.5 * (model.predict(Xv) - yv) ** 2) == pytest.approx(recorded, rel=1e-9)


# -- parameters ----------------------------------------------------------------------------------
@pytest.mark.parametrize("update,params,match", [
    ("agbm", {"momentum": 0}, r"update rule 'agbm': momentum=0 is invalid; expected a number "
                              r"in \(0, 1\]"),
    ("agbm", {"momentum": -0.5}, "momentum=-0.5 is invalid"),
    ("agbm", {"momentum": 1.5}, r"momentum=1.5 is invalid; expected a number in \(0, 1\]"),
    ("agbm", {"momentum": True}, "momentum=True is invalid"),
    ("agbm", {"momentum": float("nan")}, "momentum=nan is invalid"),
    ("vagbm", {"momentum": "high"}, "update rule 'vagbm': momentum='high' is invalid"),
    ("agbmr", {"restart": "sometimes"}, "restart='sometimes' is invalid; expected 'adaptive' "
                                        "or a positive int"),
    ("agbmr", {"restart": 0}, "restart=0 is invalid"),
    ("agbmr", {"restart": 2.5}, "restart=2.5 is invalid"),
    ("agbmr", {"restart": True}, "restart=True is invalid"),
    ("agbmr", {"mu": 0}, r"update rule 'agbmr': mu=0 is invalid; expected a number in "
                         r"\(0, inf\)"),
    ("agbmr", {"mu": -1.0}, "mu=-1.0 is invalid"),
    ("agbmr", {"restart": 5, "mu": 0.1}, "restart=5 is invalid; expected None when mu is "
                                         "given"),
    ("agbmr", {"restart": "adaptive", "mu": 0.1}, "give restart or mu, not both"),
])
def test_bad_parameters_are_named(update, params, match):
    with pytest.raises(ValueError, match=match):
        create("update", update, params)


@pytest.mark.parametrize("update,expected", [("agbm", "momentum"),
                                             ("agbmr", "momentum, restart, mu"),
                                             ("vagbm", "momentum")])
def test_unknown_parameters_are_named(update, expected):
    with pytest.raises(PluginError, match=f"update '{update}'.*unknown parameter "
                                          f"gamma=0.5; expected one of: {expected}"):
        create("update", update, {"gamma": 0.5})
    X, y = _real_data(n=50)
    with pytest.raises(PluginError, match="unknown parameter gamma"):
        BoostRegressor(update=update, update_params={"gamma": 0.5}).fit(X, y)


# -- the context's tracked models ---------------------------------------------------------------
class _Body(UpdateRule):
    """Runs ``body(ctx, state)`` each iteration (``state`` made by ``start(ctx)``)."""

    name = "body"

    def __init__(self, body, start=lambda ctx: {}):
        self.body, self.start = body, start

    def begin(self, ctx):
        self.state = self.start(ctx)

    def step(self, ctx):
        self.body(ctx, self.state)


def test_track_combine_and_add_tree_to():
    X, y = _real_data()
    Xv, yv = _real_data(n=60, seed=2)
    seen = {}

    def start(ctx):
        return {"h": ctx.track("h")}

    def body(ctx, state):
        h, model = state["h"], ctx.model
        g, hess = ctx.gradients()
        tree = ctx.fit_tree(g, hess)
        out = ctx.tree_output(tree)
        n = ctx.ensemble.n_trees
        before_model, before_h = model.raw.copy(), h.raw.copy()
        index = ctx.add_tree(tree, 0.7, to=h)              # new tree, coefficient 0 in f
        assert index == n and model.coefficients[n] == 0.0 and h.coefficients[n] == 0.7
        np.testing.assert_array_equal(model.raw, before_model)
        np.testing.assert_allclose(h.raw, before_h + 0.7 * out)
        assert ctx.add_tree(tree, 0.1) == index           # same tree: coefficient only
        assert ctx.ensemble.n_trees == n + 1 and model.coefficients[n] == 0.1
        expect = 0.25 * model.raw + 0.5 * h.raw
        coef = 0.25 * model.coefficients + 0.5 * h.coefficients
        bias = 0.25 * model.bias + 0.5 * h.bias
        ctx.combine(model, [(0.25, model), (0.5, h)])
        np.testing.assert_allclose(model.raw, expect, rtol=1e-12)
        np.testing.assert_allclose(model.coefficients, coef, rtol=1e-12)
        assert model.bias == pytest.approx(bias, rel=1e-15)
        seen["names"] = (model.name, h.name)

    BoostRegressor(n_estimators=4, update=_Body(body, start), random_state=0).fit(
        X, y, eval_set=[(Xv, yv)])
    assert seen["names"] == ("model", "h")


def test_combine_makes_no_prediction_pass():
    X, y = _real_data()
    calls = []

    def body(ctx, state):
        g, hess = ctx.gradients()
        ctx.add_tree(ctx.fit_tree(g, hess), 0.3, to=state["h"])
        ens = ctx.ensemble
        real = ens.add_trees_binned
        ens.add_trees_binned = lambda *a, **k: calls.append(1) or real(*a, **k)
        try:
            ctx.combine(ctx.model, [(0.5, ctx.model), (0.5, state["h"])])
        finally:
            del ens.add_trees_binned

    BoostRegressor(n_estimators=3, update=_Body(body, lambda c: {"h": c.track("h")})).fit(
        X, y, eval_set=[(X[:40], y[:40])])
    assert calls == []


@pytest.mark.parametrize("body,error,match", [
    (lambda ctx, s: ctx.combine(object(), [(1.0, ctx.model)]), TypeError,
     "update rule 'body': combine got <object"),
    (lambda ctx, s: ctx.combine(ctx.model, [(1.0, "h")]), TypeError, "not a tracked model"),
    (lambda ctx, s: ctx.combine(ctx.model, [1.0]), TypeError, r"\(weight, tracked model\)"),
    (lambda ctx, s: ctx.combine(ctx.model, []), ValueError, "at least one term"),
    (lambda ctx, s: ctx.combine(ctx.model, [(math.inf, ctx.model)]), ValueError,
     "weight inf must be finite"),
    (lambda ctx, s: ctx.track("model"), ValueError, "track name 'model' is invalid"),
    (lambda ctx, s: [ctx.track("x"), ctx.track("x")], ValueError, "'x' is invalid or already"),
])
def test_misuse_of_tracked_models_is_named(body, error, match):
    X, y = _real_data(n=50)
    with pytest.raises(error, match=match):
        BoostRegressor(n_estimators=2, update=_Body(body)).fit(X, y)


def test_full_checks_catch_validation_scores_changed_behind_the_context():
    X, y = _real_data(n=80)

    def body(ctx, state):
        g, hess = ctx.gradients()
        ctx.add_tree(ctx.fit_tree(g, hess), 0.3)
        ctx.evals[0].raw[:] += 1e-3

    with pytest.raises(PluginError, match="update rule 'body' left the model inconsistent at "
                                          "iteration 0: validation set 'valid_0' scores"):
        BoostRegressor(n_estimators=2, update=_Body(body)).fit(X, y, eval_set=[(X, y)])


def test_the_plugin_guide_momentum_example_runs():
    """docs/plugins.md's tracked-model example works as written (scores exact: full checks)."""
    from pathlib import Path

    guide = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
    if not guide.exists():
        pytest.skip("docs/plugins.md is not next to the tests")
    text = guide.read_text()
    start = text.index("```python\nclass Momentum(UpdateRule):") + len("```python\n")
    namespace = {"UpdateRule": UpdateRule}
    exec(text[start:text.index("```", start)], namespace)
    X, y = _real_data()
    model = BoostRegressor(n_estimators=8, update=namespace["Momentum"](), random_state=0)
    model.fit(X, y, eval_set=[(X[:50], y[:50])])
    curve = model.evals_result_["train"]["mse"]
    assert curve[-1] < curve[0] and model.n_trees_ == 8
