"""Bad input gets a clear error naming the parameter, the value and what was expected."""
import numpy as np
import pytest

from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRegressor, PluginError

X = np.random.default_rng(0).normal(size=(40, 3))
Y_BIN = (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("param, value, match", [
    ("n_estimators", 0, r"n_estimators=0 is invalid"),
    ("n_estimators", 2.5, r"n_estimators=2.5 is invalid; expected an int"),
    ("learning_rate", -0.1, r"learning_rate=-0.1 is invalid.*\(0\.0, inf\]"),
    ("learning_rate", 0.0, r"learning_rate=0.0 is invalid"),
    ("max_depth", 0, r"max_depth=0 is invalid.*\[1, 30\]"),
    ("max_bins", 256, r"max_bins=256 is invalid.*\[2, 255\]"),
    ("max_bins", 1, r"max_bins=1 is invalid"),
    ("grow_policy", "leafwise", r"grow_policy='leafwise' is invalid; expected one of"),
    ("leaf_estimation", "exact", r"leaf_estimation='exact' is invalid"),
    ("l2_regularization", -1.0, r"l2_regularization=-1.0 is invalid"),
    ("min_samples_leaf", 0, r"min_samples_leaf=0 is invalid"),
    ("min_child_weight", -1.0, r"min_child_weight=-1.0 is invalid"),
    ("random_strength", -1.0, r"random_strength=-1.0 is invalid"),
    ("subsample", 0.0, r"subsample=0.0 is invalid.*\(0\.0, 1\.0\]"),
    ("subsample", 1.5, r"subsample=1.5 is invalid"),
    ("early_stopping_rounds", 0, r"early_stopping_rounds=0 is invalid"),
    ("loss_params", [1], r"loss_params=\[1\] is invalid; expected a dict"),
    ("n_jobs", 0, r"n_jobs=0 is invalid"),
    ("random_state", -3, r"random_state=-3 is invalid"),
])
def test_invalid_hyperparameters(param, value, match):
    with pytest.raises((ValueError, TypeError), match=match):
        BoostClassifier(**{param: value}).fit(X, Y_BIN)


def test_l2_and_min_child_weight_not_both_zero():
    with pytest.raises(ValueError, match="cannot both be 0"):
        BoostRegressor(l2_regularization=0.0, min_child_weight=0.0).fit(X, X[:, 0])


@pytest.mark.parametrize("kind, name", [("loss", "hinge"), ("sampler", "bagging"),
                                        ("update", "adam")])
def test_unknown_plugin_names_list_available(kind, name):
    with pytest.raises(PluginError, match=rf"{kind}='{name}' is not registered; available: "):
        BoostClassifier(**{kind: name}).fit(X, Y_BIN)


def test_plugin_parameter_errors_name_the_plugin():
    with pytest.raises(PluginError,
                       match=r"loss 'sla' .*rejected its parameters \['temperature'\]"):
        BoostClassifier(loss="sla", loss_params={"temperature": 1}).fit(X, Y_BIN)
    with pytest.raises(ValueError, match=r"loss 'sla': scale=-1 is invalid"):
        BoostClassifier(loss="sla", loss_params={"scale": -1}).fit(X, Y_BIN)


def test_inf_in_X_rejected_nan_accepted():
    Xi = X.copy()
    Xi[3, 1] = np.inf
    with pytest.raises(ValueError, match="Input X contains infinity"):
        BoostClassifier(n_estimators=2).fit(Xi, Y_BIN)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    m = BoostClassifier(n_estimators=2).fit(Xn, Y_BIN)
    with pytest.raises(ValueError, match="Input X contains infinity"):
        m.predict(Xi)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("where", [0, 65535, 65536, 99999])
@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_check_X_finds_an_infinity_in_any_slice_of_rows(order, where, value):
    # check_X tests a slice of rows at a time (65536 values): an infinity in the first or
    # last row of a slice, or in the last row of all, is found in either memory order
    from boostlib.engine.validation import check_X
    Xb = np.zeros((100000, 2), order=order)
    Xb[::7, 0] = np.nan
    check_X(Xb)
    Xb[where, 1] = value
    with pytest.raises(ValueError, match="Input X contains infinity"):
        check_X(Xb)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_y_rejected(bad):
    y = X[:, 0].copy()
    y[5] = bad
    with pytest.raises(ValueError, match=r"Input y contains (NaN|infinity)"):
        BoostRegressor(n_estimators=2).fit(X, y)


def test_classifier_label_errors():
    with pytest.raises(ValueError, match="'logloss' is a binary loss, but y has 3 classes"):
        BoostClassifier(loss="logloss").fit(X, np.arange(40) % 3)
    with pytest.raises(ValueError, match="needs at least two classes in y; got 1 class"):
        BoostClassifier().fit(X, np.zeros(40))
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        BoostClassifier().fit(X, X[:, 0])


def test_loss_kind_mismatch():
    with pytest.raises(ValueError, match="not a classification loss"):
        BoostClassifier(loss="mse").fit(X, Y_BIN)
    with pytest.raises(ValueError, match="is a classification loss; use BoostClassifier"):
        BoostRegressor(loss="logloss").fit(X, Y_BIN)


def test_shape_errors():
    with pytest.raises(ValueError, match="0 sample"):
        BoostRegressor().fit(np.empty((0, 3)), np.empty(0))
    with pytest.raises(ValueError, match="y has 39 entries but X has 40 rows"):
        BoostRegressor().fit(X, X[:39, 0])
    m = BoostRegressor(n_estimators=2).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="X has 2 features, but BoostRegressor is expecting 3"):
        m.predict(X[:, :2])
    with pytest.raises(ValueError, match="sample_weight.shape == \\(3,\\), expected \\(40,\\)"):
        BoostRegressor().fit(X, X[:, 0], sample_weight=[1, 2, 3])
    with pytest.raises(ValueError, match="finite and non-negative"):
        BoostRegressor().fit(X, X[:, 0], sample_weight=-np.ones(40))

    class SparseLike:       # has toarray but is not a scipy.sparse matrix (those are accepted)
        shape = X.shape

        def toarray(self):
            return X

    with pytest.raises(TypeError, match="sparse input of type SparseLike is not supported"):
        BoostRegressor().fit(SparseLike(), X[:, 0])


def test_non_numeric_dataframe_column():
    """Text columns are categorical unless categorical_features leaves them out."""
    pd = importorskip("pandas")
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]})
    BoostRegressor(n_estimators=2).fit(df, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"column 'b' holds labels \(text or category\) but "
                                         r"is not in categorical_features"):
        BoostRegressor(categorical_features=["a"]).fit(df, [1.0, 2.0, 3.0])


def test_non_numeric_columns_are_all_named():
    pd = importorskip("pandas")
    n = len(X)
    df = pd.DataFrame({"num": X[:, 0], "text": ["x"] * n,
                       "cat": pd.Categorical(["u", "v"] * (n // 2)),
                       "when": pd.to_datetime(["2020-01-01"] * n)})
    with pytest.raises(ValueError) as err:
        BoostClassifier().fit(df, Y_BIN)
    message = str(err.value)
    assert "\n" not in message and "declare label columns in categorical_features" in message
    assert "'when' (datetime64" in message
    for col in ("'num'", "'text'", "'cat'"):       # numeric, or categorical by default
        assert col not in message
    model = BoostClassifier(n_estimators=2).fit(df[["num"]], Y_BIN)
    with pytest.raises(ValueError, match="non-numeric column 'num' \\(category\\)"):
        model.predict(df[["num"]].astype("category"))


def test_nullable_and_boolean_columns_are_numeric():
    pd = importorskip("pandas")
    values = [1, None, 3, 4] * 10
    df = pd.DataFrame({"ints": pd.array(values, dtype="Int64"),
                       "flags": (X[:, 1] > 0), "nums": X[:, 2]})
    model = BoostClassifier(n_estimators=3, random_state=0).fit(df, Y_BIN)
    plain = np.column_stack([np.array(values, dtype=float), X[:, 1] > 0, X[:, 2]])
    assert np.isnan(plain[1, 0])
    reference = BoostClassifier(n_estimators=3, random_state=0).fit(plain, Y_BIN)
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        expected = model.predict_proba(plain)
    assert np.array_equal(model.predict_proba(df), expected)
    assert np.array_equal(reference.predict_proba(plain), expected)


def test_eval_set_errors():
    with pytest.raises(ValueError, match=r"eval_set\[0\] has 2 features, expected 3"):
        BoostRegressor().fit(X, X[:, 0], eval_set=[(X[:, :2], X[:, 0])])


def test_thread_counts_are_capped_at_the_cores():
    """A positive n_jobs above the core count uses every core, never more threads."""
    import os

    from boostlib._kernels._openmp import effective_n_threads, openmp_enabled

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    if not openmp_enabled():
        assert effective_n_threads(10 ** 6) == 1
        return
    assert effective_n_threads(10 ** 6) == cores
    assert effective_n_threads(1) == 1
    assert effective_n_threads(-1) == cores


@pytest.mark.parametrize("sampler", [0, False, ""])
def test_falsy_samplers_are_not_taken_for_uniform(sampler):
    """Only None means "uniform when subsample < 1"; 0, False and "" are errors."""
    with pytest.raises(Exception, match=rf"sampler={sampler!r} is"):
        BoostClassifier(sampler=sampler, n_estimators=2).fit(X, Y_BIN)
