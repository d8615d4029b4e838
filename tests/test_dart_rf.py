"""The ``dart`` and ``rf`` update rules (docs/model_families.md).

Properties from the DART paper (Rashmi & Gilad-Bachrach 2015) and LightGBM/XGBoost: no drop
is plain boosting, bit for bit; after a round the dropped trees and the new one carry the
weights of the chosen normalisation. A random forest's prediction is the bias plus the mean
of its trees, its trees are fitted at the starting scores. Both: every tree kind, sampler,
multiclass, continued fits, early stopping, n_jobs-independent models, refusals.
"""
import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRegressor, Dataset, train
from boostlib.builtin.dart import DART, normalization
from boostlib.engine.trees import GROW_POLICIES, TreeGroup

POLICIES = tuple(GROW_POLICIES)
RF = {"update": "rf", "learning_rate": 1.0, "subsample": 0.632}


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = 2 * X[:, 0] - X[:, 1] ** 2 + X[:, 2] * X[:, 3] + 0.3 * rng.normal(size=n)
    X[rng.random(X.shape) < 0.03] = np.nan
    return X, y


X, Y = _data()
X_TEST, Y_TEST = _data(300, seed=1)
Y_MULTI = np.digitize(Y, np.quantile(Y, [0.33, 0.66]))


def _raw_by_hand(ensemble, leaves):
    """``bias + sum_t coef[t] * tree_t.value[leaf]`` from the leaf indices of ``apply``."""
    K = ensemble.n_outputs
    out = np.tile(np.atleast_1d(ensemble.bias), (leaves.shape[0], 1)).astype(np.float64)
    for t, term in enumerate(ensemble.trees):
        parts = term.trees if isinstance(term, TreeGroup) else [term]
        for k, tree in enumerate(parts):
            leaf = leaves[:, t, k] if K > 1 else leaves[:, t]
            out[:, k] += ensemble.coef[t] * tree.value[leaf]
    return out[:, 0] if K == 1 else out


def _tree_outputs(est, X_):
    """Each term's output (without coefficient), shape (n_trees, n_rows[, K])."""
    ens = est.model_.ensemble
    leaves = est.apply(X_)
    outs = []
    for t, term in enumerate(ens.trees):
        parts = term.trees if isinstance(term, TreeGroup) else [term]
        cols = [tree.value[leaves[:, t, k] if ens.n_outputs > 1 else leaves[:, t]]
                for k, tree in enumerate(parts)]
        outs.append(cols[0] if ens.n_outputs == 1 else np.column_stack(cols))
    return np.array(outs)


# -- DART --------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("update_params", [{"rate_drop": 0.0, "skip_drop": 0.0},
                                          {"rate_drop": 0.5, "skip_drop": 1.0}])
def test_dart_without_drops_is_sgb_bit_for_bit(policy, update_params):
    for cls, y in ((BoostRegressor, Y), (BoostClassifier, Y_MULTI)):
        common = dict(n_estimators=12, grow_policy=policy, max_depth=3, random_state=3,
                      subsample=0.7, colsample_bynode=0.8)
        sgb = cls(**common).fit(X, y)
        dart = cls(update="dart", update_params=update_params, **common).fit(X, y)
        assert np.array_equal(sgb.model_.ensemble.coef, dart.model_.ensemble.coef)
        out = "predict" if cls is BoostRegressor else "predict_proba"
        assert np.array_equal(getattr(sgb, out)(X_TEST), getattr(dart, out)(X_TEST))
        assert sgb.evals_result_ == dart.evals_result_


@pytest.mark.parametrize("normalize_type", ["lightgbm", "tree", "forest"])
@pytest.mark.parametrize("sample_type", ["uniform", "weighted"])
def test_dart_normalisation_of_the_dropped_and_new_trees(normalize_type, sample_type):
    """One more round: the coefficients of the trees it dropped are multiplied by ``a`` and
    the new tree gets ``b`` (the formulas of the paper, LightGBM and XGBoost), every other
    coefficient stays; the rounds before are those of the shorter fit, bit for bit."""
    eta = 0.3
    params = dict(update="dart", learning_rate=eta, max_depth=3, random_state=5,
                  update_params={"rate_drop": 0.3, "skip_drop": 0.0, "max_drop": 0,
                                 "sample_type": sample_type,
                                 "normalize_type": normalize_type})
    seen = set()
    for m in range(3, 11):
        short = BoostRegressor(n_estimators=m, **params).fit(X, Y).model_.ensemble.coef
        longer = BoostRegressor(n_estimators=m + 1, **params).fit(X, Y).model_.ensemble.coef
        changed = np.flatnonzero(longer[:m] != short)
        k = changed.size
        seen.add(k)
        expected_a = {"lightgbm": k / (k + 1), "tree": k / (k + eta),
                      "forest": 1 / (1 + eta)}[normalize_type] if k else 1.0
        expected_b = {"lightgbm": eta / (k + 1), "tree": eta / (k + eta),
                      "forest": eta / (1 + eta)}[normalize_type] if k else eta
        np.testing.assert_allclose(longer[changed], short[changed] * expected_a, rtol=1e-15)
        assert longer[m] == pytest.approx(expected_b, rel=1e-15)
    assert max(seen) >= 2          # rounds with several drops were checked


def test_dart_normalisation_leaves_the_model_unchanged_when_the_new_tree_is_the_dropped_ones():
    """The paper's argument: the new tree is fitted to what the dropped trees ``D`` gave, so
    adding it whole would count ``D`` twice; with ``a + b = 1`` a new tree equal to ``D``
    leaves the prediction unchanged (``a D + b D = D``). It holds for ``tree`` and
    ``forest`` at every learning rate, for ``lightgbm`` at learning rate 1 (else the new
    tree is shrunk by it, as any boosted tree)."""
    for k in range(1, 60):
        for eta in (0.05, 0.3, 1.0):
            for kind in ("tree", "forest"):
                a, b = normalization(kind, k, eta)
                assert a + b == pytest.approx(1.0, rel=1e-15)
                assert b / eta == pytest.approx(1.0 / (k + eta) if kind == "tree"
                                                else 1.0 / (1 + eta))
        a, b = normalization("lightgbm", k, 1.0)
        assert a + b == pytest.approx(1.0, rel=1e-15)
        a, b = normalization("lightgbm", k, 0.1)
        assert (a, b) == (k / (k + 1), 0.1 / (k + 1))
    assert normalization("forest", 0, 0.1) == (1.0, 0.1)
    assert normalization("tree", 0, 0.1) == (1.0, 0.1)


class _Spy:
    """The context as a DART step sees it, recording the scores its derivatives are taken at."""

    def __init__(self, ctx, log):
        self._ctx, self._log = ctx, log

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def gradients(self, raw=None):
        self._log.append(np.array(self._ctx.raw if raw is None else raw))
        return self._ctx.gradients(raw)


class _SpyDART(DART):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.records = []

    def step(self, ctx):
        log = []
        coef = ctx.model.coefficients
        super().step(_Spy(ctx, log))
        self.records.append((coef, list(self.dropped_), log[0]))


def test_dart_fits_each_tree_at_the_model_without_the_dropped_trees():
    """The derivatives of a round are taken at bias + the trees it did not drop, with their
    coefficients before the round: checked against every tree's output from ``apply``."""
    rule = _SpyDART(rate_drop=0.4, skip_drop=0.2, max_drop=3)
    est = BoostRegressor(update=rule, n_estimators=14, max_depth=3, random_state=0,
                         learning_rate=0.3).fit(X, Y)
    outs = _tree_outputs(est, X)
    bias = est.model_.ensemble.bias
    assert sum(bool(d) for _, d, _ in rule.records) >= 3
    for coef, dropped, raw in rule.records:
        keep = np.ones(coef.size, dtype=bool)
        keep[dropped] = False
        want = bias + (coef[keep, None] * outs[:coef.size][keep]).sum(axis=0)
        np.testing.assert_allclose(raw, want, rtol=1e-10, atol=1e-10)


def test_dart_drop_draws():
    """Uniform drops at rate p over n trees average p * n; weighted ones prefer large
    coefficients; max_drop caps; skip_drop=1 never drops; one_drop always drops one."""
    rng = np.random.default_rng(0)
    coef = np.full(200, 0.1)
    rule = DART(rate_drop=0.1, skip_drop=0.0, max_drop=0, sample_type="uniform")
    counts = [len(rule.drop(coef, rng)) for _ in range(400)]
    assert abs(np.mean(counts) - 20) < 1.0
    rule = DART(rate_drop=0.1, skip_drop=0.0, max_drop=5, sample_type="uniform")
    assert max(len(rule.drop(coef, rng)) for _ in range(100)) <= 5
    rule = DART(rate_drop=0.9, skip_drop=1.0)
    assert all(rule.drop(coef, rng) == [] for _ in range(50))
    rule = DART(rate_drop=1e-9, skip_drop=0.0, one_drop=True)
    assert all(len(rule.drop(coef, rng)) == 1 for _ in range(50))
    weighted = np.concatenate([np.full(100, 0.01), np.full(100, 1.0)])
    rule = DART(rate_drop=0.2, skip_drop=0.0, max_drop=0, sample_type="weighted")
    hits = np.zeros(200)
    for _ in range(300):
        hits[rule.drop(weighted, rng)] += 1
    assert hits[100:].sum() > 20 * hits[:100].sum()
    # the expected number dropped is still rate * n
    assert abs(hits.sum() / 300 - 0.2 * 200) < 2.0


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("sampler", [None, "uniform", "goss", "mvs"])
def test_dart_every_kind_and_sampler_reproducible_across_threads(policy, sampler):
    for cls, y in ((BoostRegressor, Y), (BoostClassifier, Y_MULTI)):
        params = dict(update="dart", n_estimators=15, grow_policy=policy, max_depth=3,
                      random_state=7, sampler=sampler,
                      subsample=0.5 if sampler else 1.0,
                      update_params={"rate_drop": 0.3, "skip_drop": 0.2})
        one = cls(n_jobs=1, **params).fit(X, y)
        two = cls(n_jobs=2, **params).fit(X, y)
        assert np.array_equal(one.model_.ensemble.coef, two.model_.ensemble.coef)
        out = "predict" if cls is BoostRegressor else "predict_proba"
        assert np.array_equal(getattr(one, out)(X_TEST), getattr(two, out)(X_TEST))
        coef = one.model_.ensemble.coef
        assert np.any(coef != coef[-1])         # some trees were rescaled
        # the scores training kept are the model's: its recorded loss is the final one
        loss = one.model_.loss
        raw = one.model_.predict(X, raw=True)
        enc = loss.validate_target(y.astype(float))
        assert one.evals_result_["train"][loss.name][-1] == pytest.approx(
            float(np.mean(loss.loss(enc, raw))), rel=1e-10)


def test_dart_beats_the_constant_and_tracks_sgb_accuracy():
    params = dict(n_estimators=60, max_depth=3, learning_rate=0.2, random_state=0)
    sgb = BoostRegressor(**params).fit(X, Y)
    dart = BoostRegressor(update="dart", **params).fit(X, Y)
    mse = lambda e: float(np.mean((e.predict(X_TEST) - Y_TEST) ** 2))   # noqa: E731
    assert mse(dart) < 0.5 * float(np.var(Y_TEST))
    assert mse(dart) < 1.5 * mse(sgb)


# -- RF ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", POLICIES)
def test_rf_prediction_is_the_bias_plus_the_mean_of_its_trees(policy):
    for cls, y in ((BoostRegressor, Y), (BoostClassifier, Y_MULTI)):
        est = cls(n_estimators=9, grow_policy=policy, max_depth=4, random_state=1,
                  colsample_bytree=0.7, **RF).fit(X, y)
        ens = est.model_.ensemble
        assert np.all(ens.coef == 1.0 / 9)          # exact
        outs = _tree_outputs(est, X_TEST)
        raw = est.model_.predict(X_TEST, raw=True)
        want = np.atleast_1d(ens.bias) + outs.mean(axis=0)
        np.testing.assert_allclose(raw, want if want.ndim > 1 else want, rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(raw, _raw_by_hand(ens, est.apply(X_TEST)), atol=1e-12)


def test_rf_trees_are_fitted_at_the_starting_scores():
    """Tree j of a forest is the tree boosting would fit at the bias with the same sample
    and columns: the first one is sgb's first tree; each later one does not depend on the
    trees before (a forest's trees are those of the longer forest's first ones)."""
    common = dict(max_depth=3, random_state=4, subsample=0.632, learning_rate=1.0)
    rf = BoostRegressor(n_estimators=6, update="rf", **common).fit(X, Y)
    sgb = BoostRegressor(n_estimators=1, **common).fit(X, Y)
    first_rf, first_sgb = rf.model_.ensemble.trees[0], sgb.model_.ensemble.trees[0]
    assert np.array_equal(first_rf.value, first_sgb.value)
    longer = BoostRegressor(n_estimators=10, update="rf", **common).fit(X, Y)
    for a, b in zip(rf.model_.ensemble.trees, longer.model_.ensemble.trees):
        assert np.array_equal(a.value, b.value)
    # a forest is no boosted model: its trees all fit the same residual, so they agree
    outs = _tree_outputs(longer, X_TEST)
    assert np.corrcoef(outs[0], outs[-1])[0, 1] > 0.7


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("sampler", ["uniform", "goss", "mvs", "bernoulli"])
def test_rf_every_kind_and_sampler_reproducible_across_threads(policy, sampler):
    if sampler == "bernoulli":
        sampler = None                          # subsample alone: uniform bagging
    for cls, y in ((BoostRegressor, Y), (BoostClassifier, Y_MULTI)):
        params = dict(update="rf", learning_rate=1.0, n_estimators=12, grow_policy=policy,
                      max_depth=4, random_state=2, sampler=sampler, subsample=0.5)
        one = cls(n_jobs=1, **params).fit(X, y)
        two = cls(n_jobs=2, **params).fit(X, y)
        out = "predict" if cls is BoostRegressor else "predict_proba"
        assert np.array_equal(getattr(one, out)(X_TEST), getattr(two, out)(X_TEST))
        assert np.all(one.model_.ensemble.coef == 1.0 / 12)


def test_rf_accuracy_sanity():
    rf = BoostRegressor(n_estimators=50, max_depth=6, random_state=0, colsample_bynode=0.6,
                        **RF).fit(X, Y)
    mse = float(np.mean((rf.predict(X_TEST) - Y_TEST) ** 2))
    assert mse < 0.5 * float(np.var(Y_TEST))
    clf = BoostClassifier(n_estimators=30, max_depth=5, random_state=0, **RF).fit(
        X, (Y > 0).astype(int))
    assert np.mean(clf.predict(X_TEST) == (Y_TEST > 0)) > 0.75


# -- both: early stopping, continued fits, offsets ---------------------------------------------
def _mse(est, X_, y_):
    """The mse loss (half the mean squared error) of an estimator's predictions."""
    return float(np.mean(est.model_.loss.loss(y_, est.predict(X_))))


def test_rf_early_stopping_keeps_the_forest_of_the_best_iteration():
    est = BoostRegressor(n_estimators=60, max_depth=2, random_state=0,
                         early_stopping_rounds=3, **RF)
    est.fit(X, Y, eval_set=[(X_TEST, Y_TEST)])
    k = est.n_trees_
    assert k < 60
    assert np.all(est.model_.ensemble.coef == 1.0 / k)
    curve = est.evals_result_["valid_0"]["mse"]
    assert min(curve) == pytest.approx(_mse(est, X_TEST, Y_TEST), rel=1e-9)


def test_dart_early_stopping_keeps_the_best_state():
    est = BoostRegressor(update="dart", n_estimators=80, max_depth=3, learning_rate=0.5,
                         random_state=0, early_stopping_rounds=4,
                         update_params={"rate_drop": 0.3, "skip_drop": 0.0})
    est.fit(X, Y, eval_set=[(X_TEST, Y_TEST)])
    curve = est.evals_result_["valid_0"]["mse"]
    assert est.n_trees_ < 80
    assert _mse(est, X_TEST, Y_TEST) == pytest.approx(min(curve), rel=1e-9)


def test_continued_fits():
    # DART continues any model, dropping among all its trees
    base = train({"n_estimators": 8, "max_depth": 3, "random_state": 0}, Dataset(X, Y))
    more = train({"n_estimators": 8, "max_depth": 3, "random_state": 0, "update": "dart",
                  "update_params": {"rate_drop": 0.5, "skip_drop": 0.0}}, Dataset(X, Y),
                 init_model=base)
    assert more.n_trees == 16
    assert np.any(more.ensemble.coef[:8] != base.ensemble.coef)
    # a forest continues a forest: 5 + 5 trees are the 10-tree forest
    p = {"max_depth": 3, "random_state": 0, **RF}
    rf10 = train({**p, "n_estimators": 10}, Dataset(X, Y))
    rf5 = train({**p, "n_estimators": 5}, Dataset(X, Y))
    rf55 = train({**p, "n_estimators": 5}, Dataset(X, Y), init_model=rf5)
    assert np.all(rf55.ensemble.coef == 0.1)
    np.testing.assert_allclose(rf55.predict(X_TEST, raw=True), rf10.predict(X_TEST, raw=True),
                               rtol=1e-12, atol=1e-12)
    # ... and refuses a boosted model
    with pytest.raises(ValueError, match="continues only a random forest"):
        train({**p, "n_estimators": 3}, Dataset(X, Y), init_model=base)


def test_offsets_are_the_starting_scores():
    rng = np.random.default_rng(9)
    offset = rng.normal(size=X.shape[0])
    for params in (RF, {"update": "dart", "update_params": {"rate_drop": 0.4,
                                                            "skip_drop": 0.0}}):
        model = train({"n_estimators": 6, "max_depth": 3, "random_state": 0, **params},
                      Dataset(X, Y + offset, init_score=offset))
        loss = model.evals_result["train"]["mse"][-1]
        raw = model.predict(X, raw=True, init_score=offset)
        want = float(np.mean(model.loss.loss(Y + offset, raw)))
        assert loss == pytest.approx(want, rel=1e-10)


# -- refusals ---------------------------------------------------------------------------------
@pytest.mark.parametrize("update_params, match", [
    ({"drop_rate": 0.1}, "unknown parameter drop_rate"),
    ({"rate_drop": 1.5}, r"rate_drop=1.5 is invalid; expected a number in \[0, 1\]"),
    ({"skip_drop": -0.1}, "skip_drop=-0.1 is invalid"),
    ({"max_drop": 2.5}, "max_drop=2.5 is invalid; expected an int >= 0"),
    ({"one_drop": "yes"}, "one_drop='yes' is invalid"),
    ({"sample_type": "random"}, "sample_type='random' is invalid"),
    ({"normalize_type": "xgboost"}, "normalize_type='xgboost' is invalid"),
])
def test_dart_refuses_bad_parameters(update_params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        BoostRegressor(update="dart", update_params=update_params, n_estimators=2).fit(X, Y)


@pytest.mark.parametrize("params, match", [
    ({"learning_rate": 0.1, "subsample": 0.5}, r"learning_rate=0.1 is invalid.*1\.0"),
    ({"learning_rate": 1.0}, "every tree the same tree"),
    ({"learning_rate": 1.0, "subsample": 0.5, "update_params": {"k": 1}},
     "unknown parameter k=1"),
])
def test_rf_refuses_what_makes_no_forest(params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        BoostRegressor(update="rf", n_estimators=2, **params).fit(X, Y)


def test_rf_column_sampling_alone_is_enough():
    est = BoostRegressor(update="rf", learning_rate=1.0, colsample_bynode=0.5,
                         n_estimators=4, random_state=0).fit(X, Y)
    assert est.n_trees_ == 4
