"""The ``boostlib`` command."""
import subprocess
import sys

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


def test_console_entry_point_runs():
    res = subprocess.run([sys.executable, "-m", "boostlib", "--version"],
                         capture_output=True, text=True)
    assert res.returncode == 0 and "boostlib" in res.stdout


def test_bad_arguments_exit_nonzero():
    res = subprocess.run([sys.executable, "-m", "boostlib", "demo", "--max-depth", "0"],
                         capture_output=True, text=True)
    assert res.returncode == 2
    assert "max_depth=0 is invalid" in res.stderr and "Traceback" not in res.stderr
