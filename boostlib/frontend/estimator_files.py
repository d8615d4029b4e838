"""The estimators' model files: a model file (:mod:`boostlib.io.model_files`) that also names
the estimator class, its parameters and a classifier's labels."""
from __future__ import annotations

from typing import Any, Dict

from ..booster.model import Model
from ..io import model_files
from ..io.model_files import ModelFileError
from .estimators import BoostClassifier, BoostRanker, BoostRegressor


#: The estimator classes a model file can name.
CLASSES: Dict[str, type] = {"BoostClassifier": BoostClassifier,
                            "BoostRegressor": BoostRegressor, "BoostRanker": BoostRanker}


def estimator_to_dict(est: Any) -> Dict[str, Any]:
    """The model-file document of a fitted estimator (plain JSON data).

    Raises
    ------
    ModelFileError
        When part of the model cannot be written (an unregistered loss instance, class
        labels that are not booleans, numbers or strings), or ``est`` is not a
        BoostClassifier, BoostRegressor or BoostRanker.
    """
    if not isinstance(est, tuple(CLASSES.values())):
        raise ModelFileError(f"cannot save a {type(est).__name__}; expected BoostClassifier, "
                             "BoostRegressor or BoostRanker")
    return est._to_document()


def estimator_from_parts(parts: model_files.ModelParts) -> Any:
    """The fitted estimator of a validated model file."""
    if parts.estimator is None:
        raise ModelFileError("this model file holds an engine model (written by "
                             "boostlib.Model.save), not an estimator; read it with "
                             "boostlib.Model.load")
    cls = CLASSES[parts.estimator]
    est = cls(**parts.params)
    model = Model.from_parts(parts)
    model.params = {**est.get_params(deep=False)}
    return install_model(est, model, parts.classes)


def install_model(est: Any, model: Model, classes: Any = None) -> Any:
    """Make ``est`` (a BoostClassifier, BoostRegressor or BoostRanker) the fitted estimator
    of a trained :class:`~boostlib.Model` (and, for a classifier, of its labels ``classes``,
    in the order of the model's class indices), as loading a model file does; return it.
    Its predictions are then the model's (the command line predicts the out-of-fold rows of
    ``train --cv`` so)."""
    est._set_model(model, classes)
    return est


def estimator_from_dict(doc: Any) -> Any:
    """Validate a parsed model-file document and build the fitted estimator."""
    return estimator_from_parts(model_files.document_parts(doc))


def dumps(est: Any) -> str:
    """The model file of a fitted estimator as JSON text."""
    return model_files.encode(estimator_to_dict(est))


def loads(data: Any) -> Any:
    """The fitted estimator of a model file's JSON text or UTF-8 bytes."""
    return estimator_from_parts(model_files.parse(data))


def save_estimator(est: Any, path: Any) -> None:
    """Write a fitted estimator's model file to ``path`` (atomically)."""
    model_files.write(path, estimator_to_dict(est))


def load_estimator(path: Any) -> Any:
    """Read the model file at ``path`` and return the fitted estimator.

    Raises
    ------
    ModelFileError
        When the file cannot be read, is not a valid model file, or holds an engine model.
    """
    return estimator_from_parts(model_files.read(path))
