"""Shared fixtures of the boostlib test suite."""
import os

import numpy as np
import pytest

from hypothesis import settings

# CI explores the same examples on every run (a gate, not a lottery); local and nightly runs
# (``pytest -m nightly tests/robustness``) draw new ones.
settings.register_profile("ci", deadline=None, print_blob=True, derandomize=True)
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


@pytest.fixture
def fake_distribution(tmp_path, monkeypatch):
    """Make "installed" distributions with ``boostlib`` entry points for one test.

    ``make(dist, version, entry_points, modules)`` writes ``<dist>-<version>.dist-info``
    (METADATA and entry_points.txt) and the plugin modules into a directory put on
    ``sys.path``, so :mod:`importlib.metadata` and the registry find them exactly as they find
    a pip-installed plugin. The registry is rebuilt before and after the test.
    """
    import importlib
    import sys
    import textwrap

    from boostlib import registry

    modules = []

    def make(dist, version, entry_points, sources):
        info = tmp_path / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\n"
                                       f"Version: {version}\n")
        (info / "entry_points.txt").write_text(
            "[boostlib]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
        for module, source in sources.items():
            (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
            modules.append(module)
        importlib.invalidate_caches()
        registry.reset()

    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    registry.reset()
    yield make
    for module in modules:
        sys.modules.pop(module, None)
    registry.reset()
