"""Categorical features: the set-split kernel against a NumPy reference and an exhaustive
search, and native categorical training end to end (both tree kinds, every sampler and
update rule, model files, unseen and mismatched categories, bad input)."""
import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st

from optional_imports import importorskip

import boostlib
from boostlib import BoostClassifier, BoostRegressor
from boostlib._kernels import _splitting
from reference import kernels as ref
from reference.strategies import KERNEL_SETTINGS


# -- the kernel ------------------------------------------------------------------------------
def reference_cat_split(hf, l2, msl, mcw, smooth, cat_l2, min_group, max_k):
    """The documented procedure, written plainly: (gain, left set) or None."""
    nb1 = hf.shape[0]
    eligible = [b for b in range(nb1) if hf[b, 2] >= max(min_group, 1) and hf[b, 2] > 0]
    ratio = {b: hf[b, 0] / (hf[b, 1] + smooth) if hf[b, 1] + smooth != 0 else 0.0
             for b in eligible}
    order = sorted(eligible, key=lambda b: (ratio[b], b))
    lam = l2 + cat_l2
    G, H, C = hf[:, 0].sum(), hf[:, 1].sum(), hf[:, 2].sum()
    parent = G * G / (H + lam) if H + lam > 0 else 0.0
    best = None
    for seq in (order, order[::-1]):
        for k in range(1, min(max_k, len(seq)) + 1):
            left = seq[:k]
            gl, hl, cl = hf[left, 0].sum(), hf[left, 1].sum(), hf[left, 2].sum()
            gr, hr, cr = G - gl, H - hl, C - cl
            if not (cl >= msl and cr >= msl and hl >= mcw and hr >= mcw and hl + lam > 0
                    and hr + lam > 0):
                continue
            gain = gl * gl / (hl + lam) + gr * gr / (hr + lam) - parent
            if gain > 0 and (best is None or gain > best[0] * (1 + 1e-12)):
                best = (gain, set(left))
    return best


def kernel_cat_split(hf, l2, msl, mcw, params):
    """find_split_nodes on one categorical feature of one node: (gain, left set) or None."""
    nb = hf.shape[0] - 1
    hist = np.ascontiguousarray(hf[None])
    out = np.full((1, 7), np.nan)
    _splitting.find_split_nodes(hist, np.zeros(1, np.int32), np.array([0, nb + 1], np.int32),
                                np.array([nb], np.int32), np.ones(1, np.uint8), params, l2,
                                msl, mcw, np.empty((0, 1, 1)), np.empty((1, 1, 4)), out, 1)
    if out[0, 0] < 0:
        return None
    left = np.empty(int(out[0, 1]), np.int32)
    _splitting.category_left_set(hist, np.zeros(1, np.int32), 0, nb, params, int(out[0, 2]),
                                 int(out[0, 1]), left)
    return out[0, 3], set(left.tolist()), out[0]


@st.composite
def category_hist(draw):
    n_cats = draw(st.integers(2, 9))          # categories, the missing one included
    counts = draw(st.lists(st.integers(0, 40), min_size=n_cats, max_size=n_cats))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    hf = np.zeros((n_cats, 3))
    for b, c in enumerate(counts):
        g = rng.normal(draw(st.sampled_from([-1.0, 0.0, 1.0])), 1.0, c)
        h = rng.uniform(0.1, 1.0, c)
        hf[b] = g.sum(), h.sum(), c
    return hf


@KERNEL_SETTINGS
@given(hf=category_hist(), smooth=st.sampled_from([0.0, 1.0, 10.0]),
       cat_l2=st.sampled_from([0.0, 10.0]), min_group=st.sampled_from([1, 5, 30]),
       max_k=st.sampled_from([1, 2, 32]), msl=st.sampled_from([1, 3]))
def test_categorical_split_matches_reference(hf, smooth, cat_l2, min_group, max_k, msl):
    params = np.array([smooth, cat_l2, min_group, max_k], np.float64)
    want = reference_cat_split(hf, 1.0, msl, 1e-3, smooth, cat_l2, min_group, max_k)
    got = kernel_cat_split(hf, 1.0, msl, 1e-3, params)
    assert (want is None) == (got is None)
    if want is not None:
        assert got[0] == pytest.approx(want[0], rel=1e-9)
        # the set the kernel reports has the reference's best gain (ties between sets are
        # allowed), recomputed here from its sums
        left = sorted(got[1])
        lam = 1.0 + cat_l2
        gl, hl = hf[left, 0].sum(), hf[left, 1].sum()
        G, H = hf[:, 0].sum(), hf[:, 1].sum()
        gain = gl * gl / (hl + lam) + (G - gl) ** 2 / (H - hl + lam) - G * G / (H + lam)
        assert gain == pytest.approx(want[0], rel=1e-9, abs=1e-12)
        assert got[2][4] == hf[sorted(got[1]), 2].sum()       # left count


@KERNEL_SETTINGS
@given(hf=category_hist())
def test_sorted_prefixes_find_the_best_of_all_subsets(hf):
    """Fisher/Breiman: without smoothing, extra l2 or group limits, the best prefix of the
    G/H order is the best of all 2**k - 2 subsets (Newton gain, l2 = 0)."""
    hf = hf[hf[:, 2] > 0]
    if hf.shape[0] < 2:
        return
    params = np.array([0.0, 0.0, 1.0, 255.0])
    got = kernel_cat_split(hf, 0.0, 1, 1e-9, params)
    G, H = hf[:, 0].sum(), hf[:, 1].sum()
    best = 0.0
    cats = range(hf.shape[0])
    for k in range(1, hf.shape[0]):
        for left in itertools.combinations(cats, k):
            gl, hl = hf[list(left), 0].sum(), hf[list(left), 1].sum()
            best = max(best, gl * gl / hl + (G - gl) ** 2 / (H - hl) - G * G / H)
    if best <= 1e-9 * (G * G / H + 1):
        return
    assert got is not None and got[0] == pytest.approx(best, rel=1e-7)


def test_level_split_orders_categories_by_the_level_totals():
    """Symmetric trees share one set per level; with one leaf it is the node's best."""
    rng = np.random.default_rng(3)
    hf = np.zeros((6, 3))
    for b in range(6):
        c = 50
        hf[b] = rng.normal(b - 2.5, 1, c).sum(), c * 0.5, c
    params = np.array([10.0, 10.0, 10.0, 32.0])
    hist = np.ascontiguousarray(hf[None])
    gain_sum = np.zeros((6, 2))
    n_valid = np.zeros((6, 2), np.int32)
    f, size, d, gain = _splitting.find_split_level(
        hist, np.zeros(1, np.int32), np.array([0, 6], np.int32), np.array([5], np.int32),
        np.ones(1, np.uint8), params, 1.0, 1, 1e-3, np.empty((0, 256)), gain_sum, n_valid, 1)
    node = kernel_cat_split(hf, 1.0, 1, 1e-3, params)
    assert f == 0 and gain == pytest.approx(node[0], rel=1e-12) and size == len(node[1])


# -- training ---------------------------------------------------------------------------------
pd = importorskip("pandas")
EFFECT = {"a": 1.0, "b": -1.0, "c": 2.0, "d": 0.0, "e": -2.0, "f": 1.5}


def city_data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    city = rng.choice(list(EFFECT), n)
    x = rng.normal(size=n)
    y = (np.array([EFFECT[c] for c in city]) + x + rng.normal(size=n) > 0).astype(int)
    return pd.DataFrame({"city": pd.Categorical(city), "x": x}), y


@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
def test_native_categories_learn_a_non_monotone_effect(policy):
    df, y = city_data()
    test, yt = city_data(seed=1)
    model = BoostClassifier(grow_policy=policy, n_estimators=30, random_state=0).fit(df, y)
    codes = np.c_[df.city.cat.codes, df.x].astype(float)
    ordinal = BoostClassifier(grow_policy=policy, n_estimators=30, max_depth=1,
                              random_state=0).fit(codes, y)
    native1 = BoostClassifier(grow_policy=policy, n_estimators=30, max_depth=1,
                              random_state=0).fit(df, y)
    acc = np.mean(model.predict(test) == yt)
    assert acc > 0.8
    # with stumps, one set split captures the city where one threshold cannot
    tcodes = np.c_[test.city.cat.codes, test.x].astype(float)
    assert np.mean(native1.predict(test) == yt) > np.mean(ordinal.predict(tcodes) == yt)
    tree = model.ensemble_.trees[0]
    assert np.any(tree.nan_right == 2) and tree.cat_sets.shape[0] >= 1


def test_category_order_and_unseen_labels_at_predict():
    df, y = city_data()
    model = BoostClassifier(n_estimators=20, random_state=0).fit(df, y)
    p = model.predict_proba(df)
    shuffled = df.copy()
    shuffled["city"] = pd.Categorical(df.city.astype(str), categories=list("fedcbaz"))
    assert np.array_equal(model.predict_proba(shuffled), p)
    as_text = df.copy()
    as_text["city"] = df.city.astype(str)
    assert np.array_equal(model.predict_proba(as_text), p)
    unseen = df.iloc[:5].copy()
    unseen["city"] = pd.Categorical(["zz"] * 5)
    missing = df.iloc[:5].copy()
    missing["city"] = pd.Categorical([None] * 5, categories=["a"])
    assert np.array_equal(model.predict_proba(unseen), model.predict_proba(missing))


@pytest.mark.parametrize("sampler, update", [
    (None, "sgb"), ("uniform", "sgb"), ("goss", "sgb"), ("mvs", "sgb"), (None, "sglb"),
    (None, "agbm"), (None, "agbmr")])
@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
def test_every_sampler_and_update_rule_trains_with_categories(sampler, update, policy):
    df, y = city_data(1000)
    model = BoostClassifier(grow_policy=policy, n_estimators=15, sampler=sampler,
                            subsample=0.7 if sampler else 1.0, update=update,
                            random_state=0).fit(df, y)
    p = model.predict_proba(df)[:, 1]
    assert np.all(np.isfinite(p)) and np.mean((p > 0.5) == y) > 0.7


@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
def test_multiclass_regression_and_model_files(policy, tmp_path):
    df, y = city_data(1500)
    y3 = y + (df.city.astype(str) == "c").to_numpy()
    clf = BoostClassifier(grow_policy=policy, n_estimators=10, random_state=0).fit(df, y3)
    reg = BoostRegressor(grow_policy=policy, n_estimators=10, random_state=0).fit(
        df, y.astype(float))
    for est in (clf, reg):
        path = tmp_path / f"{type(est).__name__}.json"
        est.save_model(path)
        again = boostlib.load_model(path)
        assert np.array_equal(again.predict(df), est.predict(df))
        imp = est.feature_importances_
        assert imp[0] > 0


def test_same_model_whatever_n_jobs():
    df, y = city_data()
    a = BoostClassifier(grow_policy="depthwise", n_estimators=10, random_state=3,
                        n_jobs=1).fit(df, y)
    b = BoostClassifier(grow_policy="depthwise", n_estimators=10, random_state=3,
                        n_jobs=2).fit(df, y)
    assert np.array_equal(a.predict_proba(df), b.predict_proba(df))


def test_more_levels_than_bins_share_an_other_bin():
    rng = np.random.default_rng(0)
    n = 5000
    codes = rng.integers(0, 600, n).astype(float)
    y = (codes % 7 < 3).astype(int)
    X = np.c_[codes, rng.normal(size=n)]
    model = BoostClassifier(n_estimators=20, categorical_features=[0], random_state=0,
                            categorical_encoding="sets").fit(X, y)
    mapper = model.model_.ensemble.bin_mapper
    assert mapper.cat_other_[0] and mapper.n_bins_nonmissing_[0] == 255
    assert np.all(np.isfinite(model.predict_proba(np.c_[[5000.0, np.nan], [0, 0]])))


@pytest.mark.parametrize("value, message", [
    (-1.0, "negative"), (2.5, "not an integer"), (2.0**21, "more levels than supported")])
def test_bad_codes_are_named(value, message):
    X = np.c_[np.arange(20) % 3, np.arange(20)].astype(float)
    X[4, 0] = value
    with pytest.raises(ValueError, match=message):
        BoostClassifier(categorical_features=[0]).fit(X, np.arange(20) % 2)


def test_categorical_features_by_name_index_and_mask():
    df, y = city_data(300)
    for spec in (["city"], [0], [True, False]):
        model = BoostClassifier(n_estimators=2, categorical_features=spec).fit(df, y)
        assert model.model_.ensemble.bin_mapper.categorical_.tolist() == [True, False]
    with pytest.raises(ValueError, match="no column named 'town'"):
        BoostClassifier(categorical_features=["town"]).fit(df, y)
    with pytest.raises(ValueError, match="boolean mask needs 2 entries"):
        BoostClassifier(categorical_features=[True]).fit(df, y)


def test_dataset_and_train_with_validation_frames_of_other_categories():
    df, y = city_data(1000)
    valid, yv = city_data(300, seed=2)
    valid["city"] = pd.Categorical(valid.city.astype(str), categories=list("fedcba"))
    train_set = boostlib.Dataset(df, y)
    model = boostlib.train({"n_estimators": 10, "grow_policy": "depthwise"}, train_set,
                           valid_sets=[boostlib.Dataset(valid, yv)])
    assert np.allclose(model.predict(valid), model.predict(valid.astype({"city": str})))
    assert "1 categorical" in repr(train_set)
