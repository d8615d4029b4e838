"""``min_samples_bin`` (LightGBM's ``min_data_in_bin``): bins that hold at least that many
of the binning sample's values. Against a one-value-at-a-time reference, dense against
sparse input, and through the estimators (validation, continuation)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRegressor, Dataset, train
from boostlib.engine.binning import BinMapper
from reference import kernels as ref
from reference.strategies import KERNEL_SETTINGS, MAX_BINS_CHOICES

FINITE = dict(allow_nan=False, allow_infinity=False)


@st.composite
def columns(draw):
    """A feature of 1 to 300 rows: continuous, a few repeated values, constant, with
    missing values or not."""
    n = draw(st.integers(1, 300))
    kind = draw(st.sampled_from(["float", "few", "constant"]))
    if kind == "float":
        col = draw(hnp.arrays(np.float64, n, elements=st.floats(-1e3, 1e3, **FINITE)))
    elif kind == "few":
        col = draw(hnp.arrays(np.float64, n, elements=st.sampled_from(
            [-2.5, -1.0, 0.0, 0.1, 0.2, 7.0, 8.0, 9.5])))
    else:
        col = np.full(n, draw(st.floats(-1e3, 1e3, **FINITE)))
    if draw(st.booleans()):
        col[draw(hnp.arrays(np.bool_, n))] = np.nan
    return col


@KERNEL_SETTINGS
@given(col=columns(), max_bins=st.sampled_from(MAX_BINS_CHOICES),
       m=st.sampled_from([1, 2, 3, 7, 50]))
def test_borders_match_the_reference_and_fill_every_bin(col, max_bins, m):
    got = BinMapper(max_bins, min_samples_bin=m).fit(col[:, None]).borders_[0]
    expected = ref.full_bin_borders(col, max_bins, m)
    assert got.tobytes() == expected.tobytes()
    values = col[~np.isnan(col)]
    counts = np.bincount(np.searchsorted(got, values, side="left"), minlength=got.size + 1)
    if got.size and m > 1:
        assert counts.min() >= m                # every bin, the last one included
    if m == 1:                                  # the default: the plain borders
        assert got.tobytes() == ref.feature_borders(col, max_bins).tobytes()


@KERNEL_SETTINGS
@given(data=st.data(), max_bins=st.sampled_from(MAX_BINS_CHOICES),
       m=st.sampled_from([2, 3, 20]))
def test_sparse_input_gets_the_dense_borders(data, max_bins, m):
    sparse = importorskip("scipy.sparse")
    n = data.draw(st.integers(1, 200))
    dense = np.zeros((n, 4))
    for f in range(4):
        on = data.draw(hnp.arrays(np.bool_, n))
        dense[on, f] = data.draw(hnp.arrays(np.float64, int(on.sum()), elements=st.one_of(
            st.floats(-10, 10, **FINITE), st.sampled_from([1.0, 2.0]))))
    a = BinMapper(max_bins, min_samples_bin=m).fit(dense)
    b = BinMapper(max_bins, min_samples_bin=m).fit(sparse.csr_matrix(dense))
    for x, y in zip(a.borders_, b.borders_):
        assert x.tobytes() == y.tobytes()


def test_rare_values_share_a_bin_and_the_model_changes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=400) > 0).astype(int)
    plain = BoostClassifier(n_estimators=5, random_state=0).fit(X, y)
    coarse = BoostClassifier(n_estimators=5, random_state=0, min_samples_bin=10).fit(X, y)
    n_bins = [int(m.model_.ensemble.bin_mapper.n_bins_nonmissing_[0]) for m in (plain, coarse)]
    assert n_bins == [255, 40]                  # 400 values: 400 // 10 quantile bins
    assert not np.array_equal(plain.predict_proba(X), coarse.predict_proba(X))
    again = BoostClassifier(n_estimators=5, random_state=0, min_samples_bin=10).fit(X, y)
    assert np.array_equal(again.predict_proba(X), coarse.predict_proba(X))


def test_a_dataset_bins_again_for_another_min_samples_bin():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(300, 2)), rng.normal(size=300)
    ds = Dataset(X, y)
    params = dict(n_estimators=2, random_state=0)
    a = train({**params, "min_samples_bin": 1}, ds)
    b = train({**params, "min_samples_bin": 30}, ds)
    assert a.ensemble.bin_mapper.n_bins_nonmissing_[0] == 255
    assert b.ensemble.bin_mapper.n_bins_nonmissing_[0] == 10


def test_continuation_keeps_the_models_min_samples_bin():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(300, 2)), rng.normal(size=300)
    model = train({"n_estimators": 2, "min_samples_bin": 5, "random_state": 0}, Dataset(X, y))
    more = train({"n_estimators": 2, "random_state": 0}, Dataset(X, y), init_model=model)
    assert more.params["min_samples_bin"] == 5
    with pytest.raises(ValueError, match="min_samples_bin=3 differs from init_model's"):
        train({"n_estimators": 2, "min_samples_bin": 3}, Dataset(X, y), init_model=model)
    est = BoostRegressor(n_estimators=2, min_samples_bin=5, warm_start=True).fit(X, y)
    with pytest.raises(ValueError, match="min_samples_bin=2 differs"):
        est.set_params(n_estimators=4, min_samples_bin=2).fit(X, y)


@pytest.mark.parametrize("value", [0, -1, 2.5, "3", True])
def test_bad_min_samples_bin_is_named(value):
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises((ValueError, TypeError), match="min_samples_bin"):
        BoostRegressor(n_estimators=2, min_samples_bin=value).fit(X, X[:, 0])
    with pytest.raises((ValueError, TypeError), match="min_samples_bin"):
        BinMapper(255, min_samples_bin=value)
