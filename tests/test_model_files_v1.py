"""Model files of format version 1 still load and predict exactly as the release that wrote
them did (fixtures written by ``tests/fixtures/model_files_v1/make_fixtures.py`` at the last
v1 release, with that release's predictions)."""
import json
import os
import warnings

import numpy as np
import pytest

from optional_imports import importorskip

import boostlib
from boostlib import BoostClassifier

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "model_files_v1")
with open(os.path.join(HERE, "expected.json")) as fh:
    EXPECTED = json.load(fh)
X = np.array(EXPECTED["X"], dtype=np.float64)
importorskip("sklearn")


@pytest.mark.parametrize("name", sorted(EXPECTED["models"]))
def test_v1_file_loads_and_predicts_as_written(name):
    path = os.path.join(HERE, f"{name}.json")
    with open(path) as fh:
        assert json.load(fh)["format_version"] == 1
    est = boostlib.load_model(path)
    want = EXPECTED["models"][name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # fitted on a frame, given an array
        np.testing.assert_array_equal(est.decision_function(X) if isinstance(
            est, BoostClassifier) else est.model_.predict(X, raw=True), want["raw"])
        np.testing.assert_array_equal(est.predict(X), np.array(want["predict"]))
        if "predict_proba" in want:
            np.testing.assert_array_equal(est.predict_proba(X), want["predict_proba"])
        if "virtual_ensembles" in want:
            np.testing.assert_array_equal(est.predict_virtual_ensembles(X, 5),
                                          want["virtual_ensembles"])


def test_v1_file_loads_as_engine_model():
    model = boostlib.Model.load(os.path.join(HERE, "classifier_symmetric.json"))
    want = EXPECTED["models"]["classifier_symmetric"]
    np.testing.assert_array_equal(model.predict(X, raw=True), want["raw"])
    np.testing.assert_array_equal(model.predict(X), np.array(want["predict_proba"])[:, 1])
