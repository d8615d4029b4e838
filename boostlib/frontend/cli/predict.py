"""``boostlib predict``: the predictions of a model file for a table, as CSV."""
from __future__ import annotations

import argparse
import csv
import io
import sys
from typing import IO, Any, List, Optional, Sequence, Tuple

import numpy as np

from ...io.tables import Table, read_table
from .columns import column_name, listed, offset_column, plural
from .files import check_data_name, check_output, write_output
from .options import add_data_options, one_line


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
    encoder = getattr(inner, "encoder", None)
    mask = inner.ensemble.bin_mapper.categorical_ if encoder is None else encoder.categorical
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
            raise ValueError(f"{table.path}: {plural(numeric)} {listed(numeric)} "
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
                         f"{plural(text)} {listed(text)} "
                         f"{'holds' if len(text) == 1 else 'hold'} text")
    return table.features(table.names).values


def prediction_rows(model: Any, X: Any, init_score: Optional[np.ndarray] = None
                    ) -> Tuple[List[str], List[Sequence[str]]]:
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
    offset = {} if init_score is None else {"init_score": init_score}
    if hasattr(model, "classes_"):
        proba = model.predict_proba(X, **offset)
        labels = [str(c) for c in model.predict(X, **offset).tolist()]
        if model.classes_.size > 2:
            header = ["prediction"] + [f"proba_{c}" for c in model.classes_.tolist()]
            return header, [(c,) + tuple(repr(v) for v in row)
                            for c, row in zip(labels, proba.tolist())]
        return ["prediction", "probability"], [(c, repr(float(p)))
                                               for c, p in zip(labels, proba[:, 1])]
    return ["prediction"], [(repr(float(v)),) for v in model.predict(X, **offset)]


def _load_model(path: str, data: str) -> Any:
    """The model in ``path``; its errors name the file (and hint at swapped arguments)."""
    from ..estimator_files import load_estimator

    try:
        return load_estimator(path)
    except ValueError as exc:
        message = one_line(exc)
        if path not in message:
            message = f"MODEL.json {path!r}: {message}"
        if data.lower().endswith(".json") and not path.lower().endswith(".json"):
            message += " (the model file comes first: boostlib predict MODEL.json DATA)"
        raise ValueError(message) from None


def _write_predictions(fh: IO[str], header: List[str], rows: List[Sequence[str]]) -> None:
    writer = csv.writer(fh, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)


def run_predict(args: argparse.Namespace) -> int:
    if args.output is not None:
        check_output(args.output, {"DATA": args.data, "MODEL.json": args.model},
                     "predictions.csv")
    model = _load_model(args.model, args.data)
    check_data_name(args.data)
    categorical = model_categorical_features(model)
    table = read_table(args.data, args.header, args.sep, categorical=categorical)
    X = _model_features(model, table, categorical)
    offset = offset_column(table, args.offset) if args.offset is not None else None
    header, rows = prediction_rows(model, X, offset)
    if args.output is None:
        _write_predictions(sys.stdout, header, rows)
        return 0
    text = io.StringIO()
    _write_predictions(text, header, rows)
    write_output(args.output, text.getvalue().encode("utf-8"), "predictions file")
    print(f"{len(rows)} predictions written to {args.output}")
    return 0


def add_predict(sub: Any) -> None:
    predict = sub.add_parser(
        "predict", help="predict DATA with a model file and write the predictions as CSV",
        description="Predict every row of DATA with the model in MODEL.json.",
        epilog=_PREDICT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    predict.add_argument("model", metavar="MODEL.json", help="model file from 'boostlib train' "
                                                             "or save_model()")
    predict.add_argument("data", metavar="DATA", help="rows to predict (CSV, TSV or Parquet)")
    predict.add_argument("--output", "-o", default=None, metavar="PRED.csv",
                         help="predictions file (default: standard output)")
    predict.add_argument("--offset", type=column_name, default=None, metavar="COLUMN",
                         help="column of the rows' raw-score offsets, added to the model's raw "
                              "scores (for a model trained with 'train --offset')")
    add_data_options(predict)
    predict.set_defaults(func=run_predict)
