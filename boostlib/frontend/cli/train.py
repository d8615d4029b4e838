"""``boostlib train``: a model file from a CSV, TSV or Parquet table, with its evaluation."""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ...builtin.survival import CoxLoss
from ...io.batches import BATCH_ROWS
from ...io.tables import identifier_columns, read_table
from ...plugin import registry
from .columns import (MAX_CLASSES, MIN_CLASS_ROWS, TASK_RULE, categorical_parameter,
                      column_list, column_name, feature_columns, folds_option, fraction_option,
                      int_option, listed, offset_column, plural, query_sizes, read_bounds,
                      read_target, run_lengths, show_value, split_queries, split_rows,
                      survival_counts, task_of_loss)
from .evaluation import SURVIVAL_LOSSES, evaluation
from .files import check_data_name, check_output
from .options import TASKS, add_data_options, add_estimator_options, estimator_classes, one_line
from .out_of_core import is_out_of_core, run_out_of_core


_TASK_EPILOG = """task: with --task, the target is a class label (BoostClassifier: binary for two
classes, softmax "multiclass" loss for more), a number (BoostRegressor) or, with --task
ranking and --group QUERY_COLUMN, a relevance label, an integer >= 0 (BoostRanker,
LambdaMART; evaluated by NDCG@10 and MAP@10). A --loss that is neither a classification nor
a ranking loss (mse, poisson, cox, aft, ...) makes it a regression. Otherwise, without --task:
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
  boostlib train parquet_folder/ --target label --spill /tmp   # larger than memory
  boostlib train patients.csv --target time --loss cox   # time < 0: censored
  boostlib train patients.csv --target lower --target-upper upper --loss aft

DATA is a CSV/TSV file (.gz too) or Parquet (.parquet, .pq; needs pyarrow), or a folder of
Parquet files (read in batches, as with --out-of-core). Every column
but the target (and --target-upper) and the --drop columns is a feature: numeric columns as
numbers, text columns (and --categorical ones) as categorical features whose levels are
their distinct values. Empty, NA, NaN, null, None and ? are missing values.

""" + _TASK_EPILOG


def _check_plugin_params(params: Dict[str, Any]) -> None:
    """ValueError for ``--sampler-params`` that no sampler would receive."""
    if params.get("sampler_params") and params.get("sampler") is None \
            and params.get("subsample", 1.0) >= 1.0:
        raise ValueError(f"--sampler-params {json.dumps(params['sampler_params'])!r} has no "
                         "sampler to go to: without --sampler (or --subsample below 1) rows "
                         "are not sampled; expected --sampler NAME too")


def check_parameters(cls: type, params: Dict[str, Any], eval_fraction: float,
                     cv: Optional[int] = None) -> None:
    """Validate ``train``'s estimator parameters before the data is read, so that a bad
    value fails at once, not after reading a large file.

    Checks what needs no data: the values (``cls(**params)._check_params()``, as ``fit``
    does first), the sampler and update rule with their parameters, the loss when
    ``--loss`` names one, the ``--eval-metric`` names, ``--sampler-params`` without a
    sampler, and ``--early-stopping-rounds`` without held-out rows (neither
    ``--eval-fraction`` nor ``--cv``). What depends on the data (a loss that does not fit
    the task, a metric that does not fit the loss) is checked by ``fit``.

    Raises
    ------
    ValueError, TypeError
        Naming the parameter (``with_option`` leads the message with its option).
    """
    from ...engine.evaluation import _create as create_metric
    from ...engine.params import DEFAULTS, metric_specs

    _check_plugin_params(params)        # first: its message names the options
    cls(**params)._check_params()
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
    if p["early_stopping_rounds"] is not None and eval_fraction == 0 and cv is None:
        raise ValueError(f"--early-stopping-rounds {p['early_stopping_rounds']} needs held-out "
                         "rows to watch, but there are none; expected --eval-fraction F too "
                         "(e.g. --eval-fraction 0.2 holds out 20% of the rows), or --cv K "
                         "(each fold's held-out rows)")


@dataclass
class TrainingData:
    """What ``train`` reads from DATA, as the options say: the rows to fit, their task and
    the estimator to fit them with.

    Attributes
    ----------
    table : Table
    X : NamedMatrix
        The feature columns (categorical ones coded, their levels in ``X.categories``).
    y : ndarray
        The target: class labels, numbers or relevance labels; with ``--target-upper``,
        the ``(n_rows, 2)`` time bounds.
    task : {"classification", "regression", "ranking"}
    cls : type
        BoostClassifier, BoostRegressor or BoostRanker.
    params : dict
        The estimator parameters given as options (and ``categorical_features``).
    sizes : ndarray of int, optional
        Query sizes in row order (``--group``).
    offset : ndarray, optional
        The ``--offset`` column.
    """

    table: Any
    X: Any
    y: np.ndarray
    task: str
    cls: type
    params: Dict[str, Any]
    sizes: Optional[np.ndarray] = None
    offset: Optional[np.ndarray] = None


def check_train_options(args: argparse.Namespace) -> None:
    """Refuse options that do not go together, before anything is read: ``--group``
    without ranking (and the converse), ``--group`` or ``--offset`` naming the target,
    and the output files of the mode not chosen (``--output`` with ``--cv``, the
    cross-validation outputs without it)."""
    if args.cv is None:
        for option, value in (("--cv-output", args.cv_output),
                              ("--oof-output", args.oof_output)):
            if value is not None:
                raise ValueError(f"{option} {value!r} is for cross-validation; expected --cv K "
                                 "with it (or no " + option + ")")
        check_output(output_path(args), {"DATA": args.data}, "model.json")
    else:
        if args.output is not None:
            raise ValueError(f"--output {args.output!r} is a model file, which --cv {args.cv} "
                             "does not write (it trains one model per fold); expected "
                             "--cv-output FILE.csv for the scores of every round, or no --cv "
                             "to train the model")
        if args.eval_fraction:
            raise ValueError(f"--eval-fraction {args.eval_fraction:g} and --cv {args.cv} both "
                             "choose the held-out rows; expected one of them (--cv holds out "
                             "each fold in turn)")
        outputs = [(o, v) for o, v in (("--cv-output", args.cv_output),
                                       ("--oof-output", args.oof_output)) if v is not None]
        for option, path in outputs:
            check_output(path, {"DATA": args.data}, f"{option[2:]}.csv", option)
        if len(outputs) == 2 and os.path.abspath(outputs[0][1]) == \
                os.path.abspath(outputs[1][1]):
            raise ValueError(f"--cv-output and --oof-output are both {outputs[0][1]!r}; "
                             "expected two files")
    if (args.task == "ranking") != (args.group is not None):
        raise ValueError("--task ranking needs --group COLUMN (the query id of each row)"
                         if args.group is None else
                         f"--group {args.group!r} is for --task ranking; expected --task "
                         "ranking with it, or no --group")
    if args.group is not None and args.group == args.target:
        raise ValueError(f"--group {args.group!r} is the --target column; expected the query "
                         "id column")
    if args.offset is not None and args.offset in (args.target, args.group):
        raise ValueError(f"--offset {args.offset!r} is the "
                         f"{'--target' if args.offset == args.target else '--group'} column; "
                         "expected a column of raw-score offsets")
    upper = args.target_upper
    if upper is not None and upper == args.target:
        raise ValueError(f"--target-upper {upper!r} is the --target column; expected another "
                         "column, of the upper bounds of the times (for a row with an exact "
                         "time, its upper bound equals its lower bound)")
    if upper is not None and upper in (args.group, args.offset):
        raise ValueError(f"--target-upper {upper!r} is the "
                         f"{'--group' if upper == args.group else '--offset'} column; "
                         "expected the column of the upper bounds of the times")


def named_loss(params: Dict[str, Any]) -> Any:
    """The loss ``--loss`` names, created with ``--loss-params`` (None without ``--loss``)."""
    if params.get("loss") is None:
        return None
    return registry.create("loss", params["loss"], params.get("loss_params"))


def check_target_options(args: argparse.Namespace, loss: Any, name: Any) -> None:
    """Refuse ``--target-upper`` without a loss of interval targets (``aft``), and such a
    loss without it, before the data is read (``name``: the ``--loss`` value)."""
    bounds = bool(getattr(loss, "target_bounds", False))
    if args.target_upper is not None and not bounds:
        raise ValueError(f"--target-upper {args.target_upper!r} gives each row an upper bound "
                         "of its time, for a loss of interval targets; expected --loss aft "
                         f"with it (--target {args.target!r} then holds the lower bounds), or "
                         "no --target-upper")
    if bounds and args.target_upper is None:
        raise ValueError(f"--loss {name} fits intervals of times: it needs two "
                         f"columns, the lower bounds (--target {args.target!r}) and the upper "
                         "bounds; expected --target-upper COLUMN too (an upper bound equal to "
                         "the lower one: an exact time; empty or inf: right-censored)")


def output_path(args: argparse.Namespace) -> str:
    """The model file ``train`` writes (``--output``, default ``model.json``)."""
    return "model.json" if args.output is None else args.output


def read_training_data(args: argparse.Namespace) -> TrainingData:
    """Check the options and parameters, read DATA and print what was read (the task line
    on stderr; rows, features, task, categorical features and dropped columns on stdout).

    Raises
    ------
    ValueError, TypeError, OSError
        For bad options, parameters or data, naming the option, column or row.
    """
    categorical, drop, classes, params, loss = _checked_options(args)
    if args.spill is not None:
        raise ValueError(f"--spill {args.spill!r} is for --out-of-core training; expected "
                         "--out-of-core with it")
    table = read_table(args.data, args.header, args.sep, categorical=categorical)
    if args.group is not None and args.group not in table.columns:
        raise ValueError(f"--group {args.group!r}: {table.path} has no column {args.group!r}; "
                         f"expected a name among its columns {listed(table.names, 30)}")
    offset = offset_column(table, args.offset) if args.offset is not None else None
    upper = args.target_upper
    if upper is not None:
        y = read_bounds(table, args.target, upper)
        for option, names in (("--drop", drop), ("--categorical", categorical)):
            if upper in names:
                raise ValueError(f"{option} {','.join(names)!r} names the --target-upper column "
                                 f"{upper!r}; expected feature columns only (the target is "
                                 "never a feature)")
    names = feature_columns(table, args.target,
                            drop + [c for c in (args.group, args.offset, upper)
                                    if c is not None],
                            categorical)
    given, given_by = task_of_loss(args.task, loss, params.get("loss"))
    if upper is None:
        task, y, why = read_target(table, args.target, given, given_by)
    elif given != "regression":
        raise ValueError(f"--task {given} does not fit --target-upper {upper!r}: time bounds "
                         f"are fitted by a regression (BoostRegressor, --loss "
                         f"{params.get('loss')}); expected --task regression or no --task")
    else:
        task = "regression"
        why = f"boostlib: task: regression, from {given_by}" + \
            (" regression" if given_by == "--task" else "")
    sizes = query_sizes(table, args.group) if args.group is not None else None
    X = table.features(names)
    print(why, file=sys.stderr, flush=True)
    if loss is not None and task == "regression":
        _check_target(loss, y, args)
    cls = {"classification": classes[0], "regression": classes[1],
           "ranking": classes[2]}[task]
    params.update(categorical_parameter(cls, X, categorical, table.path))
    if task == "classification":
        labels = [str(c) for c in np.unique(y).tolist()]
        described = "classes " + ", ".join(labels[:10]) + \
            (f" and {len(labels) - 10} more" if len(labels) > 10 else "")
    elif task == "ranking":
        described = f"{sizes.size} queries in column {args.group!r}"
    elif isinstance(loss, SURVIVAL_LOSSES):
        described = f"loss {params['loss']}, {survival_counts(y)}"
    else:
        described = "numeric target"
    target = repr(args.target) if upper is None else f"{args.target!r} to {upper!r}"
    print(f"{args.data}: {table.n_rows} rows, {X.shape[1]} features, target {target} "
          f"-> {task} ({described})")
    if X.categories:
        shown = [f"{n!r} ({len(levels)} level{'s' if len(levels) != 1 else ''})"
                 for n, levels in list(X.categories.items())[:10]]
        more = len(X.categories) - len(shown)
        print("categorical features: " + ", ".join(shown) + (f" and {more} more" if more else ""))
    ids = identifier_columns(X)
    if ids:
        one = len(ids) == 1
        print(f"boostlib: warning: {plural(ids)} {listed(ids)} {'has' if one else 'have'} a "
              "different value in every row, like an identifier: as a categorical feature "
              f"{'it' if one else 'each'} fits the training rows and tells nothing about new "
              f"ones; --drop {shlex.quote(','.join(ids))} leaves {'it' if one else 'them'} out",
              file=sys.stderr)
    if drop:
        print(f"dropped {plural(drop)}: {listed(drop, len(drop))}")
    return TrainingData(table, X, y, task, cls, params, sizes, offset)


def _check_target(loss: Any, y: np.ndarray, args: argparse.Namespace) -> None:
    """``loss.validate_target(y)`` before training, its errors led by the target's option
    and column (``--target 'time': loss 'cox': every row is censored ...``); a Cox time of
    0 is refused naming its data row."""
    if isinstance(loss, CoxLoss) and y.ndim == 1 and np.any(y == 0):
        row = int(np.argmax(y == 0))
        raise ValueError(f"--target {args.target!r} is 0 in data row {row + 1}; with --loss "
                         f"{loss.name} a time is signed (> 0: an event at that time, < 0: "
                         "right-censored at minus it), so 0 says neither; expected a time "
                         "other than 0")
    try:
        loss.validate_target(y)
    except ValueError as exc:
        column = f"--target {args.target!r}" if args.target_upper is None else \
            f"--target {args.target!r} and --target-upper {args.target_upper!r}"
        raise ValueError(f"{column}: {one_line(exc)}") from None


def _checked_options(args: argparse.Namespace) -> Tuple[List[str], List[str], Any,
                                                        Dict[str, Any], Any]:
    """The checked options of ``train``: the categorical and dropped columns, the estimator
    classes, the estimator parameters and the loss ``--loss`` names (None without it)."""
    check_data_name(args.data)
    check_train_options(args)
    categorical = list(dict.fromkeys(args.categorical or ()))
    drop = list(dict.fromkeys(args.drop or ()))
    classes = estimator_classes()
    params = {name: getattr(args, name) for name in args.estimator_params
              if hasattr(args, name)}
    check_parameters(classes[TASKS.index(args.task) if args.task else 1], params,
                     args.eval_fraction, args.cv)
    loss = named_loss(params)
    check_target_options(args, loss, params.get("loss"))
    return categorical, drop, classes, params, loss


def run_train(args: argparse.Namespace) -> int:
    if is_out_of_core(args):
        if args.cv is not None:
            raise ValueError(f"--cv {args.cv} reads the rows in memory; expected no --cv with "
                             "--out-of-core or a folder of Parquet files")
        categorical, drop, classes, params, loss = _checked_options(args)
        return run_out_of_core(args, {"classification": classes[0], "regression": classes[1]},
                               params, categorical, drop, loss)
    data = read_training_data(args)
    if args.cv is not None:
        from .cv import run_cv
        return run_cv(args, data)
    X, y, sizes, offset, cls = data.X, data.y, data.sizes, data.offset, data.cls
    model = cls(**data.params)
    seed = getattr(args, "random_state", None)
    fit_rows, eval_rows = (split_rows(data.table.n_rows, args.eval_fraction, seed)
                           if sizes is None else split_queries(sizes, args.eval_fraction, seed))
    if data.task == "classification" and eval_rows is not None:
        unseen = np.setdiff1d(y[eval_rows], y[fit_rows])
        if unseen.size:
            raise ValueError(f"--eval-fraction {args.eval_fraction:g} holds out every row of "
                             f"class {', '.join(show_value(c) for c in unseen[:5].tolist())}, so "
                             "the model cannot learn it; expected each class in the training "
                             "rows: use a smaller --eval-fraction or another --random-state")
    eval_set = None if eval_rows is None else [(X.take(eval_rows), y[eval_rows])]
    groups: Dict[str, Any] = {}
    if offset is not None:
        groups["init_score"] = offset[fit_rows]
        if eval_rows is not None:
            groups["eval_init_score"] = [offset[eval_rows]]
    if sizes is not None:
        query = np.repeat(np.arange(sizes.size), sizes)
        groups["group"] = run_lengths(query[fit_rows])
        if eval_rows is not None:
            groups["eval_group"] = [run_lengths(query[eval_rows])]
    start = time.perf_counter()
    model.fit(X.take(fit_rows), y[fit_rows], eval_set=eval_set, **groups)
    print(f"trained {cls.__name__} on {fit_rows.size} rows in "
          f"{time.perf_counter() - start:.2f} s: {model.n_trees_} trees")
    if eval_rows is None:
        print(f"evaluation on the training rows: {evaluation(model, X, y, sizes, offset)}")
    else:
        eval_group = groups["eval_group"][0] if sizes is not None else None
        eval_offset = None if offset is None else offset[eval_rows]
        print(f"evaluation on {eval_rows.size} held-out rows: "
              f"{evaluation(model, eval_set[0][0], eval_set[0][1], eval_group, eval_offset)}")
    output = output_path(args)
    model.save_model(output)
    print(f"model written to {output}")
    return 0


def add_train(sub: Any) -> None:
    train = sub.add_parser(
        "train", help="train a model on a CSV or Parquet file and write a model file",
        description="Train a BoostClassifier (binary or multiclass), BoostRegressor or "
                    "BoostRanker on DATA,\nprint its evaluation (binary: logloss, AUC and "
                    "accuracy; multiclass: multiclass\nlogloss and accuracy; regression: RMSE, "
                    "MAE and R^2; survival, --loss cox or aft:\nC-index and loss; ranking: "
                    "NDCG@10 and MAP@10) and write the model file.",
        epilog=_TRAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    train.add_argument("data", metavar="DATA", help="training data (CSV, TSV or Parquet)")
    train.add_argument("--target", required=True, metavar="COLUMN", type=column_name,
                       help="name of the target column (its 0-based index without a header)")
    train.add_argument("--target-upper", type=column_name, default=None, metavar="COLUMN",
                       help="with a loss of interval targets (--loss aft): the column of each "
                            "row's upper bound of the time, --target holding the lower bound "
                            "(XGBoost's label_lower_bound and label_upper_bound). Equal bounds: "
                            "an exact time; an empty, NA or inf upper bound: right-censored; a "
                            "lower bound of 0: left-censored. Not a feature")
    train.add_argument("--output", "-o", default=None, metavar="MODEL.json",
                       help="model file to write (default: model.json); not with --cv")
    train.add_argument("--task", choices=TASKS, default=None,
                       help=f"default: regression for a --loss that is neither a "
                            f"classification nor a ranking loss, else inferred from the "
                            f"target and printed on stderr: {TASK_RULE} (see 'task:' below)")
    train.add_argument("--group", type=column_name, default=None, metavar="COLUMN",
                       help="query id column for --task ranking (BoostRanker): the rows of a "
                            "query are consecutive; not a feature. --eval-fraction then holds "
                            "out whole queries")
    train.add_argument("--offset", type=column_name, default=None, metavar="COLUMN",
                       help="column of raw-score offsets (the estimators' init_score), e.g. "
                            "log(exposure) for a Poisson model of counts: training starts "
                            "from them and the model learns the rest; not a feature. "
                            "'predict --offset COLUMN' adds them back")
    train.add_argument("--eval-fraction", type=fraction_option, default=0.0, metavar="F",
                       help="hold out this fraction of the rows (drawn with --random-state) "
                            "for evaluation and early stopping (default: 0, evaluate on the "
                            "training rows)")
    train.add_argument("--categorical", "--categorical-features", dest="categorical",
                       type=column_list, action="extend", default=None, metavar="COLS",
                       help="comma-separated feature columns to treat as categorical even if "
                            "they hold numbers (each distinct text is a level); text columns "
                            "are categorical without it. Sets the estimator's "
                            "categorical_features")
    train.add_argument("--drop", type=column_list, action="extend", default=None,
                       metavar="COLS",
                       help="comma-separated columns to leave out of the features (e.g. an ID); "
                            "'predict' ignores them too")
    folds = train.add_argument_group(
        "cross-validation", "--cv K trains no model file: it cross-validates the options' "
                            "estimator with boostlib.cv and prints the mean and standard "
                            "deviation over the folds of every score, by iteration")
    folds.add_argument("--cv", type=folds_option, default=None, metavar="K",
                       help="K-fold cross-validation instead of one model: each of K folds "
                            "(stratified by class for classification, whole queries for "
                            "ranking, drawn with --random-state, 0 when not given) is held "
                            "out in turn and scored after every iteration; "
                            "--early-stopping-rounds stops every fold when the mean of the "
                            "first score (the first --eval-metric, else the loss) has not "
                            "improved for N iterations")
    folds.add_argument("--cv-output", default=None, metavar="FILE.csv",
                       help="with --cv: write the mean and standard deviation of every score "
                            "at every iteration as CSV (columns iteration, <score>-mean, "
                            "<score>-std, ...)")
    folds.add_argument("--oof-output", default=None, metavar="FILE.csv",
                       help="with --cv: write every row's out-of-fold prediction (by the model "
                            "of the fold that held it out, at the best iteration with early "
                            "stopping) as CSV, in file order: its fold, then the columns "
                            "'boostlib predict' writes")
    add_data_options(train)
    data = train.add_argument_group(
        "data larger than memory", "read DATA in batches and keep only its bins (one byte a "
        "value) and target; the model is the one trained in memory. Not with --group or "
        "--offset; the target must be numeric")
    data.add_argument("--out-of-core", action="store_true",
                      help="read DATA in batches (always for a folder of Parquet files)")
    data.add_argument("--batch-rows", type=int_option(1), default=BATCH_ROWS, metavar="N",
                      help=f"rows per batch read from Parquet files (default: {BATCH_ROWS}; "
                           "CSV files are read in blocks of 8 MiB)")
    data.add_argument("--spill", default=None, metavar="DIR",
                      help="keep the binned matrix in a temporary file in this folder, mapped "
                           "in memory (the system can page it out), not in memory")
    train.set_defaults(func=run_train, estimator_params=add_estimator_options(train))

