"""boostlib: gradient boosting with Cython kernels and pluggy plugins.

Public API::

    from boostlib import BoostClassifier, BoostRegressor, BoostRanker, load_model, available
    from boostlib import create
    from boostlib import Dataset, train, Model          # the engine layer

Layers (each imports only those listed before it): ``_kernels`` (Cython) -> ``plugin`` (hook
specs, registry, checks, testing kit) -> ``builtin`` (losses, samplers, update rules) and
``engine`` (binning, trees, grower, ensemble, boosting context and loop) -> ``io`` (model
files, tables) -> ``engine.model`` / ``engine.training`` (``Model``, ``train``) ->
``frontend`` (estimators, command line, plotting).
"""
from typing import Any

from .engine.dataset import Dataset
from .engine.model import Model
from .engine.training import train
from .frontend.estimators import BoostClassifier, BoostRanker, BoostRegressor
from .io.model_files import ModelFileError
from .plugin.hookspecs import hookimpl
from .plugin.registry import PluginError, available, create

__version__ = "0.1.0"

__all__ = ["BoostClassifier", "BoostRegressor", "BoostRanker", "Dataset", "train", "Model", "load_model",
           "available", "create",
           "hookimpl", "PluginError", "ModelFileError", "__version__"]


def load_model(path: Any):
    """Read a model file written by ``save_model`` and return the fitted estimator.

    Parameters
    ----------
    path : str or os.PathLike
        A boostlib JSON model file.

    Returns
    -------
    BoostClassifier, BoostRegressor or BoostRanker
        The estimator, predicting bit-identically to the one that was saved.
    """
    from .frontend.estimator_files import load_estimator
    return load_estimator(path)
