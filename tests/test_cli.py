"""The ``boostlib`` command."""
import json
import subprocess
import sys

import pytest

from boostlib import __version__
from boostlib.cli import main


def test_demo_prints_a_comparison(capsys):
    assert main(["demo", "--n-estimators", "5", "--n-jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "HIGGS" in out
    rows = [line for line in out.splitlines() if line.startswith(("symmetric", "depthwise"))]
    assert len(rows) >= 4
    for line in rows:
        logloss = float(line.split()[-3])
        assert 0.3 < logloss < 0.7


def test_plugins_lists_builtins(capsys):
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    for name in ("logloss", "sla", "mse", "uniform", "sgb"):
        assert name in out
    line = next(ln for ln in out.splitlines() if ln.split()[:1] == ["logloss"])
    assert line.split()[1:] == ["boostlib", __version__, "built-in", "(boostlib.losses)"]


_PLUGIN = """
    from boostlib.api import hookimpl
    from boostlib.samplers import UniformSampler

    class Halves(UniformSampler):
        name = "halves"

    @hookimpl
    def boostlib_add_samplers():
        return {"halves": Halves}
"""


def test_plugins_shows_distributions_and_failures(fake_distribution, capsys):
    fake_distribution("boostlib-halves", "0.3.1", {"halves": "halves_mod"},
                      {"halves_mod": _PLUGIN})
    fake_distribution("boostlib-broken", "2.0", {"broken": "broken_mod"},
                      {"broken_mod": "raise ImportError('needs a GPU')"})
    with pytest.warns(RuntimeWarning, match="needs a GPU"):
        assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    sampler_lines = out.split("sampler:")[1].split("update:")[0].splitlines()
    line = next(ln for ln in sampler_lines if ln.split()[:1] == ["halves"])
    assert line.split()[1:] == ["boostlib-halves", "0.3.1", "entry", "point", "halves"]
    failed = out.partition("failed to load:")[2]
    assert "entry point 'broken' (broken_mod) of boostlib-broken 2.0 failed to load: " \
           "ImportError('needs a GPU')" in failed

    assert main(["plugins", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"kind": "sampler", "name": "halves", "distribution": "boostlib-halves",
            "version": "0.3.1", "plugin": "halves"} in report["components"]
    assert len(report["failures"]) == 1 and not report["autoload_disabled"]


def test_plugins_says_when_autoload_is_disabled(monkeypatch, capsys):
    from boostlib import registry

    monkeypatch.setenv("BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD", "1")
    registry.reset()
    try:
        assert main(["plugins"]) == 0
    finally:
        monkeypatch.undo()
        registry.reset()
    out = capsys.readouterr().out
    assert "BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD is set" in out and "failed to load: none" in out


def test_console_entry_point_runs():
    res = subprocess.run([sys.executable, "-m", "boostlib", "--version"],
                         capture_output=True, text=True)
    assert res.returncode == 0 and "boostlib" in res.stdout


def test_bad_arguments_exit_nonzero():
    res = subprocess.run([sys.executable, "-m", "boostlib", "demo", "--max-depth", "0"],
                         capture_output=True, text=True)
    assert res.returncode == 2
    assert "max_depth=0 is invalid" in res.stderr and "Traceback" not in res.stderr
