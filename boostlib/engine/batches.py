"""Training data read in batches, for data larger than memory
(:meth:`boostlib.Dataset.from_batches`).

A *source* gives the batches again on every read: a list (or any re-iterable object), or a
function returning a fresh iterator. It is read in three passes, none of which holds more
than one batch of feature values:

1. **scan** (when the Dataset is built, :func:`scan`): every batch is checked as
   ``Dataset(X, y)`` checks its data, and against the first batch (the same columns, each
   of the same kind); the targets and weights are kept, with the number of rows of each
   batch and the levels of the label columns (text: all values seen, sorted; categories:
   every batch's, in the order first seen);
2. **sample** (when :func:`boostlib.train` bins the Dataset, :func:`border_sample`): the
   rows the bin borders are computed on, which are the rows ``BinMapper.fit`` draws from the
   same matrix in memory (at most 200,000 of the rows of positive weight, drawn by the
   fit's ``"binning"`` stream once their number is known), and the counts of every
   category code;
3. **bin** (:func:`bin_batches`): each batch binned into the preallocated uint8 matrix
   (feature-major, as the engine reads it), which may be a file mapped in memory.

The sample and bin passes check that the source gives the same batches as the scan (the
same number of rows and the same targets in each), so a source that changes between reads
is an error, not a silently different model.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .._messages import listing, shown
from .binning import BinMapper, border_sample as _draw
from .categorical import MAX_CODE, categorical_mask, encode, label_kind, sorted_levels
from .frames import Columns, arrow_kind, arrow_table, as_frame, is_arrow_table
from .sparse_binning import is_sparse
from .validation import (as_float64, check_sample_weight, check_X, check_y, column_differences,
                         feature_names as frame_names)

#: How a column's values are read: numbers, or labels whose levels are sorted ("text") or
#: are the categories' own order ("dictionary").
NUMBER, TEXT, DICTIONARY = "number", "text", "dictionary"


def _is_table(x: Any) -> bool:
    return hasattr(x, "iloc") or is_arrow_table(x)


class BatchSource:
    """Batches that can be read more than once.

    Parameters
    ----------
    batches : iterable or callable
        A re-iterable object (a list of batches, an object whose ``__iter__`` starts a new
        read, such as :func:`boostlib.io.batches.parquet_batches`), or a function without
        arguments returning a fresh iterator of batches on every call.

    Raises
    ------
    TypeError
        For a one-shot iterator (a generator, a file, ``iter(...)``): the data is read
        three times; and for a single table, array or ``(X, y)`` pair in place of batches.
    """

    def __init__(self, batches: Any):
        if _is_table(batches) or isinstance(batches, np.ndarray) or is_sparse(batches) or (
                isinstance(batches, tuple) and 2 <= len(batches) <= 3
                and (_is_table(batches[0]) or len(getattr(batches[0], "shape", ())) == 2)):
            raise TypeError(f"batches is one {_kind_of(batches)}; expected several batches: a "
                            "list of them, a function returning an iterator of them, or "
                            "Dataset(X, y) for data in memory")
        if callable(batches) and not hasattr(batches, "__iter__"):
            self._open: Callable[[], Any] = batches
            return
        try:
            first = iter(batches)
        except TypeError:
            raise TypeError(f"batches={_kind_of(batches)} is invalid; expected an iterable of "
                            "batches or a function returning an iterator of them") from None
        if first is batches:
            raise TypeError(
                f"batches is a one-shot iterator ({type(batches).__name__}); the data is read "
                "three times (to check it, to sample the rows bin borders are computed on, "
                "and to bin it): pass a list of batches, or a function that returns a fresh "
                "iterator of the same batches on every call (e.g. lambda: my_batches(path)), "
                "or boostlib.io.batches.parquet_batches / csv_batches for files")
        self._open = lambda: batches

    def __iter__(self) -> Iterator[Any]:
        opened = self._open()
        try:
            return iter(opened)
        except TypeError:
            raise TypeError(f"batches() returned {_kind_of(opened)}; expected an iterator "
                            "of batches") from None


def _kind_of(x: Any) -> str:
    if isinstance(x, tuple):
        return f"tuple of {len(x)} items"
    return f"{type(x).__module__.split('.')[0]}.{type(x).__name__}" \
        if not isinstance(x, (list, dict, str, bytes, int, float)) else type(x).__name__


def _columns_of(table: Any) -> List[Any]:
    return list(table.columns) if hasattr(table, "iloc") else list(table.column_names)


def _take_column(table: Any, name: Any, what: str, i: int) -> Tuple[Any, np.ndarray]:
    """``(table without the column, the column as a numpy array)``."""
    columns = _columns_of(table)
    if name not in columns:
        raise ValueError(f"batch {i}: {what}={shown(name)} names no column; expected one of "
                         f"the batch's columns {listing(columns)}")
    if hasattr(table, "iloc"):
        return table.drop(columns=[name]), table[name].to_numpy()
    column = table.column(name)
    values = column.to_numpy(zero_copy_only=False) if column.num_chunks != 1 else \
        column.chunk(0).to_numpy(zero_copy_only=False)
    return table.drop_columns([name]), values


def split_batch(batch: Any, i: int, label: Any, weight: Any
                ) -> Tuple[Any, Any, Optional[Any]]:
    """``(X, y, sample_weight)`` of batch ``i``: an ``(X, y)`` or ``(X, y, sample_weight)``
    tuple, or a table whose ``label`` column is the target (and ``weight`` column the row
    weights; the other columns are the features). Arrow tables come back as
    ``pyarrow.Table``."""
    if isinstance(batch, tuple):
        if label is not None or weight is not None:
            given, name = ("label", label) if label is not None else ("weight", weight)
            raise ValueError(f"batch {i} is an (X, y) tuple, and {given}={shown(name)} names "
                             "a column of table batches; expected tuples without label= and "
                             "weight=, or tables with them")
        if len(batch) not in (2, 3):
            raise ValueError(f"batch {i} is a tuple of {len(batch)} items; expected (X, y) or "
                             "(X, y, sample_weight)")
        X, y = batch[0], batch[1]
        if y is None:
            raise ValueError(f"batch {i}: y is None; every batch needs its target")
        return X, y, batch[2] if len(batch) == 3 else None
    if not _is_table(batch):
        raise TypeError(f"batch {i} is a {_kind_of(batch)}; expected an (X, y) or (X, y, "
                        "sample_weight) tuple, or a table (pandas, Arrow, polars) whose target "
                        "column label= names")
    if label is None:
        raise ValueError(f"batch {i} is a table ({_kind_of(batch)}) and label is None; "
                         "expected label=COLUMN, the name of its target column (or (X, y) "
                         "tuples)")
    if weight is not None and weight == label:
        raise ValueError(f"weight={shown(weight)} is the label column; expected the column "
                         "of row weights")
    table = batch if hasattr(batch, "iloc") else arrow_table(batch)
    table, y = _take_column(table, label, "label", i)
    w = None
    if weight is not None:
        table, w = _take_column(table, weight, "weight", i)
    return table, y, w


def _column_kinds(X: Any, n_columns: int) -> Tuple[str, ...]:
    """How each column of a batch's features is read: :data:`NUMBER`, :data:`TEXT` or
    :data:`DICTIONARY`."""
    if hasattr(X, "iloc"):
        return tuple(label_kind(dt) or NUMBER for dt in X.dtypes)
    if is_arrow_table(X):
        import pyarrow as pa
        return tuple({"dictionary": DICTIONARY, "text": TEXT}.get(arrow_kind(pa, f), NUMBER)
                     for f in arrow_table(X).schema)
    return (NUMBER,) * n_columns


@dataclass
class Schema:
    """What the first batch fixes for all: the feature columns, their names and kinds, the
    categorical features and (after the scan) their levels."""

    n_features: int
    #: the feature names (``feature_names=``, else the first batch's column names)
    names: Optional[np.ndarray]
    #: the first batch's own column names, which every batch must have
    own_names: Optional[np.ndarray]
    kinds: Tuple[str, ...]
    categorical: np.ndarray
    #: per feature: None, or the levels of a label column (every batch's)
    levels: List[Optional[List[Any]]] = field(default_factory=list)
    #: per label feature, each level's code: the inverse of ``levels``
    index: Dict[int, Dict[Any, int]] = field(default_factory=dict)

    def set_levels(self, levels: List[Optional[List[Any]]]) -> None:
        self.levels = levels
        self.index = {j: {v: k for k, v in enumerate(lv)} for j, lv in enumerate(levels)
                      if lv is not None}


@dataclass
class Scan:
    """What the first pass keeps: the rows of each batch, the targets and the weights."""

    batch_rows: np.ndarray
    y: np.ndarray
    sample_weight: Optional[np.ndarray]

    @property
    def n_rows(self) -> int:
        return int(self.y.shape[0])


class Reader:
    """Reads batches against the schema of the first one.

    Parameters
    ----------
    label, weight : column names, optional
        The target and weight columns of table batches.
    categorical_features : "auto", names, indices or mask
        As for :class:`boostlib.Dataset`, resolved on the first batch.
    feature_names : sequence of str, optional
    categorical : ndarray of bool, optional
        The categorical features, fixed (a validation set's, from its reference).
    """

    def __init__(self, label: Any = None, weight: Any = None,
                 categorical_features: Any = "auto",
                 feature_names: Optional[Sequence[str]] = None,
                 categorical: Optional[np.ndarray] = None):
        self.label, self.weight = label, weight
        self.spec = categorical_features
        self.given_names = feature_names
        self.fixed = categorical
        self.schema: Optional[Schema] = None

    @property
    def n_features(self) -> int:
        assert self.schema is not None
        return self.schema.n_features

    def read(self, batch: Any, i: int) -> Tuple[Any, List[Optional[List[Any]]], np.ndarray,
                                                 Optional[np.ndarray]]:
        """``(X, levels, y, w)`` of batch ``i``: the features as a float matrix (or
        :class:`~boostlib.engine.frames.Columns`) with the label columns coded by this
        batch's own ``levels``, the float64 targets and the checked weights (or None)."""
        X, y, w = split_batch(batch, i, self.label, self.weight)
        try:
            frame = as_frame(X, f"batch {i} X")
            shape = getattr(frame, "shape", None) or np.shape(frame)
            if len(shape) != 2:
                raise ValueError(f"X is {len(shape)}-D; expected a 2-D matrix of features")
            n_rows, n_cols = int(shape[0]), int(shape[1])
            names = frame_names(frame)
            kinds = _column_kinds(X, n_cols)
            if self.schema is None:
                self.schema = self._first(frame, names, kinds, n_cols)
            else:
                self._check_like_first(frame, names, kinds, n_cols, i)
            schema = self.schema
            values, levels = encode(frame, schema.categorical, partial(check_X, min_rows=0))
            try:
                y = check_y(y, n_rows)
            except (ValueError, TypeError) as exc:
                if self.label is None:
                    raise
                raise type(exc)(f"label column {shown(self.label)}: {exc}") from None
            if w is not None:
                w = self._weights(w, n_rows)
        except (ValueError, TypeError) as exc:
            message = str(exc)
            raise type(exc)(message if message.startswith(f"batch {i}") else
                            f"batch {i}: {message}") from None
        return values, levels, y, w

    def _first(self, frame: Any, names: Optional[np.ndarray], kinds: Tuple[str, ...],
               n_cols: int) -> Schema:
        given = None
        if self.given_names is not None:
            given = np.asarray([str(n) for n in self.given_names], dtype=object)
            if given.shape != (n_cols,):
                raise ValueError(f"feature_names has {given.size} entries; the batches have "
                                 f"{n_cols} feature columns")
        mask = (np.asarray(self.fixed, dtype=bool) if self.fixed is not None else
                categorical_mask(frame, self.spec, n_cols, names))
        if mask.shape != (n_cols,):
            raise ValueError(f"the batches have {n_cols} feature columns, the reference "
                             f"{mask.size}")
        return Schema(n_cols, given if self.given_names is not None else names, names, kinds,
                      mask)

    def _check_like_first(self, frame: Any, names: Optional[np.ndarray],
                          kinds: Tuple[str, ...], n_cols: int, i: int) -> None:
        schema = self.schema
        assert schema is not None
        if n_cols != schema.n_features:
            raise ValueError(f"batch {i} has {n_cols} feature columns; batch 0 has "
                             f"{schema.n_features}: every batch needs the same columns")
        if (names is None) != (schema.own_names is None):
            raise ValueError(f"batch {i} has {'no ' if names is None else ''}column names, "
                             f"batch 0 {'none' if schema.own_names is None else 'has'}: "
                             "every batch needs the same columns")
        if names is not None:
            differences = column_differences(schema.own_names, names, "in batch 0")
            if differences:
                raise ValueError(f"batch {i} {differences}: every batch needs the same "
                                 "columns, in the same order")
        for j, (kind, first) in enumerate(zip(kinds, schema.kinds)):
            if kind != first:
                label = self.label_of(j)
                raise ValueError(
                    f"batch {i}: column {shown(label)} holds {_KIND_WORDS[kind]}, batch 0's "
                    f"{_KIND_WORDS[first]}: a column must have the same type in every batch")
        categorical_mask(frame, list(schema.categorical), n_cols, schema.names)

    def _weights(self, w: Any, n_rows: int) -> np.ndarray:
        w = as_float64(np.asarray(w), "sample_weight", "numbers")
        if w.shape != (n_rows,):
            raise ValueError(f"sample_weight has shape {w.shape}; expected ({n_rows},): one "
                             "weight per row")
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            raise ValueError(f"sample_weight[{int(np.argmax(bad))}] is "
                             f"{float(w[np.argmax(bad)])!r}; expected finite weights >= 0")
        return w

    def to_codes(self, values: Any, levels: List[Optional[List[Any]]], i: int) -> Any:
        """A batch's features (from :meth:`read`) with its label columns coded by the levels
        of all batches (:attr:`Schema.levels`)."""
        schema = self.schema
        assert schema is not None
        for j, batch_levels in enumerate(levels):
            if batch_levels is None or batch_levels == schema.levels[j]:
                continue
            index = schema.index[j]
            missing = [v for v in batch_levels if v not in index]
            if missing:
                raise ValueError(f"batch {i}: column {shown(self.label_of(j))} holds "
                                 f"{shown(missing[0])}, which it did not hold on the first "
                                 "read: the batches changed between reads")
            table = np.array([index[v] for v in batch_levels] + [np.nan])
            column = values[:, j]
            values[:, j] = table[np.where(np.isnan(column), len(batch_levels),
                                          column).astype(np.intp)]
        return values

    def label_of(self, j: int) -> Any:
        """How messages name feature ``j``: its name, else its index."""
        schema = self.schema
        assert schema is not None
        return schema.names[j] if schema.names is not None else int(j)


_KIND_WORDS = {NUMBER: "numbers", TEXT: "text", DICTIONARY: "categories"}


def _merge_levels(merged: Dict[int, Any], levels: List[Optional[List[Any]]],
                  kinds: Tuple[str, ...]) -> None:
    """Add a batch's levels to those gathered so far: a set for text columns (sorted at the
    end), the categories in the order first seen for the others."""
    for j, batch_levels in enumerate(levels):
        if batch_levels is None:
            continue
        if kinds[j] == TEXT:
            merged.setdefault(j, set()).update(batch_levels)
        else:
            merged.setdefault(j, {}).update(dict.fromkeys(batch_levels))


def scan(source: BatchSource, reader: Reader) -> Scan:
    """The first pass: every batch read and checked; the targets and weights kept, the rows
    of each batch counted, the levels of the label columns gathered into the reader's
    schema.

    Raises
    ------
    ValueError
        For no batch or no row, a batch unlike the first (naming the batch and the column),
        and any value ``Dataset(X, y)`` refuses (naming the batch).
    """
    rows: List[int] = []
    ys: List[np.ndarray] = []
    ws: List[Optional[np.ndarray]] = []
    merged: Dict[int, Any] = {}
    for i, batch in enumerate(source):
        values, levels, y, w = reader.read(batch, i)
        assert reader.schema is not None
        _merge_levels(merged, levels, reader.schema.kinds)
        rows.append(int(y.shape[0]))
        ys.append(y)
        ws.append(w)
    if not rows or not sum(rows):
        raise ValueError(f"batches gave {'no batch' if not rows else 'no row'}; expected at "
                         "least one batch with rows")
    schema = reader.schema
    assert schema is not None
    levels: List[Optional[List[Any]]] = [None] * schema.n_features
    for j, gathered in merged.items():
        levels[j] = sorted_levels(gathered) if schema.kinds[j] == TEXT else list(gathered)
        if len(levels[j]) > MAX_CODE + 1:
            raise ValueError(f"categorical feature {shown(reader.label_of(j))} has "
                             f"{len(levels[j])} levels: more levels than supported (at most "
                             f"{MAX_CODE + 1})")
    for j in np.flatnonzero(schema.categorical):    # a label column with no level at all
        if schema.kinds[j] != NUMBER and levels[j] is None:
            levels[j] = []
    schema.set_levels(levels)
    weighted = any(w is not None for w in ws)
    if weighted and any(w is None for w in ws):
        first = next(i for i, w in enumerate(ws) if (w is None) != (ws[0] is None))
        raise ValueError(f"batch {first} has {'no ' if ws[first] is None else ''}weights, "
                         f"batch 0 {'none' if ws[0] is None else 'has'}: every batch needs "
                         "them, or none")
    y = np.concatenate(ys)
    del ys
    w = check_sample_weight(np.concatenate(ws), y.shape[0]) if weighted else None
    return Scan(np.asarray(rows, dtype=np.int64), y, w)


def _read_again(source: BatchSource, reader: Reader, found: Scan, what: str
                ) -> Iterator[Tuple[int, int, Any]]:
    """``(first row, rows, features coded by every batch's levels)`` of each batch read
    again, after checking that it is the batch the scan read."""
    n_batches = found.batch_rows.size
    start = 0
    i = -1
    for i, batch in enumerate(source):
        values, levels, y, _ = reader.read(batch, i)
        n = int(y.shape[0])
        expected = int(found.batch_rows[i]) if i < n_batches else None
        if n != expected or not np.array_equal(y, found.y[start:start + n]):
            said = (f"{n} rows, the first read {expected}" if n != expected else
                    "other targets than on the first read")
            if expected is None:
                said = f"a batch more than the {n_batches} of the first read"
            raise ValueError(f"batches changed between reads: reading them to {what}, batch "
                             f"{i} has {said}; expected the same batches on every read (a "
                             "list, or a function returning a fresh iterator over the same "
                             "data)")
        yield start, n, reader.to_codes(values, levels, i)
        start += n
    if i + 1 != n_batches:
        raise ValueError(f"batches changed between reads: reading them to {what} gave "
                         f"{i + 1} batches, the first read {n_batches}; expected the same "
                         "batches on every read")


def _local(rows: Optional[np.ndarray], start: int, n: int) -> Optional[np.ndarray]:
    """The rows of ``rows`` (sorted source rows; None: all) within ``[start, start + n)``,
    as positions in that batch."""
    if rows is None:
        return None
    lo, hi = np.searchsorted(rows, [start, start + n])
    return (rows[lo:hi] - start).astype(np.intp)


def _take(values: Any, positions: Optional[np.ndarray]) -> Any:
    if positions is None:
        return values
    return values.rows(positions) if isinstance(values, Columns) else values[positions]


def _dense(values: Any) -> np.ndarray:
    return values.to_array() if isinstance(values, Columns) else np.asarray(values)


def border_sample(source: BatchSource, reader: Reader, found: Scan,
                  rows: Optional[np.ndarray], weight: Optional[np.ndarray],
                  rng: np.random.Generator, subsample: int
                  ) -> Tuple[np.ndarray, Dict[int, Tuple[np.ndarray, np.ndarray]]]:
    """The second pass: the rows bin borders are computed on, and the category counts.

    Parameters
    ----------
    source, reader, found
        The batches, their reader and what the scan found.
    rows : ndarray of intp, optional
        The source rows of the Dataset (sorted; None: all of them).
    weight : ndarray, optional
        The Dataset's row weights (one per row of ``rows``): only rows of positive weight
        count.
    rng : numpy Generator
        The ``"binning"`` stream: draws ``subsample`` of the rows of positive weight when
        there are more, as :meth:`~boostlib.engine.binning.BinMapper.fit` does in memory.
    subsample : int

    Returns
    -------
    sample : ndarray of shape (n_sampled, n_features)
        The sampled rows, in row order (float32 when every batch is, else float64).
    counts : dict
        ``{feature: (codes, counts)}`` over every row of positive weight, per categorical
        feature.
    """
    schema = reader.schema
    assert schema is not None
    n_rows = found.n_rows if rows is None else rows.size
    eligible = np.arange(n_rows) if weight is None else np.flatnonzero(weight > 0)
    chosen = eligible if eligible.size <= subsample else \
        eligible[_draw(eligible.size, subsample, rng)]
    sampled = chosen if rows is None else rows[chosen]          # as source rows
    positive = None if weight is None else (eligible if rows is None else rows[eligible])
    cat = np.flatnonzero(schema.categorical)
    tallies: Dict[int, np.ndarray] = {int(f): np.zeros(0, dtype=np.int64) for f in cat}
    sample: Optional[np.ndarray] = None
    filled = 0
    for start, n, values in _read_again(source, reader, found, "sample bin borders"):
        take = _local(sampled, start, n)
        assert take is not None
        if take.size:
            part = _dense(_take(values, take))
            if sample is None or (part.dtype == np.float64 and sample.dtype != np.float64):
                wider = np.empty((sampled.size, schema.n_features),
                                 dtype=np.float64 if sample is not None else part.dtype)
                if sample is not None:
                    wider[:filled] = sample[:filled]
                sample = wider
            sample[filled:filled + take.size] = part
            filled += take.size
        if cat.size:
            counted = _take(values, _local(positive if positive is not None else rows,
                                           start, n))
            for f in cat:
                column = counted.column(int(f)) if isinstance(counted, Columns) else \
                    counted[:, f]
                codes = column[~np.isnan(column)].astype(np.int64)
                if codes.size:
                    tally = np.bincount(codes)
                    old = tallies[int(f)]
                    if old.size < tally.size:
                        old = np.concatenate([old, np.zeros(tally.size - old.size, np.int64)])
                    old[:tally.size] += tally
                    tallies[int(f)] = old
    assert sample is not None and filled == sampled.size
    counts = {f: (np.flatnonzero(t).astype(np.int64), t[t > 0]) for f, t in tallies.items()}
    return sample, counts


def fit_mapper(source: BatchSource, reader: Reader, found: Scan, rows: Optional[np.ndarray],
               weight: Optional[np.ndarray], max_bins: int, min_samples_bin: int,
               rng: np.random.Generator, n_threads: int) -> BinMapper:
    """Bin borders of the batches: those ``BinMapper(max_bins, min_samples_bin=...).fit``
    computes from the same rows in memory with the same ``rng``."""
    mapper = BinMapper(max_bins, min_samples_bin=min_samples_bin)
    sample, counts = border_sample(source, reader, found, rows, weight, rng, mapper.subsample)
    schema = reader.schema
    assert schema is not None
    return mapper.fit(sample, None, n_threads, schema.categorical, schema.levels,
                      category_counts=counts)


def allocate(shape: Tuple[int, int], spill: Optional[str]) -> np.ndarray:
    """An uninitialised uint8 matrix of ``shape``: in memory, or with ``spill`` (a folder)
    a ``numpy.memmap`` of an unnamed temporary file there, which disappears when the matrix
    is freed (the operating system may then page the bins out to that file)."""
    if spill is None or not shape[0] * shape[1]:
        return np.empty(shape, dtype=np.uint8)
    with tempfile.TemporaryFile(dir=spill) as fh:
        return np.memmap(fh, dtype=np.uint8, mode="w+", shape=shape)


def bin_batches(source: BatchSource, reader: Reader, found: Scan, rows: Optional[np.ndarray],
                mapper: BinMapper, n_threads: int, spill: Optional[str] = None) -> np.ndarray:
    """The third pass: the rows ``rows`` (None: all) binned with ``mapper``, uint8 of
    shape (n_features, n_rows), each batch binned into its columns of the matrix.

    Label columns are coded by ``mapper``'s levels (a validation set's values unseen in
    training are missing, as in memory)."""
    schema = reader.schema
    assert schema is not None
    n_rows = found.n_rows if rows is None else rows.size
    out = allocate((schema.n_features, n_rows), spill)
    recode = {int(j): {v: k for k, v in enumerate(mapper.levels_[j])}
              for j in np.flatnonzero(schema.categorical)
              if schema.levels[j] is not None and mapper.levels_[j] is not None
              and list(mapper.levels_[j]) != schema.levels[j]}
    for j in np.flatnonzero(schema.categorical):
        if schema.levels[j] is not None and mapper.levels_[j] is None:
            raise ValueError(f"categorical feature {shown(reader.label_of(int(j)))}: the model "
                             "was trained on codes, not labels; pass the same codes")
    tables = {j: np.array([index.get(v, np.nan) for v in schema.levels[j]] + [np.nan])
              for j, index in recode.items()}
    filled = 0
    for start, n, values in _read_again(source, reader, found, "bin them"):
        part = _take(values, _local(rows, start, n))
        m = part.shape[0]
        if not m:
            continue
        # one matrix: one parallel pass of the kernel per batch, not one per column
        part = _dense(part)
        if tables:
            for j, table in tables.items():
                column = part[:, j]
                part[:, j] = table[np.where(np.isnan(column), table.size - 1,
                                            column).astype(np.intp)]
        out[:, filled:filled + m] = mapper.transform(part, n_threads, "feature")
        filled += m
    assert filled == n_rows
    return out
