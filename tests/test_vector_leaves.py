"""Vector-leaf trees (``multi_strategy="multi_output_tree"``): one tree per round whose
leaves hold a value per output, its splits chosen by the outputs' summed gains."""
import itertools

import numpy as np
import pytest

from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRegressor, Dataset, Model, train
from boostlib.builtin.losses import MultiMSELoss
from boostlib.engine.grower import GrowParams, TreeGrower
from boostlib.testing import check_loss

POLICIES = ("symmetric", "depthwise", "lossguide")


def _data(n=900, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    score = np.nansum(X[:, :2], axis=1) + np.nan_to_num(X[:, 2]) * np.nan_to_num(X[:, 3])
    y = np.digitize(score + 0.5 * rng.normal(size=n),
                    np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y


def _binned(n=400, n_features=4, seed=0):
    rng = np.random.default_rng(seed)
    nbnm = rng.integers(2, 12, n_features).astype(np.int32)
    X = np.stack([rng.integers(0, nb + 1, n) for nb in nbnm]).astype(np.uint8)
    X[X == nbnm[:, None]] = 255         # the top value of each feature stands for missing
    return X, nbnm


# -- the grower ---------------------------------------------------------------------------------
@pytest.mark.parametrize("policy, msl", list(itertools.product(POLICIES, [1, 5])))
def test_k_identical_outputs_grow_the_scalar_tree(policy, msl):
    """With every output's derivatives equal, the summed gain is K times the scalar gain: the
    vector tree has the scalar tree's structure, K times its gains, and its leaf values in
    every output."""
    X, nbnm = _binned()
    rng = np.random.default_rng(1)
    g = rng.normal(size=X.shape[1])
    h = rng.uniform(0.5, 2.0, X.shape[1])
    rows = np.arange(X.shape[1], dtype=np.int32)
    params = dict(max_depth=4, min_samples_leaf=msl, min_child_weight=0.0, max_leaves=9)
    scalar = TreeGrower(X, nbnm, 255, policy, GrowParams(**params))
    tree, node = scalar.grow(rows, g, h)
    k = 3
    vector = TreeGrower(X, nbnm, 255, policy, GrowParams(**params, n_outputs=k))
    vtree, vnode = vector.grow_vector(rows, np.repeat(g[:, None], k, axis=1),
                                      np.repeat(h[:, None], k, axis=1))
    np.testing.assert_array_equal(vnode, node)
    for name in ("feature", "bin", "nan_right"):
        np.testing.assert_array_equal(getattr(vtree, name), getattr(tree, name))
    np.testing.assert_allclose(vtree.gain, k * tree.gain, rtol=1e-12)
    assert vtree.value.shape == (tree.value.size, k)
    for j in range(k):
        np.testing.assert_allclose(vtree.value[:, j], tree.value, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(vtree.cover, tree.cover)


def test_leaf_values_are_each_outputs_newton_step():
    X, nbnm = _binned(seed=3)
    rng = np.random.default_rng(2)
    n, k, l2 = X.shape[1], 3, 2.0
    g, h = rng.normal(size=(n, k)), rng.uniform(0.1, 1.0, (n, k))
    grower = TreeGrower(X, nbnm, 255, "depthwise", GrowParams(max_depth=3, n_outputs=k,
                                                               l2_regularization=l2))
    tree, node = grower.grow_vector(np.arange(n, dtype=np.int32), g, h)
    for leaf in np.unique(node):
        at = node == leaf
        np.testing.assert_allclose(tree.value[leaf], -g[at].sum(0) / (h[at].sum(0) + l2),
                                   rtol=1e-12)


# -- training -----------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", POLICIES)
def test_one_vector_tree_per_round_learns_multiclass(policy):
    X, y = _data()
    p = dict(n_estimators=30, max_depth=4, learning_rate=0.3, grow_policy=policy,
             random_state=0, multi_strategy="multi_output_tree")
    model = train({**p, "loss": "multiclass"}, Dataset(X[:700], y[:700]), valid_sets=[Dataset(X[700:], y[700:])])
    curve = model.evals_result["valid_0"]["multiclass"]
    assert curve[-1] < 0.8 * curve[0]
    for group in model.ensemble.trees:      # K trees of one structure, one per output
        first = group.trees[0]
        for t in group.trees[1:]:
            for name in ("feature", "bin", "nan_right"):
                np.testing.assert_array_equal(getattr(t, name), getattr(first, name))
    a = BoostClassifier(**p, n_jobs=1).fit(X[:700], y[:700])
    np.testing.assert_array_equal(a.predict_proba(X[700:]), model.predict(X[700:]))
    b = BoostClassifier(**p, n_jobs=2).fit(X[:700], y[:700])
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


@pytest.mark.parametrize("policy, sampler, update", [
    ("symmetric", "mvs", "sglb"), ("depthwise", "goss", "agbm"), ("lossguide", "uniform", "sgb"),
    ("symmetric", "uniform", "vagbm"), ("depthwise", "mvs", "agbmr")])
def test_vector_trees_train_with_every_sampler_and_update_rule(policy, sampler, update):
    X, y = _data(seed=4)
    p = dict(n_estimators=15, max_depth=3, grow_policy=policy, random_state=0,
             multi_strategy="multi_output_tree", sampler=sampler, subsample=0.6,
             update=update, random_strength=0.5, loss="multiclass",
             sampler_params={"warmup": False} if sampler == "goss" else None)
    model = train(p, Dataset(X[:700], y[:700]), valid_sets=[Dataset(X[700:], y[700:])])
    curve = model.evals_result["valid_0"]["multiclass"]
    assert curve[-1] < curve[0]
    again = train({**p, "n_jobs": 2}, Dataset(X[:700], y[:700]))
    np.testing.assert_array_equal(again.predict(X, raw=True),
                                  train(p, Dataset(X[:700], y[:700])).predict(X, raw=True))


@pytest.mark.parametrize("policy", POLICIES)
def test_model_files_shap_and_staged_predictions(policy, tmp_path):
    X, y = _data(seed=5)
    clf = BoostClassifier(n_estimators=10, max_depth=3, grow_policy=policy, random_state=0,
                          multi_strategy="multi_output_tree").fit(X, y)
    raw = clf.model_.predict(X, raw=True)
    clf.model_.save(tmp_path / "m.json")
    np.testing.assert_array_equal(Model.load(tmp_path / "m.json").predict(X, raw=True), raw)
    contrib = clf.model_.predict(X[:50], pred_contrib=True)     # (rows, features + 1, K)
    assert contrib.shape == (50, X.shape[1] + 1, 4)
    np.testing.assert_allclose(contrib.sum(axis=1), raw[:50], rtol=1e-9, atol=1e-9)
    staged = list(clf.staged_predict_proba(X[:20]))
    np.testing.assert_allclose(staged[-1], clf.predict_proba(X[:20]), rtol=1e-12)


def test_onnx_export_predicts_as_the_model():
    ort = importorskip("onnxruntime")
    from boostlib.export import to_onnx
    X, y = _data(seed=6)
    clf = BoostClassifier(n_estimators=10, max_depth=3, random_state=0,
                          multi_strategy="multi_output_tree").fit(X, y)
    sess = ort.InferenceSession(to_onnx(clf).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    out = dict(zip([o.name for o in sess.get_outputs()],
                   sess.run(None, {"X": X.astype(np.float32)})))
    proba = next(v for v in out.values() if np.ndim(v) == 2 and np.shape(v)[1] == 4)
    np.testing.assert_allclose(proba, clf.predict_proba(X.astype(np.float32)), atol=1e-5)


@pytest.mark.parametrize("param, value", [("monotonic_cst", [1, 0, 0, 0, 0]),
                                          ("prune_features", True)])
def test_unsupported_combinations_are_refused_by_name(param, value):
    X, y = _data()
    p = dict(n_estimators=2, multi_strategy="multi_output_tree", grow_policy="lossguide",
             loss="multiclass")
    with pytest.raises(ValueError, match=f"{param}=.*multi_output_tree"):
        train({**p, param: value}, Dataset(X, y))


def test_categorical_features_are_refused_by_name():
    pd = importorskip("pandas")
    X, y = _data()
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["c"] = pd.Categorical(np.where(X[:, 2] > 0, "p", "q"))
    with pytest.raises(ValueError, match=r"categorical feature\(s\) \['c'\]"):
        BoostClassifier(n_estimators=2, multi_strategy="multi_output_tree",
                        categorical_encoding="sets").fit(frame, y)
    # "auto" one-hot encodes a feature of 2 levels: thresholds split it
    model = BoostClassifier(n_estimators=2, multi_strategy="multi_output_tree").fit(frame, y)
    assert model.model_.encoder.kinds[2] == "onehot"


def test_one_output_scalar_losses_ignore_the_strategy():
    X, y = _data(classes=2)
    p = dict(n_estimators=5, random_state=0)
    a = train(p, Dataset(X, y)).predict(X, raw=True)
    b = train({**p, "multi_strategy": "multi_output_tree"}, Dataset(X, y)).predict(X, raw=True)
    np.testing.assert_array_equal(a, b)


# -- several targets ----------------------------------------------------------------------------
def _targets(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    Y = np.column_stack([X[:, 0] + X[:, 1], 2 * X[:, 0] - X[:, 2], np.sin(X[:, 3])])
    return X, Y + 0.1 * rng.normal(size=Y.shape)


def test_multi_mse_passes_the_conformance_checks():
    X, Y = _targets(200)
    check_loss(MultiMSELoss(n_targets=3), y=Y)


def test_multi_mse_with_a_tree_per_output_is_one_mse_model_per_target():
    X, Y = _targets()
    p = dict(n_estimators=20, max_depth=3, grow_policy="depthwise", random_state=0, n_jobs=1)
    joint = BoostRegressor(**p).fit(X, Y)
    assert joint.loss_.name == "multi_mse"
    pred = joint.predict(X)
    assert pred.shape == Y.shape
    for k in range(Y.shape[1]):
        np.testing.assert_array_equal(pred[:, k], BoostRegressor(**p).fit(X, Y[:, k]).predict(X))


@pytest.mark.parametrize("policy", POLICIES)
def test_multi_target_vector_trees_fit_every_target(policy):
    X, Y = _targets(seed=1)
    reg = BoostRegressor(n_estimators=60, max_depth=4, grow_policy=policy, random_state=0,
                         multi_strategy="multi_output_tree").fit(X[:450], Y[:450])
    pred = reg.predict(X[450:])
    mse = np.mean((pred - Y[450:]) ** 2, axis=0)
    assert np.all(mse < 0.25 * np.var(Y[450:], axis=0))
    assert reg.score(X[450:], Y[450:]) > 0.8


def test_a_2d_target_with_a_scalar_loss_is_refused():
    X, Y = _targets()
    with pytest.raises(ValueError, match="3 columns, but loss 'mse' has 1 output"):
        BoostRegressor(n_estimators=2, loss="mse").fit(X, Y)


def test_dask_vector_trees_equal_the_local_model():
    boostlib_dask = importorskip("boostlib.dask")
    distributed = importorskip("distributed")
    da = importorskip("dask.array")
    X, y = _data(n=3000, seed=7)
    p = dict(n_estimators=10, max_depth=3, grow_policy="depthwise", random_state=0,
             multi_strategy="multi_output_tree")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dask_model = boostlib_dask.DaskBoostClassifier(client=client, **p).fit(
            da.from_array(X, chunks=(1000, 5)), da.from_array(y, chunks=1000))
    local = BoostClassifier(**p, n_jobs=1).fit(X, y)
    np.testing.assert_allclose(dask_model.predict_proba(X), local.predict_proba(X), atol=1e-6)


# -- multilabel classification ------------------------------------------------------------------
def _labels(n=800, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    Y = np.column_stack([X[:, 0] > 0, X[:, 1] + X[:, 2] > 0.5, X[:, 3] * X[:, 0] > 0])
    flip = rng.random(Y.shape) < 0.05
    return X, (Y ^ flip).astype(int)


def test_multilabel_passes_the_conformance_checks():
    from boostlib.builtin.losses import MultiLabelLoss
    check_loss(MultiLabelLoss(n_labels=3))


def test_multilabel_with_a_tree_per_label_is_one_binary_model_per_label():
    X, Y = _labels()
    p = dict(n_estimators=15, max_depth=3, random_state=0, n_jobs=1)
    clf = BoostClassifier(**p).fit(X, Y)
    assert clf.loss_.name == "multilabel"
    np.testing.assert_array_equal(clf.classes_, [0, 1, 2])
    proba = clf.predict_proba(X)
    assert proba.shape == Y.shape
    for k in range(Y.shape[1]):     # (logloss's compiled derivatives: equal to rounding)
        single = BoostClassifier(**p).fit(X, Y[:, k]).predict_proba(X)[:, 1]
        np.testing.assert_allclose(proba[:, k], single, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), (proba > 0.5).astype(int))


@pytest.mark.parametrize("policy", POLICIES)
def test_multilabel_vector_trees_learn_every_label_and_round_trip(policy, tmp_path):
    import boostlib
    X, Y = _labels(seed=1)
    clf = BoostClassifier(n_estimators=40, max_depth=3, grow_policy=policy, random_state=0,
                          multi_strategy="multi_output_tree").fit(X[:600], Y[:600])
    pred = clf.predict(X[600:])
    assert pred.shape == (200, 3)
    assert np.all(np.mean(pred == Y[600:], axis=0) > 0.75)
    clf.save_model(tmp_path / "c.json")
    again = boostlib.load_model(tmp_path / "c.json")
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(again.predict(X), clf.predict(X))


@pytest.mark.parametrize("kwargs, y_of, match", [
    (dict(class_weight="balanced"), lambda Y: Y, "class_weight='balanced' needs one class"),
    (dict(loss="logloss"), lambda Y: Y, "does not fit a multilabel y"),
    (dict(loss="multilabel"), lambda Y: Y[:, 0], "does not fit a one-label y"),
    (dict(), lambda Y: Y * 2, r"0/1 column per label; got values \[2.0\]"),
])
def test_multilabel_misuse_is_refused_by_name(kwargs, y_of, match):
    X, Y = _labels(200)
    with pytest.raises(ValueError, match=match):
        BoostClassifier(n_estimators=2, **kwargs).fit(X, y_of(Y))


def test_plots_draw_a_vector_tree_as_its_outputs_trees():
    importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from boostlib.plotting import plot_importance, plot_tree
    X, y = _data(seed=8)
    clf = BoostClassifier(n_estimators=5, max_depth=3, grow_policy="depthwise",
                          random_state=0, multi_strategy="multi_output_tree").fit(X, y)
    tree = clf.model_.ensemble.trees[0].trees[0]
    ax = plot_tree(clf, tree_index=0)
    drawn = [t.get_text() for t in ax.texts]
    n_splits = int(np.sum(tree.left >= 0))
    assert sum("<=" in text or "in {" in text for text in drawn) >= n_splits
    ax = plot_importance(clf)
    assert len(ax.patches) >= 1
