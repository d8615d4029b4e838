"""Import an optional dependency for a test, or skip the test with the reason.

``pytest.importorskip`` skips only when a module is missing (since pytest 8.2 an
``ImportError`` other than ``ModuleNotFoundError`` is re-raised, so a module that is
installed but broken, say a ``distributed`` release that does not match the installed
``dask``, aborts collection of the whole suite). :func:`importorskip` skips on any
``ImportError`` and puts its message in the skip reason, so a user's run reports which part it
could not test and why, and the rest of the suite runs.

CI sets ``BOOSTLIB_REQUIRE_OPTIONAL=1``: there every optional dependency is installed on
purpose, so a module that is installed but fails to import fails the test instead of
skipping it.
"""
from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Optional

import pytest


def importorskip(name: str, reason: Optional[str] = None) -> ModuleType:
    """Return the module ``name``, or skip the calling test (module) when it cannot be imported.

    Parameters
    ----------
    name : str
        The dotted module name.
    reason : str, optional
        Said in the skip reason before the import error.
    """
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing = isinstance(exc, ModuleNotFoundError) and exc.name is not None \
            and name.split(".")[0] == exc.name.split(".")[0]
        if not missing and os.environ.get("BOOSTLIB_REQUIRE_OPTIONAL"):
            raise
        prefix = f"{reason}: " if reason else ""
        pytest.skip(f"{prefix}could not import {name}: {type(exc).__name__}: {exc}",
                    allow_module_level=True)
