"""The ``boostlib`` command's parser and entry point
(:func:`~boostlib.frontend.cli.command.main`)."""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional


from ..._version import __version__
from .columns import rounds_option
from .demo import run_demo
from .export import add_export
from .options import one_line, with_option
from .plugins import run_plugins
from .predict import add_predict
from .train import add_train


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (the usage itself can be long)."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        if message.endswith("expected one argument"):
            message += " (a value starting with '-' must be attached: --option=-VALUE)"
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``boostlib`` command."""
    parser = _Parser(
        prog="boostlib", description="Gradient boosting with pluggable losses, samplers and "
                                     "update rules.")
    parser.add_argument("--version", action="version", version=f"boostlib {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=_Parser)
    demo = sub.add_parser("demo", help="train on the bundled HIGGS subset and compare the "
                                       "available update rules and samplers, then on a "
                                       "synthetic 5-class problem with both tree kinds")
    demo.add_argument("--n-estimators", type=int, default=200)
    demo.add_argument("--learning-rate", type=float, default=0.1)
    demo.add_argument("--max-depth", type=int, default=6)
    demo.add_argument("--random-state", type=int, default=0)
    demo.add_argument("--n-jobs", type=int, default=None)
    demo.add_argument("--early-stopping-rounds", type=rounds_option, default=20, metavar="N",
                      help="HIGGS part: hold out 20%% of the training rows and stop each "
                           "model after N iterations without improvement on them, keeping "
                           "its best iteration (default: 20; 0: no early stopping, every "
                           "model runs --n-estimators iterations on all training rows)")
    demo.set_defaults(func=run_demo)
    add_train(sub)
    add_predict(sub)
    add_export(sub)
    plugins = sub.add_parser("plugins", help="list registered losses, samplers and update "
                                             "rules with the distribution (and version) "
                                             "providing each, and plugins that failed to load")
    plugins.add_argument("--json", action="store_true", help="print JSON instead of a table")
    plugins.set_defaults(func=run_plugins)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the ``boostlib`` console script.

    Returns
    -------
    int
        0 on success, 2 for a user error (reported in one line on stderr), 130 when
        interrupted.
    """
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # e.g. ``boostlib predict ... | head``
        sys.stderr.close()
        return 0
    except KeyboardInterrupt as exc:    # a save says whether its file was complete
        print(f"boostlib: {exc}" if str(exc) else "boostlib: interrupted", file=sys.stderr)
        return 130
    except (ValueError, TypeError, OSError, FloatingPointError, OverflowError) as exc:
        print(f"boostlib: error: {with_option(one_line(exc))}", file=sys.stderr)
        return 2
    except MemoryError:
        print("boostlib: error: out of memory; expected smaller data or a smaller model",
              file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
