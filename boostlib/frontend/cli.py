"""The ``boostlib`` command: ``demo``, ``train``, ``predict``, ``export`` (in
:mod:`~boostlib.frontend.cli_export`) and ``plugins``.

``train`` exposes every estimator parameter as a ``--kebab-case`` option generated from the
estimators' signature (types from the annotations, help from the numpydoc docstring), so a
new parameter appears on the command line without changes here. User errors (missing file,
unknown column or plugin, bad JSON or value) end with a one-line message on stderr and exit
status 2, never a traceback. Without ``--task``, ``train`` infers classification (binary
or multiclass) or regression from the target column (:func:`infer_task`) and says which on
stderr. Text feature columns, and those named by ``--categorical``, are categorical features
(:func:`feature_columns`); ``predict`` reads them the same way, matching levels by their text.
"""
from __future__ import annotations

import argparse
import csv
import errno
import inspect
import json
import os
import re
import stat
import sys
import textwrap
import time
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import __version__
from ..plugin import registry
from ..io.tables import HEADER_CHOICES, MISSING_TOKENS, NamedMatrix, Table, read_table

PLUGIN_KINDS = ("loss", "sampler", "update")
TASKS = ("classification", "regression", "ranking")
#: ``train``'s own options; an estimator parameter must not use these names.
TRAIN_OPTIONS = ("data", "target", "output", "task", "eval_fraction", "header", "sep",
                 "categorical", "drop", "group")
#: Estimator parameters set by a ``train`` option of their own instead of a generated one:
#: ``categorical_features`` is filled from the columns read as categorical (text columns and
#: ``--categorical``, also spelled ``--categorical-features``).
TRAIN_SET_PARAMETERS = ("categorical_features",)


def _demo(args: argparse.Namespace) -> int:
    """``boostlib demo``: the binary HIGGS comparison, then the multiclass part."""
    _demo_binary(args)
    _demo_multiclass(args)
    return 0


#: The demo's HIGGS part holds out this fraction of the training rows for early stopping.
DEMO_VALID_FRACTION = 0.2
#: Update rules with momentum: they reach a low training loss in far fewer iterations than
#: sgb, so a fixed number of iterations overfits them first.
ACCELERATED_UPDATES = ("agbm", "agbmr", "vagbm")


def _demo_binary(args: argparse.Namespace) -> None:
    """HIGGS: every update rule and sampler with both tree kinds.

    With ``--early-stopping-rounds N`` (default 20; 0 turns it off), DEMO_VALID_FRACTION
    of the training rows are held out and every model is cut back to its best iteration on
    them. Without it, every model runs ``--n-estimators`` iterations, and at the default
    settings the accelerated rules (ACCELERATED_UPDATES) overfit far beyond the constant
    model's logloss (their training loss falls about four times faster than sgb's: at 200
    iterations of learning rate 0.1, agbm's test logloss was 1.66, its best, 0.55, at
    iteration 55). Rows worse than the constant model are marked and explained.
    """
    from ..datasets import load_higgs
    from .estimators import BoostClassifier
    from ..engine.metrics import accuracy, logloss, roc_auc

    X, y = load_higgs("train")
    Xt, yt = load_higgs("test")
    rounds = args.early_stopping_rounds
    fit_rows, valid_rows = _split(X.shape[0], DEMO_VALID_FRACTION if rounds else 0.0,
                                  args.random_state)
    print(f"boostlib {__version__} demo: HIGGS subset bundled with boostlib "
          f"({X.shape[0]} train / {Xt.shape[0]} test rows, {X.shape[1]} features)")
    if rounds:
        print(f"at most {args.n_estimators} iterations, learning rate {args.learning_rate}, "
              f"depth {args.max_depth}, random_state {args.random_state}\nearly stopping: "
              f"fitted on {fit_rows.size} training rows, cut back to the best iteration on "
              f"the other {valid_rows.size} (patience {rounds})")
    else:
        print(f"{args.n_estimators} iterations, learning rate {args.learning_rate}, depth "
              f"{args.max_depth}, random_state {args.random_state}, no early stopping")
    rate = float(np.mean(y[fit_rows]))
    constant = logloss(yt, np.full(yt.size, rate))
    print(f"constant model (the training rows' positive rate, {rate:.4f}): logloss "
          f"{constant:.4f}, AUC 0.5000, accuracy "
          f"{accuracy(yt, np.full(yt.size, float(rate > 0.5))):.4f}\n")
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
    worse = []
    for i, cfg in enumerate(configs, 1):
        model = BoostClassifier(n_estimators=args.n_estimators, learning_rate=args.learning_rate,
                                max_depth=args.max_depth, random_state=args.random_state,
                                n_jobs=args.n_jobs, early_stopping_rounds=rounds or None,
                                **cfg)
        eval_set = None if valid_rows is None else [(X[valid_rows], y[valid_rows])]
        t0 = time.perf_counter()
        model.fit(X[fit_rows], y[fit_rows], eval_set=eval_set)
        fit_s = time.perf_counter() - t0
        p = model.predict_proba(Xt)[:, 1]
        sampler = cfg.get("sampler") or "-"
        if cfg.get("sampler"):
            sampler += f" ({cfg['subsample']:g})"
        loss = logloss(yt, p)
        if loss > constant:
            worse.append(cfg["update"])
        print(f"{cfg['grow_policy']:<11} {cfg['update']:<7} {sampler:<16} {model.n_trees_:>5} "
              f"{fit_s:>6.2f} {loss:>8.4f} {roc_auc(yt, p):>7.4f} "
              f"{accuracy(yt, model.predict(Xt)):>8.4f}" + (" *" if loss > constant else ""),
              flush=True)
    notes = ["trees: those kept; agbm and agbmr fit two trees per iteration."]
    accelerated = [u for u in ACCELERATED_UPDATES if u in registry.available("update")]
    if worse:
        why = (f"the accelerated update rules ({', '.join(accelerated)}) fit the training "
               "rows in far fewer iterations than sgb, so at this learning rate they overfit "
               "long before the last iteration" if set(worse) <= set(accelerated) else
               "the model overfits the training rows at these settings")
        notes.append(f"* worse than the constant model: {why}. Keep early stopping on "
                     "(--early-stopping-rounds N), or lower --n-estimators or "
                     "--learning-rate.")
    elif rounds and accelerated:
        notes.append(f"Early stopping picks each model's number of iterations. The "
                     f"accelerated update rules ({', '.join(accelerated)}) fit the training "
                     "rows in far fewer iterations than sgb: without early stopping "
                     "(--early-stopping-rounds 0) they overfit, and at the default 200 "
                     "iterations their test logloss ends above the constant model's.")
    print("\n" + "\n".join(textwrap.fill(note, 90, subsequent_indent="  ") for note in notes))


#: Size of the demo's multiclass problem.
DEMO_CLASSES, DEMO_FEATURES, DEMO_ROWS = 5, 10, (4000, 1000)


def multiclass_demo_data(n_rows: int, seed: int, n_classes: int = DEMO_CLASSES,
                         n_features: int = DEMO_FEATURES
                         ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A synthetic multiclass problem whose true class probabilities are known.

    Features are standard normal; class ``k`` has the score ``0.8 * X @ W[:, k] +
    sin(2 * X[:, k])`` (``W`` fixed, standard normal), and the label is the class of the
    largest score plus Gumbel noise, so the class probabilities are the softmax of the
    scores.

    Parameters
    ----------
    n_rows : int
    seed : int
        Seed of the rows (the score weights do not depend on it).
    n_classes : int, default DEMO_CLASSES
        At most ``n_features``.
    n_features : int, default DEMO_FEATURES

    Returns
    -------
    X : ndarray of shape (n_rows, n_features)
    y : ndarray of shape (n_rows,)
        Labels ``0 .. n_classes - 1`` (int64).
    proba : ndarray of shape (n_rows, n_classes)
        The true class probabilities.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    weights = np.random.default_rng(20240607).normal(size=(n_features, n_classes))
    score = 0.8 * X @ weights + np.sin(2.0 * X[:, :n_classes])
    y = np.argmax(score + rng.gumbel(size=score.shape), axis=1).astype(np.int64)
    proba = np.exp(score - score.max(axis=1, keepdims=True))
    return X, y, proba / proba.sum(axis=1, keepdims=True)


def _demo_multiclass(args: argparse.Namespace) -> None:
    """A synthetic 5-class problem: softmax loss with both tree kinds."""
    from .estimators import BoostClassifier
    from ..engine.metrics import accuracy, multiclass_logloss

    X, y, _ = multiclass_demo_data(DEMO_ROWS[0], seed=1)
    Xt, yt, truth = multiclass_demo_data(DEMO_ROWS[1], seed=2)
    prior = np.bincount(y, minlength=DEMO_CLASSES) / y.size
    print(f"\nmulticlass: {DEMO_CLASSES} classes, synthetic numpy data ({X.shape[0]} train / "
          f"{Xt.shape[0]} test rows, {X.shape[1]} features), loss multiclass (softmax)")
    print(f"on the test rows, the class frequencies score multiclass logloss "
          f"{multiclass_logloss(yt, np.tile(prior, (yt.size, 1))):.4f}; the true "
          f"probabilities {multiclass_logloss(yt, truth):.4f} (accuracy "
          f"{accuracy(yt, truth.argmax(axis=1)):.4f})\n")
    header = (f"{'grow policy':<11} {'trees':>5} {'fit s':>6} {'multiclass logloss':>18} "
              f"{'accuracy':>8}")
    print(header)
    print("-" * len(header))
    for policy in ("symmetric", "depthwise"):
        model = BoostClassifier(n_estimators=args.n_estimators, learning_rate=args.learning_rate,
                                max_depth=args.max_depth, random_state=args.random_state,
                                n_jobs=args.n_jobs, grow_policy=policy)
        t0 = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - t0
        proba = model.predict_proba(Xt)
        print(f"{policy:<11} {model.n_trees_:>5} {fit_s:>6.2f} "
              f"{multiclass_logloss(yt, proba):>18.4f} "
              f"{accuracy(yt, model.predict(Xt)):>8.4f}", flush=True)


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


# -- estimator options generated from the signature ------------------------------------------
def _estimator_classes():
    from .estimators import BoostClassifier, BoostRanker, BoostRegressor
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
    sig = inspect.signature(_estimator_classes()[1].__init__)
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
    docs = _param_docs(_estimator_classes()[1].__doc__)
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
            kind, metavar = _name_list, "NAME[,NAME...]"
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


# -- train -----------------------------------------------------------------------------------------
#: Without ``--task``, a target is a class label when it is text with at most this many
#: distinct values, or integer-valued with 2 .. MAX_CLASSES distinct values (see
#: :func:`infer_task`).
MAX_CLASSES = 20
#: ... and, for an integer target with three or more values, when every value occurs in at
#: least this many rows (a rarer value suggests a count or a measurement, not a class).
MIN_CLASS_ROWS = 5

TASK_RULE = (f"text -> classification (at most {MAX_CLASSES} distinct values); integers "
             f"with 2 distinct values, or 3 to {MAX_CLASSES} each in at least "
             f"{MIN_CLASS_ROWS} rows -> classification (binary, multiclass); other numbers "
             f"-> regression")


def _integer_valued(values: np.ndarray) -> np.ndarray:
    """Which entries of a float array are integers small enough to be exact in int64."""
    return (values == np.round(values)) & (np.abs(values) < 2.0 ** 53)


def _shown(value: Any) -> str:
    """A target value in a message: text quoted, numbers as ``%g``."""
    return repr(str(value)) if isinstance(value, str) else f"{float(value):g}"


def _classification_kind(n_classes: int) -> str:
    return "binary classification" if n_classes == 2 else \
        f"multiclass classification ({n_classes} classes)"


def infer_task(values: np.ndarray, name: str) -> Tuple[str, str]:
    """The task of a target column when ``--task`` is not given, and why.

    The rule (:data:`TASK_RULE`): a text column is a class label, unless it has more than
    :data:`MAX_CLASSES` distinct values (an error: it cannot be regressed). A numeric column
    is a class label when all its values are integers and it has exactly 2 distinct values,
    or 3 to :data:`MAX_CLASSES` distinct values each found in at least
    :data:`MIN_CLASS_ROWS` rows. Anything else is regression.

    Parameters
    ----------
    values : ndarray of shape (n_rows,)
        The target column: float64 (numeric, no NaN) or an object array of str (text).
    name : str
        The column name, for the messages.

    Returns
    -------
    task : {"classification", "regression"}
    reason : str
        One clause saying why, e.g. ``"target 'y' is text with 3 distinct values"``.

    Raises
    ------
    ValueError
        For a text column with more than :data:`MAX_CLASSES` distinct values.
    """
    distinct, counts = np.unique(values, return_counts=True)
    n = distinct.size
    if values.dtype.kind != "f":
        if n > MAX_CLASSES:
            raise ValueError(
                f"--target {name!r} is text with {n} distinct values; without --task a text "
                f"target must be a class label with at most {MAX_CLASSES} distinct values. "
                f"Pass --task classification to train a {n}-class classifier anyway (text "
                f"cannot be regressed), or choose another --target")
        return "classification", f"target {name!r} is text with {n} distinct values"
    integer = _integer_valued(values)
    if not integer.all():
        example = float(values[np.argmin(integer)])
        return "regression", f"target {name!r} has non-integer values (e.g. {example!r})"
    if n < 2:
        return "regression", f"target {name!r} has a single value"
    if n == 2:
        return "classification", f"target {name!r} has 2 distinct integer values"
    if n > MAX_CLASSES:
        return "regression", (f"target {name!r} has {n} distinct integer values, more than "
                              f"the {MAX_CLASSES} a class label may have")
    rare = int(np.argmin(counts))
    if counts[rare] < MIN_CLASS_ROWS:
        return "regression", (f"target {name!r} has {n} distinct integer values, but "
                              f"{_shown(distinct[rare])} occurs in only {counts[rare]} "
                              f"row{'s' if counts[rare] > 1 else ''} (a class needs "
                              f"{MIN_CLASS_ROWS})")
    return "classification", (f"target {name!r} has {n} distinct integer values, each in at "
                              f"least {MIN_CLASS_ROWS} rows")


def _target(table: Table, name: str, task: Optional[str]) -> Tuple[str, np.ndarray, str]:
    """The task (from ``--task``, else :func:`infer_task`), ``y`` and the one-line
    explanation printed on stderr.

    Raises
    ------
    ValueError
        For missing or infinite target values, a target that cannot serve the task (text for
        regression, non-integer numbers or a single value for classification), or a text
        target with too many distinct values and no ``--task``.
    """
    col = table.column(name)
    numeric = col.dtype.kind == "f"
    missing = np.isnan(col) if numeric else np.array([v.lower() in MISSING_TOKENS for v in col])
    if missing.any():
        raise ValueError(f"--target {name!r} is missing in {_rows(int(missing.sum()))} of "
                         f"{col.size} (first in data row {int(np.argmax(missing)) + 1}); "
                         "expected a value in every row: remove those rows or choose another "
                         "--target")
    if numeric and np.isinf(col).any():
        infinite = np.isinf(col)
        raise ValueError(f"--target {name!r} is infinite in {_rows(int(infinite.sum()))} "
                         f"(first in data row {int(np.argmax(infinite)) + 1}: inf, or a number "
                         "beyond +-1.8e308 such as 1e400); expected finite numbers or class "
                         "labels")
    distinct = np.unique(col)
    if task is None:
        task, reason = infer_task(col, name)
        reason = f"inferred because {reason} (--task overrides)"
    else:
        reason = f"from --task {task}"
    if task == "ranking" and not (numeric and _integer_valued(col).all() and col.min() >= 0):
        raise ValueError(f"--task ranking needs relevance labels (integers >= 0, higher is "
                         f"more relevant), but --target {name!r} holds "
                         f"{_shown(distinct[0]) if not numeric else 'other numbers'}")
    if task == "regression" and not numeric:
        raise ValueError(f"--task regression needs a numeric target, but --target {name!r} is "
                         f"text ({distinct.size} distinct values such as "
                         f"{_shown(distinct[0])}); use --task classification")
    if task == "classification":
        if numeric and not _integer_valued(col).all():
            example = float(col[np.argmin(_integer_valued(col))])
            raise ValueError(f"--task classification needs class labels, but --target "
                             f"{name!r} holds non-integer numbers such as {example!r}; use "
                             "--task regression")
        if distinct.size < 2:
            raise ValueError(f"--target {name!r} has the single value {_shown(distinct[0])}; "
                             "classification needs at least two classes")
        if numeric:
            col = col.astype(np.int64)
        chosen = _classification_kind(distinct.size)
    else:
        chosen = task
    return task, col, f"boostlib: task: {chosen}, {reason}"


def _rows(n: int) -> str:
    """``"1 row"``, ``"3 rows"``."""
    return f"{n} row{'s' if n != 1 else ''}"


def _split(n_rows: int, fraction: float, seed: Any) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """Training rows and hold-out rows (None without hold-out), both in file order."""
    rows = np.arange(n_rows)
    if fraction == 0:
        return rows, None
    n_eval = int(round(fraction * n_rows))
    if not 1 <= n_eval < n_rows:
        raise ValueError(f"--eval-fraction {fraction} leaves {n_eval} of {n_rows} rows for "
                         "evaluation; expected a fraction leaving at least one row on each side"
                         + (f" (about {1 / n_rows:.3g} to {1 - 1 / n_rows:.3g} for "
                            f"{n_rows} rows)" if n_rows > 1 else ": a file with 2 rows or more"))
    rng = np.random.default_rng(seed if isinstance(seed, int) and seed >= 0 else 0)
    held = np.zeros(n_rows, dtype=bool)
    held[rng.permutation(n_rows)[:n_eval]] = True
    return rows[~held], rows[held]


def query_sizes(table: Table, column: str) -> np.ndarray:
    """The number of rows of each query of ``--group`` ``column``, in file order.

    Raises
    ------
    ValueError
        For missing query ids, or a query whose rows are not consecutive.
    """
    ids = table.column(column)
    missing = np.isnan(ids) if ids.dtype.kind == "f" else \
        np.array([v.lower() in MISSING_TOKENS for v in ids])
    if missing.any():
        raise ValueError(f"--group {column!r} is missing in data row "
                         f"{int(np.argmax(missing)) + 1}; expected a query id in every row")
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    first = ids[starts]
    if np.unique(first).size != first.size:
        values, counts = np.unique(first, return_counts=True)
        again = values[counts > 1][0]
        raise ValueError(f"--group {column!r}: the rows of query {_shown(again)} are not "
                         "consecutive; expected each query's rows together (sort the file by "
                         "that column)")
    return np.diff(np.r_[starts, ids.size])


def _run_lengths(query: np.ndarray) -> np.ndarray:
    """Sizes of the runs of equal query numbers."""
    starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])
    return np.diff(np.r_[starts, query.size])


def _query_split(sizes: np.ndarray, fraction: float, seed: Any
                 ) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """:func:`_split` by whole queries: the rows of the held-out queries."""
    queries, held_queries = _split(sizes.size, fraction, seed) if fraction else \
        (np.arange(sizes.size), None)
    if held_queries is None:
        return np.arange(int(sizes.sum())), None
    held = np.repeat(np.isin(np.arange(sizes.size), held_queries), sizes)
    rows = np.arange(held.size)
    return rows[~held], rows[held]


def _fraction(text: str) -> float:
    """argparse type of --eval-fraction: a number in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return value


def _rounds(text: str) -> int:
    """argparse type of the demo's --early-stopping-rounds: an int >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _name_list(text: str) -> Any:
    """argparse type of --eval-metric: one name, or a comma-separated list of names."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected metric names such as auc or "
                                         f"auc,logloss; got {text!r}")
    return names[0] if len(names) == 1 else names


def _column_name(text: str) -> str:
    """argparse type of --target: a column name (spaces around it are ignored, as in a
    header)."""
    name = text.strip()
    if not name:
        raise argparse.ArgumentTypeError(f"expected a column name (or its 0-based index in a "
                                         f"file without a header), got {text!r}")
    return name


def _column_list(text: str) -> List[str]:
    """argparse type of --categorical and --drop: comma-separated column names."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated column names such as "
                                         f"'city,zip', got {text!r}")
    return names


def _listed(names: Sequence[str], limit: int = 10) -> str:
    """Column names in a message: ``'a', 'b' and 3 more``."""
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _plural(names: Sequence[Any], word: str = "column") -> str:
    return word + ("s" if len(names) != 1 else "")


def feature_columns(table: Table, target: str, drop: Sequence[str] = (),
                    categorical: Sequence[str] = ()) -> List[str]:
    """The feature columns of ``train``: every column but the target and ``--drop``'s.

    Parameters
    ----------
    table : Table
        The training data, read with ``categorical`` kept as text.
    target : str
        The ``--target`` column.
    drop : sequence of str, default ()
        The ``--drop`` columns.
    categorical : sequence of str, default ()
        The ``--categorical`` columns.

    Returns
    -------
    list of str
        In file order.

    Raises
    ------
    ValueError
        For a missing target column, a name in ``drop`` or ``categorical`` that the file
        does not have, the target in either, a column in both, or no feature left.
    """
    table.column(target)
    given = {"--drop": list(drop), "--categorical": list(categorical)}
    for option, names in given.items():
        unknown = [n for n in names if n not in table.columns]
        if unknown:
            raise ValueError(f"{option} {','.join(names)!r}: {table.path} has no "
                             f"{_plural(unknown)} {_listed(unknown)}; expected names among its "
                             f"columns {_listed(table.names, 30)}")
        if target in names:
            raise ValueError(f"{option} {','.join(names)!r} names the --target column "
                             f"{target!r}; expected feature columns only (the target is never "
                             "a feature)")
    both = [n for n in given["--drop"] if n in given["--categorical"]]
    if both:
        raise ValueError(f"--drop and --categorical both name {_plural(both)} "
                         f"{_listed(both)}; expected each column in at most one of them")
    names = [n for n in table.names if n != target and n not in given["--drop"]]
    if not names and given["--drop"]:
        raise ValueError(f"--drop {','.join(given['--drop'])!r} leaves no feature column in "
                         f"{table.path}; expected at least one column besides the --target "
                         f"{target!r}")
    if not names:
        raise ValueError(f"{table.path} has only the --target column {target!r}; expected "
                         f"feature columns besides it{table.hint}")
    return names


def _categorical_parameter(cls: type, X: NamedMatrix, forced: Sequence[str],
                           path: str) -> Dict[str, Any]:
    """``{"categorical_features": [...]}`` for the categorical columns of ``X`` (in order),
    ``{}`` without any; ValueError when the estimator has no such parameter."""
    names = [n for n in X.columns if n in X.categories]
    if not names:
        return {}
    if "categorical_features" not in inspect.signature(cls.__init__).parameters:
        text = [n for n in names if n not in forced]
        parts = ([f"non-numeric {_plural(text)} {_listed(text)}"] if text else []) + \
            ([f"--categorical {_plural(forced)} {_listed(forced)}"] if forced else [])
        raise ValueError(f"{path}: {' and '.join(parts)} would be categorical features, but "
                         f"{cls.__name__} has no categorical_features parameter in this "
                         "version; expected numeric features: encode them as numbers or "
                         "--drop them")
    return {"categorical_features": names}


def _class_index(classes: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Column of each label of ``y`` in ``classes`` (sorted); ValueError for unknown labels."""
    index = np.clip(np.searchsorted(classes, y), 0, classes.size - 1)
    unknown = classes[index] != y
    if unknown.any():
        raise ValueError(f"the evaluation rows hold labels the model does not know "
                         f"({np.unique(y[unknown])[:5].tolist()}); expected one of "
                         f"{classes[:10].tolist()}")
    return index


def evaluation(model: Any, X: Any, y: np.ndarray, group: Optional[np.ndarray] = None) -> str:
    """Metrics of ``model`` on ``(X, y)``, as printed by ``train``.

    Parameters
    ----------
    model : BoostClassifier, BoostRegressor or BoostRanker
        A fitted estimator.
    X : array-like of shape (n_rows, n_features)
    y : ndarray of shape (n_rows,)
        True labels (classifier), values (regressor) or relevance labels (ranker).
    group : ndarray of int, optional
        Query sizes (ranking).

    Returns
    -------
    str
        Binary classification: logloss, AUC (when both classes occur) and accuracy;
        multiclass: multiclass logloss and accuracy; regression: RMSE, MAE and R^2;
        ranking: NDCG@10 and MAP@10.
    """
    from ..engine.metrics import accuracy, logloss, multiclass_logloss, roc_auc

    if group is not None:
        score = model.predict(X)
        return "  ".join(f"{name.upper()}@10 "
                         f"{registry.create('metric', name, {'k': 10})(y, score, group=group):.4f}"
                         for name in ("ndcg", "map"))
    if hasattr(model, "classes_"):
        proba = model.predict_proba(X)
        if model.classes_.size > 2:
            mlogloss = multiclass_logloss(_class_index(model.classes_, y), proba)
            return (f"multiclass logloss {mlogloss:.4f}  "
                    f"accuracy {accuracy(y, model.predict(X)):.4f}")
        p = proba[:, 1]
        positive = y == model.classes_[1]
        parts = [f"logloss {logloss(positive, p):.4f}"]
        if 0 < positive.sum() < positive.size:
            parts.append(f"AUC {roc_auc(positive, p):.4f}")
        parts.append(f"accuracy {accuracy(y, model.predict(X)):.4f}")
        return "  ".join(parts)
    err = model.predict(X) - y
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum(err ** 2)) / ss_tot if ss_tot > 0 else float("nan")
    return (f"RMSE {float(np.sqrt(np.mean(err ** 2))):.6g}  MAE {float(np.mean(np.abs(err))):.6g}"
            f"  R^2 {r2:.4f}")


def check_output(path: str, inputs: Dict[str, str], example: str,
                 regular: bool = False) -> None:
    """Refuse an ``--output`` path that cannot be the file written.

    Parameters
    ----------
    path : str
        The ``--output`` value.
    inputs : dict of str to str
        The files read by the command, by role (``"DATA"``, ``"MODEL.json"``): writing one of
        them would destroy it.
    example : str
        A file name shown in the messages, e.g. ``"model.json"``.
    regular : bool, default False
        Whether an existing ``path`` must be a regular file (model files replace the file,
        so a device, FIFO or symlink cannot be written), not only a writable one.

    Raises
    ------
    ValueError or OSError
        For an empty path, a folder, a path in a folder that does not exist, an input
        file or (``regular``) an existing path that is not a regular file, naming
        ``--output``.
    """
    if not path.strip():
        raise ValueError(f"--output {path!r} is empty; expected a file path such as {example}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"--output {path!r} is a folder; expected a file path, such as "
                                f"{os.path.join(path, example)}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"--output {path!r}: cannot write it, folder {folder} does not "
                                "exist; expected a path in an existing folder")
    for role, other in inputs.items():
        if os.path.exists(path) and os.path.exists(other) and os.path.samefile(path, other):
            raise ValueError(f"--output {path!r} is the {role} file {other!r}: writing would "
                             f"destroy it; expected another path, such as {example}")
    if regular and os.path.lexists(path) and not stat.S_ISREG(os.lstat(path).st_mode):
        raise ValueError(f"--output {path!r} exists and is not a regular file (a symlink, "
                         f"device or FIFO); expected a new or regular file, such as {example}")


def _check_plugin_params(params: Dict[str, Any]) -> None:
    """ValueError for ``--sampler-params`` that no sampler would receive."""
    if params.get("sampler_params") and params.get("sampler") is None \
            and params.get("subsample", 1.0) >= 1.0:
        raise ValueError(f"--sampler-params {json.dumps(params['sampler_params'])!r} has no "
                         "sampler to go to: without --sampler (or --subsample below 1) rows "
                         "are not sampled; expected --sampler NAME too")


def check_parameters(cls: type, params: Dict[str, Any], eval_fraction: float) -> None:
    """Validate ``train``'s estimator parameters before the data is read, so that a bad
    value fails at once, not after reading a large file.

    Checks what needs no data: the values (``cls(**params)._check_params()``, as ``fit``
    does first), the sampler and update rule with their parameters, the loss when
    ``--loss`` names one, the ``--eval-metric`` names, ``--sampler-params`` without a
    sampler, and ``--early-stopping-rounds`` without held-out rows. What depends on the
    data (a loss that does not fit the task, a metric that does not fit the loss) is
    checked by ``fit``.

    Raises
    ------
    ValueError, TypeError
        Naming the parameter (``with_option`` leads the message with its option).
    """
    from ..engine.evaluation import _create as create_metric
    from ..engine.params import DEFAULTS, metric_specs

    cls(**params)._check_params()
    _check_plugin_params(params)
    p = {**DEFAULTS, **params}
    if p["sampler"] is not None or p["subsample"] < 1.0:
        registry.create("sampler", "uniform" if p["sampler"] is None else p["sampler"],
                        p["sampler_params"], subsample=p["subsample"])
    registry.create("update", p["update"], p["update_params"])
    if p["loss"] is not None:
        registry.create("loss", p["loss"], p["loss_params"])
    for metric in metric_specs(p["eval_metric"]):
        try:
            create_metric(metric)
        except registry.PluginError as exc:
            raise registry.PluginError(f"eval_metric: {exc}") from None
    if p["early_stopping_rounds"] is not None and eval_fraction == 0:
        raise ValueError(f"--early-stopping-rounds {p['early_stopping_rounds']} needs held-out "
                         "rows to watch, but there are none; expected --eval-fraction F too "
                         "(e.g. --eval-fraction 0.2 holds out 20% of the rows)")


def check_data_name(path: str) -> None:
    """ValueError for a DATA path naming a JSON file (most likely a model file given in the
    place of the data)."""
    if path.lower().endswith((".json", ".json.gz")):
        raise ValueError(f"DATA {path!r} is a JSON file (a model file?); expected a CSV, TSV "
                         "or Parquet file")


def _train(args: argparse.Namespace) -> int:
    check_data_name(args.data)
    check_output(args.output, {"DATA": args.data}, "model.json", regular=True)
    categorical = list(dict.fromkeys(args.categorical or ()))
    drop = list(dict.fromkeys(args.drop or ()))
    if (args.task == "ranking") != (args.group is not None):
        raise ValueError("--task ranking needs --group COLUMN (the query id of each row)"
                         if args.group is None else
                         f"--group {args.group!r} is for --task ranking; expected --task "
                         "ranking with it, or no --group")
    if args.group is not None and args.group == args.target:
        raise ValueError(f"--group {args.group!r} is the --target column; expected the query "
                         "id column")
    classes = _estimator_classes()
    params = {name: getattr(args, name) for name in args.estimator_params
              if hasattr(args, name)}
    check_parameters(classes[TASKS.index(args.task) if args.task else 1], params,
                     args.eval_fraction)
    table = read_table(args.data, args.header, args.sep, categorical=categorical)
    if args.group is not None and args.group not in table.columns:
        raise ValueError(f"--group {args.group!r}: {table.path} has no column {args.group!r}; "
                         f"expected a name among its columns {_listed(table.names, 30)}")
    names = feature_columns(table, args.target, drop + ([args.group] if args.group else []),
                            categorical)
    task, y, why = _target(table, args.target, args.task)
    sizes = query_sizes(table, args.group) if args.group is not None else None
    X = table.features(names)
    print(why, file=sys.stderr, flush=True)
    cls = {"classification": classes[0], "regression": classes[1],
           "ranking": classes[2]}[task]
    params.update(_categorical_parameter(cls, X, categorical, table.path))
    model = cls(**params)
    if task == "classification":
        labels = [str(c) for c in np.unique(y).tolist()]
        described = "classes " + ", ".join(labels[:10]) + \
            (f" and {len(labels) - 10} more" if len(labels) > 10 else "")
    elif task == "ranking":
        described = f"{sizes.size} queries in column {args.group!r}"
    else:
        described = "numeric target"
    print(f"{args.data}: {table.n_rows} rows, {X.shape[1]} features, target {args.target!r} "
          f"-> {task} ({described})")
    if X.categories:
        shown = [f"{n!r} ({len(levels)} level{'s' if len(levels) != 1 else ''})"
                 for n, levels in list(X.categories.items())[:10]]
        more = len(X.categories) - len(shown)
        print("categorical features: " + ", ".join(shown) + (f" and {more} more" if more else ""))
    if drop:
        print(f"dropped {_plural(drop)}: {_listed(drop, len(drop))}")
    seed = getattr(args, "random_state", None)
    fit_rows, eval_rows = (_split(table.n_rows, args.eval_fraction, seed) if sizes is None else
                           _query_split(sizes, args.eval_fraction, seed))
    if task == "classification" and eval_rows is not None:
        unseen = np.setdiff1d(y[eval_rows], y[fit_rows])
        if unseen.size:
            raise ValueError(f"--eval-fraction {args.eval_fraction:g} holds out every row of "
                             f"class {', '.join(_shown(c) for c in unseen[:5].tolist())}, so "
                             "the model cannot learn it; expected each class in the training "
                             "rows: use a smaller --eval-fraction or another --random-state")
    eval_set = None if eval_rows is None else [(X.take(eval_rows), y[eval_rows])]
    groups = {}
    if sizes is not None:
        query = np.repeat(np.arange(sizes.size), sizes)
        groups["group"] = _run_lengths(query[fit_rows])
        if eval_rows is not None:
            groups["eval_group"] = [_run_lengths(query[eval_rows])]
    start = time.perf_counter()
    model.fit(X.take(fit_rows), y[fit_rows], eval_set=eval_set, **groups)
    print(f"trained {cls.__name__} on {fit_rows.size} rows in "
          f"{time.perf_counter() - start:.2f} s: {model.n_trees_} trees")
    if eval_rows is None:
        print(f"evaluation on the training rows: {evaluation(model, X, y, sizes)}")
    else:
        eval_group = groups["eval_group"][0] if sizes is not None else None
        print(f"evaluation on {eval_rows.size} held-out rows: "
              f"{evaluation(model, eval_set[0][0], eval_set[0][1], eval_group)}")
    model.save_model(args.output)
    print(f"model written to {args.output}")
    return 0


# -- predict ---------------------------------------------------------------------------------------
def model_categorical_features(model: Any) -> List[str]:
    """Names of the features a fitted model treats as categorical (as its bin mapper
    records them), ``[]`` for none or a model without feature names."""
    names = getattr(model, "feature_names_in_", None)
    inner = getattr(model, "model_", None)
    if inner is None:       # not a boostlib estimator: its categorical_features list, if any
        spec = getattr(model, "categorical_features", None)
        return [str(n) for n in spec] if isinstance(spec, (list, tuple)) else []
    if names is None:
        return []
    mask = inner.ensemble.bin_mapper.categorical_
    return [str(n) for n, m in zip(names, mask) if m]


def _text_example(levels: Sequence[str]) -> str:
    """A level that is not a number (the first level when all are)."""
    for level in levels:
        try:
            float(level)
        except ValueError:
            return level
    return levels[0] if levels else ""


def _model_features(model: Any, table: Table, categorical: Sequence[str] = ()) -> Any:
    """The model's feature columns of ``table``: by name (a NamedMatrix whose ``categories``
    hold the levels found in the file), or every column for a model without feature names.

    ``table`` must have been read with the model's categorical features kept as text
    (``categorical``); a text column the model saw as numeric is a ValueError.
    """
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        X = table.features([str(n) for n in names])
        numeric = [n for n in X.categories if n not in categorical]
        if numeric:
            example = _text_example(X.categories[numeric[0]])
            one = len(numeric) == 1
            raise ValueError(f"{table.path}: {_plural(numeric)} {_listed(numeric)} "
                             f"{'holds' if one else 'hold'} text (e.g. {example!r}), but the "
                             f"model was trained on "
                             f"{'it as a numeric feature' if one else 'them as numeric features'}"
                             "; expected numbers (empty or NA for missing values)")
        return X
    if len(table.names) != model.n_features_in_:
        raise ValueError(f"the model has no feature names (it was trained on an array), so "
                         f"{table.path} must hold exactly its {model.n_features_in_} feature "
                         f"columns; it has {len(table.names)}")
    text = table.text_names
    if text:
        raise ValueError(f"the model has no feature names (it was trained on an array), so "
                         f"{table.path} must hold numbers only; expected numeric columns, but "
                         f"{_plural(text)} {_listed(text)} "
                         f"{'holds' if len(text) == 1 else 'hold'} text")
    return table.features(table.names).values


def prediction_rows(model: Any, X: Any) -> Tuple[List[str], List[Sequence[str]]]:
    """Header and rows of the predictions CSV (floats written exactly, as ``repr``).

    Parameters
    ----------
    model : BoostClassifier or BoostRegressor
        A fitted estimator.
    X : array-like of shape (n_rows, n_features)

    Returns
    -------
    header : list of str
        ``prediction`` (regressor); ``prediction, probability`` (binary classifier: the
        probability of ``classes_[1]``); ``prediction, proba_<label>, ...`` (multiclass: one
        column per class, in the order of ``classes_``).
    rows : list of tuple of str
    """
    if hasattr(model, "classes_"):
        proba = model.predict_proba(X)
        labels = [str(c) for c in model.predict(X).tolist()]
        if model.classes_.size > 2:
            header = ["prediction"] + [f"proba_{c}" for c in model.classes_.tolist()]
            return header, [(c,) + tuple(repr(v) for v in row)
                            for c, row in zip(labels, proba.tolist())]
        return ["prediction", "probability"], [(c, repr(float(p)))
                                               for c, p in zip(labels, proba[:, 1])]
    return ["prediction"], [(repr(float(v)),) for v in model.predict(X)]


def _load_model(path: str, data: str) -> Any:
    """The model in ``path``; its errors name the file (and hint at swapped arguments)."""
    from .. import load_model

    try:
        return load_model(path)
    except ValueError as exc:
        message = _one_line(exc)
        if path not in message:
            message = f"MODEL.json {path!r}: {message}"
        if data.lower().endswith(".json") and not path.lower().endswith(".json"):
            message += " (the model file comes first: boostlib predict MODEL.json DATA)"
        raise ValueError(message) from None


def _open_output(path: str) -> IO[str]:
    """``path`` opened for writing text; a FIFO without a reader is an error, not a wait."""
    try:
        if os.path.exists(path) and stat.S_ISFIFO(os.stat(path).st_mode):
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)
            return open(fd, "w", newline="", encoding="utf-8")
        return open(path, "w", newline="", encoding="utf-8")
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(f"--output {path!r} is a FIFO that no process is reading; expected a "
                          "regular file, or a FIFO with a reader") from None
        raise type(exc)(f"--output {path!r}: cannot write it ({exc.strerror or exc}); expected "
                        "a writable file path") from None


def _write_predictions(fh: IO[str], header: List[str], rows: List[Sequence[str]]) -> None:
    writer = csv.writer(fh, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)


def _predict(args: argparse.Namespace) -> int:
    if args.output is not None:
        check_output(args.output, {"DATA": args.data, "MODEL.json": args.model},
                     "predictions.csv")
    model = _load_model(args.model, args.data)
    check_data_name(args.data)
    categorical = model_categorical_features(model)
    table = read_table(args.data, args.header, args.sep, categorical=categorical)
    X = _model_features(model, table, categorical)
    header, rows = prediction_rows(model, X)
    if args.output is None:
        _write_predictions(sys.stdout, header, rows)
        return 0
    with _open_output(args.output) as fh:
        _write_predictions(fh, header, rows)
    print(f"{len(rows)} predictions written to {args.output}")
    return 0


# -- the parser ------------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (the usage itself can be long)."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        if message.endswith("expected one argument"):
            message += " (a value starting with '-' must be attached: --option=-VALUE)"
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _data_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--header", choices=HEADER_CHOICES, default="auto",
                        help="whether the first CSV row names the columns; auto (default) "
                             "says yes when a text field stands above a number. Without a "
                             "header, columns are named 0, 1, 2, ...")
    parser.add_argument("--sep", default=None, metavar="SEP",
                        help="CSV field separator: one character, several (such as '::'), "
                             "or '\\t' for a tab (default: tab for .tsv/.tab files, else "
                             "comma). Spaces after a separator are skipped, so ', ' (as in "
                             "the raw UCI Adult files) is the same as ','")


_TASK_EPILOG = """task: with --task, the target is a class label (BoostClassifier: binary for two
classes, softmax "multiclass" loss for more), a number (BoostRegressor) or, with --task
ranking and --group QUERY_COLUMN, a relevance label, an integer >= 0 (BoostRanker,
LambdaMART; evaluated by NDCG@10 and MAP@10). Without --task:
  * text target: classification; 2 distinct values make it binary, 3 to {k} multiclass,
    more are an error (pass --task classification to train anyway);
  * numeric target with integer values only: binary classification with exactly 2
    distinct values, multiclass with 3 to {k} distinct values each found in at least
    {m} rows;
  * any other numeric target (non-integer values, a single value, more than {k}
    values, or a value in fewer than {m} rows): regression.
The choice and its reason are printed on stderr, e.g.
  boostlib: task: multiclass classification (3 classes), inferred because target
  'species' is text with 3 distinct values (--task overrides)""".format(
    k=MAX_CLASSES, m=MIN_CLASS_ROWS)

_TRAIN_EPILOG = """examples:
  boostlib train higgs.csv --target label --eval-fraction 0.2 --output higgs.json
  boostlib train flowers.csv --target species      # 3 text labels: multiclass
  boostlib train data.csv --target y --task regression --n-estimators 500 \\
      --learning-rate 0.05 --sampler mvs --subsample 0.5
  boostlib train data.csv --target y --update sglb \\
      --update-params '{"diffusion_temperature": 1000}'
  boostlib train houses.csv --target price --drop id --categorical zip   # zip: categorical
  boostlib train queries.csv --target relevance --task ranking --group qid \\
      --eval-fraction 0.2 --eval-metric ndcg@10

DATA is a CSV/TSV file (.gz too) or Parquet (.parquet, .pq; needs pyarrow). Every column
but the target and the --drop columns is a feature: numeric columns as numbers, text
columns (and --categorical ones) as categorical features whose levels are their distinct
values. Empty, NA, NaN, null, None and ? are missing values.

""" + _TASK_EPILOG

_PREDICT_EPILOG = """examples:
  boostlib predict higgs.json test.csv --output predictions.csv
  boostlib predict higgs.json test.csv | head

The model's feature columns are taken from DATA by name; other columns (e.g. the target, or
columns dropped at training) are ignored. Categorical features are matched by the text of
their levels, so their order in DATA does not matter; a level the model did not see is a
missing value. Columns written:
  regressor                 prediction
  binary classifier         prediction,probability   (probability of classes_[1])
  multiclass classifier     prediction,proba_<label>,...   (one column per class, in the
                            order of classes_; each row sums to 1)
  ranker                    prediction   (the ranking score: higher ranks first)"""


def _add_train(sub: Any) -> None:
    train = sub.add_parser(
        "train", help="train a model on a CSV or Parquet file and write a model file",
        description="Train a BoostClassifier (binary or multiclass), BoostRegressor or "
                    "BoostRanker on DATA,\nprint its evaluation (binary: logloss, AUC and "
                    "accuracy; multiclass: multiclass\nlogloss and accuracy; regression: RMSE, "
                    "MAE and R^2; ranking: NDCG@10 and MAP@10)\nand write the model file.",
        epilog=_TRAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    train.add_argument("data", metavar="DATA", help="training data (CSV, TSV or Parquet)")
    train.add_argument("--target", required=True, metavar="COLUMN", type=_column_name,
                       help="name of the target column (its 0-based index without a header)")
    train.add_argument("--output", "-o", default="model.json", metavar="MODEL.json",
                       help="model file to write (default: model.json)")
    train.add_argument("--task", choices=TASKS, default=None,
                       help=f"default: inferred from the target and printed on stderr: "
                            f"{TASK_RULE} (see 'task:' below)")
    train.add_argument("--group", type=_column_name, default=None, metavar="COLUMN",
                       help="query id column for --task ranking (BoostRanker): the rows of a "
                            "query are consecutive; not a feature. --eval-fraction then holds "
                            "out whole queries")
    train.add_argument("--eval-fraction", type=_fraction, default=0.0, metavar="F",
                       help="hold out this fraction of the rows (drawn with --random-state) "
                            "for evaluation and early stopping (default: 0, evaluate on the "
                            "training rows)")
    train.add_argument("--categorical", "--categorical-features", dest="categorical",
                       type=_column_list, action="extend", default=None, metavar="COLS",
                       help="comma-separated feature columns to treat as categorical even if "
                            "they hold numbers (each distinct text is a level); text columns "
                            "are categorical without it. Sets the estimator's "
                            "categorical_features")
    train.add_argument("--drop", type=_column_list, action="extend", default=None,
                       metavar="COLS",
                       help="comma-separated columns to leave out of the features (e.g. an ID); "
                            "'predict' ignores them too")
    _data_options(train)
    train.set_defaults(func=_train, estimator_params=add_estimator_options(train))


def _add_predict(sub: Any) -> None:
    predict = sub.add_parser(
        "predict", help="predict DATA with a model file and write the predictions as CSV",
        description="Predict every row of DATA with the model in MODEL.json.",
        epilog=_PREDICT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    predict.add_argument("model", metavar="MODEL.json", help="model file from 'boostlib train' "
                                                             "or save_model()")
    predict.add_argument("data", metavar="DATA", help="rows to predict (CSV, TSV or Parquet)")
    predict.add_argument("--output", "-o", default=None, metavar="PRED.csv",
                         help="predictions file (default: standard output)")
    _data_options(predict)
    predict.set_defaults(func=_predict)


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
    demo.add_argument("--early-stopping-rounds", type=_rounds, default=20, metavar="N",
                      help="HIGGS part: hold out 20%% of the training rows and stop each "
                           "model after N iterations without improvement on them, keeping "
                           "its best iteration (default: 20; 0: no early stopping, every "
                           "model runs --n-estimators iterations on all training rows)")
    demo.set_defaults(func=_demo)
    _add_train(sub)
    _add_predict(sub)
    from .cli_export import add_export      # imports cli: registered here, not at import
    add_export(sub)
    plugins = sub.add_parser("plugins", help="list registered losses, samplers and update "
                                             "rules with the distribution (and version) "
                                             "providing each, and plugins that failed to load")
    plugins.add_argument("--json", action="store_true", help="print JSON instead of a table")
    plugins.set_defaults(func=_plugins)
    return parser


def _one_line(exc: BaseException) -> str:
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
        print(f"boostlib: error: {with_option(_one_line(exc))}", file=sys.stderr)
        return 2
    except MemoryError:
        print("boostlib: error: out of memory; expected smaller data or a smaller model",
              file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
