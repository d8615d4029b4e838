"""``prune_features``: leaf-wise trees that stop searching, in a leaf's subtree, the features
without a split of positive gain in that leaf (LightGBM's rule). Checked against the rows
themselves (``reference.kernels``), in both growth loops, and through the estimators."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from boostlib import BoostClassifier, BoostRegressor, load_model
from boostlib.engine.grower import GrowParams, TreeGrower
from boostlib.engine.trees import compiled
from reference.kernels import _row_candidates
from reference.strategies import SLOW_SETTINGS, make_binned


def grow(data, rows, g, h, params, enabled=True, threads=1):
    grower = TreeGrower(data.X_binned, data.nbnm, data.missing_bin, "lossguide", params,
                        n_threads=threads, bundle=False)
    old = compiled.ENABLED
    compiled.ENABLED = enabled
    try:
        return grower.grow(rows, g, h)
    finally:
        compiled.ENABLED = old


def node_rows(tree, node_of_row, n_fit):
    """Each node's fitted positions, from the leaves the rows reached."""
    members = {k: set(np.flatnonzero(node_of_row == k)) for k in range(tree.left.size)}
    for k in range(tree.left.size - 1, -1, -1):     # children come after their parents
        if tree.left[k] >= 0:
            members[k] = members[tree.left[k]] | members[tree.right[k]]
    return {k: np.isin(np.arange(n_fit), sorted(v)) for k, v in members.items()}


def xor_data():
    """Feature 0 gains nothing at the root (its effect flips sign across feature 1's
    sides) and much in both of the root's children."""
    f0 = np.tile([0, 1], 40)
    f1 = np.repeat([0, 1], 40)
    g = np.where(f1 == 0, np.where(f0 == 0, 1.0, -1.0), np.where(f0 == 0, -1.0, 1.0) + 3.0)
    return make_binned(np.column_stack([f0, f1]).astype(np.uint8), [2, 2], 255), g


@pytest.mark.parametrize("enabled", [True, False])
def test_a_feature_without_gain_is_not_searched_below(enabled):
    data, g = xor_data()
    rows = np.arange(80, dtype=np.int32)
    exact, _ = grow(data, rows, g, np.ones(80), GrowParams(max_depth=3, max_leaves=4),
                    enabled)
    pruned, _ = grow(data, rows, g, np.ones(80),
                     GrowParams(max_depth=3, max_leaves=4, prune_features=True), enabled)
    assert exact.feature[0] == 1 and set(exact.feature[1:3]) == {0}
    assert pruned.feature[0] == 1 and pruned.n_leaves() == 2    # nothing left to split on


def interaction_data(seed):
    """Binned rows whose gradient flips with the product of two features' sides, with
    missing values and noise: features lose and regain gain along a tree's paths."""
    rng = np.random.default_rng(seed)
    n, n_bins = int(rng.integers(20, 150)), [int(rng.integers(1, 6)) for _ in range(4)]
    X = np.column_stack([rng.integers(0, nb, n) for nb in n_bins]).astype(np.uint8)
    X[rng.random((n, 4)) < 0.05] = 255
    side = (X[:, :2] >= np.array(n_bins[:2]) // 2).astype(float) * 2 - 1
    g = side[:, 0] * side[:, 1] + 0.1 * rng.normal(size=n)
    h = rng.uniform(0.2, 1.0, n) if rng.random() < 0.5 else np.ones(n)
    return make_binned(X, n_bins, 255), g, h


@SLOW_SETTINGS
@given(seed=st.integers(0, 2**32 - 1), max_leaves=st.integers(2, 12),
       l2=st.sampled_from([1e-3, 1.0, 10.0]), msl=st.sampled_from([1, 3]),
       threads=st.sampled_from([1, 2]))
def test_every_split_feature_gained_at_every_ancestor(seed, max_leaves, l2, msl, threads):
    """The rule, from the rows: a node's split feature had a valid candidate of positive
    gain at each of the node's ancestors."""
    data, g, h = interaction_data(seed)
    n = g.size
    params = GrowParams(max_depth=6, max_leaves=max_leaves, l2_regularization=l2,
                        min_samples_leaf=msl, prune_features=True)
    rows = np.arange(n, dtype=np.int32)
    tree, node = grow(data, rows, g, h, params, threads=threads)
    members = node_rows(tree, node, n)
    gained = {}
    for k in np.flatnonzero(tree.left >= 0):
        cands = _row_candidates(data.X_binned, members[k], g, h, data.nbnm, data.missing_bin,
                                l2, msl, params.min_child_weight)
        gained[k] = {c[0] for c in cands if c[3] and c[4] > 0}
    parent = {int(c): int(k) for k in np.flatnonzero(tree.left >= 0)
              for c in (tree.left[k], tree.right[k])}
    for k in np.flatnonzero(tree.left >= 0):
        a = parent.get(int(k))
        while a is not None:
            assert tree.feature[k] in gained[a], (k, a)
            a = parent.get(a)


def data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    X[::7, 2] = np.nan
    y = X[:, 0] + np.sin(3 * X[:, 1]) + np.nan_to_num(X[:, 2]) ** 2 + 0.3 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("sampler", ["uniform", "goss", "mvs"])
@pytest.mark.parametrize("update", ["sgb", "sglb", "agbm", "agbmr"])
def test_every_sampler_and_rule_trains_with_pruning(sampler, update):
    X, y = data()
    Xt, yt = data(1000, 1)
    model = BoostRegressor(grow_policy="lossguide", max_leaves=15, max_depth=10,
                           prune_features=True, n_estimators=40, sampler=sampler,
                           subsample=0.5, update=update, random_state=0).fit(X, y)
    assert np.mean((model.predict(Xt) - yt) ** 2) < 0.5 * np.var(yt)
    again = BoostRegressor(**model.get_params()).set_params(n_jobs=1).fit(X, y)
    assert np.array_equal(again.predict(Xt), model.set_params(n_jobs=2).predict(Xt))


@pytest.mark.parametrize("extra", [
    {"monotonic_cst": [1, 0, 0, 0, 0, 0, 0, 0]},        # the Python loop
    {"colsample_bynode": 0.5},
    {"interaction_constraints": [[0, 1], [2, 3, 4, 5, 6, 7]]},
    {"random_strength": 0.5},
])
def test_pruning_with_constraints_and_column_sampling(extra):
    """Features kept out of a node by the column rules are not pruned there: a pruned
    model with rules still trains, and is deterministic."""
    X, y = data()
    params = dict(grow_policy="lossguide", max_leaves=15, max_depth=10, n_estimators=30,
                  random_state=0, prune_features=True, **extra)
    a = BoostRegressor(**params).fit(X, y)
    b = BoostRegressor(**params, n_jobs=1).fit(X, y)
    assert np.array_equal(a.predict(X), b.predict(X))
    assert a.score(X, y) > 0.8


def test_pruning_fewer_leaves_on_sparse_one_hot_data(tmp_path):
    """On one-hot data many features lose their gain early: pruned trees have no more
    leaves, and the parameter survives a model file."""
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 40, size=(2000, 4))
    X = np.zeros((2000, 160))
    for j in range(4):
        X[np.arange(2000), 40 * j + codes[:, j]] = 1.0
    y = ((codes[:, 0] % 3 == 0) ^ (codes[:, 1] < 5)).astype(int)
    params = dict(grow_policy="lossguide", max_leaves=31, max_depth=20, n_estimators=20,
                  min_samples_leaf=20, random_state=0)
    exact = BoostClassifier(**params).fit(X, y)
    pruned = BoostClassifier(**params, prune_features=True).fit(X, y)
    leaves = [np.mean([t.n_leaves() for t in m.model_.ensemble.scalar_trees()])
              for m in (exact, pruned)]
    assert leaves[1] <= leaves[0]
    pruned.save_model(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert loaded.get_params()["prune_features"] is True
    assert np.array_equal(loaded.predict_proba(X), pruned.predict_proba(X))


@pytest.mark.parametrize("params, match", [
    ({"grow_policy": "depthwise", "prune_features": True}, "prune_features=True is for"),
    ({"grow_policy": "symmetric", "prune_features": True}, "prune_features=True is for"),
    ({"grow_policy": "lossguide", "prune_features": "yes"}, "prune_features='yes'"),
    ({"grow_policy": "lossguide", "prune_features": 1}, "prune_features=1"),
])
def test_bad_prune_features_is_named(params, match):
    X, y = data(100)
    with pytest.raises(ValueError, match=match):
        BoostRegressor(n_estimators=2, **params).fit(X, y)
