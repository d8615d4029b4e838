"""Exclusive feature bundling: the bundled histogram read back per feature equals the
per-feature histogram (non-default bins bit for bit, counts exactly), and models trained
with and without bundles agree."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from optional_imports import importorskip

from boostlib._kernels import _bundling
from boostlib.engine import histograms as histograms_module
from boostlib.engine.bundling import plan
from boostlib import BoostClassifier
from reference import kernels as ref
from reference.strategies import KERNEL_SETTINGS, binned_data


@KERNEL_SETTINGS
@given(n_rows=st.integers(0, 40), tries=st.integers(1, 4), max_values=st.integers(2, 12),
       pick=st.data())
def test_greedy_bundles_match_reference(n_rows, tries, max_values, pick):
    """Features of random rows (none, one, every row, overlaps) and needs, some too large
    for any bundle, given in one call or in several that go on from each other."""
    n = pick.draw(st.integers(0, 15))
    feature_rows = [sorted(pick.draw(st.sets(st.integers(0, n_rows - 1), max_size=n_rows)))
                    if n_rows else [] for _ in range(n)]
    need = pick.draw(st.lists(st.integers(1, 12), min_size=n, max_size=n))
    cuts = sorted(pick.draw(st.sets(st.integers(1, max(1, n - 1)), max_size=3))) if n > 1 \
        else []
    got = np.full(n, -7, dtype=np.int32)
    size = np.zeros(n, dtype=np.int64)
    used = np.zeros((tries, n_rows), dtype=np.uint8)
    count = 0
    for i, j in zip([0] + cuts, cuts + [n]):
        part = feature_rows[i:j]
        indptr = np.concatenate([[0], np.cumsum([len(r) for r in part])]).astype(np.int64)
        rows = np.array([r for f in part for r in f], dtype=np.int32)
        count = _bundling.greedy_bundles(indptr, rows, np.array(need[i:j], np.int64),
                                         max_values, size, used, count, got[i:j])
    expected, expected_count = ref.greedy_bundles(feature_rows, need, tries, max_values)
    assert got.tolist() == expected and count == expected_count


@KERNEL_SETTINGS
@given(data=binned_data(max_rows=60, max_features=5), pick=st.data())
def test_nondefault_rows_match_numpy(data, pick):
    X = data.X_binned
    features = np.array(pick.draw(st.lists(st.integers(0, X.shape[0] - 1), max_size=6)),
                        dtype=np.intp)
    default = np.array(pick.draw(st.lists(st.sampled_from([0, 1, 2, 255]),
                                          min_size=features.size, max_size=features.size)),
                       dtype=np.uint8)
    indptr, rows = _bundling.nondefault_rows(X, features, default)
    expected = [np.flatnonzero(X[f] != d) for f, d in zip(features, default)]
    assert indptr.tolist() == np.cumsum([0] + [e.size for e in expected]).tolist()
    assert rows.tolist() == [int(r) for e in expected for r in e]
    with pytest.raises(ValueError, match="feature out of range"):
        _bundling.nondefault_rows(X, np.array([X.shape[0]], np.intp), default[:1] if
                                  default.size else np.zeros(1, np.uint8))


def test_greedy_bundles_reject_bad_tables():
    out = np.empty(2, np.int32)
    need = np.ones(2, np.int64)
    for indptr, rows, size, match in (([0, 1], [0], 2, r"n \+ 1"),
                                      ([0, 1, 3], [0, 1], 2, r"len\(rows\)"),
                                      ([0, 2, 1], [0], 2, "decrease"),
                                      ([0, 1, 2], [0, 5], 2, "range"),
                                      ([0, 1, 2], [0, 1], 1, "room")):
        with pytest.raises(ValueError, match=match):
            _bundling.greedy_bundles(np.array(indptr, np.int64), np.array(rows, np.int32),
                                     need, 255, np.zeros(size, np.int64),
                                     np.zeros((4, 3), np.uint8), 0, out)


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


@pytest.mark.parametrize("block", [1, 700, 2000])
def test_planning_in_blocks_of_features_gives_the_same_bundles(block, monkeypatch):
    """Features planned one at a time, a few at a time, or all at once (the default block)
    make the same bundles, on a dense matrix and on its sparse twin."""
    from boostlib.engine import bundling as bundling_module
    from boostlib.engine.sparse_binned import SparseBinned
    rng = np.random.default_rng(5)
    X, nb = one_hot_matrix(rng, 300, [5, 70, 3, 40], n_dense=2, missing=0.1)
    zero = np.zeros(X.shape[0], np.uint8)       # the bins of 0.0, as training passes them
    f, r = np.nonzero(X)
    twin = SparseBinned.from_entries(X.shape[1], zero, r.astype(np.int32), f, X[f, r])
    whole = plan(X, nb, 255, default_bins=zero)
    assert len(whole.columns) < 10
    monkeypatch.setattr(bundling_module, "PLAN_BLOCK", block)
    for binned in (X, twin):
        parts = plan(binned, nb, 255, default_bins=zero)
        assert [c.tolist() for c in parts.columns] == [c.tolist() for c in whole.columns]


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
    assert histograms_module.plan_bundles(
        bundled.model_.ensemble.bin_mapper.transform(X),
        bundled.model_.ensemble.bin_mapper.n_bins_nonmissing_, 255) is not None
    monkeypatch.setattr(histograms_module, "plan_bundles", lambda *a, **k: None)
    plain = fit()
    np.testing.assert_allclose(bundled.predict_proba(X), plain.predict_proba(X), atol=1e-9)


@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
def test_sparse_and_dense_input_bundle_alike(policy):
    """Training bundles around each feature's bin of 0.0, which a sparse matrix leaves
    implicit: a one-hot column that is mostly ones must not make the dense fit bundle
    differently (the default bins' sums come by subtraction, so a different plan would
    change the model's last bits)."""
    sparse = importorskip("scipy.sparse")
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
