"""The context update rules work with (the contract SGLB and AGBM build on)."""
import numpy as np
import pytest

from boostlib import BoostRegressor
from boostlib.api import UpdateRule


class Recorder(UpdateRule):
    """Runs ``body(ctx)`` each iteration and keeps whatever it returns."""

    name = "recorder"

    def __init__(self, body):
        self.body = body
        self.log = []

    def step(self, ctx):
        self.log.append(self.body(ctx))


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n)
    return X, y


def test_sgb_equals_manual_context_loop():
    X, y = _data()

    def body(ctx):
        g, h = ctx.gradients()
        tree = ctx.fit_tree(g, h)
        ctx.add_tree(tree, ctx.learning_rate)

    a = BoostRegressor(n_estimators=10, random_state=0).fit(X, y)
    b = BoostRegressor(n_estimators=10, random_state=0, update=Recorder(body)).fit(X, y)
    assert np.array_equal(a.predict(X), b.predict(X))


def test_tree_output_and_leaf_values_are_newton_steps():
    X, y = _data()
    lam = 2.0

    def body(ctx):
        g, h = ctx.gradients()
        tree = ctx.fit_tree(g, h)
        out = ctx.tree_output(tree)
        # every row's value is -G/(H+lambda) over the rows sharing its value
        for v in np.unique(out):
            rows = out == v
            assert v == pytest.approx(-g[rows].sum() / (h[rows].sum() + lam), rel=1e-9)
        before = ctx.raw.copy()
        ctx.add_tree(tree, 0.3)
        assert np.allclose(ctx.raw, before + 0.3 * out)

    for policy in ("symmetric", "depthwise"):
        BoostRegressor(n_estimators=3, l2_regularization=lam, grow_policy=policy,
                       update=Recorder(body)).fit(X, y)


def test_split_gradient_decides_structure_only():
    X, y = _data()

    def body(ctx):
        g, h = ctx.gradients()
        # a split gradient that only depends on feature 3: the tree must split on it,
        # while leaf values stay Newton steps of the true gradient.
        sg = np.where(X[:, 3] > 0, 1.0, -1.0) * 100
        tree = ctx.fit_tree(g, h, split_gradient=sg)
        assert set(tree.feature[tree.feature >= 0]) == {3}
        out = ctx.tree_output(tree)
        for v in np.unique(out):
            rows = out == v
            assert v == pytest.approx(-g[rows].sum() / (h[rows].sum() + 1.0), rel=1e-9)
        return tree

    BoostRegressor(n_estimators=1, max_depth=2, update=Recorder(body)).fit(X, y)


def test_leaf_noise_scale_matches_formula():
    n = 200
    X = np.zeros((n, 1))
    y = np.zeros(n)
    scale, lam = 3.0, 1.0

    def body(ctx):
        g, h = ctx.gradients(np.zeros(n))   # all-zero gradients: one leaf, pure noise
        tree = ctx.fit_tree(g, h, leaf_noise_scale=scale)
        assert tree.n_leaves() == 1
        return float(tree.value[0])

    rule = Recorder(body)
    BoostRegressor(n_estimators=400, l2_regularization=lam, update=rule,
                   random_state=0).fit(X, y)
    values = np.array(rule.log)
    expected = scale / np.sqrt(n + lam)
    # 400 draws: the sample std is within 12% of sigma with overwhelming probability
    assert values.std(ddof=1) == pytest.approx(expected, rel=0.12)
    assert abs(values.mean()) < 4 * expected / np.sqrt(values.size)


def test_scale_model_scales_bias_coefficients_and_raw():
    X, y = _data()

    def body(ctx):
        g, h = ctx.gradients()
        ctx.add_tree(ctx.fit_tree(g, h), ctx.learning_rate)
        before = ctx.raw.copy()
        ctx.scale_model(0.9)
        assert np.allclose(ctx.raw, 0.9 * before)

    m = BoostRegressor(n_estimators=5, update=Recorder(body), random_state=0).fit(X, y)
    assert np.allclose(m.ensemble_.coef, [0.1 * 0.9 ** (5 - k) for k in range(5)])


def test_recorded_training_loss_is_the_loss_after_each_iteration():
    """The training curve is recorded lazily (no copy of the scores): whatever a rule does to
    the scores in the next iteration before (or without) computing derivatives at the model,
    each entry is the loss of the model after its iteration."""
    X, y = _data()

    def body(ctx):
        case = ctx.iteration % 3
        if case == 1:
            ctx.scale_model(0.95)                           # scaling changes the scores first
        if case == 0:
            g, h = ctx.gradients()                          # at the model: with its loss
        else:
            g, h = ctx.gradients(np.zeros(ctx.n_rows))      # elsewhere: no loss
        ctx.add_tree(ctx.fit_tree(g, h), ctx.learning_rate)  # (case 2: adding a tree does)
        if ctx.iteration % 4 == 0:
            t = ctx.fit_tree(g, h)
            ctx.add_tree(t, 0.05)
            ctx.add_tree(t, -0.02)                          # same tree, new coefficient
        return 0.5 * float(np.mean((y - ctx.raw) ** 2))     # mse: the loss after this iteration

    rule = Recorder(body)
    m = BoostRegressor(n_estimators=7, update=rule, random_state=0).fit(X, y)
    curve = m.evals_result_["train"]["mse"]
    assert len(curve) == 7
    assert np.allclose(curve, rule.log, rtol=1e-12)
    assert curve[-1] == pytest.approx(0.5 * np.mean((y - m.predict(X)) ** 2), rel=1e-12)


def test_random_strength_changes_structure_and_is_seeded():
    X, y = _data(n=500)

    def feats(rs, seed):
        m = BoostRegressor(n_estimators=5, random_strength=rs, random_state=seed).fit(X, y)
        return [tuple(t.feature) for t in m.ensemble_.trees]

    assert feats(0.0, 1) == feats(0.0, 2)
    assert feats(50.0, 1) == feats(50.0, 1)
    assert feats(50.0, 1) != feats(50.0, 2)


def test_named_streams_are_independent_and_reproducible():
    X, y = _data()
    draws = {}

    def body(ctx):
        draws.setdefault("a", ctx.rng("sampler").random())
        draws.setdefault("b", ctx.rng("leaf_noise").random())

    BoostRegressor(n_estimators=1, update=Recorder(body), random_state=5).fit(X, y)
    first = dict(draws)
    draws.clear()
    BoostRegressor(n_estimators=1, update=Recorder(body), random_state=5).fit(X, y)
    assert draws == first and first["a"] != first["b"]


@pytest.mark.parametrize("update", ["sgb", "agbm", "sglb"])
def test_loss_taken_with_the_next_derivatives_changes_nothing(update, monkeypatch):
    """LogLoss's gradient_hessian_loss gives the recorded training loss and the next
    iteration's derivatives in one pass. The models and curves are those of the separate
    calls, bit for bit, with sample weights; an update rule that takes derivatives at other
    scores (AGBM) makes the context stop taking them with the loss."""
    from boostlib import BoostClassifier
    from boostlib.engine import context
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 5))
    y = (X[:, 0] + rng.normal(size=500) > 0).astype(int)
    w = rng.uniform(0.5, 2.0, 500)
    taken = []
    real = context.BoostingContext._loss_and_derivatives

    def spy(self):
        taken.append(self.iteration)
        return real(self)

    def fit():
        return BoostClassifier(n_estimators=12, update=update, random_state=0).fit(
            X, y, sample_weight=w, eval_set=[(X[:100], y[:100])])

    monkeypatch.setattr(context.BoostingContext, "_loss_and_derivatives", spy)
    fused = fit()
    assert len(taken) == (12 if update != "agbm" else 1)   # after every iteration
    monkeypatch.setattr(context.checks, "fuses_loss", lambda loss: False)
    taken.clear()
    apart = fit()
    assert taken == []
    np.testing.assert_array_equal(fused.decision_function(X), apart.decision_function(X))
    assert fused.evals_result_ == apart.evals_result_
