"""``boostlib predict -o`` and ``boostlib export`` write as ``save_model`` does: a symlink
planted at the output path is refused (the write is not redirected to its target), and a
write killed or failing midway leaves the old file or none, never a partial one, and no
temporary file (issue: both used to open the path and write in place)."""
import os

import numpy as np
import pytest

from boostlib import BoostRegressor
from boostlib.frontend.cli import main
from boostlib.io import atomic

posix = pytest.mark.skipif(not hasattr(os, "symlink") or os.name != "posix",
                           reason="needs POSIX symlinks")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("outputs")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=60)
    (folder / "data.csv").write_text("a,b,c\n" + "".join(f"{r[0]!r},{r[1]!r},{r[2]!r}\n"
                                                         for r in X.tolist()))
    BoostRegressor(n_estimators=3, max_depth=2).fit(X, y).save_model(folder / "model.json")
    return folder


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def _leftovers(folder):
    return sorted(p for p in os.listdir(folder) if p.startswith(".boostlib-"))


def _commands(files, output):
    yield ["predict", files / "model.json", files / "data.csv", "-o", output]
    if _has_onnx():
        yield ["export", files / "model.json", "-o", output]


def _has_onnx():
    try:
        import onnx  # noqa: F401
    except ImportError:
        return False
    return True


@posix
def test_a_symlink_at_the_output_is_refused_and_its_target_kept(files, tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "out"
    link.symlink_to(victim)
    for argv in _commands(files, link):
        code, err = _run(argv, capsys)
        assert code == 2 and "--output" in err and "not a regular file" in err, err
        assert victim.read_text() == "precious" and link.is_symlink()
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("stage", ["fsync", "replace"])
def test_a_write_that_fails_midway_leaves_the_old_file_whole(files, tmp_path, capsys,
                                                             monkeypatch, stage):
    """A failure (a full disk at fsync, a kill before the rename) leaves the previous
    output as it was and no temporary file; the error names --output."""
    out = tmp_path / "out"
    for argv in _commands(files, out):
        out.write_text("previous output")

        def fail(*args, **kwargs):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(atomic.os, stage, fail)
        code, err = _run(argv, capsys)
        monkeypatch.undo()
        assert code == 2 and "--output" in err and "No space left" in err, err
        assert out.read_text() == "previous output"
        assert _leftovers(tmp_path) == []


def test_outputs_are_complete_when_written(files, tmp_path, capsys):
    out = tmp_path / "pred.csv"
    code, err = _run(["predict", files / "model.json", files / "data.csv", "-o", out], capsys)
    assert code == 0, err
    lines = out.read_text().splitlines()
    assert lines[0] == "prediction" and len(lines) == 61
    assert _leftovers(tmp_path) == []
