"""``boostlib train`` and ``predict`` misused, as a careless or hostile user would.

Every failing command must exit with status 2 and one line on stderr that names the culprit
(option, file, column, line or value) and says what was expected; never a traceback, never
exit status 0, never a hang, and a failed ``train`` writes no model file. The cases are
tables run in-process through :func:`boostlib.frontend.cli.main`; hypothesis then feeds
mutated and random files to ``train``.
"""
import contextlib
import gzip
import io
import os
from pathlib import Path
from typing import List, Sequence, Tuple, Union

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from optional_imports import importorskip

from boostlib import BoostRegressor
from boostlib.frontend.cli import main

#: Prefixes of the one error line: runtime errors, and argparse's usage errors.
ERROR_PREFIXES = ("boostlib: error: ", "boostlib train: error: ", "boostlib predict: error: ")
#: Options of every training run: tiny models keep the file fast.
FAST = ("--n-estimators", "2")


def run(argv: Sequence[object]) -> Tuple[int, str, str]:
    """``(exit status, stdout, stderr)`` of ``boostlib ARGV`` run in-process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:          # argparse's usage errors
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def error_line(argv: Sequence[object]) -> str:
    """The one error line of a command that must fail cleanly."""
    code, _, err = run(argv)
    lines = err.strip().splitlines()
    assert code == 2, (code, err)
    assert "Traceback" not in err and lines and lines[-1].startswith(ERROR_PREFIXES), err
    assert all(line.startswith("boostlib: task: ") for line in lines[:-1]), err
    return lines[-1]


def assert_names(message: str, needles: Sequence[str]) -> None:
    for needle in needles:
        assert needle in message, f"{needle!r} not in {message!r}"


# -- files -----------------------------------------------------------------------------------
def _good_csv(n: int = 30, seed: int = 0) -> str:
    """``y`` (0/1), ``a``, ``b`` (numbers) and ``c`` (text): a valid training file."""
    rng = np.random.default_rng(seed)
    rows = [f"{i % 2},{rng.normal():.3f},{rng.normal():.3f},{'xz'[i % 3 == 0]}"
            for i in range(n)]
    return "y,a,b,c\n" + "\n".join(rows) + "\n"


GOOD = _good_csv()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """A folder with a valid CSV (``good.csv``), a model trained on it (``model.json``) and a
    model trained on a plain array of 3 features (``array.json``)."""
    folder = tmp_path_factory.mktemp("cli_misuse")
    (folder / "good.csv").write_text(GOOD)
    code, _, err = run(["train", folder / "good.csv", "--target", "y", "-o",
                        folder / "model.json", *FAST])
    assert code == 0, err
    X = np.random.default_rng(0).normal(size=(40, 3))
    BoostRegressor(n_estimators=2).fit(X, X[:, 0]).save_model(folder / "array.json")
    return folder


Content = Union[str, bytes, None]


def _write(folder: Path, name: str, content: Content) -> Path:
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, newline="")
    return path


# -- train: files that are not (valid) CSV ---------------------------------------------------
_GZ = gzip.compress(GOOD.encode())
#: (id, file name, content, extra options, what the message must name)
TRAIN_FILE_CASES = [
    ("missing-file", "nope.csv", None, [], ["nope.csv", "No such file"]),
    ("empty", "empty.csv", "", [], ["empty.csv", "no rows"]),
    ("blank-lines", "blank.csv", "\n  \n\r\n", [], ["blank.csv", "no rows"]),
    ("header-only", "header.csv", "y,a,b\n", [], ["header.csv", "no data rows"]),
    ("header-only-forced", "header.csv", "y,a,b\n", ["--header", "yes"], ["no data rows"]),
    ("nul-bytes", "nul.csv", b"y,a\n1,2\x00\n0,3\n", [], ["nul.csv", "line 2", "NUL byte"]),
    ("binary", "garbage.csv", bytes(range(256)), [], ["garbage.csv", "NUL byte"]),
    ("invalid-utf8", "latin1.csv", "y,a\n1,caf\xe9\n0,b\n".encode("latin-1"), [],
     ["latin1.csv", "line 2", "not UTF-8", "0xe9"]),
    ("utf16", "utf16.csv", "y,a\n1,2\n0,3\n".encode("utf-16"), [], ["utf16.csv", "UTF-16"]),
    ("not-gzip", "plain.csv.gz", GOOD, [], ["plain.csv.gz", "gzip"]),
    ("truncated-gzip", "cut.csv.gz", _GZ[:len(_GZ) // 2], [], ["cut.csv.gz", "gzip"]),
    ("json-as-data", "model.json", '{"format": "boostlib-model"}', [],
     ["DATA", "model.json", "expected a CSV"]),
    ("unclosed-quote", "quote.csv", 'y,a,b\n1,"abc,2\n0,2,3\n1,4,5\n', [],
     ["quote.csv", "line 2", "quoted field", "closing '\"'"]),
    ("unclosed-quote-after-multiline-field", "quote2.csv",
     'y,a,b\n1,"two\nlines",2\n0,3,"open\n1,4,5\n', [], ["quote2.csv", "line 4", "quoted"]),
    ("unclosed-quote-escaped-pair", "quote3.csv", 'y,a\n1,"ab""\n0,2\n', [],
     ["line 2", "quoted field"]),
    ("unclosed-quote-beyond-field-limit", "quote4.csv",
     'y,a\n0,1\n1,"' + "x" * 140_000 + "\n0,2\n", [], ["quote4.csv", "line 3", "quoted"]),
    ("field-too-long", "long.csv", "y,a\n1," + "x" * 140_000 + "\n0,b\n", [],
     ["long.csv", "line 2", "longer than"]),
    ("ragged-row", "ragged.csv", "y,a\n1,2\n0,3,4\n", [],
     ["ragged.csv", "data row 2", "3 fields", "expected 2", "line 3"]),
    ("duplicate-names", "dup.csv", "y,a,a\n1,2,3\n0,3,4\n", [], ["dup.csv", "duplicate", "'a'"]),
    ("empty-name", "noname.csv", "y,,b\n1,2,3\n0,3,4\n", [], ["noname.csv", "column 1",
                                                              "empty name"]),
    ("wrong-separator", "semi.csv", "y;a;b\n1;2;3\n0;3;4\n", [],
     ["semi.csv", "no column 'y'", "--sep ';'"]),
    ("only-the-target", "single.csv", "y\n1\n0\n1\n", [], ["single.csv", "only the --target"]),
    ("huge-number", "huge.csv", "y,a\n1,1\n0,1e400\n1,3\n", [],
     ["huge.csv", "column 'a'", "data row 2", "1e400", "expected finite"]),
    ("inf-text", "inf.csv", "y,a\n1,-inf\n0,2\n1,3\n", [], ["inf.csv", "column 'a'", "-inf"]),
    ("target-missing-everywhere", "nolabel.csv", "y,a\n,1\nNA,2\n?,3\n", [],
     ["--target 'y'", "missing in 3 rows of 3"]),
    ("target-missing-once", "hole.csv", "y,a\n1,1\n,2\n0,3\n", [],
     ["--target 'y'", "missing in 1 row of 3", "data row 2"]),
    ("target-infinite", "infy.csv", "y,a\n1.5,1\n1e400,2\n0.5,3\n", [],
     ["--target 'y'", "infinite", "data row 2"]),
    ("text-target-regression", "text.csv", "y,a\nx,1\nz,2\nx,3\n", ["--task", "regression"],
     ["--task regression", "--target 'y'", "text"]),
    ("single-class", "one.csv", "y,a\nx,1\nx,2\nx,3\n", [], ["--target 'y'", "single value"]),
    ("single-row-classification", "row.csv", "y,a\n1,2\n", ["--task", "classification"],
     ["--target 'y'", "single value"]),
    ("eval-fraction-takes-a-class", "two.csv", "y,a\n0,1\n1,2\n", ["--eval-fraction", "0.5"],
     ["--eval-fraction 0.5", "every row of class"]),
]


@pytest.mark.parametrize("name, content, options, needles",
                         [c[1:] for c in TRAIN_FILE_CASES], ids=[c[0] for c in TRAIN_FILE_CASES])
def test_train_refuses_bad_files(tmp_path, name, content, options, needles):
    data = _write(tmp_path, name, content)
    output = tmp_path / "out.json"
    message = error_line(["train", data, "--target", "y", "-o", output, *FAST, *options])
    assert_names(message, needles)
    assert not output.exists()


def test_unclosed_quote_is_not_reported_as_a_field_count(tmp_path):
    data = _write(tmp_path, "q.csv", 'y,a,b\n1,"abc,2\n0,2,3\n')
    message = error_line(["train", data, "--target", "y", "-o", tmp_path / "m.json"])
    assert "fields, expected" not in message and "quoted field" in message


def test_train_refuses_a_folder_or_a_device_as_data(tmp_path):
    assert_names(error_line(["train", tmp_path, "--target", "y"]), [str(tmp_path), "folder"])
    if os.path.exists("/dev/zero"):        # would otherwise be read forever
        assert_names(error_line(["train", "/dev/zero", "--target", "y", "-o",
                                 tmp_path / "m.json"]), ["/dev/zero", "device"])


# -- train: options ----------------------------------------------------------------------------
#: (id, options, what the message must name); the data is ``good.csv``, target ``y``.
TRAIN_OPTION_CASES = [
    ("sep-empty", ["--sep", ""], ["--sep ''", "one character", "'\\t'"]),
    ("sep-two-chars", ["--sep", ";;"], ["no column 'y'", "splitting fields at ';;' as --sep",
                                        "--sep ','"]),
    ("sep-quote-among-several", ["--sep", ';"'], ["--sep ';\"'", "quotes"]),
    ("sep-quote", ["--sep", '"'], ["--sep '\"'", "quotes"]),
    ("sep-newline", ["--sep", "\n"], ["--sep '\\n'", "line breaks"]),
    ("target-unknown", ["--target", "zz"], ["good.csv", "no column 'zz'", "'y', 'a'"]),
    ("target-blank", ["--target", "  "], ["--target", "column name"]),
    ("categorical-unknown", ["--categorical", "a,nope"], ["--categorical", "'nope'"]),
    ("categorical-is-target", ["--categorical", "y"], ["--categorical", "--target", "'y'"]),
    ("drop-is-target", ["--drop", "y"], ["--drop", "--target column 'y'"]),
    ("drop-unknown", ["--drop", "id"], ["--drop 'id'", "no column 'id'"]),
    ("drop-everything", ["--drop", "a,b,c"], ["--drop 'a,b,c'", "no feature column"]),
    ("drop-and-categorical", ["--drop", "c", "--categorical", "c"],
     ["--drop and --categorical", "'c'"]),
    ("drop-nothing", ["--drop", ","], ["--drop", "column names"]),
    ("eval-fraction-one", ["--eval-fraction", "1"], ["--eval-fraction", "'1'", "[0, 1)"]),
    ("eval-fraction-negative", ["--eval-fraction=-0.1"], ["--eval-fraction", "'-0.1'"]),
    ("eval-fraction-nan", ["--eval-fraction", "nan"], ["--eval-fraction", "'nan'"]),
    ("eval-fraction-text", ["--eval-fraction", "half"], ["--eval-fraction", "'half'"]),
    ("eval-fraction-no-row", ["--eval-fraction", "0.001"],
     ["--eval-fraction 0.001", "leaves 0 of 30 rows"]),
    ("n-estimators-text", ["--n-estimators", "abc"], ["--n-estimators", "'abc'"]),
    ("n-estimators-float", ["--n-estimators", "1e3"], ["--n-estimators", "'1e3'"]),
    ("n-estimators-zero", ["--n-estimators", "0"], ["--n-estimators", "n_estimators=0"]),
    ("learning-rate-nan", ["--learning-rate", "nan"], ["--learning-rate", "nan", "expected"]),
    ("learning-rate-text", ["--learning-rate", "fast"], ["--learning-rate", "'fast'"]),
    ("max-depth-zero", ["--max-depth", "0"], ["--max-depth", "max_depth=0", "expected"]),
    ("max-bins-one", ["--max-bins", "1"], ["--max-bins", "max_bins=1"]),
    ("subsample-two", ["--subsample", "2"], ["--subsample", "subsample=2.0"]),
    ("random-state-negative", ["--random-state", "-1"], ["--random-state", "-1"]),
    ("n-jobs-zero", ["--n-jobs", "0"], ["--n-jobs", "n_jobs=0"]),
    ("negative-value-detached", ["--cat-l2", "-inf"], ["--cat-l2", "--option=-VALUE"]),
    ("loss-unknown", ["--loss", "hinge"], ["--loss", "'hinge'", "available"]),
    ("loss-of-regression", ["--task", "classification", "--loss", "mse"],
     ["--loss", "'mse'", "classification loss"]),
    ("grow-policy-unknown", ["--grow-policy", "leafwise"], ["--grow-policy", "'leafwise'"]),
    ("params-not-json", ["--update-params", "{oops"], ["--update-params", "invalid JSON"]),
    ("params-not-object", ["--loss-params", "[1]"], ["--loss-params", "JSON object"]),
    ("params-unknown-key", ["--update-params", '{"zzz": 1}'], ["--update-params", "'zzz'"]),
    ("sampler-params-without-sampler", ["--sampler-params", '{"top_rate": 0.1}'],
     ["--sampler-params", "--sampler NAME"]),
    ("task-unknown", ["--task", "clustering"], ["--task", "'clustering'"]),
    ("ranking-without-group", ["--task", "ranking"], ["--task ranking", "--group COLUMN"]),
    ("group-without-ranking", ["--group", "a"], ["--group", "'a'", "--task ranking"]),
    ("group-is-target", ["--task", "ranking", "--group", "y"], ["--group", "'y'", "--target"]),
    ("group-unknown", ["--task", "ranking", "--group", "q"], ["--group", "'q'", "no column"]),
    ("group-not-consecutive", ["--task", "ranking", "--group", "c"],
     ["--group", "'c'", "not consecutive", "sort the file"]),
    ("ranking-labels", ["--target", "b", "--task", "ranking", "--group", "y"],
     ["--task ranking", "relevance labels", "--target 'b'"]),
    ("header-unknown", ["--header", "maybe"], ["--header", "'maybe'"]),
    ("unknown-option", ["--depth", "3"], ["--depth"]),
    ("missing-option-value", ["--max-depth"], ["--max-depth", "expected one argument"]),
]


@pytest.mark.parametrize("options, needles", [c[1:] for c in TRAIN_OPTION_CASES],
                         ids=[c[0] for c in TRAIN_OPTION_CASES])
def test_train_refuses_bad_options(files, tmp_path, options, needles):
    output = tmp_path / "out.json"
    argv = ["train", files / "good.csv", "--target", "y", "-o", output, *FAST, *options]
    if "--target" in options:
        argv[2:4] = []
    assert_names(error_line(argv), needles)
    assert not output.exists()


def test_headerless_target_index_out_of_range(tmp_path):
    data = _write(tmp_path, "plain.csv", "1,2,3\n0,3,4\n1,5,6\n")
    for index in ("3", "-1"):
        message = error_line(["train", data, "--target", index, "--header", "no",
                              "-o", tmp_path / "m.json"])
        assert_names(message, ["plain.csv", f"no column '{index}'", "'0', '1', '2'"])


# -- train: --output ---------------------------------------------------------------------------
def test_train_output_paths(files, tmp_path):
    train = ["train", files / "good.csv", "--target", "y", *FAST]
    assert_names(error_line(train + ["-o", ""]), ["--output ''", "expected a file path"])
    assert_names(error_line(train + ["-o", tmp_path]), ["--output", str(tmp_path), "folder"])
    assert_names(error_line(train + ["-o", tmp_path / "no" / "m.json"]),
                 ["--output", "folder", "does not exist"])
    assert_names(error_line(train + ["-o", files / "good.csv"]),
                 ["--output", "good.csv", "DATA file", "destroy"])
    assert (files / "good.csv").read_text() == GOOD
    if os.path.exists("/dev/null"):
        assert_names(error_line(train + ["-o", "/dev/null"]),
                     ["--output '/dev/null'", "not a regular file"])
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
        assert_names(error_line(train + ["-o", tmp_path / "fifo"]),
                     ["--output", "fifo", "not a regular file"])


# -- predict -----------------------------------------------------------------------------------
#: (id, model file (in ``files``, or None for a file written from the content), data
#: content, options, what the message must name)
PREDICT_CASES = [
    ("missing-columns", "model.json", "y,a,b\n1,2,3\n", [], ["data.csv", "missing column",
                                                             "'c'"]),
    ("text-in-numeric-feature", "model.json", "a,b,c\nx,2,z\n", [],
     ["data.csv", "column 'a'", "holds text", "numeric"]),
    ("infinite-feature", "model.json", "a,b,c\n1e999,2,z\n", [],
     ["data.csv", "column 'a'", "data row 1", "expected finite"]),
    ("array-model-wrong-width", "array.json", "1,2\n3,4\n", [],
     ["data.csv", "exactly its 3 feature columns", "it has 2"]),
    ("array-model-text", "array.json", "1,2,x\n3,4,y\n", ["--header", "no"],
     ["data.csv", "numbers only", "'2'"]),
    ("unclosed-quote", "model.json", 'a,b,c\n1,2,"x\n', [], ["data.csv", "line 2", "quoted"]),
    ("sep-empty", "model.json", "a,b,c\n1,2,x\n", ["--sep", ""], ["--sep ''"]),
    ("empty-data", "model.json", "", [], ["data.csv", "no rows"]),
    ("csv-as-model", "good.csv", "a,b,c\n1,2,x\n", [],
     ["MODEL.json", "good.csv", "not valid JSON"]),
    ("missing-model", "nope.json", "a,b,c\n1,2,x\n", [], ["nope.json", "cannot read model"]),
    ("unknown-option", "model.json", "a,b,c\n1,2,x\n", ["--target", "y"], ["--target"]),
]


@pytest.mark.parametrize("model, content, options, needles", [c[1:] for c in PREDICT_CASES],
                         ids=[c[0] for c in PREDICT_CASES])
def test_predict_refuses_bad_input(files, tmp_path, model, content, options, needles):
    data = _write(tmp_path, "data.csv", content)
    output = tmp_path / "pred.csv"
    assert_names(error_line(["predict", files / model, data, "-o", output, *options]), needles)
    assert not output.exists()


def test_predict_with_swapped_arguments(files):
    message = error_line(["predict", files / "good.csv", files / "model.json"])
    assert_names(message, ["good.csv", "model file comes first"])


def test_predict_with_a_folder_as_model_or_data(files, tmp_path):
    assert_names(error_line(["predict", tmp_path, files / "good.csv"]), [str(tmp_path)])
    assert_names(error_line(["predict", files / "model.json", tmp_path]),
                 [str(tmp_path), "folder"])


def test_predict_output_paths(files, tmp_path):
    predict = ["predict", files / "model.json", files / "good.csv", "-o"]
    assert_names(error_line(predict + [""]), ["--output ''"])
    assert_names(error_line(predict + [tmp_path]), ["--output", "folder"])
    assert_names(error_line(predict + [tmp_path / "no" / "p.csv"]),
                 ["--output", "does not exist"])
    assert_names(error_line(predict + [files / "good.csv"]), ["--output", "DATA file"])
    assert_names(error_line(predict + [files / "model.json"]), ["--output", "MODEL.json file"])
    assert (files / "good.csv").read_text() == GOOD
    if hasattr(os, "mkfifo"):          # predictions replace a regular file whole, never
        os.mkfifo(tmp_path / "fifo")   # write through a FIFO, device or symlink
        assert_names(error_line(predict + [tmp_path / "fifo"]),
                     ["--output", "fifo", "not a regular file"])
    if os.path.exists("/dev/null"):
        assert_names(error_line(predict + ["/dev/null"]), ["--output", "not a regular file"])


def test_valid_files_still_train_and_predict(files, tmp_path):
    """The checks let the ordinary cases through: quoted fields (also over several lines),
    a BOM, CRLF, gzip, spaces around --target and a tab separator."""
    quoted = 'y,a,b,c\n' + "".join(f'{i % 2},"{i}",{i * 0.5},"multi\nline {i % 3}"\n'
                                    for i in range(20))
    cases = {"quoted.csv": quoted.encode(), "bom.csv": b"\xef\xbb\xbf" + GOOD.encode(),
             "crlf.csv": GOOD.replace("\n", "\r\n").encode(), "good.csv.gz": _GZ,
             "tabs.txt": GOOD.replace(",", "\t").encode()}
    for name, content in cases.items():
        data = _write(tmp_path, name, content)
        sep = ["--sep", "\\t"] if name == "tabs.txt" else []
        code, _, err = run(["train", data, "--target", " y ", "-o", tmp_path / "m.json",
                            *FAST, *sep])
        assert code == 0, (name, err)
        code, out, err = run(["predict", tmp_path / "m.json", data, *sep])
        rows = 20 if name == "quoted.csv" else 30
        assert code == 0 and out.count("\n") == rows + 1, (name, err)


# -- parquet ----------------------------------------------------------------------------------
def test_parquet_misuse(tmp_path):
    pa = importorskip("pyarrow")
    pq = importorskip("pyarrow.parquet")
    (tmp_path / "fake.parquet").write_text(GOOD)
    assert_names(error_line(["train", tmp_path / "fake.parquet", "--target", "y"]),
                 ["fake.parquet", "cannot read as Parquet"])
    pq.write_table(pa.table({"y": pa.array([], pa.int64()), "a": pa.array([], pa.float64())}),
                   tmp_path / "empty.parquet")
    assert_names(error_line(["train", tmp_path / "empty.parquet", "--target", "y"]),
                 ["empty.parquet", "0 rows"])
    pq.write_table(pa.table({"y": [0, 1, 0], "a": [1.0, float("inf"), 2.0]}),
                   tmp_path / "inf.parquet")
    assert_names(error_line(["train", tmp_path / "inf.parquet", "--target", "y", "-o",
                             tmp_path / "m.json"]), ["inf.parquet", "column 'a'", "inf"])


def test_missing_parquet_file_is_reported_as_missing(tmp_path):
    """Whether or not pyarrow is installed, a missing file is a missing file."""
    assert_names(error_line(["train", tmp_path / "none.parquet", "--target", "y"]),
                 ["none.parquet", "No such file"])


# -- hypothesis: mutated and random files --------------------------------------------------------
SMALL = _good_csv(12)
#: Tokens inserted by the mutations: CSV syntax, numbers at the edges, text, encodings.
TOKENS = ['"', '""', ",", "\n", "\r\n", "\r", " ", "\t", ";", "1", "-", ".", "e", "1e400",
          "-inf", "nan", "NA", "?", "x", "\x00", "\ufeff", "\xe9", "9" * 30]


@st.composite
def mutated_csv(draw) -> bytes:
    """SMALL with a few characters inserted, replaced or deleted, possibly truncated."""
    text = list(SMALL)
    for _ in range(draw(st.integers(1, 5))):
        pos = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "replace", "delete"]))
        if op == "insert" or not text:
            text.insert(pos, draw(st.sampled_from(TOKENS)))
        elif op == "replace":
            text[min(pos, len(text) - 1)] = draw(st.sampled_from(TOKENS))
        else:
            del text[min(pos, len(text) - 1)]
    data = "".join(text).encode("utf-8")
    cut = draw(st.one_of(st.none(), st.integers(0, len(data))))
    return data if cut is None else data[:cut]


def _train_or_clean_error(folder: Path, data: bytes, options: List[str]) -> None:
    """Train on ``data``: success writes a model that predicts the same file; failure is one
    clean error line and no model."""
    path, model = folder / "fuzz.csv", folder / "fuzz.json"
    path.write_bytes(data)
    if model.exists():
        model.unlink()
    code, _, err = run(["train", path, "-o", model, *FAST, *options])
    lines = err.strip().splitlines()
    if code == 0:
        header = options[options.index("--header"):][:2] if "--header" in options else []
        predicted = run(["predict", model, path, *header])
        assert predicted[0] == 0, (data, options, predicted[2])
        return
    assert code == 2 and "Traceback" not in err, (data, options, err)
    assert lines and lines[-1].startswith(ERROR_PREFIXES), (data, options, err)
    assert not model.exists()


OPTIONS = st.tuples(
    st.sampled_from(["y", "a", "c", "0"]),
    st.sampled_from([[], ["--task", "classification"], ["--task", "regression"]]),
    st.sampled_from([[], ["--header", "yes"], ["--header", "no"]]),
    st.sampled_from([[], ["--eval-fraction", "0.3"], ["--categorical", "a"]]),
).map(lambda t: ["--target", t[0], *t[1], *t[2], *t[3]])


@settings(max_examples=150, deadline=None)
@given(data=mutated_csv(), options=OPTIONS)
def test_mutated_csv_trains_or_fails_cleanly(tmp_path_factory, data, options):
    _train_or_clean_error(tmp_path_factory.mktemp("mutated"), data, options)


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=120), options=OPTIONS)
def test_random_bytes_train_or_fail_cleanly(tmp_path_factory, data, options):
    _train_or_clean_error(tmp_path_factory.mktemp("bytes"), data, options)


#: Options whose value hypothesis draws (no --n-estimators or --n-jobs: a large valid
#: value is a legitimately long run, not a misuse).
VALUE_OPTIONS = ["--learning-rate", "--max-depth", "--max-bins", "--l2-regularization",
                 "--min-samples-leaf", "--subsample", "--random-strength", "--cat-smooth",
                 "--eval-fraction", "--sep", "--target", "--drop", "--categorical",
                 "--loss-params", "--sampler", "--grow-policy", "--random-state"]


@settings(max_examples=80, deadline=None)
@given(option=st.sampled_from(VALUE_OPTIONS),
       value=st.text(st.sampled_from("-+.0123456789eEinfa,{}\"' \t"), max_size=8))
def test_random_option_values_are_accepted_or_named(files, option, value):
    argv = ["train", files / "good.csv", "--target", "y", "-o", files / "opt.json", *FAST,
            f"{option}={value}"]
    code, _, err = run(argv)
    if code != 0:
        lines = err.strip().splitlines()
        assert code == 2 and "Traceback" not in err, (argv, err)
        assert lines and lines[-1].startswith(ERROR_PREFIXES), (argv, err)


def test_identifier_columns_are_warned_of_with_the_drop_that_removes_them(tmp_path):
    # a text column with a different value in every row became a categorical feature of one
    # level per row without a word
    rng = np.random.default_rng(0)
    rows = [f"{i % 2},{rng.normal():.3f},user-{i:03d},{'xyz'[i % 3]}" for i in range(40)]
    data = tmp_path / "ids.csv"
    data.write_text("y,a,user id,city\n" + "\n".join(rows) + "\n")
    code, out, err = run(["train", data, "--target", "y", "-o", tmp_path / "m.json", *FAST])
    assert code == 0, err
    warning = [line for line in err.splitlines() if line.startswith("boostlib: warning: ")]
    assert len(warning) == 1, err
    assert_names(warning[0], ["column 'user id' has a different value in every row",
                              "--drop 'user id'"])
    assert "city" not in warning[0]
    code, out, err = run(["train", data, "--target", "y", "-o", tmp_path / "m.json", *FAST,
                          "--drop", "user id"])
    assert code == 0 and "warning" not in err, err
