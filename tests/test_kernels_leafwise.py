"""The compiled best-first loop (``_leafwise.grow_tree``) against the Python loops over the
kernels (``LossguideKind.grow`` and the level-wise ``DepthwiseKind.grow``, with
``compiled.ENABLED`` off), which handle every case: the same tree, node for node, and the
same leaf for every row."""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

from boostlib import BoostClassifier, BoostRegressor
from boostlib._kernels import _leafwise
from boostlib.engine.grower import GrowParams, TreeGrower
from boostlib.engine.trees import compiled
from reference.strategies import SLOW_SETTINGS, binned_data, gradients

FIELDS = ("feature", "bin", "nan_right", "left", "right", "gain", "value", "cat_sets", "cover")


def grow_with(grower, enabled, rows, g, h, **kw):
    """The tree and rows' leaves ``grower`` grows, with the compiled loop or without."""
    old = compiled.ENABLED
    compiled.ENABLED = enabled
    try:
        tree, node = grower.grow(rows, g, h, **kw)
    finally:
        compiled.ENABLED = old
    return tree, node.copy()


def grow_both(data, rows, g, h, params, n_threads=1, row_weights=None, bundle=False,
              policy="lossguide", is_categorical=None):
    """The tree and rows' leaves from the compiled loop and from the Python loop."""
    out = []
    for enabled in (True, False):
        grower = TreeGrower(data.X_binned, data.nbnm, data.missing_bin, policy, params,
                            n_threads=n_threads, bundle=bundle,
                            is_categorical=is_categorical)
        if row_weights is None:
            assert compiled.applies(grower, 0.0, rows.size) == (rows.size > 0)
        out.append(grow_with(grower, enabled, rows, g, h, row_weights=row_weights))
    return out


def fit_both_loops(estimator, params, X, y):
    """The model fitted with the compiled loop (and the keyword arguments of each of its
    ``grow_tree`` calls), and the model fitted with the Python loops."""
    calls = []
    real = _leafwise.grow_tree

    def spy(*args, **kw):
        calls.append(kw)
        return real(*args, **kw)

    _leafwise.grow_tree = spy
    try:
        fast = estimator(**params).fit(X, y)
    finally:
        _leafwise.grow_tree = real
    old = compiled.ENABLED
    compiled.ENABLED = False
    try:
        slow = estimator(**params).fit(X, y)
    finally:
        compiled.ENABLED = old
    return fast, slow, calls


def assert_same(a, b):
    (ta, na), (tb, nb) = a, b
    for name in FIELDS:
        a, b = getattr(ta, name), getattr(tb, name)
        assert np.array_equal(a, b) and np.asarray(a).dtype == np.asarray(b).dtype, name
    assert np.array_equal(na, nb)


@pytest.mark.parametrize("policy", ["lossguide", "depthwise"])
@SLOW_SETTINGS
@given(data=binned_data(max_rows=60, max_features=4), draw=st.data())
def test_compiled_loop_grows_the_python_loops_tree(policy, data, draw):
    """Constant features, missing values, one row, all-zero gradients, weights, zero
    hessians, the count channel or not, leaf-wise trees pruning features or not: the same
    splits in the same order (depthwise: numbered level by level as the level-wise loop
    numbers them)."""
    n = data.X_rows.shape[0]
    g, h = draw.draw(gradients(n))
    params = GrowParams(max_depth=draw.draw(st.integers(1, 6)),
                        max_leaves=draw.draw(st.integers(2, 12)),
                        l2_regularization=draw.draw(st.sampled_from([0.0, 1e-3, 1.0])),
                        min_samples_leaf=draw.draw(st.sampled_from([1, 1, 2, 5])),
                        min_child_weight=draw.draw(st.sampled_from([1e-3, 0.5])),
                        prune_features=policy == "lossguide" and draw.draw(st.booleans()))
    rows = np.arange(n, dtype=np.int32)
    if n > 2 and draw.draw(st.booleans()):        # a subset of the rows
        keep = np.asarray(draw.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        rows = rows[keep]
        g, h = g[keep], h[keep]
    threads = draw.draw(st.sampled_from([1, 2]))
    assert_same(*grow_both(data, rows, g, h, params, threads, policy=policy))


def grow_skipping_or_not(data, rows, g, h, params, policy, enabled, threads=1):
    """The tree and rows' leaves grown as the grower grows them (nodes of fewer than
    ``2 * min_samples_leaf`` rows neither built nor searched), then searching every node."""
    out = []
    for skip in (True, False):
        grower = TreeGrower(data.X_binned, data.nbnm, data.missing_bin, policy, params,
                            n_threads=threads)
        assert grower.rules.min_split_rows == (2 * params.min_samples_leaf
                                         if params.min_samples_leaf > 1 else 0)
        if not skip:
            grower.rules.min_split_rows = 0
        out.append(grow_with(grower, enabled, rows, g, h))
    return out


@pytest.mark.parametrize("policy, enabled", [("lossguide", True), ("lossguide", False),
                                             ("depthwise", True)])
@SLOW_SETTINGS
@given(data=binned_data(max_rows=80, max_features=4), draw=st.data())
def test_nodes_too_small_to_split_grow_the_tree_grown_searching_them(policy, enabled, data,
                                                                      draw):
    """A node of fewer than ``2 * min_samples_leaf`` rows has no split: the compiled loop
    (and the leaf-wise Python loop) skip its histogram and its search, and grow the tree
    grown searching every node; also with pruned features and count-free histograms."""
    n = data.X_rows.shape[0]
    g, h = draw.draw(gradients(n))
    params = GrowParams(max_depth=draw.draw(st.integers(1, 8)),
                        max_leaves=draw.draw(st.integers(2, 16)),
                        min_samples_leaf=draw.draw(st.sampled_from([2, 3, 5, 8])),
                        min_child_weight=draw.draw(st.sampled_from([1e-3, 0.5])),
                        prune_features=policy == "lossguide" and draw.draw(st.booleans()))
    if draw.draw(st.booleans()):        # unit hessians: row counts from the hessian sums
        h = np.ones(n)
    rows = np.arange(n, dtype=np.int32)
    threads = draw.draw(st.sampled_from([1, 2]))
    assert_same(*grow_skipping_or_not(data, rows, g, h, params, policy, enabled, threads))


@pytest.mark.parametrize("policy, enabled", [("lossguide", True), ("lossguide", False),
                                             ("depthwise", True)])
def test_a_node_of_twice_min_samples_leaf_rows_is_still_split(policy, enabled):
    """The skip is exact: a node of exactly ``2 * min_samples_leaf`` rows is split into
    two of ``min_samples_leaf`` (the root of such a sample), and nodes of fewer are
    skipped (a tree with such children grows the same either way)."""
    from reference.strategies import make_binned
    rng = np.random.default_rng(5)
    msl, n = 10, 200
    X = np.stack([np.sort(rng.integers(0, 10, n)), rng.integers(0, 16, n)], axis=1)
    data = make_binned(X, [10, 16], 255)
    g = X[:, 0] + 0.1 * rng.normal(size=n)
    rows = np.arange(n, dtype=np.int32)
    params = GrowParams(max_depth=6, max_leaves=40, min_samples_leaf=msl)
    grown = grow_skipping_or_not(data, rows, g, np.ones(n), params, policy, enabled)
    assert_same(*grown)
    tree = grown[0][0]
    split = tree.left >= 0
    covers = np.concatenate([tree.cover[tree.left[split]], tree.cover[tree.right[split]]])
    assert np.any(covers < 2 * msl)                 # a child skipped as too small
    # a root of 2 * min_samples_leaf rows: split into halves
    X = np.stack([np.repeat([0, 1], msl), rng.integers(0, 16, 2 * msl)], axis=1)
    few = make_binned(X, [2, 16], 255)
    g = X[:, 0] + 0.1 * rng.normal(size=2 * msl)
    tree, node = grow_skipping_or_not(few, np.arange(2 * msl, dtype=np.int32), g,
                                      np.ones(2 * msl), params, policy, enabled)[0]
    assert tree.feature[0] == 0 and np.bincount(node)[tree.left[0]] == msl


def test_equal_gains_split_the_earlier_leaf():
    """Two leaves whose best splits gain exactly the same: the one listed first (the left
    child) is split, as the Python loop does."""
    from reference.strategies import make_binned
    f0 = np.repeat([0, 1], 8)
    f1 = np.tile([0, 1], 8)
    g = np.where(f0 == 0, -2.0, 2.0) + np.where(f1 == 1, 1.0, -1.0)
    data = make_binned(np.column_stack([f0, f1]), [2, 2], 255)
    rows = np.arange(16, dtype=np.int32)
    a, b = grow_both(data, rows, g, np.ones(16), GrowParams(max_depth=4, max_leaves=3))
    assert_same(a, b)
    tree = a[0]
    assert tree.feature[0] == 0 and tree.feature[1] == 1
    assert tree.left[1] >= 0 and tree.left[2] < 0


@pytest.mark.parametrize("policy", ["lossguide", "depthwise"])
@SLOW_SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n_cats=st.sampled_from([2, 3, 9, 40]),
       cat_smooth=st.sampled_from([0.0, 10.0]), max_cat_threshold=st.sampled_from([1, 4, 32]),
       min_data_per_group=st.sampled_from([1, 30]), msl=st.sampled_from([1, 20]),
       threads=st.sampled_from([1, 2]))
def test_categorical_features_grow_the_same_tree(policy, seed, n_cats, cat_smooth,
                                                 max_cat_threshold, min_data_per_group, msl,
                                                 threads):
    """Set splits (the missing category among them) in both loops: the same sets, stored
    in the same order, and the same rows in each leaf (leaf-wise: pruning features or
    not)."""
    from reference.strategies import make_binned
    rng = np.random.default_rng(seed)
    n = 400
    X = np.column_stack([rng.integers(0, n_cats, n), rng.integers(0, 20, n),
                         rng.integers(0, n_cats, n)]).astype(np.uint8)
    X[rng.random((n, 3)) < 0.1] = 255
    effect = rng.normal(size=n_cats + 1)
    g = effect[np.minimum(X[:, 0], n_cats)] + 0.3 * X[:, 1] / 20 + rng.normal(size=n)
    g -= effect[np.minimum(X[:, 2], n_cats)]
    data = make_binned(X, [n_cats, 20, n_cats], 255)
    params = GrowParams(max_depth=12 if policy == "lossguide" else 4, max_leaves=16,
                        min_samples_leaf=msl, cat_smooth=cat_smooth, cat_l2=1.0,
                        max_cat_threshold=max_cat_threshold,
                        min_data_per_group=min_data_per_group,
                        prune_features=policy == "lossguide" and seed % 2 == 1)
    rows = np.arange(n, dtype=np.int32)
    a, b = grow_both(data, rows, g, rng.uniform(0.5, 1.0, n), params, threads,
                     policy=policy, is_categorical=np.array([True, False, True]))
    assert_same(a, b)


@pytest.mark.parametrize("policy", ["lossguide", "depthwise"])
@pytest.mark.parametrize("missing", [False, True])
def test_a_feature_without_gain_at_a_node_is_searched_in_its_children(policy, missing):
    """Feature 0 gains nothing at the root (its effect cancels across feature 1's sides)
    and splits both children: only a feature without a threshold of ``min_samples_leaf``
    rows a side may be left out of a node's descendants' search, not one without gain.
    ``missing``: feature 0's rows are at bin 0 or missing, whose only threshold sends the
    missing rows right."""
    from reference.strategies import make_binned
    f0 = np.tile([0, 1], 40)
    f1 = np.repeat([0, 1], 40)
    f2 = np.arange(80) % 7 == 0                 # 12 rows at 1: fewer than 20 a side
    g = np.where(f1 == 0, np.where(f0 == 0, 1.0, -1.0), np.where(f0 == 0, -1.0, 1.0) + 3.0)
    X = np.column_stack([np.where(f0 == 1, 255, 0) if missing else f0, f1, f2])
    data = make_binned(X.astype(np.uint8), [1 if missing else 2, 2, 2], 255)
    rows = np.arange(80, dtype=np.int32)
    for msl in (1, 20):
        a, b = grow_both(data, rows, g, np.ones(80),
                         GrowParams(max_depth=2, max_leaves=4, min_samples_leaf=msl),
                         policy=policy)
        assert_same(a, b)
        tree = a[0]
        assert tree.feature[0] == 1 and tree.feature[1] == tree.feature[2] == 0


@pytest.mark.parametrize("policy", ["lossguide", "depthwise"])
def test_sampled_rows_with_weights_grow_the_same_tree(policy):
    """A sample gathered with its weights (the samplers' path) is grown alike."""
    rng = np.random.default_rng(0)
    n = 500
    X = rng.integers(0, 30, size=(n, 5)).astype(np.uint8)
    X[rng.random((n, 5)) < 0.1] = 255
    from reference.strategies import make_binned
    data = make_binned(X, np.full(5, 30), 255)
    g, h = rng.normal(size=n), rng.uniform(0.1, 1.0, n)
    rows = np.flatnonzero(rng.random(n) < 0.6).astype(np.int32)
    w = rng.uniform(0.5, 2.0, rows.size)
    params = GrowParams(max_depth=8 if policy == "lossguide" else 5, max_leaves=15)
    assert_same(*grow_both(data, rows, g, h, params, 2, row_weights=w, policy=policy))


@pytest.mark.parametrize("policy", ["lossguide", "depthwise"])
@pytest.mark.parametrize("msl", [1, 3])
def test_deep_trees_over_many_bins_grow_the_same_tree(policy, msl):
    """Features of up to 255 bins (4 words of the search's bins in use), sparse in deep
    nodes, with missing values and inexact sums (a larger child's histogram, by
    subtraction, may keep tiny nonzero sums in bins its rows do not reach): the compiled
    loop, which tests only the bins in use at a node's parent, grows the same tree."""
    from reference.strategies import make_binned
    rng = np.random.default_rng(3)
    n = 3000
    nbnm = np.array([255, 200, 64, 65, 7, 130])
    X = (rng.random((n, nbnm.size)) * nbnm).astype(np.uint8)
    X[rng.random(X.shape) < 0.05] = 255
    data = make_binned(X, nbnm, 255)
    g = rng.normal(size=n).astype(np.float32).astype(np.float64)
    h = rng.uniform(0.1, 1.0, n)
    rows = np.arange(n, dtype=np.int32)
    params = GrowParams(max_depth=10 if policy == "lossguide" else 7, max_leaves=120,
                        min_samples_leaf=msl)
    a, b = grow_both(data, rows, g, h, params, 2, policy=policy)
    assert_same(a, b)
    assert a[0].feature.size > 100


@pytest.mark.parametrize("policy", ["lossguide", "depthwise"])
def test_large_leaves_partitioned_by_threads_grow_the_same_tree(policy):
    """Leaves of several times PARTITION_ROWS_PER_THREAD rows are partitioned by two
    threads, each splitting its run of rows before the runs are put together: the tree and
    the rows' leaves are those of one thread and of the Python loop (which partitions on
    one), with missing values and set splits of a categorical feature among the splits."""
    from reference.strategies import make_binned
    rng = np.random.default_rng(5)
    n = 6 * _leafwise.PARTITION_ROWS_PER_THREAD + 123
    X = np.column_stack([rng.integers(0, 64, n), rng.integers(0, 12, n),
                         rng.integers(0, 3, n)]).astype(np.uint8)
    X[rng.random((n, 3)) < 0.05] = 255
    effect = rng.normal(size=13)
    g = X[:, 0] / 32.0 + effect[np.minimum(X[:, 1], 12)] + X[:, 2] + rng.normal(size=n)
    data = make_binned(X, [64, 12, 3], 255)
    params = GrowParams(max_depth=12 if policy == "lossguide" else 5, max_leaves=31,
                        min_samples_leaf=20, cat_l2=1.0, max_cat_threshold=8)
    rows = np.arange(n, dtype=np.int32)
    h = rng.uniform(0.5, 1.0, n)
    cat = np.array([False, True, False])
    two, python = grow_both(data, rows, g, h, params, 2, policy=policy, is_categorical=cat)
    one = grow_both(data, rows, g, h, params, 1, policy=policy, is_categorical=cat)[0]
    assert_same(two, python)
    assert_same(two, one)
    assert (two[0].nan_right == 2).any() and two[0].feature.size > 20


def test_threaded_partition_with_fewer_threads_than_runs_grows_the_same_tree():
    """OpenMP may run a parallel region on fewer threads than asked (here
    ``OMP_THREAD_LIMIT=1``): a thread then takes every run of the threaded partition, and
    the trees are still those of the Python loop and of one thread."""
    tests = os.path.dirname(os.path.abspath(__file__))
    code = ("import sys; sys.path.insert(0, {!r}); import test_kernels_leafwise as t; "
            "t.test_large_leaves_partitioned_by_threads_grow_the_same_tree('lossguide')"
            ).format(tests)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "OMP_THREAD_LIMIT": "1"})
    assert res.returncode == 0, res.stderr[-3000:]


@pytest.mark.parametrize("policy", ["lossguide", "depthwise"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("entries", [False, True])
def test_bundled_one_hot_columns_grow_the_same_tree(threads, policy, entries, monkeypatch):
    """Histograms over bundles of one-hot columns, expanded per feature, as the Python
    loop builds them (from the rows' bytes, or from their entries); leaf-wise trees also
    pruning features, whose children build and expand only their parent's live ones."""
    from boostlib.engine import row_entries
    from reference.strategies import make_binned
    monkeypatch.setattr(row_entries, "MAX_DENSITY", 1.0 if entries else -1.0)
    monkeypatch.setattr(row_entries, "MIN_COLUMNS", 1)
    rng = np.random.default_rng(2)
    n, k = 800, 12
    X = np.zeros((n, k + 2), np.uint8)
    X[np.arange(n), rng.integers(0, k, n)] = 1          # one-hot: 12 exclusive columns
    X[:, k] = rng.integers(0, 40, n)
    X[:, k + 1] = rng.integers(0, 3, n)
    X[rng.random(n) < 0.05, k] = 255
    data = make_binned(X, [2] * k + [40, 3], 255)
    g = rng.normal(size=n) + X[:, :4].sum(1)
    for msl, prune in [(1, False), (10, False), (1, True), (10, True)]:
        if prune and policy != "lossguide":
            continue
        grower = TreeGrower(data.X_binned, data.nbnm, 255, "lossguide", GrowParams(),
                            bundle=True)
        assert grower.histograms.bundling is not None
        assert (grower.histograms.row_entries is not None) == entries
        params = GrowParams(max_depth=10 if policy == "lossguide" else 5, max_leaves=20,
                            min_samples_leaf=msl, prune_features=prune)
        assert_same(*grow_both(data, np.arange(n, dtype=np.int32), g, np.ones(n), params,
                               threads, bundle=True, policy=policy))
        # some rows (a compact copy, or with entries the training rows' own), hessians
        # that need a count channel
        some = np.flatnonzero(rng.random(n) < 0.6).astype(np.int32)
        assert_same(*grow_both(data, some, g[some], rng.uniform(0.5, 1.0, some.size), params,
                               threads, bundle=True, policy=policy))


@pytest.mark.parametrize("policy, policy_kw", [
    ("depthwise", dict(colsample_bynode=0.5)),
    ("depthwise", dict(interaction_constraints=[[0, 1], [2, 3]])),
    ("lossguide", dict(random_strength=1.0)), ("depthwise", dict(random_strength=1.0))])
def test_other_cases_take_the_python_loop(policy_kw, policy):
    """A depthwise tree's column rules per node (drawn a level at once) and split noise are
    the Python loop's: the compiled one is not used for them."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    X[:, 0] = rng.integers(0, 5, 300)
    y = (X[:, 1] + X[:, 0] > 2).astype(int)
    used = []
    real = _leafwise.grow_tree

    def spy(*args, **kw):
        used.append(1)
        return real(*args, **kw)

    _leafwise.grow_tree = spy
    try:
        BoostClassifier(grow_policy=policy, n_estimators=3, random_state=0,
                        **policy_kw).fit(X, y)
        assert not used
        BoostClassifier(grow_policy=policy, n_estimators=3, random_state=0).fit(X, y)
        assert used
    finally:
        _leafwise.grow_tree = real


@pytest.mark.parametrize("policy", ["lossguide", "depthwise"])
@pytest.mark.parametrize("extra", [{}, {"prune_features": True}, {"min_samples_leaf": 10},
                                   {"sampler": "goss", "subsample": 0.5}])
def test_a_column_sample_per_tree_grows_the_same_trees_compiled(policy, extra):
    """colsample_bytree: the compiled loop takes the tree's sample as features dead from
    the root, and grows the trees the Python loop grows on the same draws."""
    if policy != "lossguide" and "prune_features" in extra:
        return
    rng = np.random.default_rng(2)
    X = rng.normal(size=(600, 8))
    X[::5, 3] = np.nan
    y = (X[:, 0] + X[:, 1] * X[:, 2] - X[:, 5] + rng.normal(size=600) > 0).astype(int)
    params = dict(grow_policy=policy, n_estimators=15, colsample_bytree=0.5, random_state=0,
                  **({"max_leaves": 12, "max_depth": 10} if policy == "lossguide" else {}),
                  **extra)
    fast, slow, calls = fit_both_loops(BoostClassifier, params, X, y)
    used = [kw.get("skip_features") for kw in calls]
    assert len(used) == 15 and all(s is not None and s.sum() == 4 for s in used)
    assert np.array_equal(fast.predict_proba(X), slow.predict_proba(X))
    for a, b in zip(fast.ensemble_.scalar_trees(), slow.ensemble_.scalar_trees()):
        assert np.array_equal(a.feature, b.feature) and np.array_equal(a.bin, b.bin)


@pytest.mark.parametrize("extra", [
    {}, {"prune_features": True}, {"colsample_bytree": 0.6}, {"min_samples_leaf": 10},
    {"sampler": "mvs", "subsample": 0.5}, {"update": "agbm"}, {"max_depth": 3},
    {"monotonic_cst": [1, 0, 0, 0, 0, -1, 0, 0]}, {"categorical": True},
    {"max_leaves": 40}, {"interaction_constraints": [[0, 1, 2], [2, 5], [3, 4, 6, 7]]},
    {"interaction_constraints": [[0, 1], [1, 2, 5]], "colsample_bynode": 1.0},
    {"interaction_constraints": [[0, 5], [1, 2, 4]], "prune_features": True,
     "colsample_bytree": 0.8}])
def test_column_rules_per_node_grow_the_same_trees_compiled(extra):
    """colsample_bynode and interaction constraints, leaf-wise: the compiled loop calls
    back for each search's allowed features (the root's, then each split's two children,
    given the features on their path), in the Python loop's order, so it draws the same
    samples and grows the same trees, values included."""
    extra = dict(extra)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(700, 8))
    X[::6, 3] = np.nan
    if extra.pop("categorical", False):
        X[:, 4] = rng.integers(0, 6, 700)
        extra["categorical_features"] = [4]
    y = (X[:, 0] + X[:, 1] * X[:, 2] - X[:, 5] + 0.3 * X[:, 4] + rng.normal(size=700)
         > 0).astype(int)
    params = dict(grow_policy="lossguide", n_estimators=12, colsample_bynode=0.5,
                  random_state=0, max_leaves=12, max_depth=10)
    params.update(extra)
    fast, slow, calls = fit_both_loops(BoostClassifier, params, X, y)
    assert len(calls) >= 12 and all(kw.get("node_features") is not None for kw in calls)
    assert np.array_equal(fast.predict_proba(X), slow.predict_proba(X))
    for a, b in zip(fast.ensemble_.scalar_trees(), slow.ensemble_.scalar_trees()):
        assert np.array_equal(a.feature, b.feature) and np.array_equal(a.bin, b.bin)
        assert np.array_equal(a.value, b.value)


def test_node_features_is_checked_and_its_errors_reach_the_caller():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] > 0).astype(int)
    real = _leafwise.grow_tree

    def with_draw(draw):
        def spy(*args, **kw):
            return real(*args, **dict(kw, node_features=draw))
        return spy

    for draw, error, match in (
            (lambda *a: np.ones((1, 3), np.uint8), ValueError,
             r"node_features\(-1, -1, 0, -1\) gave shape \(1, 3\), expected \(1, 4\)"),
            (lambda *a: 1 / 0, ZeroDivisionError, "division")):
        _leafwise.grow_tree = with_draw(draw)
        try:
            with pytest.raises(error, match=match):
                BoostClassifier(grow_policy="lossguide", n_estimators=2).fit(X, y)
        finally:
            _leafwise.grow_tree = real


@pytest.mark.parametrize("policy", ["lossguide", "depthwise"])
@pytest.mark.parametrize("extra", [
    {}, {"prune_features": True, "colsample_bytree": 0.7}, {"min_samples_leaf": 15},
    {"sampler": "mvs", "subsample": 0.5}, {"update": "sglb"}, {"categorical": True}])
def test_monotone_trees_grow_the_same_compiled(policy, extra):
    """Monotone constraints in the compiled loop: each leaf's value interval as the Python
    loops' NodeRules keeps it (depthwise: renumbered level by level), the same trees, value
    intervals and leaf values."""
    extra = dict(extra)
    if policy == "depthwise":
        if "prune_features" in extra:
            extra.pop("prune_features")
        extra["max_depth"] = 4
    rng = np.random.default_rng(3)
    n = 800
    X = rng.normal(size=(n, 5))
    X[::7, 0] = np.nan
    cat = extra.pop("categorical", False)
    if cat:
        X[:, 4] = rng.integers(0, 6, n)
    y = 2 * np.nan_to_num(X[:, 0]) - X[:, 1] + np.sin(3 * X[:, 2]) + rng.normal(size=n)
    params = dict(grow_policy=policy, n_estimators=12, monotonic_cst=[1, -1, 0, 1, 0],
                  random_state=0, categorical_features=[4] if cat else "auto",
                  **({"max_leaves": 15, "max_depth": 10} if policy == "lossguide" else {}),
                  **extra)
    fast, slow, calls = fit_both_loops(BoostRegressor, params, X, y)
    used = [kw.get("node_bounds") is not None for kw in calls]     # (with monotone)
    assert len(used) == 12 and all(used)
    assert np.array_equal(fast.predict(X), slow.predict(X))
    for a, b in zip(fast.ensemble_.scalar_trees(), slow.ensemble_.scalar_trees()):
        for name in ("feature", "bin", "nan_right", "value"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert np.array_equal(a.value_bounds, b.value_bounds)
    assert any(np.isfinite(t.value_bounds).any() for t in fast.ensemble_.scalar_trees())


def test_deep_monotone_depthwise_trees_size_their_bounds_by_rows():
    """max_depth=30 asks the compiled loop for 2**30 leaves: the value intervals are
    sized by the rows (a leaf each at most), as the tree's own arrays are."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] + rng.normal(size=300)
    model = BoostRegressor(grow_policy="depthwise", max_depth=30, monotonic_cst=[1, 0, 0],
                           n_estimators=3, random_state=0).fit(X, y)
    low, high = X[:50].copy(), X[:50].copy()
    low[:, 0], high[:, 0] = -1.0, 1.0
    assert np.all(model.predict(low) <= model.predict(high))


def test_bad_arguments_are_rejected():
    X = np.zeros((2, 4), np.uint8)
    rows = np.arange(4, dtype=np.int32)
    Xp = np.zeros((4, 2), np.uint8)
    g = np.ones(4, np.float32)
    off = np.array([0, 3, 6], np.int32)
    nb = np.array([2, 2], np.int32)
    node = np.zeros(4, np.int32)
    ok = dict(l2=1.0, msl=0.0, mcw=1e-3, depth=3, leaves=4)

    fixed = ("is_cat", "cat_params", "monotone", "prune_features", "min_split_rows")

    def call(X=X, rows=rows, Xp=Xp, g=g, hist=np.zeros((4, 6, 2)), leaves=4, depth=3,
             node=node, nb=nb, **kw):
        assert _leafwise.slots_needed(depth, leaves, rows.size) <= 3
        settings = _leafwise.GrowSettings(X, off, nb, ok["l2"], depth, 255, 1,
                                          **{k: kw.pop(k) for k in fixed if k in kw})
        return _leafwise.grow_tree(settings, rows, Xp, g, g, hist, ok["msl"], ok["mcw"],
                                   leaves, node, **kw)

    assert call()[0].tolist() == [-1]        # no gradient, no split
    with pytest.raises(ValueError, match="aligned"):
        call(node=np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="slots"):
        call(hist=np.zeros((2, 6, 2)))
    with pytest.raises(ValueError, match="max_leaves"):
        call(leaves=1, hist=np.zeros((1, 6, 2)))
    with pytest.raises(ValueError, match="max_depth"):
        call(depth=0, leaves=2, hist=np.zeros((1, 6, 2)))
    with pytest.raises(ValueError, match="shape"):
        call(hist=np.zeros((4, 5, 2)))
    with pytest.raises(ValueError, match="row id"):
        call(rows=np.array([0, 1, 2, 9], np.int32))
    with pytest.raises(ValueError, match="owns n_bins_nonmissing"):
        call(nb=np.array([1, 3], np.int32))
    cats = np.array([1, 0], np.uint8)
    with pytest.raises(ValueError, match="cat_params"):
        call(is_cat=cats)
    with pytest.raises(ValueError, match="is_cat"):
        call(is_cat=np.ones(3, np.uint8), cat_params=np.array([10.0, 10.0, 1.0, 32.0]))
    with pytest.raises(ValueError, match="max_cat_threshold"):
        call(is_cat=cats, cat_params=np.array([10.0, 10.0, 1.0, 0.0]))
    assert call(is_cat=cats, cat_params=np.array([10.0, 10.0, 1.0, 32.0]))[6].shape == (0, 8)
    with pytest.raises(ValueError, match="skip_features"):
        call(skip_features=np.zeros(3, np.uint8))
    mono = np.array([1, 0], np.int8)
    with pytest.raises(ValueError, match="one entry per feature"):
        call(monotone=np.ones(3, np.int8), node_bounds=np.zeros((7, 2)))
    with pytest.raises(ValueError, match="go together"):
        call(monotone=mono)
    with pytest.raises(ValueError, match="go together"):
        call(monotone=mono, node_bounds=np.zeros((6, 2)))          # 2 * 4 - 1 rows needed
    assert call(monotone=mono, node_bounds=np.zeros((7, 2)))[0].tolist() == [-1]
    v = np.ones(4)
    with pytest.raises(ValueError, match="node_sums"):
        call(value_gradient=v, value_hessian=v)
    with pytest.raises(ValueError, match="node_sums"):
        call(value_gradient=v, value_hessian=v[:3], node_sums=np.zeros((7, 3)))
    with pytest.raises(ValueError, match="node_sums"):
        call(value_gradient=v, value_hessian=v, node_sums=np.zeros((6, 3)))
    sums = np.full((7, 3), np.nan)
    assert call(value_gradient=v, value_hessian=v, node_sums=sums)[0].tolist() == [-1]
    assert sums[0].tolist() == [4.0, 4.0, 4.0]       # the root: every row
    with_sums = dict(value_gradient=v, value_hessian=v, node_sums=sums)
    with pytest.raises(ValueError, match="node_values"):
        call(node_values=np.zeros((2, 7)))
    with pytest.raises(ValueError, match="node_values"):
        call(node_values=np.zeros((2, 6)), **with_sums)
    values = np.full((2, 7), np.nan)
    call(node_values=values, **with_sums)
    assert values[:, 0].tolist() == [-4.0 / 5.0, 4.0]     # -G / (H + l2), and 4 rows
    counts = np.zeros(6)
    for bad in (dict(root_counts=counts),                           # without build_root
                dict(root_counts=counts[:5], build_root=True),
                dict(root_counts=counts, build_root=True)):         # 2 channels
        with pytest.raises(ValueError, match="root_counts"):
            call(**bad)


def test_a_root_built_in_the_call_is_the_root_built_before_it():
    """``build_root`` sums slot 0 as ``build_histograms`` does: the same tree as from a
    prebuilt root, with or without known counts; None when its sums are not finite."""
    from boostlib._kernels import _histogram
    rng = np.random.default_rng(3)
    n = 300
    X = rng.integers(0, 4, size=(2, n)).astype(np.uint8)
    Xp = np.ascontiguousarray(X.T)
    off = np.array([0, 5, 10], np.int32)
    nb = np.array([4, 4], np.int32)
    g = (X[0] - 1.5 + rng.normal(size=n)).astype(np.float32)
    h = rng.uniform(0.5, 1.0, n).astype(np.float32)
    rows = np.arange(n, dtype=np.int32)
    pre = np.zeros((8, 10, 3))
    _histogram.build_histograms(Xp, np.empty(0, np.int32), np.zeros(n, np.int32),
                                np.zeros(1, np.int32), g, h, off, pre[:1], 1)
    counts = pre[0, :, 2].copy()

    def grow(hist, **kw):
        node = np.empty(n, np.int32)
        settings = _leafwise.GrowSettings(X, off, nb, 1.0, 4, 255, 1)
        out = _leafwise.grow_tree(settings, rows, Xp, g, h, hist, 5.0, 1e-3, 8, node, **kw)
        return out, node

    expected = grow(pre)
    assert expected[0][0].size > 3
    for kw in ({}, {"root_counts": counts}):
        got = grow(np.full((8, 10, 3), np.nan), build_root=True, **kw)
        for a, b in zip(got[0] + (got[1],), expected[0] + (expected[1],)):
            assert np.array_equal(a, b)
    g[7] = np.inf
    assert grow(np.zeros((8, 10, 3)), build_root=True)[0] is None
