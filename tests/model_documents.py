"""Model-file documents for tests: trees as JSON arrays (formats 1 to 4) and as the binary
blocks of format 5, converted both ways, so that a test can edit a tree's arrays as lists
and write them as either format.

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
    """A format 5 document as format ``version`` (1 to 4) writes its trees: as JSON arrays;
    the other fields are left as they are (and shared)."""
    assert doc["format_version"] == 5
    return {**tree_lists(doc), "format_version": version}
