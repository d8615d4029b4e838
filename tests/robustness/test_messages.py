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
     .fit(X, np.where(Y, "yes", "no")), "label(s) ['maybe']"),
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
