"""A worker's part of a distributed fit: what :func:`~boostlib.booster.training.train` takes
from the whole data set instead of from the worker's own rows."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..plugin.collective import Collective
from .binning import BinMapper


@dataclass(frozen=True)
class Shard:
    """This worker's place in a distributed fit (:mod:`boostlib.dask` builds it).

    Attributes
    ----------
    collective : Collective
        Sums across the fit's workers; its ``rank`` numbers this worker.
    mapper : BinMapper
        Bin borders computed on rows drawn across every worker's rows, as one machine would
        draw them from the concatenated data.
    bias : ndarray of float64, shape (n_outputs,)
        The loss's starting raw score on every worker's target (0 when the rows have
        offsets, which replace it).
    n_rows : int
        Training rows over every worker.
    """

    collective: Collective
    mapper: BinMapper
    bias: np.ndarray
    n_rows: int
