"""Monotone constraints, interaction constraints and column sampling, in every tree kind and
with every sampler and update rule."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRegressor
from boostlib.engine.constraints import monotone_oblivious, pool_adjacent_violators
from boostlib.engine.trees import ObliviousTree

KINDS = [("symmetric", {}), ("depthwise", {}), ("lossguide", {"max_leaves": 12})]
GRID = np.linspace(-3.5, 3.5, 50)


def monotone_data(n=2000, seed=0):
    """y rises with x0, falls with x2; x1 and x3 are free (x0 has missing values)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[::11, 0] = np.nan
    y = (np.tanh(np.nan_to_num(X[:, 0])) * 2 + np.sin(2 * X[:, 1]) - 0.5 * X[:, 2]
         + X[:, 3] ** 2 * 0.3 + 0.8 * rng.normal(size=n))
    return X, y


def predictions_on_grid(predict, X, feature):
    """(50, n_rows) predictions of ``X`` with ``feature`` set to each grid value."""
    out = []
    for v in GRID:
        Z = X.copy()
        Z[:, feature] = v
        out.append(predict(Z))
    return np.array(out)


def assert_monotone(predict, X, constraints):
    for feature, sign in constraints.items():
        P = predictions_on_grid(predict, X, feature)
        steps = sign * np.diff(P, axis=0)
        assert np.all(steps >= 0), (feature, sign, steps.min())


@pytest.mark.parametrize("policy, extra", KINDS)
@pytest.mark.parametrize("sampler", [None, "uniform", "goss", "mvs"])
@pytest.mark.parametrize("update", ["sgb", "sglb", "agbm", "agbmr"])
def test_predictions_are_monotone_for_every_kind_sampler_and_rule(policy, extra, sampler,
                                                                 update):
    X, y = monotone_data()
    model = BoostRegressor(grow_policy=policy, monotonic_cst=[1, 0, -1, 0], n_estimators=25,
                           max_depth=4, sampler=sampler,
                           subsample=1.0 if sampler is None else 0.5, update=update,
                           random_state=0, **extra).fit(X, y)
    rows = np.random.default_rng(1).normal(size=(1000, 4))
    rows[::13, 1] = np.nan
    assert_monotone(model.predict, rows, {0: 1, 2: -1})


@pytest.mark.parametrize("policy, extra", KINDS)
def test_correct_constraints_do_not_hurt_on_monotone_data(policy, extra):
    X, y = monotone_data(3000, 0)
    Xt, yt = monotone_data(3000, 1)
    losses = []
    for cst in (None, [1, 0, -1, 0]):
        model = BoostRegressor(grow_policy=policy, monotonic_cst=cst, n_estimators=100,
                               random_state=0, **extra).fit(X, y)
        losses.append(np.mean((model.predict(Xt) - yt) ** 2))
    assert losses[1] <= losses[0] * 1.01


@pytest.mark.parametrize("policy, extra", KINDS)
def test_classifier_raw_scores_are_monotone_per_class(policy, extra):
    X, y = monotone_data()
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    binary = BoostClassifier(grow_policy=policy, monotonic_cst={0: 1, 2: -1},
                             n_estimators=20, random_state=0, **extra).fit(X, y > 0)
    assert_monotone(lambda Z: binary.predict_proba(Z)[:, 1], X[:500], {0: 1, 2: -1})
    multi = BoostClassifier(grow_policy=policy, monotonic_cst=[1, 0, 0, 0], n_estimators=15,
                            random_state=0, **extra).fit(X, labels)
    for k in range(3):
        assert_monotone(lambda Z: multi.decision_function(Z)[:, k], X[:300], {0: 1})


def test_monotone_constraints_by_feature_name_with_categoricals():
    pd = importorskip("pandas")
    X, y = monotone_data()
    frame = pd.DataFrame(X, columns=["up", "free", "down", "sq"])
    frame["cat"] = pd.Categorical(np.where(y > 0, "a", "b"))
    model = BoostRegressor(grow_policy="depthwise", monotonic_cst={"up": 1, "down": -1},
                           n_estimators=20, random_state=0).fit(frame, y)
    base = frame.iloc[:300].copy()
    for name, sign in (("up", 1), ("down", -1)):
        P = []
        for v in GRID:
            Z = base.copy()
            Z[name] = v
            P.append(model.predict(Z))
        assert np.all(sign * np.diff(np.array(P), axis=0) >= 0)


@pytest.mark.parametrize("params, match", [
    ({"monotonic_cst": [1, 0]}, "one of -1, 0, 1 per feature"),
    ({"monotonic_cst": [2, 0, 0, 0]}, "2 for feature 0 is invalid"),
    ({"monotonic_cst": {"x": 1}}, "no feature names"),
    ({"monotonic_cst": {7: 1}}, r"not a feature name or a column index in \[0, 4\)"),
    ({"interaction_constraints": [[0, 1]], "grow_policy": "symmetric"},
     "interaction_constraints need grow_policy"),
    ({"interaction_constraints": [[0, 9]], "grow_policy": "depthwise"}, "9"),
    ({"interaction_constraints": "01", "grow_policy": "depthwise"}, "list of lists"),
    ({"colsample_bytree": 0.0}, "colsample_bytree=0.0"),
    ({"colsample_bynode": 1.5}, "colsample_bynode=1.5"),
])
def test_bad_constraints_are_named(params, match):
    X, y = monotone_data(200)
    with pytest.raises(ValueError, match=match):
        BoostRegressor(n_estimators=2, **params).fit(X, y)


def test_categorical_features_cannot_be_monotone():
    pd = importorskip("pandas")
    frame = pd.DataFrame({"a": np.arange(100.0), "c": pd.Categorical(["x", "y"] * 50)})
    with pytest.raises(ValueError, match="feature 1 is categorical"):
        BoostRegressor(monotonic_cst=[0, 1], n_estimators=2).fit(frame, np.arange(100.0))


def _paths(tree):
    out = []

    def walk(k, path):
        if tree.left[k] < 0:
            return
        path = path | {int(tree.feature[k])}
        out.append(path)
        walk(tree.left[k], path)
        walk(tree.right[k], path)
    walk(0, frozenset())
    return out


@pytest.mark.parametrize("policy, extra", KINDS[1:])
def test_interaction_constraints_hold_on_every_path(policy, extra):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5))
    y = X[:, 0] * X[:, 1] + X[:, 2] * X[:, 3] + X[:, 4] + 0.1 * rng.normal(size=3000)
    model = BoostRegressor(grow_policy=policy, interaction_constraints=[[0, 1], [2, 3]],
                           n_estimators=30, random_state=0, **extra).fit(X, y)
    allowed = [{0, 1}, {2, 3}, {4}]
    used = set()
    for tree in model.ensemble_.scalar_trees():
        for path in _paths(tree):
            used |= path
            assert any(path <= g for g in allowed), path
    assert used == {0, 1, 2, 3, 4}


@pytest.mark.parametrize("policy, extra", KINDS)
def test_column_sampling_is_deterministic_and_draws_the_fraction(policy, extra):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 10))
    y = X @ rng.normal(size=10) + 0.1 * rng.normal(size=2000)
    fits = [BoostRegressor(grow_policy=policy, colsample_bytree=0.3, colsample_bynode=0.7,
                           n_estimators=15, random_state=4, n_jobs=n, **extra).fit(X, y)
            for n in (1, 2)]
    assert np.array_equal(fits[0].predict(X), fits[1].predict(X))
    for tree in fits[0].ensemble_.scalar_trees():
        split = tree.left >= 0 if policy != "symmetric" else np.ones(tree.feature.size, bool)
        assert len(set(tree.feature[split].tolist())) <= 3
    other = BoostRegressor(grow_policy=policy, colsample_bytree=0.3, n_estimators=15,
                           random_state=5, **extra).fit(X, y)
    assert not np.array_equal(other.predict(X), fits[0].predict(X))


# -- the projection of symmetric trees ------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 30),
                  elements=st.floats(-10, 10, allow_nan=False)),
       st.integers(0, 2 ** 31 - 1))
def test_pool_adjacent_violators_is_the_isotonic_regression(values, seed):
    sklearn_isotonic = importorskip("sklearn.isotonic")
    weights = np.random.default_rng(seed).uniform(0.1, 5.0, values.size)
    fitted = pool_adjacent_violators(values, weights)
    expected = sklearn_isotonic.IsotonicRegression().fit_transform(
        np.arange(values.size), values, sample_weight=weights)
    np.testing.assert_allclose(fitted, expected, rtol=1e-9, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2 ** 31 - 1))
def test_symmetric_projection_gives_monotone_trees(depth, seed):
    rng = np.random.default_rng(seed)
    n_features = 3
    tree = ObliviousTree(feature=rng.integers(0, n_features, depth).astype(np.int32),
                         bin=rng.integers(0, 20, depth).astype(np.int32),
                         nan_right=np.zeros(depth, np.uint8), gain=np.ones(depth),
                         value=rng.normal(size=2 ** depth))
    monotone = np.array([1, -1, 0], dtype=np.int8)
    monotone_oblivious(tree, rng.uniform(0.1, 3.0, 2 ** depth), monotone)
    # a row's leaf as its value of each feature grows
    for f, sign in ((0, 1), (1, -1)):
        levels = np.flatnonzero(tree.feature == f)
        for base in range(2 ** depth):
            values = []
            for x in range(-1, 21):
                leaf = base
                for level in levels:
                    leaf = leaf & ~(1 << level) | (int(x > tree.bin[level]) << level)
                values.append(tree.value[leaf])
            assert np.all(sign * np.diff(values) >= 0)
