"""Tables that are not pandas DataFrames: :class:`~boostlib.engine.frames.NamedMatrix`,
the form the checks and the categorical coding read besides pandas, and the Arrow tables
turned into it (pyarrow Tables and RecordBatches, polars DataFrames, and any object with the
Arrow PyCapsule stream interface, ``__arrow_c_stream__``).

An Arrow table's columns are read as a pandas DataFrame's are: numbers and booleans as
numbers (nulls: missing), dictionary-encoded columns (pyarrow dictionaries, polars ``Enum``)
as categorical features whose levels are the dictionary, in its order (what pandas'
``category`` gives), and text columns as categorical features whose levels are their sorted
distinct values (what pandas' ``object`` and ``string`` columns give). A polars
``Categorical`` is coded as text: its categories are global to the process, in the order
first seen, so their order is not the data's. The same data as a pandas DataFrame or as an
Arrow table therefore gives the same codes, the same model and the same predictions. pyarrow
is imported only when such a table is passed.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .._messages import listing, shown


class Columns:
    """A float matrix held as separate columns: an Arrow table's numeric columns, read
    without a copy where Arrow allows it (one chunk, no nulls, the matrix's type), so a
    fit on a table of numbers adds no copy of it. The binning reads it a column at a time
    (:class:`~boostlib.engine.binning.BinMapper`); anything else takes :meth:`to_array`.

    Parameters
    ----------
    arrays : list of ndarray
        The columns: 1-D, one length, all float32 or all float64.
    """

    ndim = 2

    def __init__(self, arrays: Sequence[np.ndarray], n_rows: int, dtype: Any):
        self.arrays = list(arrays)
        self.dtype = np.dtype(dtype)
        self.shape = (int(n_rows), len(self.arrays))
        if any(a.shape != (n_rows,) or a.dtype != self.dtype for a in self.arrays):
            raise ValueError(f"columns must be 1-D {self.dtype} arrays of {n_rows} rows")

    def column(self, j: int) -> np.ndarray:
        """Column ``j``, 1-D."""
        return self.arrays[j]

    def rows(self, which: np.ndarray) -> "Columns":
        """The rows ``which`` (a boolean mask or indices) of every column, copied."""
        arrays = [a[which] for a in self.arrays]
        n_rows = arrays[0].shape[0] if arrays else int(np.count_nonzero(which))
        return Columns(arrays, n_rows, self.dtype)

    def to_array(self) -> np.ndarray:
        """The matrix, Fortran-ordered (one copy)."""
        out = np.empty(self.shape, dtype=self.dtype, order="F")
        for j, a in enumerate(self.arrays):
            out[:, j] = a
        return out

    def has_infinity(self) -> bool:
        """Whether a column holds +-inf."""
        return any(np.isinf(a).any() for a in self.arrays)


class NamedMatrix:
    """A float matrix with column names, read by the estimators like a DataFrame.

    The estimators read ``columns`` (kept as ``feature_names_in_``), ``dtypes``,
    ``to_numpy`` and ``categories``, so models trained from a file or an Arrow table
    remember their feature names, and the levels of their categorical features, without
    pandas.

    Parameters
    ----------
    values : ndarray of shape (n_rows, n_columns), or Columns
        Numbers, and in categorical columns the codes ``0 .. K-1`` of their levels (NaN =
        missing). float32 and float64 values are kept as they are, in either memory order;
        other types are converted to float64. :class:`Columns` (numbers only) are kept as
        columns: ``data`` holds them, ``values`` copies them into a matrix.
    columns : sequence of str
    categories : mapping of str to sequence, optional
        The levels of each categorical column, by name: code ``i`` stands for
        ``categories[name][i]``. Numeric columns have no entry.

    Attributes
    ----------
    data : ndarray or Columns
        The values as given.
    columns : list of str
    categories : dict of str to list
    """

    def __init__(self, values: Any, columns: Sequence[str],
                 categories: Optional[Mapping[str, Sequence[Any]]] = None):
        if not isinstance(values, Columns):
            values = np.asarray(values)
            if values.dtype not in (np.float32, np.float64):
                values = values.astype(np.float64)
        self.data = values
        self.columns = list(columns)
        self.dtypes = [values.dtype] * len(self.columns)
        self.categories: Dict[str, List[Any]] = {
            name: list(levels) for name, levels in (categories or {}).items()}
        unknown = [name for name in self.categories if name not in self.columns]
        if unknown:
            raise ValueError(f"categories name column{'s' if len(unknown) > 1 else ''} "
                             f"{listing(unknown)} that the matrix does not have; expected "
                             f"names among its columns {listing(self.columns)}")

    @property
    def values(self) -> np.ndarray:
        """The matrix (a copy when the data are :class:`Columns`)."""
        return self.data.to_array() if isinstance(self.data, Columns) else self.data

    @property
    def shape(self) -> Tuple[int, int]:
        """``(n_rows, n_columns)``."""
        return self.data.shape

    def __len__(self) -> int:
        return self.data.shape[0]

    def to_numpy(self, dtype: Any = None, na_value: Any = None) -> np.ndarray:
        """The values (``na_value`` is accepted for pandas compatibility; NaN stays NaN)."""
        return self.values if dtype is None else self.values.astype(dtype, copy=False)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.to_numpy(dtype)

    def take(self, rows: np.ndarray) -> "NamedMatrix":
        """The given rows, same columns and categories (every level is kept)."""
        data = self.data.rows(rows) if isinstance(self.data, Columns) else self.data[rows]
        return NamedMatrix(data, self.columns, self.categories)


def is_arrow_table(X: Any) -> bool:
    """Whether ``X`` is a table read through Arrow: a pyarrow Table or RecordBatch, a
    polars DataFrame, or another object with ``__arrow_c_stream__`` (pandas DataFrames,
    which have it too, are read as pandas)."""
    module = type(X).__module__
    if module.startswith("pandas") or isinstance(X, np.ndarray):
        return False
    if module.startswith("polars") and type(X).__name__ == "LazyFrame":
        raise TypeError("X is a polars LazyFrame; expected a DataFrame: call .collect() "
                        "first")
    return hasattr(type(X), "__arrow_c_stream__") or (
        module.startswith("pyarrow") and type(X).__name__ in ("Table", "RecordBatch")) or (
        module.startswith("polars") and type(X).__name__ == "DataFrame")


def _pyarrow(X: Any) -> Any:
    try:
        import pyarrow
        import pyarrow.compute  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"X is a {type(X).__module__}.{type(X).__name__}, which boostlib "
                          f"reads through pyarrow, and pyarrow cannot be imported ({exc}); "
                          'install it: pip install "boostlib[io]" (or pip install pyarrow)'
                          ) from exc
    return pyarrow


def _type_error(name: str, column: str, arrow_type: Any, why: str) -> TypeError:
    return TypeError(f"{name}: column {shown(column)} has type {arrow_type}, {why}")


#: Arrow types whose values float32 holds exactly: a table of them only becomes a float32
#: matrix (half the memory of float64, and the same bins).
_SMALL = ("bool", "int8", "int16", "uint8", "uint16", "float", "halffloat")


def _unordered_categories(field: Any) -> bool:
    """Whether an Arrow field is a polars ``Categorical``: its dictionary holds categories
    global to the process, in the order they were first seen, not a category order."""
    return any(key.startswith(b"_PL_CATEGORICAL") for key in (field.metadata or {}))


def _text_codes(pa: Any, column: Any) -> Tuple[np.ndarray, List[str]]:
    """(float codes, sorted levels) of a text column, as pandas codes an object column."""
    pc = pa.compute
    if pa.types.is_dictionary(column.type):      # (string_view dictionaries do not decode)
        column = column.cast(pa.dictionary(column.type.index_type, pa.large_string()))
    column = pc.cast(column, pa.large_string())
    levels = sorted(pc.unique(column).drop_null().to_pylist())
    codes = pc.index_in(column, value_set=pa.array(levels, pa.large_string()))
    return pc.cast(codes, pa.float64()).to_numpy(zero_copy_only=False), levels


def _dictionary_codes(pa: Any, column: Any, name: str, label: str
                      ) -> Tuple[np.ndarray, List[Any]]:
    """(float codes, levels) of a dictionary-encoded column: its dictionary, in order."""
    pc = pa.compute
    value_type = column.type.value_type
    if pa.types.is_string(value_type) or pa.types.is_large_string(value_type) or \
            getattr(pa.types, "is_string_view", lambda t: False)(value_type):
        target = pa.large_string()
    elif pa.types.is_integer(value_type):
        target = pa.int64()
    else:
        raise _type_error(name, label, column.type, "a dictionary of neither text nor "
                          "integers; expected text or integer categories")
    column = column.cast(pa.dictionary(column.type.index_type, target)) \
        if value_type != target else column
    array = column.unify_dictionaries().combine_chunks()
    dictionary = array.dictionary
    codes = pc.cast(array.indices, pa.float64()).to_numpy(zero_copy_only=False).copy()
    levels = dictionary.to_pylist()
    if dictionary.null_count:             # a null category: its rows are missing
        present = np.flatnonzero(~np.asarray(dictionary.is_null()))
        renumber = np.full(len(levels) + 1, np.nan)
        renumber[present] = np.arange(present.size)
        codes = renumber[np.where(np.isnan(codes), len(levels), codes).astype(np.intp)]
        levels = [levels[i] for i in present]
    return codes, levels


def arrow_kind(pa: Any, field: Any) -> str:
    """How :func:`from_arrow` reads a column of an Arrow schema ``field``: ``"dictionary"``
    (categories whose levels are its dictionary, in order), ``"text"`` (categories whose
    levels are its sorted values; a polars ``Categorical`` too), ``"number"`` (numbers,
    booleans, nulls), or ``"other"`` (refused: dates, lists, ...)."""
    t = field.type
    if pa.types.is_dictionary(t):
        return "text" if _unordered_categories(field) else "dictionary"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or \
            getattr(pa.types, "is_string_view", lambda t: False)(t):
        return "text"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) \
            or pa.types.is_null(t):
        return "number"
    return "other"


def arrow_table(X: Any) -> Any:
    """An Arrow table (see :func:`is_arrow_table`) as a ``pyarrow.Table``."""
    pa = _pyarrow(X)
    if isinstance(X, pa.RecordBatch):
        return pa.Table.from_batches([X])
    if isinstance(X, pa.Table):
        return X
    if hasattr(type(X), "__arrow_c_stream__"):
        return pa.table(X)
    return X.to_arrow()                 # a polars DataFrame older than the stream interface


def from_arrow(X: Any, name: str = "X") -> NamedMatrix:
    """An Arrow table (see :func:`is_arrow_table`) as a :class:`NamedMatrix`.

    Raises
    ------
    TypeError
        Naming a column whose type is neither numeric, boolean, text nor dictionary (dates,
        durations, lists, ...) and the type.
    ImportError
        When pyarrow cannot be imported.
    """
    pa = _pyarrow(X)
    pc = pa.compute
    table = arrow_table(X)
    names = list(table.column_names)
    kinds: List[Tuple[str, Any]] = []
    for label, column, field in zip(names, table.columns, table.schema):
        t = column.type
        kind = arrow_kind(pa, field)
        if kind != "other":
            kinds.append((kind, column))
        elif pa.types.is_temporal(t):
            raise _type_error(name, label, t, "dates or durations; expected numbers, text or "
                              "categories: convert them to numbers first (e.g. seconds since "
                              "a reference time)")
        else:
            raise _type_error(name, label, t, "expected numbers, booleans, text or "
                              "dictionary-encoded categories")
    dtype = np.float32 if all(kind == "number" and str(column.type) in _SMALL
                              for kind, column in kinds) else np.float64
    target = pa.float32() if dtype == np.float32 else pa.float64()
    if all(kind == "number" for kind, _ in kinds):       # numbers only: no matrix copy
        arrays = [pc.cast(column, target).to_numpy() for _, column in kinds]
        return NamedMatrix(Columns(arrays, table.num_rows, dtype), names)
    values = np.empty((table.num_rows, len(names)), dtype=dtype, order="F")
    categories: Dict[str, List[Any]] = {}
    for j, (label, (kind, column)) in enumerate(zip(names, kinds)):
        if kind == "number":
            values[:, j] = pc.cast(column, target).to_numpy()
        else:
            codes, levels = (_text_codes(pa, column) if kind == "text" else
                             _dictionary_codes(pa, column, name, label))
            values[:, j] = codes
            categories[label] = levels
    return NamedMatrix(values, names, categories)


def as_frame(X: Any, name: str = "X") -> Any:
    """``X`` in a form the checks read: an Arrow table (see :func:`is_arrow_table`) as a
    :class:`NamedMatrix`, anything else as it is."""
    return from_arrow(X, name) if is_arrow_table(X) else X
