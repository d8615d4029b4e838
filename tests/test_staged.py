"""Staged prediction, leaf indices and iteration ranges.

``staged_predict`` / ``staged_decision_function`` / ``staged_predict_proba`` yield one array
per term of the model (an iteration of ``sgb`` and ``sglb``; a TreeGroup with several
outputs), the last equal to the full prediction bit for bit; ``apply`` gives the leaves the
prediction kernels add; ``iteration_range`` predicts with a slice of the terms.
"""
import types

import numpy as np
import pytest

from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRanker, BoostRegressor, Dataset, Model, train
from boostlib.engine.trees import GROW_POLICIES, TreeGroup

UPDATES = {"sgb": None, "sglb": None, "agbm": None, "agbmr": {"restart": 3}, "vagbm": None,
           "dart": {"rate_drop": 0.3, "skip_drop": 0.0}, "rf": None}
#: other training parameters a rule needs (rf: no shrinkage, and bagging)
NEEDS = {"rf": {"learning_rate": 1.0, "subsample": 0.632}}
POLICIES = ("symmetric", "depthwise")
#: every registered tree kind (leaf-wise "lossguide" trees are stored as depthwise ones)
ALL_POLICIES = tuple(GROW_POLICIES)


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = 2 * X[:, 0] - X[:, 1] ** 2 + X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=n)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y


X, Y = _data()
X_TEST, _ = _data(200, seed=1)
Y_BIN = (Y > np.median(Y)).astype(int)
Y_MULTI = np.digitize(Y, np.quantile(Y, [0.25, 0.5, 0.75]))
Y_RANK = np.digitize(Y, np.quantile(Y, [0.5, 0.8])).astype(int)
GROUPS = [30] * 10


def _fit(task, update, policy, n_estimators=8, **extra):
    params = dict(n_estimators=n_estimators, update=update, update_params=UPDATES[update],
                  grow_policy=policy, max_depth=3, random_state=0,
                  **{**NEEDS.get(update, {}), **extra})
    if task == "regression":
        return BoostRegressor(**params).fit(X, Y)
    if task == "binary":
        return BoostClassifier(**params).fit(X, Y_BIN)
    if task == "multiclass":
        return BoostClassifier(**params).fit(X, Y_MULTI)
    return BoostRanker(**params).fit(X, Y_RANK, group=GROUPS)


def _in_order(ensemble, leaves):
    """``bias + sum_t coef[t] * tree_t.value[leaf]`` summed tree by tree, as the kernels do:
    shape (n_rows,) or (n_rows, n_outputs)."""
    K = ensemble.n_outputs
    out = np.tile(np.atleast_1d(ensemble.bias), (leaves.shape[0], 1)).astype(np.float64)
    for t, term in enumerate(ensemble.trees):
        parts = term.trees if isinstance(term, TreeGroup) else [term]
        for k, tree in enumerate(parts):
            leaf = leaves[:, t, k] if K > 1 else leaves[:, t]
            out[:, k] += ensemble.coef[t] * tree.value[leaf]
    return out[:, 0] if K == 1 else out


# -- the last step is the prediction, for every update rule, tree kind and task ---------------
@pytest.mark.parametrize("update", list(UPDATES))
@pytest.mark.parametrize("policy", ALL_POLICIES)
@pytest.mark.parametrize("task", ["regression", "binary", "multiclass", "ranker"])
def test_last_step_is_the_prediction_bit_for_bit(task, update, policy):
    est = _fit(task, update, policy)
    staged = est.staged_predict(X_TEST)
    assert isinstance(staged, types.GeneratorType)
    steps = list(staged)
    assert len(steps) == est.n_trees_ == est.model_.n_trees
    assert np.array_equal(steps[-1], est.predict(X_TEST))
    raw_steps = list(est.model_.staged_predict(X_TEST, raw=True))
    assert np.array_equal(raw_steps[-1], est.model_.predict(X_TEST, raw=True))
    if task in ("binary", "multiclass"):
        raw = list(est.staged_decision_function(X_TEST))
        proba = list(est.staged_predict_proba(X_TEST))
        assert len(raw) == len(proba) == len(steps)
        assert np.array_equal(raw[-1], est.decision_function(X_TEST))
        assert np.array_equal(proba[-1], est.predict_proba(X_TEST))
        assert raw[0].shape == est.decision_function(X_TEST).shape
        assert proba[0].shape == (X_TEST.shape[0], est.classes_.size)
        # every step: probabilities and labels of that step's raw scores
        for r, p, s in zip(raw, proba, steps):
            assert np.allclose(p.sum(axis=1), 1.0)
            assert np.array_equal(s, est.classes_[np.argmax(p, axis=1)] if r.ndim == 2
                                  else est.classes_[(r > 0).astype(int)])


def test_number_of_steps_follows_the_terms():
    """sgb, sglb, vagbm: one term per iteration; agbm: two (one in the last iteration);
    agbmr with restart=3: one fewer per restart."""
    n = 8
    for update, expected in (("sgb", n), ("sglb", n), ("vagbm", n), ("agbm", 2 * n - 1)):
        est = _fit("regression", update, "symmetric", n_estimators=n)
        assert est.n_trees_ == expected == sum(1 for _ in est.staged_predict(X_TEST))
    est = _fit("regression", "agbmr", "symmetric", n_estimators=n)
    assert est.n_trees_ < 2 * n - 1
    assert sum(1 for _ in est.staged_predict(X_TEST)) == est.n_trees_


# -- steps are the models training had -------------------------------------------------------
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("task", ["regression", "multiclass"])
def test_sgb_step_k_is_the_model_trained_for_k_plus_1_iterations(task, policy):
    full = _fit(task, "sgb", policy, n_estimators=10)
    raw = list(full.model_.staged_predict(X_TEST, raw=True))
    for k in (0, 1, 4, 9):
        short = _fit(task, "sgb", policy, n_estimators=k + 1)
        assert np.array_equal(raw[k], short.model_.predict(X_TEST, raw=True))


def test_sgb_with_sampling_step_k_is_the_shorter_fit():
    full = _fit("regression", "sgb", "depthwise", n_estimators=10, sampler="mvs",
                subsample=0.5)
    steps = list(full.staged_predict(X_TEST))
    for k in (0, 6):
        short = _fit("regression", "sgb", "depthwise", n_estimators=k + 1, sampler="mvs",
                     subsample=0.5)
        assert np.array_equal(steps[k], short.predict(X_TEST))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("sglb", [{}, {"model_shrink_mode": "decreasing"},
                                  {"model_shrink_rate": 0.5}])
def test_sglb_step_k_is_the_shrunk_model_of_iteration_k(policy, sglb):
    def fit(n):
        return train(dict(n_estimators=n, update="sglb", update_params=sglb,
                          grow_policy=policy, max_depth=3, random_state=0), Dataset(X, Y))

    full = fit(12)
    assert full.ensemble.scale_history            # the shrinkage is recorded
    steps = list(full.staged_predict(X_TEST, raw=True))
    leaves = full.apply(X_TEST)
    for k in (0, 3, 10, 11):
        expected = fit(k + 1).predict(X_TEST, raw=True)
        assert np.allclose(steps[k], expected, rtol=1e-12, atol=1e-12)
        if sglb.get("model_shrink_rate") and k < 11:
            # a plain prefix of the final model is not that state: the shrink is undone
            prefix = full.ensemble.bias + sum(
                full.ensemble.coef[t] * full.ensemble.trees[t].value[leaves[:, t]]
                for t in range(k + 1))
            assert not np.allclose(prefix, expected, rtol=1e-6)


@pytest.mark.parametrize("update", ["agbm", "agbmr", "vagbm", "dart", "rf"])
def test_accelerated_steps_are_prefixes_with_the_final_coefficients(update):
    """Rules that rewrite earlier coefficients (AGBM's combine, DART's dropped trees, the
    forest's 1/k) record no earlier states: step k is the final model's first k + 1 terms."""
    est = _fit("regression", update, "depthwise", n_estimators=6)
    ensemble = est.ensemble_
    assert ensemble.scale_history is None           # combine rewrote the coefficients
    leaves = est.apply(X_TEST)
    running = np.full(X_TEST.shape[0], ensemble.bias)
    for t, step in enumerate(est.model_.staged_predict(X_TEST, raw=True)):
        running = running + ensemble.coef[t] * ensemble.trees[t].value[leaves[:, t]]
        assert np.allclose(step, running, rtol=1e-12, atol=1e-12)


def test_steps_end_at_the_best_iteration_after_early_stopping():
    X_val, y_val = _data(200, seed=2)
    est = BoostRegressor(n_estimators=300, learning_rate=0.5, early_stopping_rounds=5,
                         max_depth=3, random_state=0).fit(X, Y, eval_set=[(X_val, y_val)])
    assert est.n_trees_ == est.best_iteration_ + 1 < 300
    steps = list(est.staged_predict(X_val))
    assert len(steps) == est.best_iteration_ + 1
    assert np.array_equal(steps[-1], est.predict(X_val))
    errors = [np.mean((s - y_val) ** 2) for s in steps]
    assert int(np.argmin(errors)) == est.best_iteration_


# -- generators ------------------------------------------------------------------------------
def test_staged_methods_are_lazy_generators_of_new_arrays():
    clf = _fit("multiclass", "sgb", "symmetric")
    reg = _fit("regression", "sglb", "depthwise")
    gens = [clf.staged_predict(X_TEST), clf.staged_predict_proba(X_TEST),
            clf.staged_decision_function(X_TEST), reg.staged_predict(X_TEST),
            reg.model_.staged_predict(X_TEST), reg.model_.staged_predict(X_TEST, raw=True)]
    for gen in gens:
        assert isinstance(gen, types.GeneratorType)
    first = next(gens[2])
    kept = first.copy()
    second = next(gens[2])
    assert np.array_equal(first, kept) and not np.shares_memory(first, second)
    steps = list(reg.model_.staged_predict(X_TEST, raw=True))
    assert not any(np.shares_memory(a, b) for a, b in zip(steps, steps[1:]))


def test_staged_checks_X_when_called():
    reg = _fit("regression", "sgb", "symmetric")
    with pytest.raises(ValueError, match="features"):
        reg.staged_predict(X_TEST[:, :3])            # before the first step is asked for
    with pytest.raises(ValueError, match="features"):
        reg.model_.staged_predict(X_TEST[:, :3])


def test_staged_does_not_depend_on_threads_or_sparse_input():
    sparse = importorskip("scipy.sparse")
    est = _fit("multiclass", "sglb", "depthwise")
    a = list(est.model_.staged_predict(X_TEST, raw=True, n_jobs=1))
    b = list(est.model_.staged_predict(X_TEST, raw=True, n_jobs=2))
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    Xs = np.nan_to_num(X_TEST)
    Xs[np.abs(Xs) < 0.5] = 0.0
    dense = list(est.model_.staged_predict(Xs, raw=True))
    csr = list(est.model_.staged_predict(sparse.csr_matrix(Xs), raw=True))
    assert all(np.array_equal(u, v) for u, v in zip(dense, csr))
    assert np.array_equal(est.model_.apply(sparse.csr_matrix(Xs)), est.model_.apply(Xs))
    assert np.array_equal(est.model_.apply(Xs, n_jobs=1), est.model_.apply(Xs, n_jobs=2))


def test_staged_survives_a_model_file_round_trip(tmp_path):
    model = train(dict(n_estimators=10, update="sglb", max_depth=3, random_state=0,
                       update_params={"model_shrink_rate": 0.5}), Dataset(X, Y))
    model.save(tmp_path / "m.json")
    loaded = Model.load(tmp_path / "m.json")
    for a, b in zip(model.staged_predict(X_TEST), loaded.staged_predict(X_TEST)):
        assert np.array_equal(a, b)
    assert np.array_equal(model.apply(X_TEST), loaded.apply(X_TEST))


def test_unrecoverable_states_are_refused():
    model = train(dict(n_estimators=6, update="sglb", max_depth=3, random_state=0),
                  Dataset(X, Y))
    model.ensemble.scale_history = [(2, 1e-250)]   # state <= 2 trees: lost to floating point
    with pytest.raises(ValueError, match="state with 1 trees cannot be recovered"):
        model.staged_predict(X_TEST)
    with pytest.raises(ValueError, match="cannot be recovered"):
        model.predict(X_TEST, iteration_range=(0, 2))
    assert np.array_equal(model.predict(X_TEST, iteration_range=(0, 6)), model.predict(X_TEST))


# -- leaf indices ----------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ALL_POLICIES)
@pytest.mark.parametrize("task", ["regression", "binary", "multiclass", "ranker"])
@pytest.mark.parametrize("update", ["sgb", "sglb", "agbm", "dart", "rf"])
def test_apply_routes_rows_to_the_leaves_predict_adds(task, policy, update):
    est = _fit(task, update, policy)
    leaves = est.apply(X_TEST)                     # X_TEST has NaNs
    ensemble = est.ensemble_
    K = ensemble.n_outputs
    assert leaves.dtype == np.int32
    assert leaves.shape == ((X_TEST.shape[0], est.n_trees_) if K == 1 else
                            (X_TEST.shape[0], est.n_trees_, K))
    assert np.array_equal(leaves, est.model_.apply(X_TEST))
    raw = est.model_.predict(X_TEST, raw=True)
    assert np.allclose(_in_order(ensemble, leaves), raw, rtol=1e-12, atol=1e-12)
    for t, term in enumerate(ensemble.trees):
        for k, tree in enumerate(term.trees if isinstance(term, TreeGroup) else [term]):
            leaf = leaves[:, t, k] if K > 1 else leaves[:, t]
            assert leaf.min() >= 0 and leaf.max() < tree.value.size
            if policy == "symmetric":
                assert tree.value.size == 2 ** tree.depth
            else:
                assert np.all(tree.left[leaf] < 0)      # node ids of leaves


def test_apply_with_missing_values_follows_the_learned_direction():
    """A row whose feature is missing goes where the split sends NaN (nan_right)."""
    est = _fit("regression", "sgb", "depthwise", n_estimators=3)
    tree = est.ensemble_.trees[0]
    f = int(tree.feature[0])
    row = np.zeros((1, X.shape[1]))
    row[0, f] = np.nan
    node = 0
    while tree.left[node] >= 0:
        if tree.feature[node] == f:
            node = tree.right[node] if tree.nan_right[node] else tree.left[node]
        else:   # the other features are 0: their bin decides
            binned = est.ensemble_.bin_mapper.transform(row)[:, 0]
            b = int(binned[tree.feature[node]])
            node = tree.right[node] if b > tree.bin[node] else tree.left[node]
    assert est.apply(row)[0, 0] == node


@pytest.mark.parametrize("policy", ALL_POLICIES)
def test_apply_with_categorical_features(policy):
    pd = importorskip("pandas")
    rng = np.random.default_rng(0)
    city = rng.choice(list("abcdef"), 400)
    effect = dict(zip("abcdef", [1.0, -1.0, 2.0, 0.0, -2.0, 1.5]))
    x = rng.normal(size=400)
    y = np.array([effect[c] for c in city]) + x + 0.1 * rng.normal(size=400)
    df = pd.DataFrame({"city": pd.Categorical(city), "x": x})
    est = BoostRegressor(n_estimators=8, grow_policy=policy, max_depth=3,
                         random_state=0).fit(df, y)
    assert any(np.any(t.nan_right == 2) for t in est.ensemble_.trees)   # set splits
    test = df.iloc[:50].copy()
    test.loc[test.index[:5], "city"] = None                              # missing categories
    leaves = est.apply(test)
    assert np.allclose(_in_order(est.ensemble_, leaves), est.model_.predict(test, raw=True),
                       rtol=1e-12, atol=1e-12)
    steps = list(est.staged_predict(test))
    assert np.array_equal(steps[-1], est.predict(test))


def test_multiclass_apply_has_a_class_axis():
    clf = _fit("multiclass", "sgb", "symmetric", n_estimators=5)
    leaves = clf.apply(X_TEST)
    assert leaves.shape == (X_TEST.shape[0], 5, 4)
    for k in range(4):
        tree = clf.ensemble_.trees[2].trees[k]
        assert leaves[:, 2, k].max() < tree.value.size


# -- iteration ranges ------------------------------------------------------------------------
@pytest.mark.parametrize("update", ["sgb", "sglb", "agbm", "dart", "rf"])
@pytest.mark.parametrize("task", ["regression", "multiclass"])
def test_iteration_range_zero_to_end_is_the_step(task, update):
    est = _fit(task, update, "symmetric")
    model = est.model_
    raw = list(model.staged_predict(X_TEST, raw=True))
    response = list(model.staged_predict(X_TEST))
    for k in range(model.n_trees):
        assert np.array_equal(model.predict(X_TEST, raw=True, iteration_range=(0, k + 1)),
                              raw[k])
        assert np.array_equal(model.predict(X_TEST, iteration_range=(0, k + 1)), response[k])
    assert np.array_equal(model.predict(X_TEST, iteration_range=[0, model.n_trees]),
                          model.predict(X_TEST))


def test_iteration_range_on_the_estimators():
    reg = _fit("regression", "sgb", "depthwise")
    clf = _fit("multiclass", "sglb", "symmetric")
    bin_ = _fit("binary", "sgb", "symmetric")
    rnk = _fit("ranker", "sgb", "symmetric")
    for est in (reg, rnk):
        steps = list(est.staged_predict(X_TEST))
        assert np.array_equal(est.predict(X_TEST, iteration_range=(0, 3)), steps[2])
        assert np.array_equal(est.predict(X_TEST, iteration_range=(0, est.n_trees_)),
                              est.predict(X_TEST))
    for est in (clf, bin_):
        raw = list(est.staged_decision_function(X_TEST))
        proba = list(est.staged_predict_proba(X_TEST))
        labels = list(est.staged_predict(X_TEST))
        r = (0, np.int64(4))
        assert np.array_equal(est.decision_function(X_TEST, iteration_range=r), raw[3])
        assert np.array_equal(est.predict_proba(X_TEST, iteration_range=r), proba[3])
        assert np.array_equal(est.predict(X_TEST, iteration_range=r), labels[3])


@pytest.mark.parametrize("task", ["regression", "multiclass"])
def test_iteration_range_with_a_start_drops_the_first_terms(task):
    est = _fit(task, "sgb", "depthwise", n_estimators=10)
    model = est.model_
    leaves = model.apply(X_TEST)
    ensemble = model.ensemble
    K = ensemble.n_outputs
    start, end = 3, 7
    expected = np.tile(np.atleast_1d(ensemble.bias), (X_TEST.shape[0], 1))
    for t in range(start, end):
        term = ensemble.trees[t]
        for k, tree in enumerate(term.trees if K > 1 else [term]):
            leaf = leaves[:, t, k] if K > 1 else leaves[:, t]
            expected[:, k] += ensemble.coef[t] * tree.value[leaf]
    expected = expected[:, 0] if K == 1 else expected
    got = model.predict(X_TEST, raw=True, iteration_range=(start, end))
    assert np.allclose(got, expected, rtol=1e-12, atol=1e-12)
    # the sum of disjoint ranges (each with the bias) is the model plus the bias
    rest = model.predict(X_TEST, raw=True, iteration_range=(0, start)) \
        + model.predict(X_TEST, raw=True, iteration_range=(start, model.n_trees))
    assert np.allclose(rest - np.atleast_1d(ensemble.bias), model.predict(X_TEST, raw=True),
                       rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bad", [(0, 0), (3, 2), (-1, 2), (0, 9), (0.0, 2), (True, 2),
                                 (0, None), [1], (0, 1, 2), "0:5", 5, (0, 2.5)])
def test_bad_iteration_ranges_are_refused(bad):
    est = _fit("regression", "sgb", "symmetric")            # 8 trees
    for call in (lambda: est.model_.predict(X_TEST, iteration_range=bad),
                 lambda: est.predict(X_TEST, iteration_range=bad)):
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert f"iteration_range={bad!r}" in message
        assert "expected a pair (start, end) of ints with 0 <= start < end <= 8" in message
    clf = _fit("binary", "sgb", "symmetric")
    for method in (clf.predict, clf.predict_proba, clf.decision_function):
        with pytest.raises(ValueError, match="iteration_range="):
            method(X_TEST, iteration_range=bad)


def test_a_model_without_trees():
    model = train(dict(n_estimators=3, max_depth=2, random_state=0), Dataset(X, Y))
    model.ensemble.truncate(0, model.ensemble.bias, model.ensemble.coef[:0])
    assert list(model.staged_predict(X_TEST)) == []
    assert model.apply(X_TEST).shape == (X_TEST.shape[0], 0)
    with pytest.raises(ValueError, match=r"iteration_range=\(0, 1\) is invalid; expected "
                                         "None: the model has no trees"):
        model.predict(X_TEST, iteration_range=(0, 1))
