"""Dask collections as partitions held in the workers' memory, and where each one lives."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .._messages import listing
from ..engine.categorical import is_missing, label_column, sorted_levels
from ..engine.validation import check_init_score
from .waits import TIMEOUT, finished, results, worker_addresses  # noqa: F401 (re-exported)


def is_dask(obj: Any) -> bool:
    """Whether ``obj`` is a Dask collection (array, DataFrame, Series)."""
    return hasattr(obj, "__dask_graph__") and hasattr(obj, "to_delayed")


def is_frame(obj: Any) -> bool:
    """Whether ``obj`` is a Dask DataFrame."""
    return is_dask(obj) and hasattr(obj, "columns")


def as_collection(X: Any, n_parts: int, client: Any = None, timeout: float = TIMEOUT) -> Any:
    """``X`` as a Dask collection: itself, or an in-memory array or frame cut into
    ``n_parts`` partitions of rows; a Dask array gets one chunk across its columns, and a
    frame's label columns get the same categories in every partition
    (:func:`with_levels`, computed on ``client`` within ``timeout`` seconds when given)."""
    import dask.array as da
    import dask.dataframe as dd
    if not is_dask(X):
        if hasattr(X, "columns"):
            X = dd.from_pandas(X, npartitions=max(1, n_parts))
        else:
            arr = np.asarray(X)
            X = da.from_array(arr, chunks=(max(1, -(-arr.shape[0] // max(1, n_parts))),)
                              + arr.shape[1:])
    if is_frame(X):
        labels = [c for c in X.columns if _needs_levels(X[c])]
        return with_levels(X, labels, client, timeout) if labels else X
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got a Dask array of shape {X.shape}")
    if any(np.isnan(n) for n in X.chunks[0]):     # e.g. a frame's to_dask_array()
        X = X.compute_chunk_sizes()
    return X.rechunk({1: -1})


def _needs_levels(column: Any) -> bool:
    """A frame column whose codes must be agreed on: labels (text of any storage, objects,
    Arrow dictionaries: what a local fit reads as labels), or categorical of unknown
    categories."""
    if str(column.dtype) == "category":
        return not column.cat.known
    return label_column(column.dtype)


def with_levels(X: Any, labels: List[Any], client: Any = None,
                timeout: float = TIMEOUT) -> Any:
    """The Dask DataFrame ``X`` with its columns ``labels`` as pandas categoricals of the
    same categories in every partition: the levels a local fit gives the partitions
    concatenated (:func:`merged_levels`), so every worker codes them alike and the model's
    levels are the local model's. One pass over the partitions gathers their labels; on
    ``client``, every wait ends once a worker is silent for ``timeout`` seconds
    (:mod:`~boostlib.dask.waits`).

    Raises
    ------
    ValueError
        For a partition whose columns are not those ``X`` declares (the labels are read
        by name), naming it (:func:`check_columns`).
    """
    import dask
    columns = list(X.columns)
    task = dask.delayed(partition_labels, pure=True)
    tasks = [task(part, columns, labels, i) for i, part in enumerate(partitions(X))]
    if client is None:
        found = list(dask.compute(*tasks))
    else:
        found = results(client, client.compute(tasks), timeout,
                        "gathering the labels of X's text and categorical columns")
    levels = {c: merged_levels([f[c] for f in found]) for c in labels}
    return X.map_partitions(as_categories, levels, meta=as_categories(X._meta, levels),
                            enforce_metadata=False, align_dataframes=False)


def partition_labels(part: Any, columns: List[Any], labels: List[Any], index: int
                     ) -> Dict[Any, Tuple[Optional[List[Any]], List[Any]]]:
    """``{column: (categories, labels)}`` of the label columns ``labels`` of partition
    ``index`` (once it has the declared ``columns``): a categorical column's categories,
    in order (None for any other column), and the distinct labels present."""
    import pandas as pd
    check_columns(part, columns, {"number": index})
    out = {}
    for c in labels:
        column = part[c]
        categories = None
        if str(column.dtype) == "category":
            categories = list(column.cat.categories)
            codes = np.unique(np.asarray(column.cat.codes))
            present = [categories[k] for k in codes if k >= 0]
        else:
            present = [v for v in pd.unique(np.asarray(column, dtype=object))
                       if not is_missing(v)]
        out[c] = (categories, present)
    return out


def merged_levels(found: List[Tuple[Optional[List[Any]], List[Any]]]) -> List[Any]:
    """The levels of one label column over partitions whose categories and labels are
    ``found`` (:func:`partition_labels`), as a local fit reads the partitions concatenated:
    categorical partitions of one list of categories concatenate to that categorical (its
    categories, in their order); anything else concatenates to labels, whose levels are
    their sorted distinct values (:func:`~boostlib.engine.categorical.sorted_levels`)."""
    first = found[0][0] if found else None
    if first is not None and all(categories == first for categories, _ in found):
        return list(first)
    return sorted_levels({v for _, present in found for v in present})


def as_categories(part: Any, levels: Dict[Any, List[Any]]) -> Any:
    """The frame ``part`` with each column of ``levels`` as a pandas categorical of those
    categories (labels not among them, and missing values, become missing)."""
    import pandas as pd
    out = part.copy(deep=False)
    for c, categories in levels.items():
        column = part[c]
        dtype = pd.CategoricalDtype(categories)
        if str(column.dtype) == "category":
            out[c] = column.cat.set_categories(categories)
        else:       # through objects: Arrow dictionaries with nulls do not cast directly
            out[c] = pd.Series(pd.Categorical(np.asarray(column, dtype=object), dtype=dtype),
                               index=part.index, name=c)
    return out


def partitions(X: Any) -> List[Any]:
    """The row partitions of a Dask collection, as delayed objects, in row order."""
    if is_frame(X) or X.ndim == 1:
        return list(np.ravel(X.to_delayed()))
    return list(X.to_delayed()[:, 0])


@dataclass
class Parts:
    """A collection's partitions computed and held on the workers.

    Attributes
    ----------
    futures : list of Dask futures, in row order
    lengths : int64 (n_parts,) rows per partition
    owners : list of str, the worker address holding each partition
    """

    futures: List[Any]
    lengths: np.ndarray
    owners: List[str]

    @property
    def n_rows(self) -> int:
        return int(self.lengths.sum())

    @property
    def starts(self) -> np.ndarray:
        """The first global row of every partition."""
        return np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)

    def by_worker(self) -> Dict[str, List[int]]:
        """The non-empty partitions of every worker holding some, in row order; workers in
        the order of their first partition."""
        out: Dict[str, List[int]] = {}
        for i, owner in enumerate(self.owners):
            if self.lengths[i] > 0:
                out.setdefault(owner, []).append(i)
        return out


def persist(client: Any, X: Any, timeout: float = TIMEOUT) -> Parts:
    """Compute the partitions of ``X`` on the workers and keep them there, once each is
    checked to hold what ``X`` declares (:func:`check_partition`); each wait at most
    ``timeout`` seconds (:mod:`~boostlib.dask.waits`)."""
    futures = client.compute(partitions(X))
    finished(client, futures, timeout, "computing the partitions of X")
    columns, dtypes = (list(X.columns), list(X.dtypes)) if is_frame(X) else (None, [X.dtype])
    checks = client.map(check_partition, futures, range(len(futures)), columns=columns,
                        dtypes=dtypes, pure=False)
    lengths = np.array(results(client, checks, timeout, "checking the partitions of X"),
                       dtype=np.int64)
    where = client.who_has(futures)
    owners = [sorted(where[f.key])[0] for f in futures]
    return Parts(futures, lengths, owners)


#: How to give the offsets the partitions of X (the end of the errors that they do not).
OFFSET_LAYOUT = ("give init_score the partitions of X, with as many rows in each: take both "
                 "from the partitions of the DataFrame X comes from (X=frame[features], "
                 "init_score=frame['offset']), or rechunk an array like X "
                 "(init_score.rechunk({0: X.chunks[0]})); or pass init_score in memory")


def offset_partitions_error(n_offsets: int, n_parts: int) -> ValueError:
    """The error for offsets in ``n_offsets`` partitions where X has ``n_parts``."""
    return ValueError(f"init_score has {n_offsets} partitions and X has {n_parts}: "
                      f"{OFFSET_LAYOUT}")


def offset_rows_error(index: int, n_rows: int, expected: int) -> ValueError:
    """The error for partition ``index`` of the offsets holding ``n_rows`` rows, where X's
    holds ``expected``."""
    return ValueError(f"init_score: partition {index} has {n_rows} rows, where partition "
                      f"{index} of X has {expected}: {OFFSET_LAYOUT}")


def offset_pieces(init_score: Any) -> List[Any]:
    """The row partitions of the Dask collection ``init_score`` (an array: whole rows per
    block), as delayed objects."""
    if not is_frame(init_score) and getattr(init_score, "ndim", 1) not in (1, 2):
        raise ValueError(f"init_score has shape {init_score.shape}; expected (n_rows,) or "
                         "(n_rows, n_outputs): one offset per row (per output)")
    if not is_frame(init_score) and init_score.ndim == 2:
        init_score = init_score.rechunk({1: -1})
    return partitions(init_score)


def known_rows(init_score: Any) -> Optional[Tuple[int, ...]]:
    """The rows of every partition of the Dask collection ``init_score`` when Dask knows
    them without computing it (an array of known chunk sizes), else None."""
    chunks = getattr(init_score, "chunks", None)
    if is_frame(init_score) or chunks is None or any(np.isnan(n) for n in chunks[0]):
        return None
    return tuple(int(n) for n in chunks[0])


def persist_offsets(client: Any, init_score: Any, parts: Parts, timeout: float = TIMEOUT
                    ) -> Tuple[List[Any], int]:
    """The partitions of the Dask collection ``init_score`` (offsets of X's rows) computed
    on the workers, once each is checked to line up with X's persisted partitions ``parts``
    and to hold finite numbers (:func:`check_offsets`); and their number of columns (0:
    one offset per row). Each wait at most ``timeout`` seconds.

    Raises
    ------
    ValueError
        Naming ``init_score``: other numbers of partitions, or of rows in a partition, than
        X's; text, values that are not finite (by their row in the whole), or partitions of
        different numbers of columns.
    """
    pieces = offset_pieces(init_score)
    if len(pieces) != len(parts.futures):
        raise offset_partitions_error(len(pieces), len(parts.futures))
    rows = known_rows(init_score)
    if rows is not None:
        for i, (n, expected) in enumerate(zip(rows, parts.lengths)):
            if n != expected:
                raise offset_rows_error(i, n, int(expected))
    futures = client.compute(pieces)
    finished(client, futures, timeout, "computing the partitions of init_score")
    checks = client.map(check_offsets, futures, range(len(futures)),
                        parts.starts.tolist(), parts.lengths.tolist(), pure=False)
    columns = results(client, checks, timeout, "checking the partitions of init_score")
    for i, n in enumerate(columns):
        if n != columns[0]:
            raise ValueError(f"init_score: partition {i} has {max(n, 1)} column(s), "
                             f"partition 0 {max(columns[0], 1)}; expected one shape for "
                             "every partition, (n_rows,) or (n_rows, n_outputs)")
    return futures, int(columns[0]) if columns else 0


def check_offsets(part: Any, index: int, first_row: int, n_rows: int) -> int:
    """The number of columns (0: one offset per row) of partition ``index`` of the offsets,
    once it holds finite numbers for the ``n_rows`` rows of X's partition ``index``, whose
    first row is row ``first_row`` of X.

    Raises
    ------
    ValueError
        Naming ``init_score`` and the partition, or the row in the whole.
    """
    values = np.asarray(part)
    if values.ndim == 0 or values.shape[0] != n_rows:
        raise offset_rows_error(index, values.shape[0] if values.ndim else 1, n_rows)
    checked = check_init_score(values, n_rows, "init_score", first_row=first_row)
    return 0 if checked.ndim == 1 else int(checked.shape[1])


def check_partition(part: Any, index: int, columns: Optional[List[Any]],
                    dtypes: List[Any]) -> int:
    """The rows of partition ``index`` of a collection, once it holds the ``columns`` (a
    DataFrame's; None for an array) and ``dtypes`` the collection declares.

    Numbers of another type stand for numbers (every feature becomes float64, as when the
    partitions are concatenated): ints, unsigned ints and floats in a DataFrame's numeric
    column, and booleans too in an array. Anything else must be the declared type, and a
    categorical column must have the declared categories, in the same order (every worker
    then codes them alike).

    Raises
    ------
    ValueError
        Naming the partition, the column and both types (or both lists of categories).
    """
    if columns is None:
        why = _mismatch(part.dtype, dtypes[0], "biuf")
        if why:
            raise ValueError(f"X: partition {index} {why}, where the Dask array declares "
                             f"{dtypes[0]}; give every partition the declared dtype")
        return len(part)
    check_columns(part, columns, {"number": index})
    for column, found, declared in zip(columns, part.dtypes, dtypes):
        why = _mismatch(found, declared, "iuf")
        if why:
            fix = (f"give every partition the declared categories, or make them unknown "
                   f"(X[{column!r}].cat.as_unknown()) to have them coded alike in one pass"
                   if str(declared) == "category" else
                   f"give every partition the declared dtype (X.astype({{{column!r}: "
                   f"'{declared}'}}) on the pieces X is built from)")
            raise ValueError(f"X: column {column!r} of partition {index} {why}, where the "
                             f"DataFrame declares {_described(declared)}; {fix}")
    return len(part)


def check_columns(part: Any, columns: List[Any],
                  partition_info: Optional[Dict[str, Any]] = None) -> Any:
    """``part``, a partition of a DataFrame that declares ``columns``, once it has exactly
    those columns, in that order (``partition_info``: Dask's, which numbers it).

    Raises
    ------
    ValueError
        Naming the partition, its columns, the declared ones, and those missing, not
        declared or out of order.
    """
    found = list(part.columns)
    if found == columns:
        return part
    index = "" if partition_info is None else f" {partition_info['number']}"
    missing = [c for c in columns if c not in found]
    extra = [c for c in found if c not in columns]
    what = ([f"it lacks {listing(missing)}"] if missing else []) + \
        ([f"{listing(extra)} {'is' if len(extra) == 1 else 'are'} not declared"]
         if extra else [])
    raise ValueError(f"X: partition{index} has the columns [{listing(found)}], where the "
                     f"DataFrame declares [{listing(columns)}]: "
                     f"{' and '.join(what) or 'they are in another order'}; give every "
                     "partition the declared columns, in the declared order (rename or "
                     "select the columns of the pieces X is built from)")


def _mismatch(found: Any, declared: Any, numeric: str) -> str:
    """What a partition's ``found`` dtype holds that the ``declared`` one does not ('' for
    nothing; dtypes of the kinds ``numeric`` stand for each other)."""
    kinds = (getattr(found, "kind", "O"), getattr(declared, "kind", "O"))
    if kinds[0] in numeric and kinds[1] in numeric:
        return ""
    if str(found) == str(declared) == "category":
        same = list(found.categories) == list(declared.categories)
        return "" if same else f"has {_described(found)}"
    return "" if found == declared else f"holds {found}"


def _described(dtype: Any) -> str:
    """A dtype in words, a categorical one by its first categories."""
    if str(dtype) != "category":
        return str(dtype)
    labels = list(dtype.categories)
    more = f" and {len(labels) - 10} more" if len(labels) > 10 else ""
    return f"the categories {labels[:10]}{more}"


def take(part: Any, rows: np.ndarray) -> Any:
    """Rows ``rows`` of a partition (array or frame)."""
    if hasattr(part, "iloc"):
        return part.iloc[rows]
    return part[rows]


def concat(parts: List[Any]) -> Any:
    """Partitions (arrays or frames) stacked into one, in order."""
    if len(parts) == 1:
        return parts[0]
    if hasattr(parts[0], "iloc"):
        import pandas as pd
        return pd.concat(parts, axis=0)
    return np.concatenate(parts, axis=0)


def gather_rows(client: Any, parts: Parts, rows: np.ndarray, timeout: float = TIMEOUT) -> Any:
    """The global rows ``rows`` (sorted) of the persisted collection, fetched to the caller
    with one small task per partition that holds some, within ``timeout`` seconds."""
    which = np.searchsorted(parts.starts, rows, side="right") - 1
    pieces = []
    for i in np.unique(which):
        local = rows[which == i] - parts.starts[i]
        pieces.append(client.submit(take, parts.futures[i], local, pure=False))
    return concat(results(client, pieces, timeout, "fetching the rows the bin borders "
                          "are computed on"))


def _identity(part: Any) -> Any:
    return part


def balance(client: Any, parts: Parts, workers: List[str], tolerance: float = 0.05,
            timeout: float = TIMEOUT) -> Parts:
    """Move partitions so that every worker of ``workers`` holds about as many rows as the
    others (the slowest worker sets the pace of a fit): while the fullest worker holds
    more than ``1 + tolerance`` times the mean, its smallest partition that narrows the gap
    moves to the emptiest worker. Few partitions move when the data is already spread.
    The moves may take ``timeout`` seconds."""
    load = {w: 0 for w in workers}
    owners = list(parts.owners)
    for i, owner in enumerate(owners):
        load.setdefault(owner, 0)
        load[owner] += int(parts.lengths[i])
    mean = parts.n_rows / max(1, len(load))
    moves: Dict[int, str] = {}
    for _ in range(len(owners)):
        full = max(load, key=lambda w: load[w])
        empty = min(load, key=lambda w: load[w])
        if load[full] <= (1.0 + tolerance) * mean:
            break
        gap = load[full] - load[empty]
        candidates = [i for i, o in enumerate(owners)
                      if o == full and 0 < parts.lengths[i] < gap]
        if not candidates:
            break
        i = min(candidates, key=lambda k: abs(gap / 2 - parts.lengths[k]))
        owners[i] = empty
        moves[i] = empty
        load[full] -= int(parts.lengths[i])
        load[empty] += int(parts.lengths[i])
    if not moves:
        return parts
    futures = list(parts.futures)
    for i, target in moves.items():
        futures[i] = client.submit(_identity, futures[i], workers=[target],
                                   allow_other_workers=False, pure=False)
    finished(client, [futures[i] for i in moves], timeout,
             "moving partitions to balance the workers")
    return Parts(futures, parts.lengths, owners)
