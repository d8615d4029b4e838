"""Plugin registry: built-ins and the ``boostlib`` entry-point group, looked up by name.

The plugin manager is built lazily, on the first lookup, so ``import boostlib`` stays fast.
Built-in plugins are registered through the same hooks as third-party ones. Entry points
are loaded one by one: one that fails to import is reported with a warning naming it and is
left out. Set ``BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD=1`` to skip entry points altogether.
"""
from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Callable, Dict, List, Mapping, Optional

import pluggy

from . import api, hookspecs

BUILTIN_PLUGINS = ("boostlib.losses", "boostlib.samplers", "boostlib.updates")

KINDS: Dict[str, tuple] = {
    # kind: (hook name, interface)
    "loss": ("boostlib_add_losses", api.Loss),
    "sampler": ("boostlib_add_samplers", api.Sampler),
    "update": ("boostlib_add_updates", api.UpdateRule),
}


class PluginError(ValueError):
    """A plugin is missing, broken, registered twice or returned invalid values."""


@dataclass(frozen=True)
class Entry:
    """One registered component."""

    kind: str
    name: str
    factory: Callable[..., Any]
    provider: str


_lock = threading.Lock()
_state: Dict[str, Any] = {}


def _load_entry_points(pm: pluggy.PluginManager) -> List[str]:
    failures = []
    eps = metadata.entry_points()
    group = eps.select(group=hookspecs.PROJECT_NAME) if hasattr(eps, "select") else \
        eps.get(hookspecs.PROJECT_NAME, [])
    for ep in group:
        if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
            continue
        try:
            plugin = ep.load()
            pm.register(plugin, name=ep.name)
        except Exception as exc:  # a broken plugin must not break boostlib
            msg = f"boostlib plugin entry point {ep.name!r} ({ep.value}) failed to load: {exc!r}"
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
            failures.append(msg)
    return failures


def _provider_name(pm: pluggy.PluginManager, plugin: Any) -> str:
    name = pm.get_name(plugin) or repr(plugin)
    for dist_plugin, dist in pm.list_plugin_distinfo():
        if dist_plugin is plugin:
            return f"{name} ({dist.project_name} {dist.version})"
    return name


def _tables(pm: pluggy.PluginManager) -> Dict[str, Dict[str, Entry]]:
    tables: Dict[str, Dict[str, Entry]] = {}
    for kind, (hook_name, interface) in KINDS.items():
        table: Dict[str, Entry] = {}
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            provider = _provider_name(pm, impl.plugin)
            result = impl.function()
            if not isinstance(result, Mapping):
                raise PluginError(f"plugin {provider}: {hook_name}() must return a mapping "
                                  f"name -> factory, got {type(result).__name__}")
            for name, factory in result.items():
                if not (isinstance(name, str) and name.isidentifier() and name == name.lower()):
                    raise PluginError(f"plugin {provider}: {kind} name {name!r} must be a "
                                      "lower_snake_case identifier")
                if not callable(factory):
                    raise PluginError(f"plugin {provider}: {kind} {name!r} factory is not "
                                      "callable")
                if name in table:
                    raise PluginError(f"{kind} {name!r} is registered twice: by "
                                      f"{table[name].provider} and by {provider}")
                table[name] = Entry(kind, name, factory, provider)
        tables[kind] = table
    return tables


def _build() -> Dict[str, Any]:
    import importlib

    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    for modname in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(modname), name=modname)
    failures: List[str] = []
    if os.environ.get("BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD", "") in ("", "0"):
        failures = _load_entry_points(pm)
    pm.check_pending()
    return {"pm": pm, "tables": _tables(pm), "failures": failures}


def _get() -> Dict[str, Any]:
    with _lock:
        if not _state:
            _state.update(_build())
        return _state


def register_plugin(plugin: Any, name: Optional[str] = None) -> str:
    """Register an in-process plugin (a module or object with ``@hookimpl`` functions).

    Installed distributions are found through the ``boostlib`` entry-point group; this is for
    plugins defined in a script, a notebook or a test.

    Returns
    -------
    str
        The name the plugin is registered under (pass it to :func:`unregister_plugin`).

    Raises
    ------
    PluginError
        When one of its names is already registered (the registry is left unchanged).
    """
    state = _get()
    with _lock:
        pm = state["pm"]
        registered = pm.register(plugin, name=name)
        if registered is None:
            raise PluginError(f"plugin {name or plugin!r} is blocked or already registered")
        try:
            pm.check_pending()
            tables = _tables(pm)
        except Exception:
            pm.unregister(plugin)
            raise
        state["tables"] = tables
        return registered


def unregister_plugin(name: str) -> None:
    """Remove a plugin registered with :func:`register_plugin`."""
    state = _get()
    with _lock:
        state["pm"].unregister(name=name)
        state["tables"] = _tables(state["pm"])


def reset() -> None:
    """Forget the registry so the next lookup rebuilds it (after installing a plugin)."""
    with _lock:
        _state.clear()


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is invalid; expected one of {sorted(KINDS)}")


def available(kind: str) -> List[str]:
    """Names registered for ``kind`` ("loss", "sampler" or "update"), sorted."""
    _check_kind(kind)
    return sorted(_get()["tables"][kind])


def entries(kind: str) -> List[Entry]:
    """Registered components of ``kind`` with their providers, sorted by name."""
    _check_kind(kind)
    table = _get()["tables"][kind]
    return [table[n] for n in sorted(table)]


def load_failures() -> List[str]:
    """Messages of entry points that failed to load."""
    return list(_get()["failures"])


def create(kind: str, spec: Any, params: Optional[Mapping[str, Any]] = None,
           **extra: Any) -> Any:
    """An instance of a registered component, as the estimators build it.

    Parameters
    ----------
    kind : {"loss", "sampler", "update"}
    spec : str or instance
        A registered name, or an instance of the kind's interface (returned as is; then
        ``params`` must be empty).
    params : mapping, optional
        Keyword arguments for the factory (the estimator's ``*_params``).
    **extra
        More keyword arguments (e.g. ``subsample=`` for samplers).

    Raises
    ------
    PluginError
        Unknown name (the message lists the available ones), a factory that rejects its
        parameters, or a factory that does not return an instance of the interface.
    """
    _check_kind(kind)
    interface = KINDS[kind][1]
    params = dict(params or {})
    if isinstance(spec, interface):
        if params:
            raise PluginError(f"{kind}_params must be empty when {kind} is an instance")
        return spec
    if not isinstance(spec, str):
        raise PluginError(f"{kind}={spec!r} is invalid; expected a registered name or an "
                          f"instance of boostlib.api.{interface.__name__}")
    table = _get()["tables"][kind]
    if spec not in table:
        raise PluginError(f"{kind}={spec!r} is not registered; available: "
                          f"{', '.join(sorted(table)) or '(none)'}")
    entry = table[spec]
    try:
        obj = entry.factory(**params, **extra)
    except TypeError as exc:
        raise PluginError(f"{kind} {spec!r} (from {entry.provider}) rejected its parameters "
                          f"{sorted({**params, **extra})}: {exc}") from exc
    if not isinstance(obj, interface):
        raise PluginError(f"{kind} {spec!r} (from {entry.provider}) returned "
                          f"{type(obj).__name__}, not a boostlib.api.{interface.__name__}")
    return obj
