"""Shared fixtures of the boostlib test suite."""
import os

import numpy as np
import pytest

from hypothesis import settings

settings.register_profile("ci", deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def temp_plugin():
    """Register in-process plugins for one test; they are removed afterwards."""
    from boostlib import registry

    names = []

    def register(plugin, name):
        names.append(registry.register_plugin(plugin, name))
        return names[-1]

    yield register
    for name in names:
        registry.unregister_plugin(name)


@pytest.fixture(scope="session")
def higgs():
    """The bundled HIGGS subset: (X, y, X_test, y_test)."""
    from boostlib.datasets import load_higgs

    X, y = load_higgs("train")
    Xt, yt = load_higgs("test")
    return X, y, Xt, yt


@pytest.fixture
def binary_data():
    """A small, seeded binary problem with a few NaNs."""
    rng = np.random.default_rng(42)
    X = rng.normal(size=(600, 6))
    logit = 2 * X[:, 0] - X[:, 1] ** 2 + X[:, 2] * X[:, 3]
    y = (rng.random(600) < 1 / (1 + np.exp(-logit))).astype(int)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, y
