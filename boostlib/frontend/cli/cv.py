"""``boostlib train --cv K``: k-fold cross-validation (:func:`boostlib.cv`) of the estimator
that ``train``'s options describe, on the rows ``train`` reads. It prints the mean and
standard deviation over the folds of every score by iteration, and writes them
(``--cv-output``) and the out-of-fold predictions (``--oof-output``) as CSV."""
from __future__ import annotations

import argparse
import csv
import io
import math
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Sequence

import numpy as np

from ...engine.params import n_rounds
from ...booster.cv import CVResult, cv
from ..estimator_files import install_model
from .columns import show_value
from .files import write_output
from .predict import prediction_rows

if TYPE_CHECKING:  # pragma: no cover - train imports this module to run --cv
    from .train import TrainingData

#: About this many iterations are shown in the printed table (plus the best and the last).
SHOWN_ITERATIONS = 10


def check_folds(k: int, data: TrainingData, path: str) -> None:
    """Refuse ``--cv k`` for data it cannot split: more folds than rows (queries, for
    ranking), or a class with fewer than ``k`` rows (some folds would hold none of it).

    Raises
    ------
    ValueError
        Naming ``--cv``, the value and what the data allows.
    """
    units, unit = (data.table.n_rows, "row") if data.sizes is None else \
        (int(data.sizes.size), "query")
    if k > units:
        many = "rows" if unit == "row" else "queries"
        raise ValueError(f"--cv {k} asks for {k} folds, but {path} has {units} {many}; "
                         f"expected at most {units} folds (each holds out at least one {unit}"
                         f"{', whole queries for ranking' if unit == 'query' else ''})")
    if data.task == "classification":
        labels, counts = np.unique(data.y, return_counts=True)
        rare = int(np.argmin(counts))
        if counts[rare] < k:
            many = f"{counts[rare]} rows" if counts[rare] > 1 else "a single row"
            raise ValueError(f"--cv {k}: class {show_value(labels[rare])} has only {many}, so "
                             f"some of the {k} folds (stratified by class) would hold none of "
                             f"it; expected at least {k} rows of every class"
                             + (f": use --cv {counts[rare]} or fewer folds"
                                if counts[rare] >= 2 else ""))


def _score_names(history: Dict[str, List[float]]) -> List[str]:
    """The scores of a history, in order: ``logloss`` for ``logloss-mean``."""
    return [key[:-len("-mean")] for key in history if key.endswith("-mean")]


def score_format(history: Dict[str, List[float]], name: str) -> Callable[[int], str]:
    """``iteration -> "mean ± std"`` of score ``name``, with the decimals that show its
    standard deviations to about two significant digits (at least 4 for scores below
    1,000, such as a logloss or an AUC)."""
    means, stds = history[f"{name}-mean"], history[f"{name}-std"]
    positive = [s for s in stds if s > 0 and math.isfinite(s)]
    finite = [abs(m) for m in means if math.isfinite(m)]
    scale = float(np.median(positive)) if positive else (max(finite, default=0.0) or 1.0)
    decimals = int(np.clip(1 - math.floor(math.log10(scale)), 0, 10))
    if max(finite, default=0.0) < 1e3:
        decimals = max(decimals, 4)
    return lambda it: f"{means[it]:.{decimals}f} ± {stds[it]:.{decimals}f}"


def shown_iterations(n: int, best: int) -> List[int]:
    """The iterations of the printed table: 0, every ``ceil(n / SHOWN_ITERATIONS)``-th,
    the best and the last, in order."""
    step = max(1, math.ceil(n / SHOWN_ITERATIONS))
    return sorted(set(range(0, n, step)) | {best, n - 1})


def summary_lines(result: CVResult) -> List[str]:
    """The table ``train --cv`` prints: for the iterations of :func:`shown_iterations`, the
    mean ± standard deviation of every score, the best iteration marked."""
    names = _score_names(result.history)
    formats = [score_format(result.history, name) for name in names]
    n = len(result.history[f"{names[0]}-mean"])
    cells = [["iteration"] + [f"{name} (mean ± std)" for name in names] + [""]]
    for it in shown_iterations(n, result.best_iteration):
        cells.append([str(it)] + [shown(it) for shown in formats]
                     + ["<- best" if it == result.best_iteration else ""])
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return ["  ".join(c.rjust(w) if i < len(names) + 1 else c
                      for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in cells]


def history_csv(result: CVResult) -> str:
    """``--cv-output``: one row per iteration (0-based), the mean and standard deviation of
    every score, floats written exactly (``repr``)."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    keys = list(result.history)
    writer.writerow(["iteration"] + keys)
    for it in range(len(result.history[keys[0]])):
        writer.writerow([it] + [repr(float(result.history[k][it])) for k in keys])
    return text.getvalue()


def oof_csv(result: CVResult, data: TrainingData, classes: Any) -> str:
    """``--oof-output``: every row's prediction by its fold's model, in file order: the fold
    (0-based) then the columns of ``boostlib predict``
    (:func:`~boostlib.frontend.cli.predict.prediction_rows`), each fold's model in an
    estimator of the options' class as ``predict`` would load it."""
    assert result.models is not None
    header: Sequence[str] = ()
    rows: List[Any] = [None] * data.table.n_rows
    for k, ((_, held), model) in enumerate(zip(result.folds, result.models)):
        estimator = install_model(data.cls(**data.params), model, classes)
        offset = None if data.offset is None else data.offset[held]
        header, predicted = prediction_rows(estimator, data.X.take(held), offset)
        for row, values in zip(held.tolist(), predicted):
            rows[row] = (str(k),) + tuple(values)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["fold"] + list(header))
    writer.writerows(rows)
    return text.getvalue()


def run_cv(args: argparse.Namespace, data: TrainingData) -> int:
    """Cross-validate with ``args.cv`` folds; print, and write the requested files."""
    k = int(args.cv)
    check_folds(k, data, args.data)
    estimator = data.cls(**data.params)
    params, train_set, classes = estimator.training_inputs(data.X, data.y, group=data.sizes,
                                                           init_score=data.offset)
    seed = getattr(args, "random_state", None)
    fold_seed = seed if isinstance(seed, int) and seed >= 0 else 0
    rounds = params.get("early_stopping_rounds")
    start = time.perf_counter()
    result = cv(params, train_set, nfold=k, early_stopping_rounds=rounds,
                return_models=args.oof_output is not None, random_state=fold_seed)
    seconds = time.perf_counter() - start
    how = {"classification": "stratified by class", "ranking": "of whole queries",
           "regression": "of random rows"}[data.task]
    n = len(result.history[f"{result.metric}-mean"])
    print(f"{k}-fold cross-validation of {data.cls.__name__} in {seconds:.2f} s (folds {how}, "
          f"seed {fold_seed}): {n} iteration{'s' if n != 1 else ''} each")
    for line in summary_lines(result):
        print(line)
    best = result.best_iteration
    scores = "  ".join(f"{name} {score_format(result.history, name)(best)}"
                       for name in _score_names(result.history))
    print(f"best iteration: {best} (0-based; {best + 1} iterations), by the mean "
          f"{result.metric}: {scores}")
    if rounds is not None:
        if n < n_rounds(params["n_estimators"], True):
            print(f"early stopping: the mean {result.metric} did not improve for {rounds} "
                  f"iterations after iteration {best}; every fold stopped at iteration "
                  f"{n - 1}")
        else:
            print(f"early stopping: did not stop (the mean {result.metric} improved within "
                  f"the last {rounds} of the {n} iterations)")
    if args.cv_output is not None:
        write_output(args.cv_output, history_csv(result).encode("utf-8"),
                     "cross-validation table", "--cv-output")
        print(f"scores of {n} iterations written to {args.cv_output}")
    if args.oof_output is not None:
        write_output(args.oof_output, oof_csv(result, data, classes).encode("utf-8"),
                     "out-of-fold predictions", "--oof-output")
        print(f"{data.table.n_rows} out-of-fold predictions written to {args.oof_output}")
    return 0
