"""scipy.sparse X stands for ``X.toarray()``: the same borders and binned matrices bit for bit,
hence the same models and predictions, without a dense float copy of X."""
import inspect
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from optional_imports import importorskip

sp = importorskip("scipy.sparse")

from boostlib import BoostClassifier, BoostRegressor, Dataset, train  # noqa: E402
from boostlib.engine.binning import BinMapper, _borders_of_sorted  # noqa: E402
from boostlib.engine.sparse_binning import (  # noqa: E402
    _borders_of_counts, check_sparse_X, fit_sparse, is_sparse, transform_sparse)
from reference.strategies import KERNEL_SETTINGS, MAX_BINS_CHOICES  # noqa: E402

FINITE = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)
DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
FORMATS = ["csr_matrix", "csc_matrix", "csr_array", "csc_array"]


def _raw_csr(rows, cols, vals, shape, dtype):
    """A CSR matrix holding exactly the given entries, duplicates and explicit zeros kept, in
    the given order within each row (so possibly unsorted: a non-canonical matrix)."""
    rows = np.asarray(rows, dtype=np.intp)
    order = np.argsort(rows, kind="stable")
    indptr = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=shape[0]))))
    return sp.csr_matrix((np.asarray(vals, dtype=dtype)[order],
                          np.asarray(cols, dtype=np.int32)[order], indptr), shape=shape)


def _as(fmt, X):
    return getattr(sp, fmt)(X)


def _same_borders(a, b):
    assert len(a.borders_) == len(b.borders_)
    for f, (x, y) in enumerate(zip(a.borders_, b.borders_)):
        assert x.dtype == y.dtype == np.float64
        assert x.tobytes() == y.tobytes(), f"feature {f}: {x} != {y}"


def _check_like_dense(S, max_bins, subsample, seed=0, other=None):
    """Fit and transform ``S`` (and ``other``, binned with its borders) like their dense
    twins, bit for bit, in both layouts."""
    D = S.toarray()
    dense = BinMapper(max_bins, subsample).fit(D, np.random.default_rng(seed))
    sparse = BinMapper(max_bins, subsample).fit(S, np.random.default_rng(seed))
    _same_borders(dense, sparse)
    for M in [S] + ([] if other is None else [other]):
        for layout in ("feature", "row"):
            expected = dense.transform(M.toarray(), layout=layout)
            got = sparse.transform(M, layout=layout)
            assert got.dtype == np.uint8 and got.shape == expected.shape
            assert np.array_equal(got, expected), layout
    return sparse


@st.composite
def sparse_matrices(draw):
    """A sparse matrix (entries drawn from small integers, -0.0, explicit zeros and floats,
    possibly a few duplicate entries summing to integers) with its format, dtype, max_bins
    and subsample."""
    n_rows = draw(st.integers(1, 80))
    n_features = draw(st.integers(1, 5))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    density = draw(st.sampled_from([0.0, 0.05, 0.3, 0.9, 1.0]))
    mask = draw(hnp.arrays(np.float64, (n_rows, n_features), elements=st.floats(0, 1)))
    rows, cols = np.nonzero(mask < density)
    k = rows.size
    pool = np.array([0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.5, 1e-300, -1e300, 1e300])
    kind = draw(hnp.arrays(np.int8, k, elements=st.integers(0, 2)))
    from_pool = pool[draw(hnp.arrays(np.int64, k, elements=st.integers(0, pool.size - 1)))]
    floats = draw(hnp.arrays(np.float64, k, elements=st.floats(-1e6, 1e6, **FINITE)))
    ints = draw(hnp.arrays(np.float64, k, elements=st.integers(-3, 3).map(float)))
    vals = np.where(kind == 0, from_pool, np.where(kind == 1, floats, ints))
    if dtype == np.float32:
        vals = np.clip(vals, -1e30, 1e30)
    # a few duplicate entries of integer values (their sum is exact in any order)
    n_dup = draw(st.integers(0, min(k, 3)))
    rows = np.concatenate([rows, rows[:n_dup]])
    cols = np.concatenate([cols, cols[:n_dup]])
    vals = np.concatenate([vals, np.arange(1, n_dup + 1, dtype=np.float64)])
    if n_dup:
        vals[:n_dup] = np.round(vals[:n_dup]).clip(-1e6, 1e6)
    S = _raw_csr(rows, cols, vals, (n_rows, n_features), dtype)
    fmt = draw(st.sampled_from(FORMATS + ["raw csr", "coo_matrix"]))
    if fmt != "raw csr":
        S = _as(fmt, S)
    max_bins = draw(st.sampled_from(MAX_BINS_CHOICES))
    subsample = draw(st.sampled_from([1, 3, 20, 200_000]))
    return S, max_bins, subsample


# -- binning: sparse == dense -----------------------------------------------------------------

@KERNEL_SETTINGS
@given(data=sparse_matrices(), seed=st.integers(0, 3), scale=st.sampled_from([1.0, -0.5, 3.0]))
def test_sparse_binning_equals_dense_binning(data, seed, scale):
    S, max_bins, subsample = data
    _check_like_dense(S, max_bins, subsample, seed, other=(S * scale).tocsc())


@KERNEL_SETTINGS
@given(distinct=hnp.arrays(np.float64, st.integers(1, 600), unique=True,
                           elements=st.one_of(st.floats(-1e6, 1e6, **FINITE),
                                              st.sampled_from([1e308, -1e308, 0.0, 5e-324]))),
       counts=st.lists(st.integers(1, 40), min_size=600, max_size=600),
       max_bins=st.sampled_from(MAX_BINS_CHOICES))
def test_borders_of_counts_equals_borders_of_repeated_values(distinct, counts, max_bins):
    distinct = np.sort(distinct)
    counts = np.asarray(counts[:distinct.size])
    expected = _borders_of_sorted(np.repeat(distinct, counts), max_bins)
    got = _borders_of_counts(distinct, counts, max_bins)
    assert got.tobytes() == expected.tobytes()


def test_borders_of_counts_edge_cases():
    assert _borders_of_counts(np.empty(0), np.empty(0, np.intp), 255).size == 0
    assert _borders_of_counts(np.array([2.0]), np.array([7]), 255).size == 0
    with pytest.raises(ValueError, match="distinct and counts"):
        _borders_of_counts(np.array([1.0, 2.0]), np.array([1]), 255)


EDGE_CASES = {
    "one row": sp.csr_matrix(np.array([[0.0, 3.0, -1.0]])),
    "one stored entry": sp.csr_matrix(([5.0], ([0], [0])), shape=(1, 1)),
    "all-zero columns": sp.csr_matrix((7, 4)),
    "negative values": sp.csr_matrix(np.array([[-3.0, 0, 0], [0, -1.0, 2.0], [-3.0, 0, 1.0],
                                               [0, 0, 0], [-0.5, 4.0, 0]])),
    "explicit zeros and -0.0": _raw_csr([0, 1, 2, 3, 3], [0, 0, 1, 1, 0],
                                        [0.0, -0.0, 0.0, 2.0, 1.0], (5, 2), np.float64),
    "duplicates": _raw_csr([0, 0, 2, 2, 2, 1], [1, 1, 0, 0, 0, 0],
                           [1.0, 2.0, 1.0, -4.0, 2.0, 1.0], (4, 2), np.float64),
    "all stored, no implicit zero": sp.csr_matrix(np.arange(1.0, 41.0).reshape(10, 4)),
}


@pytest.mark.parametrize("name", list(EDGE_CASES))
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("max_bins", [2, 3, 255])
def test_edge_cases(name, fmt, dtype, max_bins):
    S = _as(fmt, EDGE_CASES[name].astype(dtype))
    _check_like_dense(S, max_bins, 200_000)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("max_bins", [2, 16, 255])
@pytest.mark.parametrize("subsample", [1, 50, 200_000])
def test_more_distinct_values_than_bins_and_subsampling(fmt, dtype, max_bins, subsample):
    rng = np.random.default_rng(max_bins + subsample)
    S = sp.random(700, 6, density=0.6, format="csr", random_state=rng, dtype=np.float64)
    S.data = np.round((S.data - 0.3) * 1000.0, 1)       # many distinct values, some repeated
    S = _as(fmt, S.astype(dtype))
    assert min(np.unique(col).size for col in S.toarray().T) > max_bins   # quantile borders
    _check_like_dense(S, max_bins, subsample, seed=subsample)


def test_transform_of_unseen_values_uses_the_borders():
    train_X = sp.csr_matrix(np.array([[0.0, 1.0], [2.0, 0.0], [4.0, 5.0], [0.0, 0.0]]))
    test_X = sp.csc_matrix(np.array([[-7.0, 0.5], [1.0, 1.0], [3.0, 9.0], [100.0, -1.0]]))
    _check_like_dense(train_X, 255, 200_000, other=test_X)


def test_sparse_binning_does_not_densify():
    n, p = 20_000, 2_000                      # dense float64: 320 MB; binned uint8: 40 MB
    S = sp.random(n, p, density=0.001, format="csr", random_state=0)
    tracemalloc.start()
    try:
        mapper = BinMapper().fit(S)
        _, fit_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        binned = mapper.transform(S, layout="row")
        _, transform_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert binned.shape == (n, p)
    assert fit_peak < 16e6, fit_peak
    assert transform_peak < n * p + 16e6, transform_peak


# -- checks ---------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("fmt", FORMATS)
def test_nan_and_inf_stored_values_are_rejected(bad, fmt):
    S = _as(fmt, sp.csr_matrix(np.array([[1.0, 0.0], [0.0, bad]])))
    for call in (lambda: check_sparse_X(S), lambda: BinMapper().fit(S),
                 lambda: Dataset(S, np.array([0.0, 1.0])),
                 lambda: BoostRegressor(n_estimators=2).fit(S, [0.0, 1.0])):
        with pytest.raises(ValueError, match="X: sparse matrix has NaN/inf stored values; "
                                             "missing values in a sparse matrix are not"):
            call()
    fitted = BoostRegressor(n_estimators=2).fit(np.eye(2), [0.0, 1.0])
    with pytest.raises(ValueError, match="dense array with NaN"):
        fitted.predict(S)
    with pytest.raises(ValueError, match="eval_set.* X: sparse matrix has NaN/inf"):
        BoostRegressor(n_estimators=2).fit(np.eye(2), [0.0, 1.0], eval_set=[(S, [0.0, 1.0])])


def test_check_sparse_X_normalises_and_rejects():
    S = sp.coo_matrix(np.array([[1, 0], [0, 2]], dtype=np.int64))
    X = check_sparse_X(S)
    assert X.format == "csc" and X.dtype == np.float64
    assert check_sparse_X(sp.csr_matrix(np.eye(2, dtype=bool))).dtype == np.float64
    assert check_sparse_X(sp.lil_matrix(np.eye(2, dtype=np.float32))).dtype == np.float32
    for fmt in FORMATS:
        S = _as(fmt, np.eye(3, dtype=np.float32))
        assert check_sparse_X(S) is S            # nothing to do: no copy
    dup = _raw_csr([0, 0], [0, 0], [1.0, 2.0], (1, 1), np.float64)
    fixed = check_sparse_X(dup)
    assert fixed.toarray()[0, 0] == 3.0 and dup.data.size == 2    # the input is not modified
    with pytest.raises(ValueError, match="Complex"):
        check_sparse_X(sp.csr_matrix(np.eye(2, dtype=np.complex128)))
    with pytest.raises(ValueError, match="0 sample"):
        check_sparse_X(sp.csr_matrix((0, 3)))
    with pytest.raises(ValueError, match="0 feature"):
        check_sparse_X(sp.csr_matrix((3, 0)), name="eval X")
    with pytest.raises(ValueError, match="2D"):
        check_sparse_X(sp.coo_array(np.array([1.0, 0.0, 2.0])))


def test_categorical_features_are_rejected_with_sparse_X():
    S = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 2.0]]))
    with pytest.raises(ValueError, match="categorical.*not supported with a sparse X"):
        fit_sparse(BinMapper(), S, categorical=np.array([False, True]))
    mapper = fit_sparse(BinMapper(), S, categorical=np.array([False, False]))
    mapper.categorical_ = np.array([True, False])
    with pytest.raises(ValueError, match="categorical.*not supported with a sparse X"):
        transform_sparse(mapper, S)


def test_dataset_rejects_categorical_features_with_sparse_X():
    if "categorical_features" not in inspect.signature(Dataset).parameters:
        pytest.skip("this Dataset has no categorical features")
    S = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 2.0]]))
    with pytest.raises(ValueError, match="categorical_features marks feature.*not supported "
                                         "with a sparse X"):
        Dataset(S, [0.0, 1.0], categorical_features=[0])
    assert is_sparse(Dataset(S, [0.0, 1.0], categorical_features=[]).X)


def test_is_sparse_does_not_import_scipy(monkeypatch):
    S = sp.csr_matrix(np.eye(2))
    assert is_sparse(S) and is_sparse(sp.csc_array(S)) and is_sparse(sp.coo_matrix(S))
    assert not is_sparse(np.eye(2)) and not is_sparse([[1.0]]) and not is_sparse(None)
    for name in [m for m in sys.modules if m == "scipy" or m.startswith("scipy.")]:
        monkeypatch.delitem(sys.modules, name)
    assert not is_sparse(np.eye(2))
    assert "scipy.sparse" not in sys.modules


# -- training and prediction ----------------------------------------------------------------

def _bag_of_words(n_rows=1000, n_features=200, density=0.04, seed=0):
    rng = np.random.default_rng(seed)
    S = sp.random(n_rows, n_features, density=density, format="csr", random_state=rng,
                  data_rvs=lambda k: rng.integers(1, 4, k).astype(np.float64))
    D = S.toarray()
    logit = 1.5 * D[:, 0] - D[:, 1] + 0.8 * D[:, 2] * D[:, 3] - 0.3
    y = (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    return S, D, y


@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
@pytest.mark.parametrize("fmt", ["csr_matrix", "csc_array"])
def test_estimators_on_sparse_equal_dense_bit_for_bit(policy, fmt):
    S, D, y = _bag_of_words()
    S = _as(fmt, S)
    w = np.random.default_rng(1).random(y.size)
    w[::7] = 0.0                                   # rows of weight 0 leave the borders out
    params = dict(n_estimators=10, grow_policy=policy, max_depth=4, random_state=0, n_jobs=1)
    dense = BoostClassifier(**params).fit(D, y, sample_weight=w, eval_set=[(D, y)])
    sparse = BoostClassifier(**params).fit(S, y, sample_weight=w, eval_set=[(S, y)])
    _same_borders(dense.model_.ensemble.bin_mapper, sparse.model_.ensemble.bin_mapper)
    assert dense.evals_result_ == sparse.evals_result_
    for X in (S, D, S.tocoo()):
        assert np.array_equal(sparse.predict_proba(X), dense.predict_proba(D))
        assert np.array_equal(sparse.predict(X), dense.predict(D))
    reg_d = BoostRegressor(**params).fit(D, y * 2.0 - D[:, 0])
    reg_s = BoostRegressor(**params).fit(S, y * 2.0 - D[:, 0])
    assert np.array_equal(reg_s.predict(S), reg_d.predict(D))


def test_engine_dataset_and_model_on_sparse():
    S, D, y = _bag_of_words(n_rows=800, seed=3)
    ds = Dataset(S, y)
    assert is_sparse(ds.X)                          # kept sparse, not densified
    assert ds.n_rows == 800 and ds.n_features == 200
    params = dict(n_estimators=10, grow_policy="depthwise", random_state=0, n_jobs=1)
    m_sparse = train(params, ds, valid_sets=[Dataset(S.tocsc(), y, reference=ds)])
    m_dense = train(params, Dataset(D, y), valid_sets=[Dataset(D, y)])
    assert m_sparse.evals_result == m_dense.evals_result
    assert np.array_equal(m_sparse.predict(S), m_dense.predict(D))
    assert np.array_equal(m_sparse.predict(S, raw=True), m_dense.predict(D, raw=True))
    assert np.array_equal(m_sparse.predict_virtual_ensembles(S, 2),
                          m_dense.predict_virtual_ensembles(D, 2))
    with pytest.raises(ValueError, match="features"):
        m_sparse.predict(S[:, :10])


@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
def test_agaricus_sparse_equals_dense(policy):
    datasets = importorskip("sklearn.datasets")
    folder = DATASETS / "agaricus"
    train_file, test_file = folder / "agaricus.txt.train", folder / "agaricus.txt.test"
    if not (train_file.exists() and test_file.exists()):
        pytest.skip(f"{folder} is not available")
    X, y, Xt, yt = datasets.load_svmlight_files([str(train_file), str(test_file)],
                                                n_features=126)
    assert is_sparse(X) and is_sparse(Xt)
    params = dict(n_estimators=20, grow_policy=policy, max_depth=4, random_state=0, n_jobs=1)
    sparse = BoostClassifier(**params).fit(X, y)
    dense = BoostClassifier(**params).fit(X.toarray(), y)
    p_sparse, p_dense = sparse.predict_proba(Xt), dense.predict_proba(Xt.toarray())
    assert np.array_equal(p_sparse, p_dense)
    assert np.mean((p_sparse[:, 1] > 0.5) == yt) > 0.95
