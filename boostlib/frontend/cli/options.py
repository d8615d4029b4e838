"""The estimator parameters as ``train`` options (``--kebab-case``, generated from the
estimators' signature), and error messages led by the option they are about."""
from __future__ import annotations

import argparse
import inspect
import json
import re
from typing import Any, Callable, Dict, List, Optional, Tuple


from ...io.tables import HEADER_CHOICES
from .columns import name_list


PLUGIN_KINDS = ("loss", "sampler", "update")
TASKS = ("classification", "regression", "ranking")
#: ``train``'s own options; an estimator parameter must not use these names.
TRAIN_OPTIONS = ("data", "target", "output", "task", "eval_fraction", "header", "sep",
                 "categorical", "drop", "group")
#: Estimator parameters set by a ``train`` option of their own instead of a generated one:
#: ``categorical_features`` is filled from the columns read as categorical (text columns and
#: ``--categorical``, also spelled ``--categorical-features``).
TRAIN_SET_PARAMETERS = ("categorical_features",)


# -- estimator options generated from the signature ------------------------------------------
def estimator_classes():
    from ..estimators import BoostClassifier, BoostRanker, BoostRegressor
    return BoostClassifier, BoostRegressor, BoostRanker


def _param_docs(doc: str) -> Dict[str, Tuple[str, str]]:
    """``name -> (type line, first sentence)`` from a numpydoc ``Parameters`` section."""
    section = re.split(r"\n\s*Parameters\n\s*-+\n", doc or "", maxsplit=1)[-1]
    section = re.split(r"\n\s*\n\s*[A-Z][a-z]+\n\s*-+\n", section, maxsplit=1)[0]
    docs: Dict[str, Tuple[str, str]] = {}
    pattern = r"^    (\w+) : ([^\n]*)\n((?:        [^\n]*\n?)*)"
    for match in re.finditer(pattern, section, re.M):
        text = " ".join(match.group(3).replace("``", "").split())
        text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)      # :class:`boostlib.api.Metric`
        first = re.split(r"(?<=\.)\s", text, maxsplit=1)[0]
        # a parameter with choices: its short description whole (what each choice does, as
        # for leaf_estimation); else the first sentence
        whole = _choices(match.group(2)) and len(text) <= 200
        docs[match.group(1)] = (match.group(2), text if whole else first)
    return docs


def _choices(type_line: str) -> Optional[List[str]]:
    """``["a", "b"]`` from a numpydoc type such as ``{"a", "b"}, default "a"``."""
    match = re.match(r"\{([^}]*)\}", type_line)
    return re.findall(r'"([^"]+)"', match.group(1)) if match else None


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


def _option_type(annotation: Any, default: Any,
                 type_line: str) -> Tuple[Callable[[str], Any], str]:
    """(argparse type, metavar) of a parameter from its (string) annotation, its default and
    its documented type."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    if text in ("", inspect.Parameter.empty.__name__):
        text = type(default).__name__ if default is not None else "Any"
    inner = re.fullmatch(r"Optional\[(.*)\]", text)
    text = inner.group(1) if inner else text
    if re.match(r"(Dict|dict|Mapping)\b", text):
        return _json_object, "JSON"
    if text == "Any" and type_line.startswith("int"):
        text = "int"
    simple = {"bool": (_boolean, "BOOL"), "int": (int, "N"), "float": (float, "X"),
              "str": (str, "TEXT")}
    kind, metavar = simple.get(text, (_json_or_text, "VALUE"))
    choices = _choices(type_line)
    return kind, "{" + ",".join(choices) + "}" if choices else metavar


#: Estimator parameters with no meaning for one ``train`` run: every run fits a new
#: estimator, so there is nothing to continue (``warm_start``).
NOT_OPTIONS = ("warm_start",)


def estimator_parameters() -> List[inspect.Parameter]:
    """The estimators' constructor parameters (shared by all estimators) that ``train``
    offers as options."""
    sig = inspect.signature(estimator_classes()[1].__init__)
    return [p for p in sig.parameters.values() if p.name != "self"
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in NOT_OPTIONS]


def _special_help(name: str) -> Optional[str]:
    for kind in PLUGIN_KINDS:
        if name == kind:
            label = "update rule" if kind == "update" else kind
            return (f"registered {label} name (see 'boostlib plugins')" +
                    (", default: logloss for two classes, multiclass for more, mse for "
                     "regression"
                     if kind == "loss" else ""))
        if name == f"{kind}_params":
            return f"the {kind}'s parameters as a JSON object, e.g. '{{\"name\": value}}'"
    return _COMMAND_LINE_HELP.get(name)


#: Help of parameters whose docstring speaks of the Python API (``eval_set``, instances).
_COMMAND_LINE_HELP = {
    "eval_metric": "comma-separated registered metric names (see 'boostlib plugins'), "
                   "e.g. auc or auc,logloss, recorded on the --eval-fraction rows every "
                   "iteration; the first one drives --early-stopping-rounds",
    "early_stopping_rounds": "stop when the score on the held-out rows (needs "
                             "--eval-fraction) has not improved for N iterations, and keep "
                             "the model of the best iteration",
    "random_state": "seed of every random stream and of the --eval-fraction rows: the same N "
                    "gives the same model, bit for bit. Without it, a fit that uses randomness "
                    "(a sampler or --subsample below 1, --random-strength, --update sglb, "
                    "more than 200,000 rows to bin) differs from run to run, and the "
                    "held-out rows are drawn with seed 0",
}


def add_estimator_options(parser: argparse.ArgumentParser) -> List[str]:
    """Add one ``--kebab-case`` option per estimator parameter; return the parameter names.

    Options left out keep the estimator's default (argparse.SUPPRESS), so what the model
    records is exactly what the user asked for.
    """
    docs = _param_docs(estimator_classes()[1].__doc__)
    group = parser.add_argument_group(
        "estimator parameters", "every parameter of BoostClassifier, BoostRegressor and "
                                "BoostRanker (categorical_features is set by --categorical); "
                                "plugin parameters are JSON objects")
    names = []
    for p in estimator_parameters():
        if p.name in TRAIN_OPTIONS:
            raise RuntimeError(f"estimator parameter {p.name!r} clashes with a train option")
        if p.name in TRAIN_SET_PARAMETERS:
            continue
        type_line, sentence = docs.get(p.name, ("", ""))
        kind, metavar = _option_type(p.annotation, p.default, type_line)
        if p.name in PLUGIN_KINDS:
            kind, metavar = str, "NAME"
        if p.name == "eval_metric":
            kind, metavar = name_list, "NAME[,NAME...]"
        help_text = (_special_help(p.name) or sentence or p.name.replace("_", " ")).rstrip(".")
        if p.name != "loss" and p.default is not inspect.Parameter.empty \
                and "default" not in help_text:
            shown = "none" if p.default is None else json.dumps(p.default)
            help_text = f"{help_text} (default: {shown})"
        group.add_argument(f"--{p.name.replace('_', '-')}", dest=p.name, type=kind,
                           metavar=metavar, default=argparse.SUPPRESS,
                           help=help_text.replace("%", "%%"))
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
    names["categorical_features"] = "--categorical"
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
