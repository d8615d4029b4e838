"""Distributed training on Dask (``pip install boostlib[dask]``).

:class:`DaskBoostClassifier` and :class:`DaskBoostRegressor` train on Dask arrays and
DataFrames across the workers of a ``distributed`` cluster: every worker keeps its
partitions in memory and runs the same boosting loop on them, and the histograms, leaf sums
and losses are summed across workers once per tree level (see ``docs/dask.md``).
"""
from ._requirements import check_dask

check_dask()

from ..plugin.collective import CollectiveError  # noqa: E402
from .estimators import DaskBoostClassifier, DaskBoostRegressor  # noqa: E402

__all__ = ["DaskBoostClassifier", "DaskBoostRegressor", "CollectiveError"]
