"""Reading data tables for the command line: CSV/TSV (optionally gzipped) and Parquet.

Only the standard library and numpy are needed for CSV (pandas is not a dependency);
Parquet needs pyarrow. A column is numeric when every field parses as a number or is a
missing-value token (:data:`MISSING_TOKENS`, read as NaN); any other column (and any column
named in ``categorical``) is kept as strings, and becomes a *categorical* feature in
:meth:`Table.features`: float codes ``0 .. K-1`` of its levels, sorted by their text, in a
:class:`NamedMatrix` whose ``categories`` map the column name to the levels. Numbers are
parsed by Python's ``float``, which rounds correctly, so the values are exactly those NumPy
or ``float()`` would read.
"""
from __future__ import annotations

import csv
import gzip
import io
import os
from dataclasses import dataclass
from typing import Any, Collection, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

#: Fields read as a missing value (NaN), in numeric and categorical columns alike, compared
#: case-insensitively.
MISSING_TOKENS = frozenset({"", "na", "nan", "n/a", "null", "none", "?"})
HEADER_CHOICES = ("auto", "yes", "no")
PARQUET_SUFFIXES = (".parquet", ".pq")


class NamedMatrix:
    """A float64 matrix with column names, accepted by the estimators like a DataFrame.

    The estimators read ``columns`` (kept as ``feature_names_in_``), ``dtypes``,
    ``to_numpy`` and ``categories``, so models trained from a file remember their feature
    names, and the levels of their categorical features, without pandas.

    Parameters
    ----------
    values : ndarray of shape (n_rows, n_columns)
        Numbers, and in categorical columns the codes ``0 .. K-1`` of their levels (NaN =
        missing).
    columns : sequence of str
    categories : mapping of str to sequence of str, optional
        The levels of each categorical column, by name: code ``i`` stands for
        ``categories[name][i]``. Numeric columns have no entry.

    Attributes
    ----------
    categories : dict of str to list of str
    """

    def __init__(self, values: np.ndarray, columns: Sequence[str],
                 categories: Optional[Mapping[str, Sequence[str]]] = None):
        self.values = np.ascontiguousarray(values, dtype=np.float64)
        self.columns = list(columns)
        self.dtypes = [self.values.dtype] * len(self.columns)
        self.categories: Dict[str, List[str]] = {
            name: list(levels) for name, levels in (categories or {}).items()}
        unknown = [name for name in self.categories if name not in self.columns]
        if unknown:
            raise ValueError(f"categories name column{'s' if len(unknown) > 1 else ''} "
                             f"{_listing(unknown)} that the matrix does not have; expected "
                             f"names among its columns {_listing(self.columns)}")

    @property
    def shape(self):
        """``(n_rows, n_columns)``."""
        return self.values.shape

    def __len__(self) -> int:
        return self.values.shape[0]

    def to_numpy(self, dtype: Any = None, na_value: Any = None) -> np.ndarray:
        """The values (``na_value`` is accepted for pandas compatibility; NaN stays NaN)."""
        return self.values if dtype is None else self.values.astype(dtype, copy=False)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.to_numpy(dtype)

    def take(self, rows: np.ndarray) -> "NamedMatrix":
        """The given rows, same columns and categories (every level is kept)."""
        return NamedMatrix(self.values[rows], self.columns, self.categories)


@dataclass
class Table:
    """Columns read from a file, in file order.

    Attributes
    ----------
    path : str
    names : list of str
        Column names (from the header, or ``"0"``, ``"1"``, ... without one).
    columns : dict of str to ndarray
        float64 for numeric columns (NaN = missing), object arrays of str otherwise (text
        columns, and the columns read as categorical; missing-value tokens kept as text).
    """

    path: str
    names: List[str]
    columns: Dict[str, np.ndarray]

    @property
    def n_rows(self) -> int:
        """Number of data rows."""
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def column(self, name: str) -> np.ndarray:
        """One column by name; ValueError listing the columns when it is absent."""
        if name not in self.columns:
            raise ValueError(f"{self.path}: no column {name!r}; columns are "
                             f"{_listing(self.names)}")
        return self.columns[name]

    @property
    def text_names(self) -> List[str]:
        """Names of the text columns (those read as strings), in file order."""
        return [n for n in self.names if self.columns[n].dtype.kind != "f"]

    def features(self, names: Sequence[str]) -> NamedMatrix:
        """The named columns as a float64 matrix; text columns become categorical.

        Parameters
        ----------
        names : sequence of str
            The feature columns, in the order wanted.

        Returns
        -------
        NamedMatrix
            Numeric columns as they are; each text column as the codes of its levels
            (:func:`categorical_codes`), with its levels in ``categories``.

        Raises
        ------
        ValueError
            Naming every missing column.
        """
        names = list(names)
        missing = [n for n in names if n not in self.columns]
        if missing:
            raise ValueError(f"{self.path}: missing column{'s' if len(missing) > 1 else ''} "
                             f"{_listing(missing)} (the model's features); columns are "
                             f"{_listing(self.names)}")
        values = np.empty((self.n_rows, len(names)))
        categories: Dict[str, List[str]] = {}
        for j, name in enumerate(names):
            col = self.columns[name]
            if col.dtype.kind == "f":
                values[:, j] = col
            else:
                values[:, j], categories[name] = categorical_codes(col)
        return NamedMatrix(values, names, categories)


def _listing(names: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _number(field: str) -> Optional[float]:
    """The value of a numeric field, NaN for a missing token, None if not a number."""
    token = field.strip()
    if token.lower() in MISSING_TOKENS:
        return float("nan")
    try:
        return float(token)
    except ValueError:
        return None


def categorical_codes(values: Sequence[str]) -> Tuple[np.ndarray, List[str]]:
    """Codes and levels of a text column.

    Parameters
    ----------
    values : sequence of str
        The fields (surrounding spaces are ignored); missing-value tokens
        (:data:`MISSING_TOKENS`, any case) are missing.

    Returns
    -------
    codes : ndarray of shape (n_rows,)
        float64: ``i`` where the field is ``levels[i]``, NaN where it is missing.
    levels : list of str
        The distinct non-missing fields, sorted by their text (Python's string order).
    """
    text = np.array([str(v).strip() for v in values], dtype=object)
    present = np.array([v.lower() not in MISSING_TOKENS for v in text], dtype=bool)
    codes = np.full(text.size, np.nan)
    if not present.any():
        return codes, []
    levels, inverse = np.unique(text[present], return_inverse=True)
    codes[present] = inverse
    return codes, [str(v) for v in levels]


def _parse_column(fields: Sequence[str], text: bool = False) -> np.ndarray:
    if text:
        return np.array([f.strip() for f in fields], dtype=object)
    try:  # fast path: every field is a number
        return np.array(fields, dtype=np.float64)
    except ValueError:
        pass
    out = np.empty(len(fields))
    for i, field in enumerate(fields):
        value = _number(field)
        if value is None:
            return np.array([f.strip() for f in fields], dtype=object)
        out[i] = value
    return out


def _looks_like_header(rows: List[List[str]]) -> bool:
    """A first row is a header when one of its fields is text above a number or a missing
    value (e.g. ``label`` above ``1``); with one row only, when none of it is a number."""
    first = [_number(f) is None for f in rows[0]]
    if len(rows) == 1:
        return all(first)
    second = [_number(f) is not None for f in rows[1]]
    return any(a and b for a, b in zip(first, second))


def _open_text(path: str) -> io.TextIOBase:
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def _default_sep(path: str) -> str:
    base = path[:-3] if path.endswith(".gz") else path
    return "\t" if base.endswith((".tsv", ".tab")) else ","


def _read_rows(path: str, sep: Optional[str]) -> List[List[str]]:
    with _open_text(path) as fh:
        reader = csv.reader(fh, delimiter=sep or _default_sep(path), skipinitialspace=True)
        try:
            return [row for row in reader if row]
        except (csv.Error, UnicodeDecodeError, EOFError, gzip.BadGzipFile) as exc:
            raise ValueError(f"{path}: cannot read as CSV: {exc}") from None


def _names(rows: List[List[str]], header: str, path: str) -> List[str]:
    if header == "yes" or (header == "auto" and _looks_like_header(rows)):
        names = [n.strip() for n in rows.pop(0)]
        empty = [i for i, n in enumerate(names) if not n]
        if empty:
            raise ValueError(f"{path}: column {empty[0]} has an empty name in the header")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"{path}: duplicate column names {_listing(dup)}")
        return names
    return [str(i) for i in range(len(rows[0]))]


def read_csv(path: str, header: str = "auto", sep: Optional[str] = None,
             categorical: Collection[str] = ()) -> Table:
    """Read a CSV or TSV file (``.gz`` compressed too).

    Parameters
    ----------
    path : str
    header : {"auto", "yes", "no"}
        Whether the first row holds the column names; ``"auto"`` guesses (a text field above
        a number). Without a header, columns are named ``"0"``, ``"1"``, ...
    sep : str, optional
        Field separator; by default a tab for ``.tsv``/``.tab`` files, else a comma.
    categorical : collection of str, default ()
        Columns kept as text even when every field is a number (their fields become the
        levels of a categorical feature). Names the file does not have are ignored: the
        caller reports them.

    Returns
    -------
    Table
    """
    rows = _read_rows(path, sep)
    if not rows:
        raise ValueError(f"{path}: the file is empty")
    names = _names(rows, header, path)
    if not rows:
        raise ValueError(f"{path}: no data rows after the header")
    for i, row in enumerate(rows, 1):
        if len(row) != len(names):
            raise ValueError(f"{path}: data row {i} has {len(row)} fields, expected "
                             f"{len(names)}")
    fields = list(zip(*rows))
    categorical = set(categorical)
    return Table(path, names, {n: _parse_column(f, n in categorical)
                               for n, f in zip(names, fields)})


def read_parquet(path: str, categorical: Collection[str] = ()) -> Table:
    """Read a Parquet file (needs pyarrow).

    Integer, float, decimal and boolean columns are numeric (nulls are NaN); any other column
    (strings, dictionaries, dates ...) and the columns named in ``categorical`` are text,
    each value as ``str`` (a null as ``""``, a missing value).
    """
    try:
        import pyarrow.parquet as pq
        import pyarrow.types as pat
    except ImportError:
        raise ValueError(f"{path}: reading Parquet files needs pyarrow (pip install pyarrow), "
                         "or convert the file to CSV") from None
    try:
        table = pq.read_table(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for a bad file
        raise ValueError(f"{path}: cannot read as Parquet: {exc}") from None
    categorical = set(categorical)
    columns = {}
    for name, col in zip(table.column_names, table.columns):
        numeric = (pat.is_integer(col.type) or pat.is_floating(col.type)
                   or pat.is_decimal(col.type) or pat.is_boolean(col.type))
        if numeric and str(name) not in categorical:
            values = np.where(col.is_null().to_numpy(zero_copy_only=False), np.nan,
                              col.to_numpy(zero_copy_only=False).astype(np.float64))
        else:  # to_pylist decodes dictionaries
            values = np.array(["" if v is None else str(v) for v in col.to_pylist()],
                              dtype=object)
        columns[str(name)] = values
    return Table(path, list(columns), columns)


def read_table(path: Any, header: str = "auto", sep: Optional[str] = None,
               categorical: Collection[str] = ()) -> Table:
    """Read ``path`` as Parquet (``.parquet``/``.pq``) or CSV/TSV (anything else).

    Parameters
    ----------
    path : str or path-like
    header : {"auto", "yes", "no"}
        CSV only: whether the first row holds the column names (see :func:`read_csv`).
    sep : str, optional
        CSV only: the field separator, one character (``"\\t"`` or ``"tab"`` for a tab).
    categorical : collection of str, default ()
        Columns read as text even when they hold numbers; names absent from the file are
        ignored (the caller reports them).

    Returns
    -------
    Table

    Raises
    ------
    ValueError
        For unreadable or malformed files (one-line messages naming the file).
    OSError
        When the file cannot be opened.
    """
    path = os.fspath(path)
    sep = {"\\t": "\t", "tab": "\t"}.get(sep, sep) if sep else None
    if sep is not None and len(sep) != 1:
        raise ValueError(f"--sep {sep!r} is invalid; expected one character (or '\\t')")
    if header not in HEADER_CHOICES:
        raise ValueError(f"header={header!r} is invalid; expected one of {HEADER_CHOICES}")
    if path.lower().endswith(PARQUET_SUFFIXES):
        return read_parquet(path, categorical)
    return read_csv(path, header, sep, categorical)
