"""boostlib: gradient boosting with Cython kernels and pluggy plugins.

Public API::

    from boostlib import BoostClassifier, BoostRegressor, load_model, available, create
"""
from typing import Any

from .estimators import BoostClassifier, BoostRegressor
from .model_io import ModelFileError
from .hookspecs import hookimpl
from .registry import PluginError, available, create

__version__ = "0.1.0"

__all__ = ["BoostClassifier", "BoostRegressor", "load_model", "available", "create",
           "hookimpl", "PluginError", "ModelFileError", "__version__"]


def load_model(path: Any):
    """Read a model file written by ``save_model`` and return the fitted estimator.

    Parameters
    ----------
    path : str or os.PathLike
        A boostlib JSON model file.

    Returns
    -------
    BoostClassifier or BoostRegressor
        The estimator, predicting bit-identically to the one that was saved.
    """
    from .model_io import load_estimator
    return load_estimator(path)
