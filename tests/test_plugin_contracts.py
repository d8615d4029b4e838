"""Loss plugins whose validate_target or transform break their contract are reported with
the plugin's name (issue 30, item 5, in part)."""
import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRegressor, PluginError
from boostlib.builtin.losses import LogLoss, MSELoss as MSE

rng = np.random.default_rng(0)
X = rng.normal(size=(120, 3))
Y = (X[:, 0] > 0).astype(int)


class ShortTarget(MSE):
    name = "short-target"

    def validate_target(self, y):
        return np.asarray(y, dtype=np.float64)[:-5]


class NaNTransform(MSE):
    name = "nan-transform"

    def transform(self, raw):
        out = np.array(raw, dtype=np.float64)
        out[0] = np.nan
        return out


class WrongLength(MSE):
    name = "wrong-length"

    def transform(self, raw):
        return np.asarray(raw)[:-1]


class BadProbability(LogLoss):
    name = "bad-probability"

    def transform(self, raw):
        return np.asarray(raw) * 10.0


def test_a_loss_that_drops_rows_is_named():
    with pytest.raises(PluginError, match=r"'short-target': validate_target returned .* "
                                          r"for the 120 rows of the training set"):
        BoostRegressor(loss=ShortTarget(), n_estimators=2).fit(X, Y.astype(float))


@pytest.mark.parametrize("loss, match", [
    (NaNTransform(), r"'nan-transform': transform returned 1 non-finite values"),
    (WrongLength(), r"'wrong-length': transform returned .* of shape \(119,\)")])
def test_a_regression_transform_that_breaks_its_contract_is_named(loss, match):
    model = BoostRegressor(loss=loss, n_estimators=2).fit(X, Y.astype(float))
    with pytest.raises(PluginError, match=match):
        model.predict(X)
    with pytest.raises(PluginError, match=match):
        model.model_.predict(X)


def test_probabilities_outside_the_unit_interval_are_named():
    model = BoostClassifier(loss=BadProbability(), n_estimators=2).fit(X, Y)
    with pytest.raises(PluginError, match=r"'bad-probability': transform returned "
                                          r"probabilities outside \[0, 1\]"):
        model.predict_proba(X)
