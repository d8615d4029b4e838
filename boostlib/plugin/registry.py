"""Plugin registry: built-ins and the ``boostlib`` entry-point group, looked up by name.

The plugin manager is built lazily, on the first lookup, so ``import boostlib`` stays fast.
Built-in plugins are registered through the same hooks as third-party ones. Entry points
are loaded one by one: one that fails to import, declares an unsupported API version
(``boostlib.hookspecs.SUPPORTED_API_VERSIONS``), implements a hook boostlib does not
know, implements none, or returns an invalid mapping is reported once with a warning naming
it and its distribution, and is left out (:func:`load_failures`). Set
``BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD=1`` to skip entry points altogether.
"""
from __future__ import annotations

import inspect
import os
import re
import threading
import types
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Callable

import pluggy

from .._messages import shown
from .._version import __version__
from . import api, hookspecs
from .callables import FunctionLoss, FunctionMetric, is_function

__all__ = ["BUILTIN_PLUGINS", "KINDS", "PluginError", "Entry", "check_api_version",
           "autoload_disabled", "register_plugin", "unregister_plugin", "reset", "available",
           "entries", "load_failures", "init_parameters", "create"]

BUILTIN_PLUGINS = ("boostlib.builtin.losses", "boostlib.builtin.log_link",
                   "boostlib.builtin.quantile", "boostlib.builtin.samplers",
                   "boostlib.builtin.updates", "boostlib.builtin.metrics",
                   "boostlib.builtin.ranking", "boostlib.builtin.survival")

KINDS: dict[str, tuple] = {
    # kind: (hook name, interface)
    "loss": ("boostlib_add_losses", api.Loss),
    "sampler": ("boostlib_add_samplers", api.Sampler),
    "update": ("boostlib_add_updates", api.UpdateRule),
    "metric": ("boostlib_add_metrics", api.Metric),
}


class PluginError(ValueError):
    """A plugin is missing, broken, registered twice or returned invalid values."""


@dataclass(frozen=True)
class Entry:
    """One registered component.

    Attributes
    ----------
    kind : str
        "loss", "sampler", "update" or "metric".
    name : str
        The registered name.
    factory : callable
        Builds an instance from the user's parameters.
    provider : str
        The plugin that registered it, as error messages name it (for an installed plugin:
        ``"entry_point (distribution version)"``).
    plugin : str
        The plugin's registration name (entry-point name, built-in module name, or the name
        given to :func:`register_plugin`).
    distribution, version : str or None
        The distribution that ships the plugin and its version; ``"boostlib"`` for the
        built-ins, None for plugins registered in-process.
    """

    kind: str
    name: str
    factory: Callable[..., Any]
    provider: str
    plugin: str = ""
    distribution: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class _Origin:
    distribution: str | None = None
    version: str | None = None


_lock = threading.Lock()
_state: dict[str, Any] = {}

_AUTOLOAD_ENV = "BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD"


def _normalize(dist_name: str) -> str:
    return re.sub(r"[-_.]+", "-", dist_name).lower()


def _boostlib_version() -> str:
    try:
        return metadata.version("boostlib")
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return __version__


def _stem_key(dist: metadata.Distribution) -> str | None:
    """A distribution's normalized name from its ``<name>-<version>.dist-info`` (or
    ``.egg-info``) directory name, without reading its metadata; None when the directory
    name does not give one."""
    path = getattr(dist, "_path", None)
    if path is None:
        return None
    stem, ext = os.path.splitext(os.path.basename(str(path).rstrip("/\\")))
    if ext not in (".dist-info", ".egg-info"):
        return None
    name = stem.partition("-")[0]
    return _normalize(name) if name else None


def _entry_points() -> Iterator[tuple[metadata.EntryPoint, _Origin]]:
    """Entry points of the ``boostlib`` group with the distribution that declares each.

    A distribution found twice on ``sys.path`` counts once (the first one, as for imports).
    Distributions are told apart by their directory names, as :mod:`importlib.metadata`
    does; only those that declare ``boostlib`` entry points (or whose directory name gives no
    name) have their metadata read, since parsing every installed distribution's metadata
    costs about a millisecond each.
    """
    seen = set()
    for dist in metadata.distributions():
        ours = [ep for ep in dist.entry_points if ep.group == hookspecs.PROJECT_NAME]
        key = _stem_key(dist)
        name = dist.metadata["Name"] if ours or key is None else None
        if key is None and name:
            key = _normalize(name)
        if key is not None:  # else (no name anywhere) it cannot be deduplicated: still loaded
            if key in seen:
                continue
            seen.add(key)
        label = name or f"<unnamed distribution at {getattr(dist, '_path', '?')}>"
        for ep in ours:
            yield ep, _Origin(label, dist.version)


def check_api_version(plugin: Any, who: str) -> None:
    """Refuse a plugin written for an API version this boostlib does not support.

    Parameters
    ----------
    plugin : module or object
        The plugin; it may declare ``BOOSTLIB_API_VERSION`` (an int).
    who : str
        How to name the plugin in the error message.

    Raises
    ------
    PluginError
        When the declared version is not an int or not in
        ``boostlib.hookspecs.SUPPORTED_API_VERSIONS``.
    """
    attr = hookspecs.API_VERSION_ATTRIBUTE
    declared = getattr(plugin, attr, None)
    if declared is None:
        return
    supported = hookspecs.SUPPORTED_API_VERSIONS
    if isinstance(declared, bool) or not isinstance(declared, int):
        raise PluginError(f"plugin {who}: {attr}={declared!r} is invalid; expected an int "
                          f"(this boostlib supports plugin API versions "
                          f"{', '.join(map(str, supported))})")
    if declared not in supported:
        newer = declared > max(supported)
        advice = ("upgrade boostlib or install a release of the plugin written for this API"
                  if newer else "upgrade the plugin (it was written for an older boostlib)")
        raise PluginError(f"plugin {who} was written for boostlib plugin API version "
                          f"{declared}, but boostlib {_boostlib_version()} supports "
                          f"{', '.join(map(str, supported))}: {advice}")


def _describe(ep: metadata.EntryPoint, origin: _Origin) -> str:
    return f"entry point {ep.name!r} ({ep.value}) of {origin.distribution} {origin.version}"


def _check_loaded_plugin(pm: pluggy.PluginManager, plugin: Any, provider: str) -> None:
    """Validate one just-registered plugin on its own (hooks known, mappings well formed)."""
    callers = pm.get_hookcallers(plugin) or []
    if not callers:
        raise PluginError(f"plugin {provider} implements no boostlib hook (mark its functions "
                          "with @boostlib.api.hookimpl)")
    for caller in callers:
        if not caller.has_spec():
            raise PluginError(f"plugin {provider} implements {caller.name}(), which is not a "
                              f"boostlib hook; known hooks: "
                              f"{', '.join(h for h, _ in KINDS.values())}")
    for kind, (hook_name, _) in KINDS.items():
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            if impl.plugin is plugin:
                _impl_entries(kind, hook_name, impl, provider)


def _load_entry_points(pm: pluggy.PluginManager, origins: dict[str, _Origin]) -> list[str]:
    failures = []
    for ep, origin in _entry_points():
        where = _describe(ep, origin)
        name = ep.name
        if pm.is_blocked(name):
            continue
        if pm.has_plugin(name):  # two distributions chose the same entry-point name
            name = f"{origin.distribution}:{ep.name}"
        provider = f"{name} ({origin.distribution} {origin.version})"
        try:
            plugin = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break boostlib
            failures.append(f"boostlib plugin {where} failed to load: {exc!r}")
            continue
        registered = False
        try:
            check_api_version(plugin, provider)
            registered = pm.register(plugin, name=name) is not None
            _check_loaded_plugin(pm, plugin, provider)
        except Exception as exc:  # noqa: BLE001 - reported, the plugin is left out
            if registered:
                pm.unregister(plugin)
            failures.append(f"boostlib plugin {where} was refused: {exc}")
            continue
        origins[name] = origin
    for msg in failures:
        warnings.warn(msg, RuntimeWarning, stacklevel=4)
    return failures


def _impl_entries(kind: str, hook_name: str, impl: Any,
                  provider: str) -> list[tuple[str, Callable[..., Any]]]:
    """The (name, factory) pairs one hook implementation returns, validated."""
    try:
        result = impl.function()
    except Exception as exc:
        raise PluginError(f"plugin {provider}: {hook_name}() raised {exc!r}") from exc
    if not isinstance(result, Mapping):
        raise PluginError(f"plugin {provider}: {hook_name}() must return a mapping "
                          f"name -> factory, got {type(result).__name__}")
    pairs = []
    for name, factory in result.items():
        if not (isinstance(name, str) and name.isidentifier() and name == name.lower()):
            raise PluginError(f"plugin {provider}: {kind} name {name!r} must be a "
                              "lower_snake_case identifier")
        if not callable(factory):
            raise PluginError(f"plugin {provider}: {kind} {name!r} factory is not callable")
        pairs.append((name, factory))
    return pairs


def _provider(pm: pluggy.PluginManager, plugin: Any,
              origins: Mapping[str, _Origin]) -> tuple[str, str, _Origin]:
    name = pm.get_name(plugin) or repr(plugin)
    origin = origins.get(name, _Origin())
    if name in BUILTIN_PLUGINS or origin.distribution is None:
        return name, name, origin
    return f"{name} ({origin.distribution} {origin.version})", name, origin


def _tables(pm: pluggy.PluginManager,
            origins: Mapping[str, _Origin]) -> dict[str, dict[str, Entry]]:
    tables: dict[str, dict[str, Entry]] = {}
    for kind, (hook_name, _) in KINDS.items():
        table: dict[str, Entry] = {}
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            provider, plugin_name, origin = _provider(pm, impl.plugin, origins)
            for name, factory in _impl_entries(kind, hook_name, impl, provider):
                if name in table:
                    raise PluginError(f"{kind} {name!r} is registered twice: by "
                                      f"{table[name].provider} and by {provider}")
                table[name] = Entry(kind, name, factory, provider, plugin_name,
                                    origin.distribution, origin.version)
        tables[kind] = table
    return tables


def autoload_disabled() -> bool:
    """True when ``BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD`` is set (to anything but "" or "0")."""
    return os.environ.get(_AUTOLOAD_ENV, "") not in ("", "0")


def _build() -> dict[str, Any]:
    import importlib

    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    builtin = _Origin("boostlib", _boostlib_version())
    origins: dict[str, _Origin] = {}
    for modname in BUILTIN_PLUGINS:
        pm.register(importlib.import_module(modname), name=modname)
        origins[modname] = builtin
    failures: list[str] = []
    if not autoload_disabled():
        failures = _load_entry_points(pm, origins)
    pm.check_pending()
    return {"pm": pm, "origins": origins, "tables": _tables(pm, origins),
            "failures": failures}


def _get() -> dict[str, Any]:
    with _lock:
        if not _state:
            _state.update(_build())
        return _state


def register_plugin(plugin: Any, name: str | None = None) -> str:
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
        When one of its names is already registered, or it declares a plugin API version
        (``BOOSTLIB_API_VERSION``) this boostlib does not support (the registry is left
        unchanged).
    """
    state = _get()
    with _lock:
        pm = state["pm"]
        check_api_version(plugin, name or repr(plugin))
        try:
            registered = pm.register(plugin, name=name)
        except ValueError as exc:       # pluggy: the object or the name is registered already
            raise PluginError(f"cannot register plugin {name or plugin!r}: {exc}") from None
        if registered is None:
            raise PluginError(f"plugin {name or plugin!r} is blocked or already registered")
        try:
            pm.check_pending()
            tables = _tables(pm, state["origins"])
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
        state["tables"] = _tables(state["pm"], state["origins"])


def reset() -> None:
    """Forget the registry so the next lookup rebuilds it (after installing a plugin)."""
    with _lock:
        _state.clear()


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is invalid; expected one of {sorted(KINDS)}")


def available(kind: str | None = None) -> list[str] | dict[str, list[str]]:
    """Names registered for ``kind``, sorted; without ``kind``, those of every kind.

    Parameters
    ----------
    kind : {"loss", "sampler", "update", "metric"}, optional

    Returns
    -------
    list of str or dict
        The sorted names of ``kind``; without it, ``{kind: sorted names}`` for every kind,
        e.g. ``{"loss": ["gamma", ...], "sampler": [...], "update": [...], "metric": [...]}``.
    """
    if kind is None:
        tables = _get()["tables"]
        return {k: sorted(tables[k]) for k in KINDS}
    _check_kind(kind)
    return sorted(_get()["tables"][kind])


def entries(kind: str) -> list[Entry]:
    """Registered components of ``kind`` with their providers, sorted by name."""
    _check_kind(kind)
    table = _get()["tables"][kind]
    return [table[n] for n in sorted(table)]


def load_failures() -> list[str]:
    """Messages of entry points that failed to load or were refused (one per entry point)."""
    return list(_get()["failures"])


def init_parameters(cls: type) -> list[inspect.Parameter]:
    """The parameters of a plugin class's constructor after ``self``: none when it is a
    built-in slot (such as ``object.__init__``).

    ``inspect.signature`` of a built-in slot parses its text signature with ``ast.parse``,
    which CPython before 3.11.8 does not guard against threads (``SystemError: AST
    constructor recursion depth mismatch``). Trainings in threads (Dask workers, a thread
    pool) read their plugins' parameters, so built-in slots are not parsed.
    """
    init = cls.__init__
    if isinstance(init, (types.WrapperDescriptorType, types.MethodWrapperType)):
        return []
    return list(inspect.signature(init).parameters.values())[1:]


def create(kind: str, spec: Any, params: Mapping[str, Any] | None = None,
           **extra: Any) -> Any:
    """An instance of a registered component, as the estimators build it.

    Parameters
    ----------
    kind : {"loss", "sampler", "update", "metric"}
    spec : str, instance or function
        A registered name, an instance of the kind's interface (returned as is; then
        ``params`` must be empty), or for a loss or a metric a plain function (wrapped,
        see :mod:`boostlib.plugin.callables`).
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
    if kind in ("loss", "metric") and is_function(spec):
        if params:
            raise PluginError(f"{kind}_params must be empty when {kind} is a function")
        return FunctionLoss(spec) if kind == "loss" else FunctionMetric(spec)
    if isinstance(spec, interface):
        if params:
            raise PluginError(f"{kind}_params must be empty when {kind} is an instance")
        return spec
    if not isinstance(spec, str):
        raise PluginError(f"{kind}={shown(spec)} is invalid; expected a registered name or an "
                          f"instance of boostlib.api.{interface.__name__}")
    table = _get()["tables"][kind]
    if spec not in table:
        raise PluginError(f"{kind}={shown(spec)} is not registered; available: "
                          f"{', '.join(sorted(table)) or '(none)'}")
    entry = table[spec]
    try:
        obj = entry.factory(**params, **extra)
    except TypeError as exc:
        raise PluginError(f"{kind} {spec!r} (from {entry.provider}) rejected its parameters "
                          f"{shown(sorted({**params, **extra}))}: {exc}") from exc
    if not isinstance(obj, interface):
        raise PluginError(f"{kind} {spec!r} (from {entry.provider}) returned "
                          f"{type(obj).__name__}, not a boostlib.api.{interface.__name__}")
    return obj
