"""Reading data tables for the command line: CSV/TSV (optionally gzipped) and Parquet.

Only the standard library and numpy are needed (pandas is not a dependency). When pyarrow is
installed (``pip install "boostlib[io]"``), CSV files are parsed by ``pyarrow.csv`` and
Parquet files can be read; without it CSV files are read by the ``csv`` module, about 15
times slower. Both CSV readers give the same :class:`Table`, bit for bit: a file the pyarrow
reader cannot read exactly as the ``csv`` one would (a separator of several characters,
a quoted field opened after spaces, a malformed file ...) is read by the ``csv`` reader,
which also words every error. pyarrow is imported when a file is read, never by
``import boostlib``.

A column is numeric when every field parses as a number or is a missing-value token
(:data:`MISSING_TOKENS`, read as NaN); any other column (and any column named in
``categorical``) is kept as strings, and becomes a *categorical* feature in
:meth:`Table.features`: float codes ``0 .. K-1`` of its levels, sorted by their text, in a
:class:`~boostlib.engine.frames.NamedMatrix` whose ``categories`` map the column name to the
levels. Numbers are parsed by Python's ``float`` or by pyarrow's parser, both correctly
rounded, so the values are exactly those NumPy or ``float()`` would read.
"""
from __future__ import annotations

import codecs
import csv
import gzip
import io
import itertools
import os
import re
import stat
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Collection, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..engine.frames import NamedMatrix

#: Fields read as a missing value (NaN), in numeric and categorical columns alike, compared
#: case-insensitively.
MISSING_TOKENS = frozenset({"", "na", "nan", "n/a", "null", "none", "?"})
HEADER_CHOICES = ("auto", "yes", "no")
PARQUET_SUFFIXES = (".parquet", ".pq")


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
    hint : str, default ""
        Appended to the messages about absent columns, e.g. a likely ``--sep`` when the
        file was read as a single column.
    """

    path: str
    names: List[str]
    columns: Dict[str, np.ndarray]
    hint: str = ""

    @property
    def n_rows(self) -> int:
        """Number of data rows."""
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def column(self, name: str) -> np.ndarray:
        """One column by name; ValueError listing the columns when it is absent."""
        if name not in self.columns:
            raise ValueError(f"{self.path}: no column {name!r}; columns are "
                             f"{_listing(self.names)}{self.hint}")
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
            Naming every missing column, or the first column holding an infinite number.
        """
        names = list(names)
        missing = [n for n in names if n not in self.columns]
        if missing:
            raise ValueError(f"{self.path}: missing column{'s' if len(missing) > 1 else ''} "
                             f"{_listing(missing)} (the model's features); columns are "
                             f"{_listing(self.names)}{self.hint}")
        values = np.empty((self.n_rows, len(names)))
        categories: Dict[str, List[str]] = {}
        for j, name in enumerate(names):
            col = self.columns[name]
            if col.dtype.kind == "f":
                self._check_finite(name)
                values[:, j] = col
            else:
                values[:, j], categories[name] = categorical_codes(col)
        return NamedMatrix(values, names, categories)

    def _check_finite(self, name: str) -> None:
        """ValueError when the numeric column ``name`` holds an infinite value."""
        infinite = np.isinf(self.columns[name])
        if infinite.any():
            row = int(np.argmax(infinite))
            raise ValueError(f"{self.path}: column {name!r} holds {self.columns[name][row]} in "
                             f"data row {row + 1} (written as inf, or a number beyond "
                             "+-1.8e308 such as 1e400); expected finite numbers (empty or NA "
                             "for a missing value)")


def identifier_columns(X: NamedMatrix) -> List[str]:
    """The categorical columns of ``X`` with a different value in every row that has one
    (one level per row, two rows or more): identifiers such as ids or names, which as
    features fit the training rows and carry nothing over to new ones.

    Parameters
    ----------
    X : NamedMatrix
        As :meth:`Table.features` returns it.

    Returns
    -------
    list of str
        In column order.
    """
    out = []
    for j, name in enumerate(X.columns):
        if name in X.categories:
            present = int(np.count_nonzero(~np.isnan(X.values[:, j])))
            if present >= 2 and len(X.categories[name]) == present:
                out.append(name)
    return out


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


def categorical_codes(values: Sequence[Any]) -> Tuple[np.ndarray, List[str]]:
    """Codes and levels of a text column.

    Parameters
    ----------
    values : sequence of str
        The fields (surrounding spaces are ignored; other values count as ``str(value)``);
        missing-value tokens (:data:`MISSING_TOKENS`, any case) are missing.

    Returns
    -------
    codes : ndarray of shape (n_rows,)
        float64: ``i`` where the field is ``levels[i]``, NaN where it is missing.
    levels : list of str
        The distinct non-missing fields, sorted by their text (Python's string order).
    """
    text = list(map(str, values))
    # Python works once per distinct field; the rows are looked up in C loops.
    stripped = {field: field.strip() for field in dict.fromkeys(text)}
    levels = sorted({s for s in stripped.values() if s.lower() not in MISSING_TOKENS})
    position = {level: float(i) for i, level in enumerate(levels)}
    code = {field: position.get(s, np.nan) for field, s in stripped.items()}
    return np.fromiter(map(code.__getitem__, text), dtype=np.float64, count=len(text)), levels


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


def looks_like_header(rows: List[List[str]]) -> bool:
    """A first row is a header when one of its fields is text above a number or a missing
    value (e.g. ``label`` above ``1``); with one row only, when none of it is a number."""
    first = [_number(f) is None for f in rows[0]]
    if len(rows) == 1:
        return all(first)
    second = [_number(f) is not None for f in rows[1]]
    return any(a and b for a, b in zip(first, second))


def _read_bytes(path: str) -> bytes:
    """The bytes of a CSV file, decompressed when its name ends in ``.gz``."""
    try:
        with open(path, "rb") as fh:
            mode = os.fstat(fh.fileno()).st_mode
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
                raise ValueError(f"{path} is a device; expected a CSV, TSV or Parquet file")
            data = fh.read()
    except IsADirectoryError:
        raise IsADirectoryError(f"{path} is a folder; expected a CSV, TSV or Parquet file"
                                ) from None
    except OSError as exc:
        raise type(exc)(f"{path}: {exc.strerror or exc}; expected a readable CSV, TSV or "
                        "Parquet file") from None
    if not path.endswith(".gz"):
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"{path}: cannot decompress it as gzip ({exc}); expected a "
                         "gzip-compressed CSV, as its name ends in .gz") from None


def _line_of(data: bytes, offset: int) -> int:
    """1-based line number of a byte offset."""
    return data.count(b"\n", 0, offset) + 1


def _decode(data: bytes, path: str) -> str:
    """UTF-8 text of a CSV file (a UTF-8 byte order mark is dropped).

    Raises
    ------
    ValueError
        For UTF-16/32 text, a NUL byte or bytes that are not UTF-8, naming the line.
    """
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ValueError(f"{path} is UTF-16 or UTF-32 text (it starts with a byte order "
                         "mark); expected UTF-8: save it again as UTF-8 CSV")
    nul = data.find(b"\0")
    if nul >= 0:
        raise ValueError(f"{path}: line {_line_of(data, nul)} holds a NUL byte (byte "
                         f"{nul}); expected a UTF-8 text file, not a binary (or UTF-16) file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: line {_line_of(data, exc.start)} is not UTF-8 text "
                         f"(byte 0x{data[exc.start]:02x} at byte {exc.start}); expected a "
                         "UTF-8 CSV file (convert other encodings, such as Latin-1, first)"
                         ) from None


#: A quoted field up to its closing quote; ``""`` inside is an escaped quote.
_QUOTED = re.compile(r'"[^"]*(?:""[^"]*)*"(?!")')


def _unclosed_quote(text: str, sep: str) -> Optional[int]:
    """Where the quoted field that runs to the end of ``text`` opens, else None.

    ``text`` starts with a CSV record; its fields are scanned the way ``csv`` reads them
    (spaces after a separator skipped, quotes only opening a field at its start) up to the
    end of the record.
    """
    unquoted = re.compile(f"[^{re.escape(sep)}\r\n]*")
    pos = 0
    while pos < len(text):
        while text.startswith(" ", pos):
            pos += 1
        if text.startswith('"', pos):
            match = _QUOTED.match(text, pos)
            if match is None:
                return pos
            pos = match.end()
        pos = unquoted.match(text, pos).end()
        if not text.startswith(sep, pos):
            return None
        pos += 1
    return None


def _quote_error(path: str, lines: List[str], start: int, sep: str) -> Optional[str]:
    """The message for a quoted field opened in the record starting on line ``start`` and
    never closed, None when that record has none."""
    tail = "".join(lines[start - 1:])
    pos = _unclosed_quote(tail, sep)
    if pos is None:
        return None
    line = start + len(re.findall("\r\n|\r|\n", tail[:pos]))
    return (f"{path}: line {line}: a quoted field opens here but its closing '\"' never "
            "comes (it would run to the end of the file); expected a '\"' ending the "
            "field (write a '\"' inside a quoted field as '\"\"')")


def _csv_error(path: str, line: int, exc: csv.Error, sep: str) -> str:
    """The message for an error of the csv module in the record starting on ``line``."""
    if "field limit" in str(exc):
        return (f"{path}: line {line}: a field is longer than {csv.field_size_limit()} "
                "characters, the most a CSV field may hold here; expected shorter fields")
    return f"{path}: line {line}: cannot read as CSV ({exc}); expected fields separated by {sep!r}"


#: Characters that may stand for a separator of several characters (the first one absent
#: from the file): ASCII's unit, record, group and file separators, then private-use ones.
_STAND_INS = "\x1f\x1e\x1d\x1c" + "".join(map(chr, range(0xE000, 0xF900)))


def _stand_in(text: str) -> str:
    """A character that ``text`` does not hold (ValueError in the unlikely case that it
    holds them all)."""
    for char in _STAND_INS:
        if char not in text:
            return char
    raise ValueError("cannot read the file with a separator of several characters: it holds "
                     "every character boostlib could use in its place; expected a "
                     "one-character --sep")


def _read_rows(path: str, sep: str) -> Tuple[List[List[str]], List[int]]:
    """The non-blank rows of a CSV file and the line each starts on.

    The ``csv`` module splits at one character, so a separator of several characters
    (``"::"``) is first replaced by a character the file does not hold, and put back in
    the fields (quoted fields may hold the separator).
    """
    text = _decode(_read_bytes(path), path)
    delimiter = sep
    if len(sep) > 1:
        delimiter = _stand_in(text)
        text = text.replace(sep, delimiter)
    lines = io.StringIO(text, newline="").readlines()
    reader = csv.reader(lines, delimiter=delimiter, skipinitialspace=True)
    rows: List[List[str]] = []
    starts: List[int] = []
    start = 1
    try:
        for row in reader:
            if row and row != [""]:      # blank lines, and lines of spaces, are skipped
                rows.append(row if delimiter == sep else
                            [field.replace(delimiter, sep) for field in row])
                starts.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise ValueError(_quote_error(path, lines, start, delimiter) or
                         _csv_error(path, start, exc, sep)) from None
    message = _quote_error(path, lines, starts[-1], delimiter) if starts else None
    if message:
        raise ValueError(message)
    return rows, starts


def default_separator(path: str) -> str:
    """The separator of a file without ``--sep``: a tab for ``.tsv``/``.tab`` (also
    gzipped), else a comma."""
    base = path[:-3] if path.endswith(".gz") else path
    return "\t" if base.endswith((".tsv", ".tab")) else ","


def _names(rows: List[List[str]], header: str, path: str) -> Tuple[List[str], bool]:
    """The column names, and whether they came from a header row (popped from ``rows``)."""
    if header == "yes" or (header == "auto" and looks_like_header(rows)):
        names = [n.strip() for n in rows.pop(0)]
        empty = [i for i, n in enumerate(names) if not n]
        if empty:
            raise ValueError(f"{path}: column {empty[0]} (0-based) has an empty name in the "
                             "header; expected a name for every column (or --header no)")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"{path}: duplicate column names {_listing(dup)} in the header; "
                             "expected each name once")
        return names, True
    return [str(i) for i in range(len(rows[0]))], False


def _shown_sep(sep: str) -> str:
    """A separator in a message: ``','``, ``'\\t'`` for a tab."""
    return "'\\t'" if sep == "\t" else repr(sep)


def _separator_hint(names: Sequence[str], first: Sequence[str], sep: str,
                    given: bool = True) -> str:
    """A hint when a file was read as one column, naming the separator tried (``given``:
    from ``--sep``, else the default for the file name) and, when the text holds another
    common separator, the ``--sep`` to pass; ``""`` for several columns."""
    if len(names) != 1:
        return ""
    tried = (f"it was read as a single column, splitting fields at {_shown_sep(sep)}"
             + (" as --sep says" if given else ", the default separator for this file name"))
    text = names[0] + (first[0] if first else "")
    for other in (",", ";", "\t", "|"):
        if other not in sep and other in text:
            return (f" ({tried}: are its fields separated by {_shown_sep(other)}? then pass "
                    f"--sep {_shown_sep(other)})")
    return f" ({tried}; if its fields are separated by something else, pass that with --sep)"


def _check_widths(rows: List[List[str]], starts: List[int], n_names: int, path: str,
                  header: bool) -> None:
    """ValueError for the first row whose number of fields differs from ``n_names``."""
    for i, (row, line) in enumerate(zip(rows, starts), 1):
        if len(row) != n_names:
            source = "header" if header else "first row"
            raise ValueError(f"{path}: data row {i} has {len(row)} fields, expected "
                             f"{n_names} as in the {source} (line {line})")


def read_csv(path: str, header: str = "auto", sep: Optional[str] = None,
             categorical: Collection[str] = ()) -> Table:
    """Read a CSV or TSV file (``.gz`` compressed too).

    With pyarrow installed the file is parsed by ``pyarrow.csv``, else (and for the files
    that reader cannot read exactly alike, see ``_read_csv_arrow``) by the ``csv``
    module; the :class:`Table` is the same either way.

    Parameters
    ----------
    path : str
    header : {"auto", "yes", "no"}
        Whether the first row holds the column names; ``"auto"`` guesses (a text field above
        a number). Without a header, columns are named ``"0"``, ``"1"``, ...
    sep : str, optional
        Field separator, one character or several (see :func:`separator`); by default a
        tab for ``.tsv``/``.tab`` files, else a comma. Spaces after a separator are
        skipped.
    categorical : collection of str, default ()
        Columns kept as text even when every field is a number (their fields become the
        levels of a categorical feature). Names the file does not have are ignored: the
        caller reports them.

    Returns
    -------
    Table

    Raises
    ------
    ValueError
        For a file that is not UTF-8 text (or not gzip when named ``.gz``), a quoted field
        never closed, a file without data rows, an empty or duplicate column name, or a row
        with another number of fields, naming the file and line.
    OSError
        When the file cannot be opened.
    """
    given = sep is not None
    sep = default_separator(path) if sep is None else separator(sep)
    table = _read_csv_arrow(path, header, sep, categorical, given)
    if table is None:
        table = _read_csv_python(path, header, sep, categorical, given)
    return table


def _read_csv_python(path: str, header: str, sep: str, categorical: Collection[str],
                     given: bool) -> Table:
    """:func:`read_csv` by the ``csv`` module, the whole file in memory (``sep`` as
    :func:`separator` returns it; ``given``: whether it came from ``--sep``)."""
    rows, starts = _read_rows(path, sep)
    if not rows:
        raise ValueError(f"{path}: the file has no rows (it is empty or holds only blank "
                         "lines); expected a header line and data rows")
    names, has_header = _names(rows, header, path)
    if has_header:
        starts.pop(0)
    if not rows:
        raise ValueError(f"{path}: no data rows after the header; expected at least one")
    _check_widths(rows, starts, len(names), path, has_header)
    fields = list(zip(*rows))
    categorical = set(categorical)
    hint = _separator_hint(names, fields[0], sep, given)
    return Table(path, names, {n: _parse_column(f, n in categorical)
                               for n, f in zip(names, fields)}, hint)


# ---------------------------------------------------------------------------------------
# The pyarrow reader. pyarrow parses the file; what the csv reader does differently is
# either done here (the header rule, stripping text, missing-value tokens in any case,
# numbers that only Python's float() reads) or detected, and then the csv reader reads the
# file instead (and words the error when there is one).

#: Bytes read from each end of a CSV file before pyarrow reads it: the head gives the header
#: and a first guess of which columns hold numbers, the tail shows a quote left open.
_PROBE_BYTES = 1 << 16
#: pyarrow's block size: the unit of its threads' work.
_BLOCK_SIZE = 1 << 20


def _case_variants(token: str) -> List[str]:
    """Every spelling of ``token`` in upper and lower case (``na``: na, nA, Na, NA)."""
    return sorted({"".join(chars) for chars in
                   itertools.product(*[sorted({c.lower(), c.upper()}) for c in token])})


#: :data:`MISSING_TOKENS` in every case, for pyarrow's exact ``null_values``.
NULL_SPELLINGS = sorted({v for token in MISSING_TOKENS for v in _case_variants(token)})


class _TextColumn(Exception):
    """pyarrow must read the file again, with column ``index`` as text."""

    def __init__(self, index: int):
        super().__init__(index)
        self.index = index


class _QuotedLineBreaks(Exception):
    """pyarrow must read the file again, allowing line breaks in quoted fields."""


class _NotArrow(Exception):
    """The file is one for the csv reader (pyarrow would not read it alike)."""


def _read_csv_arrow(path: str, header: str, sep: str, categorical: Collection[str],
                    given: bool) -> Optional[Table]:
    """:func:`read_csv` by ``pyarrow.csv``, or None when pyarrow is not installed or the file
    is one it cannot read exactly as :func:`_read_csv_python` does.

    Numeric columns become float64 in pyarrow (never int64, which loses the sign of ``-0``),
    text columns dictionaries, so each distinct text is one Python string. Which columns
    are numeric is guessed from the first rows; when a later field is not a number, pyarrow
    reads the file again with that column as text (a column of text whose fields are all
    numbers to Python, such as ``1_000``, becomes numeric afterwards). Line breaks in quoted
    fields slow pyarrow down, so it first reads without them, and again with them when a
    text field holds a quote or a line break.

    None (the csv reader then reads the file) for: a separator of several characters or a
    space, a file that is not a regular file, one or no column, no data row, a header not on
    the first line alone, a field opened by a quote after spaces (only the csv reader skips
    them), a NUL byte, a quote left open at the end, and any file pyarrow fails on (bad
    UTF-8 or gzip, rows of another width ...).
    """
    if len(sep.encode("utf-8")) != 1 or sep == " " or not _regular_file(path):
        return None
    try:
        import pyarrow.csv  # noqa: F401 - only whether it can be imported
    except ImportError:
        return None
    source = _arrow_source(path)
    if source is None:
        return None
    open_source, head, tail = source
    probe = _probe(head, tail, sep)
    if probe is None:
        return None
    rows, starts = probe
    if len(rows) < 2 or len({len(row) for row in rows}) > 1 or len(rows[0]) < 2:
        return None
    has_header = header == "yes" or (header == "auto" and looks_like_header(rows))
    if has_header:
        names = [n.strip() for n in rows[0]]
        if (starts[0] != 1 or any("\n" in n or "\r" in n for n in rows[0])
                or not all(names) or len(set(names)) < len(names)):
            return None
        rows = rows[1:]
    else:
        names = [str(i) for i in range(len(rows[0]))]
    categorical = set(categorical)
    text = {j for j, name in enumerate(names)
            if name in categorical or any(_number(row[j]) is None for row in rows)}
    line_breaks = False
    for _ in range(len(names) + 2):   # each retry: a column more as text, or line breaks
        try:
            columns = _arrow_columns(open_source, sep, names, has_header, text, line_breaks,
                                     categorical)
        except _TextColumn as retry:
            text.add(retry.index)
        except _QuotedLineBreaks:
            line_breaks = True
        except _NotArrow:
            return None
        else:
            return Table(path, names, columns, _separator_hint(names, (), sep, given))
    return None


def _regular_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _arrow_source(path: str) -> Optional[Tuple[Callable[[], Any], bytes, bytes]]:
    """A function opening the file as a pyarrow input stream, and its first
    ``_PROBE_BYTES + 1`` and last ``_PROBE_BYTES`` bytes; None when it cannot be read.

    A ``.gz`` file is decompressed into memory by :func:`gzip.decompress`, as the csv
    reader does it (the same files are refused, and pyarrow may read it again from there);
    any other file is read by pyarrow from the disk.
    """
    import pyarrow as pa

    try:
        if path.endswith(".gz"):
            with open(path, "rb") as fh:
                data = gzip.decompress(fh.read())
            buffer = pa.py_buffer(data)
            return ((lambda: pa.BufferReader(buffer)), data[:_PROBE_BYTES + 1],
                    data[-_PROBE_BYTES:])
        with open(path, "rb") as fh:
            head = fh.read(_PROBE_BYTES + 1)
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - _PROBE_BYTES))
            tail = fh.read()
        return (lambda: pa.input_stream(path, compression=None)), head, tail
    except (OSError, EOFError, zlib.error):
        return None


def _probe(head: bytes, tail: bytes, sep: str
           ) -> Optional[Tuple[List[List[str]], List[int]]]:
    """The complete rows in the first bytes of a CSV file (``head``; the file is longer
    when it holds more than :data:`_PROBE_BYTES`), read like :func:`_read_rows`, and the line
    each starts on; None when those bytes are not UTF-8 text or the file (its last bytes:
    ``tail``) may end with a quoted field never closed (see :func:`_open_at_end`)."""
    whole = len(head) <= _PROBE_BYTES
    head = head[:_PROBE_BYTES]
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8):]
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or b"\0" in head:
        return None
    if _open_at_end(tail, sep):
        return None
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=whole)
    except UnicodeDecodeError:
        return None
    lines = io.StringIO(text, newline="").readlines()
    if not whole:
        lines.pop()                   # maybe cut short
    reader = csv.reader(lines, delimiter=sep, skipinitialspace=True)
    rows: List[List[str]] = []
    starts: List[int] = []
    start = 1
    try:
        for row in reader:
            if row and row != [""]:
                rows.append(row)
                starts.append(start)
            start = reader.line_num + 1
    except csv.Error:
        return None
    if not whole and rows:
        rows.pop()                    # may be a quoted field's first lines only
        starts.pop()
    return rows, starts


def _open_at_end(tail: bytes, sep: str) -> bool:
    """Whether the last line of a file (``tail``: its last bytes) may end inside a quoted
    field: a quote opened on it and never closed, or a last line not in ``tail``."""
    body = tail.decode("utf-8", errors="replace").rstrip()
    breaks = max(body.rfind("\n"), body.rfind("\r"))
    if breaks < 0 and len(tail) >= _PROBE_BYTES:
        return True
    return _unclosed_quote(body[breaks + 1:], sep) is not None


def _arrow_columns(open_source: Callable[[], Any], sep: str, names: List[str],
                   has_header: bool, text: set, line_breaks: bool, categorical: set
                   ) -> Dict[str, np.ndarray]:
    """The columns of :class:`Table`, read by pyarrow: the columns numbered in ``text`` as
    text, the others as float64.

    Raises
    ------
    _TextColumn
        When a field of a float64 column is not a number to pyarrow, or is a NaN other than
        a missing-value token (``-nan``; ``nan(1)``, which Python does not read).
    _QuotedLineBreaks
        When ``line_breaks`` is False and pyarrow fails, or a text field holds a quote or a
        line break: a quoted field with a line break may have been cut where pyarrow split
        the file into blocks.
    _NotArrow
        For everything else that the csv reader would read otherwise, or refuse.
    """
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    keys = [f"c{j}" for j in range(len(names))]
    string = pa.dictionary(pa.int32(), pa.string())
    types = {key: string if j in text else pa.float64() for j, key in enumerate(keys)}
    try:
        with open_source() as source:
            table = pa_csv.read_csv(
                source,
                read_options=pa_csv.ReadOptions(column_names=keys, skip_rows=int(has_header),
                                                block_size=_BLOCK_SIZE),
                parse_options=pa_csv.ParseOptions(delimiter=sep,
                                                  newlines_in_values=line_breaks),
                convert_options=pa_csv.ConvertOptions(
                    column_types=types, null_values=NULL_SPELLINGS,
                    strings_can_be_null=False, quoted_strings_can_be_null=True),
                memory_pool=_arrow_pool())
    except pa.ArrowInvalid as exc:
        match = re.search(r"column #(\d+)\b.*conversion error", str(exc))
        if match and int(match.group(1)) < len(names) and int(match.group(1)) not in text:
            raise _TextColumn(int(match.group(1))) from None
        if not line_breaks:           # maybe a quoted line break cut where pyarrow split
            raise _QuotedLineBreaks() from None
        raise _NotArrow() from None
    except Exception:  # noqa: BLE001 - pyarrow raises many types; the csv reader words them
        raise _NotArrow() from None
    if not table.num_rows:
        raise _NotArrow()
    table = table.unify_dictionaries()
    columns: Dict[str, np.ndarray] = {}
    for j, (name, column) in enumerate(zip(names, table.columns)):
        if j in text:
            columns[name] = _arrow_text(column, line_breaks, forced=name in categorical)
            continue
        values = _arrow_floats(column)
        if np.count_nonzero(np.isnan(values)) > column.null_count:
            raise _TextColumn(j)      # pyarrow read a NaN that is not a missing-value token
        columns[name] = values
    last = table.slice(table.num_rows - 1)
    if any(any(c in value for c in "\r\n") for j in text
           for value in last.column(j).to_pylist()):
        raise _NotArrow()             # the last row may end inside an open quote
    return columns


def _arrow_pool() -> Any:
    """The memory pool pyarrow parses a CSV file in: jemalloc's when pyarrow has it.

    pyarrow's default pool (mimalloc) backs a fresh process's first large allocations with
    huge pages, which the kernel zeroes on the first touch. In a fresh process,
    ``pyarrow.csv.read_csv`` of a 190 MB file took 0.4 to 1.6 s there against 0.6 to 0.7 s
    in jemalloc's pool, and this reader 0.14 s more system time (median of 9).
    """
    import pyarrow as pa

    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:
        return pa.default_memory_pool()


def _arrow_floats(column: Any) -> np.ndarray:
    """A float64 column read by pyarrow as one writeable numpy array, NaN where it is null
    (``fill_null`` first: ``to_numpy`` of a column with nulls is slow chunk by chunk)."""
    import pyarrow.compute as pc

    if column.null_count:
        column = pc.fill_null(column, np.nan)
    values = column.to_numpy()
    return values if values.flags.writeable else values.copy()


def _arrow_text(column: Any, line_breaks: bool, forced: bool) -> np.ndarray:
    """A column read by pyarrow as a dictionary, as :func:`_parse_column` makes it: floats
    when every field is a number or a missing-value token to Python (and ``forced`` is
    False), else an object array of the stripped fields. The dictionary's entries are the
    only Python strings made (raising as :func:`_arrow_columns` says)."""
    chunks = column.chunks
    if not chunks or column.null_count:
        raise _NotArrow()
    fields = chunks[0].dictionary.to_pylist()
    indices = np.concatenate([chunk.indices.to_numpy() for chunk in chunks])
    for field in fields:
        if not line_breaks and any(c in field for c in "\"\r\n"):
            raise _QuotedLineBreaks()
        if "\0" in field or field.lstrip(" ").startswith('"'):
            raise _NotArrow()         # csv skips the spaces and opens a quoted field
    if not forced:
        numbers = []
        for field in fields:
            value = _number(field)
            if value is None:
                break
            numbers.append(value)
        else:
            return np.array(numbers, dtype=np.float64)[indices]
    return np.array([field.strip() for field in fields], dtype=object)[indices]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _check_parquet_shape(path: str, names: List[str], n_rows: int) -> None:
    """ValueError for a Parquet table without columns or rows, or with duplicate names."""
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"{path}: duplicate column names {_listing(dup)}; expected each name "
                         "once")
    if not names or not n_rows:
        raise ValueError(f"{path}: the Parquet file has {len(names)} columns and {n_rows} "
                         "rows; expected data rows")


def read_parquet(path: str, categorical: Collection[str] = ()) -> Table:
    """Read a Parquet file (needs pyarrow).

    Integer, float, decimal and boolean columns are numeric (nulls are NaN); any other column
    (strings, dictionaries, dates ...) and the columns named in ``categorical`` are text,
    each value as ``str`` (a null as ``""``, a missing value). String columns are read as
    dictionaries, so each distinct text is made into a Python string once.

    Raises
    ------
    ValueError
        When pyarrow is missing, the file is not Parquet, or it has duplicate column names,
        no column or no row.
    FileNotFoundError
        When ``path`` does not exist.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: No such file or directory; expected a readable "
                                "Parquet file")
    try:
        import pyarrow.parquet as pq
        import pyarrow.types as pat
    except ImportError:
        raise ValueError(f"{path}: reading Parquet files needs pyarrow (pip install pyarrow), "
                         "or convert the file to CSV") from None
    try:
        schema = pq.read_schema(path)
        names = [str(n) for n in schema.names]
        strings = [n for n, t in zip(names, schema.types)
                   if pat.is_string(t) or pat.is_large_string(t)]
        table = pq.read_table(path, read_dictionary=strings if len(set(names)) == len(names)
                              else None).unify_dictionaries()
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for a bad file
        raise ValueError(f"{path}: cannot read as Parquet: {_one_line(exc)}") from None
    _check_parquet_shape(path, [str(n) for n in table.column_names], table.num_rows)
    categorical = set(categorical)
    columns = {}
    for name, col in zip(table.column_names, table.columns):
        numeric = (pat.is_integer(col.type) or pat.is_floating(col.type)
                   or pat.is_decimal(col.type) or pat.is_boolean(col.type))
        if numeric and str(name) not in categorical:
            values = np.where(col.is_null().to_numpy(zero_copy_only=False), np.nan,
                              col.to_numpy(zero_copy_only=False).astype(np.float64))
        elif pat.is_dictionary(col.type):
            values = _parquet_dictionary_text(col)
        else:  # dates, binary ...: each value as str
            values = np.array(["" if v is None else str(v) for v in col.to_pylist()],
                              dtype=object)
        columns[str(name)] = values
    return Table(path, list(columns), columns)


def _parquet_dictionary_text(column: Any) -> np.ndarray:
    """A dictionary column (chunks sharing one dictionary) as an object array of ``str``, a
    null as ``""``: the dictionary's values indexed with numpy."""
    chunks = column.chunks
    if not chunks:
        return np.array([], dtype=object)
    dictionary = chunks[0].dictionary.to_pylist()
    levels = np.array(["" if v is None else str(v) for v in dictionary] + [""], dtype=object)
    parts = []
    for chunk in chunks:
        indices = chunk.indices
        if indices.null_count:        # nulls come out as NaN: the last level, ""
            codes = indices.to_numpy(zero_copy_only=False)
            parts.append(np.where(np.isnan(codes), len(dictionary), codes).astype(np.intp))
        else:
            parts.append(indices.to_numpy())
    return levels[np.concatenate(parts)]


def separator(text: str) -> str:
    """The field separator that ``--sep TEXT`` stands for.

    Spaces after a separator are always skipped, so trailing spaces are dropped: ``", "``
    (the raw UCI Adult files) is ``","``.

    Parameters
    ----------
    text : str
        One character or several (``"::"``), or ``\\t`` or ``tab`` for a tab.

    Returns
    -------
    str
        The separator.

    Raises
    ------
    ValueError
        For an empty text, or one holding a quote or a line break, naming ``--sep``.
    """
    sep = {"\\t": "\t", "tab": "\t"}.get(text, text)
    sep = sep.rstrip(" ") or sep        # " " (a space) stays a space
    if not sep:
        raise ValueError(f"--sep {text!r} is invalid; expected one character such as ',' or "
                         "';' (or '\\t' for a tab), or several such as '::'")
    if any(c in sep for c in "\"\r\n"):
        raise ValueError(f"--sep {text!r} is invalid: quotes and line breaks cannot separate "
                         "fields; expected other characters such as ',' or ';' (or '\\t' "
                         "for a tab)")
    return sep


def read_table(path: Any, header: str = "auto", sep: Optional[str] = None,
               categorical: Collection[str] = ()) -> Table:
    """Read ``path`` as Parquet (``.parquet``/``.pq``) or CSV/TSV (anything else).

    Parameters
    ----------
    path : str or path-like
    header : {"auto", "yes", "no"}
        CSV only: whether the first row holds the column names (see :func:`read_csv`).
    sep : str, optional
        CSV only: the field separator, one character or several (``"\\t"`` or ``"tab"`` for
        a tab; see :func:`separator`).
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
    sep = None if sep is None else separator(sep)
    if header not in HEADER_CHOICES:
        raise ValueError(f"header={header!r} is invalid; expected one of {HEADER_CHOICES}")
    if path.lower().endswith(PARQUET_SUFFIXES):
        return read_parquet(path, categorical)
    return read_csv(path, header, sep, categorical)
