"""Parquet folders and CSV files read in batches (boostlib.io.batches) give what
boostlib.io.tables reads in memory, and ``boostlib train`` on them out of core writes the
model it writes in memory."""
import gzip
import json
import os
import re

import numpy as np
import pytest

from boostlib import Dataset, train
from boostlib.frontend.cli import main
from boostlib.io.batches import csv_batches, parquet_batches
from boostlib.io.tables import read_table
from optional_imports import importorskip

pa = importorskip("pyarrow")
pq = importorskip("pyarrow.parquet")
pd = importorskip("pandas")

# set splits: what "auto" keeps for a Dataset read in batches, so both routes compare
P = {"n_estimators": 10, "random_state": 0, "max_depth": 4, "categorical_encoding": "sets"}


def _frame(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    a[::11] = np.nan
    df = pd.DataFrame({
        "a": a,
        "b": rng.integers(0, 9, n),
        "c": rng.choice(["x", " y", "z ", "NA", "w"], n),
        "label": rng.integers(0, 2, n)})
    df["label"] = ((np.nan_to_num(a) + (df["c"] == "z ") + rng.normal(size=n) * 0.5) > 0.3
                   ).astype(int)
    return df


def _parquet_folder(df, folder, parts=4):
    os.makedirs(folder / "sub", exist_ok=True)
    cuts = np.linspace(0, len(df), parts + 1).astype(int)
    for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        where = folder / ("sub" if k == parts - 1 else ".") / f"part{k}.parquet"
        pq.write_table(pa.Table.from_pandas(df.iloc[a:b], preserve_index=False), where,
                       row_group_size=700)
    (folder / "_SUCCESS").write_text("")         # skipped, as Spark's markers
    return folder


def _in_memory(path, features, categorical=()):
    table = read_table(str(path), categorical=categorical)
    X = table.features(features)
    return X, train(P, Dataset(X, table.column("label")))


def test_a_parquet_folder_reads_as_the_tables_reader_reads_it(tmp_path):
    df = _frame()
    folder = _parquet_folder(df, tmp_path / "data")
    df.to_csv(tmp_path / "all.csv", index=False)
    source = parquet_batches(folder, batch_rows=500, categorical=["b"])
    assert source.n_rows == len(df) and source.names == ["a", "b", "c", "label"]
    assert [os.path.relpath(f, folder) for f in source.files] == \
        ["part0.parquet", "part1.parquet", "part2.parquet", os.path.join("sub", "part3.parquet")]
    batches = list(source)
    assert max(b.num_rows for b in batches) == 500
    assert sum(b.num_rows for b in batches) == len(df)
    ds = Dataset.from_batches(source, label="label")
    # text stripped, missing-value tokens missing, --categorical numbers as their text
    assert ds.levels[1] == [str(v) for v in range(9)]
    assert ds.levels[2] == ["w", "x", "y", "z"]
    X, expected = _in_memory(tmp_path / "all.csv", ["a", "b", "c"], categorical=["b"])
    assert np.array_equal(train(P, ds).predict(X), expected.predict(X))
    # a list of files, and columns
    again = parquet_batches(source.files, columns=["a", "label"])
    assert again.names == ["a", "label"]
    assert next(iter(again)).schema.names == ["a", "label"]


def test_parquet_errors(tmp_path):
    df = _frame(n=100)
    with pytest.raises(FileNotFoundError, match="No such file or directory"):
        parquet_batches(tmp_path / "absent")
    os.makedirs(tmp_path / "empty")
    with pytest.raises(ValueError, match="the folder holds no Parquet file"):
        parquet_batches(tmp_path / "empty")
    folder = tmp_path / "mixed"
    os.makedirs(folder)
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), folder / "a.parquet")
    pq.write_table(pa.Table.from_pandas(df.drop(columns="b"), preserve_index=False),
                   folder / "b.parquet")
    with pytest.raises(ValueError, match=r"b.parquet lacks 'b', unlike .*a.parquet: every "
                                         "file needs the same columns"):
        parquet_batches(folder)
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(ValueError, match="bad.parquet: cannot read as Parquet"):
        parquet_batches(tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="no column 'zz'"):
        parquet_batches(folder / "a.parquet", columns=["zz"])
    with pytest.raises(ValueError, match="batch_rows=0 is invalid"):
        parquet_batches(folder / "a.parquet", batch_rows=0)


@pytest.mark.parametrize("gz", [False, True])
def test_a_csv_file_in_blocks_reads_as_the_tables_reader_reads_it(tmp_path, gz):
    df = _frame(seed=1)
    path = tmp_path / ("d.csv.gz" if gz else "d.csv")
    text = df.to_csv(index=False).encode()
    path.write_bytes(gzip.compress(text) if gz else text)
    source = csv_batches(path, block_bytes=4096, categorical=["b"])
    assert source.names == ["a", "b", "c", "label"]
    assert len(list(source)) > 5
    ds = Dataset.from_batches(source, label="label")
    X, expected = _in_memory(path, ["a", "b", "c"], categorical=["b"])
    assert np.array_equal(train(P, ds).predict(X), expected.predict(X))


def test_csv_without_header_and_errors(tmp_path):
    path = tmp_path / "n.tsv"
    path.write_text("1\t2.5\tx\n2\t\ty\n3\t4\tNA\n")
    source = csv_batches(path)
    assert source.names == ["0", "1", "2"] and source.sep == "\t"
    (batch,) = list(source)
    assert batch.column(1).to_pylist() == [2.5, None, 4.0]
    assert batch.column(2).to_pylist() == ["x", "y", None]
    late = tmp_path / "late.csv"
    late.write_text("a,b\n" + "".join(f"{i},1\n" for i in range(5000)) + "text,1\n")
    with pytest.raises(ValueError, match="late.csv: .*a column read as numbers from the "
                                         "first block holds text further on: name it in "
                                         "categorical"):
        Dataset.from_batches(csv_batches(late, block_bytes=1000), label="b")
    with pytest.raises(ValueError, match="takes a one-character separator"):
        csv_batches(path, sep="::")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match="the file holds no row"):
        csv_batches(empty)
    dup = tmp_path / "dup.csv"
    dup.write_text("a,a\n1,2\n")
    with pytest.raises(ValueError, match="duplicate column names 'a'"):
        csv_batches(dup)


def _model(path):
    doc = json.loads(path.read_text())
    return {k: v for k, v in doc.items() if k != "params"}


def test_train_out_of_core_writes_the_in_memory_model(tmp_path, capsys):
    df = _frame(n=4000, seed=2)
    folder = _parquet_folder(df, tmp_path / "data", parts=3)
    df.to_csv(tmp_path / "all.csv", index=False)
    common = ["--target", "label", "--n-estimators", "8", "--random-state", "3",
              "--eval-fraction", "0.25", "--categorical", "b",
              "--categorical-encoding", "sets"]     # what "auto" keeps out of core
    assert main(["train", str(tmp_path / "all.csv"), "-o", str(tmp_path / "m.json")]
                + common) == 0
    memory = capsys.readouterr().out
    assert main(["train", str(folder), "-o", str(tmp_path / "p.json"), "--batch-rows",
                 "300", "--spill", str(tmp_path)] + common) == 0
    out = capsys.readouterr().out
    assert "[out of core]" in out
    assert main(["train", str(tmp_path / "all.csv"), "--out-of-core", "-o",
                 str(tmp_path / "c.json")] + common) == 0
    # the same evaluation line and the same model (the parameters record the categorical
    # features as named, or found by the Dataset)
    line = [x for x in memory.splitlines() if x.startswith("evaluation")]
    assert line == [x for x in out.splitlines() if x.startswith("evaluation")]
    assert _model(tmp_path / "m.json") == _model(tmp_path / "p.json") == \
        _model(tmp_path / "c.json")


def test_train_out_of_core_errors(tmp_path, capsys):
    df = _frame(n=200)
    folder = _parquet_folder(df.assign(name=np.where(df["label"] == 1, "yes", "no")),
                             tmp_path / "data", parts=2)
    cases = [
        (["--target", "label", "--task", "ranking", "--group", "b"],
         "--group is not supported with --out-of-core"),
        (["--target", "name"], "--target 'name' is text; --out-of-core reads a numeric target"),
        (["--target", "zz"], "no column 'zz'"),
        (["--target", "label", "--drop", "zz"], "--drop 'zz': .* has no column 'zz'"),
        (["--target", "label", "--sep", ";"], "--sep ';' is for CSV files"),
        (["--target", "label", "--cv", "3"], "--cv 3 reads the rows in memory"),
    ]
    for args, message in cases:
        assert main(["train", str(folder), "-o", str(tmp_path / "m.json")] + args) == 2
        err = capsys.readouterr().err
        assert re.search(message, err), err
    df.to_csv(tmp_path / "d.csv", index=False)
    assert main(["train", str(tmp_path / "d.csv"), "--target", "label", "--spill",
                 str(tmp_path), "-o", str(tmp_path / "m.json")]) == 2
    assert "--spill" in capsys.readouterr().err
