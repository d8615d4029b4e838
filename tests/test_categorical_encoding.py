"""``categorical_encoding``: ordered target statistics against a slow reference and their
defining property (row i's statistic reads only rows before i in the permutation), no
target leakage from a noise column, one-hot columns against set splits, reproducibility,
model files, and predictions, staged predictions and SHAP values of encoded models."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import boostlib
from boostlib import BoostClassifier, BoostRegressor, Dataset, train
from boostlib.engine.encoding import (AUTO_MIN_COVERED, PRIOR_WEIGHT, CategoricalEncoder,
                                      auto_encoding, ordered_sums, stat_targets)
from reference import target_stats as ref
from reference.strategies import KERNEL_SETTINGS


# -- the ordered statistic ---------------------------------------------------------------------
@st.composite
def _rows(draw):
    n = draw(st.integers(1, 60))
    n_codes = draw(st.integers(1, 8))
    codes = np.array(draw(st.lists(st.integers(-1, n_codes - 1), min_size=n, max_size=n)))
    k = draw(st.integers(1, 3))
    t = np.array(draw(st.lists(st.floats(-5, 5), min_size=n * k, max_size=n * k))
                 ).reshape(n, k)
    w = np.array(draw(st.lists(st.floats(0, 3), min_size=n, max_size=n)))
    seed = draw(st.integers(0, 2**32 - 1))
    order = np.random.default_rng(seed).permutation(n)
    return codes, t, w, order


@KERNEL_SETTINGS
@given(_rows())
def test_ordered_sums_match_the_reference(case):
    codes, t, w, order = case
    sums, weights = ordered_sums(codes, t, w, order)
    want_sums, want_weights = ref.ordered_sums(codes, t, w, order)
    np.testing.assert_allclose(sums, want_sums, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(weights, want_weights, rtol=1e-12, atol=1e-9)


@KERNEL_SETTINGS
@given(_rows(), st.data())
def test_a_rows_statistic_reads_only_the_rows_before_it(case, data):
    """Changing the target of row i and of every row after it in the permutation leaves
    row i's statistic as it was (up to the rounding of the running sums)."""
    codes, t, w, order = case
    w = w + 0.5                                 # a positive total: a defined prior
    X = codes.astype(float)[:, None]
    X[codes < 0] = np.nan
    enc = CategoricalEncoder.fit(X, np.array([True]), [None], "target_stats", t, w, 4, 1)
    got = enc.transform(X, order, t, w)[:, :t.shape[1]]
    want = ref.ordered_statistic(codes, t, w, order, PRIOR_WEIGHT)
    # the prior is the mean over every row, as in training: compare with that prior
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    p = data.draw(st.integers(0, codes.size - 1))
    later = order[p:]
    t2 = t.copy()
    t2[later] = data.draw(st.floats(-5, 5))
    sums, weights = ordered_sums(codes, t2, w, order)
    before, before_w = ordered_sums(codes, t, w, order)
    i = order[p]
    np.testing.assert_allclose(sums[i], before[i], rtol=1e-12, atol=1e-9)
    assert weights[i] == pytest.approx(before_w[i], abs=1e-12)


def test_statistic_of_a_small_example_by_hand():
    """Codes a, b, a, a (order 3, 0, 2, 1 over rows 0..3), targets 1, 0, 0, 1, prior 0.5."""
    codes = np.array([0, 1, 0, 0])
    t = np.array([[1.0], [0.0], [0.0], [1.0]])
    w = np.ones(4)
    order = np.array([3, 0, 2, 1])
    X = codes.astype(float)[:, None]
    enc = CategoricalEncoder.fit(X, np.array([True]), [None], "target_stats", t, w, 1, 1)
    out = enc.transform(X, order, t, w)
    # row 3 first: prior alone; row 0 sees row 3 (y=1); row 2 sees rows 3, 0; row 1 (b): prior
    np.testing.assert_allclose(out[:, 0], [(1 + 0.5) / 2, 0.5, (2 + 0.5) / 3, 0.5])
    # frequency: a on 3 of 4 rows, b on 1
    np.testing.assert_allclose(out[:, 1], [0.75, 0.25, 0.75, 0.75])
    # at prediction: every training row (a: 2 of 3 ones)
    np.testing.assert_allclose(enc.transform(X)[:, 0], [2.5 / 4, 0.5 / 2, 2.5 / 4, 2.5 / 4])


def test_stat_targets_per_loss():
    np.testing.assert_array_equal(stat_targets(np.array([0, 2, 1]), 3),
                                  [[1, 0, 0], [0, 0, 1], [0, 1, 0]])
    np.testing.assert_array_equal(stat_targets(np.array([1.5, 2.0]), None), [[1.5], [2.0]])


def test_auto_rule():
    assert auto_encoding(3, 0.0, 4) == "onehot"
    assert auto_encoding(20, 1.0, 4) == "sets"
    assert auto_encoding(2000, AUTO_MIN_COVERED, 4) == "sets"
    assert auto_encoding(2000, 0.99 * AUTO_MIN_COVERED, 4) == "target_stats"


def test_auto_looks_at_the_rows_of_frequent_levels():
    """400 levels on 3,000 rows (about 8 a level, min_data_per_group 15) and 400 levels on
    40,000 rows (about 100 a level, min_data_per_group 200) leave most rows in levels too
    small for set splits; 20 levels on 40,000 rows (2,000 a level) do not."""
    rng = np.random.default_rng(0)
    for n, levels, want in ((3000, 400, "target_stats"), (40_000, 400, "target_stats"),
                            (40_000, 20, "sets"), (40_000, 3, "onehot")):
        X = rng.integers(0, levels, n).astype(float)[:, None]
        enc = CategoricalEncoder.fit(X, np.array([True]), [None], "auto",
                                     np.zeros((n, 1)), None, 4, min(200, max(10, n // 200)))
        assert enc.kinds == [want], (n, levels)


# -- data --------------------------------------------------------------------------------------
def _frame(n=3000, seed=0, noise_levels=0):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    city = rng.integers(0, 200, n)
    color = rng.integers(0, 3, n)
    x = rng.normal(size=n)
    effect = np.random.default_rng(99).normal(size=200)
    logit = effect[city] + 0.8 * (color == 1) + x
    y = (logit + rng.logistic(size=n) > 0).astype(int)
    df = pd.DataFrame({"city": pd.Categorical([f"c{v}" for v in city]),
                       "color": pd.Categorical(np.array(["r", "g", "b"])[color]), "x": x})
    if noise_levels:
        df["noise"] = pd.Categorical([f"n{v}" for v in rng.integers(0, noise_levels, n)])
    return df, y


def _logloss(y, p):
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


# -- no leakage --------------------------------------------------------------------------------
def test_noise_column_of_many_levels_gains_nothing_on_test_data():
    """A 1,000-level column independent of the target: ordered statistics leave the test loss
    where it is without the column, while greedy statistics (each training row's category
    mean over every training row, its own target included: the leakage the ordered scheme
    avoids) fit the noise and lose on test data."""
    df, y = _frame(n=6000, seed=1, noise_levels=1000)
    tr, te = slice(0, 4000), slice(4000, None)
    params = dict(n_estimators=100, learning_rate=0.1, max_depth=4, random_state=0)
    without = BoostClassifier(categorical_encoding="target_stats", **params).fit(
        df.drop(columns="noise")[tr], y[tr])
    with_noise = BoostClassifier(categorical_encoding="target_stats", **params).fit(
        df[tr], y[tr])
    base = _logloss(y[te], without.predict_proba(df.drop(columns="noise")[te])[:, 1])
    ordered = _logloss(y[te], with_noise.predict_proba(df[te])[:, 1])
    assert abs(ordered - base) < 0.01, (ordered, base)
    # greedy statistics: the same columns computed with every training row
    model = with_noise.model_
    enc = model.encoder
    X_tr = model._X(df[tr])
    X_te = model._X(df[te])
    greedy = BoostClassifier(**params).fit(enc.transform(X_tr), y[tr])
    leaked = _logloss(y[te], greedy.predict_proba(enc.transform(X_te))[:, 1])
    assert leaked > ordered + 0.02, (leaked, ordered)


# -- reproducibility ---------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
def test_same_random_state_same_model_whatever_n_jobs(policy, tmp_path):
    df, y = _frame()
    docs = []
    for n_jobs in (1, 2, 1):
        m = BoostClassifier(n_estimators=20, grow_policy=policy, random_state=3, n_jobs=n_jobs,
                            categorical_encoding="target_stats").fit(df, y)
        path = tmp_path / f"m{n_jobs}.json"
        m.save_model(path)
        text = path.read_text()
        docs.append(text.replace('"n_jobs":2', '"n_jobs":1'))
    assert docs[0] == docs[1] == docs[2]
    other = BoostClassifier(n_estimators=20, grow_policy=policy, random_state=4,
                            categorical_encoding="target_stats").fit(df, y)
    assert not np.array_equal(other.predict_proba(df), m.predict_proba(df))


# -- one-hot ------------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
def test_onehot_equals_sets_on_two_level_features(policy):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    n = 2000
    a = rng.integers(0, 2, n)
    b = rng.integers(0, 2, n)
    x = rng.normal(size=n)
    y = 1.5 * a - b + x + rng.normal(size=n)
    df = pd.DataFrame({"a": pd.Categorical(np.array(["u", "v"])[a]),
                       "b": pd.Categorical(np.array(["p", "q"])[b]), "x": x})
    params = dict(n_estimators=30, grow_policy=policy, cat_l2=0.0, min_data_per_group=1,
                  random_state=0)
    sets = BoostRegressor(categorical_encoding="sets", **params).fit(df, y)
    onehot = BoostRegressor(categorical_encoding="onehot", **params).fit(df, y)
    assert onehot.model_.encoder.kinds == ["onehot", "onehot", "numeric"]
    np.testing.assert_allclose(onehot.predict(df), sets.predict(df), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(onehot.feature_importances_, sets.feature_importances_,
                               rtol=1e-9, atol=1e-12)


def test_onehot_keeps_sets_beyond_max_cat_to_onehot():
    df, y = _frame()
    m = BoostClassifier(n_estimators=5, categorical_encoding="onehot",
                        max_cat_to_onehot=3).fit(df, y)
    assert m.model_.encoder.kinds == ["sets", "onehot", "numeric"]
    assert m.model_.ensemble.bin_mapper.n_features == 1 + 3 + 1


# -- the model ---------------------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["depthwise", "symmetric"])
@pytest.mark.parametrize("encoding", ["onehot", "target_stats", "auto"])
def test_predictions_shap_staged_and_model_files(policy, encoding, tmp_path):
    df, y = _frame()
    m = BoostClassifier(n_estimators=25, grow_policy=policy, random_state=0,
                        categorical_encoding=encoding).fit(df[:2000], y[:2000])
    test = df[2000:]
    raw = m.model_.predict(test, raw=True)
    shap = m.model_.predict(test, pred_contrib=True)
    assert shap.shape == (1000, 4)                       # one column per feature, + expected
    np.testing.assert_allclose(shap.sum(axis=1), raw, rtol=1e-9, atol=1e-9)
    inter = m.model_.predict(test[:50], pred_interactions=True)
    assert inter.shape == (50, 4, 4)
    np.testing.assert_allclose(inter.sum(axis=2), shap[:50], rtol=1e-7, atol=1e-7)
    *_, last = m.model_.staged_predict(test, raw=True)
    np.testing.assert_array_equal(last, raw)
    assert m.feature_importances_.shape == (3,)
    assert m.feature_importances_.sum() == pytest.approx(1.0)
    path = tmp_path / "model.json"
    m.save_model(path)
    back = boostlib.load_model(path)
    loaded = boostlib.Model.load(path)
    np.testing.assert_array_equal(loaded.predict(test, raw=True), raw)
    np.testing.assert_array_equal(loaded.predict(test, pred_contrib=True), shap)
    assert loaded.encoder.kinds == m.model_.encoder.kinds
    np.testing.assert_array_equal(back.predict_proba(test), m.predict_proba(test))


def test_shap_gives_the_statistic_to_its_feature():
    """A target that depends on the category alone: SHAP puts the model's variation on it."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(2)
    n = 3000
    c = rng.integers(0, 100, n)
    y = np.random.default_rng(1).normal(size=100)[c] + 0.1 * rng.normal(size=n)
    df = pd.DataFrame({"x": rng.normal(size=n), "c": pd.Categorical(c)})
    m = BoostRegressor(n_estimators=30, categorical_encoding="target_stats").fit(df, y)
    shap = m.model_.predict(df, pred_contrib=True)
    assert np.abs(shap[:, 1]).mean() > 20 * np.abs(shap[:, 0]).mean()


def test_multiclass_statistics_per_class():
    df, y = _frame()
    y3 = y + (df["x"].to_numpy() > 1)
    m = BoostClassifier(n_estimators=10, categorical_encoding="target_stats").fit(df, y3)
    enc = m.model_.encoder
    assert enc.prior.size == 3
    names = list(enc.column_names(["city", "color", "x"]))
    assert names[:4] == ["city:mean0", "city:mean1", "city:mean2", "city:frequency"]
    np.testing.assert_allclose(enc.prior, np.bincount(y3) / y3.size)
    proba = m.predict_proba(df)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    shap = m.model_.predict(df[:20], pred_contrib=True)
    assert shap.shape == (20, 4, 3)


def test_validation_sets_take_the_prediction_statistics():
    df, y = _frame()
    tr, va = slice(0, 2000), slice(2000, None)
    train_set = Dataset(df[tr], y[tr])
    valid = Dataset(df[va].iloc[::-1], y[va][::-1], reference=train_set)
    model = train({"n_estimators": 15, "categorical_encoding": "target_stats",
                   "eval_metric": "logloss"}, train_set, valid_sets=[valid])
    p = model.predict(df[va].iloc[::-1])
    assert model.evals_result["valid_0"]["logloss"][-1] == pytest.approx(
        _logloss(y[va][::-1], p), rel=1e-9)


def test_unseen_and_missing_categories_are_missing():
    df, y = _frame()
    m = BoostClassifier(n_estimators=10, categorical_encoding="target_stats").fit(df, y)
    new = df[:3].copy()
    new["city"] = new["city"].cat.add_categories(["never"])
    new.loc[new.index[0], "city"] = "never"
    new.loc[new.index[1], "city"] = None
    cols = m.model_._columns(new)
    assert np.isnan(cols[:2, :2]).all() and not np.isnan(cols[2, :2]).any()


# -- what is refused ---------------------------------------------------------------------------
def test_bad_value_is_named():
    df, y = _frame(n=200)
    with pytest.raises(ValueError, match="categorical_encoding='ordinal'.*'target_stats'"):
        BoostClassifier(categorical_encoding="ordinal").fit(df, y)
    with pytest.raises(ValueError, match="max_cat_to_onehot"):
        BoostClassifier(max_cat_to_onehot=0).fit(df, y)


@pytest.mark.parametrize("encoding", ["onehot", "target_stats", "auto"])
def test_a_continued_model_keeps_its_encoder(encoding):
    """A continuation reads the columns its trees were grown on: the model's encoder, with
    its statistics over its own training rows (as at prediction), and its first trees."""
    df, y = _frame(n=800)
    params = {"n_estimators": 4, "categorical_encoding": encoding}
    first = train(params, Dataset(df.iloc[:500], y[:500]))
    assert first.encoder is not None
    more = train({"n_estimators": 3}, Dataset(df.iloc[300:], y[300:]), init_model=first)
    assert more.encoder is first.encoder and more.n_iterations == 7
    np.testing.assert_array_equal(more.predict(df, raw=True, iteration_range=(0, 4)),
                                  first.predict(df, raw=True))
    # the new trees learned something from the encoded rows
    gain = _logloss(y[300:], first.predict(df.iloc[300:])) - \
        _logloss(y[300:], more.predict(df.iloc[300:]))
    assert gain > 0


@pytest.mark.parametrize("encoding", ["onehot", "target_stats", "auto"])
def test_continuing_on_the_same_rows_gives_the_one_longer_fit(encoding):
    """The new rows get ordered statistics from the fit's permutation, as the first fit's
    rows did: continuing a fit of 5 iterations by 3 on its rows gives the fit of 8."""
    df, y = _frame(n=1500)
    params = dict(categorical_encoding=encoding, random_state=4)
    warm = BoostClassifier(n_estimators=5, warm_start=True, **params).fit(df, y)
    warm.set_params(n_estimators=8)
    warm.fit(df, y)
    one = BoostClassifier(n_estimators=8, **params).fit(df, y)
    assert warm.model_.encoder is not None and warm.model_.n_iterations == 8
    np.testing.assert_array_equal(warm.predict_proba(df), one.predict_proba(df))


def test_a_continuation_asking_for_another_encoding_is_refused():
    df, y = _frame(n=500)
    model = train({"n_estimators": 3, "categorical_encoding": "target_stats"}, Dataset(df, y))
    with pytest.raises(ValueError, match="categorical_encoding='onehot' differs from "
                                         "init_model's .'target_stats'."):
        train({"n_estimators": 3, "categorical_encoding": "onehot"}, Dataset(df, y),
              init_model=model)
    plain = train({"n_estimators": 3, "categorical_encoding": "sets"}, Dataset(df, y))
    for encoding in ("auto", "sets"):       # "auto": the model's set splits
        more = train({"n_estimators": 2, "categorical_encoding": encoding}, Dataset(df, y),
                     init_model=plain)
        assert more.encoder is None and more.n_iterations == 5


def test_a_dataset_read_in_batches_is_refused():
    df, y = _frame(n=600)
    parts = [(df.iloc[i:i + 200], np.asarray(y)[i:i + 200]) for i in range(0, 600, 200)]
    with pytest.raises(ValueError, match="categorical_encoding='onehot'.*from_batches"):
        train({"n_estimators": 3, "categorical_encoding": "onehot"},
              Dataset.from_batches(parts))
    encoded = train({"n_estimators": 3, "categorical_encoding": "onehot"}, Dataset(df, y))
    with pytest.raises(ValueError, match="init_model was trained with categorical_encoding="
                                         "'onehot', which .*from_batches"):
        train({"n_estimators": 2}, Dataset.from_batches(parts), init_model=encoded)
    # "auto" keeps set splits there: the model of categorical_encoding="sets"
    auto = train({"n_estimators": 3, "categorical_encoding": "auto"},
                 Dataset.from_batches(parts))
    sets = train({"n_estimators": 3, "categorical_encoding": "sets"},
                 Dataset.from_batches(parts))
    assert auto.encoder is None
    np.testing.assert_array_equal(auto.predict(df, raw=True),
                                  sets.predict(df, raw=True))


def test_auto_choosing_set_splits_everywhere_gives_the_sets_model():
    """20 levels of about 150 rows each: "auto" keeps set splits, and no encoder."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    n = 3000
    code = rng.integers(0, 20, n)
    df = pd.DataFrame({"c": pd.Categorical([f"l{v}" for v in code]), "x": rng.normal(size=n)})
    y = (code % 3 == 0) * 1.0 + df["x"].to_numpy() + rng.normal(size=n)
    auto = train({"n_estimators": 5, "categorical_encoding": "auto"}, Dataset(df, y))
    sets = train({"n_estimators": 5, "categorical_encoding": "sets"}, Dataset(df, y))
    assert auto.encoder is None
    np.testing.assert_array_equal(auto.predict(df), sets.predict(df))


def test_onnx_export_encodes_the_features():
    """The graph takes the original features and encodes them (more in
    tests/test_onnx_encoding.py)."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from boostlib.export import onnx_input, to_onnx
    df, y = _frame(n=500)
    m = BoostClassifier(n_estimators=3, categorical_encoding="onehot").fit(df, y)
    session = ort.InferenceSession(to_onnx(m).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    _, proba = session.run(None, {"X": onnx_input(m, df)})
    np.testing.assert_allclose(proba, m.predict_proba(df), atol=1e-5)


def test_numeric_data_is_unchanged():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] + rng.normal(size=300)
    a = BoostRegressor(n_estimators=10).fit(X, y)
    b = BoostRegressor(n_estimators=10, categorical_encoding="target_stats").fit(X, y)
    assert b.model_.encoder is None
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def _edited(doc, change):
    import copy
    import json
    doc = copy.deepcopy(doc)
    change(doc)
    return json.dumps(doc)


@pytest.mark.parametrize("change, match", [
    (lambda d: d["encoding"]["features"][0].update(kind="ordinal"), "kind"),
    (lambda d: d["encoding"]["features"].pop(), "entries for 3 features"),
    (lambda d: d["encoding"]["features"][0]["sums"][0].append(1.0), r"sums\[0\]"),
    (lambda d: d["encoding"]["features"][0]["weights"].pop(), "weights"),
    (lambda d: d["encoding"]["features"][0]["codes"].reverse(), "strictly increasing"),
    (lambda d: d["encoding"].update(prior=[]), "prior"),
    (lambda d: d["encoding"]["features"][0].update(kind="sets"), "unknown field"),
    (lambda d: d["encoding"]["features"][2].update(kind="sets"), "bins.categorical"),
    (lambda d: d["encoding"]["features"][0].update(extra=1), "unknown field"),
])
def test_broken_encoding_fields_are_refused(change, match):
    import json
    from boostlib.io.model_files import ModelFileError, encode, model_document, parse
    df, y = _frame(n=500)
    m = BoostClassifier(n_estimators=3, categorical_encoding="target_stats").fit(df, y)
    doc = json.loads(encode(model_document(m.model_)))
    parse(json.dumps(doc))                  # the file as written loads
    with pytest.raises(ModelFileError, match=match):
        parse(_edited(doc, change))


def test_shap_trees_are_refused_but_explanations_work():
    from boostlib.explain import to_shap
    df, y = _frame(n=500)
    m = BoostClassifier(n_estimators=3, categorical_encoding="target_stats").fit(df, y)
    with pytest.raises(ValueError, match="categorical_encoding='target_stats'"):
        to_shap(m)


def test_plots_name_the_encoded_columns():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from boostlib import plotting
    df, y = _frame(n=800)
    m = BoostClassifier(n_estimators=3, categorical_encoding="target_stats",
                        max_depth=2).fit(df, y)
    ax = plotting.plot_importance(m, ignore_zero=False)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert sorted(labels) == sorted(["city:mean", "city:frequency", "color:mean",
                                     "color:frequency", "x"])


def test_cli_predicts_with_an_encoded_model(tmp_path):
    pd = pytest.importorskip("pandas")
    from boostlib.frontend.cli import main
    df, y = _frame(n=400)
    data = df.assign(y=y)
    data["city"] = data["city"].astype(str)
    data["color"] = data["color"].astype(str)
    data.to_csv(tmp_path / "d.csv", index=False)
    assert main(["train", str(tmp_path / "d.csv"), "--target", "y", "--n-estimators", "5",
                 "--categorical-encoding", "target_stats", "-o",
                 str(tmp_path / "m.json")]) in (0, None)
    assert main(["predict", str(tmp_path / "m.json"), str(tmp_path / "d.csv"), "-o",
                 str(tmp_path / "p.csv")]) in (0, None)
    p = pd.read_csv(tmp_path / "p.csv")["probability"].to_numpy()
    model = boostlib.Model.load(tmp_path / "m.json")
    np.testing.assert_allclose(p, model.predict(data.drop(columns="y")), rtol=1e-12)


def test_rows_of_weight_zero_change_nothing():
    """Rows of weight 0 appended to the training set: the same predictions, bit for bit
    (the permutation orders the rows of positive weight alone)."""
    pd = pytest.importorskip("pandas")
    df, y = _frame(n=1500)
    extra, y_extra = _frame(n=300, seed=7)
    both = pd.concat([df, extra], ignore_index=True)
    both["city"] = both["city"].astype(str).astype("category")
    both["color"] = both["color"].astype(str).astype("category")
    df = both[:1500].copy()
    w = np.r_[np.ones(1500), np.zeros(300)]
    params = dict(n_estimators=15, categorical_encoding="target_stats", random_state=2)
    a = BoostClassifier(**params).fit(df, y)
    b = BoostClassifier(**params).fit(both, np.r_[y, y_extra], sample_weight=w)
    np.testing.assert_array_equal(a.predict_proba(df), b.predict_proba(df))
