"""What ``train`` reads from a table: the task and target, the feature columns, query sizes
and the held-out rows."""
from __future__ import annotations

import argparse
import inspect
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...io.tables import MISSING_TOKENS, NamedMatrix, Table


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


def show_value(value: Any) -> str:
    """A target value in a message: text quoted, numbers as ``%g``."""
    return repr(str(value)) if isinstance(value, str) else f"{float(value):g}"


def _classification_kind(n_classes: int) -> str:
    return "binary classification" if n_classes == 2 else \
        f"multiclass classification ({n_classes} classes)"


def infer_task(values: np.ndarray, name: str) -> Tuple[str, str]:
    """The task of a target column when ``--task`` is not given, and why.

    The rule (``TASK_RULE``): a text column is a class label, unless it has more than
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
                              f"{show_value(distinct[rare])} occurs in only {counts[rare]} "
                              f"row{'s' if counts[rare] > 1 else ''} (a class needs "
                              f"{MIN_CLASS_ROWS})")
    return "classification", (f"target {name!r} has {n} distinct integer values, each in at "
                              f"least {MIN_CLASS_ROWS} rows")


def read_target(table: Table, name: str, task: Optional[str],
                given_by: str = "--task") -> Tuple[str, np.ndarray, str]:
    """The task (from ``--task``, else :func:`infer_task`), ``y`` and the one-line
    explanation printed on stderr.

    ``given_by`` names what chose ``task`` when it is not None, for that line
    (``"--loss cox"``: see :func:`task_of_loss`).

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
        reason = f"from {given_by}" if given_by != "--task" else f"from --task {task}"
    if task == "ranking" and not (numeric and _integer_valued(col).all() and col.min() >= 0):
        raise ValueError(f"--task ranking needs relevance labels (integers >= 0, higher is "
                         f"more relevant), but --target {name!r} holds "
                         f"{show_value(distinct[0]) if not numeric else 'other numbers'}")
    if task == "regression" and not numeric:
        raise ValueError(f"--task regression needs a numeric target, but --target {name!r} is "
                         f"text ({distinct.size} distinct values such as "
                         f"{show_value(distinct[0])}); use --task classification")
    if task == "classification":
        if numeric and not _integer_valued(col).all():
            example = float(col[np.argmin(_integer_valued(col))])
            raise ValueError(f"--task classification needs class labels, but --target "
                             f"{name!r} holds non-integer numbers such as {example!r}; use "
                             "--task regression")
        if distinct.size < 2:
            raise ValueError(f"--target {name!r} has the single value {show_value(distinct[0])}; "
                             "classification needs at least two classes")
        if numeric:
            col = col.astype(np.int64)
        chosen = _classification_kind(distinct.size)
    else:
        chosen = task
    return task, col, f"boostlib: task: {chosen}, {reason}"


def task_of_loss(task: Optional[str], loss: Any, name: Any) -> Tuple[Optional[str], str]:
    """The task ``train`` fits and what chose it: ``--task`` when given; else regression
    for a ``--loss`` that is neither a classification nor a ranking loss (``mse``,
    ``poisson``, ``cox``, ``aft``, ...: it could not fit a classifier, whatever the target
    looks like); else None (inferred from the target, :func:`infer_task`).

    Returns
    -------
    task : str or None
    given_by : str
        ``"--task"``, or ``"--loss NAME, a regression loss"``.
    """
    if task is not None or loss is None:
        return task, "--task"
    if getattr(loss, "is_classification", False) or getattr(loss, "needs_groups", False):
        return None, "--task"
    return "regression", f"--loss {name}, a regression loss"


def read_bounds(table: Table, lower: str, upper: str) -> np.ndarray:
    """The ``[lower, upper]`` time bounds of a loss of interval targets (``--loss aft``):
    ``--target`` ``lower`` and ``--target-upper`` ``upper``, as XGBoost's
    ``label_lower_bound`` and ``label_upper_bound``.

    A missing (empty, NA) or ``inf`` upper bound is ``inf``: the row is right-censored at
    its lower bound. Equal bounds are an exact time, a lower bound of 0 a left-censored
    row, other pairs an interval.

    Returns
    -------
    ndarray of shape (n_rows, 2)

    Raises
    ------
    ValueError
        Naming the option, the column, the data row and the value: a column the file does
        not have or holding text, a missing or infinite lower bound, a negative time, an
        upper bound of 0 or ``-inf``, a lower bound above its upper bound.
    """
    if upper not in table.columns:
        raise ValueError(f"--target-upper {upper!r}: {table.path} has no column {upper!r}; "
                         f"expected a name among its columns {listed(table.names, 30)}")
    what = {lower: f"--target {lower!r} (the lower bounds)",
            upper: f"--target-upper {upper!r} (the upper bounds)"}
    for name in (lower, upper):
        values = table.column(name)
        if values.dtype.kind != "f":
            example = next((v for v in values if v.lower() not in MISSING_TOKENS
                            and not _is_number(v)), "")
            raise ValueError(f"{what[name]} holds text (e.g. {example!r}); expected times: "
                             "numbers >= 0" + ("" if name == lower else
                                               ", empty or inf for a right-censored row"))
    lo = np.array(table.column(lower), dtype=np.float64)
    hi = np.array(table.column(upper), dtype=np.float64)

    def first(mask: np.ndarray) -> int:
        return int(np.argmax(mask))

    bad = np.isnan(lo)
    if bad.any():
        raise ValueError(f"{what[lower]} is missing in {_rows(int(bad.sum()))} of {lo.size} "
                         f"(first in data row {first(bad) + 1}); expected a time >= 0 in every "
                         "row (0 for a left-censored row: the event came before the upper "
                         "bound)")
    bad = np.isinf(lo)
    if bad.any():
        raise ValueError(f"{what[lower]} is {lo[first(bad)]:g} in data row {first(bad) + 1}; "
                         f"expected a finite time >= 0 (an unbounded time is an upper bound "
                         f"of inf, in --target-upper {upper!r})")
    hi[np.isnan(hi)] = np.inf
    for name, values in ((lower, lo), (upper, hi)):
        bad = values < 0
        if bad.any():
            raise ValueError(f"{what[name]} is {values[first(bad)]:g} in data row "
                             f"{first(bad) + 1}; expected times >= 0 (a survival time is "
                             "never negative)")
    bad = hi == 0
    if bad.any():
        raise ValueError(f"{what[upper]} is 0 in data row {first(bad) + 1}; expected an upper "
                         "bound > 0 (an event at time 0 has no log-time)")
    bad = lo > hi
    if bad.any():
        row = first(bad)
        raise ValueError(f"data row {row + 1}: --target {lower!r} {float(lo[row])!r} is "
                         f"above --target-upper {upper!r} {float(hi[row])!r}; expected lower "
                         "<= upper bounds (equal: an exact time)")
    return np.column_stack([lo, hi])


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def survival_counts(y: np.ndarray) -> str:
    """What a survival target holds, for ``train``'s printout: signed times (1-D: ``cox``)
    as events and right-censored rows; ``[lower, upper]`` bounds as exact times and right-,
    left- and interval-censored rows (those present)."""
    if y.ndim == 1:
        events = int(np.sum(y > 0))
        return f"signed times: {events} events, {y.size - events} right-censored"
    lo, hi = y[:, 0], y[:, 1]
    counts = {"exact": lo == hi, "right-censored": np.isinf(hi),
              "left-censored": (lo == 0) & (hi < np.inf) & (lo < hi),
              "interval-censored": (lo > 0) & (lo < hi) & (hi < np.inf)}
    shown = [f"{int(mask.sum())} {kind}" for kind, mask in counts.items()
             if kind == "exact" or mask.any()]
    return "time bounds: " + ", ".join(shown)


def _rows(n: int) -> str:
    """``"1 row"``, ``"3 rows"``."""
    return f"{n} row{'s' if n != 1 else ''}"


def split_rows(n_rows: int, fraction: float, seed: Any) -> Tuple[np.ndarray, Optional[np.ndarray]]:
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
        raise ValueError(f"--group {column!r}: the rows of query {show_value(again)} are not "
                         "consecutive; expected each query's rows together (sort the file by "
                         "that column)")
    return np.diff(np.r_[starts, ids.size])


def run_lengths(query: np.ndarray) -> np.ndarray:
    """Sizes of the runs of equal query numbers."""
    starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])
    return np.diff(np.r_[starts, query.size])


def split_queries(sizes: np.ndarray, fraction: float, seed: Any
                 ) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """:func:`split_rows` by whole queries: the rows of the held-out queries."""
    queries, held_queries = split_rows(sizes.size, fraction, seed) if fraction else \
        (np.arange(sizes.size), None)
    if held_queries is None:
        return np.arange(int(sizes.sum())), None
    held = np.repeat(np.isin(np.arange(sizes.size), held_queries), sizes)
    rows = np.arange(held.size)
    return rows[~held], rows[held]


def fraction_option(text: str) -> float:
    """argparse type of --eval-fraction: a number in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return value


def int_option(minimum: int, what: str = "an integer") -> Callable[[str], int]:
    """An argparse type: an int of at least ``minimum``, else an error saying
    ``expected {what} >= {minimum}``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what} >= {minimum}, got {text!r}")
        return value
    return parse


#: argparse type of --cv: the number of folds, an int >= 2.
folds_option = int_option(2, "the number of folds, an integer")
#: argparse type of the demo's --early-stopping-rounds: an int >= 0.
rounds_option = int_option(0)


def name_list(text: str) -> Any:
    """argparse type of --eval-metric: one name, or a comma-separated list of names."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected metric names such as auc or "
                                         f"auc,logloss; got {text!r}")
    return names[0] if len(names) == 1 else names


def column_name(text: str) -> str:
    """argparse type of --target: a column name (spaces around it are ignored, as in a
    header)."""
    name = text.strip()
    if not name:
        raise argparse.ArgumentTypeError(f"expected a column name (or its 0-based index in a "
                                         f"file without a header), got {text!r}")
    return name


def column_list(text: str) -> List[str]:
    """argparse type of --categorical and --drop: comma-separated column names."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated column names such as "
                                         f"'city,zip', got {text!r}")
    return names


def listed(names: Sequence[str], limit: int = 10) -> str:
    """Column names in a message: ``'a', 'b' and 3 more``."""
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def plural(names: Sequence[Any], word: str = "column") -> str:
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
                             f"{plural(unknown)} {listed(unknown)}; expected names among its "
                             f"columns {listed(table.names, 30)}")
        if target in names:
            raise ValueError(f"{option} {','.join(names)!r} names the --target column "
                             f"{target!r}; expected feature columns only (the target is never "
                             "a feature)")
    both = [n for n in given["--drop"] if n in given["--categorical"]]
    if both:
        raise ValueError(f"--drop and --categorical both name {plural(both)} "
                         f"{listed(both)}; expected each column in at most one of them")
    names = [n for n in table.names if n != target and n not in given["--drop"]]
    if not names and given["--drop"]:
        raise ValueError(f"--drop {','.join(given['--drop'])!r} leaves no feature column in "
                         f"{table.path}; expected at least one column besides the --target "
                         f"{target!r}")
    if not names:
        raise ValueError(f"{table.path} has only the --target column {target!r}; expected "
                         f"feature columns besides it{table.hint}")
    return names


def categorical_parameter(cls: type, X: NamedMatrix, forced: Sequence[str],
                           path: str) -> Dict[str, Any]:
    """``{"categorical_features": [...]}`` for the categorical columns of ``X`` (in order),
    ``{}`` without any; ValueError when the estimator has no such parameter."""
    names = [n for n in X.columns if n in X.categories]
    if not names:
        return {}
    if "categorical_features" not in inspect.signature(cls.__init__).parameters:
        text = [n for n in names if n not in forced]
        parts = ([f"non-numeric {plural(text)} {listed(text)}"] if text else []) + \
            ([f"--categorical {plural(forced)} {listed(forced)}"] if forced else [])
        raise ValueError(f"{path}: {' and '.join(parts)} would be categorical features, but "
                         f"{cls.__name__} has no categorical_features parameter in this "
                         "version; expected numeric features: encode them as numbers or "
                         "--drop them")
    return {"categorical_features": names}


def class_index(classes: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Column of each label of ``y`` in ``classes`` (sorted); ValueError for unknown labels."""
    index = np.clip(np.searchsorted(classes, y), 0, classes.size - 1)
    unknown = classes[index] != y
    if unknown.any():
        raise ValueError(f"the evaluation rows hold labels the model does not know "
                         f"({np.unique(y[unknown])[:5].tolist()}); expected one of "
                         f"{classes[:10].tolist()}")
    return index


def offset_column(table: Table, column: str) -> np.ndarray:
    """The ``--offset`` ``column``: raw-score offsets (the model's ``init_score``), one finite
    number per row.

    Raises
    ------
    ValueError
        For a column the file does not have, text, or a missing or infinite value (naming
        its data row).
    """
    if column not in table.columns:
        raise ValueError(f"--offset {column!r}: {table.path} has no column {column!r}; "
                         f"expected a name among its columns {listed(table.names, 30)}")
    values = table.column(column)
    if values.dtype.kind != "f":
        example = next((v for v in values if v.lower() not in MISSING_TOKENS), "")
        raise ValueError(f"--offset {column!r} holds text (e.g. {example!r}); expected "
                         "numbers: the offset added to each row's raw score, such as "
                         "log(exposure)")
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.argmax(bad))
        shown_value = "missing" if np.isnan(values[row]) else str(values[row])
        raise ValueError(f"--offset {column!r} is {shown_value} in data row {row + 1}; "
                         "expected a finite number in every row")
    return values

