"""``boostlib train --out-of-core``: training on a Parquet folder or a CSV file read in
batches (:meth:`boostlib.Dataset.from_batches`), for data larger than memory.

Only the bins (one byte per value), the target and the predictions are held; the data is
read a batch at a time, several times (to check it, to sample the rows bin borders come
from, to bin it, and to evaluate the model). The model is the one ``train`` makes of the
same file in memory, bit for bit.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ...engine.dataset import Dataset
from ...io.batches import csv_batches, parquet_batches
from ...io.tables import PARQUET_SUFFIXES, Table
from .columns import (listed, plural, read_target, show_value, split_rows, survival_counts,
                      task_of_loss)
from .evaluation import SURVIVAL_LOSSES, evaluation_of, predictions

#: What ``--out-of-core`` does not do, by option: (its value when not given, why).
UNSUPPORTED = {"group": "query groups need whole queries in memory",
               "offset": "offsets are not read from batches",
               "target_upper": "the batches are read with one target column"}


def is_out_of_core(args: argparse.Namespace) -> bool:
    """Whether ``train`` reads DATA in batches: ``--out-of-core``, or DATA is a folder."""
    return bool(getattr(args, "out_of_core", False)) or os.path.isdir(args.data)


def _source(args: argparse.Namespace, columns: Optional[List[str]],
            categorical: Sequence[str]) -> Any:
    path = args.data
    if os.path.isdir(path) or path.lower().endswith(PARQUET_SUFFIXES):
        if args.sep is not None:
            raise ValueError(f"--sep {args.sep!r} is for CSV files; {path} is Parquet")
        return parquet_batches(path, columns=columns, batch_rows=args.batch_rows,
                               categorical=categorical)
    return csv_batches(path, sep=args.sep, header=args.header, columns=columns,
                       categorical=categorical)


def _check_columns(names: List[str], target: str, drop: List[str],
                   categorical: List[str], path: str) -> List[str]:
    """The feature columns (every column but the target and ``--drop``'s), as
    :func:`~boostlib.frontend.cli.columns.feature_columns` chooses them in memory."""
    if target not in names:
        raise ValueError(f"{path}: no column {target!r}; columns are {listed(names, 30)}")
    for option, given in (("--drop", drop), ("--categorical", categorical)):
        unknown = [n for n in given if n not in names]
        if unknown:
            raise ValueError(f"{option} {','.join(given)!r}: {path} has no {plural(unknown)} "
                             f"{listed(unknown)}; expected names among its columns "
                             f"{listed(names, 30)}")
        if target in given:
            raise ValueError(f"{option} {','.join(given)!r} names the --target column "
                             f"{target!r}; expected feature columns only (the target is never "
                             "a feature)")
    both = [n for n in drop if n in categorical]
    if both:
        raise ValueError(f"--drop and --categorical both name {plural(both)} {listed(both)}; "
                         "expected each column in at most one of them")
    features = [n for n in names if n != target and n not in drop]
    if not features:
        raise ValueError(f"{path} has no feature column besides the --target {target!r}")
    return features


def _first_batch(source: Any) -> Any:
    for batch in source:
        return batch
    raise ValueError("the data holds no row; expected data rows")


def _check_numeric_target(batch: Any, target: str) -> None:
    import pyarrow as pa
    t = batch.schema.field(target).type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
        raise ValueError(f"--target {target!r} is text; --out-of-core reads a numeric target "
                         "only: encode the classes as numbers (0, 1, ...), or train in memory "
                         "(without --out-of-core)")


def _outputs(model: Any, source: Any, target: str, rows: Optional[np.ndarray]
             ) -> Dict[str, np.ndarray]:
    """:func:`~boostlib.frontend.cli.train.predictions` of the rows ``rows`` (None: all),
    a batch at a time."""
    parts: Dict[str, List[np.ndarray]] = {}
    start = 0
    for batch in source:
        n = batch.num_rows
        X = batch.drop_columns([target])
        if rows is not None:
            lo, hi = np.searchsorted(rows, [start, start + n])
            X = X.take(rows[lo:hi] - start)
        start += n
        if X.num_rows:
            for key, value in predictions(model, X).items():
                parts.setdefault(key, []).append(value)
    return {key: np.concatenate(values) for key, values in parts.items()}


def run_out_of_core(args: argparse.Namespace, cls_of: Dict[str, type],
                    params: Dict[str, Any], categorical: List[str], drop: List[str],
                    loss: Any = None) -> int:
    """``train`` on DATA read in batches (see the module); the same printout as in memory.

    Raises
    ------
    ValueError
        For ``--group``, ``--offset`` or ``--target-upper`` (not read from batches), a text
        target, and what ``train`` refuses in memory.
    """
    for name, why in UNSUPPORTED.items():
        option = "--" + name.replace("_", "-")
        if getattr(args, name, None) is not None:
            raise ValueError(f"{option} is not supported with --out-of-core ({why}); "
                             f"expected no {option}, or training in memory")
    probe = _source(args, None, categorical)
    names = list(probe.names)
    features = _check_columns(names, args.target, drop, categorical, args.data)
    columns = [n for n in names if n in features or n == args.target]
    source = _source(args, columns, categorical)
    _check_numeric_target(_first_batch(source), args.target)
    data = Dataset.from_batches(source, label=args.target, spill=args.spill)
    given, given_by = task_of_loss(args.task, loss, params.get("loss"))
    task, y, why = read_target(Table(args.data, [args.target], {args.target: data.y}),
                               args.target, given, given_by)
    print(why, file=sys.stderr, flush=True)
    data = data.with_target(y, None)            # class labels as integers, as in memory
    cls = cls_of[task]
    model = cls(**params)
    if task == "classification":
        labels = [str(c) for c in np.unique(y).tolist()]
        described = "classes " + ", ".join(labels[:10]) + \
            (f" and {len(labels) - 10} more" if len(labels) > 10 else "")
    elif isinstance(loss, SURVIVAL_LOSSES):
        described = f"loss {params['loss']}, {survival_counts(y)}"
    else:
        described = "numeric target"
    print(f"{args.data}: {data.n_rows} rows, {data.n_features} features, target "
          f"{args.target!r} -> {task} ({described}) [out of core]")
    cats = [(n, levels) for n, levels in zip(features, data.levels) if levels is not None]
    if cats:
        shown = [f"{n!r} ({len(levels)} level{'s' if len(levels) != 1 else ''})"
                 for n, levels in cats[:10]]
        more = len(cats) - len(shown)
        print("categorical features: " + ", ".join(shown) + (f" and {more} more" if more else ""))
    if drop:
        print(f"dropped {plural(drop)}: {listed(drop, len(drop))}")
    seed = getattr(args, "random_state", None)
    fit_rows, eval_rows = split_rows(data.n_rows, args.eval_fraction, seed)
    if task == "classification" and eval_rows is not None:
        unseen = np.setdiff1d(y[eval_rows], y[fit_rows])
        if unseen.size:
            raise ValueError(f"--eval-fraction {args.eval_fraction:g} holds out every row of "
                             f"class {', '.join(show_value(c) for c in unseen[:5].tolist())}, so "
                             "the model cannot learn it; expected each class in the training "
                             "rows: use a smaller --eval-fraction or another --random-state")
    start = time.perf_counter()
    if eval_rows is None:
        model.fit(data)
    else:
        model.fit(data.subset(fit_rows), eval_set=[data.subset(eval_rows)])
    print(f"trained {cls.__name__} on {fit_rows.size} rows in "
          f"{time.perf_counter() - start:.2f} s: {model.n_trees_} trees")
    outputs = _outputs(model, source, args.target, eval_rows)
    if eval_rows is None:
        print(f"evaluation on the training rows: {evaluation_of(model, outputs, y)}")
    else:
        print(f"evaluation on {eval_rows.size} held-out rows: "
              f"{evaluation_of(model, outputs, y[eval_rows])}")
    model.save_model(args.output)
    print(f"model written to {args.output}")
    return 0
