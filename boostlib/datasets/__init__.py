"""Small real datasets bundled with boostlib (for the demo, the docs and the tests).

``load_higgs`` returns LightGBM's example subset of the UCI HIGGS data: 7,000 training and
500 test rows, 28 numeric features, binary target (about 53% positive). See ``README.md`` in
this folder for provenance and licenses.
"""
from __future__ import annotations

import gzip
from importlib import resources
from typing import Tuple

import numpy as np

__all__ = ["load_higgs"]


def _load(name: str) -> np.ndarray:
    with resources.files(__name__).joinpath(name).open("rb") as raw:
        with gzip.open(raw, "rt") as fh:
            return np.loadtxt(fh, dtype=np.float64)


def load_higgs(split: str = "train") -> Tuple[np.ndarray, np.ndarray]:
    """Load the bundled HIGGS subset.

    Parameters
    ----------
    split : {"train", "test"}
        The 7,000-row training file or the 500-row test file.

    Returns
    -------
    X : ndarray of shape (n_rows, 28)
    y : ndarray of shape (n_rows,) with values 0.0 / 1.0
    """
    if split not in ("train", "test"):
        raise ValueError(f"split={split!r} is invalid; expected 'train' or 'test'")
    data = _load(f"higgs_{split}.tsv.gz")
    return np.ascontiguousarray(data[:, 1:]), np.ascontiguousarray(data[:, 0])
