"""Data files read in batches, for data larger than memory: sources for
:meth:`boostlib.Dataset.from_batches` (needs pyarrow).

:func:`parquet_batches` reads a Parquet file, or a folder of them, a record batch at a time;
:func:`csv_batches` reads a CSV or TSV file (``.gz`` too) a block at a time. Each returns an
object that reads the files again every time it is iterated (``from_batches`` reads its
source three times), yielding ``pyarrow.RecordBatch`` objects whose values are those
:func:`boostlib.io.tables.read_table` reads from the same file (what ``boostlib train``
reads): numbers as numbers; any other column as text without surrounding spaces (a
categorical feature whose levels are the sorted distinct values); the missing-value tokens
(:data:`~boostlib.io.tables.MISSING_TOKENS`, any case) and nulls as nulls. Only a batch is
held at a time.
"""
from __future__ import annotations

import csv
import gzip
import os
from typing import Any, Collection, Iterator, List, Optional, Sequence

from .tables import (HEADER_CHOICES, MISSING_TOKENS, NULL_SPELLINGS, PARQUET_SUFFIXES,
                     default_separator, looks_like_header, separator)

#: Rows per record batch read from Parquet files.
BATCH_ROWS = 65_536
#: Bytes of CSV text parsed per batch.
CSV_BLOCK_BYTES = 8 << 20


def _pyarrow(what: str) -> Any:
    try:
        import pyarrow
        import pyarrow.compute  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"reading {what} in batches needs pyarrow ({exc}); install it: "
                          'pip install "boostlib[io]" (or pip install pyarrow)') from exc
    return pyarrow


def _listing(names: Sequence[Any], limit: int = 10) -> str:
    shown = ", ".join(repr(n) for n in list(names)[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _check_batch_rows(batch_rows: Any) -> int:
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise ValueError(f"batch_rows={batch_rows!r} is invalid; expected an int >= 1")
    return batch_rows


def _is_text(pa: Any, t: Any) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _as_read(pa: Any, batch: Any, categorical: Collection[str]) -> Any:
    """``batch`` with its values as :func:`boostlib.io.tables.read_table` reads them:
    numbers (integers, floats, decimals, booleans) as numbers, except in the ``categorical``
    columns; any other column as text without surrounding spaces, with the missing-value
    tokens (:data:`~boostlib.io.tables.MISSING_TOKENS`, any case) as nulls. Values that are
    not text (dates, numbers of ``categorical`` columns) are written as Python's ``str``
    writes them (``3.0``, ``True``)."""
    pc = pa.compute
    tokens = pa.array(sorted(MISSING_TOKENS), pa.string())
    arrays = []
    for name, column in zip(batch.schema.names, batch.columns):
        t = column.type
        numeric = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
        if pa.types.is_decimal(t) and name not in categorical:
            column = pc.cast(column, pa.float64())
        elif not (numeric or pa.types.is_null(t)) or name in categorical:
            if pa.types.is_dictionary(t):
                column = column.dictionary_decode()
            if not _is_text(pa, column.type):
                column = pa.array([None if v is None else str(v) for v in column.to_pylist()],
                                  pa.string())
            column = pc.utf8_trim_whitespace(column)
            column = pc.if_else(pc.is_in(pc.utf8_lower(column), value_set=tokens),
                                pa.scalar(None, column.type), column)
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


class ParquetBatches:
    """The record batches of Parquet files, read again on every iteration.

    Made by :func:`parquet_batches`.

    Attributes
    ----------
    files : list of str
        The files, in the order read.
    names : list of str
        Their columns (those read).
    n_rows : int
        Their rows, from the files' metadata.
    """

    def __init__(self, files: List[str], names: List[str], n_rows: int,
                 columns: Optional[List[str]], batch_rows: int, categorical: Sequence[str]):
        self.files, self.names, self.n_rows = files, names, n_rows
        self.columns, self.batch_rows = columns, batch_rows
        self.categorical = list(categorical)

    def __iter__(self) -> Iterator[Any]:
        pa = _pyarrow("Parquet files")
        import pyarrow.parquet as pq
        for path in self.files:
            # pre_buffer=False: no whole column chunks buffered ahead (memory in proportion
            # to a batch, not to a row group of every column)
            with pq.ParquetFile(path, pre_buffer=False) as pf:
                for batch in pf.iter_batches(batch_size=self.batch_rows, columns=self.columns,
                                             use_threads=True):
                    yield _as_read(pa, batch, self.categorical)
            # give the reader's buffers back to the system (its allocator keeps them)
            pa.default_memory_pool().release_unused()

    def __repr__(self) -> str:
        return (f"<ParquetBatches: {len(self.files)} file(s), {self.n_rows} rows x "
                f"{len(self.names)} columns>")


def _parquet_files(path: str) -> List[str]:
    if os.path.isdir(path):
        found = sorted(os.path.join(folder, name) for folder, _, names in os.walk(path)
                       for name in names if name.lower().endswith(PARQUET_SUFFIXES)
                       and not name.startswith((".", "_")))
        if not found:
            raise ValueError(f"{path}: the folder holds no Parquet file (*.parquet, *.pq); "
                             "expected one or more")
        return found
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: No such file or directory; expected a Parquet file "
                                "or a folder of them")
    return [path]


def parquet_batches(path: Any, *, columns: Optional[Sequence[str]] = None,
                    batch_rows: int = BATCH_ROWS,
                    categorical: Collection[str] = ()) -> ParquetBatches:
    """Read a Parquet file, or a folder of them, in record batches.

    Parameters
    ----------
    path : str or path-like, or a sequence of them
        A Parquet file, a folder (its ``*.parquet`` and ``*.pq`` files, in its subfolders
        too, in the order of their paths; names starting with ``.`` or ``_`` are skipped),
        or a list of files. Every file must have the same columns.
    columns : sequence of str, optional
        The columns to read (default: all), in the files' order.
    batch_rows : int, default 65536
        Rows per batch (a file's last batch may have fewer).
    categorical : collection of str, default ()
        Columns read as text even when they hold numbers (they become categorical
        features, each distinct value a level, as ``boostlib train --categorical`` reads
        them).

    Returns
    -------
    ParquetBatches
        Iterating it reads the files again, yielding ``pyarrow.RecordBatch`` objects.

    Raises
    ------
    ValueError
        For a folder without Parquet files, a file that is not Parquet, files with other
        columns than the first, or ``columns`` the files lack (naming the file).
    FileNotFoundError
        When ``path`` does not exist.
    """
    _pyarrow("Parquet files")
    import pyarrow.parquet as pq
    batch_rows = _check_batch_rows(batch_rows)
    if isinstance(path, (list, tuple)):
        files = [os.fspath(p) for p in path]
        if not files:
            raise ValueError("path is an empty list; expected Parquet files")
        files = [f for p in files for f in _parquet_files(p)]
    else:
        files = _parquet_files(os.fspath(path))
    names: Optional[List[str]] = None
    n_rows = 0
    for f in files:
        try:
            meta = pq.read_metadata(f)
            schema = pq.read_schema(f)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for a bad file
            raise ValueError(f"{f}: cannot read as Parquet: {' '.join(str(exc).split())}"
                             ) from None
        these = [str(n) for n in schema.names]
        if names is None:
            names = these
        elif these != names:
            lack = [n for n in names if n not in these]
            extra = [n for n in these if n not in names]
            said = (f"lacks {_listing(lack)}" if lack else
                    f"has {_listing(extra)}" if extra else "has the columns in another order")
            raise ValueError(f"{f} {said}, unlike {files[0]}: every file needs the same "
                             "columns")
        n_rows += meta.num_rows
    assert names is not None
    if columns is not None:
        columns = [str(c) for c in columns]
        missing = [c for c in columns if c not in names]
        if missing:
            raise ValueError(f"{files[0]}: no column {_listing(missing)}; columns are "
                             f"{_listing(names, 30)}")
        names = [n for n in names if n in columns]
        columns = names
    return ParquetBatches(files, names, n_rows, columns, batch_rows,
                          [c for c in categorical if c in names])


class CsvBatches:
    """The blocks of a CSV file as record batches, read again on every iteration.

    Made by :func:`csv_batches`.

    Attributes
    ----------
    path : str
    names : list of str
        The columns (from the header, or ``"0"``, ``"1"``, ... without one).
    """

    def __init__(self, path: str, names: List[str], has_header: bool, sep: str,
                 text: Collection[str], columns: Optional[List[str]], block_bytes: int):
        self.path, self.names, self.has_header, self.sep = path, names, has_header, sep
        self.text = set(text)
        self.columns = columns
        self.block_bytes = block_bytes

    def _reader(self, types: Optional[dict]) -> Any:
        pa = _pyarrow("CSV files")
        import pyarrow.csv as pa_csv
        stream = pa.input_stream(self.path, compression="gzip" if self.path.endswith(".gz")
                                 else None)
        return pa_csv.open_csv(
            stream,
            read_options=pa_csv.ReadOptions(column_names=self.names,
                                            skip_rows=int(self.has_header),
                                            block_size=self.block_bytes),
            parse_options=pa_csv.ParseOptions(delimiter=self.sep, newlines_in_values=True),
            convert_options=pa_csv.ConvertOptions(
                column_types=types or {n: pa.string() for n in self.text},
                include_columns=self.columns, null_values=NULL_SPELLINGS,
                strings_can_be_null=True, quoted_strings_can_be_null=True))

    def _types(self) -> dict:
        """Every column's type, from the first block: numbers as float64 (an integer column
        whose later rows are missing or decimal stays one type), anything else as text."""
        pa = _pyarrow("CSV files")
        reader = self._reader(None)
        try:
            schema = reader.schema
        finally:
            reader.close()
        types = {}
        for f in schema:
            numeric = (pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
                       or pa.types.is_boolean(f.type) or pa.types.is_null(f.type))
            types[f.name] = pa.float64() if numeric and f.name not in self.text \
                else pa.string()
        return types

    def __iter__(self) -> Iterator[Any]:
        pa = _pyarrow("CSV files")
        types = self._types()
        reader = self._reader(types)
        try:
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    return
                except pa.ArrowInvalid as exc:
                    raise ValueError(self._conversion_error(exc)) from None
                yield _as_read(pa, batch, ())
        finally:
            reader.close()

    def _conversion_error(self, exc: Exception) -> str:
        message = " ".join(str(exc).split())
        return (f"{self.path}: {message}; a column read as numbers from the first block holds "
                "text further on: name it in categorical (--categorical) to read it as text")

    def __repr__(self) -> str:
        return f"<CsvBatches: {self.path}, {len(self.names)} columns>"


def _first_rows(path: str, sep: str, n: int = 2) -> List[List[str]]:
    """The first ``n`` non-empty rows of a CSV file (gzipped too)."""
    opener: Any = gzip.open if path.endswith(".gz") else open
    rows: List[List[str]] = []
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as fh:
            for row in csv.reader(fh, delimiter=sep, skipinitialspace=True):
                if row and row != [""]:
                    rows.append(row)
                    if len(rows) == n:
                        break
    except (UnicodeDecodeError, OSError, EOFError, csv.Error) as exc:
        raise ValueError(f"{path}: cannot read as CSV text: {' '.join(str(exc).split())}"
                         ) from None
    return rows


def csv_batches(path: Any, *, sep: Optional[str] = None, header: str = "auto",
                columns: Optional[Sequence[str]] = None, categorical: Collection[str] = (),
                block_bytes: int = CSV_BLOCK_BYTES) -> CsvBatches:
    """Read a CSV or TSV file (``.gz`` too) a block at a time, by ``pyarrow.csv``.

    Columns whose first block is all numbers (or missing values) are read as float64, the
    others as text; ``""``, ``NA``, ``NaN``, ``null``, ``None``, ``?`` (any case) are
    missing values, and text fields lose their surrounding spaces, as
    ``boostlib.io.tables.read_csv`` reads them.

    Parameters
    ----------
    path : str or path-like
    sep : str, optional
        One character (``"\\t"`` or ``"tab"`` for a tab); default: a tab for ``.tsv`` and
        ``.tab`` files, else a comma.
    header : {"auto", "yes", "no"}
        Whether the first row holds the column names (``"auto"``: a text field above a
        number); without one, columns are named ``"0"``, ``"1"``, ...
    columns : sequence of str, optional
        The columns to read (default: all).
    categorical : collection of str, default ()
        Columns read as text even when they hold numbers.
    block_bytes : int, default 8 MiB
        Bytes of the file parsed per batch.

    Returns
    -------
    CsvBatches

    Raises
    ------
    ValueError
        For a separator of several characters (read such files in memory, or convert them),
        an empty file, duplicate or empty column names, ``columns`` the file lacks, and,
        while reading, a field that is not a number in a column whose first block was.
    FileNotFoundError
        When ``path`` does not exist.
    """
    _pyarrow("CSV files")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: No such file or directory; expected a CSV file")
    sep = default_separator(path) if sep is None else separator(sep)
    if len(sep.encode("utf-8")) != 1:
        raise ValueError(f"sep={sep!r}: reading a CSV file in batches takes a one-character "
                         "separator; read the file in memory, or convert it")
    if header not in HEADER_CHOICES:
        raise ValueError(f"header={header!r} is invalid; expected one of {HEADER_CHOICES}")
    if isinstance(block_bytes, bool) or not isinstance(block_bytes, int) or block_bytes < 1:
        raise ValueError(f"block_bytes={block_bytes!r} is invalid; expected an int >= 1")
    rows = _first_rows(path, sep)
    if not rows:
        raise ValueError(f"{path}: the file holds no row; expected data rows")
    has_header = header == "yes" or (header == "auto" and looks_like_header(rows))
    if has_header:
        names = [n.strip() for n in rows[0]]
        if not all(names):
            raise ValueError(f"{path}: column {names.index('')} (0-based) has an empty name "
                             "in the header; expected a name for every column")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"{path}: duplicate column names {_listing(dup)} in the header; "
                             "expected each name once")
    else:
        names = [str(i) for i in range(len(rows[0]))]
    if columns is not None:
        columns = [str(c) for c in columns]
        missing = [c for c in columns if c not in names]
        if missing:
            raise ValueError(f"{path}: no column {_listing(missing)}; columns are "
                             f"{_listing(names, 30)}")
    return CsvBatches(path, names, has_header, sep, [c for c in categorical if c in names],
                      columns, block_bytes)
