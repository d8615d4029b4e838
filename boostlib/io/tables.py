"""Reading data tables for the command line: CSV/TSV (optionally gzipped) and Parquet.

Only the standard library and numpy are needed for CSV (pandas is not a dependency);
Parquet needs pyarrow. A column is numeric when every field parses as a number or is a
missing-value token (:data:`MISSING_TOKENS`, read as NaN); any other column is kept as
strings. Numbers are parsed by Python's ``float``, which rounds correctly, so the values are
exactly those NumPy or ``float()`` would read.
"""
from __future__ import annotations

import csv
import gzip
import io
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

#: Fields read as a missing value (NaN) in numeric columns, compared case-insensitively.
MISSING_TOKENS = frozenset({"", "na", "nan", "n/a", "null", "none", "?"})
HEADER_CHOICES = ("auto", "yes", "no")
PARQUET_SUFFIXES = (".parquet", ".pq")


class NamedMatrix:
    """A float64 matrix with column names, accepted by the estimators like a DataFrame.

    The estimators read ``columns`` (kept as ``feature_names_in_``), ``dtypes`` and
    ``to_numpy``, so models trained from a file remember their feature names without pandas.

    Parameters
    ----------
    values : ndarray of shape (n_rows, n_columns)
    columns : sequence of str
    """

    def __init__(self, values: np.ndarray, columns: Sequence[str]):
        self.values = np.ascontiguousarray(values, dtype=np.float64)
        self.columns = list(columns)
        self.dtypes = [self.values.dtype] * len(self.columns)

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
        """The given rows, same columns."""
        return NamedMatrix(self.values[rows], self.columns)


@dataclass
class Table:
    """Columns read from a file, in file order.

    Attributes
    ----------
    path : str
    names : list of str
        Column names (from the header, or ``"0"``, ``"1"``, ... without one).
    columns : dict of str to ndarray
        float64 for numeric columns (NaN = missing), object arrays of str otherwise.
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

    def features(self, names: Sequence[str]) -> NamedMatrix:
        """The named columns as a float64 matrix.

        Raises
        ------
        ValueError
            Naming every missing column, or every non-numeric one (categorical features are
            not supported yet).
        """
        missing = [n for n in names if n not in self.columns]
        if missing:
            raise ValueError(f"{self.path}: missing column{'s' if len(missing) > 1 else ''} "
                             f"{_listing(missing)} (the model's features); columns are "
                             f"{_listing(self.names)}")
        text = [n for n in names if self.columns[n].dtype.kind != "f"]
        if text:
            raise ValueError(f"{self.path}: non-numeric column{'s' if len(text) > 1 else ''} "
                             f"{_listing(text)}: boostlib needs numeric features "
                             "(categorical support comes later); encode them as numbers "
                             "or leave them out of the file")
        values = np.column_stack([self.columns[n] for n in names]) if names else \
            np.empty((self.n_rows, 0))
        return NamedMatrix(values, names)


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


def _parse_column(fields: Sequence[str]) -> np.ndarray:
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


def read_csv(path: str, header: str = "auto", sep: Optional[str] = None) -> Table:
    """Read a CSV or TSV file (``.gz`` compressed too).

    Parameters
    ----------
    path : str
    header : {"auto", "yes", "no"}
        Whether the first row holds the column names; ``"auto"`` guesses (a text field above
        a number). Without a header, columns are named ``"0"``, ``"1"``, ...
    sep : str, optional
        Field separator; by default a tab for ``.tsv``/``.tab`` files, else a comma.

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
    return Table(path, names, {n: _parse_column(f) for n, f in zip(names, fields)})


def read_parquet(path: str) -> Table:
    """Read a Parquet file (needs pyarrow); strings and dictionaries stay text columns."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(f"{path}: reading Parquet files needs pyarrow (pip install pyarrow), "
                         "or convert the file to CSV") from None
    try:
        table = pq.read_table(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for a bad file
        raise ValueError(f"{path}: cannot read as Parquet: {exc}") from None
    columns = {}
    for name, col in zip(table.column_names, table.columns):
        values = col.to_numpy(zero_copy_only=False)
        if values.dtype.kind in "biuf":
            values = np.where(col.is_null().to_numpy(zero_copy_only=False), np.nan,
                              values.astype(np.float64, copy=False))
        else:
            values = np.array(["" if v is None else str(v) for v in values.tolist()],
                              dtype=object)
        columns[str(name)] = values
    return Table(path, list(columns), columns)


def read_table(path: Any, header: str = "auto", sep: Optional[str] = None) -> Table:
    """Read ``path`` as Parquet (``.parquet``/``.pq``) or CSV/TSV (anything else).

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
        return read_parquet(path)
    return read_csv(path, header, sep)
