"""Differential tests of the binning kernels and BinMapper against ``np.searchsorted``,
``np.sort`` and ``np.percentile``."""
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from boostlib._kernels import _binning
from boostlib.engine import binning
from boostlib.engine.binning import BinMapper
from boostlib.engine.borders import midpoint_percentiles
from reference import kernels as ref
from reference.strategies import KERNEL_SETTINGS, MAX_BINS_CHOICES

FINITE = dict(allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def borders_and_values(draw, max_features=3, max_rows=300):
    """Per-feature increasing borders and a matrix of values that hits them exactly, falls
    just beside them, lies outside them, or is NaN."""
    max_bins = draw(st.sampled_from(MAX_BINS_CHOICES))
    n_features = draw(st.integers(1, max_features))
    n_rows = draw(st.integers(1, max_rows))
    borders = []
    for _ in range(n_features):
        k = draw(st.integers(0, min(max_bins - 1, 40)))
        vals = draw(st.lists(st.floats(-1e6, 1e6, **FINITE), min_size=k, max_size=k,
                             unique=True))
        borders.append(np.unique(np.array(vals, dtype=np.float64)))
    X = np.empty((n_rows, n_features))
    for f, b in enumerate(borders):
        pool = [np.nan, -np.inf, np.inf, 0.0, -0.0, 1e300, -1e300]
        for t in b:
            pool += [t, np.nextafter(t, np.inf), np.nextafter(t, -np.inf)]
        idx = draw(hnp.arrays(np.int64, n_rows, elements=st.integers(0, len(pool) - 1)))
        other = draw(hnp.arrays(np.float64, n_rows, elements=st.floats(-2e6, 2e6, **FINITE)))
        use_pool = draw(hnp.arrays(np.bool_, n_rows))
        X[:, f] = np.where(use_pool, np.asarray(pool)[idx], other)
    return max_bins, borders, X


def _table(borders, padding):
    """The kernel's arguments for ``borders``: every feature's borders one after the other,
    each followed by a ``padding`` value (never read), their starts and their counts."""
    flat = np.concatenate([np.append(b, padding) for b in borders] + [np.empty(0)])
    sizes = np.array([b.size for b in borders], dtype=np.int32)
    starts = np.concatenate([[0], np.cumsum(sizes + 1)[:-1]]).astype(np.intp)
    return flat, starts, sizes


@KERNEL_SETTINGS
@given(data=borders_and_values(), n_threads=st.sampled_from([1, 2, 3]),
       order=st.sampled_from(["C", "F", "strided"]),
       padding=st.sampled_from([np.inf, -np.inf, np.nan, 0.0]))
def test_map_to_bins_matches_searchsorted(data, n_threads, order, padding):
    max_bins, borders, X = data
    expected = ref.map_to_bins(X, borders, max_bins)
    if order == "F":
        X = np.asfortranarray(X)
    elif order == "strided":
        wide = np.full((X.shape[0], 2 * X.shape[1]), 12345.0)
        wide[:, ::2] = X
        X = wide[:, ::2]
    # The padding beyond n_borders[f] must never be read, whatever it holds.
    table = _table(borders, padding)
    out = np.full((X.shape[1], X.shape[0]), 77, dtype=np.uint8)
    _binning.map_to_bins(X, *table, max_bins, out, n_threads)
    np.testing.assert_array_equal(out, expected)
    # Row-major output through a transposed view.
    out_rows = np.full((X.shape[0], X.shape[1]), 77, dtype=np.uint8)
    _binning.map_to_bins(X, *table, max_bins, out_rows.T, n_threads)
    np.testing.assert_array_equal(out_rows, expected.T)


def test_map_to_bins_scalar_rule_on_every_border():
    """``x <= borders[b]`` exactly when ``bin <= b``: check each border and its neighbours
    for max_bins = 255 (254 borders, every step of the binary search)."""
    borders = [np.cumsum(np.linspace(0.5, 3.0, 254))]
    vals = []
    for t in borders[0]:
        vals += [t, np.nextafter(t, np.inf), np.nextafter(t, -np.inf)]
    X = np.array(vals + [np.nan, -np.inf, np.inf])[:, None]
    out = np.empty((1, X.shape[0]), dtype=np.uint8)
    _binning.map_to_bins(X, *_table(borders, np.inf), 255, out, 2)
    for i, x in enumerate(X[:, 0]):
        assert out[0, i] == ref.bin_of_value(x, borders[0], 255), x


@pytest.mark.parametrize("max_bins", [2, 3, 255])
def test_map_to_bins_no_borders_and_single_row(max_bins):
    X = np.array([[np.nan, 3.0, -1.0]])          # 1 row, one feature per case
    borders = [np.empty(0), np.empty(0), np.array([-1.0])]
    out = np.empty((3, 1), dtype=np.uint8)
    _binning.map_to_bins(X, *_table(borders, np.inf), max_bins, out, 1)
    np.testing.assert_array_equal(out[:, 0], [max_bins, 0, 0])


def test_map_to_bins_rejects_bad_arguments():
    X = np.zeros((4, 2))
    flat, starts, n_borders = _table([np.array([0.0]), np.array([1.0])], np.inf)
    out = np.empty((2, 4), np.uint8)
    with pytest.raises(ValueError):         # out of the wrong shape
        _binning.map_to_bins(X, flat, starts, n_borders, 3, np.empty((4, 2), np.uint8), 1)
    with pytest.raises(ValueError):         # more borders than max_bins - 1
        _binning.map_to_bins(X, flat, starts, np.array([0, 3], np.int32), 3, out, 1)
    with pytest.raises(ValueError):         # borders past the table's end
        _binning.map_to_bins(X, flat[:2], starts, n_borders, 3, out, 1)
    with pytest.raises(ValueError):         # a start for one feature only
        _binning.map_to_bins(X, flat, starts[:1], n_borders, 3, out, 1)


# --------------------------------------------------------------------------------------------
# sorted_sample: each feature's sorted values, what the borders come from
# --------------------------------------------------------------------------------------------

SPECIAL = [np.nan, 0.0, -0.0, np.inf, -np.inf, 5e-324, -5e-324, 2.2250738585072014e-308,
           1.7976931348623157e308, -1.7976931348623157e308, 1.0, -1.0, 1.5, 0.1]


@st.composite
def sample_inputs(draw, max_rows=400, max_features=4):
    """A matrix mixing special values (NaN, signed zeros, infinities, subnormals, the
    extremes), repeated values and random floats of every sign and exponent, and a list of
    rows (empty: all rows; else any order, repeats allowed)."""
    n_rows = draw(st.integers(1, max_rows))
    n_features = draw(st.integers(1, max_features))
    X = np.empty((n_rows, n_features))
    for f in range(n_features):
        kind = draw(st.sampled_from(["mixed", "special", "constant", "nan", "floats"]))
        floats = draw(hnp.arrays(np.float64, n_rows, elements=st.floats(
            allow_nan=True, allow_infinity=True, allow_subnormal=True)))
        idx = draw(hnp.arrays(np.int64, n_rows, elements=st.integers(0, len(SPECIAL) - 1)))
        special = np.asarray(SPECIAL)[idx]
        if kind == "mixed":
            X[:, f] = np.where(draw(hnp.arrays(np.bool_, n_rows)), special, floats)
        elif kind == "special":
            X[:, f] = special
        elif kind == "constant":
            X[:, f] = special[0]
        elif kind == "nan":
            X[:, f] = np.nan
        else:
            X[:, f] = floats
    if draw(st.booleans()):
        rows = np.empty(0, dtype=np.intp)
    else:
        rows = draw(hnp.arrays(np.intp, draw(st.integers(1, 2 * n_rows)),
                               elements=st.integers(0, n_rows - 1)))
    return X, rows


@KERNEL_SETTINGS
@given(data=sample_inputs(), n_threads=st.sampled_from([1, 2, 3]),
       order=st.sampled_from(["C", "F", "strided"]))
def test_sorted_sample_matches_numpy_sort(data, n_threads, order):
    X, rows = data
    expected = ref.sorted_sample(X, rows)
    if order == "F":
        X = np.asfortranarray(X)
    elif order == "strided":
        wide = np.full((X.shape[0], 2 * X.shape[1]), 12345.0)
        wide[:, 1::2] = X
        X = wide[:, 1::2]
    m = rows.size or X.shape[0]
    out = np.full((X.shape[1], m), 7.0)
    counts = np.full(X.shape[1], -1, dtype=np.intp)
    _binning.sorted_sample(X, rows, out, counts, n_threads)
    for f, e in enumerate(expected):
        got = out[f, :counts[f]]
        # bit for bit: the values, their order and the signs of zero (all +0.0)
        np.testing.assert_array_equal(got.view(np.uint64), e.view(np.uint64))


def test_sorted_sample_radix_passes_on_long_columns():
    # every digit of the sort varies (random doubles of both signs and many exponents), one
    # digit only varies (values sharing all but the low bits), and none does (a constant):
    # thousands of rows, so the passes and the skip of uniform digits are all exercised
    rng = np.random.default_rng(11)
    n = 5000
    X = np.column_stack([
        rng.normal(size=n) * 10.0 ** rng.integers(-300, 300, n),
        (1.0 + rng.integers(0, 2000, n) * np.finfo(float).eps),
        np.full(n, -3.25),
        np.where(rng.random(n) < 0.3, np.nan, rng.standard_cauchy(n)),
    ])
    rows = rng.integers(0, n, 3 * n).astype(np.intp)
    for r in (np.empty(0, dtype=np.intp), rows):
        out = np.empty((4, r.size or n))
        counts = np.empty(4, dtype=np.intp)
        _binning.sorted_sample(X, r, out, counts, 2)
        for f, e in enumerate(ref.sorted_sample(X, r)):
            np.testing.assert_array_equal(out[f, :counts[f]].view(np.uint64), e.view(np.uint64))


def test_sorted_sample_does_not_depend_on_threads():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(20000, 9))
    X[rng.random(X.shape) < 0.1] = np.nan
    outs = []
    for t in (1, 2, 4):
        out = np.empty((9, 20000))
        counts = np.empty(9, dtype=np.intp)
        _binning.sorted_sample(X, np.empty(0, dtype=np.intp), out, counts, t)
        outs.append([out[f, :counts[f]].copy() for f in range(9)])
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            np.testing.assert_array_equal(a.view(np.uint64), b.view(np.uint64))


def test_sorted_sample_rejects_bad_arguments():
    X = np.zeros((5, 2))
    none = np.empty(0, dtype=np.intp)
    with pytest.raises(ValueError, match="out must have shape"):
        _binning.sorted_sample(X, none, np.empty((2, 4)), np.empty(2, np.intp), 1)
    with pytest.raises(ValueError, match="counts must have 2"):
        _binning.sorted_sample(X, none, np.empty((2, 5)), np.empty(3, np.intp), 1)
    for bad in ([0, 5], [-1, 2]):
        with pytest.raises(ValueError, match=r"rows must be in \[0, 5\)"):
            _binning.sorted_sample(X, np.array(bad, dtype=np.intp), np.empty((2, 2)),
                                   np.empty(2, np.intp), 2)
    with pytest.raises(ValueError, match="X has no rows"):
        _binning.sorted_sample(np.zeros((0, 2)), np.array([0], dtype=np.intp),
                               np.empty((2, 1)), np.empty(2, np.intp), 1)
    counts = np.full(2, 9, dtype=np.intp)       # no rows at all: no values
    _binning.sorted_sample(np.zeros((0, 2)), none, np.empty((2, 0)), counts, 1)
    np.testing.assert_array_equal(counts, [0, 0])


@st.composite
def sorted_values(draw):
    """Sorted finite values with repeats, from 1 to 600 of them."""
    n = draw(st.integers(1, 600))
    pool = draw(st.lists(st.floats(-1e300, 1e300, **FINITE), min_size=1, max_size=50))
    idx = draw(hnp.arrays(np.int64, n, elements=st.integers(0, len(pool) - 1)))
    return np.sort(np.asarray(pool)[idx] + 0.0)


@KERNEL_SETTINGS
@given(values=sorted_values(), max_bins=st.sampled_from(MAX_BINS_CHOICES))
def test_midpoint_percentiles_match_numpy_bit_for_bit(values, max_bins):
    q = np.linspace(0, 100, max_bins + 1)[1:-1]
    with np.errstate(over="ignore", invalid="ignore"):
        expected = np.percentile(values, q, method="midpoint")
    got = midpoint_percentiles(values, q)
    finite = np.isfinite(expected)             # NumPy's overflow: see the next test
    np.testing.assert_array_equal(got[finite].view(np.uint64),
                                  expected[finite].view(np.uint64))
    assert np.all(np.isfinite(got))


def test_midpoint_percentiles_round_as_numpy():
    # a pair whose two midpoint formulas round apart: a + (b - a) / 2 is one ulp below
    # NumPy's b - (b - a) / 2, which is the one to reproduce
    a, b = -1.3210486329130187e-06, 0.001257302210933933
    assert a + (b - a) * 0.5 != b - (b - a) * 0.5
    v = np.array([a, b])
    q = np.array([50.0])
    assert midpoint_percentiles(v, q)[0] == np.percentile(v, q, method="midpoint")[0]


def test_midpoint_percentiles_where_numpy_overflows():
    # neighbours whose difference overflows: NumPy returns NaN (whole index) or -inf; the
    # percentile is the lower value, or the mean of the halves, both between the neighbours
    v = np.array([-1.7e308] * 3 + [1.7e308] * 2)
    q = np.array([25.0, 50.0, 62.5])            # virtual indexes 1, 2, 2.5
    with np.errstate(over="ignore", invalid="ignore"):
        numpy_says = np.percentile(v, q, method="midpoint")
    assert not np.all(np.isfinite(numpy_says))
    np.testing.assert_array_equal(midpoint_percentiles(v, q), [-1.7e308, -1.7e308, 0.0])


# --------------------------------------------------------------------------------------------
# BinMapper
# --------------------------------------------------------------------------------------------


@st.composite
def raw_matrix(draw, max_rows=200, max_features=3):
    n_rows = draw(st.integers(1, max_rows))
    n_features = draw(st.integers(1, max_features))
    X = np.empty((n_rows, n_features))
    for f in range(n_features):
        kind = draw(st.sampled_from(["float", "few", "constant", "nan", "huge"]))
        if kind == "float":
            col = draw(hnp.arrays(np.float64, n_rows, elements=st.floats(-1e3, 1e3, **FINITE)))
        elif kind == "few":
            col = draw(hnp.arrays(np.float64, n_rows, elements=st.sampled_from(
                [-2.5, -1.0, 0.0, 1e-300, 0.1, 0.2, 0.30000000000000004, 7.0])))
        elif kind == "constant":
            col = np.full(n_rows, draw(st.floats(-1e3, 1e3, **FINITE)))
        elif kind == "nan":
            col = np.full(n_rows, np.nan)
        else:
            col = draw(hnp.arrays(np.float64, n_rows, elements=st.sampled_from(
                [-1.7e308, 1.7e308, 0.0, 5e-324, 1.0, np.nextafter(1.0, 2.0)])))
        miss = draw(hnp.arrays(np.bool_, n_rows)) if draw(st.booleans()) else np.zeros(
            n_rows, bool)
        X[:, f] = np.where(miss, np.nan, col)
    return X


@KERNEL_SETTINGS
@given(X=raw_matrix(), max_bins=st.sampled_from(MAX_BINS_CHOICES),
       n_threads=st.sampled_from([1, 2]))
def test_bin_mapper_matches_reference_and_keeps_distinct_values_apart(X, max_bins, n_threads):
    bm = BinMapper(max_bins=max_bins).fit(X)
    assert bm.missing_bin == max_bins
    expected = ref.map_to_bins(X, bm.borders_, max_bins)
    np.testing.assert_array_equal(bm.transform(X, n_threads), expected)
    np.testing.assert_array_equal(bm.transform(X, n_threads, layout="row"), expected.T)
    for f in range(X.shape[1]):
        b = bm.borders_[f]
        assert b.size <= max_bins - 1
        assert np.all(np.isfinite(b)) and np.all(np.diff(b) > 0)
        assert bm.n_bins_nonmissing_[f] == b.size + 1
        col = X[:, f]
        distinct = np.unique(col[~np.isnan(col)])
        if distinct.size <= 1:
            assert b.size == 0, "a constant (or all-missing) feature has a single bin"
        if distinct.size <= max_bins:
            # one bin per distinct value, in order
            np.testing.assert_array_equal(ref.map_to_bins(distinct[:, None], [b], max_bins)[0],
                                          np.arange(distinct.size))
        # the raw threshold of every split agrees with the bins on the training values
        bins = expected[f]
        for k in range(b.size + 1):
            thr = bm.threshold(f, k)
            ok = ~np.isnan(col)
            np.testing.assert_array_equal(col[ok] <= thr, bins[ok] <= k)


@KERNEL_SETTINGS
@given(X=raw_matrix(), max_bins=st.sampled_from(MAX_BINS_CHOICES),
       n_threads=st.sampled_from([1, 2, 3]))
def test_bin_mapper_borders_match_reference_bit_for_bit(X, max_bins, n_threads):
    # the borders of the fit (one sort per feature, features spread over n_threads threads)
    # against their definition, signs of zero included; below the subsample size, every row
    # counts
    bm = BinMapper(max_bins=max_bins).fit(X, n_threads=n_threads)
    for f in range(X.shape[1]):
        expected = ref.feature_borders(X[:, f], max_bins)
        got = bm.borders_[f]
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


@KERNEL_SETTINGS
@given(X=raw_matrix(), block=st.integers(1, 40))
def test_bin_mapper_sorts_blocks_of_features_alike(X, block):
    # the borders do not depend on how many values are sorted at a time
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(binning, "SORT_BLOCK_VALUES", block)
        small = BinMapper(max_bins=7).fit(X)
    whole = BinMapper(max_bins=7).fit(X)
    for f in range(X.shape[1]):
        np.testing.assert_array_equal(small.borders_[f], whole.borders_[f])


def test_bin_mapper_values_whose_gap_overflows_stay_apart():
    # hi - lo beyond the float range: the midpoint overflows to inf, the border is the lower
    # value, no warning is raised, and the two values land in different bins
    X = np.array([[-1e308], [1e308], [1e308]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bm = BinMapper(max_bins=255).fit(X)
        binned = bm.transform(X)
    np.testing.assert_array_equal(bm.borders_[0], [-1e308])
    assert binned[0, 0] != binned[0, 1] == binned[0, 2]


@pytest.mark.parametrize("max_bins", [2, 16, 255])
def test_bin_mapper_quantile_borders_match_reference(max_bins):
    rng = np.random.default_rng(3)
    cols = [rng.normal(size=5000), rng.standard_cauchy(5000),
            np.round(rng.exponential(size=5000), 2), np.r_[rng.integers(0, 400, 3000), -0.0]]
    X = np.column_stack([np.resize(c, 5000).astype(np.float64) for c in cols])
    X[::11, 0] = np.nan
    bm = BinMapper(max_bins=max_bins).fit(X)
    for f in range(X.shape[1]):
        np.testing.assert_array_equal(bm.borders_[f], ref.feature_borders(X[:, f], max_bins))


@pytest.mark.parametrize("max_bins", [2, 3, 255])
def test_bin_mapper_more_values_than_bins(max_bins):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 2))
    X[::7, 1] = np.nan
    bm = BinMapper(max_bins=max_bins).fit(X)
    binned = bm.transform(X)
    np.testing.assert_array_equal(binned, ref.map_to_bins(X, bm.borders_, max_bins))
    assert binned[1, ::7].tolist() == [max_bins] * len(range(0, 1000, 7))
    for f in range(2):
        assert 1 < bm.n_bins_nonmissing_[f] <= max_bins
        used = np.unique(binned[f][binned[f] != max_bins])
        # quantile borders: every bin is used, and no bin holds more than its share
        assert used.size == bm.n_bins_nonmissing_[f]
        counts = np.bincount(binned[f][binned[f] != max_bins])
        assert counts.max() <= 2 * (counts.sum() / bm.n_bins_nonmissing_[f]) + 2


def test_bin_mapper_ignores_the_sign_of_zero():
    # -0.0 and 0.0 are one value: the same bin, and no border is -0.0 (quantile or not)
    X = np.column_stack([np.tile([-0.0, 0.0, 1.0], 200),
                         np.concatenate([np.full(500, -0.0), np.arange(100.0)])])
    for max_bins in (2, 255):
        bm = BinMapper(max_bins=max_bins).fit(X)
        binned = bm.transform(X)
        assert binned[0, 0] == binned[0, 1]
        for b in bm.borders_:
            assert not np.any((b == 0) & np.signbit(b))


@pytest.mark.parametrize("subsample", [0, -3, 2.5, True, "100"])
def test_bin_mapper_rejects_bad_subsample(subsample):
    with pytest.raises(ValueError, match="subsample="):
        BinMapper(subsample=subsample)


def test_bin_mapper_subsample_draws_rows_from_rng():
    # above ``subsample`` rows, the borders come from the rows the generator draws: the same
    # generator state gives the same borders, and they are those of those rows
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 2))
    a = BinMapper(16, subsample=500).fit(X, np.random.default_rng(9), n_threads=2)
    rows = np.sort(np.random.default_rng(9).choice(3000, 500, replace=False))
    for f in range(2):
        np.testing.assert_array_equal(a.borders_[f], ref.feature_borders(X[rows, f], 16))


def test_bin_mapper_one_row_one_feature():
    bm = BinMapper(max_bins=2).fit(np.array([[3.5]]))
    assert bm.borders_[0].size == 0
    np.testing.assert_array_equal(bm.transform(np.array([[3.5], [np.nan], [-1e9]])),
                                  [[0, 2, 0]])
    assert bm.threshold(0, 0) == np.inf


@KERNEL_SETTINGS
@given(X=raw_matrix(), max_bins=st.sampled_from(MAX_BINS_CHOICES),
       n_threads=st.sampled_from([1, 2]), order=st.sampled_from(["C", "F"]))
def test_bin_mapper_reads_float32_as_its_float64_values(X, max_bins, n_threads, order):
    # float32 input is binned without a float64 copy: borders and bins are those of the
    # same values converted to float64 (exactly representable), for both kernels
    with np.errstate(over="ignore"):
        X32 = np.asarray(np.clip(X, -3e38, 3e38), dtype=np.float32, order=order)
    X64 = X32.astype(np.float64)
    bm = BinMapper(max_bins=max_bins).fit(X32, n_threads=n_threads)
    for f in range(X.shape[1]):
        np.testing.assert_array_equal(bm.borders_[f], ref.feature_borders(X64[:, f], max_bins))
    expected = ref.map_to_bins(X64, bm.borders_, max_bins)
    np.testing.assert_array_equal(bm.transform(X32, n_threads), expected)
    np.testing.assert_array_equal(bm.transform(X32, n_threads, layout="row"), expected.T)
