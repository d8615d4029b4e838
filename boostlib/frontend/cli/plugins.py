"""``boostlib plugins``: the registered losses, samplers, update rules and metrics, with the
distribution providing each, and the plugins that failed to load."""
from __future__ import annotations

import argparse
import json


from ...plugin import registry


def _source(entry: registry.Entry) -> str:
    if entry.plugin in registry.BUILTIN_PLUGINS:
        return f"built-in ({entry.plugin})"
    if entry.distribution is None:
        return f"registered in-process ({entry.plugin})"
    return f"entry point {entry.plugin}"


def run_plugins(args: argparse.Namespace) -> int:
    kinds = {kind: registry.entries(kind) for kind in registry.KINDS}
    failures = registry.load_failures()
    if args.json:
        rows = [{"kind": e.kind, "name": e.name, "distribution": e.distribution,
                 "version": e.version, "plugin": e.plugin}
                for entries in kinds.values() for e in entries]
        print(json.dumps({"components": rows, "failures": failures,
                          "autoload_disabled": registry.autoload_disabled()}, indent=2))
        return 0
    rows = [(e.name, f"{e.distribution} {e.version}" if e.distribution else "-", _source(e))
            for entries in kinds.values() for e in entries]
    name_w = max([len(r[0]) for r in rows] + [16])
    dist_w = max([len(r[1]) for r in rows] + [16])
    for kind, entries in kinds.items():
        print(f"{kind}:")
        for name, dist, source in rows[:len(entries)]:
            print(f"  {name:<{name_w}}  {dist:<{dist_w}}  {source}")
        rows = rows[len(entries):]
    if registry.autoload_disabled():
        print("entry points were not loaded: BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD is set")
    print("failed to load:" + ("" if failures else " none"))
    for msg in failures:
        print(f"  {msg}")
    return 0
