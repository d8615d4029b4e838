"""Check that dask and distributed import, and say exactly why when they do not.

``dask`` and ``distributed`` are released together, and each ``distributed`` release pins the
``dask`` release it works with. An environment can still hold a pair that does not match (a
resolver that backtracked one of them, or a manual upgrade of one), and then ``import
distributed`` fails deep inside dask with a message that names neither package's version.
:func:`check_dask` turns that into an error naming the versions found, the import that
failed and its message, and the command that installs a working pair.
"""
from __future__ import annotations

import importlib
from importlib import metadata
from typing import Dict, Optional

#: The oldest releases the Dask integration is tested with (also the extra's lower bounds
#: in ``pyproject.toml``; ``tests/test_dask_requirements.py`` checks that they agree).
MINIMUM_VERSIONS: Dict[str, str] = {"dask": "2024.8", "distributed": "2024.8"}

INSTALL_HINT = "pip install --upgrade 'boostlib[dask]'"


def installed_version(distribution: str) -> Optional[str]:
    """The installed version of ``distribution``, or None when it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _found() -> str:
    return ", ".join(f"{name} {installed_version(name) or 'not installed'}"
                     for name in MINIMUM_VERSIONS)


def check_dask() -> None:
    """Import the modules the Dask integration needs; raise a clear ImportError otherwise.

    Raises
    ------
    ImportError
        Naming the module whose import failed, the error it raised, the versions of dask and
        distributed found, and how to install a working pair. The original error is chained
        as ``__cause__``.
    """
    for module in ("dask", "dask.array", "dask.dataframe", "distributed"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            missing = getattr(exc, "name", None) in MINIMUM_VERSIONS and \
                installed_version(exc.name) is None
            why = ("is not installed" if missing
                   else f"failed: {type(exc).__name__}: {exc}")
            raise ImportError(
                f"boostlib.dask needs dask and distributed releases that work together; "
                f"'import {module}' {why} (found {_found()}; boostlib.dask is tested with "
                f"dask >= {MINIMUM_VERSIONS['dask']} and distributed >= "
                f"{MINIMUM_VERSIONS['distributed']} of the same release). "
                f"Install a matching pair with: {INSTALL_HINT}") from exc
