"""Plain functions as losses and metrics, where a plugin name is accepted.

* ``loss=fn``: ``fn(y_true, raw) -> (gradient, hessian)``, the custom objective of
  LightGBM's and XGBoost's scikit-learn interfaces (arrays of the raw scores' shape: (n,),
  or (n, K) for K outputs). Optional attributes of ``fn``: ``init_raw(y, sample_weight)``,
  the model's starting raw score (default 0, as LightGBM starts a custom objective), and
  ``loss(y_true, raw)``, its pointwise values (recorded in ``evals_result`` and usable by
  early stopping; without it the fit records no loss and early stopping needs an
  ``eval_metric``).
* ``eval_metric=fn``: ``fn(y_true, y_pred, sample_weight) -> float`` on the response (the
  probability of class 1, class probabilities, or the regression prediction), lower is
  better unless ``fn.higher_is_better`` (or scikit-learn's ``greater_is_better``) is True.

Both are wrapped into the plugin interfaces (:class:`FunctionLoss`,
:class:`FunctionMetric`), so the engine checks them as it checks plugins, naming the
function in its errors.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .api import Loss, Metric
from .links import sigmoid, softmax

#: The prefix of a wrapped function's name (``"function:my_objective"``).
PREFIX = "function:"


def function_name(fn: Callable[..., Any]) -> str:
    """``"function:<name>"`` of a callable (its ``__name__``, or its class's)."""
    return PREFIX + str(getattr(fn, "__name__", None) or type(fn).__name__)


def is_function(spec: Any) -> bool:
    """Whether ``spec`` is a plain callable to wrap (not a name, class or plugin instance)."""
    return callable(spec) and not isinstance(spec, (str, type, Loss, Metric))


class FunctionLoss(Loss):
    """A loss given by a function of ``(y_true, raw)`` returning ``(gradient, hessian)``.

    Parameters
    ----------
    fn : callable
        The derivatives; see the module docstring for its optional ``init_raw`` and
        ``loss`` attributes.
    n_outputs : int, default 1
        Length of the raw score (the number of classes for a multiclass classifier).
    link : {"identity", "logit", "softmax"}, default "identity"
        How raw scores become predictions (the classifier passes ``"logit"`` for two
        classes, ``"softmax"`` for more).
    """

    hessian_can_be_negative = False
    #: The links a function's loss may have.
    LINKS = ("identity", "logit", "softmax")

    def __init__(self, fn: Callable[..., Any], n_outputs: int = 1, link: str = "identity"):
        if link not in self.LINKS:
            raise ValueError(f"link={link!r} is invalid; expected one of {self.LINKS}")
        self.fn = fn
        self.name = function_name(fn)
        self.n_outputs = int(n_outputs)
        self.link = link
        self.is_classification = link in ("logit", "softmax")
        self.is_multiclass = link == "softmax"
        self.has_loss_values = callable(getattr(fn, "loss", None))

    def validate_target(self, y: np.ndarray) -> np.ndarray:
        y = super().validate_target(y)
        if self.is_classification and (np.any(y < 0) or np.any(y != np.floor(y))
                                       or (not self.is_multiclass and np.any(y > 1))):
            raise ValueError(f"loss {self.name!r}: y must hold class indices")
        return y

    def init_raw(self, y: np.ndarray, sample_weight: Optional[np.ndarray]) -> Any:
        start = getattr(self.fn, "init_raw", None)
        if start is None:
            return np.zeros(self.n_outputs) if self.n_outputs > 1 else 0.0
        return start(y, sample_weight)

    def gradient_hessian(self, y: np.ndarray, raw: np.ndarray, gradient: np.ndarray,
                         hessian: np.ndarray, n_threads: int = 1) -> Any:
        returned = self.fn(y, raw)
        if not (isinstance(returned, tuple) and len(returned) == 2):
            raise TypeError(f"returned {type(returned).__name__}; expected a (gradient, "
                            "hessian) pair of arrays")
        out = []
        for what, values in zip(("gradient", "hessian"), returned):
            arr = np.asarray(values, dtype=np.float64)
            if arr.size != gradient.size:
                raise ValueError(f"returned a {what} of shape {arr.shape}; expected "
                                 f"{gradient.shape}, one value per raw score")
            out.append(arr.reshape(gradient.shape))
        return tuple(out)

    def loss(self, y: np.ndarray, raw: np.ndarray) -> np.ndarray:
        values = getattr(self.fn, "loss", None)
        if values is None:
            raise TypeError(f"loss {self.name!r} has no loss values: give the function a "
                            "'loss(y_true, raw)' attribute, or pass an eval_metric")
        return np.asarray(values(y, raw), dtype=np.float64)

    def transform(self, raw: np.ndarray) -> np.ndarray:
        if self.link == "logit":
            return sigmoid(raw)
        if self.link == "softmax":
            return softmax(raw)
        return raw


class FunctionMetric(Metric):
    """A metric given by a function of ``(y_true, y_pred, sample_weight)``.

    Parameters
    ----------
    fn : callable
        Returns one float. Its direction: ``fn.higher_is_better``, else scikit-learn's
        ``fn.greater_is_better``, else lower is better.
    """

    reads = "response"

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.name = function_name(fn)
        better = getattr(fn, "higher_is_better", getattr(fn, "greater_is_better", False))
        self.higher_is_better = bool(better)

    def evaluate(self, y_true: np.ndarray, y_pred: np.ndarray,
                 sample_weight: Optional[np.ndarray]) -> float:
        return self.fn(y_true, y_pred, sample_weight)
