"""The ``rank_xendcg`` loss (XE-NDCG, LightGBM's ``rank_xendcg``): its vectorised gradients
against the query-by-query reference, its cross entropy and hessian against finite
differences, its draws from the fit's random stream (the same model whatever ``n_jobs``),
and ranking held-out queries."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from boostlib import BoostRanker, Dataset, create, load_model, train
from boostlib.builtin.ranking import RankXENDCGLoss, xendcg_gradients
from boostlib.testing import check_loss
from reference import ranking as ref
from reference.strategies import KERNEL_SETTINGS


def ptr_of(sizes):
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


@st.composite
def queries(draw):
    """Queries of 1 to 10 rows, labels 0 .. 4, scores with ties or spread out, gammas."""
    sizes = draw(st.lists(st.integers(1, 10), min_size=1, max_size=6))
    n = sum(sizes)
    y = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=np.float64)
    values = st.sampled_from([-1.0, 0.0, 0.5, 2.0]) if draw(st.booleans()) else \
        st.floats(-8, 8, allow_nan=False, allow_infinity=False)
    score = np.array(draw(st.lists(values, min_size=n, max_size=n)), dtype=np.float64)
    gamma = np.array(draw(st.lists(st.floats(0, 1, exclude_max=True), min_size=n,
                                   max_size=n)), dtype=np.float64)
    return np.array(sizes), y, score, gamma


@KERNEL_SETTINGS
@given(queries())
def test_gradients_match_the_query_by_query_reference(case):
    sizes, y, score, gamma = case
    g, h = xendcg_gradients(y, score, ptr_of(sizes), gamma)
    g_ref, h_ref = ref.xendcg(y, score, sizes, gamma)
    scale = max(1.0, float(np.max(np.abs(g_ref))))
    np.testing.assert_allclose(g, g_ref, rtol=1e-9, atol=1e-12 * scale)
    np.testing.assert_allclose(h, h_ref, rtol=1e-9, atol=1e-15)
    assert np.all(h >= 0) and np.all(h <= 0.25)


def test_a_query_of_one_row_gets_zeros_and_labels_are_checked():
    y, score = np.array([3.0, 0.0, 1.0]), np.array([0.3, -1.0, 2.0])
    g, h = xendcg_gradients(y, score, ptr_of([1, 2]), np.full(3, 0.5))
    assert g[0] == 0.0 and h[0] == 0.0 and g[1] != 0.0
    loss = create("loss", "rank_xendcg")
    for bad in (-1.0, 1.5, 31.0):
        with pytest.raises(ValueError, match=r"rank_xendcg.*integers 0 \.\. 30"):
            loss.validate_target(np.array([0.0, bad]))
    with pytest.raises(ValueError, match="pass group="):
        loss.gradient_hessian(y, score, np.empty(3), np.empty(3))


def _softmax_minus_target(y, score, rows, gamma):
    s = score[rows]
    rho = np.exp(s - s.max())
    rho /= rho.sum()
    phi = 2.0 ** y[rows] - gamma[rows]
    return rho - phi / phi.sum(), rho


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cross_entropy_gradient_and_hessian_against_finite_differences(seed):
    """The recorded loss is the cross entropy at gamma = 1/2: its finite-difference gradient
    is ``rho - p`` (XE-NDCG's first-order term; LightGBM adds two correction terms, so the
    full gradient is not a derivative) and its second derivative is the hessian
    ``rho (1 - rho)`` that ``gradient_hessian`` writes."""
    rng = np.random.default_rng(seed)
    sizes = np.array([6, 3, 9])
    y = rng.integers(0, 5, sizes.sum()).astype(np.float64)
    score = rng.normal(size=sizes.sum())
    loss = create("loss", "rank_xendcg").bind_groups(ptr_of(sizes))
    half = np.full(y.size, 0.5)
    per_row = loss.loss(y, score)
    ptr = ptr_of(sizes)
    for q in range(sizes.size):
        rows = np.arange(ptr[q], ptr[q + 1])
        np.testing.assert_allclose(per_row[rows], ref.xendcg_cross_entropy(
            y, score, rows.tolist(), half), rtol=1e-12)
        first, rho = _softmax_minus_target(y, score, rows, half)
        eps = 1e-5
        for k, r in enumerate(rows):
            up, down = score.copy(), score.copy()
            up[r] += eps
            down[r] -= eps
            fd = (loss.loss(y, up)[r] - loss.loss(y, down)[r]) / (2 * eps)
            assert fd == pytest.approx(first[k], abs=1e-8)
            fd2 = (loss.loss(y, up)[r] - 2 * per_row[r] + loss.loss(y, down)[r]) / eps ** 2
            assert fd2 == pytest.approx(rho[k] * (1 - rho[k]), abs=1e-4)
    g, h = np.empty(y.size), np.empty(y.size)
    loss.gradient_hessian(y, score, g, h)
    rho_all = np.concatenate([_softmax_minus_target(y, score, np.arange(ptr[q], ptr[q + 1]),
                                                    half)[1] for q in range(sizes.size)])
    np.testing.assert_allclose(h, rho_all * (1 - rho_all), rtol=1e-12)


def test_passes_the_loss_checks_and_draws_from_its_bound_stream():
    loss = create("loss", "rank_xendcg")
    assert isinstance(loss, RankXENDCGLoss) and loss.needs_groups and loss.needs_rng
    check_loss(loss)                           # unbound: a fixed seed, so deterministic
    rng = np.random.default_rng(0)
    sizes = np.array([5, 7, 4])
    y = rng.integers(0, 4, 16).astype(np.float64)
    score = rng.normal(size=16)
    bound = loss.bind_groups(ptr_of(sizes)).bind_rng(np.random.default_rng(11))
    assert bound.rng is not None and loss.rng is None
    g1, h1, g2, h2 = (np.empty(16) for _ in range(4))
    bound.gradient_hessian(y, score, g1, h1)
    bound.gradient_hessian(y, score, g2, h2)
    draws = np.random.default_rng(11)
    np.testing.assert_array_equal(g1, xendcg_gradients(y, score, ptr_of(sizes),
                                                       draws.random(16))[0])
    np.testing.assert_array_equal(g2, xendcg_gradients(y, score, ptr_of(sizes),
                                                       draws.random(16))[0])
    assert not np.array_equal(g1, g2)          # fresh gammas at every call
    np.testing.assert_array_equal(h1, h2)      # the hessian does not depend on them


def ranking_data(n_queries, seed, n_features=8):
    """Queries of 5-20 documents whose relevance grows with a few features."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 21, n_queries)
    X = rng.normal(size=(sizes.sum(), n_features))
    utility = X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.5 * X[:, 2] + 0.5 * rng.normal(size=len(X))
    y = np.digitize(utility, [0.0, 1.0, 2.0, 3.0]).astype(np.float64)
    return X, y, sizes


@pytest.mark.parametrize("grow_policy", ["symmetric", "depthwise"])
def test_rank_xendcg_learns_to_rank_held_out_queries(grow_policy):
    X, y, sizes = ranking_data(150, 1)
    Xt, yt, st_ = ranking_data(60, 2)
    ranker = BoostRanker(loss="rank_xendcg", n_estimators=60, grow_policy=grow_policy,
                         max_depth=4, random_state=0, eval_metric="ndcg@5")
    ranker.fit(X, y, group=sizes, eval_set=[(Xt, yt)], eval_group=[st_])
    ndcg = create("metric", "ndcg", {"k": 5})
    random_score = np.random.default_rng(0).normal(size=len(yt))
    assert ndcg(yt, ranker.predict(Xt), group=st_) > ndcg(yt, random_score, group=st_) + 0.25
    curves = ranker.evals_result_["valid_0"]
    assert list(curves) == ["rank_xendcg", "ndcg@5"]
    per_row = create("loss", "rank_xendcg").bind_groups(ptr_of(st_)).loss(
        yt, ranker.predict(Xt))
    assert curves["rank_xendcg"][-1] == pytest.approx(per_row.mean(), abs=1e-12)
    assert curves["rank_xendcg"][-1] < curves["rank_xendcg"][0]


def test_same_random_state_same_model_whatever_n_jobs(tmp_path):
    X, y, sizes = ranking_data(40, 7)
    params = {"loss": "rank_xendcg", "n_estimators": 20, "grow_policy": "depthwise"}
    fits = [BoostRanker(random_state=3, n_jobs=n, **params).fit(X, y, group=sizes)
            for n in (1, 2, 1)]
    assert np.array_equal(fits[0].predict(X), fits[1].predict(X))
    assert np.array_equal(fits[0].predict(X), fits[2].predict(X))
    other = BoostRanker(random_state=4, **params).fit(X, y, group=sizes)
    assert not np.array_equal(other.predict(X), fits[0].predict(X))
    fits[0].save_model(tmp_path / "xendcg.json")
    loaded = load_model(tmp_path / "xendcg.json")
    assert np.array_equal(loaded.predict(X), fits[0].predict(X))


def test_a_continued_fit_draws_what_one_longer_fit_draws():
    X, y, sizes = ranking_data(30, 8)
    params = {"loss": "rank_xendcg", "max_depth": 3, "random_state": 5}
    data = Dataset(X, y, group=sizes)
    whole = train({**params, "n_estimators": 12}, data)
    first = train({**params, "n_estimators": 7}, data)
    continued = train({**params, "n_estimators": 5}, data, init_model=first)
    np.testing.assert_allclose(continued.predict(X), whole.predict(X), rtol=0, atol=1e-12)


@pytest.mark.parametrize("update", ["sgb", "sglb", "agbm"])
def test_trains_with_samplers_and_update_rules(update):
    X, y, sizes = ranking_data(60, 5)
    Xt, yt, st_ = ranking_data(30, 6)
    ranker = BoostRanker(loss="rank_xendcg", n_estimators=40, max_depth=3, sampler="goss",
                         subsample=0.5, update=update, random_state=0).fit(X, y, group=sizes)
    ndcg = create("metric", "ndcg", {"k": 5})
    random_score = np.random.default_rng(0).normal(size=len(yt))
    assert ndcg(yt, ranker.predict(Xt), group=st_) > ndcg(yt, random_score, group=st_) + 0.15
