"""Saving models: atomic, never over a non-regular file, never half done, and every file
written loads back; Ctrl-C during a save is held until the file is complete."""
import os
import signal
import sys
import threading
import tracemalloc

import numpy as np
import pytest

from boostlib import BoostClassifier, BoostRegressor, ModelFileError, load_model
from boostlib.io import atomic

RNG = np.random.default_rng(0)
X = RNG.normal(size=(200, 3))
Y = (X[:, 0] > 0).astype(int)
MODEL = BoostClassifier(n_estimators=5, random_state=0).fit(X, Y)

posix_signals = pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals")


def _leftovers(folder):
    return [p for p in os.listdir(folder) if p.startswith(".boostlib-model-")]


@posix_signals
@pytest.mark.parametrize("stage", ["write", "fsync", "replace"])
def test_ctrl_c_during_a_save_waits_for_the_complete_file(tmp_path, monkeypatch, stage):
    path = tmp_path / "model.json"
    real = {"write": atomic._create_temporary, "fsync": os.fsync, "replace": os.replace}

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)     # held back by the save until it is done
        return real[stage](*args, **kwargs)

    target = {"write": (atomic, "_create_temporary"), "fsync": (atomic.os, "fsync"),
              "replace": (atomic.os, "replace")}[stage]
    monkeypatch.setattr(*target, interrupted)
    with pytest.raises(KeyboardInterrupt, match="written completely"):
        MODEL.save_model(path)
    monkeypatch.undo()
    np.testing.assert_array_equal(load_model(path).predict_proba(X), MODEL.predict_proba(X))
    assert _leftovers(tmp_path) == []


def test_a_failed_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        MODEL.save_model(tmp_path / "model.json")
    assert not (tmp_path / "model.json").exists()
    assert _leftovers(tmp_path) == []


def test_a_save_from_another_thread_works(tmp_path):
    errors = []

    def save():
        try:
            MODEL.save_model(tmp_path / "model.json")
        except Exception as exc:        # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=save)
    thread.start()
    thread.join(60)
    assert not errors
    np.testing.assert_array_equal(load_model(tmp_path / "model.json").predict_proba(X),
                                  MODEL.predict_proba(X))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo (POSIX)")
def test_non_regular_targets_are_refused_and_left_alone(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("keep me")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for path in (link, fifo, tmp_path, "/dev/null"):
        with pytest.raises(ModelFileError, match="not a regular file"):
            MODEL.save_model(path)
    assert target.read_text() == "keep me" and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "pipe.json",
                                                          "real.json"]


@pytest.mark.parametrize("path", [0, 3, True, None, 2.5, ["m.json"]])
def test_paths_that_are_not_paths_are_refused(path):
    with pytest.raises(TypeError, match="expected a file path"):
        MODEL.save_model(path)
    with pytest.raises(TypeError, match="expected a file path"):
        load_model(path)


# -- permissions: those of open(path, "w") -----------------------------------------------------
posix_modes = pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX permissions")


def _mode(path):
    return os.stat(path).st_mode & 0o777


def _with_umask(mask, fn):
    old = os.umask(mask)        # the test runs alone: no other thread creates files here
    try:
        return fn()
    finally:
        os.umask(old)


@posix_modes
@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077, 0o027])
def test_a_new_model_file_gets_the_umask_mode(tmp_path, mask):
    """A new file gets 0666 less the umask, as a plain open(path, "w") gives it (not
    mkstemp's 0600, which hid model files from the user's group)."""
    _with_umask(mask, lambda: MODEL.save_model(tmp_path / "model.json"))
    _with_umask(mask, lambda: (tmp_path / "plain.txt").write_text("x"))
    assert _mode(tmp_path / "model.json") == 0o666 & ~mask == _mode(tmp_path / "plain.txt")
    assert _leftovers(tmp_path) == []


@posix_modes
@pytest.mark.parametrize("mode", [0o640, 0o600, 0o664, 0o444])
def test_replacing_a_model_file_keeps_its_mode(tmp_path, mode):
    """Saving over an existing file keeps its permissions, as cp does, whatever the umask."""
    path = tmp_path / "model.json"
    path.write_text("old")
    os.chmod(path, mode)
    _with_umask(0o022, lambda: MODEL.save_model(path))
    assert _mode(path) == mode
    np.testing.assert_array_equal(load_model(path).predict_proba(X), MODEL.predict_proba(X))


@posix_modes
def test_the_cli_writes_models_with_the_umask_mode(tmp_path):
    from boostlib.frontend.cli import main

    data = tmp_path / "d.csv"
    data.write_text("y,a\n" + "".join(f"{i % 2},{i}\n" for i in range(40)))
    code = _with_umask(0o002, lambda: main(["train", str(data), "--target", "y",
                                            "--n-estimators", "2", "-o",
                                            str(tmp_path / "m.json")]))
    assert code == 0 and _mode(tmp_path / "m.json") == 0o664


def test_a_save_takes_memory_for_the_document_not_copies_of_its_text(tmp_path):
    """A save validates the model's document as a load would and streams its text to the
    file: beyond the model, it holds the document and the model validated from it, about
    3 times the file's size. It used to hold the whole text, its bytes and a parsed copy
    besides (6 times), so that saving an 800 MB model took gigabytes."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    y = X[:, 0] + rng.normal(size=2000)
    model = BoostRegressor(max_depth=12, n_estimators=40, random_state=0).fit(X, y)
    path = tmp_path / "m.json"
    tracemalloc.start()
    try:
        model.save_model(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    size = os.path.getsize(path)
    assert size > 3_000_000 and peak <= 4 * size, (size, peak)
    assert np.array_equal(load_model(path).predict(X), model.predict(X))
