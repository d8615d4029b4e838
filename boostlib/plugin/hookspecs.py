"""pluggy hook specifications of boostlib: the only place hooks are declared.

boostlib's project name, and the entry-point group third-party distributions use, is
``"boostlib"``. A plugin is any module or object with functions marked ``@hookimpl``::

    from boostlib.api import hookimpl

    @hookimpl
    def boostlib_add_losses():
        return {"boostlib_huber": HuberLoss}

and, to be found automatically once installed, an entry point in its ``pyproject.toml``::

    [project.entry-points.boostlib]
    boostlib_huber = "boostlib_huber"

Every registration hook returns a mapping ``name -> factory``. A factory is called with the
user's ``*_params`` as keyword arguments and returns an instance of the matching interface
of :mod:`boostlib.api` (usually the factory *is* the class). All implementations are called
and their mappings merged; a name registered twice is an error that names both providers.
The built-in losses, samplers and update rules register through these same hooks.

API versions
------------
:data:`API_VERSION` numbers the plugin API: these hook specs and the interfaces of
:mod:`boostlib.api`. It is bumped only by a change that breaks existing plugins. A plugin
declares the version it was written for with a module (or object) attribute::

    BOOSTLIB_API_VERSION = 1

The registry refuses a plugin whose declared version is not in
:data:`SUPPORTED_API_VERSIONS`, with a message naming the plugin; an installed plugin is then
reported like one that failed to import. A plugin that declares nothing is assumed to be
compatible.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Callable

import pluggy

__all__ = ["PROJECT_NAME", "hookspec", "hookimpl", "API_VERSION", "SUPPORTED_API_VERSIONS",
           "API_VERSION_ATTRIBUTE", "boostlib_add_losses", "boostlib_add_samplers",
           "boostlib_add_updates", "boostlib_add_metrics"]

PROJECT_NAME = "boostlib"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

#: Version of the plugin API implemented by this boostlib.
API_VERSION = 1
#: Plugin API versions this boostlib can run (a plugin written for another one is refused).
SUPPORTED_API_VERSIONS = (1,)
#: Name of the attribute a plugin sets to the API version it was written for.
API_VERSION_ATTRIBUTE = "BOOSTLIB_API_VERSION"


@hookspec
def boostlib_add_losses() -> Mapping[str, Callable[..., object]]:
    """Register losses.

    Returns
    -------
    Mapping[str, Callable[..., boostlib.api.Loss]]
        Names (lower_snake_case) to factories of :class:`boostlib.api.Loss`. The name is what
        users pass as ``loss=``; the factory receives ``loss_params`` as keyword arguments.
    """


@hookspec
def boostlib_add_samplers() -> Mapping[str, Callable[..., object]]:
    """Register row samplers.

    Returns
    -------
    Mapping[str, Callable[..., boostlib.api.Sampler]]
        Names to factories of :class:`boostlib.api.Sampler`. The factory receives
        ``subsample=`` and the entries of ``sampler_params`` as keyword arguments.
    """


@hookspec
def boostlib_add_updates() -> Mapping[str, Callable[..., object]]:
    """Register update rules (what one boosting iteration does).

    Returns
    -------
    Mapping[str, Callable[..., boostlib.api.UpdateRule]]
        Names to factories of :class:`boostlib.api.UpdateRule`. The factory receives
        ``update_params`` as keyword arguments.
    """


@hookspec
def boostlib_add_metrics() -> Mapping[str, Callable[..., object]]:
    """Register evaluation metrics (what ``eval_metric`` records on the validation sets).

    Returns
    -------
    Mapping[str, Callable[..., boostlib.api.Metric]]
        Names to factories of :class:`boostlib.api.Metric`. The factory receives the
        metric's parameters as keyword arguments (``create("metric", name, params)``).
    """
