"""Model-file documents for tests: trees as JSON arrays (formats 1 to 4) and as the binary
blocks of format 5 on, bin borders as an array per feature (formats 1 to 5) and as the
binary blocks of format 6, converted both ways, so that a test can edit a tree's arrays or
the borders as lists and write them as any format.

The conversions are written here from the format's description (``docs/model_files.md``:
each field's type, little-endian, base64), not with the writer under test.
"""
import base64
import copy
from typing import Any, Dict, Iterator

import numpy as np

#: The type of each tree field's binary block (format 5), as ``docs/model_files.md`` lists
#: them.
FIELD_DTYPES = {"feature": "<i4", "bin": "<i4", "nan_right": "|u1", "left": "<i4",
                "right": "<i4", "gain": "<f8", "value": "<f8", "cat_sets": "<u4",
                "cover": "<f8"}


def decode(block: str, field: str) -> list:
    """A binary block of ``field`` as a JSON array (``cat_sets``: rows of 8 words)."""
    values = np.frombuffer(base64.b64decode(block), dtype=FIELD_DTYPES[field]).tolist()
    if field == "cat_sets":
        return [values[i:i + 8] for i in range(0, len(values), 8)]
    return values


def encode(values: Any, field: str) -> str:
    """A JSON array of ``field`` (``cat_sets``: rows of 8 words) as a binary block."""
    flat = np.asarray(values, dtype=np.float64 if field in ("gain", "value", "cover")
                      else np.int64).ravel()
    data = flat.astype(FIELD_DTYPES[field])
    assert np.array_equal(data, flat, equal_nan=True), f"{values!r}: not {FIELD_DTYPES[field]}"
    return base64.b64encode(data.tobytes()).decode("ascii")


#: The types of the border blocks (format 6).
BORDER_DTYPES = {"offsets": "<i4", "borders": "<f8"}


def border_lists(doc: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of a format 6 document (sharing all but ``bins``) whose borders are an array
    per feature, without ``offsets`` (its ``format_version`` left as it is)."""
    bins = dict(doc["bins"])
    offsets = np.frombuffer(base64.b64decode(bins.pop("offsets")), BORDER_DTYPES["offsets"])
    values = np.frombuffer(base64.b64decode(bins["borders"]), BORDER_DTYPES["borders"])
    bins["borders"] = [values[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
    return {**doc, "bins": bins}


def border_blocks(doc: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of a document whose borders are an array per feature (sharing all but
    ``bins``), with the border blocks of format 6 instead (``format_version`` left as is).
    A document without ``bins.borders`` is returned as it is."""
    if not isinstance(doc.get("bins"), dict) or "borders" not in doc["bins"]:
        return doc
    bins = dict(doc["bins"])
    borders = bins.pop("borders")
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in borders])]).astype("<i4")
    values = np.array([v for b in borders for v in b], dtype=BORDER_DTYPES["borders"])
    head = {"max_bins": bins.pop("max_bins")} if "max_bins" in bins else {}  # (mutated out)
    bins = {**head, "offsets": base64.b64encode(offsets.tobytes()).decode("ascii"),
            "borders": base64.b64encode(values.tobytes()).decode("ascii"), **bins}
    return {**doc, "bins": bins}


def trees(doc: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
    """Every tree of a document (each output's tree of a multi-output term)."""
    for term in doc["model"]["trees"]:
        yield from term["outputs"] if "outputs" in term else [term]


def _new_trees(doc: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of ``doc`` that shares all but its trees."""
    return {**doc, "model": {**doc["model"], "trees": copy.deepcopy(doc["model"]["trees"])}}


def tree_lists(doc: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of a format 5 document (sharing all but its trees) whose trees' arrays are
    JSON arrays (its ``format_version`` left as it is)."""
    doc = _new_trees(doc)
    for tree in trees(doc):
        for field, block in tree.items():
            tree[field] = decode(block, field)
    return doc


def tree_blocks(doc: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of a document (sharing all but its trees) whose trees' arrays are JSON
    arrays, with binary blocks instead (its ``format_version`` left as it is)."""
    doc = _new_trees(doc)
    for tree in trees(doc):
        for field, values in tree.items():
            tree[field] = encode(values, field)
    return doc


def with_lists(doc: Dict[str, Any], version: int = 4) -> Dict[str, Any]:
    """A document of format 6 or later, as format ``version`` (1 to 5) writes its borders
    (an array per feature) and trees (JSON arrays up to version 4), without the fields of
    later versions (an ``encoding`` of None); the other fields are left as they are (and
    shared)."""
    assert doc["format_version"] >= 6 and 1 <= version <= 5
    assert doc.get("encoding") is None, "an encoded model has no earlier format"
    doc = {k: v for k, v in border_lists(doc).items() if k != "encoding"}
    return {**(tree_lists(doc) if version <= 4 else doc), "format_version": version}


def as_lists(doc: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of a document of format 6 or later whose trees' arrays and borders are JSON
    arrays, for a test to edit them (:func:`as_blocks` writes them back)."""
    return border_lists(tree_lists(doc))


def as_blocks(doc: Dict[str, Any]) -> Dict[str, Any]:
    """A document of :func:`as_lists` (edited) with binary blocks again, as formats 6 and
    later write it."""
    return border_blocks(tree_blocks(doc))
