"""The ``boostlib`` command: ``demo`` and ``plugins`` (``train``/``predict`` come later)."""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import List, Optional

from . import __version__, registry


def _demo(args: argparse.Namespace) -> int:
    from .datasets import load_higgs
    from .estimators import BoostClassifier
    from .metrics import accuracy, logloss, roc_auc

    X, y = load_higgs("train")
    Xt, yt = load_higgs("test")
    print(f"boostlib {__version__} demo: HIGGS subset bundled with boostlib "
          f"({X.shape[0]} train / {Xt.shape[0]} test rows, {X.shape[1]} features)")
    print(f"{args.n_estimators} iterations, learning rate {args.learning_rate}, depth "
          f"{args.max_depth}, random_state {args.random_state}\n")
    configs = []
    for policy in ("symmetric", "depthwise"):
        for update in registry.available("update"):
            configs.append(dict(grow_policy=policy, update=update))
        for sampler in registry.available("sampler"):
            configs.append(dict(grow_policy=policy, update="sgb", sampler=sampler,
                                subsample=0.5))
    header = (f"{'grow policy':<11} {'update':<7} {'sampler':<16} {'trees':>5} "
              f"{'fit s':>6} {'logloss':>8} {'AUC':>7} {'accuracy':>8}")
    print(header)
    print("-" * len(header))
    for i, cfg in enumerate(configs, 1):
        model = BoostClassifier(n_estimators=args.n_estimators, learning_rate=args.learning_rate,
                                max_depth=args.max_depth, random_state=args.random_state,
                                n_jobs=args.n_jobs, **cfg)
        t0 = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - t0
        p = model.predict_proba(Xt)[:, 1]
        sampler = cfg.get("sampler") or "-"
        if cfg.get("sampler"):
            sampler += f" ({cfg['subsample']:g})"
        print(f"{cfg['grow_policy']:<11} {cfg['update']:<7} {sampler:<16} {model.n_trees_:>5} "
              f"{fit_s:>6.2f} {logloss(yt, p):>8.4f} {roc_auc(yt, p):>7.4f} "
              f"{accuracy(yt, model.predict(Xt)):>8.4f}", flush=True)
    return 0


def _source(entry: registry.Entry) -> str:
    if entry.plugin in registry.BUILTIN_PLUGINS:
        return f"built-in ({entry.plugin})"
    if entry.distribution is None:
        return f"registered in-process ({entry.plugin})"
    return f"entry point {entry.plugin}"


def _plugins(args: argparse.Namespace) -> int:
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``boostlib`` command."""
    parser = argparse.ArgumentParser(
        prog="boostlib", description="Gradient boosting with pluggable losses, samplers and "
                                     "update rules.")
    parser.add_argument("--version", action="version", version=f"boostlib {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="train on the bundled HIGGS subset and compare the "
                                       "available update rules and samplers")
    demo.add_argument("--n-estimators", type=int, default=200)
    demo.add_argument("--learning-rate", type=float, default=0.1)
    demo.add_argument("--max-depth", type=int, default=6)
    demo.add_argument("--random-state", type=int, default=0)
    demo.add_argument("--n-jobs", type=int, default=None)
    demo.set_defaults(func=_demo)
    plugins = sub.add_parser("plugins", help="list registered losses, samplers and update "
                                             "rules with the distribution (and version) "
                                             "providing each, and plugins that failed to load")
    plugins.add_argument("--json", action="store_true", help="print JSON instead of a table")
    plugins.set_defaults(func=_plugins)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the ``boostlib`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, OSError) as exc:
        print(f"boostlib: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
