"""Categorical features: which columns they are, and their values as integer codes.

A categorical column reaches the binning as float codes ``0, 1, 2, ...`` (NaN: missing).
Where the input carries labels (a pandas ``category``, ``object`` or ``string`` column, or a
table column with ``categories``), the code of a value is its position in the column's
*levels*, and the levels travel with the data and the model, so a frame whose categories are
ordered differently, or miss some, or hold new ones, is coded against the training levels:
values unseen in training become missing. A numeric array's categorical columns must already
hold codes: non-negative integers up to :data:`MAX_CODE`.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from .._messages import listing, shown
from .sparse_binning import is_sparse, reject_categorical

#: The largest category code (about a million levels).
MAX_CODE = 2**20 - 1

Levels = Optional[List[Any]]


def _is_frame(X: Any) -> bool:
    return hasattr(X, "columns") and (hasattr(X, "dtypes") or hasattr(X, "categories"))


def label_column(dtype: Any) -> bool:
    """Whether a pandas column of ``dtype`` holds labels: category, object, or text of any
    storage (``str``, ``string``, Arrow ``string`` and ``large_string``)."""
    name = str(getattr(dtype, "name", dtype))
    return name == "category" or name.startswith(("string", "large_string")) \
        or getattr(dtype, "kind", "") in ("O", "U")


def sorted_levels(values: Any) -> List[Any]:
    """The levels of labels ``values`` (none missing) that carry no order of their
    own (text): distinct, sorted, numbers and text apart (by type name, then value; text
    alone: Python's string order, as Arrow text columns are sorted)."""
    return sorted(set(values), key=lambda v: (str(type(v)), v))


def label_kind(dtype: Any) -> Optional[str]:
    """How a pandas column of ``dtype`` is coded: ``"dictionary"`` (a ``category``: its
    categories are the levels, in order), ``"text"`` (``object`` or ``string``: its sorted
    distinct values), None (numbers)."""
    if str(getattr(dtype, "name", dtype)) == "category":
        return "dictionary"
    return "text" if label_column(dtype) else None


def categorical_spec(spec: Any) -> List[Any]:
    """The entries of a ``categorical_features`` list, mask or array (not "auto" or None),
    or a TypeError naming the parameter."""
    if isinstance(spec, (str, bytes, dict)) or not hasattr(spec, "__iter__") \
            or getattr(spec, "ndim", 1) != 1:
        raise TypeError(f"categorical_features={shown(spec)} is invalid; expected 'auto', None, a "
                        "list of column names or indices, or a boolean mask")
    return list(spec)


def categorical_mask(X: Any, spec: Any, n_features: int,
                     names: Optional[np.ndarray]) -> np.ndarray:
    """Which of the ``n_features`` columns of ``X`` are categorical.

    Parameters
    ----------
    X : array-like or DataFrame
    spec : "auto", None, sequence of names or indices, or boolean mask
        ``"auto"`` (and None): a DataFrame's category/object/string columns and a table's
        ``categories`` columns; otherwise exactly the columns named, indexed or masked
        (label columns not listed are an error).
    n_features : int
    names : ndarray of str, optional
        The column names, for names in ``spec``.
    """
    auto = np.zeros(n_features, dtype=bool)
    if _is_frame(X):
        table_cats = getattr(X, "categories", None) or {}
        dtypes = list(getattr(X, "dtypes", [None] * n_features))
        for j, col in enumerate(X.columns):
            auto[j] = col in table_cats or (dtypes[j] is not None and label_column(dtypes[j]))
    if spec is None or (isinstance(spec, str) and spec == "auto"):
        return auto
    items = categorical_spec(spec)
    mask = np.zeros(n_features, dtype=bool)
    if items and all(isinstance(v, (bool, np.bool_)) for v in items):
        if len(items) != n_features:
            raise ValueError(f"categorical_features: a boolean mask needs {n_features} "
                             f"entries, got {len(items)}")
        mask[:] = items
    else:
        for v in items:
            if isinstance(v, str):
                if names is None or v not in set(names):
                    raise ValueError(f"categorical_features: no column named {shown(v)}"
                                     + ("" if names is None else
                                        f"; expected a name among the columns {listing(names)}"))
                mask[list(names).index(v)] = True
            elif isinstance(v, (int, np.integer)) and -n_features <= v < n_features:
                mask[int(v)] = True
            else:
                raise ValueError(f"categorical_features: {shown(v)} is not a column name or an "
                                 f"index in [0, {n_features})")
    missed = auto & ~mask
    if missed.any():
        j = int(np.argmax(missed))
        label = names[j] if names is not None else j
        raise ValueError(f"column {shown(label)} holds labels (text or category) but is not in "
                         "categorical_features; declare it categorical or encode it as numbers")
    return mask


def check_codes(values: np.ndarray, label: Any) -> None:
    """Raise ValueError unless the non-missing ``values`` are integers in ``[0, MAX_CODE]``."""
    v = values[~np.isnan(values)]
    if v.size == 0:
        return
    bad = (v < 0) | (v > MAX_CODE) | (v != np.floor(v))
    if bad.any():
        x = v[np.argmax(bad)]
        why = ("more levels than supported" if x > MAX_CODE and x == np.floor(x)
               else "negative" if x < 0 else "not an integer")
        raise ValueError(f"categorical feature {shown(label)} (categorical_features): value "
                         f"{float(x)!r} is {why}; categorical columns of numeric arrays hold "
                         f"integer codes in [0, {MAX_CODE}] (NaN: missing)")


def _levels_of(column: Any, table_levels: Levels) -> Tuple[np.ndarray, List[Any]]:
    """(float codes, levels) of one label column."""
    if table_levels is not None:            # a table column: codes with their levels
        return np.asarray(column, dtype=np.float64), list(table_levels)
    cat = getattr(column, "cat", None)
    if cat is not None:                     # pandas category
        codes = np.asarray(cat.codes, dtype=np.float64)
        codes[codes < 0] = np.nan
        return codes, list(cat.categories)
    values = np.asarray(column, dtype=object)
    present = np.array([not is_missing(v) for v in values], dtype=bool)
    levels = sorted_levels({v for v in values[present]})
    index = {v: i for i, v in enumerate(levels)}
    codes = np.full(values.size, np.nan)
    codes[present] = [index[v] for v in values[present]]
    return codes, levels


def is_missing(v: Any) -> bool:
    """Whether a label ``v`` is missing: None, NaN, pandas' ``NA`` (or anything that is not
    equal to itself)."""
    if v is None:
        return True
    try:
        return bool(v != v)                # NaN, pd.NA raises TypeError
    except TypeError:
        return True


def encode(X: Any, mask: np.ndarray, to_numeric: Any) -> Tuple[np.ndarray, List[Levels]]:
    """``X`` as a float matrix with its categorical columns as codes, and their levels.

    ``to_numeric`` converts the numeric columns (a frame restricted to them, or the whole
    array): :func:`boostlib.engine.validation.check_X`. Levels are None for a numeric
    array's categorical columns (their values are the codes).
    """
    if is_sparse(X):                        # scipy.sparse X: numeric features only
        reject_categorical(mask, "categorical_features")
    levels: List[Levels] = [None] * int(mask.size)
    if not _is_frame(X) or not mask.any():
        arr = to_numeric(X)
        for j in np.flatnonzero(mask):
            check_codes(arr[:, j], j)
        return arr, levels
    columns = list(X.columns)
    numeric = [c for c, m in zip(columns, mask) if not m]
    table_cats = getattr(X, "categories", None) or {}
    out = np.empty((len(X), len(columns)))
    pandas = hasattr(X, "iloc")
    values = None if pandas else np.asarray(X.to_numpy())     # a table's NamedMatrix
    if numeric:
        out[:, ~mask] = to_numeric(X[numeric] if pandas else values[:, ~mask])
    for j in np.flatnonzero(mask):
        col = columns[j]
        column = X.iloc[:, j] if pandas else values[:, j]
        dtype = getattr(column, "dtype", None)
        if col in table_cats or (dtype is not None and label_column(dtype)):
            out[:, j], levels[j] = _levels_of(column, table_cats.get(col))
            if len(levels[j]) > MAX_CODE + 1:
                raise ValueError(f"categorical feature {shown(col)} has {len(levels[j])} levels: "
                                 f"more levels than supported (at most {MAX_CODE + 1})")
        else:                               # a numeric column declared categorical: codes
            out[:, j] = np.asarray(column, dtype=np.float64)
            check_codes(out[:, j], col)
    return out, levels


def translate(codes: np.ndarray, levels: Levels, target: Levels, label: Any) -> np.ndarray:
    """Codes of ``levels`` re-coded against the ``target`` levels (values absent from
    ``target``: NaN, i.e. missing). Without levels on either side the codes stay."""
    if levels is None or target is None or list(levels) == list(target):
        if levels is not None and target is None:
            raise ValueError(f"categorical feature {shown(label)}: the model was trained on codes, "
                             "not labels; pass the same codes")
        return codes
    index = {v: i for i, v in enumerate(target)}
    table = np.array([index.get(v, np.nan) for v in levels] + [np.nan], dtype=np.float64)
    c = np.where(np.isnan(codes), len(levels), codes).astype(np.intp)
    return table[c]


def encode_like(X: Any, mask: np.ndarray, target: Sequence[Levels], to_numeric: Any
                ) -> np.ndarray:
    """``X`` coded against the ``target`` levels of a training set or a model."""
    arr, levels = encode(X, mask, to_numeric)
    for j in np.flatnonzero(mask):
        arr[:, j] = translate(arr[:, j], levels[j], target[j], j)
    return arr
