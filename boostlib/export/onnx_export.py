"""``to_onnx``: a fitted boostlib model as an ONNX model that onnxruntime (or any runtime of
the ``ai.onnx.ml`` domain, opset 5) runs, and ``onnx_input``: rows as the graph reads them.

See ``docs/deploy.md`` for the graph's inputs and outputs and what is supported.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from .._version import __version__
from .._compat import NotFittedError
from ..booster.model import Model
from ..plugin.api import LINKS, Loss
from .onnx_encoding import encoding_arrays
from .onnx_graph import build_model
from .onnx_trees import linear_leaf_arrays, tree_ensemble_arrays

#: The export formats: ``to_onnx`` and ``boostlib export --format``.
FORMATS = ("onnx",)

_EXPECTED_MODEL = ("a fitted BoostClassifier, BoostRegressor or BoostRanker, or a "
                   "boostlib.Model")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def resolve_model(model: Any) -> Tuple[Model, Optional[np.ndarray]]:
    """The engine :class:`~boostlib.Model` of ``model`` and its class labels.

    Parameters
    ----------
    model : BoostClassifier, BoostRegressor, BoostRanker or Model
        A fitted estimator or an engine model.

    Returns
    -------
    (Model, ndarray or None)
        The engine model, and a classifier's ``classes_`` (None otherwise).

    Raises
    ------
    NotFittedError
        For an estimator that is not fitted.
    TypeError
        For anything else.
    """
    if isinstance(model, Model):
        return model, None
    if getattr(type(model), "_boostlib_estimator", False):    # (without importing them)
        fitted = getattr(model, "model_", None)
        if not isinstance(fitted, Model):
            raise NotFittedError(f"model: this {type(model).__name__} instance is not fitted "
                                 f"yet; call 'fit' first (expected {_EXPECTED_MODEL})")
        return fitted, getattr(model, "classes_", None)
    raise TypeError(f"model={_short(model)} is invalid; expected {_EXPECTED_MODEL}")


def loss_link(loss: Any) -> str:
    """The link of ``loss`` (one of ``boostlib.api.LINKS``): its declared
    ``link``, or ``"identity"`` for a loss that keeps the base ``transform``.

    Raises
    ------
    ValueError
        For a loss that overrides ``transform`` without declaring its link, or declares
        an unknown one; the message names the loss.
    """
    name = getattr(loss, "name", "") or type(loss).__name__
    where = f"loss {name!r} ({type(loss).__module__}.{type(loss).__qualname__})"
    link = getattr(loss, "link", None)
    if link is None:
        if getattr(type(loss), "transform", None) is Loss.transform:
            return "identity"
        raise ValueError(f"{where} does not declare its link, so its transform cannot be "
                         f"exported; expected the loss class to set link to one of "
                         f"{list(LINKS)} (see boostlib.api.Loss), or export the raw scores "
                         "with to_onnx(model, raw=True)")
    if not isinstance(link, str) or link not in LINKS:
        raise ValueError(f"{where}: link={link!r} is invalid; expected one of {list(LINKS)}")
    return link


def _check_dtype(dtype: Any) -> np.dtype:
    dt = None
    if isinstance(dtype, (str, type, np.dtype)):
        try:
            dt = np.dtype(dtype)
        except TypeError:
            dt = None
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype={dtype!r} is invalid; expected 'float32' or 'float64'")
    return dt


def _task(model: Model, link: str) -> str:
    loss, k = model.loss, model.n_outputs
    if link == "softmax" and k == 1:
        raise ValueError(f"loss {model.loss_spec.get('name')!r}: link 'softmax' needs several "
                         "outputs, the model has one")
    return "classification" if loss.is_classification or loss.is_multiclass else "regression"


def _input_categorical(model: Model) -> np.ndarray:
    """bool (n_features,): the categorical features of the model's input (those of the
    encoder when the trees read encoded columns)."""
    encoder = getattr(model, "encoder", None)
    if encoder is not None:
        return encoder.categorical
    return model.ensemble.bin_mapper.categorical_


def _metadata(model: Model) -> Dict[str, Any]:
    names = model.feature_names
    encoder = getattr(model, "encoder", None)
    return {"feature_names": None if names is None else [str(n) for n in names],
            "categorical_features": np.flatnonzero(_input_categorical(model)).tolist(),
            "categorical_encoding": None if encoder is None else list(encoder.kinds),
            "loss": model.loss_spec.get("name"),
            "n_outputs": model.n_outputs}


def _doc(model: Model, task: str, raw: bool, dtype: np.dtype) -> str:
    cats = np.flatnonzero(_input_categorical(model)).tolist()
    kind = dtype.name
    text = (f"boostlib model: {model.n_trees} terms, {model.n_outputs} output(s), loss "
            f"{model.loss_spec.get('name')!r}. Input X: {kind} (N, {model.n_features}), NaN "
            "for missing values")
    if cats:
        text += (f"; categorical features {cats} hold the integer category codes boostlib "
                 "encodes them with (boostlib.export.onnx_input)")
        if getattr(model, "encoder", None) is not None:
            text += (", which the graph encodes as the model does (categorical_encoding="
                     f"{model.params.get('categorical_encoding')!r})")
    if raw:
        return text + ". Output raw_score: the raw scores."
    if task == "regression":
        return text + ". Output prediction: the model's predict()."
    return text + (". Outputs label (predict()) and probabilities (predict_proba(), one "
                   "column per class).")


def to_onnx(model: Any, *, dtype: Any = "float32", raw: bool = False,
            name: Optional[str] = None) -> Any:
    """A fitted boostlib model as an ONNX model (``ai.onnx.ml`` ``TreeEnsemble``).

    Needs the optional dependency onnx (``pip install "boostlib[onnx]"``); running the
    model needs a runtime such as onnxruntime.

    Parameters
    ----------
    model : BoostClassifier, BoostRegressor, BoostRanker or Model
        A fitted estimator, or an engine model (:func:`boostlib.train`,
        :meth:`boostlib.Model.load`).
    dtype : {"float32", "float64"}, default "float32"
        The type of the input ``X`` and of the whole computation. ``"float32"`` (what most
        runtimes and accelerators run): for every float32 input, each split sends the row
        where boostlib sends the same values (thresholds are the largest float32 at or
        below boostlib's float64 borders); leaf values and sums are float32, so outputs
        agree with boostlib's to about 1e-6 relative. ``"float64"``: boostlib's borders and
        leaf values as they are, for float64 inputs.
    raw : bool, default False
        Output the raw scores alone (``raw_score``, as ``decision_function`` or
        ``predict(raw=True)``), e.g. for a plugin loss whose transform cannot be exported.
    name : str, optional
        The graph's name (default ``"boostlib_<EstimatorClass>"``).

    Returns
    -------
    onnx.ModelProto
        One input ``X`` of shape (N, n_features): numeric features as values, NaN for
        missing, categorical features as their integer category codes (see
        :func:`onnx_input`), as ``predict`` takes them. For a model trained with a
        ``categorical_encoding`` other than ``"sets"``, the graph encodes them as boostlib
        does before its trees read them (one-hot columns, target statistics; see
        :mod:`boostlib.export.onnx_encoding`). Outputs: ``prediction`` (N,) for regressors
        and rankers (the loss's response: ``exp`` for log links, the raw score otherwise);
        ``label`` (N,) and ``probabilities`` (N, n_classes) for classifiers (the labels are
        ``classes_``, or class indices for an engine model); ``raw_score`` alone with
        ``raw=True``. Shape (N, K) instead of (N,) for a regression loss with K > 1
        outputs.

    Raises
    ------
    ImportError
        When onnx is not installed.
    NotFittedError
        For an estimator that is not fitted.
    TypeError
        When ``model`` is not a boostlib model.
    ValueError
        For an invalid ``dtype``, ``raw`` or ``name``, or a loss whose link cannot be
        exported (a plugin loss overriding ``transform`` without declaring ``link``).
        Models trained with any ``categorical_encoding`` (``"sets"``, ``"onehot"``,
        ``"target_stats"``, ``"auto"``) export.

    """
    engine, classes = resolve_model(model)
    dt = _check_dtype(dtype)
    if not isinstance(raw, (bool, np.bool_)):
        raise ValueError(f"raw={raw!r} is invalid; expected True or False")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ValueError(f"name={name!r} is invalid; expected a non-empty str or None")
    link = "identity" if raw else loss_link(engine.loss)
    task = _task(engine, link)
    arrays = tree_ensemble_arrays(engine.ensemble, dt)
    encoding = encoding_arrays(getattr(engine, "encoder", None), engine.ensemble.bin_mapper,
                               dt)
    bias = np.atleast_1d(np.asarray(engine.ensemble.bias, dtype=np.float64))
    return build_model(arrays, bias, engine.n_features, link=link, task=task,
                       classes=classes, raw=bool(raw),
                       name=name or f"boostlib_{type(model).__name__}",
                       doc=_doc(engine, task, bool(raw), dt), metadata=_metadata(engine),
                       producer_version=__version__,
                       linear=linear_leaf_arrays(engine.ensemble, dt), encoding=encoding)


def onnx_input(model: Any, X: Any, *, dtype: Any = "float32") -> np.ndarray:
    """``X`` as the input of the model's ONNX graph: a dense ``dtype`` matrix.

    Numeric columns become ``dtype`` values (NaN stays missing). Categorical columns become
    the integer category codes boostlib encodes them with at prediction time: labels
    (pandas ``category``/text columns) are coded against the levels the model was trained
    on, so a label unseen in training is NaN (missing); a numeric array's categorical
    columns already hold codes and are kept. In the graph, as in boostlib, a code without a
    bin of its own (unseen in training, or rare ones sharing the "other" bin) goes where
    that bin, or the missing bin, goes. For a model trained with a ``categorical_encoding``
    other than ``"sets"`` the rows are the same (the original features, not the encoded
    columns): the graph encodes them itself.

    Parameters
    ----------
    model : BoostClassifier, BoostRegressor, BoostRanker or Model
        The fitted model the graph was exported from.
    X : array-like or DataFrame of shape (n_rows, n_features)
        Rows as ``predict`` takes them (a DataFrame's columns are checked against the
        estimator's ``feature_names_in_``).
    dtype : {"float32", "float64"}, default "float32"
        The ``dtype`` the graph was exported with.

    Returns
    -------
    ndarray of shape (n_rows, n_features)
        C-contiguous. With float32, numeric float64 values are rounded to float32, as the
        graph reads them (boostlib's own ``predict`` of this array gives the graph's
        results).
    """
    engine, _ = resolve_model(model)
    dt = _check_dtype(dtype)
    if isinstance(model, Model):
        arr = engine._X(X)
    else:
        arr = model._check_predict_X(model._state(), X)
    if hasattr(arr, "toarray"):            # scipy.sparse: the graph reads dense rows
        arr = arr.toarray()
    return np.ascontiguousarray(arr, dtype=dt)
