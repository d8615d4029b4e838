"""The files the commands read and write: a DATA path that names a model file is refused;
an ``--output`` path is checked before anything is computed and written whole or not at all
(as model files are: :mod:`boostlib.io.atomic`)."""
from __future__ import annotations

import os
import stat
from typing import Dict

from ...io.atomic import write_atomically



def check_output(path: str, inputs: Dict[str, str], example: str,
                 option: str = "--output") -> None:
    """Refuse an output path (``--output`` or another ``option``) that cannot be the file
    written.

    Parameters
    ----------
    path : str
        The path given (the value of ``option``).
    inputs : dict of str to str
        The files read by the command, by role (``"DATA"``, ``"MODEL.json"``): writing one of
        them would destroy it.
    example : str
        A file name shown in the messages, e.g. ``"model.json"``.
    option : str, default "--output"
        The option that gave ``path``, named in the messages.

    Raises
    ------
    ValueError or OSError
        For an empty path, a folder, a path in a folder that does not exist, an input
        file or an existing path that is not a regular file (outputs replace the file whole,
        :func:`write_output`: a symlink, device or FIFO is not written through), naming
        ``option``.
    """
    if not path.strip():
        raise ValueError(f"{option} {path!r} is empty; expected a file path such as {example}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{option} {path!r} is a folder; expected a file path, such as "
                                f"{os.path.join(path, example)}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{option} {path!r}: cannot write it, folder {folder} does not "
                                "exist; expected a path in an existing folder")
    for role, other in inputs.items():
        if os.path.exists(path) and os.path.exists(other) and os.path.samefile(path, other):
            raise ValueError(f"{option} {path!r} is the {role} file {other!r}: writing would "
                             f"destroy it; expected another path, such as {example}")
    if os.path.lexists(path) and not stat.S_ISREG(os.lstat(path).st_mode):
        raise ValueError(f"{option} {path!r} exists and is not a regular file (a symlink, "
                         f"device or FIFO); expected a new or regular file, such as {example}")


def check_data_name(path: str) -> None:
    """ValueError for a DATA path naming a JSON file (most likely a model file given in the
    place of the data)."""
    if path.lower().endswith((".json", ".json.gz")):
        raise ValueError(f"DATA {path!r} is a JSON file (a model file?); expected a CSV, TSV "
                         "or Parquet file")


def write_output(path: str, data: bytes, what: str, option: str = "--output") -> None:
    """Write ``data`` to the ``--output`` file ``path`` as model files are written: a
    temporary file in the same folder, flushed to disk and renamed over ``path``
    (:func:`~boostlib.io.atomic.write_atomically`), so a kill mid-write leaves the old file or
    none, never a partial one. ``path`` was checked by :func:`check_output` (a symlink
    planted there is refused, not followed); ``what`` names the file in messages, and
    ``option`` the option that gave the path."""
    try:
        write_atomically(path, data, what)
    except OSError as exc:
        raise type(exc)(f"{option} {path!r}: cannot write it ({exc.strerror or exc}); expected "
                        "a writable file path") from None
