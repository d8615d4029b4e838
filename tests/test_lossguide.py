"""Leaf-wise (``grow_policy="lossguide"``) trees: best-first growth, its limits, and every
sampler, update rule, output count, input kind and model file with it."""
from __future__ import annotations

import numpy as np
import pytest

from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRegressor, load_model
from boostlib._kernels import _partition
from boostlib.engine.trees.depthwise import tree_depth


def data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[::7, 2] = np.nan
    y = X[:, 0] + np.sin(3 * X[:, 1]) + np.nan_to_num(X[:, 2]) ** 2 + 0.3 * rng.normal(size=n)
    return X, y


def split_order(tree):
    """The nodes in the order they were split: split ``t`` made nodes 2t+1 and 2t+2."""
    split = np.flatnonzero(tree.left >= 0)
    return split[np.argsort(tree.left[split])]


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_enough_leaves_give_the_depthwise_tree(depth):
    """With 2**depth leaves allowed, best-first growth splits every node the level-wise
    growth splits, on the same histograms: the same model, bit for bit."""
    X, y = data()
    a = BoostRegressor(grow_policy="depthwise", max_depth=depth, n_estimators=20,
                       random_state=0).fit(X, y)
    b = BoostRegressor(grow_policy="lossguide", max_depth=depth, max_leaves=2 ** depth,
                       n_estimators=20, random_state=0).fit(X, y)
    assert np.array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("max_leaves", [2, 3, 7, 31])
def test_leaves_split_best_first(max_leaves):
    X, y = data()
    model = BoostRegressor(grow_policy="lossguide", max_leaves=max_leaves, max_depth=30,
                           n_estimators=3, random_state=0).fit(X, y)
    for tree in model.ensemble_.scalar_trees():
        assert tree.n_leaves() == max_leaves
        order = split_order(tree)
        for t, k in enumerate(order):
            assert tree.left[k] == 2 * t + 1 and tree.right[k] == 2 * t + 2
            # every node split later that was already a leaf at step t gains no more
            later = order[t + 1:]
            available = later[later < 2 * t + 1]
            assert np.all(tree.gain[available] <= tree.gain[k])


def test_fewer_leaves_give_a_prefix_of_the_splits():
    """Best-first growth is one deterministic sequence of splits: stopping it one leaf
    earlier gives the same tree without its last split."""
    X, y = data()
    small, big = [BoostRegressor(grow_policy="lossguide", max_leaves=n, max_depth=30,
                                 n_estimators=1, random_state=0).fit(X, y).ensemble_.trees[0]
                  for n in (12, 13)]
    k = small.feature.size
    split = np.flatnonzero(small.left >= 0)
    assert split.size == 11 and big.feature.size == k + 2
    for name in ("feature", "bin", "nan_right", "left", "right"):
        assert np.array_equal(getattr(small, name)[split], getattr(big, name)[split])
    last = split_order(big)[-1]
    assert small.left[last] < 0 <= big.left[last]


def test_max_depth_caps_every_leaf():
    X, y = data()
    model = BoostRegressor(grow_policy="lossguide", max_leaves=40, max_depth=3,
                           n_estimators=5).fit(X, y)
    for tree in model.ensemble_.scalar_trees():
        assert tree_depth(tree) <= 3 and tree.n_leaves() <= 8


def test_min_samples_leaf_stops_growth():
    X, y = data(200)
    model = BoostRegressor(grow_policy="lossguide", max_leaves=64, max_depth=30,
                           min_samples_leaf=40, n_estimators=2).fit(X, y)
    for tree in model.ensemble_.scalar_trees():
        assert 2 <= tree.n_leaves() <= 5


@pytest.mark.parametrize("sampler, params", [("uniform", None), ("goss", None),
                                             ("mvs", None), ("mvs", {"leaf_values": "all"})])
@pytest.mark.parametrize("update", ["sgb", "sglb", "agbm", "agbmr"])
def test_every_sampler_and_rule_trains_leafwise_trees(sampler, params, update):
    X, y = data()
    Xt, yt = data(1000, 1)
    model = BoostRegressor(grow_policy="lossguide", max_leaves=15, max_depth=10,
                           n_estimators=40, sampler=sampler, subsample=0.5,
                           sampler_params=params, update=update, random_state=0).fit(X, y)
    mse = np.mean((model.predict(Xt) - yt) ** 2)
    assert mse < 0.5 * np.var(yt)
    again = BoostRegressor(**model.get_params()).set_params(n_jobs=1).fit(X, y)
    assert np.array_equal(again.predict(Xt), model.set_params(n_jobs=2).predict(Xt))


def test_multiclass_categorical_and_model_files(tmp_path):
    pd = importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 2000
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                          "c": pd.Categorical(rng.choice(list("pqrstu"), n))})
    y = (frame["a"] > 0).astype(int) + (frame["c"].isin(["p", "q"])).astype(int)
    clf = BoostClassifier(grow_policy="lossguide", max_leaves=10, max_depth=8,
                          n_estimators=30, random_state=0).fit(frame, y)
    assert clf.score(frame, y) > 0.9
    assert any(t.cat_sets.shape[0] for g in clf.ensemble_.trees for t in g.trees)
    clf.save_model(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert loaded.get_params()["grow_policy"] == "lossguide"
    assert type(loaded.ensemble_.trees[0].trees[0]).__name__ == "LossguideTree"
    assert np.array_equal(loaded.predict_proba(frame), clf.predict_proba(frame))


def test_sparse_input_gives_the_dense_model():
    sparse = importorskip("scipy.sparse")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 30)) * (rng.random((2000, 30)) < 0.1)
    y = X[:, 0] + X[:, 1] - X[:, 2]
    params = dict(grow_policy="lossguide", max_leaves=12, max_depth=10, n_estimators=10,
                  random_state=0)
    dense = BoostRegressor(**params).fit(X, y)
    sp = BoostRegressor(**params).fit(sparse.csr_matrix(X), y)
    assert np.array_equal(dense.predict(X), sp.predict(X))


@pytest.mark.parametrize("params, match", [
    ({"grow_policy": "depthwise", "max_leaves": 8}, "max_leaves=8 is for grow_policy"),
    ({"grow_policy": "lossguide", "max_leaves": 1}, "max_leaves=1"),
    ({"grow_policy": "lossguide", "max_leaves": 2.5}, "max_leaves=2.5"),
])
def test_bad_max_leaves_is_named(params, match):
    X, y = data(100)
    with pytest.raises((ValueError, TypeError), match=match):
        BoostRegressor(n_estimators=2, **params).fit(X, y)


def test_split_segment_matches_a_numpy_partition():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 256, size=(3, 500)).astype(np.uint8)
    X[1, ::5] = 255                             # missing values
    rows = np.sort(rng.choice(500, 300, replace=False)).astype(np.int32)
    for nan_right in (0, 1):
        order = rng.permutation(300).astype(np.int32)
        before = order.copy()
        n_left = _partition.split_segment(X, rows, order, 50, 250, 1, 100, nan_right, 255,
                                          np.empty(200, np.int32))
        seg = before[50:250]
        b = X[1, rows[seg]]
        right = ((b > 100) & (b != 255)) | ((b == 255) & bool(nan_right))
        assert n_left == np.count_nonzero(~right)
        assert np.array_equal(order[50:250], np.concatenate([seg[~right], seg[right]]))
        assert np.array_equal(order[:50], before[:50])
        assert np.array_equal(order[250:], before[250:])
