"""Distributed training on Dask (``pip install boostlib[dask]``).

:class:`DaskBoostClassifier` and :class:`DaskBoostRegressor` train on Dask arrays and
DataFrames across the workers of a ``distributed`` cluster: every worker keeps its
partitions in memory and runs the same boosting loop on them, and the histograms, leaf sums
and losses are summed across workers once per tree level (see ``docs/dask.md``).
"""
try:
    import dask  # noqa: F401
    import distributed  # noqa: F401
except ImportError as exc:          # pragma: no cover - depends on the environment
    raise ImportError("boostlib.dask needs dask and distributed: pip install "
                      "'boostlib[dask]'") from exc

from ..plugin.collective import CollectiveError
from .estimators import DaskBoostClassifier, DaskBoostRegressor

__all__ = ["DaskBoostClassifier", "DaskBoostRegressor", "CollectiveError"]
