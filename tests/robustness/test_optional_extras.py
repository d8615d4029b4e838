"""Optional extras on a fresh machine: the ``[dask]`` extra's lower bounds keep a resolver on
dask and distributed releases that work together, and when an environment still holds a pair
that does not, ``import boostlib.dask`` names the versions found and the import that failed
(it used to say "install boostlib[dask]" to a user who had just done so)."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from boostlib.dask._requirements import MINIMUM_VERSIONS

ROOT = Path(__file__).resolve().parents[2]


def _requirements(extra):
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11")
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("not run from a source checkout")
    with open(pyproject, "rb") as fh:
        return tomllib.load(fh)["project"]["optional-dependencies"][extra]


@pytest.mark.parametrize("extra", ["dask", "test"])
def test_extras_bound_dask_and_distributed_from_below(extra):
    """Without a lower bound on distributed, pip pairs the newest dask with a five-year-old
    distributed (the newest distributed is older than the newest dask, and every recent
    distributed pins its dask exactly): both packages carry the tested minimum."""
    requirements = {req.split("[")[0].split(">")[0].split("=")[0].strip(): req
                    for req in _requirements(extra)}
    for name, minimum in MINIMUM_VERSIONS.items():
        assert name in requirements, (extra, sorted(requirements))
        assert f">={minimum}" in requirements[name], (extra, requirements[name])


def _import_boostlib_dask_with(tmp_path, fake_module, body):
    """Run ``import boostlib.dask`` in a fresh interpreter where ``fake_module`` is a package
    whose import runs ``body``; returns the interpreter's stderr."""
    package = tmp_path / fake_module
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(body))
    code = (f"import sys; sys.path.insert(0, {str(tmp_path)!r}); "
            "import boostlib.dask")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode != 0, run.stdout
    return run.stderr.strip().splitlines()[-1]


def test_a_mismatched_distributed_names_versions_and_the_failed_import(tmp_path):
    """The failure seen on a fresh machine: distributed imports a name its dask lacks."""
    message = _import_boostlib_dask_with(tmp_path, "distributed", """\
        raise ImportError("cannot import name 'collections_to_dsk' from 'dask.base'")
        """)
    assert message.startswith("ImportError: boostlib.dask needs dask and distributed")
    assert "'import distributed' failed" in message
    assert "cannot import name 'collections_to_dsk' from 'dask.base'" in message
    assert "found dask " in message and "distributed " in message
    assert "pip install --upgrade 'boostlib[dask]'" in message


def test_a_missing_dask_is_called_missing(tmp_path):
    message = _import_boostlib_dask_with(tmp_path, "dask", """\
        raise ModuleNotFoundError("No module named 'dask'", name="dask")
        """)
    # a fake package shadows any installed dask; its error is the one reported
    assert "'import dask'" in message
    assert "No module named 'dask'" in message or "is not installed" in message


def test_a_test_module_of_a_broken_optional_part_skips_with_the_reason(tmp_path, monkeypatch):
    """``tests/optional_imports.importorskip`` skips on any ImportError (pytest's own
    re-raises anything but ModuleNotFoundError since 8.2, which aborted the whole suite),
    with the error in the reason; with BOOSTLIB_REQUIRE_OPTIONAL set (CI) it fails."""
    from optional_imports import importorskip

    (tmp_path / "broken_optional_thing.py").write_text("raise ImportError('mismatch')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("BOOSTLIB_REQUIRE_OPTIONAL", raising=False)
    with pytest.raises(pytest.skip.Exception, match="broken_optional_thing.*mismatch"):
        importorskip("broken_optional_thing")
    with pytest.raises(pytest.skip.Exception, match="No module named"):
        importorskip("surely_not_installed_module_xyz")
    monkeypatch.setenv("BOOSTLIB_REQUIRE_OPTIONAL", "1")
    with pytest.raises(ImportError, match="mismatch"):
        importorskip("broken_optional_thing")
    with pytest.raises(pytest.skip.Exception):        # missing still skips
        importorskip("surely_not_installed_module_xyz")
