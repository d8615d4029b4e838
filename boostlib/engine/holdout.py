"""Rows held out of a fit for early stopping (the estimators' ``validation_fraction``):
a fraction of the rows, per class for classification, whole queries for ranking."""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np


def query_sizes_of(group: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The sizes of the queries of ``rows`` (whole queries, in order), of query sizes
    ``group``."""
    sizes = np.asarray(group, dtype=np.int64)
    query = np.repeat(np.arange(sizes.size), sizes)[rows]
    return np.bincount(query, minlength=sizes.size)[np.unique(query)]


def holdout(n_rows: int, fraction: float, rng: np.random.Generator,
            classes: Optional[np.ndarray] = None, group: Optional[np.ndarray] = None
            ) -> Tuple[np.ndarray, np.ndarray]:
    """``(fit_rows, eval_rows)``, sorted row indices, ``round(fraction * n)`` of them held
    out.

    Parameters
    ----------
    n_rows : int
    fraction : float
        In (0, 1).
    rng : numpy Generator
        Draws the held-out rows.
    classes : ndarray of int, optional
        Class indices: each class is held out in proportion (stratified), keeping at least
        one row of it to fit on.
    group : ndarray of int, optional
        Query sizes: whole queries are held out (at least one, and one kept).

    Raises
    ------
    ValueError
        When no row (or query) can be held out with one left to fit on.
    """
    if group is not None:
        n_queries = group.size
        k = min(max(1, int(round(fraction * n_queries))), n_queries - 1)
        if k < 1:
            raise ValueError(f"validation_fraction={fraction!r}: {n_queries} query cannot be "
                             "split into rows to fit on and rows to stop on; pass an eval_set")
        held = np.zeros(n_queries, dtype=bool)
        held[rng.choice(n_queries, k, replace=False)] = True
        row_held = np.repeat(held, group)
    else:
        row_held = np.zeros(n_rows, dtype=bool)
        strata = [np.arange(n_rows)] if classes is None else \
            [np.flatnonzero(classes == c) for c in np.unique(classes)]
        for rows in strata:
            k = min(int(round(fraction * rows.size)), rows.size - 1)
            if k > 0:
                row_held[rng.choice(rows, k, replace=False)] = True
        if not row_held.any():
            raise ValueError(f"validation_fraction={fraction!r} of {n_rows} rows holds out no "
                             "row; raise it, or pass an eval_set")
    return np.flatnonzero(~row_held), np.flatnonzero(row_held)
