"""Messages a newcomer meets: they name the value as it was written (``0``, not
``np.int64(0)``), say how many more items a shortened list holds, and name what differs."""
import numpy as np
import pandas as pd
import pytest

from boostlib import BoostClassifier, BoostRegressor, Dataset, train

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 3))
Y = (X[:, 0] > 0).astype(int)
FRAME = pd.DataFrame(X, columns=["a", "b", "c"])


def _message(call):
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("call, expected", [
    (lambda: BoostRegressor(max_depth=np.int64(0)).fit(X, Y), "max_depth=0 is invalid"),
    (lambda: BoostRegressor(grow_policy=np.str_("wide")).fit(X, Y),
     "grow_policy='wide' is invalid"),
    (lambda: BoostRegressor(sampler=np.str_("zz")).fit(X, Y), "sampler='zz' is not registered"),
    (lambda: BoostRegressor(random_state=np.int64(-1)).fit(X, Y), "random_state=-1 is invalid"),
    (lambda: BoostClassifier(n_estimators=2, class_weight={np.str_("maybe"): 2.0})
     .fit(X, np.where(Y, "yes", "no")), "label(s) 'maybe' that are not classes of y; the "
                                         "classes are 'no', 'yes'"),
    (lambda: BoostClassifier(class_weight={"yes": np.float64(-1.0)}).fit(X, Y),
     "class_weight['yes']=-1.0 is invalid"),
    (lambda: BoostClassifier().fit(X, np.array([np.float64("nan"), 1.0] * 20, dtype=object)),
     "class label 0 is missing (nan)"),
    (lambda: train({"n_estimators": 2, "loss": "lambdarank"},
                   Dataset(X, Y, group=np.array([0, 40]))), "query size below 1 (0)"),
    (lambda: BoostRegressor(n_estimators=2).fit(X, Y).predict(
        X, iteration_range=(np.int64(0), np.int64(9))), "iteration_range=(0, 9) is invalid"),
    (lambda: BoostRegressor(n_estimators=2).fit(X, Y).predict_virtual_ensembles(
        X, np.int64(0)), "n_members=0 is invalid"),
    (lambda: BoostRegressor(categorical_features=[np.str_("q")]).fit(FRAME, Y),
     "no column named 'q'"),
    (lambda: BoostRegressor(categorical_features=[np.int64(7)]).fit(X, Y),
     "categorical_features: 7 is not"),
    (lambda: BoostRegressor(monotonic_cst={np.str_("q"): 1}).fit(FRAME, Y),
     "names feature 'q'"),
    (lambda: BoostRegressor(grow_policy="depthwise", interaction_constraints=[[np.int64(9)]])
     .fit(X, Y), "interaction_constraints: 9 is not"),
])
def test_messages_show_plain_python_values(call, expected):
    message = _message(call)
    assert expected in message
    assert "np." not in message and "array(" not in message


def test_a_shortened_list_of_columns_says_how_many_more():
    frame = pd.DataFrame(RNG.normal(size=(40, 30)), columns=[f"c{i}" for i in range(30)])
    message = _message(lambda: BoostRegressor(categorical_features=["zz"]).fit(frame, Y))
    assert "'c0', 'c1'" in message and "'c9' and 20 more" in message
    message = _message(lambda: BoostRegressor(monotonic_cst={"zz": 1}).fit(frame, Y))
    assert "names feature 'zz'" in message and "'c9' and 20 more" in message


@pytest.mark.parametrize("cls", [BoostClassifier, BoostRegressor])
@pytest.mark.parametrize("X_empty", [FRAME.iloc[:0], X[:0],
                                     pd.DataFrame({"c": pd.Categorical([])})])
def test_fitting_on_no_rows_names_the_rows(cls, X_empty):
    # (a classifier said "needs at least two classes in y; got 1 class ([])")
    message = _message(lambda: cls().fit(X_empty, []))
    assert "X: found array with 0 sample(s)" in message


def test_an_engine_dataset_of_no_rows_is_refused():
    frame = pd.DataFrame({"c": pd.Categorical([])})
    assert "X: found array with 0 sample(s)" in _message(lambda: Dataset(frame, []))


WIDE = pd.DataFrame(RNG.normal(size=(40, 30)), columns=[f"c{i}" for i in range(30)])


@pytest.fixture(scope="module")
def wide_model():
    return BoostClassifier(n_estimators=2, random_state=0).fit(WIDE, Y)


@pytest.mark.parametrize("frame, expected", [
    (WIDE.drop(columns="c7"), "X lacks 'c7'"),
    (WIDE.rename(columns={"c7": "C7"}), "X lacks 'c7' and has 'C7', unseen at fit"),
    (WIDE.assign(extra=1.0), "X has 'extra', unseen at fit"),
    (WIDE[["c1", "c0"] + [f"c{i}" for i in range(2, 30)]],
     "X has the columns seen at fit in another order: column 0 is 'c1', at fit 'c0'"),
])
def test_a_renamed_or_missing_column_at_predict_is_named(wide_model, frame, expected):
    # (the message listed all 30 names of fit against the 29 given)
    for predict in (wide_model.predict, wide_model.model_.predict):
        message = _message(lambda: predict(frame))
        assert expected in message
        assert "'c20'" not in message               # not the whole list


def test_validation_sets_with_other_columns_are_named():
    valid = Dataset(WIDE.rename(columns={"c3": "x"}), Y)
    message = _message(lambda: train({"n_estimators": 2}, Dataset(WIDE, Y), valid_sets=[valid]))
    assert "validation set 'valid_0' lacks 'c3' and has 'x', unseen in the training set" \
        in message
    message = _message(lambda: BoostClassifier(n_estimators=2).fit(
        WIDE, Y, eval_set=[(WIDE.rename(columns={"c3": "x"}), Y)]))
    assert "lacks 'c3' and has 'x'" in message


@pytest.mark.parametrize("cls", [BoostClassifier, BoostRegressor])
@pytest.mark.parametrize("policy", ["symmetric", "depthwise", "lossguide"])
def test_predicting_on_no_rows_gives_empty_results(cls, policy):
    three = np.where(X[:, 1] > 0.5, 2, Y)
    model = cls(n_estimators=4, grow_policy=policy, random_state=0).fit(FRAME, three)
    empty = FRAME.iloc[:0]
    k = 3 if cls is BoostClassifier else 1
    assert model.predict(empty).shape == (0,)
    assert model.apply(empty).shape == ((0, 4, 3) if k == 3 else (0, 4))
    assert model.predict(empty, pred_contrib=True).shape == ((0, 4, 3) if k == 3 else (0, 4))
    assert model.predict(empty, pred_interactions=True).shape == \
        ((0, 4, 4, 3) if k == 3 else (0, 4, 4))
    assert [s.shape for s in model.staged_predict(empty)] == [(0,)] * 4
    assert model.predict_virtual_ensembles(empty, 2).shape == \
        ((0, 3, 2) if k == 3 else (0, 2))
    if cls is BoostClassifier:
        assert model.predict_proba(empty).shape == (0, 3)
        assert model.decision_function(empty).shape == (0, 3)
        assert model.predict(empty).dtype == model.classes_.dtype
    assert model.model_.predict(X[:0], raw=True).shape == ((0, 3) if k == 3 else (0,))


def test_predicting_on_no_sparse_rows_gives_empty_results():
    sparse = pytest.importorskip("scipy.sparse")
    model = BoostRegressor(n_estimators=2).fit(sparse.csr_matrix(X), Y)
    assert model.predict(sparse.csr_matrix(X[:0])).shape == (0,)


def test_an_integer_target_with_many_classes_warns():
    n = 400
    target = np.round(RNG.normal(size=n) * 100)     # a quantity, not labels
    with pytest.warns(UserWarning, match=r"y has \d+ classes in 400 rows.*BoostRegressor"):
        BoostClassifier(n_estimators=1, max_depth=1).fit(RNG.normal(size=(n, 2)), target)


@pytest.mark.parametrize("labels", [np.arange(60).repeat(10),          # 10 rows per class
                                    np.arange(40).repeat(2),           # 40 classes
                                    np.array([f"c{i}" for i in range(60)]).repeat(2)])
def test_labels_with_enough_rows_or_few_classes_do_not_warn(labels, recwarn):
    BoostClassifier(n_estimators=1, max_depth=1).fit(
        RNG.normal(size=(labels.size, 2)), labels)
    assert not [w for w in recwarn if "classes in" in str(w.message)]


def test_a_warm_start_on_renamed_columns_names_them():
    # (the message listed the first five names of each side)
    model = BoostClassifier(n_estimators=2, warm_start=True).fit(FRAME, Y)
    model.set_params(n_estimators=4)
    message = _message(lambda: model.fit(FRAME.rename(columns={"a": "A"}), Y))
    assert "train_set lacks 'a' and has 'A', unseen in init_model" in message
