"""Hostile training data: every input either trains a model that predicts finite values and
whose file loads back bit-identically, or is refused by an error naming the input (``X``,
``y``, ``sample_weight``, ``eval_set``) and what is wrong with it."""
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRegressor, Dataset, load_model

from .budget import DEFAULT_EXAMPLES

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e300, 1e-300, 5e-324, 3.5e38, 1e200]
INPUTS = ("X", "y", "sample_weight", "eval_set", "class label", "eval_sample_weight")


@st.composite
def _floats(draw, shape):
    """Mostly ordinary values, some special ones (NaN, infinities, extremes)."""
    base = draw(hnp.arrays(np.float64, shape, elements=st.floats(-3, 3)))
    n_special = draw(st.integers(0, 3))
    flat = base.reshape(-1)
    for _ in range(n_special if flat.size else 0):
        flat[draw(st.integers(0, flat.size - 1))] = draw(st.sampled_from(SPECIAL))
    return base


@st.composite
def _problem(draw):
    n = draw(st.integers(1, 40))
    d = draw(st.integers(1, 4))
    X = draw(_floats((n, d)))
    if draw(st.booleans()):
        X[:, draw(st.integers(0, d - 1))] = draw(st.sampled_from([0.0, 1.0, np.nan]))
    X = draw(st.sampled_from([X, X.astype(np.float32), X.astype(object), X.tolist()]))
    regression = draw(st.booleans())
    if regression:
        y = draw(_floats((n,)))
    else:
        labels = draw(st.sampled_from([[0, 1], [1, 2, 3], ["a", "b"], [True, False],
                                       [0.5, 1.5], [None, 1], ["a", 1], [np.nan, 1.0]]))
        y = [labels[i] for i in draw(st.lists(st.integers(0, len(labels) - 1), min_size=n,
                                              max_size=n))]
        y = draw(st.sampled_from([y, np.array(y, dtype=object)]))
    weight = draw(st.sampled_from([None, "ones", "special", "zeros", "short"]))
    if weight == "ones":
        weight = np.ones(n)
    elif weight == "special":
        weight = np.abs(draw(_floats((n,))))
    elif weight == "zeros":
        weight = np.zeros(n)
    elif weight == "short":
        weight = np.ones(max(n - 1, 0))
    return regression, X, y, weight


def _fit_or_refuse(regression, X, y, weight, tmp_path, **fit):
    cls = BoostRegressor if regression else BoostClassifier
    model = cls(n_estimators=3, max_depth=2, random_state=0, n_jobs=1)
    try:
        model.fit(X, y, sample_weight=weight, **fit)
    except (ValueError, TypeError, FloatingPointError) as exc:
        message = str(exc)
        assert any(word in message for word in INPUTS), \
            f"{type(exc).__name__} names no input: {message}"
        return None
    Xp = np.asarray(X, dtype=np.float64)
    out = model.predict(Xp) if regression else model.predict_proba(Xp)
    assert out.shape[0] == Xp.shape[0]
    if not regression:
        assert np.all((out >= 0) & (out <= 1))
    assert np.all(np.isfinite(np.asarray(out, dtype=np.float64)))
    path = tmp_path / "model.json"
    model.save_model(path)
    again = load_model(path)
    same = again.predict(Xp) if regression else again.predict_proba(Xp)
    np.testing.assert_array_equal(out, same)
    return model


@settings(max_examples=max(50, DEFAULT_EXAMPLES // 4), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(problem=_problem())
def test_hostile_data_trains_or_is_refused_by_name(tmp_path, problem):
    _fit_or_refuse(*problem, tmp_path)


@pytest.mark.parametrize("eval_set", [
    [(np.zeros((3, 2)), [0, 1, 0], [1, 1, 1])], "abc", [np.zeros((3, 2))], [(np.zeros((3, 5)),
                                                                              [0, 1, 0])],
    [(np.zeros((3, 2)), [0, 1])], [(np.zeros((3, 2)), [0, 7, 0])], 5, {"a": 1},
])
def test_malformed_eval_sets_are_named(tmp_path, eval_set):
    X = np.random.default_rng(0).normal(size=(30, 2))
    y = np.arange(30) % 2
    with pytest.raises((ValueError, TypeError), match="eval_set|y contains labels"):
        BoostClassifier(n_estimators=2).fit(X, y, eval_set=eval_set)


@pytest.mark.parametrize("y,match", [
    ([None, 1, None, 1], "class label 0 is missing"),
    (["a", 1, "a", 1], "mix number and text"),
    ([np.nan, 1.0, 0.0, 1.0], "NaN|missing"),
])
def test_unusable_class_labels_are_named(y, match):
    with pytest.raises((ValueError, TypeError), match=match):
        BoostClassifier(n_estimators=2).fit(np.zeros((4, 1)), y)


@pytest.mark.parametrize("policy", ["symmetric", "depthwise", "lossguide"])
@pytest.mark.parametrize("scale", [1e39, 1e200, 1e300])
def test_overflowing_targets_are_not_blamed_on_the_loss(scale, policy):
    # (depthwise and leaf-wise trees this small grow compiled, their root built there)
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(FloatingPointError, match="float32 range") as info:
        BoostRegressor(n_estimators=3, grow_policy=policy).fit(X, X[:, 0] * scale)
    assert "rescale the target y" in str(info.value)
    with pytest.raises(FloatingPointError, match="numeric overflow: the starting value"):
        BoostRegressor(n_estimators=3).fit(X, X[:, 0] * scale, sample_weight=np.full(50, 1e300))


def test_huge_integers_are_numbers_or_named():
    X = np.array([[10 ** 30], [1], [2]], dtype=object)
    model = BoostRegressor(n_estimators=2).fit(X, [1.0, 2.0, 3.0])
    assert np.isfinite(model.predict(X.astype(float))).all()
    with pytest.raises((ValueError, TypeError), match="X"):
        BoostRegressor(n_estimators=2).fit(np.array([[10 ** 400], [1]], dtype=object), [1, 2])


def _zero_row_cases():
    """(estimator, X) pairs covering arrays, frames with a categorical column, sparse
    matrices, every tree kind, regression, two and three classes."""
    pd = importorskip("pandas")
    sparse = importorskip("scipy.sparse")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1],
                          "c": pd.Categorical(rng.choice(list("pqr"), 120))})
    three = np.digitize(X[:, 0], [-0.5, 0.5])
    for policy in ("symmetric", "depthwise", "lossguide"):
        params = dict(n_estimators=4, grow_policy=policy, random_state=0)
        yield BoostRegressor(**params).fit(X, X[:, 1]), X
        yield BoostClassifier(**params).fit(frame, X[:, 0] > 0), frame
        yield BoostClassifier(**params).fit(X, three), X
    yield BoostRegressor(n_estimators=4).fit(sparse.csr_matrix(X), X[:, 1]), \
        sparse.csr_matrix(X)


PREDICTIONS = ["predict", "predict_proba", "decision_function", "apply",
               "predict_virtual_ensembles", "staged_predict", "staged_predict_proba",
               "staged_decision_function"]


def test_zero_rows_get_zero_predictions_of_every_method():
    """0 rows to predict (a filter that kept none, an empty partition of a Dask collection)
    give 0 predictions with the columns and type of any other prediction, from every
    method; a fit still needs rows."""
    for model, X in _zero_row_cases():
        none, one = X[:0], X[:1]
        for name in [m for m in PREDICTIONS if hasattr(model, m)]:
            kwargs = {"n_members": 2} if name == "predict_virtual_ensembles" else {}
            got, want = (getattr(model, name)(rows, **kwargs) for rows in (none, one))
            if name.startswith("staged"):
                got, want = list(got), list(want)
                assert len(got) == len(want) == model.n_trees_
                got, want = got[-1], want[-1]
            assert got.shape == (0,) + want.shape[1:] and got.dtype == want.dtype, \
                (type(model).__name__, name, got.shape, want.shape)
        for kwargs in ({"pred_contrib": True}, {"iteration_range": (0, 2)}):
            got, want = model.predict(none, **kwargs), model.predict(one, **kwargs)
            assert got.shape == (0,) + want.shape[1:] and got.dtype == want.dtype
    with pytest.raises(ValueError, match="X: found array with 0 sample"):
        BoostRegressor(n_estimators=2).fit(np.zeros((0, 3)), np.zeros(0))


_X = np.random.default_rng(1).normal(size=(20, 2))
_Y = np.arange(20) % 2
_DATES = np.arange(40).astype("datetime64[D]").reshape(20, 2)
_DATES[0, 0] = np.datetime64("NaT")


@pytest.mark.parametrize("fit, match", [
    (lambda: BoostRegressor().fit(_DATES, _Y), "X holds dates, such as NaT"),
    (lambda: BoostRegressor().fit(_DATES - _DATES[1, 1], _Y), "X holds durations"),
    (lambda: BoostRegressor().fit(_X.astype(str), _Y), "X holds text"),
    (lambda: BoostRegressor().fit(np.array([[2.0, "1"]] * 20, dtype=object), _Y),
     "X holds text, such as '1'"),
    (lambda: BoostRegressor().fit(_X, _DATES[:, 1]), "y holds dates"),
    (lambda: BoostRegressor().fit(_X, _Y + 1j), "y: Complex data not supported"),
    (lambda: BoostClassifier().fit(_X, _Y + 1j), "y: Complex data not supported"),
    (lambda: BoostClassifier().fit(_X, _DATES[:, 1] - _DATES[:, 1] + _Y.astype("m8[s]")),
     "y holds durations"),
    (lambda: BoostRegressor().fit(_X, _Y.astype(str)), "y holds text, such as '0'"),
    (lambda: BoostRegressor().fit(_X, _Y, sample_weight=np.ones(20) + 0.5j),
     "sample_weight: Complex data not supported"),
    (lambda: BoostRegressor().fit(_X, _Y, sample_weight=np.ones(20).astype(str)),
     "sample_weight holds text"),
    (lambda: BoostRegressor().fit(_X, _Y, sample_weight=np.array(["1"] * 20, dtype=object)),
     "sample_weight holds text"),
    (lambda: BoostRegressor().fit(_X, _Y, sample_weight=_DATES[:, 1]),
     "sample_weight holds dates"),
    (lambda: BoostRegressor().fit(_X, _Y, eval_set=[(_DATES, _Y)]),
     r"eval_set\[0\] X holds dates"),
    (lambda: BoostRegressor().fit(_X, _Y, eval_set=[(_X, _Y + 1j)]),
     r"eval_set\[0\]: y: Complex data"),
    (lambda: BoostRegressor().fit(_X, _Y, eval_set=[(_X, _Y)],
                                  eval_sample_weight=[np.ones(20).astype(str)]),
     r"eval_sample_weight\[0\]: sample_weight holds text"),
    (lambda: Dataset(_DATES, _Y), "X holds dates"),
    (lambda: Dataset(_X, _Y + 1j), "y: Complex data not supported"),
    (lambda: Dataset(_X, _Y, sample_weight=np.ones(20).astype(str)), "sample_weight holds text"),
])
def test_values_numpy_would_change_without_a_word_are_refused_by_name(fit, match):
    # numpy takes text, complex numbers (dropping the imaginary part, with a warning at
    # most) and dates (NaT as -9.2e18) as float64
    with pytest.raises(ValueError, match=match):
        fit()


@pytest.mark.parametrize("dtype, match", [("datetime64[ns]", "datetime64"),
                                          ("timedelta64[ns]", "timedelta64"),
                                          ("complex128", "complex128")])
def test_date_and_complex_frame_columns_are_named(dtype, match):
    frame = pd.DataFrame({"a": _X[:, 0], "when": np.arange(20).astype(dtype)})
    with pytest.raises(ValueError, match=f"non-numeric column 'when' \\({match}") as info:
        BoostRegressor().fit(frame, _Y)
    assert ("convert dates and durations to numbers" in str(info.value)) == (match != "complex128")


@pytest.mark.parametrize("labels, error, match", [
    ([1, 2 ** 63], ValueError, r"class label 1 \(9223372036854775808\) is beyond the int64"),
    (np.array([1, 2 ** 64], dtype=object), ValueError, "beyond the int64 range"),
    ([2 ** 60, 2 ** 60 + 1, 1.0, 1.0], ValueError, "more digits than a float holds"),
    (np.array([b"a", b"b"]), TypeError, "bytes"),
    (np.array([b"a", b"b"], dtype=object), TypeError, "class label 0 is a bytes"),
    ([Decimal(1), Decimal(2)], TypeError, "class label 0 is a Decimal"),
])
def test_labels_a_model_file_cannot_hold_are_refused_at_fit(labels, error, match):
    y = [labels[i % len(labels)] for i in range(20)] if isinstance(labels, list) \
        else np.resize(labels, 20)
    with pytest.raises(error, match=match):
        BoostClassifier(n_estimators=2).fit(_X, y)


def test_int64_labels_at_the_limits_fit_and_load_back(tmp_path):
    y = [-2 ** 63, 2 ** 63 - 1] * 10
    model = BoostClassifier(n_estimators=2).fit(_X, y)
    assert model.classes_.tolist() == [-2 ** 63, 2 ** 63 - 1]
    model.save_model(tmp_path / "model.json")
    again = load_model(tmp_path / "model.json")
    assert again.classes_.tolist() == [-2 ** 63, 2 ** 63 - 1]
    np.testing.assert_array_equal(again.predict(_X), model.predict(_X))
