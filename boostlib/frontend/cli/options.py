"""The estimator parameters as ``train`` options (``--kebab-case``, generated from the
parameter table, :data:`boostlib.engine.params.PARAMETERS`), and error messages led by the
option they are about."""
from __future__ import annotations

import argparse
import json
import re
from typing import Any, Callable, Dict, List, Tuple

from ...engine.params import Parameter, parameters_of
from ...io.tables import HEADER_CHOICES
from .columns import name_list


TASKS = ("classification", "regression", "ranking")
#: ``train``'s own options; an estimator parameter must not use these names.
TRAIN_OPTIONS = ("data", "target", "target_upper", "output", "task", "eval_fraction",
                 "header", "sep", "categorical", "drop", "group", "offset", "cv", "cv_output",
                 "oof_output")
#: Estimator parameters set by a ``train`` option of their own instead of a generated one
#: (their ``cli`` is None in the table): ``categorical_features`` is filled from the columns
#: read as categorical (text columns and ``--categorical``, also spelled
#: ``--categorical-features``).
TRAIN_SET_PARAMETERS = ("categorical_features",)


# -- estimator options generated from the parameter table ----------------------------------
def estimator_classes():
    from ..estimators import BoostClassifier, BoostRegressor, BoostRanker
    return BoostClassifier, BoostRegressor, BoostRanker


def _json_object(text: str) -> Dict[str, Any]:
    """argparse type: a JSON object (plugin parameters)."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"invalid JSON {text!r} ({exc})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object such as "
                                         f"'{{\"name\": 1}}', got {text!r}")
    return value


def _json_or_text(text: str) -> Any:
    """argparse type for untyped parameters: a JSON value (``0``, ``null``) or the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _boolean(text: str) -> bool:
    """argparse type: true/false, yes/no, 1/0."""
    value = text.strip().lower()
    if value in ("true", "yes", "1"):
        return True
    if value in ("false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


#: ``Parameter.cli`` kind -> (argparse type, metavar).
_READERS: Dict[str, Tuple[Callable[[str], Any], str]] = {
    "int": (int, "N"), "float": (float, "X"), "bool": (_boolean, "BOOL"),
    "name": (str, "NAME"), "choice": (str, "CHOICE"), "object": (_json_object, "JSON"),
    "names": (name_list, "NAME[,NAME...]"), "value": (_json_or_text, "VALUE"),
}


def estimator_parameters() -> List[Parameter]:
    """The estimator parameters (shared by all estimators) that ``train`` offers as
    options: those of the table with a ``cli`` kind."""
    return [p for p in parameters_of("train", "estimator") if p.cli is not None]


def add_estimator_options(parser: argparse.ArgumentParser) -> List[str]:
    """Add one ``--kebab-case`` option per estimator parameter; return the parameter names.

    Options left out keep the estimator's default (argparse.SUPPRESS), so what the model
    records is exactly what the user asked for.
    """
    group = parser.add_argument_group(
        "estimator parameters", "every parameter of BoostClassifier, BoostRegressor and "
                                "BoostRanker (categorical_features is set by --categorical); "
                                "plugin parameters are JSON objects")
    names = []
    for p in estimator_parameters():
        if p.name in TRAIN_OPTIONS:
            raise RuntimeError(f"estimator parameter {p.name!r} clashes with a train option")
        kind, metavar = _READERS[p.cli]
        if p.cli == "choice":
            metavar = "{" + ",".join(p.choices or ()) + "}"
        group.add_argument(f"--{p.name.replace('_', '-')}", dest=p.name, type=kind,
                           metavar=metavar, default=argparse.SUPPRESS,
                           help=p.help.replace("%", "%%"))
        names.append(p.name)
    return names


def add_data_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--header", choices=HEADER_CHOICES, default="auto",
                        help="whether the first CSV row names the columns; auto (default) "
                             "says yes when a text field stands above a number. Without a "
                             "header, columns are named 0, 1, 2, ...")
    parser.add_argument("--sep", default=None, metavar="SEP",
                        help="CSV field separator: one character, several (such as '::'), "
                             "or '\\t' for a tab (default: tab for .tsv/.tab files, else "
                             "comma). Spaces after a separator are skipped, so ', ' (as in "
                             "the raw UCI Adult files) is the same as ','")


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _option_names() -> Dict[str, str]:
    """``parameter -> option`` for the estimator parameters and their plugin parameters."""
    names = {p.name: "--" + p.name.replace("_", "-") for p in estimator_parameters()}
    names.update({name: "--categorical" for name in TRAIN_SET_PARAMETERS})
    return names


def with_option(message: str) -> str:
    """``message`` led by the option it is about, when it names an estimator parameter as
    ``name=value`` or a plugin that rejected its parameters (``--max-depth: max_depth=0 is
    invalid ...``)."""
    rejected = re.match(r"(loss|sampler|update) '[^']*' \(from [^)]*\) rejected its parameters",
                        message) or \
        re.match(r"(loss|sampler|update)(?: rule)? '[^']*': \w+=.* is invalid", message)
    if rejected:
        return f"--{rejected.group(1)}-params: {message}"
    match = re.match(r"(\w+)(?:=|: )", message)
    option = _option_names().get(match.group(1)) if match else None
    return f"{option}: {message}" if option else message
