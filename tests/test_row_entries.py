"""Sparse histogram rows (``boostlib.engine.row_entries``): the entries rebuild the rows,
histograms built from them equal the reference histograms of the rows (every non-default
bin and every count exactly, the default bins to rounding), whatever the threads, and
models trained with and without them agree."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from optional_imports import importorskip

from boostlib import BoostClassifier
from boostlib._kernels import _histogram
from boostlib.engine import grower as grower_module
from boostlib.engine import histograms as histograms_module
from boostlib.engine import row_entries
from boostlib.engine.row_entries import plan_entries
from reference import kernels as ref
from reference.strategies import KERNEL_SETTINGS, gradients


@st.composite
def sparse_rows(draw, max_rows=60, max_columns=5, max_bins=5):
    """A row-major uint8 histogram matrix, mostly at one value per column (one row,
    constant columns and fully dense columns included), and its layout."""
    n = draw(st.integers(1, max_rows))
    m = draw(st.integers(1, max_columns))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    nb = rng.integers(1, max_bins + 1, m)           # values 0..nb[c] (nb[c]: missing)
    X = np.empty((n, m), np.uint8)
    for c in range(m):
        base = rng.integers(0, nb[c] + 1)
        away = rng.random(n) < draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
        X[:, c] = np.where(away, rng.integers(0, nb[c] + 1, n), base)
    offsets = np.concatenate([[0], np.cumsum(nb + 1)]).astype(np.int32)
    return X, offsets


def dense_from_entries(entries, offsets, n_rows):
    base = offsets[:-1].astype(np.int64)
    X = np.tile((entries.default - base).astype(np.uint8), (n_rows, 1))
    for r in range(n_rows):
        bins = entries.bins[entries.start[r]:entries.start[r + 1]]
        assert np.all(np.diff(bins) > 0)
        cols = np.searchsorted(offsets, bins, side="right") - 1
        X[r, cols] = bins - base[cols]
    return X


@KERNEL_SETTINGS
@given(data=sparse_rows())
def test_entries_rebuild_the_rows(data):
    X, offsets = data
    entries = plan_entries(X, offsets, force=True)
    assert entries is not None and entries.n_rows == X.shape[0]
    assert np.array_equal(dense_from_entries(entries, offsets, X.shape[0]), X)
    # a column's default is its most frequent value: no column has more entries than rows
    # at its default would
    assert entries.bins.size <= X.size


def test_entries_are_listed_only_when_they_pay():
    rng = np.random.default_rng(0)
    m = row_entries.MIN_COLUMNS
    offsets = np.arange(0, (m + 1) * 21, 21, dtype=np.int32)
    dense = rng.integers(0, 20, (500, m)).astype(np.uint8)
    sparse = np.where(rng.random((500, m)) < 0.05, dense, 0).astype(np.uint8)
    assert plan_entries(dense, offsets) is None
    assert plan_entries(sparse, offsets) is not None
    assert plan_entries(sparse[:, :m // 2], offsets[:m // 2 + 1]) is None    # few columns
    assert plan_entries(np.zeros((0, 3), np.uint8), offsets[:4], force=True) is None


@KERNEL_SETTINGS
@given(data=st.one_of(sparse_rows(), sparse_rows(max_rows=400, max_columns=2, max_bins=2)),
       draw=st.data())
def test_histograms_from_entries_match_the_reference(data, draw):
    """One or several slots (rows grouped by slot or not), rows by id or by position, rows
    in no slot, the count channel or not, 1 or 2 threads (bit-identical); a slot's rows
    summed in parts (as many as the data asks, up to ENTRY_MAX_PARTS: the second strategy's
    many rows over few bins ask for several)."""
    X, offsets = data
    n, m = X.shape
    entries = plan_entries(X, offsets, force=True)
    g, h = draw.draw(gradients(n))
    n_nodes = draw.draw(st.integers(1, 4))
    node = np.asarray(draw.draw(st.lists(st.integers(0, n_nodes - 1), min_size=n,
                                         max_size=n)), np.int32)
    slot_of_node = np.asarray(draw.draw(st.permutations(range(n_nodes))), np.int32)
    n_slots = draw.draw(st.integers(1, n_nodes))
    slot_of_node[slot_of_node >= n_slots] = -1
    n_ch = draw.draw(st.sampled_from([2, 3]))
    # rows by id: a subset of a larger matrix (its other rows hold other values)
    by_id = draw.draw(st.booleans())
    if by_id:
        extra = np.random.default_rng(n).integers(0, 2, (n + 3, m)).astype(np.uint8)
        big = np.concatenate([extra, X])
        big_entries = plan_entries(big, offsets, force=True)
        rows = np.arange(n + 3, 2 * n + 3, dtype=np.int32)
        matrix, args = big, big_entries
    else:
        rows = np.empty(0, np.int32)
        matrix, args = X, entries
    n_entries, n_rows = int(args.start[-1]), args.n_rows

    def parts_of(m):
        return ref.entry_parts(m, n_entries, n_rows, int(offsets[-1]),
                               _histogram.ENTRY_MAX_PARTS, _histogram.ENTRY_PART_WORK)

    want = ref.compact_rows_hist(
        ref.build_histograms_in_parts(X, np.empty(0, np.int32), node, slot_of_node, g, h,
                                      n_slots, int(np.diff(offsets).max()), parts_of),
        np.diff(offsets) - 1)[..., :n_ch]
    got = []
    for threads in (1, 2):
        hist = np.full((n_slots, offsets[-1], n_ch), np.nan)
        _histogram.build_histograms(np.empty((matrix.shape[0], 0), np.uint8), rows, node,
                                    slot_of_node, g.astype(np.float32),
                                    h.astype(np.float32), offsets, hist, threads,
                                    **args.kernel_args())
        got.append(hist)
    assert np.array_equal(got[0], got[1], equal_nan=True)
    default = np.zeros(offsets[-1], bool)
    default[args.default] = True
    assert np.array_equal(got[0][:, ~default], want[:, ~default])
    if n_ch == 3:
        assert np.array_equal(got[0][..., 2], want[..., 2])
    scale = np.abs(g).sum() + np.abs(h).sum() + n
    np.testing.assert_allclose(got[0], want, rtol=0, atol=1e-12 * scale)


def test_entries_are_checked():
    X = np.array([[0, 1], [1, 0]], np.uint8)
    offsets = np.array([0, 2, 4], np.int32)
    entries = plan_entries(X, offsets, force=True)
    args = dict(entries.kernel_args())
    hist = np.zeros((1, 4, 3))
    call = lambda M, **kw: _histogram.build_histograms(
        M, np.empty(0, np.int32), np.zeros(2, np.int32), np.zeros(1, np.int32),
        np.ones(2, np.float32), np.ones(2, np.float32), offsets, hist, 1, **kw)
    with pytest.raises(ValueError, match="no columns"):
        call(X, **args)
    with pytest.raises(ValueError, match="go together"):
        call(np.empty((2, 0), np.uint8), entry_start=args["entry_start"])
    with pytest.raises(ValueError, match="default bin"):
        call(np.empty((2, 0), np.uint8), **dict(args, entry_default=np.array([3, 3],
                                                                           np.int32)))
    with pytest.raises(ValueError, match="entry_start"):
        call(np.empty((2, 0), np.uint8), **dict(args, entry_start=args["entry_start"][:-1]))


def one_hot_data(n=3000, seed=1):
    """Many rare one-hot columns (20 categories of 12 levels, most rows at level 0) and a
    numeric column: bundled columns mostly at their default bins."""
    rng = np.random.default_rng(seed)
    cats = np.where(rng.random((n, 20)) < 0.85, 0, rng.integers(1, 12, (n, 20)))
    X = np.concatenate([np.eye(12)[cats[:, j]][:, 1:] for j in range(20)]
                       + [rng.normal(size=(n, 1))], axis=1)
    y = ((cats[:, 0] > 5) ^ (cats[:, 1] == 3) ^ (X[:, -1] > 0.5)).astype(int)
    if seed % 2:
        y = y + (cats[:, 2] > 8)                      # three classes
    return X, y


@pytest.mark.parametrize("policy, extra", [
    ("lossguide", {}), ("depthwise", {}), ("symmetric", {}),
    ("lossguide", dict(sampler="uniform", subsample=0.5)),
    ("depthwise", dict(sampler="goss")), ("symmetric", dict(sampler="mvs", subsample=0.5)),
    ("lossguide", dict(colsample_bynode=0.5, sampler="uniform", subsample=0.5)),
    ("depthwise", dict(random_strength=0.5)),
])
def test_models_with_and_without_entries_agree(policy, extra, monkeypatch):
    X, y = one_hot_data(seed=1 if policy == "depthwise" else 2)
    used = []

    def record(*args, **kwargs):
        out = plan_entries(*args, **kwargs)
        used.append(out is not None)
        return out

    monkeypatch.setattr(histograms_module, "plan_entries", record)
    monkeypatch.setattr(row_entries, "MIN_COLUMNS", 1)
    kw = dict(max_leaves=31) if policy == "lossguide" else {}
    fit = lambda: BoostClassifier(grow_policy=policy, n_estimators=25, random_state=0,
                                  min_samples_leaf=5, n_jobs=2, **kw, **extra).fit(X, y)
    with_entries = fit()
    assert used and all(used)
    monkeypatch.setattr(row_entries, "MAX_DENSITY", -1.0)
    used.clear()
    without = fit()
    assert used and not any(used)
    np.testing.assert_allclose(with_entries.predict_proba(X), without.predict_proba(X),
                               atol=1e-9)


def record_growers(monkeypatch):
    """The list the histograms of every TreeGrower made from now on are appended to."""
    growers = []
    init = grower_module.TreeGrower.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        growers.append(self.histograms)

    monkeypatch.setattr(grower_module.TreeGrower, "__init__", spy)
    return growers


@pytest.mark.parametrize("policy", ["lossguide", "depthwise", "symmetric"])
def test_sparse_input_lists_the_same_entries_without_dense_rows(policy, monkeypatch):
    """Sparse input builds its entries from its own (no dense row-major matrix), and they
    are the dense twin's entries: the two fits give the same model, bit for bit."""
    sparse = importorskip("scipy.sparse")
    X, y = one_hot_data(seed=2)
    X[::5, -1] = 0.0                            # a numeric column, partly zero
    growers = record_growers(monkeypatch)
    monkeypatch.setattr(row_entries, "MIN_COLUMNS", 1)
    kw = dict(max_leaves=31) if policy == "lossguide" else {}
    params = dict(grow_policy=policy, n_estimators=15, random_state=0, n_jobs=2, **kw)
    dense = BoostClassifier(**params).fit(X, y)
    from_sparse = BoostClassifier(**params).fit(sparse.csr_matrix(X), y)
    a, b = growers
    assert a.row_entries is not None and b.row_entries is not None
    assert b.hist_rows.shape[1] == 0
    for name in ("start", "bins", "default"):
        assert np.array_equal(getattr(a.row_entries, name), getattr(b.row_entries, name))
    assert np.array_equal(dense.predict_proba(X), from_sparse.predict_proba(X))


def test_sparse_input_takes_the_most_frequent_values_as_the_dense_rows_do(monkeypatch):
    """Columns whose most frequent value is not their value on a row without entries (a
    feature at 1 on most rows, and bundles of one-hot columns where every row has one): the
    entries leave out the most frequent value, from sparse input as from its dense twin."""
    sparse = importorskip("scipy.sparse")
    rng = np.random.default_rng(4)
    n = 2000
    cats = np.minimum(rng.geometric(0.3, (n, 6)) - 1, 9)     # level 0 the most frequent
    X = np.concatenate([np.eye(10)[cats[:, j]] for j in range(6)]
                       + [(rng.random((n, 1)) < 0.9).astype(float),
                          np.where(rng.random((n, 1)) < 0.7, 0.0, rng.normal(size=(n, 1)))],
                       axis=1)
    y = ((cats[:, 0] > 1) ^ (X[:, -2] > 0) ^ (X[:, -1] > 0.3)).astype(int)
    growers = record_growers(monkeypatch)
    monkeypatch.setattr(row_entries, "MIN_COLUMNS", 1)
    monkeypatch.setattr(row_entries, "MAX_DENSITY", 1.0)
    params = dict(grow_policy="lossguide", max_leaves=15, n_estimators=10, random_state=0)
    dense = BoostClassifier(**params).fit(X, y)
    from_sparse = BoostClassifier(**params).fit(sparse.csr_matrix(X), y)
    a, b = growers
    assert b.hist_rows.shape[1] == 0
    for name in ("start", "bins", "default"):
        assert np.array_equal(getattr(a.row_entries, name), getattr(b.row_entries, name))
    moved = a.row_entries.default != a.bundling.offsets[:-1] + a.bundling.column_defaults()
    assert moved.sum() >= 2         # the mostly-1 feature and the bundles of full groups
    assert np.array_equal(dense.predict_proba(X), from_sparse.predict_proba(X))


@pytest.mark.parametrize("policy", ["lossguide", "depthwise", "symmetric"])
def test_entries_fit_the_same_model_whatever_n_jobs(policy, monkeypatch):
    monkeypatch.setattr(row_entries, "MIN_COLUMNS", 1)
    X, y = one_hot_data(seed=2)
    kw = dict(max_leaves=31) if policy == "lossguide" else {}
    fits = [BoostClassifier(grow_policy=policy, n_estimators=20, random_state=0, n_jobs=j,
                            sampler="goss", **kw).fit(X, y).predict_proba(X) for j in (1, 2)]
    assert np.array_equal(fits[0], fits[1])
