"""Input and hyper-parameter checks with messages that name the parameter and the range."""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Optional, Tuple

import numpy as np

from .._compat import DataConversionWarning
from .._messages import listing, shown
from .frames import Columns, NamedMatrix
from .sparse_binning import check_sparse_X, is_sparse


def feature_names(X: Any) -> Optional[np.ndarray]:
    """Column names of a DataFrame-like ``X`` when they are all strings, else None."""
    cols = getattr(X, "columns", None)
    if cols is None:
        return None
    names = np.asarray(list(cols), dtype=object)
    if names.size and all(isinstance(c, str) for c in names):
        return check_distinct(names, "X's column names")
    return None


def check_distinct(names: np.ndarray, what: str) -> np.ndarray:
    """``names``, or a ValueError listing the names that occur more than once (columns are
    matched by name, at prediction and in categorical_features)."""
    unique, counts = np.unique(names.astype(str), return_counts=True)
    if unique.size != names.size:
        raise ValueError(f"{what} repeat {listing(unique[counts > 1], 5)}; expected distinct "
                         "names (columns are matched by name): rename them")
    return names


def _dtype_label(dtype: Any) -> str:
    return str(getattr(dtype, "name", dtype))


def check_numeric_columns(X: Any, name: str = "X") -> None:
    """Raise ValueError naming every column of a DataFrame-like ``X`` that is not numeric.

    Numbers and booleans are accepted (pandas' nullable ``Int64``, ``Float64`` and
    ``boolean`` too, their missing values becoming NaN); dates and the like are not, nor
    are labels (strings, objects, categoricals) outside the categorical features.
    """
    bad = [(col, dt) for col, dt in zip(X.columns, X.dtypes)
           if getattr(dt, "kind", "O") not in "biuf"]
    if not bad:
        return
    listed = ", ".join(f"{col!r} ({_dtype_label(dt)})" for col, dt in bad[:10])
    more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
    dates = any(getattr(dt, "kind", "O") in "mM" for _, dt in bad)
    raise ValueError(f"{name}: non-numeric column{'s' if len(bad) > 1 else ''} {listed}{more}: "
                     "numeric features must be numbers; "
                     + ("convert dates and durations to numbers first (e.g. seconds since a "
                        "reference time, with NaN for NaT); " if dates else "")
                     + "declare label columns in categorical_features (category, object and "
                     "string columns are categorical by default)")


def _frame_to_array(X: Any) -> np.ndarray:
    """A numeric DataFrame as float64, pandas' missing values (``pd.NA``) as NaN."""
    to_numpy = getattr(X, "to_numpy", None)
    if to_numpy is None:
        return np.asarray(X)
    try:
        return to_numpy(dtype=np.float64, na_value=np.nan)
    except TypeError:  # a DataFrame-like whose to_numpy has no na_value
        return np.asarray(X)


def check_X(X: Any, name: str = "X", min_rows: int = 1) -> Any:
    """``X`` as a 2-D float32 or float64 array; NaN allowed (missing), infinities rejected.

    float32 and float64 arrays are returned as they are, in any memory order (the binning
    kernels read both without a converted copy); anything else is converted to float64.
    A ``scipy.sparse`` matrix stays sparse (see
    ``boostlib.engine.sparse_binning.check_sparse_X``): it stands for ``X.toarray()``; an
    Arrow table of numbers stays :class:`~boostlib.engine.frames.Columns` (the training
    binning reads them column by column).
    Fewer than ``min_rows`` rows (0 for predictions, which are empty then) or no column
    are an error.
    """
    if is_sparse(X):
        return check_sparse_X(X, name, min_rows)
    if hasattr(X, "toarray") or type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(f"{name}: sparse input of type {type(X).__name__} is not supported; "
                        f"pass a scipy.sparse matrix or a dense array (e.g. {name}.toarray())")
    if isinstance(X, NamedMatrix) and isinstance(X.data, Columns):
        X = X.data
    if isinstance(X, Columns):
        check_rows(X.shape, name, min_rows)         # numbers only, kept as columns
        if X.shape[1] == 0:
            raise ValueError(f"{name}: found a table with 0 columns while a minimum of 1 is "
                             "required.")
        if X.has_infinity():
            raise ValueError(f"Input {name} contains infinity; only NaN (missing) is allowed "
                             "besides finite values")
        return X
    if isinstance(X, NamedMatrix):
        arr = X.data
    elif hasattr(X, "dtypes") and hasattr(X, "columns"):
        check_numeric_columns(X, name)
        arr = _frame_to_array(X)
    else:
        arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2D array, got a {arr.ndim}D array instead. "
                         "Reshape your data either using X.reshape(-1, 1) if your data has a "
                         "single feature or X.reshape(1, -1) if it contains a single sample")
    if arr.dtype not in (np.float32, np.float64):
        arr = as_float64(arr, name, "numbers", " (a DataFrame's text columns are categorical "
                         "features)")
    check_rows(arr.shape, name, min_rows)
    if arr.shape[1] == 0:
        raise ValueError(f"{name}: found array with 0 feature(s) (shape={arr.shape}) while a "
                         "minimum of 1 is required.")
    if _has_infinity(arr):
        raise ValueError(f"Input {name} contains infinity; only NaN (missing) is allowed "
                         "besides finite values")
    return arr


#: Values that numpy converts to float64 without a word, but changed: text (``"1"`` read as
#: 1.0), complex numbers (their imaginary part dropped), dates and durations (``NaT``
#: becoming -9.2e18).
_CHANGED_BY_FLOAT = (str, bytes, np.complexfloating, np.datetime64, np.timedelta64)
_KIND_NAMES = {"U": "text", "S": "bytes", "c": "complex numbers", "M": "dates",
               "m": "durations"}


def _changed_by_float(arr: np.ndarray) -> Optional[Any]:
    """The first value of ``arr`` that float64 would change without a word (the dtype of
    an empty array of such values), None when there is none."""
    kind = arr.dtype.kind
    if kind == "O":
        return next((v for v in arr.flat if isinstance(v, _CHANGED_BY_FLOAT)), None)
    if kind not in _KIND_NAMES:
        return None
    return arr.flat[0] if arr.size else arr.dtype


def _not_real_message(name: str, found: Any, expected: str, text_hint: str = "") -> str:
    """The message for a value (or dtype) ``found`` in ``name`` that is not a real number
    (``text_hint`` ends the one for text)."""
    dtype = found if isinstance(found, np.dtype) else np.asarray(found).dtype
    what = _KIND_NAMES[dtype.kind]
    if not isinstance(found, np.dtype):
        what += f", such as {str(found) if dtype.kind in 'mM' else shown(found)}"
    if dtype.kind == "c":
        return (f"{name}: Complex data not supported: {name} holds {what}; expected "
                f"{expected}, not complex numbers (their imaginary parts would be lost)")
    if dtype.kind in "mM":
        return (f"{name} holds {what} ({dtype}); expected {expected}: convert them to "
                "numbers first, e.g. to seconds since a reference time, with NaN for NaT")
    return (f"{name} holds {what}; expected {expected}: convert the text to numbers "
            f"first{text_hint}")


def as_float64(arr: np.ndarray, name: str, expected: str, text_hint: str = "") -> np.ndarray:
    """``arr`` as float64, or an error naming ``name`` and what was ``expected`` (a noun;
    ``text_hint`` ends the message for text).

    Raises
    ------
    ValueError
        For text, complex numbers, dates and durations, which numpy would convert without
        a word but changed, and for values beyond float64's range.
    TypeError
        For objects that are not numbers (e.g. a dict).
    """
    found = _changed_by_float(arr)
    if found is not None:
        raise ValueError(_not_real_message(name, found, expected, text_hint))
    try:
        return np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        kind = ValueError if isinstance(exc, OverflowError) else type(exc)
        raise kind(f"{name}: could not convert to float64 ({exc}); expected {expected}"
                   ) from exc


def check_rows(shape: Tuple[int, ...], name: str = "X", min_rows: int = 1) -> None:
    """ValueError (in scikit-learn's words) for data of ``shape`` with fewer than
    ``min_rows`` rows."""
    if shape[0] < min_rows:
        raise ValueError(f"{name}: found array with {shape[0]} sample(s) (shape={shape}) while "
                         f"a minimum of {min_rows} is required.")


def column_differences(expected: np.ndarray, got: np.ndarray, where: str) -> Optional[str]:
    """How the column names ``got`` differ from ``expected``, the names seen ``where`` (e.g.
    ``"at fit"``), naming the columns that differ; None when they are equal, in order."""
    if np.array_equal(expected, got):
        return None
    known, given = set(expected), set(got)
    missing = [n for n in expected if n not in given]
    unseen = [n for n in got if n not in known]
    if missing and unseen:
        return f"lacks {listing(missing)} and has {listing(unseen)}, unseen {where}"
    if missing:
        return f"lacks {listing(missing)}"
    if unseen:
        return f"has {listing(unseen)}, unseen {where}"
    j = int(np.argmax(np.asarray(expected) != np.asarray(got)))
    return (f"has the columns seen {where} in another order: column {j} is {shown(got[j])}, "
            f"{where} {shown(expected[j])}")


def check_init_score(init_score: Any, n_rows: int, name: str = "init_score",
                     first_row: int = 0) -> Optional[np.ndarray]:
    """Offsets of the raw scores (LightGBM's ``init_score``, XGBoost's ``base_margin``):
    None, or finite float64 of shape (n_rows,) or (n_rows, n_outputs).

    ``first_row`` numbers the first of them in the messages (a partition's offsets are
    rows ``first_row ...`` of the whole).

    Raises
    ------
    ValueError
        Naming ``name``, for another number of rows, more than two dimensions, or a value
        that is not finite (and its row).
    """
    if init_score is None:
        return None
    arr = as_float64(np.asarray(init_score), name, "raw-score offsets (numbers)")
    if arr.ndim not in (1, 2) or arr.shape[0] != n_rows:
        raise ValueError(f"{name} has shape {arr.shape}; expected ({n_rows},) or "
                         f"({n_rows}, n_outputs): one offset per row (per output)")
    bad = ~np.isfinite(arr)
    if bad.any():
        row = int(np.argmax(bad.any(axis=1) if arr.ndim == 2 else bad))
        raise ValueError(f"{name}[{first_row + row}] is "
                         f"{arr.reshape(n_rows, -1)[row].tolist()}; "
                         "expected finite raw-score offsets (an offset is added to the raw "
                         "score, not a missing value)")
    return arr


def offsets(init_score: Optional[np.ndarray], n_outputs: int, name: str = "init_score"
            ) -> Optional[np.ndarray]:
    """Checked offsets (:func:`check_init_score`) output-major, (n_outputs, n_rows), as
    the engine holds raw scores; None stays None.

    Raises
    ------
    ValueError
        When their columns are not one per output, naming ``name``.
    """
    if init_score is None:
        return None
    check_offset_columns(init_score.shape, n_outputs, name)
    if init_score.ndim == 1:
        init_score = init_score[:, None]
    return np.ascontiguousarray(init_score.T)


def check_offset_columns(shape: Tuple[int, ...], n_outputs: int, name: str = "init_score"
                         ) -> None:
    """ValueError naming ``name`` unless offsets of ``shape`` ((n_rows,) or
    (n_rows, n_columns)) have one column per output of the loss (1-D: one column)."""
    columns = 1 if len(shape) == 1 else int(shape[1])
    if columns != n_outputs:
        raise ValueError(f"{name} has {columns} column(s); the loss has "
                         f"{n_outputs} output(s): expected shape ({shape[0]},"
                         f"{' ' + str(n_outputs) if n_outputs > 1 else ''})")


#: How a prediction's message about its columns starts (scikit-learn's words).
AT_FIT = "The feature names should match those that were passed during fit: X"


def check_columns(expected: Optional[np.ndarray], got: Optional[np.ndarray], what: str,
                  where: str) -> None:
    """ValueError ``"<what> <differences>"`` (:func:`column_differences`) when the column
    names ``got`` differ from ``expected``, those seen ``where``; nothing when either is
    unknown (None)."""
    if expected is None or got is None:
        return
    differences = column_differences(expected, got, where)
    if differences:
        raise ValueError(f"{what} {differences}")


def _has_infinity(arr: np.ndarray) -> bool:
    """Whether the 2-D ``arr`` holds +-inf, tested a slice of rows at a time: a mask as large
    as ``arr`` would cost more to allocate (and fault in) than the test itself."""
    step = max(1, (1 << 16) // max(1, arr.shape[1]))
    return any(np.isinf(arr[start:start + step]).any() for start in range(0, arr.shape[0], step))


def check_y(y: Any, n_rows: int, numeric: bool = True, targets: bool = False) -> np.ndarray:
    """``y`` as a 1-D array of ``n_rows`` entries (a column vector is raveled with a warning):
    float64 when ``numeric``, else class labels as they are (complex numbers, dates and
    durations refused; floats finite). With ``targets``, a numeric ``(n_rows, K)`` array of
    ``K >= 2`` targets is kept 2-D (float64, C order); +inf is allowed there (the upper
    bounds of interval targets, see :attr:`boostlib.api.Loss.target_bounds`)."""
    if y is None:
        raise ValueError("this estimator requires y to be passed, but the target y is None")
    arr = np.asarray(y)
    if targets and numeric and arr.ndim == 2 and arr.shape[1] > 1:
        if arr.shape[0] != n_rows:
            raise ValueError(f"y has {arr.shape[0]} rows but X has {n_rows}")
        num = np.ascontiguousarray(as_float64(arr, "y", "numbers"))
        # +inf is kept for interval targets (an AFT row's upper bound: right-censored);
        # losses of other targets refuse it in their validate_target
        if np.isnan(num).any() or np.isneginf(num).any():
            raise ValueError("Input y contains NaN or -infinity")
        return num
    if arr.ndim == 2 and arr.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; it was "
                      "raveled to shape (n_samples,)", DataConversionWarning, stacklevel=3)
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"y: expected a 1D array, got shape {arr.shape}")
    if arr.shape[0] != n_rows:
        raise ValueError(f"y has {arr.shape[0]} entries but X has {n_rows} rows")
    if not numeric and arr.dtype.kind in "cmM":
        raise ValueError(_not_real_message("y", _changed_by_float(arr), "class labels"))
    if numeric or arr.dtype.kind == "f":
        num = as_float64(arr, "y", "numbers")
        if np.isnan(num).any():
            raise ValueError("Input y contains NaN")
        if np.isinf(num).any():
            raise ValueError("Input y contains infinity")
        if numeric:
            return num
    return arr


def check_sample_weight(sample_weight: Any, n_rows: int) -> Optional[np.ndarray]:
    """``sample_weight`` as float64 of shape (n_rows,), finite and >= 0, or None."""
    if sample_weight is None:
        return None
    w = as_float64(np.asarray(sample_weight), "sample_weight", "numbers")
    if w.ndim == 0:
        w = np.full(n_rows, float(w))
    if w.shape != (n_rows,):
        raise ValueError(f"sample_weight.shape == {w.shape}, expected ({n_rows},)")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("sample_weight must be finite and non-negative")
    if not w.sum() > 0:
        raise ValueError("sample_weight must have a positive sum; the weights are all zero")
    return np.ascontiguousarray(w)


def check_group(group: Any, n_rows: int, what: str = "group") -> Optional[np.ndarray]:
    """Query group sizes as int64 of shape (n_groups,), each >= 1, summing to ``n_rows``
    (rows of one query are consecutive), or None."""
    if group is None:
        return None
    arr = np.asarray(group)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iuf":
        raise ValueError(f"{what} must be a non-empty 1-D array of query sizes; got an array "
                         f"of shape {arr.shape} and dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{what} must hold whole numbers (query sizes)")
    if np.any(arr < 1):
        raise ValueError(f"{what} holds a query size below 1 ({shown(arr.min())}); every query "
                         "needs at least one row")
    sizes = arr.astype(np.int64)
    if int(sizes.sum()) != n_rows:
        raise ValueError(f"{what} sums to {int(sizes.sum())} rows; the data has {n_rows} "
                         "(group holds the number of rows of each query, in row order)")
    return np.ascontiguousarray(sizes)


def check_number(name: str, value: Any, low: float, high: float = np.inf, *,
                 integer: bool = False, low_open: bool = False) -> None:
    """Raise ValueError/TypeError unless ``low <= value <= high`` (``low < value`` if open)."""
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name}={shown(value)} is invalid; expected "
                        f"{'an int' if integer else 'a number'}")
    try:
        number = float(value)
    except OverflowError:                   # an int beyond float's range
        number = math.inf if value > 0 else -math.inf
    ok = (number > low if low_open else number >= low) and number <= high \
        and math.isfinite(number)
    if not ok:
        lo = "(" if low_open else "["
        raise ValueError(f"{name}={shown(value)} is invalid; expected a value in "
                         f"{lo}{low}, {high}]")


def check_choice(name: str, value: Any, choices: Tuple[str, ...]) -> None:
    """Raise ValueError unless ``value`` is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={shown(value)} is invalid; expected one of {list(choices)}")
