"""The categorical encoding of a model (``categorical_encoding`` other than ``"sets"``) as
the copies and lookup tables of its ONNX graph.

The trees of such a model read the *encoded* columns
(``boostlib.engine.encoding.CategoricalEncoder``), while the graph, like
``Model.predict``, takes the original features (categorical ones as their codes, NaN:
missing). The graph builds the encoded columns from its input, feature by feature in the
encoder's order:

* a numeric feature, or a categorical one split by sets (``"sets"``), is copied as it is
  (each run of such features is one :class:`CopiedColumns`);
* a one-hot or target-statistics feature (``"onehot"``, ``"target_stats"``) is looked up
  (:class:`LookupTable`): each code seen in training has a row of a table holding its
  encoded columns, and two more rows hold those of an unseen code and of a missing value.

The table is ``CategoricalEncoder.transform`` of those codes, so it holds what boostlib
computes: for one-hot columns 1 for the code's own level and 0 for the others (0 everywhere
for an unseen code, NaN for a missing value); for target statistics the means and the
frequency of the code (NaN for unseen and missing codes). In a float64 graph the table is
boostlib's values; in a float32 graph each value is a float32 that the trees' float32
thresholds send where boostlib's float64 borders send the float64 value (:func:`snap_float32`),
so the graph's splits follow boostlib's.

This module builds those arrays with numpy alone; :mod:`boostlib.export.onnx_graph` puts them
into the graph.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional, Union

import numpy as np

from ..engine.binning import BinMapper
from ..engine.encoding import CategoricalEncoder
from .onnx_trees import float32_floor

#: Encoder kinds whose feature is copied as it is into the matrix the trees read.
COPIED = ("numeric", "sets")
#: Encoder kinds whose columns the graph looks up in a table of the feature's codes.
LOOKED_UP = ("onehot", "target_stats")


@dataclass
class CopiedColumns:
    """Features the graph copies from its input, in this order.

    Attributes
    ----------
    features : ndarray of int64
        The features (consecutive in the encoder's order).
    """

    features: np.ndarray

    @property
    def width(self) -> int:
        return int(self.features.size)


@dataclass
class LookupTable:
    """The encoded columns of one feature as rows of a table, one per code.

    Attributes
    ----------
    feature : int
        The original feature.
    codes : ndarray
        The codes seen in training (sorted), in the graph's dtype; code ``codes[i]`` reads
        row ``i``.
    table : ndarray of shape (codes.size + 2, width)
        The encoded columns of each seen code, then of an unseen code (row
        ``unseen_row``), then of a missing value (row ``missing_row``), in the
        graph's dtype.
    """

    feature: int
    codes: np.ndarray
    table: np.ndarray

    @property
    def width(self) -> int:
        return int(self.table.shape[1])

    @property
    def unseen_row(self) -> int:
        return int(self.codes.size)

    @property
    def missing_row(self) -> int:
        return int(self.codes.size) + 1


@dataclass
class EncodingArrays:
    """How the graph builds the encoded columns from its input.

    Attributes
    ----------
    n_features : int
        Columns of the graph's input (the original features).
    n_columns : int
        Columns the trees read (the encoded ones).
    dtype : numpy dtype
        float32 or float64, the graph's.
    parts : list of CopiedColumns and LookupTable
        Concatenated in this order, the encoded columns.
    kinds : list of str
        The encoder's kind of every feature.
    """

    n_features: int
    n_columns: int
    dtype: Any
    parts: List[Union[CopiedColumns, LookupTable]] = field(default_factory=list)
    kinds: List[str] = field(default_factory=list)


def snap_float32(values: np.ndarray, borders: np.ndarray) -> np.ndarray:
    """float32 values that a float32 graph's thresholds bin as boostlib bins ``values``.

    boostlib sends a float64 ``v`` to bin ``i``, the first with ``v <= borders[i]``; the
    graph tests ``x <= float32_floor(borders[i])``. The result is ``v`` rounded to the
    nearest float32, moved (by at most one float32 step) into
    ``(float32_floor(borders[i - 1]), float32_floor(borders[i])]`` when rounding took it out.
    Only two borders closer than one float32 step apart can leave no float32 there (then
    the value is the upper end).

    Parameters
    ----------
    values : ndarray of float64
        Values of one column the trees read (NaN stays NaN).
    borders : ndarray of float64
        The column's bin borders (``BinMapper.borders_``), increasing.

    Returns
    -------
    ndarray of float32
    """
    v = np.asarray(values, dtype=np.float64)
    b = np.asarray(borders, dtype=np.float64)
    upper = np.append(float32_floor(b), np.float32(np.inf)).astype(np.float32)
    lower = np.append(np.float32(-np.inf), upper[:-1])
    i = np.searchsorted(b, v, side="left")           # NaN: past the last border
    with np.errstate(over="ignore"):
        out = v.astype(np.float32)
    out = np.minimum(out, upper[i])                  # NaN stays
    low = out <= lower[i]
    out[low] = np.minimum(np.nextafter(lower[i][low], np.float32(np.inf)), upper[i][low])
    return out


def _probe(encoder: CategoricalEncoder, looked_up: List[int]) -> np.ndarray:
    """The encoder's matrix of rows holding, in each looked-up feature ``j``, its seen codes,
    an unseen code and NaN (rows ``0 .. m_j + 1``; NaN elsewhere)."""
    sizes = [encoder.codes[j].size for j in looked_up]
    X = np.full((max(sizes) + 2, encoder.n_features), np.nan)
    for j, m in zip(looked_up, sizes):
        codes = encoder.codes[j]
        X[:m, j] = codes
        X[m, j] = int(codes.max()) + 1 if m else 0
    return encoder.transform(X)


def encoding_arrays(encoder: Optional[CategoricalEncoder], mapper: BinMapper,
                    dtype: Any = np.float32) -> Optional[EncodingArrays]:
    """The copies and lookup tables building the columns of ``encoder`` in a graph.

    Parameters
    ----------
    encoder : CategoricalEncoder or None
        The model's encoder (``Model.encoder``).
    mapper : BinMapper
        The bins of the encoded columns (the ensemble's), for the float32 values.
    dtype : {numpy.float32, numpy.float64}, default numpy.float32
        The type the graph computes in.

    Returns
    -------
    EncodingArrays or None
        None when the trees read the input as it is (no encoder, or one that copies every
        feature).

    Raises
    ------
    ValueError
        For a feature of an encoder kind the graph cannot build.
    """
    if encoder is None:
        return None
    unknown = sorted({k for k in encoder.kinds if k not in COPIED + LOOKED_UP})
    if unknown:
        raise ValueError(f"the model's categorical encoding has kinds {unknown} that ONNX "
                         f"export does not know; expected {list(COPIED + LOOKED_UP)}")
    looked_up = [j for j, kind in enumerate(encoder.kinds) if kind in LOOKED_UP]
    if not looked_up:
        return None
    dt = np.dtype(dtype)
    encoded = _probe(encoder, looked_up)
    out = EncodingArrays(n_features=encoder.n_features, n_columns=encoder.n_columns,
                         dtype=dt, kinds=list(encoder.kinds))
    copied: List[int] = []
    for j, kind in enumerate(encoder.kinds):
        if kind in COPIED:
            copied.append(j)
            continue
        if copied:
            out.parts.append(CopiedColumns(np.asarray(copied, dtype=np.int64)))
            copied = []
        columns = np.flatnonzero(encoder.source == j)
        if columns.size == 0:                        # one-hot with no level seen
            continue
        m = encoder.codes[j].size
        values = encoded[:m + 2, columns]
        table = np.empty(values.shape, dtype=dt)
        for c, col in enumerate(columns.tolist()):
            table[:, c] = (snap_float32(values[:, c], mapper.borders_[col])
                           if dt == np.float32 else values[:, c])
        out.parts.append(LookupTable(j, encoder.codes[j].astype(dt), table))
    if copied:
        out.parts.append(CopiedColumns(np.asarray(copied, dtype=np.int64)))
    width = sum(part.width for part in out.parts)
    if width != encoder.n_columns:
        raise ValueError(f"the encoding's parts give {width} columns; the encoder has "
                         f"{encoder.n_columns}")
    return out
