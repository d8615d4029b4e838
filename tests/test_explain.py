"""SHAP values: the TreeSHAP kernel against the brute-force Shapley formula, models of every
tree kind against shap.TreeExplainer on ``to_shap(model)``, interaction values, covers in
model files, and the estimators' ``pred_contrib`` / ``pred_interactions``."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, strategies as st

from model_documents import tree_blocks, tree_lists
from optional_imports import importorskip

import boostlib
from boostlib import BoostClassifier, BoostRanker, BoostRegressor, Dataset, Model, train
from boostlib._kernels import _treeshap
from boostlib.engine.contributions import MissingCovers
from boostlib.explain import to_shap
from reference import treeshap as ref
from reference.strategies import KERNEL_SETTINGS

MISSING = 255
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "model_files_v1")


# -- the kernel against brute force ---------------------------------------------------------
def random_tree(rng, n_features, depth, p_empty, with_cats):
    """A random explicit tree (children after parents) with covers, some of them 0."""
    feature, bins, nan_right, left, right, value, cover = [], [], [], [], [], [], []
    sets = []

    def node(d, rows):
        k = len(feature)
        for arr, v in ((feature, -1), (bins, 0), (nan_right, 0), (left, -1), (right, -1),
                       (value, 0.0), (cover, float(rows))):
            arr.append(v)
        if d == depth or rng.random() < 0.2:
            value[k] = float(rng.normal())
            return rows
        feature[k] = int(rng.integers(n_features))
        if with_cats and rng.random() < 0.3:
            words = rng.integers(0, 2**32, size=8, dtype=np.uint64).astype(np.uint32)
            sets.append(words)
            bins[k], nan_right[k] = len(sets) - 1, 2
        else:
            bins[k], nan_right[k] = int(rng.integers(0, 6)), int(rng.integers(0, 2))
        share = 0 if rng.random() < p_empty else int(rng.integers(0, rows + 1))
        if rng.random() < 0.5:
            share = rows - share
        left[k] = len(feature)
        node(d + 1, share)
        right[k] = len(feature)
        node(d + 1, rows - share)
        return rows

    node(0, int(rng.integers(0, 20)))
    return dict(feature=np.array(feature, np.int32), bin=np.array(bins, np.int32),
                nan_right=np.array(nan_right, np.uint8), left=np.array(left, np.int32),
                right=np.array(right, np.int32), value=np.array(value),
                cover=np.array(cover), cat_sets=np.array(sets, np.uint32).reshape(-1, 8))


def fractions_and_levels(a):
    """The kernel's ``fraction`` and ``level`` arrays of an explicit tree."""
    from boostlib.engine.contributions import _fractions
    from boostlib.engine.trees.base import level_nodes
    levels = level_nodes(a["left"], a["right"])
    level = np.zeros(a["left"].size, np.int32)
    for depth, nodes in enumerate(levels):
        level[nodes] = depth
    return _fractions(a["left"], a["right"], a["cover"], levels), level


def run_kernel(trees, X_binned, interactions=False, n_threads=1, node_level=None,
               override=None):
    parts = {k: [] for k in ("feature", "bin", "nan_right", "left", "right", "value",
                             "fraction", "level")}
    feats, n_sets, sets, depth = [], 0, [], 0
    for a in trees:
        parts["feature"].append(a["feature"])
        parts["bin"].append(np.where(a["nan_right"] == 2, a["bin"] + n_sets, a["bin"]))
        for k in ("nan_right", "left", "right", "value"):
            parts[k].append(a[k])
        fraction, level = fractions_and_levels(a)
        parts["fraction"].append(fraction)
        parts["level"].append(level)
        depth = max(depth, int(level.max()))
        feats.append(np.unique(a["feature"][a["left"] >= 0]).astype(np.int32))
        sets.append(a["cat_sets"])
        n_sets += a["cat_sets"].shape[0]
    cat = {k: np.ascontiguousarray(np.concatenate(v)) for k, v in parts.items()}
    cat["bin"] = cat["bin"].astype(np.int32)
    cat.update(override or {})
    n_features, n_rows = X_binned.shape
    phi = np.zeros((n_rows, n_features + 1, 1))
    inter = np.zeros((n_rows, n_features + 1, n_features + 1, 1)) if interactions else None
    _treeshap.tree_shap(
        X_binned, cat["feature"], cat["bin"], cat["nan_right"], cat["left"], cat["right"],
        cat["value"], cat["fraction"],
        np.cumsum([0] + [a["left"].size for a in trees]).astype(np.int32),
        np.zeros(len(trees), np.int32), np.concatenate(feats).astype(np.int32),
        np.cumsum([0] + [f.size for f in feats]).astype(np.int32), depth, MISSING, phi,
        n_threads, cat_sets=np.ascontiguousarray(np.concatenate(sets)), interactions=inter,
        node_level=cat["level"] if node_level else None)
    return (inter if interactions else phi)[..., 0]


@st.composite
def forests(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_features = draw(st.integers(1, 4))
    n_rows = draw(st.integers(1, 5))
    trees = [random_tree(rng, n_features, draw(st.integers(0, 4)),
                         draw(st.sampled_from([0.0, 0.3])), draw(st.booleans()))
             for _ in range(draw(st.integers(1, 3)))]
    X = rng.integers(0, 8, size=(n_features, n_rows)).astype(np.uint8)
    X[rng.random(X.shape) < 0.2] = MISSING
    if draw(st.booleans()):
        X[:] = X[:, :1]                       # every row the same
    return trees, np.ascontiguousarray(X)


@KERNEL_SETTINGS
@given(forests())
def test_kernel_equals_the_shapley_formula(forest):
    trees, X = forest
    n_features = X.shape[0]
    phi = run_kernel(trees, X)
    for r in range(X.shape[1]):
        want = sum(ref.shapley(a, X[:, r], n_features, MISSING) for a in trees)
        np.testing.assert_allclose(phi[r, :n_features], want[:n_features], rtol=1e-9,
                                   atol=1e-9)
        total = sum(ref.expectation(a, X[:, r], set(range(n_features)), MISSING)
                    for a in trees)
        expected = sum(ref.expectation(a, X[:, r], set(), MISSING) for a in trees)
        assert abs(phi[r, :n_features].sum() + expected - total) < 1e-9   # local accuracy


def run_games(trees, X_binned, n_threads=1):
    """SHAP values by the leaf games (``leaf_games`` + ``game_shap``)."""
    from boostlib.engine.contributions import _games
    tables = []
    for a in trees:
        fraction, level = fractions_and_levels(a)
        tables.append(dict(a, fraction=fraction, level=level, depth=int(level.max()), output=0,
                           features=np.unique(a["feature"][a["left"] >= 0]).astype(np.int32),
                           value=np.where(a["left"] >= 0, 0.0, a["value"])))
    phi = np.zeros((X_binned.shape[1], X_binned.shape[0] + 1, 1))
    _games(tables, X_binned, MISSING, phi, n_threads)
    return phi[..., 0]


@KERNEL_SETTINGS
@given(forests())
def test_leaf_games_equal_the_path_recursion(forest):
    trees, X = forest
    np.testing.assert_allclose(run_games(trees, X), run_kernel(trees, X), rtol=1e-9,
                               atol=1e-9)


def test_leaf_games_do_not_depend_on_threads():
    rng = np.random.default_rng(4)
    trees = [random_tree(rng, 5, 6, 0.2, True) for _ in range(10)]
    X = rng.integers(0, 8, size=(5, 300)).astype(np.uint8)
    assert np.array_equal(run_games(trees, X, 1), run_games(trees, X, 2))


@KERNEL_SETTINGS
@given(forests())
def test_interaction_kernel_equals_the_shapley_interaction_index(forest):
    trees, X = forest
    n_features = X.shape[0]
    inter = run_kernel(trees, X, interactions=True)
    phi = run_kernel(trees, X)
    for r in range(X.shape[1]):
        want = sum(ref.interactions(a, X[:, r], n_features, MISSING) for a in trees)
        np.testing.assert_allclose(inter[r, :n_features, :n_features],
                                   want[:n_features, :n_features], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(inter[r].sum(axis=1)[:n_features],
                                   phi[r, :n_features], atol=1e-9)


def test_kernel_does_not_depend_on_threads():
    rng = np.random.default_rng(3)
    trees = [random_tree(rng, 5, 5, 0.2, True) for _ in range(10)]
    X = rng.integers(0, 8, size=(5, 300)).astype(np.uint8)
    one = run_kernel(trees, X, interactions=True, n_threads=1)
    two = run_kernel(trees, X, interactions=True, n_threads=2)
    assert np.array_equal(one, two)


def symmetric_as_explicit(rng, n_features, depth):
    """A random symmetric tree as its explicit binary tree (breadth-first nodes)."""
    feats = rng.integers(n_features, size=depth)
    bins = rng.integers(0, 6, size=depth)
    nan_right = rng.integers(0, 2, size=depth)
    n_inner = (1 << depth) - 1
    n = 2 * n_inner + 1
    level = np.floor(np.log2(np.arange(n) + 1)).astype(int)
    inner = np.arange(n) < n_inner
    cover = np.zeros(n)
    cover[n_inner:] = rng.integers(0, 4, size=n - n_inner)
    for k in range(n_inner - 1, -1, -1):
        cover[k] = cover[2 * k + 1] + cover[2 * k + 2]
    lv = np.minimum(level, depth - 1)
    return dict(feature=np.where(inner, feats[lv], -1).astype(np.int32),
                bin=np.where(inner, bins[lv], 0).astype(np.int32),
                nan_right=np.where(inner, nan_right[lv], 0).astype(np.uint8),
                left=np.where(inner, 2 * np.arange(n) + 1, -1).astype(np.int32),
                right=np.where(inner, 2 * np.arange(n) + 2, -1).astype(np.int32),
                value=np.where(inner, 0.0, rng.normal(size=n)), cover=cover,
                cat_sets=np.zeros((0, 8), np.uint32))


@KERNEL_SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(1, 4))
def test_leaf_paths_of_a_symmetric_tree_equal_rows_reaching_those_leaves(seed, n_features,
                                                                          depth):
    rng = np.random.default_rng(seed)
    tree = symmetric_as_explicit(rng, n_features, depth)
    X = rng.integers(0, 8, size=(n_features, 40)).astype(np.uint8)
    X[rng.random(X.shape) < 0.2] = MISSING
    by_row = run_kernel([tree], X, interactions=True)
    table = run_kernel([tree], np.zeros((n_features, 1 << depth), np.uint8),
                       interactions=True, node_level=True)
    for r in range(X.shape[1]):           # the leaf of row r: its turns, level by level
        k, turns = 0, 0
        for level in range(depth):
            right = ref.goes_right(tree, k, X[:, r], MISSING)
            turns |= int(right) << level
            k = tree["right"][k] if right else tree["left"][k]
        np.testing.assert_allclose(by_row[r], table[turns], rtol=1e-12, atol=1e-12)


def test_kernel_rejects_inconsistent_tables():
    rng = np.random.default_rng(0)
    tree = random_tree(rng, 2, 2, 0.0, False)
    bad = np.where(tree["left"] >= 0, 999, -1).astype(np.int32)
    with pytest.raises(ValueError, match="left"):
        run_kernel([tree], np.zeros((2, 3), np.uint8), override={"left": bad})
    with pytest.raises(ValueError, match="fraction"):
        run_kernel([tree], np.zeros((2, 3), np.uint8), override={"fraction": np.ones(1)})


# -- models ---------------------------------------------------------------------------------
KINDS = ["symmetric", "depthwise", "lossguide"]


def data(n=1500, n_features=6, seed=0, missing=0.05):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < missing] = np.nan
    Z = np.nan_to_num(X)
    return X, Z[:, 0] + Z[:, 1] * Z[:, 2] + 0.5 * np.sin(Z[:, 3]), rng


def fitted(kind, task, **params):
    X, f, rng = data()
    params = dict(n_estimators=25, grow_policy=kind, max_depth=4, random_state=0, **params)
    if task == "binary":
        return BoostClassifier(**params).fit(X, f > 0), X
    if task == "multiclass":
        return BoostClassifier(**params).fit(X, np.digitize(f, [-1, -0.3, 0.3, 1])), X
    return BoostRegressor(**params).fit(X, f), X


def raw(model, X):
    return model.model_.predict(X, raw=True)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("task", ["binary", "regression", "multiclass"])
def test_contributions_sum_to_the_raw_score(kind, task):
    model, X = fitted(kind, task)
    c = model.predict(X[:200], pred_contrib=True)
    n_out = 5 if task == "multiclass" else None
    assert c.shape == ((200, 7, n_out) if n_out else (200, 7))
    np.testing.assert_allclose(c.sum(axis=1), raw(model, X[:200]), rtol=0, atol=1e-9)
    assert np.ptp(c[:, -1], axis=0).max() == 0          # one expected value for all rows


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("task", ["binary", "regression", "multiclass"])
def test_contributions_equal_shaps_on_to_shap(kind, task):
    shap = importorskip("shap")
    model, X = fitted(kind, task)
    ours = model.predict(X[:200], pred_contrib=True)
    explainer = shap.TreeExplainer(to_shap(model))
    theirs = np.asarray(explainer.shap_values(X[:200]))
    np.testing.assert_allclose(theirs, ours[:, :-1], rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.ravel(explainer.expected_value), np.ravel(ours[0, -1]),
                               rtol=0, atol=1e-9)
    theirs = np.asarray(explainer.shap_interaction_values(X[:15]))
    ours = model.predict(X[:15], pred_interactions=True)
    np.testing.assert_allclose(theirs, ours[:, :-1, :-1], rtol=0, atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_interaction_values_add_up(kind):
    model, X = fitted(kind, "multiclass")
    inter = model.predict(X[:50], pred_interactions=True)
    phi = model.predict(X[:50], pred_contrib=True)
    assert inter.shape == (50, 7, 7, 5)
    np.testing.assert_allclose(inter.sum(axis=2), phi, atol=1e-9)
    np.testing.assert_allclose(inter, inter.transpose(0, 2, 1, 3), atol=1e-12)   # symmetric
    np.testing.assert_allclose(inter.sum(axis=(1, 2)), raw(model, X[:50]), atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_a_feature_no_tree_uses_gets_nothing(kind):
    X, f, _ = data()
    X = np.column_stack([X, np.ones(len(X))])        # constant: never split on
    model = BoostRegressor(n_estimators=10, grow_policy=kind).fit(X, f)
    c = model.predict(X[:100], pred_contrib=True)
    assert np.all(c[:, 6] == 0)


@pytest.mark.parametrize("kind", KINDS)
def test_categorical_models_against_brute_force(kind):
    rng = np.random.default_rng(1)
    n = 1200
    cat = rng.integers(0, 12, size=n).astype(float)
    x = rng.normal(size=n)
    y = np.isin(cat, [1, 4, 7, 9]) * 1.5 + x + 0.3 * rng.normal(size=n)
    X = np.column_stack([cat, x])
    model = BoostRegressor(n_estimators=8, grow_policy=kind, max_depth=3,
                           categorical_features=[0]).fit(X, y)
    ensemble = model.model_.ensemble
    assert any(np.any(t.nan_right == 2) for t in ensemble.trees)
    c = model.predict(X[:40], pred_contrib=True)
    np.testing.assert_allclose(c.sum(axis=1), raw(model, X[:40]), atol=1e-9)
    mapper, trees, coef = ensemble._prediction_tables()
    Xb = mapper.transform(model.model_._X(X[:40]), 1, "engine")
    for r in range(40):
        want = np.zeros(3)
        for t, cf in zip(trees, coef):
            a = {k: np.asarray(v) for k, v in ensemble.kind.node_arrays(t).items()}
            a["value"] = a["value"] * cf
            want += ref.shapley(a, Xb[:, r], 2, mapper.missing_bin)
        np.testing.assert_allclose(c[r, :2], want[:2], atol=1e-9)
    with pytest.raises(ValueError, match="set of categories"):
        to_shap(model)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("task", ["binary", "multiclass"])
@pytest.mark.parametrize("update", ["dart", "rf"])
def test_contributions_of_dart_and_forests_sum_to_the_raw_score(kind, task, update):
    """Rules that rewrite earlier coefficients leave a plain additive model: SHAP values
    add up to its raw score as for any other."""
    extra = ({"update_params": {"rate_drop": 0.3, "skip_drop": 0.0}} if update == "dart"
             else {"learning_rate": 1.0, "subsample": 0.632})
    model, X = fitted(kind, task, update=update, **extra)
    c = model.predict(X[:200], pred_contrib=True)
    np.testing.assert_allclose(c.sum(axis=1), raw(model, X[:200]), rtol=0, atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_iteration_range_explains_that_truncation(kind):
    model, X = fitted(kind, "binary", update="sglb",
                      update_params={"model_shrink_rate": 0.5})
    assert model.model_.ensemble.scale_history
    for rng_ in [(0, 10), (5, 25), (3, 4)]:
        c = model.predict(X[:100], pred_contrib=True, iteration_range=rng_)
        want = model.decision_function(X[:100], iteration_range=rng_)
        np.testing.assert_allclose(c.sum(axis=1), want, atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_sparse_input_equals_dense(kind):
    sparse = importorskip("scipy.sparse")
    rng = np.random.default_rng(2)
    X = rng.normal(size=(800, 30)) * (rng.random((800, 30)) < 0.1)
    y = X[:, 0] - 2 * X[:, 3] + X[:, 7] * X[:, 8]
    model = BoostRegressor(n_estimators=10, grow_policy=kind).fit(sparse.csr_matrix(X), y)
    a = model.predict(sparse.csr_matrix(X[:100]), pred_contrib=True)
    b = model.predict(X[:100], pred_contrib=True)
    np.testing.assert_allclose(a, b, atol=1e-12)
    np.testing.assert_allclose(a.sum(axis=1), model.model_.predict(X[:100], raw=True),
                               atol=1e-9)


def test_ranker_and_engine_model():
    X, f, rng = data(600)
    group = np.full(60, 10)
    y = np.digitize(f, [-1, 0, 1])
    ranker = BoostRanker(n_estimators=10).fit(X, y, group=group)
    c = ranker.predict(X[:50], pred_contrib=True)
    np.testing.assert_allclose(c.sum(axis=1), ranker.predict(X[:50]), atol=1e-9)
    model = train({"n_estimators": 10, "grow_policy": "depthwise"}, Dataset(X, f))
    c = model.predict(X[:50], pred_contrib=True)
    np.testing.assert_allclose(c.sum(axis=1), model.predict(X[:50], raw=True), atol=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_covers_survive_model_files_and_do_not_depend_on_threads(kind, tmp_path):
    model, X = fitted(kind, "multiclass", n_jobs=1)
    path = tmp_path / "m.json"
    model.save_model(path)
    loaded = boostlib.load_model(path)
    a = model.predict(X[:100], pred_contrib=True)
    assert np.array_equal(a, loaded.predict(X[:100], pred_contrib=True))
    two, _ = fitted(kind, "multiclass", n_jobs=2)
    assert np.array_equal(a, two.predict(X[:100], pred_contrib=True))


def test_covers_count_training_rows():
    X, f, _ = data()
    for kind in KINDS:
        model = BoostRegressor(n_estimators=3, grow_policy=kind).fit(X, f)
        for t in model.model_.ensemble.trees:
            a = model.model_.ensemble.kind.node_arrays(t)
            assert a["cover"][0] == len(X)
            split = a["left"] >= 0
            np.testing.assert_array_equal(a["cover"][split],
                                          a["cover"][a["left"][split]]
                                          + a["cover"][a["right"][split]])


def test_files_without_covers_predict_but_refuse_contributions():
    path = os.path.join(FIXTURES, "classifier_symmetric.json")
    model = boostlib.load_model(path)
    X = np.zeros((3, model.n_features_in_))
    model.predict_proba(X)
    with pytest.raises(MissingCovers, match="older than format 4"):
        model.predict(X, pred_contrib=True)
    with pytest.raises(ValueError, match="covers"):
        to_shap(model)


def test_bad_requests_are_refused():
    model, X = fitted("depthwise", "binary")
    with pytest.raises(ValueError, match="exclusive"):
        model.predict(X, pred_contrib=True, pred_interactions=True)
    with pytest.raises(TypeError, match="fitted boostlib estimator"):
        to_shap(object())


def test_model_files_refuse_bad_covers(tmp_path):
    model, X = fitted("depthwise", "binary")
    path = tmp_path / "m.json"
    model.save_model(path)
    doc = tree_lists(json.loads(path.read_text()))
    doc["model"]["trees"][0]["cover"][0] = -1.0
    path.write_text(json.dumps(tree_blocks(doc)))
    with pytest.raises(boostlib.ModelFileError, match=r"cover\[0\]"):
        boostlib.load_model(path)
    doc["model"]["trees"][0]["cover"] = [1.0]
    path.write_text(json.dumps(tree_blocks(doc)))
    with pytest.raises(boostlib.ModelFileError, match="cover"):
        boostlib.load_model(path)


def test_explanation_for_shap_plots():
    shap = importorskip("shap")
    model, X = fitted("symmetric", "binary")
    ex = boostlib.explain.explanation(model, X[:30])
    assert isinstance(ex, shap.Explanation)
    assert ex.values.shape == (30, 6)
    np.testing.assert_allclose(ex.values.sum(axis=1) + ex.base_values, raw(model, X[:30]),
                               atol=1e-9)


def test_deep_leafwise_trees_take_the_path_recursion():
    shap = importorskip("shap")
    from boostlib._kernels._treeshap import MAX_GAME_DEPTH
    from boostlib.engine.trees.depthwise import tree_depth
    X, f, rng = data(3000)
    y = f + np.sin(5 * np.nan_to_num(X[:, 4])) + 0.1 * rng.normal(size=len(f))
    model = BoostRegressor(n_estimators=5, grow_policy="lossguide", max_leaves=400,
                           max_depth=30, min_samples_leaf=1, random_state=0).fit(X, y)
    depths = [tree_depth(t) for t in model.model_.ensemble.trees]
    assert max(depths) > MAX_GAME_DEPTH
    ours = model.predict(X[:100], pred_contrib=True)
    theirs = np.asarray(shap.TreeExplainer(to_shap(model)).shap_values(X[:100]))
    np.testing.assert_allclose(theirs, ours[:, :-1], atol=1e-9)
    np.testing.assert_allclose(ours.sum(axis=1), raw(model, X[:100]), atol=1e-9)
