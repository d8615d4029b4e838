"""Model files: trained models to and from versioned JSON documents.

The format is described field by field in ``docs/model_files.md``. Writing uses Python's
``json`` module, whose floats are the shortest ``repr`` that reads back to the same double,
so a loaded model predicts bit-identically to the saved one. Reading validates the whole
document before anything is built: types, sizes, index ranges, tree shapes (no cycles, no
shared nodes), finiteness and sorted bin borders. Every failure raises
:class:`ModelFileError`; loading never executes code from the file (a loss is re-created by
its registered plugin name through :mod:`boostlib.registry`).

From format 5 on, the trees' arrays are binary blocks (little-endian, base64) of a fixed
type per field, and from format 6 on the bin borders too (offsets and values): a block's
number of entries follows from its length, so every size is checked before anything is
decoded, and a file costs its reader a small multiple of its size. The borders are read and
installed as one table, with no object per feature, so a model of a million features
without borders loads in a fraction of a second.

This module reads and writes models as their parts (:class:`ModelParts`): the engine's
:class:`~boostlib.booster.model.Model` and the estimators build themselves from them, so it
imports neither.
"""
from __future__ import annotations

import base64
import binascii
import itertools
import json
import math
import os
import stat
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from ..engine.binning import MAX_BINS, BinMapper, first_unsorted
from ..engine.categorical import MAX_CODE
from ..engine.encoding import CategoricalEncoder
from ..engine.ensemble import (MAX_RAW_BOUND, MAX_STATE_FACTOR, Ensemble, raw_bounds,
                               unrecoverable_state)
from ..engine.params import DEFAULTS, MAX_N_JOBS, MAX_TREES, parameters_of, resolve
from ..engine.random_streams import seed_sequence
from ..engine.trees import GROW_POLICIES, TreeGroup, kind_of
from .._version import __version__
from .atomic import check_regular_target, write_atomically
from ..plugin import registry
from ..plugin.callables import PREFIX as FUNCTION_PREFIX, FunctionLoss, function_name, is_function

__all__ = ["ModelFileError", "FORMAT", "FORMAT_VERSION", "ModelParts", "model_document",
           "document_parts", "encode", "parse", "write", "read", "ensemble_to_dict",
           "ensemble_from_dict"]

FORMAT = "boostlib-model"
#: Version written. 2: vector outputs (``model.n_outputs``, a bias per output, a tree per
#: output in every term), any number of classes, bare engine models (``estimator`` null).
#: 3: categorical features. 4: the trees' covers (``cover``, read by SHAP values). 5: the
#: trees' arrays as binary blocks. 6: the bin borders as binary blocks (``bins.offsets``).
#: 7: categorical encodings (``encoding``). 8: linear leaves (the trees' ``linear_*``).
FORMAT_VERSION = 8
#: The first version whose trees' arrays are binary blocks.
BLOCKS_VERSION = 5
#: The first version whose bin borders are binary blocks: every feature's borders one after
#: the other, and where each feature's start (``bins.offsets``).
BORDER_BLOCKS_VERSION = 6
#: The types of the border blocks.
OFFSETS_DTYPE, BORDERS_DTYPE = "<i4", "<f8"
#: Largest number of outputs (classes) accepted from a file.
MAX_OUTPUTS = 1 << 16
#: In files of versions 1 to 5, whose borders are an array per feature:
#: ``n_features * (max_bins - 1)`` always accepted; beyond it, at most 16 times the number
#: of borders in the file. The parser builds a list per feature (56 bytes for the 3 of
#: ``[],``), so a file of millions of features without borders would cost far more than its
#: size. boostlib never wrote such a file: it refused to save the model. From version 6 on a
#: feature costs 4 bytes of ``bins.offsets``, and no limit applies.
MAX_EMPTY_TABLE = 1 << 22
#: Deepest nesting of lists and objects accepted inside parameter values.
MAX_NESTING = 32
#: Longest class label string (characters) accepted from a file.
MAX_LABEL_CHARS = 10_000
#: Bytes the array of a file's class labels may always take (beyond, at most 16 times the
#: labels' text: a fixed-width string type costs its width for every label).
MAX_LABEL_TABLE = 1 << 20
#: Largest model file read (bytes).
MAX_FILE_BYTES = 1 << 30
#: Most JSON values (numbers, strings, ...) and most arrays and objects a file may hold,
#: counted before it is parsed: they bound the memory parsing takes (see docs/reliability.md).
MAX_JSON_VALUES = 1 << 25
MAX_JSON_CONTAINERS = 1 << 22

_TOP_KEYS = ("format", "format_version", "boostlib_version", "estimator", "params", "loss",
             "n_features", "feature_names", "classes", "bins", "model", "training")
#: The first version with the ``encoding`` field (``categorical_encoding``).
ENCODING_VERSION = 7
#: The first version whose trees may have linear leaves (``linear_*`` fields).
LINEAR_VERSION = 8
#: The kinds of features in ``encoding.features``.
_ENCODING_KINDS = ("numeric", "sets", "onehot", "target_stats")
_PLUGIN_KINDS = ("loss", "sampler", "update")


class ModelFileError(ValueError):
    """A model file cannot be read or written: unreadable, corrupt, truncated, of an
    unsupported format version, hostile, or naming a plugin that is not installed.

    The message says which field is wrong (e.g. ``model.trees[3].left[5]``) and why.
    """


# -- small typed readers -----------------------------------------------------------------------
def _fail(path: str, message: str) -> ModelFileError:
    return ModelFileError(f"invalid model file: {path}: {message}")


def _field(doc: Dict[str, Any], key: str, path: str) -> Any:
    if key not in doc:
        raise _fail(path, f"missing field {key!r}")
    return doc[key]


def _check_keys(obj: Any, keys: Tuple[str, ...], path: str) -> Dict[str, Any]:
    if not isinstance(obj, dict):
        raise _fail(path, f"expected an object, got {_kind(obj)}")
    unknown = sorted(set(obj) - set(keys))
    if unknown:
        raise _fail(path, f"unknown field(s) {unknown[:5]}")
    for key in keys:
        _field(obj, key, path)
    return obj


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "an integer", float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _int(value: Any, path: str, low: int, high: int) -> int:
    if type(value) is not int:
        raise _fail(path, f"expected an integer, got {_kind(value)}")
    if not low <= value <= high:
        raise _fail(path, f"{value} is out of range [{low}, {high}]")
    return value


def _float(value: Any, path: str) -> float:
    if type(value) not in (int, float):
        raise _fail(path, f"expected a number, got {_kind(value)}")
    try:
        result = float(value)
    except OverflowError:
        result = math.inf
    if not math.isfinite(result):
        raise _fail(path, "expected a finite number")
    return result


def _str(value: Any, path: str) -> str:
    if type(value) is not str:
        raise _fail(path, f"expected a string, got {_kind(value)}")
    return value


def _list(value: Any, path: str, max_len: Optional[int] = None) -> list:
    if type(value) is not list:
        raise _fail(path, f"expected an array, got {_kind(value)}")
    if max_len is not None and len(value) > max_len:
        raise _fail(path, f"has {len(value)} entries, at most {max_len} allowed")
    return value


def _int_array(value: Any, path: str, low: int, high: int) -> np.ndarray:
    """An array of integers in ``[low, high]`` as int64."""
    items = _list(value, path)
    if not set(map(type, items)) <= {int}:
        bad = next(v for v in items if type(v) is not int)
        raise _fail(path, f"expected integers, found {_kind(bad)}")
    try:
        arr = np.array(items, dtype=np.int64)
    except OverflowError:
        raise _fail(path, f"integers must be in [{low}, {high}]") from None
    return _in_range(arr, path, low, high)


def _in_range(arr: np.ndarray, path: str, low: int, high: int) -> np.ndarray:
    """``arr``, whose entries must lie in ``[low, high]``."""
    out = (arr < low) | (arr > high)
    if out.any():
        k = int(np.argmax(out))
        raise _fail(f"{path}[{k}]", f"{int(arr[k])} is out of range [{low}, {high}]")
    return arr


def _float_array(value: Any, path: str) -> np.ndarray:
    """An array of finite numbers as float64."""
    items = _list(value, path)
    if not set(map(type, items)) <= {int, float}:
        bad = next(v for v in items if type(v) not in (int, float))
        raise _fail(path, f"expected numbers, found {_kind(bad)}")
    try:
        arr = np.array(items, dtype=np.float64)
    except OverflowError:
        raise _fail(path, "numbers must be finite") from None
    return _finite(arr, path)


def _finite(arr: np.ndarray, path: str) -> np.ndarray:
    """``arr``, whose entries must be finite."""
    bad = ~np.isfinite(arr)
    if bad.any():
        raise _fail(f"{path}[{int(np.argmax(bad))}]", "expected a finite number")
    return arr


# -- binary blocks (format 5) ------------------------------------------------------------------
def _block(arr: Any, dtype: str) -> str:
    """``arr`` as a binary block: its entries as ``dtype`` (a little-endian numpy type
    string), base64-encoded. The cast must be safe (a TypeError otherwise): no value is
    ever wrapped around."""
    data = np.ascontiguousarray(np.asarray(arr).astype(dtype, casting="safe", copy=False))
    return base64.b64encode(data).decode("ascii")


def _block_size(value: Any, path: str, dtype: np.dtype) -> int:
    """The number of ``dtype`` entries in the binary block ``value``, from its length alone:
    nothing is decoded."""
    if type(value) is not str:
        raise _fail(path, f"expected a binary block (a base64 string), got {_kind(value)}")
    chars = len(value)
    if chars % 4:
        raise _fail(path, f"a binary block has a multiple of 4 characters, got {chars}")
    n_bytes = chars // 4 * 3 - value.endswith("=") - value.endswith("==")
    if n_bytes % dtype.itemsize:
        raise _fail(path, f"{n_bytes} bytes are not a whole number of {dtype.str} entries")
    return n_bytes // dtype.itemsize


def _read_block(value: Any, path: str, dtype: np.dtype, size: int, expected: str
                ) -> np.ndarray:
    """The binary block ``value`` as an array of ``size`` entries of ``dtype`` (native byte
    order); its size is checked before it is decoded (``expected``: why it is ``size``)."""
    n = _block_size(value, path, dtype)
    if n != size:
        raise _fail(path, f"has {n} entries; {expected}")
    return _decode_block(value, path, dtype)


def _decode_block(value: str, path: str, dtype: np.dtype) -> np.ndarray:
    """A binary block whose size was checked, as an array of ``dtype`` in native byte
    order."""
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _fail(path, f"not a valid base64 block ({exc})") from None
    return np.frombuffer(data, dtype=dtype).astype(dtype.newbyteorder("="))


def _json_value(value: Any, path: str, depth: int = 0) -> Any:
    """Check that ``value`` is plain JSON data (finite numbers, string keys, nested at most
    :data:`MAX_NESTING` levels); return it."""
    if depth > MAX_NESTING:
        raise _fail(path, f"nested more than {MAX_NESTING} levels deep")
    if value is None or type(value) in (bool, int, str):
        return value
    if type(value) is float:
        if not math.isfinite(value):
            raise _fail(path, "expected a finite number")
        return value
    if type(value) is list:
        return [_json_value(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    if type(value) is dict:
        return {_str(k, path): _json_value(v, f"{path}.{k}", depth + 1)
                for k, v in value.items()}
    raise _fail(path, f"{_kind(value)} is not JSON data")


def plain(value: Any) -> Any:
    """numpy scalars and arrays as Python values, tuples as lists (before :func:`_json_value`)."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


# -- JSON text ---------------------------------------------------------------------------------
def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed (numbers must be finite)")


def _no_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"duplicate key {dup!r}")
    return obj


def _check_size(data: Any) -> None:
    """Refuse text beyond the budgets, before parsing it: its length, and upper bounds of
    the number of values (separators and openers) and of arrays and objects (openers)."""
    if isinstance(data, str):
        containers = data.count("[") + data.count("{")
        values = data.count(",") + containers
    else:
        containers = data.count(b"[") + data.count(b"{")
        values = data.count(b",") + containers
    _check_counts(len(data), values, containers)


def _check_counts(size: int, values: int, containers: int) -> None:
    """Refuse a file of ``size`` bytes, up to ``values`` values and ``containers`` arrays
    and objects beyond the budgets."""
    if size > MAX_FILE_BYTES:
        raise ModelFileError(f"invalid model file: {size} bytes, more than "
                             f"MAX_FILE_BYTES = {MAX_FILE_BYTES}")
    if containers > MAX_JSON_CONTAINERS:
        raise ModelFileError(f"invalid model file: up to {containers} arrays and objects, "
                             f"more than MAX_JSON_CONTAINERS = {MAX_JSON_CONTAINERS}")
    if values > MAX_JSON_VALUES:
        raise ModelFileError(f"invalid model file: up to {values} values, more than "
                             f"MAX_JSON_VALUES = {MAX_JSON_VALUES}")


def _text(data: Any) -> str:
    """A file's text (bytes: UTF-8), within the budgets (:func:`_check_size`)."""
    if not isinstance(data, (bytes, bytearray, str)):
        raise ModelFileError(f"invalid model file: expected JSON text, got "
                             f"{type(data).__name__}")
    _check_size(data)
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"invalid model file: not UTF-8 text ({exc})") from None


def _loads(text: str) -> Any:
    """The JSON document of ``text`` (no duplicate keys, NaN or infinities)."""
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise ModelFileError("invalid model file: JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, duplicates, constants, huge integers
        raise ModelFileError(f"invalid model file: not valid JSON ({exc})") from None


def _encode(doc: Dict[str, Any]) -> str:
    try:
        return json.dumps(doc, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"cannot write the model file: {exc}") from exc


# -- the ensemble ------------------------------------------------------------------------------
def _tree_to_dict(tree: Any) -> Dict[str, str]:
    kind = kind_of(tree.policy)
    return {k: _block(v, kind.field_dtypes[k]) for k, v in kind.to_document(tree).items()}


def _term_to_dict(term: Any) -> Dict[str, Any]:
    if isinstance(term, TreeGroup):
        return {"outputs": [_tree_to_dict(t) for t in term.trees]}
    return _tree_to_dict(term)


def ensemble_to_dict(ensemble: Ensemble) -> Dict[str, Any]:
    """The ``bins`` and ``model`` sections of a model file for ``ensemble``.

    Parameters
    ----------
    ensemble : Ensemble

    Returns
    -------
    dict
        ``{"bins": {...}, "model": {...}}`` as described in ``docs/model_files.md``.
    """
    mapper = ensemble.bin_mapper
    return {
        "bins": {"max_bins": int(mapper.max_bins), **_borders_to_dict(mapper),
                 "categorical": [_category_doc(mapper, int(f))
                                 for f in np.flatnonzero(mapper.categorical_)]},
        "model": {"grow_policy": ensemble.policy, "n_outputs": ensemble.n_outputs,
                  "bias": (float(ensemble.bias) if ensemble.n_outputs == 1 else
                           [float(b) for b in ensemble.bias_array]),
                  "coefficients": [float(c) for c in ensemble.coef],
                  "scale_history": None if ensemble.scale_history is None else
                  [[int(m), float(f)] for m, f in ensemble.scale_history],
                  "trees": [_term_to_dict(t) for t in ensemble.trees]},
    }


def _borders_to_dict(mapper: BinMapper) -> Dict[str, str]:
    """``bins.offsets`` and ``bins.borders``: where each feature's borders start, then the
    borders of every feature one after the other, as binary blocks."""
    flat, starts, n_borders = mapper.border_table()
    offsets = np.concatenate([[0], np.cumsum(n_borders, dtype=np.int64)])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise ModelFileError(f"cannot save the model: its {int(offsets[-1])} bin borders are "
                             "more than a model file holds")
    # each border at its position in the file, read from its feature's start in the table
    at = np.arange(offsets[-1]) + np.repeat(starts - offsets[:-1], n_borders)
    values = flat[at]
    return {"offsets": _block(offsets.astype(np.int32), OFFSETS_DTYPE),
            "borders": _block(values, BORDERS_DTYPE)}


def _label(value: Any, path: str) -> Any:
    """A category label as a JSON value (numpy scalars unwrapped)."""
    value = value.item() if isinstance(value, np.generic) else value
    if value is None or type(value) not in (str, int, float, bool):
        raise ModelFileError(f"cannot save the model: {path} is {value!r} "
                             f"({type(value).__name__}); category labels must be strings, "
                             "numbers or booleans")
    return value


def _category_doc(mapper: BinMapper, f: int) -> Dict[str, Any]:
    levels = mapper.levels_[f]
    where = f"category labels of feature {f}"
    return {"feature": f, "codes": [int(c) for c in mapper.cat_codes_[f]],
            "other": bool(mapper.cat_other_[f]),
            "levels": None if levels is None else [_label(v, where) for v in levels]}


def _read_categories(entries: Any, mapper: BinMapper, n_features: int) -> BinMapper:
    """The ``bins.categorical`` list (format 3): the categorical features' codes, "other"
    bins and labels."""
    path = "bins.categorical"
    codes: List[Optional[np.ndarray]] = [None] * n_features
    other = np.zeros(n_features, dtype=bool)
    levels: List[Any] = [None] * n_features
    for i, entry in enumerate(_list(entries, path, n_features)):
        where = f"{path}[{i}]"
        _check_keys(entry, ("feature", "codes", "other", "levels"), where)
        f = _int(entry["feature"], f"{where}.feature", 0, n_features - 1)
        if codes[f] is not None:
            raise _fail(f"{where}.feature", f"feature {f} is listed twice")
        c = _int_array(_list(entry["codes"], f"{where}.codes", mapper.max_bins),
                       f"{where}.codes", 0, MAX_CODE)
        if c.size > 1 and np.any(np.diff(c) <= 0):
            raise _fail(f"{where}.codes", "codes must be strictly increasing")
        if type(entry["other"]) is not bool:
            raise _fail(f"{where}.other", f"expected a boolean, got {_kind(entry['other'])}")
        if c.size + entry["other"] > mapper.max_bins:
            raise _fail(f"{where}.codes", f"more than max_bins={mapper.max_bins} bins")
        if mapper.borders_[f].size:
            raise _fail(f"{where}.feature", f"feature {f} has borders: it is numeric")
        lv = entry["levels"]
        if lv is not None:
            lv = [_label(v, f"{where}.levels[{j}]") for j, v in
                  enumerate(_list(lv, f"{where}.levels", MAX_CODE + 1))]
            if c.size and c[-1] >= len(lv):
                raise _fail(f"{where}.codes", f"code {int(c[-1])} has no label ({len(lv)} "
                                              "labels)")
        codes[f], other[f], levels[f] = c.astype(np.int64), entry["other"], lv
    return mapper.set_categories(codes, other, levels)


def _read_bins(bins: Any, n_features: int, version: int) -> BinMapper:
    """The ``bins`` section: the borders (binary blocks from version 6 on, an array per
    feature before) and the categorical features, as a :class:`BinMapper`. No object is
    built per feature: the borders are checked and installed as one table."""
    path = "bins"
    blocks = version >= BORDER_BLOCKS_VERSION
    keys = ("max_bins",) + (("offsets",) if blocks else ()) + ("borders",)
    _check_keys(bins, keys + (("categorical",) if isinstance(bins, dict)
                              and "categorical" in bins else ()), path)
    max_bins = _int(bins["max_bins"], f"{path}.max_bins", 2, MAX_BINS)
    read = _border_blocks if blocks else _border_arrays
    values, n_borders = read(bins, n_features, max_bins)
    unsorted = first_unsorted(values, n_borders)
    if unsorted >= 0 and blocks:
        raise _fail(f"{path}.borders", f"the borders of feature {unsorted} must be strictly "
                                       "increasing")
    if unsorted >= 0:
        raise _fail(f"{path}.borders[{unsorted}]", "borders must be strictly increasing")
    mapper = BinMapper(max_bins).set_border_table(values, n_borders)
    if "categorical" in bins:
        mapper = _read_categories(bins["categorical"], mapper, n_features)
    return mapper


def _border_blocks(bins: Dict[str, Any], n_features: int, max_bins: int
                   ) -> Tuple[np.ndarray, np.ndarray]:
    """``(values, n_borders)`` of the border blocks of a file of version 6 on: ``offsets``,
    ``n_features + 1`` int32 from 0 up to the number of ``borders`` (float64), each feature's
    ``max_bins - 1`` at most. Both sizes are checked before anything is decoded, so the
    features a file claims are backed by 4 bytes of it each."""
    where = "bins.offsets"
    offsets = _read_block(bins["offsets"], where, np.dtype(OFFSETS_DTYPE), n_features + 1,
                          f"expected n_features + 1 = {n_features + 1}")
    n_values = _block_size(bins["borders"], "bins.borders", np.dtype(BORDERS_DTYPE))
    if offsets[0] != 0:
        raise _fail(f"{where}[0]", f"{int(offsets[0])}; the first offset is 0")
    n_borders = np.diff(offsets.astype(np.int64))
    bad = (n_borders < 0) | (n_borders > max_bins - 1)
    if bad.any():
        f = int(np.argmax(bad))
        raise _fail(f"{where}[{f + 1}]", f"feature {f} has {int(n_borders[f])} borders; "
                                         f"0 to max_bins - 1 = {max_bins - 1} allowed (the "
                                         "offsets may not decrease)")
    if offsets[-1] != n_values:
        raise _fail(f"{where}[{n_features}]", f"{int(offsets[-1])} borders in all, but "
                                              f"bins.borders holds {n_values}")
    values = _finite(_decode_block(bins["borders"], "bins.borders",
                                   np.dtype(BORDERS_DTYPE)), "bins.borders")
    return values, n_borders


def _border_arrays(bins: Dict[str, Any], n_features: int, max_bins: int
                   ) -> Tuple[np.ndarray, np.ndarray]:
    """``(values, n_borders)`` of the borders of a file of version 1 to 5: an array of
    finite numbers per feature, at most ``max_bins - 1`` each; checked and converted for
    all features at once."""
    path = "bins.borders"
    borders = _list(bins["borders"], path)
    if len(borders) != n_features:
        raise _fail(path, f"has {len(borders)} features, n_features is {n_features}")
    if not set(map(type, borders)) <= {list}:
        f = next(f for f, b in enumerate(borders) if type(b) is not list)
        raise _fail(f"{path}[{f}]", f"expected an array, got {_kind(borders[f])}")
    n_borders = np.fromiter(map(len, borders), dtype=np.int64, count=n_features)
    over = n_borders > max_bins - 1
    if over.any():
        f = int(np.argmax(over))
        raise _fail(f"{path}[{f}]", f"has {int(n_borders[f])} entries, at most "
                                    f"{max_bins - 1} allowed")
    n_values = int(n_borders.sum())
    if n_features * (max_bins - 1) > max(MAX_EMPTY_TABLE, 16 * n_values):
        raise _fail("bins", f"{n_features} features x {max_bins - 1} borders is far more than "
                            f"the {n_values} borders in the file (a file of format version "
                            f"{BORDER_BLOCKS_VERSION} or later holds any number)")
    flat = list(itertools.chain.from_iterable(borders))

    def at(i: int) -> str:
        f = int(np.searchsorted(np.cumsum(n_borders), i, side="right"))
        return f"{path}[{f}][{i - int(n_borders[:f].sum())}]"

    if not set(map(type, flat)) <= {int, float}:
        i = next(i for i, v in enumerate(flat) if type(v) not in (int, float))
        raise _fail(at(i), f"expected a number, got {_kind(flat[i])}")
    try:
        values = np.array(flat, dtype=np.float64)
    except OverflowError:
        raise _fail(path, "numbers must be finite") from None
    bad = ~np.isfinite(values)
    if bad.any():
        raise _fail(at(int(np.argmax(bad))), "expected a finite number")
    return values, n_borders


class _Reader:
    """The typed readers a tree kind validates its trees with
    (:meth:`boostlib.engine.trees.TreeKind.from_document`), for files of format 1 to 4,
    whose trees' arrays are JSON arrays; each raises :class:`ModelFileError` naming the
    field. Every size is checked before an array is built.

    Parameters
    ----------
    dtypes : mapping of str to str
        The tree kind's ``field_dtypes`` (what :class:`_BlockReader` decodes).
    """

    MAX_BINS = MAX_BINS
    #: whether the file's version allows linear leaves
    linear_leaves = False
    check_keys = staticmethod(_check_keys)
    fail = staticmethod(_fail)

    def __init__(self, dtypes: Mapping[str, str]):
        self.dtypes = {k: np.dtype(v) for k, v in dtypes.items()}

    def length(self, tree: Dict[str, Any], field: str, path: str) -> int:
        """The number of entries of ``tree[field]``, without building it."""
        return len(_list(tree[field], f"{path}.{field}"))

    def _sized(self, tree: Dict[str, Any], field: str, path: str, size: int,
               expected: str) -> Any:
        n = self.length(tree, field, path)
        if n != size:
            raise _fail(f"{path}.{field}", f"has {n} entries; {expected}")
        return tree[field]

    def ints(self, tree: Dict[str, Any], field: str, path: str, size: int, expected: str,
             low: int, high: int) -> np.ndarray:
        """``tree[field]``: ``size`` integers in ``[low, high]`` (``expected``: why ``size``
        of them)."""
        return _int_array(self._sized(tree, field, path, size, expected), f"{path}.{field}",
                          low, high)

    def floats(self, tree: Dict[str, Any], field: str, path: str, size: int,
               expected: str) -> np.ndarray:
        """``tree[field]``: ``size`` finite numbers as float64."""
        return _float_array(self._sized(tree, field, path, size, expected),
                            f"{path}.{field}")

    def sets(self, tree: Dict[str, Any], path: str) -> np.ndarray:
        """``tree["cat_sets"]`` (none when absent) as uint32 of shape (n_sets, 8)."""
        where = f"{path}.cat_sets"
        rows = _list(tree.get("cat_sets", []), where)
        sets = np.zeros((len(rows), 8), dtype=np.uint32)
        for i, row in enumerate(rows):
            words = _int_array(_list(row, f"{where}[{i}]", 8), f"{where}[{i}]", 0, 2**32 - 1)
            if words.size != 8:
                raise _fail(f"{where}[{i}]", "a category set is 8 words of 32 bits")
            sets[i] = words
        return sets


class _BlockReader(_Reader):
    """:class:`_Reader` for files of format 5 on, whose trees' arrays are binary blocks of
    the types ``dtypes`` gives."""

    def length(self, tree: Dict[str, Any], field: str, path: str) -> int:
        return _block_size(tree[field], f"{path}.{field}", self.dtypes[field])

    def ints(self, tree: Dict[str, Any], field: str, path: str, size: int, expected: str,
             low: int, high: int) -> np.ndarray:
        where = f"{path}.{field}"
        return _in_range(_read_block(tree[field], where, self.dtypes[field], size, expected),
                         where, low, high)

    def floats(self, tree: Dict[str, Any], field: str, path: str, size: int,
               expected: str) -> np.ndarray:
        where = f"{path}.{field}"
        return _finite(_read_block(tree[field], where, self.dtypes[field], size, expected)
                       .astype(np.float64, copy=False), where)

    def sets(self, tree: Dict[str, Any], path: str) -> np.ndarray:
        if "cat_sets" not in tree:
            return np.zeros((0, 8), dtype=np.uint32)
        where, dtype = f"{path}.cat_sets", self.dtypes["cat_sets"]
        n = _block_size(tree["cat_sets"], where, dtype)
        if n % 8:
            raise _fail(where, f"has {n} words; a category set is 8 words of 32 bits")
        words = _decode_block(tree["cat_sets"], where, dtype)
        return words.astype(np.uint32, copy=False).reshape(-1, 8)


def ensemble_from_dict(bins: Any, model: Any, n_features: int, version: int = FORMAT_VERSION
                       ) -> Ensemble:
    """Validate the ``bins`` and ``model`` sections of a model file and build the ensemble.

    Parameters
    ----------
    bins, model : dict
        The sections as parsed from JSON.
    n_features : int
        Number of features the model expects.

    Returns
    -------
    Ensemble

    Raises
    ------
    ModelFileError
        On any inconsistency, naming the offending field.
    """
    keys = ("grow_policy", "bias", "coefficients", "scale_history", "trees")
    _check_keys(model, keys + (("n_outputs",) if version >= 2 else ()), "model")
    n_outputs = _read_n_outputs(model, version)
    policy = _str(model["grow_policy"], "model.grow_policy")
    if policy not in GROW_POLICIES:
        raise _fail("model.grow_policy", f"{policy!r} is not one of {list(GROW_POLICIES)}")
    mapper = _read_bins(bins, n_features, version)
    if n_outputs == 1:
        bias = np.array([_float(model["bias"], "model.bias")])
    else:
        bias = _float_array(model["bias"], "model.bias")
        if bias.size != n_outputs:
            raise _fail("model.bias", f"has {bias.size} entries for {n_outputs} outputs")
    raw_trees = _list(model["trees"], "model.trees", MAX_TREES // n_outputs)
    coef = _float_array(model["coefficients"], "model.coefficients")
    if coef.size != len(raw_trees):
        raise _fail("model.coefficients", f"has {coef.size} entries for {len(raw_trees)} "
                                          "trees")
    n_borders = mapper.n_bins_nonmissing_.astype(np.int64) - 1
    kind = kind_of(policy)

    reader = (_BlockReader if version >= BLOCKS_VERSION else _Reader)(kind.field_dtypes)
    reader.linear_leaves = version >= LINEAR_VERSION

    def read(value: Any, path: str, n_borders: np.ndarray) -> Any:
        return kind.from_document(value, path, n_borders, reader)

    def term(value: Any, path: str) -> Any:
        if n_outputs == 1:
            return read(value, path, n_borders)
        _check_keys(value, ("outputs",), path)
        parts = _list(value["outputs"], f"{path}.outputs")
        if len(parts) != n_outputs:
            raise _fail(f"{path}.outputs", f"has {len(parts)} trees for {n_outputs} outputs")
        return TreeGroup([read(v, f"{path}.outputs[{k}]", n_borders)
                          for k, v in enumerate(parts)])

    trees = [term(t, f"model.trees[{k}]") for k, t in enumerate(raw_trees)]
    bounds = raw_bounds(bias, coef, trees)
    if not bounds[-1] <= MAX_RAW_BOUND:
        raise _fail("model", f"raw scores could exceed {MAX_RAW_BOUND:g} (bias, coefficients "
                             "or leaf values too large)")
    scalar = [s for t in trees for s in (t.trees if isinstance(t, TreeGroup) else [t])]
    if not sum(float(np.sum(t.gain)) for t in scalar) <= MAX_RAW_BOUND:
        raise _fail("model.trees", f"the split gains add up to more than {MAX_RAW_BOUND:g}")
    history = _read_scale_history(model["scale_history"], len(trees), bounds)
    ensemble = Ensemble(mapper, policy, bias if n_outputs > 1 else float(bias[0]), n_outputs)
    for tree, c in zip(trees, coef.tolist()):
        ensemble.add(tree, c)
    ensemble.scale_history = history
    return ensemble


def _read_n_outputs(model: Any, version: int) -> int:
    """``model.n_outputs`` (version 1 files have none: one output)."""
    if version < 2:
        return 1
    if not isinstance(model, dict):
        raise _fail("model", f"expected an object, got {_kind(model)}")
    return _int(_field(model, "n_outputs", "model"), "model.n_outputs", 1, MAX_OUTPUTS)


def _read_scale_history(value: Any, n_trees: int, bounds: np.ndarray
                        ) -> Optional[List[Tuple[int, float]]]:
    """``null``, or ``[[n_trees_at_the_time, factor], ...]`` in training order, such that
    every past state ``predict_virtual_ensembles`` can recover has finite raw scores
    (``bounds`` as :func:`~boostlib.engine.ensemble.raw_bounds` gives them)."""
    if value is None:
        return None
    path = "model.scale_history"
    entries = _list(value, path)
    out: List[Tuple[int, float]] = []
    for k, entry in enumerate(entries):
        where = f"{path}[{k}]"
        pair = _list(entry, where)
        if len(pair) != 2:
            raise _fail(where, f"expected [n_trees, factor], got {len(pair)} entries")
        m = _int(pair[0], f"{where}[0]", out[-1][0] if out else 0, n_trees)
        f = _float(pair[1], f"{where}[1]")
        if not 0.0 < f <= MAX_RAW_BOUND:
            raise _fail(f"{where}[1]", f"a scale factor must be in (0, {MAX_RAW_BOUND:g}], "
                                       f"got {f!r}")
        out.append((m, f))
    _check_states(out, bounds)
    return out


def _check_states(history: List[Tuple[int, float]], bounds: np.ndarray) -> None:
    """Refuse a scale history whose past states virtual ensembles read cannot be recovered
    in floating point (:func:`~boostlib.engine.ensemble.unrecoverable_state`)."""
    j = unrecoverable_state(history, bounds)
    if j is not None:
        raise _fail(f"model.scale_history[{j}]", f"the model's state with {history[j][0]} "
                    "trees cannot be recovered: the product of the factors recorded from "
                    f"here on must lie in [1/{MAX_STATE_FACTOR:g}, {MAX_STATE_FACTOR:g}] and "
                    f"the state's raw scores within {MAX_RAW_BOUND:g}")


# -- plugins and parameters --------------------------------------------------------------------
def _init_params(obj: Any) -> Dict[str, Any]:
    """Constructor arguments of a plugin instance, read back from same-named attributes."""
    params = {}
    for p in registry.init_parameters(type(obj)):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if not hasattr(obj, p.name):
            raise ModelFileError(
                f"cannot save {type(obj).__name__}: its parameter {p.name!r} is not stored "
                "as an attribute of the same name, so it cannot be written to the file; "
                "pass the plugin by name with *_params instead")
        params[p.name] = getattr(obj, p.name)
    return params


def _registered_name(kind: str, obj: Any) -> str:
    """The name under which ``obj``'s class is registered."""
    for entry in registry.entries(kind):
        if entry.factory is type(obj):
            return entry.name
    name = getattr(obj, "name", "")
    if name in registry.available(kind):
        return name
    raise ModelFileError(f"cannot save: {kind} {type(obj).__name__} is not a registered "
                         "plugin, so a model file cannot name it (register it through the "
                         "boostlib entry points or boostlib.registry.register_plugin)")


def _loss_spec(loss: Any, spec: Dict[str, Any]) -> Dict[str, Any]:
    """``{"name", "params"}`` that re-create the fitted ``loss`` through the registry
    (``spec``: the name and parameters it was created with; no name for an instance). A
    function's loss is stored by its name, outputs and link: the file predicts without
    it."""
    if isinstance(loss, FunctionLoss):
        return {"name": loss.name, "params": {"n_outputs": loss.n_outputs, "link": loss.link}}
    if spec.get("name") is not None:
        name, params = spec["name"], dict(spec.get("params") or {})
    else:
        name, params = _registered_name("loss", loss), _init_params(loss)
    try:
        params = _json_value(plain(params), "loss.params")
    except ModelFileError as exc:
        raise ModelFileError(f"cannot save the loss parameters: {exc}") from None
    rebuilt = registry.create("loss", name, params)
    if type(rebuilt) is not type(loss):
        raise ModelFileError(f"cannot save: loss {name!r} re-created from the registry is a "
                             f"{type(rebuilt).__name__}, but the model was fitted with a "
                             f"{type(loss).__name__}")
    return {"name": name, "params": params}


def params_to_dict(params: Dict[str, Any]) -> Dict[str, Any]:
    """Training parameters as JSON: plugin instances by registered name, the rest if JSON
    data (else null, e.g. a numpy Generator as ``random_state``)."""
    out = {}
    for key, value in params.items():
        if key == "loss" and is_function(value):
            value = function_name(value)
        if key in _PLUGIN_KINDS and value is not None and not isinstance(value, str):
            try:
                value = _registered_name(key, value)
            except ModelFileError:  # only the loss matters for prediction (see _loss_spec)
                value = getattr(value, "name", None) or None
        if key == "eval_metric" and value is not None:     # instances by name
            items = [v if isinstance(v, str) else function_name(v) if is_function(v) else
                     getattr(v, "name", None) or type(v).__name__
                     for v in (value if isinstance(value, (list, tuple)) else [value])]
            value = items if isinstance(value, (list, tuple)) else items[0]
        if key == "class_weight" and isinstance(value, Mapping):
            out[key] = _class_weight_to_json(value)
            continue
        try:
            out[key] = _json_value(plain(value), key)
        except ModelFileError:
            out[key] = None
    return out


def _class_weight_to_json(value: Mapping) -> List[List[Any]]:
    """A classifier's ``class_weight`` dict as ``[[label, weight], ...]`` (JSON object keys
    are strings; the labels keep their type: boolean, number or string)."""
    pairs = [[plain(label), plain(weight)] for label, weight in value.items()]
    for label, weight in pairs:
        if type(label) not in (bool, int, float, str) or type(weight) not in (int, float) \
                or not math.isfinite(label if type(label) is float else 0.0) \
                or not math.isfinite(weight):
            raise ModelFileError(f"cannot save class_weight {dict(value)!r}: only finite "
                                 "weights of boolean, number and string labels can be "
                                 "written")
    return pairs


def _read_class_weight(value: Any) -> Any:
    """``params.class_weight``: null, "balanced" or ``[[label, weight], ...]`` (a dict)."""
    path = "params.class_weight"
    if value is None or value == "balanced":
        return value
    if type(value) is not list:
        raise _fail(path, f"expected null, \"balanced\" or an array of [label, weight] "
                          f"pairs, got {_kind(value)}")
    pairs = _list(value, path, MAX_OUTPUTS)
    out: Dict[Any, float] = {}
    for i, pair in enumerate(pairs):
        pair = _list(pair, f"{path}[{i}]")
        if len(pair) != 2 or type(pair[0]) not in (bool, int, float, str) \
                or type(pair[1]) not in (int, float) or not pair[1] > 0:
            raise _fail(f"{path}[{i}]", "expected a [label, weight] pair: a boolean, number "
                                        "or string label and a weight > 0")
        if pair[0] in out:
            raise _fail(f"{path}[{i}]", f"repeats the label {pair[0]!r}")
        out[pair[0]] = pair[1]
    return out


def _read_params(params: Any) -> Dict[str, Any]:
    """The ``params`` object: training parameter names (those of :func:`boostlib.train` and
    the estimators), each valid."""
    if not isinstance(params, dict):
        raise _fail("params", f"expected an object, got {_kind(params)}")
    unknown = sorted(set(params) - set(DEFAULTS) - set(ESTIMATOR_PARAMETERS))
    if unknown:
        raise _fail("params", f"unknown parameter(s) {unknown[:5]}")
    given = set(params)
    params = _json_value(params, "params")
    spec = params.pop("categorical_features", "auto")
    warm_start = params.pop("warm_start", False)
    if type(warm_start) is not bool:
        raise _fail("params.warm_start", f"expected true or false, got {_kind(warm_start)}")
    class_weight = _read_class_weight(params.pop("class_weight", None))
    others = {}                               # the other estimator parameters, as declared
    for p in parameters_of("estimator", "classifier"):
        if p.name in params:
            others[p.name] = params.pop(p.name)
            try:
                if p.check is not None:
                    p.check(p.name, others[p.name])
            except (TypeError, ValueError) as exc:
                raise _fail(f"params.{p.name}", str(exc)) from None
    if not (spec is None or spec == "auto" or isinstance(spec, list) and all(
            type(v) in (str, int, bool) for v in spec)):
        raise _fail("params.categorical_features", "expected 'auto', null or a list of "
                                                   "column names, indices or booleans")
    for key in _PLUGIN_KINDS:
        if params.get(key) is not None:
            name = _str(params[key], f"params.{key}")
            if name not in registry.available(key):     # prediction does not need it
                warnings.warn("the model file names the " + _not_installed(
                    key, name, f" (params.{key}): the model predicts, but refitting it needs "
                               "it"), UserWarning, stacklevel=2)
    n_jobs = params.get("n_jobs")
    if n_jobs is not None:
        _int(n_jobs, "params.n_jobs", -MAX_N_JOBS, MAX_N_JOBS)
    try:
        resolve(params)
        seed_sequence(params.get("random_state"))
        if n_jobs == 0:
            raise ValueError("n_jobs=0 is invalid")
    except (TypeError, ValueError) as exc:
        raise _fail("params", str(exc)) from None
    if "categorical_features" in given:
        params["categorical_features"] = spec
    if "warm_start" in given:
        params["warm_start"] = warm_start
    if "class_weight" in given:
        params["class_weight"] = class_weight
    params.update(others)
    return params


_PLUGIN_NOUNS = {"loss": ("loss", "losses"), "sampler": ("sampler", "samplers"),
                 "update": ("update rule", "update rules")}


def _not_installed(kind: str, name: str, why: str = "") -> str:
    """``"<kind> '<name>', which is not installed<why>; available <kinds>: ..."``."""
    noun, plural = _PLUGIN_NOUNS[kind]
    return (f"{noun} {name!r}, which is not installed{why}; available {plural}: "
            f"{', '.join(registry.available(kind))}")


def _read_loss(spec: Any) -> Tuple[Any, Dict[str, Any]]:
    _check_keys(spec, ("name", "params"), "loss")
    name = _str(spec["name"], "loss.name")
    params = spec["params"]
    if not isinstance(params, dict):
        raise _fail("loss.params", f"expected an object, got {_kind(params)}")
    if name.startswith(FUNCTION_PREFIX):
        return _function_loss(name, params), {"name": name, "params": params}
    if name not in registry.available("loss"):
        raise ModelFileError(f"the model file needs the {_not_installed('loss', name)}")
    params = _json_value(params, "loss.params")
    try:
        loss = registry.create("loss", name, params)
    except Exception as exc:  # noqa: BLE001 - any plugin failure is a loading failure
        raise ModelFileError(f"invalid model file: loss {name!r} rejected its parameters: "
                             f"{exc}") from None
    return loss, {"name": name, "params": params}


def _function_loss(name: str, params: Dict[str, Any]) -> FunctionLoss:
    """The loss of a model fitted with a loss function: its outputs and link, for
    predictions; the function itself is not in the file (refitting needs it again)."""
    _check_keys(params, ("n_outputs", "link"), "loss.params")
    n_outputs = _int(params["n_outputs"], "loss.params.n_outputs", 1, MAX_OUTPUTS)
    link = params["link"]
    if link not in FunctionLoss.LINKS:
        raise _fail("loss.params.link", f"expected one of {FunctionLoss.LINKS}, got "
                                        f"{_kind(link)}")
    if (link == "softmax") != (n_outputs > 1):
        raise _fail("loss.params", f"link {link!r} with {n_outputs} output(s)")

    def not_in_the_file(y: Any, raw: Any) -> Any:
        raise TypeError(f"{name} is a function the model file does not hold: it predicts, "
                        "but refitting needs the function (pass loss= again)")

    not_in_the_file.__name__ = name[len(FUNCTION_PREFIX):]
    return FunctionLoss(not_in_the_file, n_outputs=n_outputs, link=link)


# -- classes, names, training record -----------------------------------------------------------
def _classes_to_dict(classes: np.ndarray) -> Dict[str, Any]:
    classes = np.asarray(classes)
    values = classes.tolist()
    if classes.dtype.kind not in "biufUO" or not all(
            type(v) in (bool, int, float, str) for v in values):
        raise ModelFileError(f"cannot save class labels {values[:5]!r}: only booleans, numbers "
                             "and strings can be written")
    return {"dtype": classes.dtype.str, "values": values}


def _read_classes(spec: Any, n_outputs: int) -> np.ndarray:
    """The class labels of a model of ``n_outputs`` outputs: two with one output, else one
    per output. Their count is checked before anything is built, and the array of their
    type (``count * itemsize`` bytes: 40,000 for a label typed ``<U10000``, however short)
    may take at most :data:`MAX_LABEL_TABLE` bytes or 16 times the labels' text, so that
    its memory stays in proportion to the file."""
    path = "classes"
    _check_keys(spec, ("dtype", "values"), path)
    dtype_str = _str(spec["dtype"], f"{path}.dtype")
    allowed = {"|b1", "|O"} | {f"{e}{k}{s}" for e in "<>|" for k in "iu" for s in "1248"} \
        | {f"{e}f{s}" for e in "<>" for s in "248"}
    if dtype_str not in allowed and not _is_unicode_dtype(dtype_str):
        raise _fail(f"{path}.dtype", f"{dtype_str!r} is not a supported label type")
    values = _list(spec["values"], f"{path}.values")
    expected = 2 if n_outputs == 1 else n_outputs
    if len(values) != expected:
        raise _fail(path, f"{len(values)} classes for a model of "
                          + ("one output (a binary classifier has exactly two)"
                             if n_outputs == 1 else f"{n_outputs} outputs"))
    dtype = np.dtype(dtype_str)
    kinds = {"b": (bool,), "i": (int,), "u": (int,), "f": (int, float), "U": (str,),
             "O": (str,)}[dtype.kind]
    for i, v in enumerate(values):
        if type(v) not in kinds:
            raise _fail(f"{path}.values[{i}]", f"{_kind(v)} does not match dtype {dtype_str}")
    if dtype.kind == "U":
        text = sum(len(v) + 3 for v in values)       # in the file: quotes and a comma
        if len(values) * dtype.itemsize > max(MAX_LABEL_TABLE, 16 * text):
            raise _fail(f"{path}.dtype", f"{len(values)} labels of type {dtype_str} would "
                                         f"take {len(values) * dtype.itemsize} bytes, more "
                                         f"than 16 times their {text} characters of text")
    try:
        classes = np.array(values, dtype=dtype)
    except (OverflowError, ValueError):
        raise _fail(f"{path}.values", f"does not fit dtype {dtype_str}") from None
    if classes.tolist() != values or any(a >= b for a, b in zip(values, values[1:])):
        raise _fail(f"{path}.values", f"must be distinct labels of dtype {dtype_str}, "
                                      "in increasing order")
    return classes


def _is_unicode_dtype(text: str) -> bool:
    digits = text[2:]
    return (text[:2] in ("<U", ">U") and digits.isdigit() and digits[0] != "0"
            and int(digits) <= MAX_LABEL_CHARS)


def _read_names(names: Any, n_features: int) -> Optional[np.ndarray]:
    if names is None:
        return None
    names = _list(names, "feature_names")
    if len(names) != n_features:
        raise _fail("feature_names", f"has {len(names)} names for {n_features} features")
    if not set(map(type, names)) <= {str}:
        i = next(i for i, n in enumerate(names) if type(n) is not str)
        _str(names[i], f"feature_names[{i}]")
    if len(set(names)) != len(names):
        raise _fail("feature_names", "repeats a name; expected distinct names")
    return np.asarray(names, dtype=object)


def _training_to_dict(evals_result: Optional[Dict[str, Any]],
                      best_iteration: Optional[int]) -> Dict[str, Any]:
    curves = {str(s): {str(m): [float(v) if math.isfinite(v) else None for v in vals]
                       for m, vals in metrics.items()}
              for s, metrics in (evals_result or {}).items()}
    return {"best_iteration": None if best_iteration is None else int(best_iteration),
            "evals_result": curves}


def _read_training(spec: Any) -> Tuple[Optional[int], Dict[str, Dict[str, List[float]]]]:
    _check_keys(spec, ("best_iteration", "evals_result"), "training")
    best = spec["best_iteration"]
    if best is not None:
        best = _int(best, "training.best_iteration", -1, 2 ** 31 - 1)
    curves = spec["evals_result"]
    if not isinstance(curves, dict):
        raise _fail("training.evals_result", f"expected an object, got {_kind(curves)}")
    result = {}
    for name, metrics in curves.items():
        path = f"training.evals_result.{name}"
        if not isinstance(metrics, dict):
            raise _fail(path, f"expected an object, got {_kind(metrics)}")
        result[name] = {}
        for metric, values in metrics.items():
            where = f"{path}.{metric}"
            items = _list(values, where, MAX_TREES)
            if not set(map(type, items)) <= {int, float, type(None)}:
                raise _fail(where, "expected numbers or null")
            result[name][metric] = [math.nan if v is None else _float(v, where) for v in items]
    return best, result


# -- documents ---------------------------------------------------------------------------------
ESTIMATORS = ("BoostClassifier", "BoostRegressor", "BoostRanker")
#: The estimators' parameters that are not training parameters (``DEFAULTS``); a
#: classifier's ``class_weight`` dict is stored as ``[[label, weight], ...]``.
ESTIMATOR_PARAMETERS = tuple(p.name for p in parameters_of("estimator", "classifier"))


@dataclass
class ModelParts:
    """A validated model file, in parts.

    Attributes
    ----------
    estimator : str or None
        ``"BoostClassifier"``, ``"BoostRegressor"``, ``"BoostRanker"``, or None for a bare
        engine model.
    params : dict
        Training parameters (JSON values; plugins by registered name).
    loss : Loss
        Re-created through the registry.
    loss_spec : dict
        ``{"name", "params"}`` it was created from.
    n_features : int
    feature_names : ndarray of str or None
    classes : ndarray or None
        A classifier's labels, in the order of its outputs.
    ensemble : Ensemble
    evals_result : dict
    best_iteration : int or None
    version : int
        The file's format version.
    encoder : CategoricalEncoder or None
        How categorical features are encoded before binning (``encoding``, format 7).
    """

    estimator: Optional[str]
    params: Dict[str, Any]
    loss: Any
    loss_spec: Dict[str, Any]
    n_features: int
    feature_names: Optional[np.ndarray]
    classes: Optional[np.ndarray]
    ensemble: Ensemble
    evals_result: Dict[str, Dict[str, List[float]]]
    best_iteration: Optional[int]
    version: int
    encoder: Optional[CategoricalEncoder] = None


def model_document(model: Any, estimator: Optional[str] = None,
                   classes: Optional[np.ndarray] = None,
                   params: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The model-file document of a trained model (plain JSON data).

    Parameters
    ----------
    model : boostlib.Model
    estimator : {"BoostClassifier", "BoostRegressor", "BoostRanker"}, optional
        The estimator class the file re-creates (None: a bare engine model).
    classes : ndarray, optional
        A classifier's labels.
    params : dict, optional
        The parameters to record (default: the model's training parameters).

    Raises
    ------
    ModelFileError
        When part of the model cannot be written (an unregistered loss instance, class
        labels that are not booleans, numbers or strings).
    """

    if estimator is not None and estimator not in ESTIMATORS:
        raise ModelFileError(f"cannot save a {estimator}; expected one of {ESTIMATORS}")
    names = model.feature_names
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION, "boostlib_version": __version__,
        "estimator": estimator,
        "params": params_to_dict(model.params if params is None else params),
        "loss": _loss_spec(model.loss, model.loss_spec),
        "n_features": int(model.n_features),
        "feature_names": None if names is None else [str(n) for n in names],
        "classes": None if classes is None else _classes_to_dict(classes),
        **ensemble_to_dict(model.ensemble),
        "training": _training_to_dict(model.evals_result, model.best_iteration),
        "encoding": _encoding_to_dict(getattr(model, "encoder", None)),
    }


def _encoding_to_dict(encoder: Optional[CategoricalEncoder]) -> Optional[Dict[str, Any]]:
    """The ``encoding`` field: None, or the encoder's statistics with each feature's labels."""
    if encoder is None:
        return None
    doc = encoder.to_dict()
    for j, entry in enumerate(doc["features"]):
        levels = encoder.levels[j]
        where = f"category labels of feature {j}"
        entry["levels"] = None if levels is None else [_label(v, where) for v in levels]
    return doc


def _read_encoding(doc: Any, n_features: int) -> CategoricalEncoder:
    """The ``encoding`` field (format 7), checked, as a :class:`CategoricalEncoder`."""
    path = "encoding"
    _check_keys(doc, ("prior", "total_weight", "features"), path)
    prior = _float_array(doc["prior"], f"{path}.prior")
    if prior.size < 1 or prior.size > MAX_OUTPUTS:
        raise _fail(f"{path}.prior", f"expected 1 to {MAX_OUTPUTS} numbers")
    total = _float(doc["total_weight"], f"{path}.total_weight")
    entries = _list(doc["features"], f"{path}.features", n_features)
    if len(entries) != n_features:
        raise _fail(f"{path}.features", f"{len(entries)} entries for {n_features} features")
    levels: List[Any] = []
    for j, entry in enumerate(entries):
        where = f"{path}.features[{j}]"
        if not isinstance(entry, dict):
            raise _fail(where, f"expected an object, got {_kind(entry)}")
        kind = entry.get("kind")
        if kind not in _ENCODING_KINDS:
            raise _fail(f"{where}.kind", f"{kind!r} is not one of {list(_ENCODING_KINDS)}")
        keys = ("kind", "levels") + (("codes",) if kind in ("onehot", "target_stats") else ()) \
            + (("sums", "weights") if kind == "target_stats" else ())
        _check_keys(entry, keys, where)
        lv = entry["levels"]
        if lv is not None:
            lv = [_label(v, f"{where}.levels[{i}]") for i, v in
                  enumerate(_list(lv, f"{where}.levels", MAX_CODE + 1))]
        levels.append(lv)
        if "codes" in entry:
            c = _int_array(entry["codes"], f"{where}.codes", 0, MAX_CODE)
            if c.size > 1 and np.any(np.diff(c) <= 0):
                raise _fail(f"{where}.codes", "codes must be strictly increasing")
            if kind == "onehot" and c.size > MAX_BINS:
                raise _fail(f"{where}.codes", f"more than {MAX_BINS} one-hot columns")
            if lv is not None and c.size and c[-1] >= len(lv):
                raise _fail(f"{where}.codes", f"code {int(c[-1])} has no label")
        if kind == "target_stats":
            rows = _list(entry["sums"], f"{where}.sums", c.size)
            if len(rows) != c.size:
                raise _fail(f"{where}.sums", f"expected one row per code ({c.size})")
            for i, row in enumerate(rows):
                if _float_array(row, f"{where}.sums[{i}]").size != prior.size:
                    raise _fail(f"{where}.sums[{i}]", f"expected {prior.size} numbers")
            if _float_array(entry["weights"], f"{where}.weights").size != c.size:
                raise _fail(f"{where}.weights", f"expected one number per code ({c.size})")
    return CategoricalEncoder.from_dict(doc, levels)


def _read_header(doc: Any) -> int:
    if not isinstance(doc, dict):
        raise _fail("document", f"expected a JSON object, got {_kind(doc)}")
    if doc.get("format") != FORMAT:
        raise ModelFileError(f"not a boostlib model file (field 'format' is "
                             f"{doc.get('format')!r}, expected {FORMAT!r})")
    version = doc.get("format_version")
    if type(version) is not int or not 1 <= version <= FORMAT_VERSION:
        newer = type(version) is int and version > FORMAT_VERSION
        raise ModelFileError(
            f"unsupported model file format version {version!r}: this boostlib reads versions "
            f"1 to {FORMAT_VERSION}" + ("; the file was written by a newer boostlib "
                                        f"({doc.get('boostlib_version')!r}), upgrade boostlib"
                                        if newer else ""))
    _check_keys(doc, _TOP_KEYS + (("encoding",) if version >= ENCODING_VERSION else ()),
                "document")
    _str(doc["boostlib_version"], "boostlib_version")
    if doc["estimator"] is None and version == 1:
        raise _fail("estimator", "expected a string in a version 1 file")
    if doc["estimator"] is not None and _str(doc["estimator"], "estimator") not in ESTIMATORS:
        raise _fail("estimator", f"{doc['estimator']!r} is not one of {list(ESTIMATORS)}"
                                 + (" or null" if version >= 2 else ""))
    return version


def document_parts(doc: Any) -> ModelParts:
    """Validate a parsed model-file document (any supported version) and build its parts.

    Raises
    ------
    ModelFileError
        When the document is not a valid model file of a supported version, or its loss
        plugin is not installed.
    """
    version = _read_header(doc)
    estimator = doc["estimator"]
    classifier = estimator == "BoostClassifier"
    loss, loss_spec = _read_loss(doc["loss"])      # before params, which only warn of
    params = _read_params(doc["params"])            # plugins that are not installed
    if estimator is not None and bool(loss.is_classification) != classifier:
        raise _fail("loss.name", f"{loss_spec['name']!r} is {'not ' if classifier else ''}a "
                                 "classification loss, which does not fit the estimator")
    n_features = _int(doc["n_features"], "n_features", 1, 2 ** 31 - 1)
    names = _read_names(doc["feature_names"], n_features)
    n_outputs = _read_n_outputs(doc["model"], version)
    try:
        loss_outputs = int(loss.n_outputs)
    except (TypeError, ValueError) as exc:
        raise _fail("loss", f"the loss does not say its number of outputs: {exc}") from None
    if loss_outputs != n_outputs:
        raise _fail("model.n_outputs", f"{n_outputs} output(s), but the loss "
                                       f"{loss_spec['name']!r} has {loss_outputs}")
    if estimator is not None and classifier == (doc["classes"] is None):
        raise _fail("classes", "a classifier needs its classes, a regressor has none")
    classes = None if doc["classes"] is None else _read_classes(doc["classes"], n_outputs)
    weights = params.get("class_weight")
    if weights is not None and not classifier:
        raise _fail("params.class_weight", "only a BoostClassifier has class weights")
    if isinstance(weights, dict) and classes is not None:
        unknown = [k for k in weights if k not in set(classes.tolist())]
        if unknown:
            raise _fail("params.class_weight", f"label(s) {unknown[:5]!r} are not among the "
                                               "classes")
    encoder = None
    if doc.get("encoding") is not None and version >= ENCODING_VERSION:
        encoder = _read_encoding(doc["encoding"], n_features)
    ensemble = ensemble_from_dict(doc["bins"], doc["model"],
                                  n_features if encoder is None else encoder.n_columns, version)
    if encoder is not None and not np.array_equal(ensemble.bin_mapper.categorical_,
                                                  encoder.column_categorical):
        raise _fail("encoding.features", "the features split by sets differ from "
                                         "bins.categorical")
    best, curves = _read_training(doc["training"])
    return ModelParts(estimator, params, loss, loss_spec, n_features, names, classes,
                      ensemble, curves, best, version, encoder)


def encode(doc: Dict[str, Any]) -> str:
    """A document as JSON text (floats as their shortest round-tripping ``repr``)."""
    return _encode(doc)


def parse(data: Any) -> ModelParts:
    """Read a model from JSON text or UTF-8 bytes (see :func:`document_parts`).

    Raises
    ------
    ModelFileError
        For anything that is not a valid model file.
    """
    return document_parts(_loads(_text(data)))


def _path(path: Any) -> str:
    """``path`` as a file-system path: a str, bytes or os.PathLike (an int would be read as
    a file descriptor by open())."""
    if isinstance(path, bool) or not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"path={path!r} is invalid; expected a file path (str or "
                        f"os.PathLike), got {type(path).__name__}")
    return os.fsdecode(os.fspath(path))


def write(path: Any, doc: Dict[str, Any]) -> None:
    """Write a document to ``path`` (atomically: a temporary file in the same folder is
    renamed over ``path``).

    Raises
    ------
    ModelFileError
        When the document cannot be encoded, or would not load back, or when ``path``
        exists and is not a regular file (a symlink, device, FIFO or folder). The document
        is validated as :func:`read` validates a file's before anything is written (JSON
        text reads back as the same plain data), and the text's size and counts as it is
        written, before the file replaces ``path``.
    TypeError
        When ``path`` is not a path (an int would be taken for a file descriptor).
    OSError
        When the file cannot be created.
    """
    path = _path(path)
    check_regular_target(path, "model file", ModelFileError)
    try:        # every file written loads back: validated as read() validates a file's
        document_parts(doc)
    except ModelFileError as exc:
        raise ModelFileError(f"cannot save the model: the file would not load back "
                             f"({exc})") from None
    write_atomically(path, lambda fh: _dump(doc, fh), "model file")


class _CountingFile:
    """A binary file that JSON text is written to, counting what :func:`_check_size` counts
    in it."""

    def __init__(self, fh: Any):
        self.fh, self.size, self.values, self.containers = fh, 0, 0, 0

    def write(self, text: str) -> None:
        self.fh.write(text.encode("ascii"))     # json escapes every other character
        self.size += len(text)
        containers = text.count("[") + text.count("{")
        self.containers += containers
        self.values += text.count(",") + containers


def _dump(doc: Dict[str, Any], fh: Any) -> None:
    """Write ``doc``'s JSON text (:func:`encode`'s, and a newline) to the binary file ``fh``,
    streamed: the text is never held whole in memory. A text beyond the reader's budgets
    (:func:`_check_size`) is refused once written, before the file replaces anything."""
    counted = _CountingFile(fh)
    try:
        json.dump(doc, counted, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"cannot write the model file: {exc}") from exc
    counted.write("\n")
    try:
        _check_counts(counted.size, counted.values, counted.containers)
    except ModelFileError as exc:
        raise ModelFileError(f"cannot save the model: the file would not load back "
                             f"({exc})") from None


def _read_bytes(fh: Any) -> bytes:
    """The bytes of an open file, at most ``MAX_FILE_BYTES + 1`` (more is refused by the size
    check). A regular file is read into a buffer of its size (a larger one is refused
    unread); a buffer of the limit's size, 1 GiB, is allocated only for a file without a
    size (a pipe, a device) or one that grew meanwhile."""
    info = os.fstat(fh.fileno())
    if not stat.S_ISREG(info.st_mode):
        return fh.read(MAX_FILE_BYTES + 1)
    _check_counts(info.st_size, 0, 0)
    data = fh.read(info.st_size + 1)
    if len(data) <= info.st_size:
        return data
    return data + fh.read(MAX_FILE_BYTES + 1 - len(data))


def read(path: Any) -> ModelParts:
    """Read and validate the model file at ``path``.

    Raises
    ------
    ModelFileError
        When the file cannot be read or is not a valid model file (see
        ``docs/model_files.md``).
    """
    path = _path(path)
    try:
        with open(path, "rb") as fh:
            data = _read_bytes(fh)
    except OSError as exc:
        raise ModelFileError(f"cannot read model file {os.fspath(path)!r}: "
                             f"{exc.strerror or exc}") from exc
    text = _text(data)
    del data                    # the bytes, the text and the document are held in turn
    doc = _loads(text)
    del text
    return document_parts(doc)
