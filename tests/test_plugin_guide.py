"""docs/plugins.md: the worked example's files work as written (module, pyproject, tests)."""
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from optional_imports import importorskip

from boostlib import registry

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"


def _files():
    """``{path: source}`` of the guide's code blocks whose first line is ``# file: path``."""
    if not GUIDE.exists():
        pytest.skip("docs/plugins.md is not next to the tests")
    blocks = re.findall(r"```(?:python|toml)\n# file: (\S+)\n(.*?)```", GUIDE.read_text(),
                        flags=re.DOTALL)
    return dict(blocks)


@pytest.fixture
def example(tmp_path, monkeypatch):
    """The example package written to disk and registered in-process, as if installed."""
    files = _files()
    assert set(files) == {"src/boostlib_negbin/__init__.py", "pyproject.toml",
                          "tests/test_negbin.py"}
    for rel, source in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    import boostlib_negbin

    name = registry.register_plugin(boostlib_negbin, "boostlib_negbin_guide")
    yield tmp_path
    registry.unregister_plugin(name)
    sys.modules.pop("boostlib_negbin", None)


def test_the_example_tests_pass(example):
    spec = importlib.util.spec_from_file_location("guide_test_negbin",
                                                  example / "tests" / "test_negbin.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = [getattr(module, n) for n in dir(module) if n.startswith("test_")]
    assert len(tests) == 2
    for test in tests:
        test()


def test_the_pyproject_declares_the_entry_point(example):
    tomllib = importorskip("tomllib")
    project = tomllib.loads((example / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["boostlib"] == {"negbin": "boostlib_negbin"}
    assert project["name"] == "boostlib-negbin"
    import boostlib_negbin

    assert project["version"] == boostlib_negbin.__version__
