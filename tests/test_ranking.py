"""Ranking: the LambdaRank kernel against its pair-by-pair reference, the ``ndcg`` and
``map`` metrics against scikit-learn and brute force, query groups through ``Dataset``,
``train`` and ``BoostRanker``, and every sampler and update rule with ``lambdarank``."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, strategies as st

from optional_imports import importorskip

from boostlib import BoostRanker, Dataset, PluginError, create, load_model, train
from boostlib._kernels import _ranking
from boostlib.testing import check_loss, check_metric
from reference import ranking as ref
from reference.strategies import KERNEL_SETTINGS

GAIN = 2.0 ** np.arange(31) - 1.0
SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "datasets",
                      "lambdarank_lightgbm")


@st.composite
def queries(draw, min_size=1, max_size=10):
    sizes = draw(st.lists(st.integers(min_size, max_size), min_size=1, max_size=6))
    n = sum(sizes)
    y = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=np.float64)
    tied = draw(st.booleans())
    values = st.sampled_from([-1.0, 0.0, 0.5, 2.0]) if tied else \
        st.floats(-5, 5, allow_nan=False, allow_infinity=False)
    score = np.array(draw(st.lists(values, min_size=n, max_size=n)), dtype=np.float64)
    return np.array(sizes), y, score


def ptr_of(sizes):
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def kernel(y, score, sizes, truncation=30, sigma=1.0, normalize=True, n_threads=1):
    loss = create("loss", "lambdarank", {"truncation_level": truncation, "sigma": sigma,
                                         "normalize": normalize}).bind_groups(ptr_of(sizes))
    g, h = np.full(y.size, np.nan), np.full(y.size, np.nan)
    loss.gradient_hessian(y, score, g, h, n_threads)
    return g, h


# -- the kernel ----------------------------------------------------------------------------------
@KERNEL_SETTINGS
@given(queries(), st.integers(1, 12), st.floats(0.3, 3.0), st.booleans())
def test_lambdas_match_the_pairwise_reference(case, truncation, sigma, normalize):
    sizes, y, score = case
    g, h = kernel(y, score, sizes, truncation, sigma, normalize)
    g_ref, h_ref = ref.lambdarank(y, score, sizes, GAIN, truncation, sigma, normalize)
    np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h, h_ref, rtol=1e-10, atol=1e-12)
    assert np.all(h >= 0)
    # each query's lambdas sum to zero: every pair pushes one document up and one down
    np.testing.assert_allclose(np.add.reduceat(g, ptr_of(sizes)[:-1]), 0.0, atol=1e-9)
    g2, h2 = kernel(y, score, sizes, truncation, sigma, normalize, n_threads=2)
    assert np.array_equal(g, g2) and np.array_equal(h, h2)


def test_lambdas_are_the_gradient_of_the_weighted_ranknet_cost():
    """Burges (2010): without normalisation, LambdaRank's lambdas are the gradient of the
    RankNet cost of each pair weighted by its |delta NDCG|, as long as no two scores swap;
    the hessian is the diagonal of that gradient's Jacobian."""
    rng = np.random.default_rng(0)
    sizes = np.array([7, 5, 9])
    y = rng.integers(0, 4, sizes.sum()).astype(np.float64)
    score = rng.permutation(sizes.sum()) * 0.37        # distinct, far apart
    ranks = np.empty(sizes.sum(), dtype=int)
    for a, b in zip(ptr_of(sizes)[:-1], ptr_of(sizes)[1:]):
        ranks[np.array(ref.ranking_order(score[a:b])) + a] = np.arange(b - a)
    g, h = kernel(y, score, sizes, truncation=4, sigma=1.3, normalize=False)
    eps = 1e-6
    for i in range(score.size):
        up, down = score.copy(), score.copy()
        up[i] += eps
        down[i] -= eps
        fd = (ref.pairwise_cost(y, up, sizes, GAIN, 4, 1.3, ranks)
              - ref.pairwise_cost(y, down, sizes, GAIN, 4, 1.3, ranks)) / (2 * eps)
        assert g[i] == pytest.approx(fd, rel=1e-5, abs=1e-8)
        g_up = kernel(y, up, sizes, 4, 1.3, False)[0][i]
        g_down = kernel(y, down, sizes, 4, 1.3, False)[0][i]
        assert h[i] == pytest.approx((g_up - g_down) / (2 * eps), rel=1e-5, abs=1e-8)


def test_queries_without_relevant_documents_or_one_row_get_zero_lambdas():
    y = np.array([0.0, 0, 0, 2, 1, 3])
    g, h = kernel(y, np.array([0.3, 0.1, 0.2, 0.0, 0.5, 0.1]), np.array([3, 1, 2]))
    assert np.all(g[:4] == 0) and np.all(h[:4] == 0)
    assert g[5] < 0 < g[4]                  # the better document is pushed up


def test_lambdarank_passes_the_loss_checks():
    check_loss(create("loss", "lambdarank"))
    check_loss(create("loss", "lambdarank", {"normalize": False, "truncation_level": 3}),
               group=[100, 56, 100])


@pytest.mark.parametrize("params, match", [
    ({"truncation_level": 0}, "truncation_level=0"), ({"sigma": -1.0}, "sigma=-1.0"),
    ({"normalize": "yes"}, "normalize='yes'"), ({"label_gain": [1.0, -2.0]}, "label_gain"),
])
def test_bad_lambdarank_parameters_are_named(params, match):
    with pytest.raises(ValueError, match=match):
        create("loss", "lambdarank", params)


def test_lambdarank_refuses_labels_it_has_no_gain_for():
    loss = create("loss", "lambdarank", {"label_gain": [0.0, 1.0, 3.0]})
    with pytest.raises(ValueError, match="integers 0 .. 2"):
        loss.validate_target(np.array([0.0, 3.0]))
    with pytest.raises(ValueError, match="integers 0 .. 30"):
        create("loss", "lambdarank").validate_target(np.array([0.5, 1.0]))


# -- the metrics ---------------------------------------------------------------------------------
@KERNEL_SETTINGS
@given(queries(min_size=2), st.sampled_from([None, 1, 3, 10]), st.booleans(),
       st.sampled_from(["exponential", "linear"]))
def test_ndcg_matches_scikit_learn(case, k, weighted, gain):
    metrics = importorskip("sklearn.metrics")
    sizes, y, score = case
    ptr = ptr_of(sizes)
    rng = np.random.default_rng(len(y))
    qw = rng.uniform(0.1, 3.0, sizes.size)
    w = np.repeat(qw, sizes) if weighted else None
    value = create("metric", "ndcg", {"k": k, "gain": gain})(y, score, w, group=sizes)
    gains = 2.0 ** y - 1 if gain == "exponential" else y
    per_query = [1.0 if not np.any(gains[a:b] > 0) else
                 metrics.ndcg_score(gains[None, a:b], score[None, a:b], k=k)
                 for a, b in zip(ptr[:-1], ptr[1:])]
    expected = np.average(per_query, weights=qw if weighted else None)
    assert value == pytest.approx(expected, abs=1e-9)


@KERNEL_SETTINGS
@given(queries(min_size=2), st.booleans())
def test_map_matches_scikit_learn_average_precision(case, weighted):
    metrics = importorskip("sklearn.metrics")
    sizes, y, score = case
    ptr = ptr_of(sizes)
    qw = np.random.default_rng(len(y)).uniform(0.1, 3.0, sizes.size)
    w = np.repeat(qw, sizes) if weighted else None
    value = create("metric", "map")(y, score, w, group=sizes)
    per_query = [1.0 if not np.any(y[a:b] > 0) else
                 metrics.average_precision_score(y[a:b] > 0, score[a:b])
                 for a, b in zip(ptr[:-1], ptr[1:])]
    assert value == pytest.approx(np.average(per_query, weights=qw if weighted else None),
                                  abs=1e-9)


@KERNEL_SETTINGS
@given(queries(), st.sampled_from([None, 1, 2, 5]))
def test_truncated_metrics_match_brute_force_without_ties(case, k):
    sizes, y, _ = case
    score = np.random.default_rng(len(y)).permutation(y.size).astype(np.float64)
    ptr = ptr_of(sizes)
    ndcg = [ref.ndcg_without_ties(2.0 ** y[a:b] - 1, score[a:b], k)
            for a, b in zip(ptr[:-1], ptr[1:])]
    ap = [ref.average_precision_without_ties(y[a:b] > 0, score[a:b], k)
          for a, b in zip(ptr[:-1], ptr[1:])]
    assert create("metric", "ndcg", {"k": k})(y, score, group=sizes) == pytest.approx(
        np.mean(ndcg), abs=1e-12)
    assert create("metric", "map", {"k": k})(y, score, group=sizes) == pytest.approx(
        np.mean(ap), abs=1e-12)


@KERNEL_SETTINGS
@given(queries(), st.sampled_from([None, 2]))
def test_metrics_do_not_depend_on_the_order_of_rows_within_a_query(case, k):
    sizes, y, score = case
    perm = np.concatenate([a + np.random.default_rng(a).permutation(b - a)
                           for a, b in zip(ptr_of(sizes)[:-1], ptr_of(sizes)[1:])])
    for name in ("ndcg", "map"):
        metric = create("metric", name, {"k": k})
        assert metric(y[perm], score[perm], group=sizes) == pytest.approx(
            metric(y, score, group=sizes), abs=1e-12)


def test_ranking_metrics_pass_the_metric_checks():
    for name in ("ndcg", "map"):
        check_metric(create("metric", name))
        check_metric(create("metric", name, {"k": 3}))


def test_metric_group_errors_are_clear():
    y, s = np.array([1.0, 0.0, 2.0]), np.array([0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="pass group="):
        create("metric", "ndcg")(y, s)
    with pytest.raises(ValueError, match="summing to the 3 rows"):
        create("metric", "ndcg")(y, s, group=[1, 1])
    with pytest.raises(ValueError, match="does not use query groups"):
        create("metric", "rmse")(y, s, group=[3])
    with pytest.raises(ValueError, match="k=0"):
        create("metric", "ndcg", {"k": 0})
    assert create("metric", "ndcg", {"k": 5}).name == "ndcg@5"


# -- data, training and the estimator ---------------------------------------------------------
def ranking_data(n_queries, seed, n_features=8):
    """Queries of 5-20 documents whose relevance grows with a few features."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 21, n_queries)
    X = rng.normal(size=(sizes.sum(), n_features))
    utility = X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.5 * X[:, 2] + 0.5 * rng.normal(size=len(X))
    y = np.digitize(utility, [0.0, 1.0, 2.0, 3.0]).astype(np.float64)
    return X, y, sizes


@pytest.mark.parametrize("group, match", [
    ([2, 2], "sums to 4 rows; the data has 5"), ([5, 0], "below 1"),
    ([[5]], "1-D"), ([2.5, 2.5], "whole numbers"),
])
def test_dataset_refuses_bad_groups(group, match):
    with pytest.raises(ValueError, match=match):
        Dataset(np.zeros((5, 2)), np.zeros(5), group=group)


def test_training_names_missing_groups():
    X, y, sizes = ranking_data(20, 0)
    params = {"loss": "lambdarank", "n_estimators": 2}
    with pytest.raises(ValueError, match="the training set has none"):
        train(params, Dataset(X, y))
    with pytest.raises(ValueError, match="validation set 'valid_0' has none"):
        train(params, Dataset(X, y, group=sizes), valid_sets=[Dataset(X, y)])
    with pytest.raises(ValueError, match="'ndcg@3' ranks within query groups"):
        train({"n_estimators": 2, "eval_metric": "ndcg@3"}, Dataset(X, y),
              valid_sets=[Dataset(X, y)])
    with pytest.raises(PluginError, match="'ndcg@x' is invalid"):
        train({"n_estimators": 2, "eval_metric": "ndcg@x"}, Dataset(X, y))


@pytest.mark.parametrize("grow_policy", ["symmetric", "depthwise"])
def test_lambdarank_learns_to_rank_held_out_queries(grow_policy):
    X, y, sizes = ranking_data(150, 1)
    Xt, yt, st_ = ranking_data(60, 2)
    ranker = BoostRanker(n_estimators=60, grow_policy=grow_policy, max_depth=4, random_state=0,
                         eval_metric=["ndcg@5", "map@5"])
    ranker.fit(X, y, group=sizes, eval_set=[(Xt, yt)], eval_group=[st_])
    ndcg = create("metric", "ndcg", {"k": 5})
    random_score = np.random.default_rng(0).normal(size=len(yt))
    assert ndcg(yt, ranker.predict(Xt), group=st_) > ndcg(yt, random_score, group=st_) + 0.25
    curves = ranker.evals_result_["valid_0"]
    assert list(curves) == ["lambdarank", "ndcg@5", "map@5"]
    assert curves["ndcg@5"][-1] == pytest.approx(ndcg(yt, ranker.predict(Xt), group=st_),
                                                 abs=1e-12)
    # the recorded loss is 1 - NDCG@30 of each row's query, averaged over rows
    per_row = create("loss", "lambdarank").bind_groups(ptr_of(st_)).loss(
        yt, ranker.predict(Xt))
    assert curves["lambdarank"][-1] == pytest.approx(per_row.mean(), abs=1e-12)


def test_early_stopping_on_ndcg_stops_at_its_peak():
    X, y, sizes = ranking_data(80, 3)
    Xt, yt, st_ = ranking_data(30, 4)
    ranker = BoostRanker(n_estimators=300, learning_rate=0.3, eval_metric="ndcg@3",
                         early_stopping_rounds=10, random_state=0)
    ranker.fit(X, y, group=sizes, eval_set=[(Xt, yt)], eval_group=[st_])
    curve = ranker.evals_result_["valid_0"]["ndcg@3"]
    assert len(curve) < 300
    assert ranker.best_iteration_ == int(np.argmax(curve))
    assert create("metric", "ndcg", {"k": 3})(yt, ranker.predict(Xt), group=st_) == \
        pytest.approx(max(curve), abs=1e-12)


@pytest.mark.parametrize("sampler, sampler_params", [
    (None, None), ("uniform", None), ("goss", None), ("mvs", None),
    ("mvs", {"leaf_values": "all"})])
@pytest.mark.parametrize("update", ["sgb", "sglb", "agbm", "agbmr"])
def test_every_sampler_and_rule_trains_lambdarank(sampler, sampler_params, update):
    X, y, sizes = ranking_data(60, 5)
    Xt, yt, st_ = ranking_data(30, 6)
    subsample = 1.0 if sampler is None else 0.5
    ranker = BoostRanker(n_estimators=40, max_depth=3, sampler=sampler,
                         subsample=subsample, sampler_params=sampler_params, update=update,
                         random_state=0)
    ranker.fit(X, y, group=sizes)
    ndcg = create("metric", "ndcg", {"k": 5})
    random_score = np.random.default_rng(0).normal(size=len(yt))
    assert ndcg(yt, ranker.predict(Xt), group=st_) > ndcg(yt, random_score, group=st_) + 0.15


def test_ranker_is_deterministic_across_threads_and_survives_a_model_file(tmp_path):
    X, y, sizes = ranking_data(40, 7)
    fits = [BoostRanker(n_estimators=20, grow_policy="depthwise", sampler="goss",
                        subsample=0.5, random_state=3, n_jobs=n).fit(X, y, group=sizes)
            for n in (1, 2)]
    assert np.array_equal(fits[0].predict(X), fits[1].predict(X))
    fits[0].save_model(tmp_path / "ranker.json")
    loaded = load_model(tmp_path / "ranker.json")
    assert type(loaded) is BoostRanker
    assert np.array_equal(loaded.predict(X), fits[0].predict(X))


def test_ranker_argument_errors():
    X, y, sizes = ranking_data(10, 8)
    with pytest.raises(ValueError, match="eval_group has 2 entries"):
        BoostRanker(n_estimators=2).fit(X, y, group=sizes, eval_set=[(X, y)],
                                        eval_group=[sizes, sizes])
    with pytest.raises(ValueError, match=r"eval_group\[0\]: group sums"):
        BoostRanker(n_estimators=2).fit(X, y, group=sizes, eval_set=[(X, y)],
                                        eval_group=[[1]])
    with pytest.raises(ValueError, match="classification loss"):
        BoostRanker(loss="logloss").fit(X, (y > 1) * 1.0, group=sizes)


def test_pointwise_ranking_with_a_regression_loss_uses_groups_for_metrics_only():
    X, y, sizes = ranking_data(40, 9)
    ranker = BoostRanker(loss="mse", n_estimators=20, eval_metric="ndcg@5")
    ranker.fit(X, y, group=sizes, eval_set=[(X, y)], eval_group=[sizes])
    assert ranker.evals_result_["valid_0"]["ndcg@5"][-1] > 0.6


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="../shared/datasets not available")
def test_lambdarank_on_lightgbms_example_data():
    datasets = importorskip("sklearn.datasets")
    X, y, Xt, yt = datasets.load_svmlight_files(
        [os.path.join(SHARED, "rank.train"), os.path.join(SHARED, "rank.test")],
        n_features=300)
    g = np.loadtxt(os.path.join(SHARED, "rank.train.query"), dtype=int)
    gt = np.loadtxt(os.path.join(SHARED, "rank.test.query"), dtype=int)
    ranker = BoostRanker(n_estimators=100, grow_policy="depthwise", random_state=0)
    ranker.fit(X.toarray(), y, group=g)
    assert create("metric", "ndcg", {"k": 10})(yt, ranker.predict(Xt.toarray()),
                                               group=gt) > 0.70
