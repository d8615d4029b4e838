"""Callbacks on fit: the info they get, stopping, early stopping and progress built on them."""
import io

import numpy as np
import pytest

from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRegressor, Dataset, train
from boostlib.callbacks import Callback, EarlyStopping, IterationInfo, ProgressBar


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


class Recorder(Callback):
    def __init__(self):
        self.events = []

    def on_fit_begin(self, info):
        self.events.append(("begin", info.iteration, info.n_iterations))

    def on_iteration(self, info):
        self.events.append(("iter", info.iteration, info.n_trees, dict(info.latest())))

    def on_fit_end(self, info):
        self.events.append(("end", info.iteration, info.n_trees))


def test_callbacks_see_every_iteration_with_the_recorded_losses():
    X, y = _data()
    rec, seen = Recorder(), []
    m = BoostClassifier(n_estimators=7, random_state=0).fit(
        X, y, eval_set=[(X[:100], y[:100])], callbacks=[rec, lambda info: seen.append(info)])
    assert rec.events[0] == ("begin", -1, 7) and rec.events[-1] == ("end", 6, 7)
    iters = [e for e in rec.events if e[0] == "iter"]
    assert [e[1] for e in iters] == list(range(7)) and [e[2] for e in iters] == list(range(1, 8))
    for k, e in enumerate(iters):
        assert e[3] == {"train": m.evals_result_["train"]["logloss"][k],
                        "valid_0": m.evals_result_["valid_0"]["logloss"][k]}
    assert len(seen) == 7 and all(isinstance(i, IterationInfo) for i in seen)


def test_a_callback_can_stop_training():
    X, y = _data()
    m = BoostClassifier(n_estimators=50).fit(X, y, callbacks=[lambda info: info.iteration == 4])
    assert m.n_trees_ == 5 and len(m.evals_result_["train"]["logloss"]) == 5


def test_early_stopping_callback_equals_the_parameter():
    X, y = _data(n=600)
    Xv, yv = X[:200], y[:200]
    kw = dict(n_estimators=300, learning_rate=0.5, max_depth=6, random_state=0)
    a = BoostClassifier(early_stopping_rounds=5, **kw).fit(X[200:], y[200:],
                                                            eval_set=[(Xv, yv)])
    stopper = EarlyStopping(5)
    b = BoostClassifier(**kw).fit(X[200:], y[200:], eval_set=[(Xv, yv)], callbacks=[stopper])
    assert a.n_trees_ < 300 and a.n_trees_ == b.n_trees_ == stopper.best_iteration + 1
    assert a.best_iteration_ == b.best_iteration_ == stopper.best_iteration
    assert np.array_equal(a.decision_function(Xv), b.decision_function(Xv))


def test_early_stopping_on_a_named_set_and_min_delta():
    X, y = _data(n=600)
    stopper = EarlyStopping(3, data_name="train", min_delta=1.0)     # never improves by 1
    m = BoostClassifier(n_estimators=50).fit(X, y, callbacks=[stopper])
    assert stopper.best_iteration == 0 and m.n_trees_ == 1
    with pytest.raises(ValueError, match="data_name='valid_3' is not recorded"):
        BoostClassifier(n_estimators=5).fit(X, y, callbacks=[EarlyStopping(3, "valid_3")])
    with pytest.raises(ValueError, match="early stopping needs a validation set"):
        train({"n_estimators": 5, "early_stopping_rounds": 3}, Dataset(X, y))


@pytest.mark.parametrize("bad,match", [
    (["not callable"], r"callbacks\[0\]='not callable' is invalid"),
    ("abc", "callbacks='abc' is invalid; expected a list"),
])
def test_bad_callbacks_are_named(bad, match):
    X, y = _data(n=50)
    with pytest.raises(TypeError, match=match):
        BoostRegressor(n_estimators=2).fit(X, y, callbacks=bad)


@pytest.mark.parametrize("rounds", [0, -1, 1.5, True])
def test_early_stopping_rounds_are_checked(rounds):
    with pytest.raises(ValueError, match=f"rounds={rounds!r} is invalid"):
        EarlyStopping(rounds)


def test_progress_log_lines_without_tqdm():
    X, y = _data()
    out = io.StringIO()
    BoostClassifier(n_estimators=20).fit(X, y, eval_set=[(X, y)],
                                         callbacks=[ProgressBar(out, use_tqdm=False)])
    lines = out.getvalue().splitlines()
    assert len(lines) == 11          # every 2nd iteration of 20, plus the last
    assert lines[0].startswith("[boostlib] iteration 1/20")
    assert "train logloss=" in lines[-1] and "valid_0 logloss=" in lines[-1]
    assert lines[-1].startswith("[boostlib] iteration 20/20")


def test_progress_bar_with_tqdm():
    importorskip("tqdm")
    X, y = _data()
    out = io.StringIO()
    BoostClassifier(n_estimators=10).fit(X, y, callbacks=[ProgressBar(out, use_tqdm=True)])
    text = out.getvalue()
    assert "10/10" in text and "train logloss" in text


def test_verbose_prints_progress_and_silence_by_default(capsys, caplog):
    X, y = _data()
    BoostClassifier(n_estimators=5).fit(X, y)
    assert capsys.readouterr().err == ""
    with caplog.at_level("INFO", logger="boostlib"):        # logging is configured here
        BoostClassifier(n_estimators=5, verbose=1).fit(X, y)
    err = capsys.readouterr().err + caplog.text
    assert "5/5" in err and "train logloss" in err
