"""Files written whole or not at all: the model files, and the command line's predictions and
ONNX exports.

A write goes to a new temporary file in the target's folder, is flushed to disk (fsync) and
renamed over the target; Ctrl-C in the main thread is held back until the rename is done, so
an interrupted or failed write leaves the old file (or none) and no temporary file. Targets
that are not regular files (a symlink, FIFO, device or folder) are refused: writing through a
planted symlink would redirect the write.
"""
from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import threading
from typing import BinaryIO, Callable, Iterator, Tuple, Type, Union


def check_regular_target(path: str, what: str, error: Type[Exception] = ValueError) -> None:
    """Raise ``error`` when ``path`` exists and is not a regular file (a symlink, device, FIFO
    or folder): only regular files are replaced. ``what`` names the file in the message."""
    if os.path.lexists(path) and (os.path.islink(path)
                                  or not stat.S_ISREG(os.lstat(path).st_mode)):
        raise error(f"cannot write {what} {path!r}: it exists and is not a regular file (a "
                    "symlink, device, FIFO or folder); boostlib only replaces regular files")


@contextlib.contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold SIGINT (Ctrl-C) back until the block ends, then act on it as the previous handler
    would (by default: KeyboardInterrupt), so that a save is never left half done with its
    temporary file behind. Python runs signal handlers in the main thread, so a save there
    holds it back whichever thread the signal reaches; elsewhere nothing is held."""
    old = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or old is None:
        yield           # not the main thread, or a handler installed outside Python
        return
    received = []
    signal.signal(signal.SIGINT, lambda signum, frame: received.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if received and callable(old):
        old(signal.SIGINT, received[0])
    elif received and old == signal.SIG_DFL:
        raise KeyboardInterrupt


def _create_temporary(folder: str, kind: str) -> Tuple[int, str]:
    """Create a new, empty temporary file in ``folder``, opened for writing: ``(fd, path)``;
    its name starts with ``.boostlib-KIND-`` (``kind``: the first word of what is written).

    Unlike :func:`tempfile.mkstemp` (always mode 0600), the file is created with mode 0666
    and the kernel applies the umask (and a default ACL of the folder, if any) exactly as it
    does for ``open(path, "w")``. The umask is thus never read: reading it with
    ``os.umask(0)`` and setting it back would change it for every thread for a moment, and
    ``/proc/self/status`` exists on Linux only. ``O_EXCL`` with a random name makes the
    file new (never an existing file or a symlink planted at that name).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) \
        | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(folder, f".boostlib-{kind}-{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name found")


def write_atomically(path: str, data: Union[bytes, Callable[[BinaryIO], None]],
                     what: str) -> None:
    """Write ``data`` to ``path`` whole or not at all.

    A temporary file beside ``path`` is written, flushed to disk and renamed over ``path``;
    on any failure it is removed. Ctrl-C during the write is held back until the rename
    (:func:`sigint_deferred`): it then raises ``KeyboardInterrupt`` saying that the file was
    written completely. The file gets the permissions a plain ``open(path, "w")`` would give
    it: those of the file it replaces (as ``cp`` onto an existing file keeps them), else
    ``0666`` less the umask (see ``_create_temporary``).

    Parameters
    ----------
    path : str
        The file to write; check it with :func:`check_regular_target` first.
    data : bytes or callable
        The bytes, or a function that writes them to the open binary file (to stream what
        is not held whole in memory); what it raises fails the write.
    what : str
        What the file is, for messages (``"model file"``, ``"predictions file"``).

    Raises
    ------
    OSError
        When the file cannot be created or written, naming it.
    KeyboardInterrupt
        After a complete write, when Ctrl-C arrived during it.
    """
    written = False
    try:
        with sigint_deferred():
            _replace(path, data, what)
            written = True
    except KeyboardInterrupt:
        if written:     # Ctrl-C during the write, delivered once it was complete
            raise KeyboardInterrupt(f"interrupted after the {what} {path!r} was written "
                                    "completely") from None
        raise


def _replace(path: str, data: Union[bytes, Callable[[BinaryIO], None]], what: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    try:        # only the permission bits: never set-user-ID and the like
        kept = stat.S_IMODE(os.stat(path).st_mode) & 0o777
    except FileNotFoundError:
        kept = None
    try:
        fd, tmp = _create_temporary(folder, what.split()[0])
    except OSError as exc:
        raise type(exc)(exc.errno, f"cannot write {what} {path!r}: "
                                   f"{exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            if callable(data):
                data(fh)
            else:
                fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if kept is not None:
            os.chmod(tmp, kept)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
