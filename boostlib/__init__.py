"""boostlib: gradient boosting with Cython kernels and pluggy plugins.

Public API::

    from boostlib import BoostClassifier, BoostRegressor, available, create
"""
from .estimators import BoostClassifier, BoostRegressor
from .hookspecs import hookimpl
from .registry import PluginError, available, create

__version__ = "0.1.0"

__all__ = ["BoostClassifier", "BoostRegressor", "available", "create", "hookimpl",
           "PluginError", "__version__"]
