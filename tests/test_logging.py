"""The library's messages go through ``logging.getLogger("boostlib")``; ``verbose`` shows
them on stderr when the application has not configured logging."""
import logging
import subprocess
import sys

import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRegressor


def _fit(**params):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    return BoostRegressor(n_estimators=4, verbose=1, **params).fit(X, X[:, 0])


def test_verbose_lines_go_to_the_boostlib_logger(caplog):
    with caplog.at_level(logging.INFO, logger="boostlib"):
        _fit()
    lines = [r.getMessage() for r in caplog.records if r.name == "boostlib"]
    assert len(lines) == 4 and lines[0].startswith("[boostlib] iteration 1/4")


def test_an_application_can_silence_them(caplog):
    with caplog.at_level(logging.WARNING, logger="boostlib"):
        _fit()
    assert not [r for r in caplog.records if r.name == "boostlib"]


def test_without_logging_configured_verbose_prints_to_stderr():
    code = ("import numpy as np, boostlib; X = np.eye(20)[:, :3]; "
            "boostlib.BoostRegressor(n_estimators=2, verbose=1).fit(X, X[:, 0])")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stderr
    assert "[boostlib] iteration 2/2" in err


def test_early_stopping_that_keeps_a_handful_of_iterations_warns():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    y = (rng.random(400) < 0.5).astype(int)          # nothing to learn
    with pytest.warns(UserWarning, match=r"early stopping kept \d iteration\(s\): logloss on "
                                         r"'valid_0' was best at iteration \d"):
        BoostClassifier(n_estimators=100, learning_rate=0.5, early_stopping_rounds=5,
                        random_state=0).fit(X[:300], y[:300], eval_set=[(X[300:], y[300:])])
