"""Exclusive feature bundling: the bundled histogram read back per feature equals the
per-feature histogram (non-default bins bit for bit, counts exactly), and models trained
with and without bundles agree."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from boostlib.engine import grower as grower_module
from boostlib.engine.bundling import plan
from boostlib import BoostClassifier
from reference import kernels as ref
from reference.strategies import KERNEL_SETTINGS


def one_hot_matrix(rng, n, levels, n_dense=1, missing=0.0):
    """Binned (feature-major) one-hot columns of categories with ``levels`` levels, then
    ``n_dense`` dense columns (some NaN: bin 255)."""
    cols, nb = [], []
    for k in levels:
        c = rng.integers(0, k, n)
        for j in range(k):
            cols.append((c == j).astype(np.uint8))
            nb.append(2)
    for _ in range(n_dense):
        x = rng.integers(0, 20, n).astype(np.uint8)
        x[rng.random(n) < missing] = 255
        cols.append(x)
        nb.append(20)
    return np.array(cols), np.array(nb, np.int32)


@KERNEL_SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300),
       levels=st.lists(st.integers(2, 9), min_size=2, max_size=5),
       missing=st.sampled_from([0.0, 0.1]), n_dense=st.integers(0, 2))
def test_expanded_bundle_histograms_match_feature_histograms(seed, n, levels, missing,
                                                            n_dense):
    rng = np.random.default_rng(seed)
    X, nb = one_hot_matrix(rng, n, levels, n_dense, missing)
    bundling = plan(X, nb, 255)
    if bundling is None:
        return
    assert bundling.n_columns < X.shape[0]
    H = bundling.rows(X)
    g, h = rng.normal(size=n), rng.random(n)
    node = rng.integers(0, 2, n).astype(np.int32)
    slots = np.arange(2, dtype=np.int32)
    want = ref.compact_hist(ref.build_histograms(X.T.copy(), np.empty(0, np.int32), node,
                                                 slots, g, h, 2, 256), nb, 255)
    cols = ref.compact_rows_hist(ref.build_histograms(H, np.empty(0, np.int32), node, slots,
                                                      g, h, 2, 256), bundling.n_bins_nonmissing)
    got = np.empty_like(want)
    bundling.expand(cols, got)
    computed = np.zeros(want.shape[1], bool)
    computed[bundling.default_at] = True
    assert np.array_equal(got[:, ~computed], want[:, ~computed])
    assert np.array_equal(got[..., 2], want[..., 2])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)


def test_dense_features_are_not_bundled():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (30, 500)).astype(np.uint8)
    assert plan(X, np.full(30, 2, np.int32), 255) is None


@pytest.mark.parametrize("policy, sampler", [("depthwise", None), ("symmetric", None),
                                             ("depthwise", "uniform")])
def test_models_with_and_without_bundles_agree(policy, sampler, monkeypatch):
    # (a sampled depthwise fit walks the other rows: the row-major copy is built then)
    rng = np.random.default_rng(1)
    n = 2000
    cats = rng.integers(0, 6, (n, 3))
    X = np.concatenate([np.eye(6)[cats[:, j]] for j in range(3)] + [rng.normal(size=(n, 2))],
                       axis=1)
    y = ((cats[:, 0] == 2) ^ (cats[:, 1] > 3) ^ (X[:, -1] > 0)).astype(int)
    fit = lambda: BoostClassifier(grow_policy=policy, n_estimators=20, random_state=0,
                                  sampler=sampler, subsample=0.5 if sampler else 1.0,
                                  n_jobs=1).fit(X, y)
    bundled = fit()
    assert grower_module.plan_bundles(
        bundled.model_.ensemble.bin_mapper.transform(X),
        bundled.model_.ensemble.bin_mapper.n_bins_nonmissing_, 255) is not None
    monkeypatch.setattr(grower_module, "plan_bundles", lambda *a, **k: None)
    plain = fit()
    np.testing.assert_allclose(bundled.predict_proba(X), plain.predict_proba(X), atol=1e-9)


@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
def test_sparse_and_dense_input_bundle_alike(policy):
    """Training bundles around each feature's bin of 0.0, which a sparse matrix leaves
    implicit: a one-hot column that is mostly ones must not make the dense fit bundle
    differently (the default bins' sums come by subtraction, so a different plan would
    change the model's last bits)."""
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(4)
    n = 3000
    dominant = np.where(rng.random(n) < 0.8, 0, rng.integers(1, 4, n))
    cats = np.c_[dominant, rng.integers(0, 7, n)]
    X = np.concatenate([np.eye(4)[cats[:, 0]], np.eye(7)[cats[:, 1]]], axis=1)
    y = ((cats[:, 0] == 0) ^ (cats[:, 1] > 3) ^ (rng.random(n) < 0.1)).astype(int)
    params = dict(grow_policy=policy, n_estimators=15, random_state=0, n_jobs=1)
    dense = BoostClassifier(**params).fit(X, y)
    from_sparse = BoostClassifier(**params).fit(sparse.csr_matrix(X), y)
    assert np.array_equal(dense.predict_proba(X), from_sparse.predict_proba(X))
