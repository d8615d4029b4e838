"""Linear leaves (``linear_leaves=True``): the kernels against slow references, the fit's
property from LightGBM's linear trees (a piecewise-linear target is fitted exactly by one
tree), and linear leaves through prediction, model files, SHAP values, ONNX export, the
update rules and the errors."""
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from boostlib import BoostClassifier, BoostRegressor, Dataset, load_model, train
from boostlib._kernels import _linear
from boostlib.engine import linear_leaves
from boostlib.engine.contributions import contributions
from boostlib.engine.ensemble import Ensemble
from boostlib.engine.trees import kind_of
from boostlib.engine.trees.depthwise import DepthwiseTree
from reference.linear_leaves import leaf_fit, linear_part

POLICIES = ("symmetric", "depthwise", "lossguide")


def _piecewise(n=4000, seed=0):
    """``x0`` on a grid of 101 values (each its own bin), a jump at 0 that the first split
    finds, a different line on each side; ``x1`` noise the tree may split on."""
    rng = np.random.default_rng(seed)
    x0 = rng.integers(-50, 51, size=n) / 25.0
    X = np.column_stack([x0, rng.normal(size=n)])
    y = np.where(x0 > 0, 10.0 + 2.0 * x0, -10.0 - 3.0 * x0)
    return X, y


# -- kernels against the references ------------------------------------------------------------
@st.composite
def _leaves(draw):
    """Slots with features, rows in slots, raw values with NaN/inf and constant columns."""
    n_features = draw(st.integers(1, 4))
    n_rows = draw(st.integers(0, 40))
    n_slots = draw(st.integers(1, 4))
    per = [sorted(draw(st.sets(st.integers(0, n_features - 1), max_size=n_features)))
           for _ in range(n_slots)]
    values = st.one_of(st.integers(-8, 8).map(float), st.sampled_from([np.nan, np.inf]))
    X = np.array(draw(st.lists(st.lists(values, min_size=n_features, max_size=n_features),
                               min_size=n_rows, max_size=n_rows)), dtype=float)
    X = X.reshape(n_rows, n_features)
    slot = np.array(draw(st.lists(st.integers(0, n_slots - 1), min_size=n_rows,
                                  max_size=n_rows)), dtype=np.int32)
    g = np.array(draw(st.lists(st.integers(-4, 4).map(float), min_size=n_rows,
                               max_size=n_rows)))
    h = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=n_rows,
                               max_size=n_rows)))
    return per, X, slot, g, h


def _csr(per):
    ptr = np.concatenate([[0], np.cumsum([len(p) for p in per])]).astype(np.int32)
    return ptr, np.array([f for p in per for f in p], dtype=np.int32)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_leaves(), st.integers(1, 2), st.integers(1, 50))
def test_leaf_sums_match_explicit_sums(case, n_threads, block_rows):
    per, X, slot, g, h = case
    ptr, feature = _csr(per)
    k = np.diff(ptr)
    block = 3 + 2 * k + k * k
    base = np.concatenate([[0], np.cumsum(block)[:-1]]).astype(np.int64)
    shift = np.linspace(-1.0, 1.0, feature.size)
    out = np.full(int(block.sum()), np.nan)
    rows = np.arange(X.shape[0], dtype=np.int32)
    _linear.leaf_sums(np.ascontiguousarray(X.T), rows, slot, g, h, ptr, feature, shift, base,
                      out, block_rows, n_threads)
    for s, feats in enumerate(per):
        kk = len(feats)
        want = np.zeros(3 + 2 * kk + kk * kk)
        for i in range(X.shape[0]):
            x = [X[i, f] - shift[ptr[s] + j] for j, f in enumerate(feats)]
            if slot[i] != s or not all(np.isfinite(x)) or kk == 0:
                continue                # (a slot without features is not summed)
            want[:3] += [1.0, h[i], g[i]]
            for j in range(kk):
                want[3 + j] += h[i] * x[j]
                want[3 + kk + j] += g[i] * x[j]
                for m in range(kk):
                    want[3 + 2 * kk + j * kk + m] += h[i] * x[j] * x[m]
        np.testing.assert_allclose(out[base[s]:base[s] + want.size], want, rtol=1e-12,
                                   atol=1e-12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_leaves(), st.integers(1, 2), st.sampled_from([1.0, -0.5]))
def test_add_linear_matches_a_loop(case, n_threads, coef):
    per, X, slot, _, _ = case
    ptr, feature = _csr(per)
    rng = np.random.default_rng(feature.size)
    weight, mean = rng.normal(size=feature.size), rng.normal(size=feature.size)
    out = np.ones(X.shape[0])
    _linear.add_linear(np.ascontiguousarray(X.T), np.arange(X.shape[0], dtype=np.int32),
                       slot, ptr, feature, weight, mean, coef, out, n_threads)
    want = 1.0 + coef * linear_part(ptr, feature, weight, mean, slot, X)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


def test_kernels_refuse_out_of_range_entries():
    cols = np.zeros((2, 3))
    rows = np.arange(3, dtype=np.int32)
    with pytest.raises(ValueError, match="feature out of range"):
        _linear.add_linear(cols, rows, np.zeros(3, np.int32), np.array([0, 1], np.int32),
                           np.array([2], np.int32), np.ones(1), np.zeros(1), 1.0, np.zeros(3),
                           1)
    with pytest.raises(ValueError, match="row or slot out of range"):
        _linear.add_linear(cols, rows, np.array([0, 1, 0], np.int32),
                           np.array([0, 1], np.int32), np.array([0], np.int32), np.ones(1),
                           np.zeros(1), 1.0, np.zeros(3), 1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.sampled_from([0.0, 0.3]))
def test_fit_tree_matches_weighted_least_squares(seed, lam):
    """A depth-2 depthwise tree (leaves 3, 4 under node 1 on feature 0; leaf 2 a leaf of
    the root's split on feature 1): each leaf's parts are the reference's ridge fit on its
    rows and path features."""
    rng = np.random.default_rng(seed)
    n = 60
    X = rng.normal(size=(n, 3)) * [1.0, 100.0, 1e-3] + [0.0, 1e4, 5.0]
    X[rng.random(X.shape) < 0.1] = np.nan
    g, h = rng.normal(size=n), rng.uniform(0.1, 2.0, size=n)
    tree = DepthwiseTree(feature=np.array([1, 0, -1, -1, -1], np.int32),
                         bin=np.zeros(5, np.int32), nan_right=np.zeros(5, np.uint8),
                         left=np.array([1, 3, -1, -1, -1], np.int32),
                         right=np.array([2, 4, -1, -1, -1], np.int32), gain=np.zeros(5),
                         value=np.zeros(5))
    node = rng.choice([2, 3, 4], size=n).astype(np.int32)
    columns = linear_leaves.RawColumns(X, centers=np.array([0.0, 1e4, 5.0]))
    linear_leaves.fit_tree(kind_of("depthwise"), tree, np.arange(n, dtype=np.int32), node,
                           g, h, columns, lam)
    paths = {2: [1], 3: [0, 1], 4: [0, 1]}
    for s in range(5):
        entries = slice(tree.linear_ptr[s], tree.linear_ptr[s + 1])
        if s not in paths:
            assert entries.start == entries.stop
            continue
        at = node == s
        want = leaf_fit(X[at][:, paths[s]], g[at], h[at], lam)
        if want is None:
            assert entries.start == entries.stop
            continue
        keep, w, m = want
        np.testing.assert_array_equal(tree.linear_feature[entries],
                                      np.asarray(paths[s])[keep])
        np.testing.assert_allclose(tree.linear_weight[entries], w, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(tree.linear_mean[entries], m, rtol=1e-9, atol=1e-9)


def test_path_features_follow_numeric_splits_only():
    tree = DepthwiseTree(feature=np.array([3, 1, -1, -1, -1], np.int32),
                         bin=np.zeros(5, np.int32), nan_right=np.array([0, 2, 0, 0, 0],
                                                                       np.uint8),
                         left=np.array([1, 3, -1, -1, -1], np.int32),
                         right=np.array([2, 4, -1, -1, -1], np.int32), gain=np.zeros(5),
                         value=np.zeros(5))
    ptr, feature = kind_of("depthwise").path_features(tree)
    # node 1's split is categorical: its leaves get only the root's feature
    assert [feature[ptr[s]:ptr[s + 1]].tolist() for s in range(5)] == [[], [], [3], [3], [3]]


# -- the fit's properties --------------------------------------------------------------------
@pytest.mark.parametrize("policy", POLICIES)
def test_one_tree_fits_a_piecewise_linear_target_exactly(policy):
    X, y = _piecewise()
    model = BoostRegressor(n_estimators=1, learning_rate=1.0, max_depth=1, grow_policy=policy,
                           max_leaves=2 if policy == "lossguide" else None,
                           l2_regularization=0.0, linear_leaves=True).fit(X, y)
    np.testing.assert_allclose(model.predict(X), y, atol=1e-9)
    plain = BoostRegressor(n_estimators=1, learning_rate=1.0, max_depth=1,
                           grow_policy=policy,
                           max_leaves=2 if policy == "lossguide" else None,
                           l2_regularization=0.0).fit(X, y)
    assert np.abs(plain.predict(X) - y).max() > 1.0


@pytest.mark.parametrize("policy", POLICIES)
def test_prediction_is_the_leaf_constant_plus_the_linear_part(policy):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) * 3 + np.abs(np.nan_to_num(X[:, 1])) + rng.normal(size=600)
    model = train(dict(n_estimators=8, max_depth=3, grow_policy=policy, linear_leaves=True,
                       linear_lambda=0.5, random_state=0, learning_rate=0.3),
                  Dataset(X, y))
    ens = model.ensemble
    assert ens.has_linear
    leaves = model.apply(X)
    want = np.full(X.shape[0], ens.bias)
    for t, (tree, c) in enumerate(zip(ens.trees, ens.coef)):
        slot = leaves[:, t]
        want += c * (tree.value[slot] + linear_part(tree.linear_ptr, tree.linear_feature,
                                                    tree.linear_weight, tree.linear_mean,
                                                    slot, X))
    np.testing.assert_allclose(model.predict(X, raw=True), want, rtol=1e-12, atol=1e-12)


def test_missing_values_take_the_leaf_constant():
    X, y = _piecewise()
    model = train(dict(n_estimators=1, learning_rate=1.0, max_depth=1, grow_policy="depthwise",
                       l2_regularization=0.0, linear_leaves=True), Dataset(X, y))
    tree = model.ensemble.trees[0]
    Xm = X[:20].copy()
    Xm[:, 0] = np.nan
    slot = model.apply(Xm)[:, 0]
    np.testing.assert_array_equal(model.predict(Xm, raw=True),
                                  model.ensemble.bias + tree.value[slot])


def test_validation_scores_follow_the_linear_parts():
    """The scores training keeps for a validation set equal the model's predictions."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1500, 3))
    y = 2 * X[:, 0] + np.sin(3 * X[:, 1]) + 0.1 * rng.normal(size=1500)
    model = BoostRegressor(n_estimators=15, grow_policy="lossguide", linear_leaves=True,
                           subsample=0.7, random_state=0, eval_metric="rmse").fit(
        X[:1000], y[:1000], eval_set=[(X[1000:], y[1000:])])
    rmse = np.sqrt(np.mean((model.predict(X[1000:]) - y[1000:]) ** 2))
    assert model.evals_result_["valid_0"]["rmse"][-1] == pytest.approx(rmse, rel=1e-12)


@pytest.mark.parametrize("policy", POLICIES)
def test_linear_leaves_beat_constant_leaves_on_linear_structure(policy):
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(3000, 4))
    y = np.where(X[:, 1] > 0, 3 * X[:, 0], -2 * X[:, 0] + X[:, 2]) + 0.1 * rng.normal(size=3000)
    errors = []
    for linear in (False, True):
        m = BoostRegressor(n_estimators=30, max_depth=3, grow_policy=policy,
                           linear_leaves=linear, random_state=0).fit(X[:2000], y[:2000])
        errors.append(np.mean((m.predict(X[2000:]) - y[2000:]) ** 2))
    assert errors[1] < 0.5 * errors[0]


# -- reproducibility, files, explanations -------------------------------------------------------
@pytest.mark.parametrize("policy", POLICIES)
def test_models_are_bit_identical_whatever_n_jobs_and_through_files(policy, tmp_path):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 2]) ** 2 + rng.normal(size=3000)
    fits = [BoostRegressor(n_estimators=10, grow_policy=policy, linear_leaves=True,
                           sampler="goss", n_jobs=n, random_state=0).fit(X, y)
            for n in (1, 2)]
    p1, p2 = (m.predict(X) for m in fits)
    np.testing.assert_array_equal(p1, p2)
    path = tmp_path / "m.json"
    fits[0].save_model(path)
    assert json.loads(path.read_text())["format_version"] == 8
    np.testing.assert_array_equal(load_model(path).predict(X), p1)


def test_a_file_of_version_7_with_linear_fields_is_refused(tmp_path):
    X, y = _piecewise(500)
    model = BoostRegressor(n_estimators=2, linear_leaves=True).fit(X, y)
    path = tmp_path / "m.json"
    model.save_model(path)
    doc = json.loads(path.read_text())
    doc["format_version"] = 7
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="linear_ptr.*format version 8"):
        load_model(path)


@pytest.mark.parametrize("policy", POLICIES)
def test_shap_values_sum_to_the_raw_score_and_hold_the_linear_terms(policy):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(800, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 1]) * np.nan_to_num(X[:, 2])
    model = train(dict(n_estimators=5, max_depth=2, grow_policy=policy, linear_leaves=True,
                       random_state=0), Dataset(X, y))
    phi = model.predict(X, pred_contrib=True)
    np.testing.assert_allclose(phi.sum(axis=1), model.predict(X, raw=True), atol=1e-10)
    # what the linear terms add to the SHAP values of the same trees without them
    ens = model.ensemble
    constant = Ensemble(ens.bin_mapper, ens.policy, ens.bias)
    for tree, c in zip(ens.trees, ens.coef):
        constant.add(linear_leaves.constant_part(tree), c)
    extra = phi - contributions(constant, X)
    leaves = model.apply(X)
    want = np.zeros_like(extra)
    for t, (tree, c) in enumerate(zip(ens.trees, ens.coef)):
        for i in range(X.shape[0]):
            s = leaves[i, t]
            f = tree.linear_feature[tree.linear_ptr[s]:tree.linear_ptr[s + 1]]
            if f.size and np.all(np.isfinite(X[i, f])):
                e = slice(tree.linear_ptr[s], tree.linear_ptr[s + 1])
                want[i, f] += c * tree.linear_weight[e] * (X[i, f] - tree.linear_mean[e])
    np.testing.assert_allclose(extra, want, atol=1e-10)
    inter = model.predict(X[:50], pred_interactions=True)
    np.testing.assert_allclose(inter.sum(axis=(1, 2)), model.predict(X[:50], raw=True),
                               atol=1e-10)


# -- with the rest of the library ----------------------------------------------------------------
@pytest.mark.parametrize("update", ["dart", "rf", "sglb"])
def test_update_rules_keep_scores_and_predictions_together(update):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(1200, 3))
    y = 2 * X[:, 0] + np.abs(X[:, 1]) + 0.3 * rng.normal(size=1200)
    extra = dict(subsample=0.6, learning_rate=1.0) if update == "rf" else {}
    model = BoostRegressor(n_estimators=12, grow_policy="depthwise", linear_leaves=True,
                           update=update, random_state=0, eval_metric="rmse", **extra).fit(
        X[:800], y[:800], eval_set=[(X[800:], y[800:])])
    rmse = np.sqrt(np.mean((model.predict(X[800:]) - y[800:]) ** 2))
    assert model.evals_result_["valid_0"]["rmse"][-1] == pytest.approx(rmse, rel=1e-9)


def test_multiclass_and_sparse_input():
    import scipy.sparse as sp
    rng = np.random.default_rng(7)
    X = rng.normal(size=(900, 4))
    X[rng.random(X.shape) < 0.5] = 0.0
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 0.5)
    dense = BoostClassifier(n_estimators=6, linear_leaves=True, random_state=0).fit(X, y)
    sparse = BoostClassifier(n_estimators=6, linear_leaves=True, random_state=0).fit(
        sp.csr_matrix(X), y)
    assert dense.model_.ensemble.has_linear
    np.testing.assert_allclose(dense.predict_proba(X), sparse.predict_proba(sp.csr_matrix(X)),
                               rtol=1e-12, atol=1e-12)


def test_continuing_a_model_with_linear_leaves():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(1000, 3))
    y = 3 * X[:, 0] + X[:, 1] ** 2
    params = dict(n_estimators=5, grow_policy="depthwise", linear_leaves=True, random_state=0)
    first = train(params, Dataset(X, y))
    both = train(params, Dataset(X, y), init_model=first)
    whole = train(dict(params, n_estimators=10), Dataset(X, y))
    np.testing.assert_array_equal(both.predict(X), whole.predict(X))


@pytest.mark.parametrize("params, match", [
    (dict(multi_strategy="multi_output_tree"), "multi_output_tree"),
    (dict(monotonic_cst=[1, 0]), "monotonic_cst"),
    (dict(loss="l1"), "renewal"),
])
def test_combinations_linear_leaves_cannot_serve_are_refused(params, match):
    X, y = _piecewise(300)
    Y = np.column_stack([y, y]) if "multi_strategy" in params else y
    loss = {"loss": "multi_mse"} if "multi_strategy" in params else {}
    with pytest.raises(ValueError, match=match):
        train({"linear_leaves": True, **loss, **params}, Dataset(X, Y))


def test_linear_lambda_without_linear_leaves_is_refused():
    X, y = _piecewise(300)
    with pytest.raises(ValueError, match="linear_lambda=0.5 has no linear leaves"):
        train(dict(linear_lambda=0.5), Dataset(X, y))


def test_batches_are_refused():
    X, y = _piecewise(300)
    ds = Dataset.from_batches([(X[:150], y[:150]), (X[150:], y[150:])])
    with pytest.raises(ValueError, match="linear_leaves=True .* batches"):
        train(dict(linear_leaves=True), ds)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("dtype, tol", [("float64", 1e-12), ("float32", 1e-4)])
def test_onnx_graph_adds_the_linear_parts(policy, dtype, tol):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from boostlib.export import to_onnx
    rng = np.random.default_rng(9)
    X = rng.normal(size=(700, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 1]) ** 2
    model = BoostRegressor(n_estimators=12, grow_policy=policy, linear_leaves=True,
                           random_state=0).fit(X, y)
    session = ort.InferenceSession(to_onnx(model, dtype=dtype).SerializeToString())
    got = session.run(None, {"X": X.astype(dtype)})[0]
    np.testing.assert_allclose(got, model.predict(X), rtol=tol, atol=tol)
    labels = (y > np.median(y)).astype(int) + (y > np.quantile(y, 0.9))
    clf = BoostClassifier(n_estimators=5, grow_policy=policy, linear_leaves=True,
                          random_state=0).fit(X, labels)
    session = ort.InferenceSession(to_onnx(clf, dtype="float64").SerializeToString())
    label, proba = session.run(None, {"X": X})
    np.testing.assert_allclose(proba, clf.predict_proba(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(label, clf.predict(X))


def test_shap_tree_form_is_refused():
    from boostlib.explain import to_shap
    X, y = _piecewise(300)
    model = BoostRegressor(n_estimators=2, linear_leaves=True).fit(X, y)
    with pytest.raises(ValueError, match="linear leaves"):
        to_shap(model)

