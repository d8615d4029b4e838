"""The pyarrow CSV reader of ``boostlib.io.tables`` against the csv-module one: the same
``Table`` bit for bit on generated files, or the csv reader reads the file (and words the
error); and Parquet text columns read as dictionaries."""
import gzip
import os
import subprocess
import sys
from contextlib import contextmanager
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from optional_imports import importorskip

from boostlib.io import tables
from boostlib.io.tables import MISSING_TOKENS, categorical_codes, read_csv, read_table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_import_boostlib_does_not_import_pyarrow():
    # pandas is blocked: pandas >= 3 imports pyarrow itself, and scikit-learn imports pandas
    code = ("import sys; sys.modules['pandas'] = None; "
            "import boostlib, boostlib.io.tables, boostlib.frontend.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyarrow'))")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- helpers ---------------------------------------------------------------------------------
def _assert_same(fast, slow):
    """Two Tables are the same: names, hint, dtypes, floats bit for bit, texts equal."""
    assert fast.names == slow.names and fast.path == slow.path and fast.hint == slow.hint
    assert list(fast.columns) == list(slow.columns)
    for name in slow.names:
        a, b = fast.columns[name], slow.columns[name]
        assert a.dtype == b.dtype and a.shape == b.shape, name
        if b.dtype.kind == "f":
            assert np.array_equal(a.view(np.uint64), b.view(np.uint64)), (name, a, b)
            assert a.flags.writeable
        else:
            assert all(type(v) is str for v in a), name
            assert a.tolist() == b.tolist(), name


def _both(path, header="auto", sep=",", categorical=()):
    """(fast Table or None, slow Table or the csv reader's ValueError)."""
    fast = tables._read_csv_arrow(str(path), header, sep, categorical, False)
    try:
        slow = tables._read_csv_python(str(path), header, sep, categorical, False)
    except ValueError as exc:
        slow = exc
    return fast, slow


def _check(path, header="auto", sep=",", categorical=()):
    """The readers agree; returns the fast Table (None when the csv reader read it)."""
    fast, slow = _both(path, header, sep, categorical)
    if fast is not None:
        assert not isinstance(slow, ValueError), f"pyarrow read what csv refuses: {slow}"
        _assert_same(fast, slow)
    return fast


@contextmanager
def _sizes(probe, block):
    with mock.patch.object(tables, "_PROBE_BYTES", probe), \
            mock.patch.object(tables, "_BLOCK_SIZE", block):
        yield


def _write(path, text, compress=False, bom=False):
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")
    if compress:
        path = str(path) + ".gz"
        data = gzip.compress(data)
    with open(path, "wb") as fh:
        fh.write(data)
    return str(path)


def _quote(field, sep, always=False):
    if always or any(c in field for c in (sep, '"', "\n", "\r")) or field != field.strip(" "):
        return '"' + field.replace('"', '""') + '"'
    return field


# -- generated files ---------------------------------------------------------------------------
def _case(draw, token):
    return "".join(c.upper() if draw(st.booleans()) else c for c in token)


@st.composite
def decimals(draw):
    """Numbers as people and programs write them."""
    kind = draw(st.sampled_from(["repr", "decimal", "int", "special", "odd"]))
    if kind == "repr":
        return repr(draw(st.floats(allow_nan=False, allow_infinity=False)))
    if kind == "int":
        return draw(st.sampled_from(["", "-", "+"])) + draw(st.text("0123456789", min_size=1,
                                                                    max_size=25))
    if kind == "special":
        return draw(st.sampled_from(["inf", "-inf", "+inf", "Infinity", "-INFINITY", "iNf",
                                     "-nan", "+nan", "-NaN", "nan(12)", "1e400", "-1e400",
                                     "1e-400", "-0", "-0.0", "+0", "1_000", "\u0661\u0662",
                                     "0x10", "1.5d", "2.5e", ".", "-", "1.e5", ".5", "5.",
                                     "4.9e-324", "2.4703282292062328e-324",
                                     "1.7976931348623158e308", "1.7976931348623159e308",
                                     "9007199254740993", "0.1e-5000", "1e+0308"]))
    if kind == "odd":
        return draw(st.sampled_from(["", " ", "\t"])) + draw(decimals()) + \
            draw(st.sampled_from(["", " ", "\t", "\u00a0"]))
    digits = draw(st.text("0123456789", min_size=1, max_size=40))
    point = draw(st.integers(0, len(digits)))
    text = digits[:point] + "." + digits[point:]
    if draw(st.booleans()):
        text += draw(st.sampled_from("eE")) + draw(st.sampled_from(["", "+", "-"])) + \
            draw(st.text("0123456789", min_size=1, max_size=4))
    return draw(st.sampled_from(["", "-", "+"])) + text


@st.composite
def missing(draw):
    token = _case(draw, draw(st.sampled_from(sorted(MISSING_TOKENS))))
    return draw(st.sampled_from(["", " "])) + token + draw(st.sampled_from(["", "", " "]))


WORDS = ["Paris", "Lyon", "new york", "a,b", 'say "hi"', "x;y", "tab\there", "line\nbreak",
         "cr\rhere", "12\" screen", "  spaced  ", "caf\u00e9", "\u65e5\u672c", "1e5x", "TRUE",
         "2020-01-01", "12:30:00", "-", "0x1F", "#N/A", "n.a.", "|pipe|"]


@st.composite
def columns(draw, n_rows):
    kind = draw(st.sampled_from(["float", "float", "int", "text", "missing", "late-text",
                                 "nan-literals"]))
    cell = {"float": st.one_of(decimals(), missing()),
            "int": st.one_of(st.integers(-10**20, 10**20).map(str), missing()),
            "text": st.one_of(st.sampled_from(WORDS), missing(), decimals()),
            "missing": missing(),
            "late-text": decimals(),
            "nan-literals": st.one_of(st.sampled_from(["nan", "-nan", "NaN", "1.5"]),
                                      missing())}[kind]
    values = [draw(cell) for _ in range(n_rows)]
    if kind == "late-text" and n_rows > 3:
        values[-1] = draw(st.sampled_from(WORDS))
    return values


@st.composite
def csv_files(draw):
    n_cols = draw(st.integers(2, 5))
    n_rows = draw(st.integers(1, 25))      # (files the csv reader reads: below 1 in 2)
    sep = draw(st.sampled_from([",", ";", "\t", "|"]))
    header = [draw(st.sampled_from(["y", "x", "city", "a b", "n,1", "1", "2.5", "NA"])) + str(j)
              for j in range(n_cols)]
    cols = [draw(columns(n_rows)) for _ in range(n_cols)]
    rows = [header] * draw(st.booleans()) + [list(r) for r in zip(*cols)]
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    space = draw(st.sampled_from(["", "", "", " "]))      # csv skips spaces after a separator
    quote_all = draw(st.booleans())
    lines = [(sep + space).join(_quote(f, sep, quote_all) for f in row) for row in rows]
    if draw(st.booleans()):                                # blank lines here and there
        at = draw(st.integers(0, len(lines)))
        lines.insert(at, draw(st.sampled_from(["", "", "", "   "])))
    text = newline.join(lines) + (newline if draw(st.booleans()) else "")
    return text, sep, draw(st.sampled_from(["auto", "auto", "yes", "no"])), \
        draw(st.lists(st.sampled_from(header + ["0", "1"]), max_size=2))


@settings(max_examples=int(os.environ.get("BOOSTLIB_CSV_EXAMPLES", 300)),
          suppress_health_check=[HealthCheck.too_slow])
@given(csv_files(), st.booleans(), st.booleans(), st.sampled_from([(64, 256), (1 << 16, 1 << 20)]))
def test_both_readers_give_the_same_table(tmp_path_factory, spec, compress, bom, sizes):
    importorskip("pyarrow.csv")
    text, sep, header, categorical = spec
    path = _write(tmp_path_factory.mktemp("csv") / "t.csv", text, compress, bom)
    with _sizes(*sizes):
        fast = _check(path, header, sep, categorical)
    event("read by pyarrow" if fast is not None else "read by the csv reader")


@settings(max_examples=300)
@given(st.lists(decimals(), min_size=1, max_size=30))
def test_numbers_are_read_as_float_reads_them(tmp_path_factory, numbers):
    importorskip("pyarrow.csv")
    rows = "\n".join(f"{n},{i}" for i, n in enumerate(numbers))
    path = _write(tmp_path_factory.mktemp("csv") / "n.csv", "x,i\n" + rows + "\n")
    fast, slow = _both(path)
    expected = []
    for n in numbers:
        try:
            expected.append(float(n))
        except ValueError:
            expected.append(None)
    if fast is not None:
        _assert_same(fast, slow)
    if all(v is not None for v in expected):
        assert not isinstance(slow, ValueError)
        col = slow.columns["x"]
        assert col.dtype == np.float64
        missing = [n.strip().lower() in MISSING_TOKENS for n in numbers]
        want = np.array([np.nan if m else v for m, v in zip(missing, expected)])
        assert np.array_equal(col.view(np.uint64), want.view(np.uint64))


# -- the fast path reads common files, bit for bit -----------------------------------------------
@pytest.fixture
def typical_csv(tmp_path):
    rng = np.random.default_rng(5)
    n = 3000
    x = rng.standard_normal(n) * 1e3
    lines = ["y,x,n,city,grade"]
    for i in range(n):
        xs = "NA" if i % 17 == 0 else ("" if i % 23 == 0 else repr(float(x[i])))
        city = ["Oslo", "Lima", "na", "", "Paris"][i % 5]
        lines.append(f"{i % 2},{xs},{i - 1500},{city},{['a', 'b', 'N/A'][i % 3]}")
    return _write(tmp_path / "typical.csv", "\n".join(lines) + "\n")


def test_typical_file_is_read_by_pyarrow(typical_csv):
    importorskip("pyarrow.csv")
    for sizes in ((1 << 16, 1 << 20), (512, 1024)):
        with _sizes(*sizes):
            fast = _check(typical_csv)
        assert fast is not None
        assert fast.text_names == ["city", "grade"]
        assert fast.columns["x"].dtype == np.float64


def test_gzip_file(typical_csv, tmp_path):
    importorskip("pyarrow.csv")
    with open(typical_csv, "rb") as fh:
        data = fh.read()
    path = tmp_path / "typical.csv.gz"
    path.write_bytes(gzip.compress(data))
    assert _check(path) is not None
    assert read_table(path).n_rows == 3000
    (tmp_path / "bad.csv.gz").write_bytes(data)          # not gzip-compressed
    with pytest.raises(ValueError, match=r"bad\.csv\.gz: cannot decompress it as gzip"):
        read_table(tmp_path / "bad.csv.gz")


@pytest.mark.parametrize("sep, text", [
    (";", "a;b\n1;x\n2;y\n"), ("\t", "a\tb\n1\tx\n2\ty\n"), ("|", "a|b\n1|x\n2|y\n"),
    (",", "a, b\n1, x\n2,   y\n")])
def test_separators(tmp_path, sep, text):
    importorskip("pyarrow.csv")
    path = _write(tmp_path / "t.csv", text)
    fast = _check(path, sep=sep)
    assert fast is not None and fast.names == ["a", "b"]
    assert fast.columns["b"].tolist() == ["x", "y"]


def test_separators_pyarrow_cannot_use_go_to_the_csv_reader(tmp_path):
    importorskip("pyarrow.csv")
    path = _write(tmp_path / "t.csv", "a::b\n1::x\n2::y\n")
    assert tables._read_csv_arrow(path, "auto", "::", (), True) is None
    table = read_table(path, sep="::")
    assert table.names == ["a", "b"] and table.columns["a"].tolist() == [1.0, 2.0]
    path = _write(tmp_path / "space.csv", 'a, "b,c"\n1, "x,y"\n')   # quote after a space
    assert _check(path) is None
    assert read_table(path).names == ["a", "b,c"]


@pytest.mark.parametrize("header, names", [("auto", ["y", "x"]), ("yes", ["y", "x"]),
                                           ("no", ["0", "1"])])
def test_header_modes(tmp_path, header, names):
    importorskip("pyarrow.csv")
    path = _write(tmp_path / "t.csv", "y,x\n1,2.5\n0,3\n")
    fast = _check(path, header)
    assert fast is not None and fast.names == names


def test_header_auto_without_header(tmp_path):
    importorskip("pyarrow.csv")
    path = _write(tmp_path / "t.csv", "1,2.5\n0,3\n")
    fast = _check(path)
    assert fast is not None and fast.names == ["0", "1"]
    assert fast.columns["1"].tolist() == [2.5, 3.0]


def test_forced_categorical_columns_keep_their_text(tmp_path):
    importorskip("pyarrow.csv")
    path = _write(tmp_path / "t.csv", "zip,x\n075001,1\n13001,2\nNA,3\n 075001 ,4\n")
    fast = _check(path, categorical=["zip", "absent"])
    assert fast is not None
    assert fast.columns["zip"].tolist() == ["075001", "13001", "NA", "075001"]
    codes, levels = categorical_codes(fast.columns["zip"])
    assert levels == ["075001", "13001"]
    np.testing.assert_array_equal(codes, [0, 1, np.nan, 0])


def test_missing_tokens_in_any_case(tmp_path):
    importorskip("pyarrow.csv")
    tokens = ["", "na", "NA", "Na", "nan", "NaN", "NAN", "n/a", "N/A", "null", "NULL", "Null",
              "none", "None", "NONE", "?", '""', " nA ", "nULl"]
    lines = ["x,t"] + [f"{tok},{tok}" for tok in tokens] + ["1.5,word"]
    path = _write(tmp_path / "t.csv", "\n".join(lines) + "\n")
    fast = _check(path)
    assert fast is not None
    x = fast.columns["x"]
    assert np.isnan(x[:-1]).all() and x[-1] == 1.5
    codes, levels = categorical_codes(fast.columns["t"])
    assert levels == ["word"] and np.isnan(codes[:-1]).all()


def test_numbers_only_python_reads_make_a_numeric_column(tmp_path):
    importorskip("pyarrow.csv")
    path = _write(tmp_path / "t.csv", "x,y\n1_000,-nan\n\u0661\u0662,2\n-0,-0\n")
    fast = _check(path)
    assert fast is not None
    assert fast.columns["x"].tolist() == [1000.0, 12.0, 0.0]
    assert np.signbit(fast.columns["x"][2]) and np.signbit(fast.columns["y"][2])
    assert np.signbit(fast.columns["y"][0]) and np.isnan(fast.columns["y"][0])


def test_a_late_text_field_makes_the_column_text(tmp_path):
    importorskip("pyarrow.csv")
    lines = ["x,y"] + [f"{i}.5,{i}" for i in range(2000)] + ["oops,1"]
    path = _write(tmp_path / "t.csv", "\n".join(lines) + "\n")
    with _sizes(256, 1024):
        fast = _check(path)
    assert fast is not None and fast.text_names == ["x"]


@pytest.mark.parametrize("text, message", [
    ('y,x\n1,2\n0,"3\n', r"line 3: a quoted field opens here but its closing '\"' never "),
    ('y,x\n1,2\n0,"3', r"line 3: a quoted field opens here"),
    ("y,x\n1,2\n0\n", r"data row 2 has 1 fields, expected 2 as in the header \(line 3\)"),
    ("y,x\n1,2\n0,1,5\n", r"data row 2 has 3 fields, expected 2"),
    ("y,x\n1,2\n0,\0\n", r"line 3 holds a NUL byte"),
    ("y,y\n1,2\n", r"duplicate column names 'y'"),
    ("y,\n1,2\n", r"column 1 \(0-based\) has an empty name"),
    ("y,x\n", r"no data rows after the header"),
])
def test_errors_are_the_csv_readers(tmp_path, text, message):
    importorskip("pyarrow.csv")
    path = _write(tmp_path / "bad.csv", text)
    assert _check(path) is None
    with pytest.raises(ValueError, match=r"bad\.csv: " + message):
        read_csv(path)


def test_bad_bytes_later_in_the_file_are_the_csv_readers_error(tmp_path):
    importorskip("pyarrow.csv")
    lines = [b"y,x"] + [b"%d,w%d" % (i % 2, i) for i in range(3000)] + [b"1,caf\xe9"]
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with _sizes(256, 1024):
        assert _check(path) is None
        with pytest.raises(ValueError, match=r"latin1\.csv: line 3002 is not UTF-8 text "
                                             r"\(byte 0xe9"):
            read_csv(str(path))


def test_quoted_line_breaks(tmp_path):
    importorskip("pyarrow.csv")
    lines = ["y,note"] + [f'{i % 2},"line {i}\nnext, with ""quotes"""' for i in range(500)]
    path = _write(tmp_path / "t.csv", "\n".join(lines + ["1,last"]) + "\n")
    with _sizes(256, 300):
        fast = _check(path)
    assert fast is not None and fast.columns["note"][3] == 'line 3\nnext, with "quotes"'
    # a line break in the last row: maybe a quote never closed, for the csv reader to judge
    path = _write(tmp_path / "t.csv", "\n".join(lines) + "\n")
    assert _check(path) is None


def test_reader_without_pyarrow(tmp_path, monkeypatch):
    path = _write(tmp_path / "t.csv", "y,x\n1,2.5\n0,NA\n")
    monkeypatch.setitem(sys.modules, "pyarrow", None)      # import pyarrow fails
    assert tables._read_csv_arrow(path, "auto", ",", (), False) is None
    table = read_csv(path)
    assert table.names == ["y", "x"] and np.isnan(table.columns["x"][1])


# -- categorical codes -----------------------------------------------------------------------
@given(st.lists(st.one_of(st.sampled_from(WORDS + ["NA", "na", "", " ", "?", "None"]),
                          st.text(max_size=4)), max_size=40))
def test_categorical_codes_match_numpy_unique(values):
    text = np.array([str(v).strip() for v in values], dtype=object)
    present = np.array([v.lower() not in MISSING_TOKENS for v in text], dtype=bool)
    want = np.full(text.size, np.nan)
    levels = []
    if present.any():
        uniq, inverse = np.unique(text[present], return_inverse=True)
        want[present] = inverse
        levels = [str(v) for v in uniq]
    codes, got_levels = categorical_codes(np.array(values, dtype=object))
    assert got_levels == levels
    np.testing.assert_array_equal(codes, want)


# -- Parquet -------------------------------------------------------------------------------------
def test_parquet_text_columns_are_read_as_dictionaries(tmp_path):
    pa = importorskip("pyarrow")
    pq = importorskip("pyarrow.parquet")
    rng = np.random.default_rng(0)
    city = rng.choice(["Oslo", "Lima", " Paris ", "NA"], 5000).astype(object)
    city[::7] = None
    pq.write_table(pa.table({"city": pa.array(city.tolist()),
                             "big": pa.array(city.tolist(), pa.large_string()),
                             "x": rng.standard_normal(5000)}),
                   tmp_path / "t.parquet", row_group_size=1000)
    calls = []
    real = pq.read_table

    def read(*args, **kwargs):
        calls.append(kwargs.get("read_dictionary"))
        return real(*args, **kwargs)

    with mock.patch.object(pq, "read_table", read):
        table = read_table(tmp_path / "t.parquet")
    assert calls == [["city", "big"]]
    for name in ("city", "big"):
        assert len({id(v) for v in table.columns[name]}) <= 5   # a str per level, not per row
    want = ["" if v is None else v for v in city]
    assert table.columns["city"].tolist() == want and table.columns["big"].tolist() == want
    X = table.features(["city", "x"])
    assert X.categories == {"city": ["Lima", "Oslo", "Paris"]}
    assert np.isnan(X.values[::7, 0]).all()
