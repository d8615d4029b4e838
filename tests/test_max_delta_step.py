"""The cap on leaf values (``max_delta_step``): the log-link losses' safe steps.

Expected values come from the definition (a leaf is the Newton step ``-G/(H+l2)`` clipped
to ``[-c, c]``), not from the code under test."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from boostlib import BoostRegressor, Dataset, Model, train
from boostlib.api import Loss
from boostlib.engine.leaves import leaf_values
from boostlib.engine.trees import GROW_POLICIES, TreeGroup


def _leaves(model):
    """Every leaf value of every scalar tree of a model."""
    out = []
    for term in model.ensemble.trees:
        for tree in (term.trees if isinstance(term, TreeGroup) else [term]):
            left = getattr(tree, "left", None)
            value = np.asarray(tree.value)
            out.append(value if left is None else value[np.asarray(left) < 0])
    return np.concatenate([v.ravel() for v in out])


def _counts(seed, n=600):
    """Counts whose mean spans four orders of magnitude, a third of them structural zeros:
    Newton steps far beyond 1 in the first trees."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    mu = np.exp(3.0 * X[:, 0])
    y = rng.poisson(mu).astype(float)
    y[X[:, 1] > 0.5] = 0.0
    return X, y


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), cap=st.floats(0.05, 2.0),
       policy=st.sampled_from(GROW_POLICIES),
       loss=st.sampled_from(["poisson", "tweedie", "gamma"]))
def test_leaf_values_are_bounded_by_the_cap(seed, cap, policy, loss):
    X, y = _counts(seed)
    if loss == "gamma":
        y = y + 0.5
    model = train(dict(loss=loss, n_estimators=5, max_depth=4, grow_policy=policy,
                       max_delta_step=cap, random_state=0), Dataset(X, y))
    assert np.all(np.abs(_leaves(model)) <= cap)


@settings(max_examples=40, deadline=None)
@given(G=st.floats(-1e6, 1e6), H=st.floats(0.0, 1e3), l2=st.floats(0.0, 10.0),
       cap=st.floats(0.0, 5.0))
def test_the_leaf_formula_is_the_clipped_newton_step(G, H, l2, cap):
    value = leaf_values(np.array([G]), np.array([H]), np.array([3.0]), l2,
                        max_delta_step=cap)[0]
    newton = -G / (H + l2) if H + l2 > 0 else 0.0
    expected = newton if cap == 0 else min(max(newton, -cap), cap)
    assert value == expected


def test_a_zero_count_leaf_takes_a_finite_bounded_step():
    """Rows whose mean is far below their counts (a Newton step of thousands), and rows of
    zero counts under a large mean: with the default cap of the log-link losses each tree
    moves a raw score by at most learning_rate * 1.5, and every prediction is finite."""
    X = np.repeat(np.arange(4.0), 50)[:, None]
    y = np.where(X[:, 0] == 0, 0.0, np.where(X[:, 0] == 1, 1e4, 1.0))
    init = np.full(y.size, np.log(1e-3))          # offsets: a mean of 0.001 everywhere
    init[X[:, 0] == 0] = np.log(1e3)              # zero counts, mean 1000
    params = dict(loss="poisson", n_estimators=1, max_depth=2, learning_rate=1.0,
                  grow_policy="depthwise", l2_regularization=0.0, random_state=0)
    capped = train(params, Dataset(X, y, init_score=init))
    uncapped = train({**params, "max_delta_step": 0.0}, Dataset(X, y, init_score=init))
    step_capped = capped.predict(X, raw=True) - capped.ensemble.bias_array[0]
    step_uncapped = uncapped.predict(X, raw=True) - uncapped.ensemble.bias_array[0]
    assert np.all(np.isfinite(step_capped))
    assert np.max(np.abs(step_capped)) == pytest.approx(1.5)
    # the uncapped Newton step of the large counts: sum(y - mu) / sum(mu) = 1e7 - 1
    assert np.max(step_uncapped) == pytest.approx(1e4 / 1e-3 - 1.0, rel=1e-6)
    np.testing.assert_allclose(step_capped[X[:, 0] == 1], 1.5)
    # zero counts: -G/H = -sum(mu)/sum(mu) = -1, inside the cap (with l2 = 0)
    np.testing.assert_allclose(step_capped[X[:, 0] == 0], -1.0)
    # Tweedie's zero-count step is -1/(2-p) = -10 at p = 1.9: the cap holds it at -1.5
    tweedie = train({**params, "loss": "tweedie", "loss_params": {"variance_power": 1.9}},
                    Dataset(X, y, init_score=init))
    step = tweedie.predict(X, raw=True) - tweedie.ensemble.bias_array[0]
    np.testing.assert_allclose(step[X[:, 0] == 0], -1.5)


@pytest.mark.parametrize("policy", GROW_POLICIES)
def test_a_cap_no_leaf_reaches_changes_nothing(policy):
    """cap=0 (no cap) and a cap larger than every leaf give the same model bit for bit, and
    a loss without a cap of its own (mse) is unchanged by the parameter's default."""
    X, y = _counts(1)
    base = dict(loss="poisson", n_estimators=10, grow_policy=policy, random_state=0)
    a = train({**base, "max_delta_step": 0.0}, Dataset(X, y)).predict(X, raw=True)
    b = train({**base, "max_delta_step": 1e300}, Dataset(X, y)).predict(X, raw=True)
    np.testing.assert_array_equal(a, b)
    base["loss"] = "mse"
    a = train({**base, "max_delta_step": 0.0}, Dataset(X, y)).predict(X)
    b = train(base, Dataset(X, y)).predict(X)
    np.testing.assert_array_equal(a, b)


def test_the_default_is_the_losses_and_can_be_switched_off():
    X, y = _counts(2)
    base = dict(loss="poisson", n_estimators=5, max_depth=3, random_state=0)
    default = train(base, Dataset(X, y))
    explicit = train({**base, "max_delta_step": 1.5}, Dataset(X, y))
    off = train({**base, "max_delta_step": 0.0}, Dataset(X, y))
    np.testing.assert_array_equal(default.predict(X, raw=True), explicit.predict(X, raw=True))
    assert np.max(np.abs(_leaves(default))) <= 1.5
    assert np.max(np.abs(_leaves(off))) > 1.5       # this data's first steps exceed it


def test_vector_leaves_are_capped_per_output():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5).astype(int)
    model = train(dict(loss="multiclass", n_estimators=4, max_delta_step=0.05,
                       multi_strategy="multi_output_tree", random_state=0),
                  Dataset(X, y.astype(float)))
    leaves = _leaves(model)
    assert np.all(np.abs(leaves) <= 0.05) and np.any(np.abs(leaves) == 0.05)


def test_model_files_round_trip_the_parameter(tmp_path):
    X, y = _counts(4)
    est = BoostRegressor(loss="poisson", n_estimators=5, max_delta_step=0.3,
                         random_state=0).fit(X, y)
    path = tmp_path / "m.json"
    est.model_.save(path)
    loaded = Model.load(path)
    assert loaded.params["max_delta_step"] == 0.3
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    refit = BoostRegressor(**{k: v for k, v in loaded.params.items()
                              if k in BoostRegressor().get_params()}).fit(X, y)
    np.testing.assert_array_equal(refit.predict(X), est.predict(X))


@pytest.mark.parametrize("value", [-0.1, float("nan"), float("inf"), "0.7", True])
def test_bad_values_are_named(value):
    X, y = _counts(5, n=50)
    with pytest.raises((ValueError, TypeError), match="max_delta_step"):
        train(dict(loss="poisson", n_estimators=1, max_delta_step=value), Dataset(X, y))


def test_a_loss_declaring_a_bad_cap_is_named():
    class Bad(Loss):
        name = "bad_cap"
        max_delta_step = -1.0

        def gradient_hessian(self, y, raw, gradient, hessian, n_threads=1):
            gradient[...] = raw - y
            hessian[...] = 1.0

        def loss(self, y, raw):
            return 0.5 * (raw - y) ** 2

    X, y = _counts(6, n=50)
    with pytest.raises(ValueError, match="'bad_cap' declares max_delta_step=-1.0"):
        train(dict(loss=Bad(), n_estimators=1), Dataset(X, y))
