"""scikit-learn base classes when scikit-learn is installed, minimal stand-ins otherwise.

scikit-learn is an optional dependency: with it, the estimators are genuine scikit-learn
estimators (clone, pipelines, ``check_estimator``); without it they keep the same API.
"""
from __future__ import annotations

import inspect

import numpy as np

try:  # pragma: no cover - exercised in both CI configurations
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.exceptions import DataConversionWarning, NotFittedError

    HAS_SKLEARN = True
except ImportError:  # pragma: no cover
    HAS_SKLEARN = False

    class NotFittedError(ValueError, AttributeError):
        """Raised when an estimator is used before ``fit``."""

    class DataConversionWarning(UserWarning):
        """Raised when input data is converted (e.g. a column vector ``y`` is raveled)."""

    class BaseEstimator:
        """``get_params`` / ``set_params`` from the ``__init__`` signature."""

        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p.name for p in sig.parameters.values()
                          if p.name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(f"invalid parameter {key!r} for {type(self).__name__}; "
                                     f"valid parameters: {valid}")
                setattr(self, key, value)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class ClassifierMixin:
        """Accuracy as ``score``."""

        _estimator_type = "classifier"

        def score(self, X, y, sample_weight=None):
            return float(np.average(self.predict(X) == np.asarray(y), weights=sample_weight))

    class RegressorMixin:
        """Coefficient of determination as ``score``."""

        _estimator_type = "regressor"

        def score(self, X, y, sample_weight=None):
            y = np.asarray(y, dtype=np.float64)
            pred = self.predict(X)
            ss_res = np.average((y - pred) ** 2, weights=sample_weight)
            ss_tot = np.average((y - np.average(y, weights=sample_weight)) ** 2,
                                weights=sample_weight)
            return float(1.0 - ss_res / ss_tot) if ss_tot > 0 else 0.0

__all__ = ["BaseEstimator", "ClassifierMixin", "RegressorMixin", "NotFittedError",
           "DataConversionWarning", "HAS_SKLEARN"]
