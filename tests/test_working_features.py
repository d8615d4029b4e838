"""The working features (boostlib/engine/working_features.py): which features can split, and
trees grown on those alone are the trees of a fit on every feature."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from optional_imports import importorskip

from boostlib import BoostRegressor, load_model
from boostlib.engine.binning import BinMapper
from boostlib.engine.constraints import ColumnRules
from boostlib.engine.grower import GrowParams, TreeGrower
from boostlib.engine.sparse_binned import SparseBinned
from boostlib.engine.working_features import WorkingFeatures, splittable, working_features
from reference.strategies import KERNEL_SETTINGS, binned_data

sp = importorskip("scipy.sparse")

POLICIES = ["symmetric", "depthwise", "lossguide"]
TREE_FIELDS = ("feature", "bin", "nan_right", "gain", "value", "cover")


def can_split(column, nb, min_samples_leaf, categorical):
    """Brute force: whether some candidate leaves enough rows on both sides (histogram bins:
    ``nb`` is the missing one)."""
    column = np.minimum(column, nb)
    if categorical:
        return np.unique(column).size >= 2
    need = max(min_samples_leaf, 1)
    n, n_missing = column.size, int(np.sum(column == nb))
    for b in range(nb):
        for left in (int(np.sum(column <= b)), int(np.sum(column <= b)) + n_missing):
            if need <= left <= n - need:
                return True
    return False


def as_sparse(X_binned, default):
    """``X_binned`` (feature-major) as a SparseBinned with the given default bins."""
    f, r = np.nonzero(X_binned != default[:, None])
    return SparseBinned.from_entries(X_binned.shape[1], default, r.astype(np.int32), f,
                                     X_binned[f, r])


@KERNEL_SETTINGS
@given(data=binned_data(max_rows=30, max_features=6, max_bins=[2, 3, 7, 255]),
       min_samples_leaf=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_splittable_matches_brute_force(data, min_samples_leaf, seed):
    rng = np.random.default_rng(seed)
    cat = rng.random(data.n_features) < 0.3
    expected = [can_split(data.X_binned[f], int(data.nbnm[f]), min_samples_leaf, cat[f])
                for f in range(data.n_features)]
    got = splittable(data.X_binned, data.nbnm, min_samples_leaf, cat)
    assert got.tolist() == expected
    # the same matrix kept sparse, by any default bins (sparse input: the bins of 0.0)
    default = data.X_binned[:, rng.integers(data.n_rows)].copy()
    assert splittable(as_sparse(data.X_binned, default), data.nbnm, min_samples_leaf,
                      cat).tolist() == expected


def test_splittable_counts_rows_on_each_side():
    # 10 rows; feature 0: 3 rows apart from the others; feature 1: 2 missing; feature 2:
    # constant; feature 3: 3 rows below and 3 above the bin most rows hold
    X = np.zeros((4, 10), np.uint8)
    X[0, :3] = 1
    X[1, :2] = 255
    X[3, :3], X[3, 3:6], X[3, 6:] = 0, 2, 1
    nbnm = np.array([2, 1, 1, 3])
    assert splittable(X, nbnm, 1).tolist() == [True, True, False, True]
    assert splittable(X, nbnm, 2).tolist() == [True, True, False, True]
    assert splittable(X, nbnm, 3).tolist() == [True, False, False, True]
    assert splittable(X, nbnm, 4).tolist() == [False, False, False, False]


def test_working_features_keep_the_one_node_sums_come_from():
    """The first feature of the fewest bins stays, splittable or not; every feature in a
    distributed fit."""
    X = np.array([[0, 1, 0, 1], [0, 0, 0, 0], [2, 2, 2, 2], [0, 0, 0, 0]], np.uint8)
    nbnm = np.array([2, 1, 3, 1])
    assert working_features(X, nbnm, 1).original.tolist() == [0, 1]
    assert working_features(X, nbnm, 1, distributed=True).original.tolist() == [0, 1, 2, 3]


def test_subset_and_tree_maps():
    X = np.array([[0, 1, 0, 3], [2, 2, 2, 2], [1, 0, 0, 1]], np.uint8)
    S = as_sparse(X, np.array([0, 2, 1], np.uint8))
    assert np.array_equal(S.subset(np.array([0, 2])).columns([0, 1]), X[[0, 2]])
    assert np.array_equal(S.subset(np.array([1])).columns([0]), X[[1]])

    class Tree:
        feature = np.array([1, -1, 0], np.int32)

    work = WorkingFeatures(np.array([2, 5]), 7)
    tree = work.original_tree(Tree())
    assert tree.feature.tolist() == [5, -1, 2] and tree.feature.dtype == np.int32
    back = work.working_tree(tree)
    assert back.feature.tolist() == [1, -1, 0] and tree.feature.tolist() == [5, -1, 2]


def test_restricted_column_rules_draw_as_on_every_feature():
    groups = [frozenset({0, 3, 4}), frozenset({1, 2}), frozenset({5})]
    full = ColumnRules(6, 0.7, 0.6, groups, np.random.default_rng(1))
    part = ColumnRules(6, 0.7, 0.6, groups, np.random.default_rng(1)).restrict(
        np.array([0, 2, 3, 5]))
    for rules in (full, part):
        rules.begin_tree()
    assert np.array_equal(part.tree_skipped(), full.tree_skipped()[[0, 2, 3, 5]])
    # paths name working features: working feature 2 is feature 3
    masks = part.masks([frozenset(), frozenset({2})])
    assert np.array_equal(masks, full.masks([frozenset(), frozenset({3})])[:, [0, 2, 3, 5]])


def _data(rng, n, sparse):
    """Numeric, one-hot-like, constant and empty columns."""
    X = np.zeros((n, 14))
    X[:, :4] = rng.normal(size=(n, 4))
    X[::3, 1] = np.nan
    X[:, 4:10] = (rng.random((n, 6)) < [0.5, 0.3, 0.1, 0.02, 0.005, 0.001]) * rng.integers(
        1, 3, size=(n, 6))
    X[:, 11] = 2.5                      # columns 10-13: constant (10, 12, 13: no value)
    if sparse:
        X[:, :4] = np.round(np.nan_to_num(X[:, :4]), 1)
        return sp.csr_matrix(X)
    return X


def _one_hot(rng, n):
    """Sparse one-hot groups of many levels, and empty columns among them."""
    levels = [int(k) for k in rng.integers(2, 12, size=12)]
    X = sp.hstack([sp.csr_matrix(np.eye(k)[rng.integers(0, k, size=n)]) for k in levels]
                  + [sp.csr_matrix((n, 3))]).tocsc()
    order = rng.permutation(X.shape[1])
    return X[:, order].tocsr()


def _trees_alike(X, min_samples_leaf, policy, bundle):
    """Grow trees on the working features and on every feature of ``X``, with column
    rules and split noise, on every row and on a sample, and check they are the same bit
    for bit, for derivatives whose float sums depend on their order (spanning 30 orders of
    magnitude)."""
    rng = np.random.default_rng(7)
    n = X.shape[0]
    mapper = BinMapper().fit(X)
    Xb = mapper.transform(X, 2, "engine")
    g = rng.normal(size=n) * np.exp(rng.normal(size=n) * 15)
    h = np.exp(rng.normal(size=n) * 5)
    params = GrowParams(max_depth=5, min_samples_leaf=min_samples_leaf, max_leaves=20)
    work = working_features(Xb, mapper.n_bins_nonmissing_, min_samples_leaf)
    assert 0 < work.original.size < Xb.shape[0]
    groups = [frozenset(range(0, Xb.shape[0], 2)), frozenset(range(1, Xb.shape[0], 3))]
    growers = []
    for features in (None, work):
        w = WorkingFeatures.every(Xb.shape[0]) if features is None else features
        rules = ColumnRules(Xb.shape[0], 0.9, 0.8, None if policy == "symmetric" else groups,
                            np.random.default_rng(3)).restrict(w.original)
        growers.append(TreeGrower(w.select(Xb), w.take(mapper.n_bins_nonmissing_),
                                  mapper.missing_bin, policy, params, 2, bundle=bundle,
                                  default_bins=w.take(mapper.zero_bins()),
                                  column_rules=rules, features=features))
    assert ((growers[0].histograms.bundling is None)
            == (growers[1].histograms.bundling is None) == (not bundle))
    rows = np.sort(rng.choice(n, n // 2, replace=False)).astype(np.int32)
    for fit_rows in (np.arange(n, dtype=np.int32), rows):
        for noise in (0.0, 0.5):
            trees = []
            for grower in growers:
                tree, node = grower.grow(fit_rows, g[fit_rows], h[fit_rows],
                                         split_noise_std=noise,
                                         split_rng=np.random.default_rng(11))
                trees.append((tree, node, grower.apply(tree)))
            (t1, n1, a1), (t2, n2, a2) = trees
            for name in TREE_FIELDS + (() if policy == "symmetric" else ("left", "right")):
                assert np.asarray(getattr(t1, name)).tobytes() == \
                    np.asarray(getattr(t2, name)).tobytes(), name
            assert np.array_equal(n1, n2) and np.array_equal(a1, a2)
            assert set(t2.feature[t2.feature >= 0].tolist()) <= set(work.original.tolist())


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("min_samples_leaf", [1, 15])
def test_unbundled_trees_of_the_working_features_are_those_of_every_feature(
        policy, sparse, min_samples_leaf):
    """Histograms of the features themselves: the same trees, whichever features drop."""
    _trees_alike(_data(np.random.default_rng(0), 1500, sparse), min_samples_leaf, policy,
                 bundle=False)


@pytest.mark.parametrize("policy", POLICIES)
def test_bundled_trees_of_the_working_features_are_those_of_every_feature(policy):
    """One-hot columns in bundles, empty columns among them: their bundles and so the
    trees stay the same."""
    _trees_alike(_one_hot(np.random.default_rng(1), 1500), 1, policy, bundle=True)


@pytest.mark.parametrize("policy", POLICIES)
def test_models_name_the_training_features(policy, tmp_path):
    """A model fitted on the working features names the columns of X: the same model from
    dense and sparse input, importances and SHAP values over every column (nothing on the
    columns that cannot split), and a model file that loads back."""
    rng = np.random.default_rng(2)
    X = _data(rng, 800, sparse=True)
    y = X[:, 0].toarray().ravel() + 2 * X[:, 5].toarray().ravel() + rng.normal(size=800)
    models = [BoostRegressor(grow_policy=policy, n_estimators=10, random_state=0).fit(A, y)
              for A in (X, X.toarray())]
    sparse_model, dense_model = models
    assert np.array_equal(sparse_model.predict(X), dense_model.predict(X.toarray()))
    importances = sparse_model.feature_importances_
    assert importances.shape == (14,) and np.all(importances[10:] == 0)
    assert importances[0] > 0 and importances[5] > 0
    contributions = sparse_model.predict(X[:50], pred_contrib=True)
    assert contributions.shape == (50, 15) and np.all(contributions[:, 10:14] == 0)
    path = tmp_path / "model.json"
    sparse_model.save_model(path)
    loaded = load_model(path)
    assert np.array_equal(loaded.predict(X), sparse_model.predict(X))
