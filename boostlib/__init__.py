"""boostlib: gradient boosting with Cython kernels and pluggy plugins.

Public API::

    from boostlib import BoostClassifier, BoostRegressor, BoostRanker, load_model, available
    from boostlib import create
    from boostlib import Dataset, train, Model          # the engine layer

Layers (each imports only those listed before it; ``tests/test_layers.py`` checks it):
``_kernels`` (Cython) -> ``plugin`` (hook specs, registry, checks) -> ``builtin`` (losses,
samplers, update rules) and ``engine`` (binning, trees, grower, ensemble, boosting context and
loop) -> ``io`` (model files, atomic writes, tables) -> ``booster`` (``Model``, ``train``) ->
``explain``, ``export`` -> ``frontend`` (estimators, command line, plotting) and ``testing``
(the plugin conformance kit) -> ``dask``.
"""
from typing import Any

from ._version import __version__
from .engine.dataset import Dataset
from .booster.model import Model
from .booster.cv import CVResult, cv
from .booster.training import train
from .frontend.estimators import BoostClassifier, BoostRanker, BoostRegressor
from .io.model_files import ModelFileError
from .plugin.hookspecs import hookimpl
from .plugin.registry import PluginError, available, create

__all__ = ["BoostClassifier", "BoostRegressor", "BoostRanker", "Dataset", "train", "cv", "CVResult",
           "Model", "load_model",
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
