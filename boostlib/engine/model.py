"""The trained model: ``raw(x) = bias + sum_k c_k tree_k(x)`` with its loss, predicting on
the response scale, saved to and loaded from model files."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from .._kernels._openmp import effective_n_threads
from ..plugin import checks
from ..io import model_files
from .ensemble import Ensemble
from .categorical import encode_like
from .validation import check_X


class Model:
    """A trained boosting model, as :func:`boostlib.train` returns it.

    Parameters
    ----------
    ensemble : Ensemble
        Trees, coefficients, bias and bin borders.
    loss : Loss
        The loss the model was trained with (maps raw scores to the response scale).
    loss_spec : dict
        ``{"name": registered name, "params": {...}}``: how a model file re-creates the loss.
    n_features : int
    feature_names : ndarray of str, optional
    params : dict, optional
        The training parameters (those of :func:`boostlib.train`).
    evals_result : dict, optional
        ``{set name: {metric: [value per iteration]}}``.
    best_iteration : int, optional

    Attributes
    ----------
    n_outputs : int
        Length of the raw score (1; the number of classes for ``multiclass``).
    n_trees : int
        Number of terms ``c_k tree_k``; with several outputs each term holds one tree per
        output.
    """

    def __init__(self, ensemble: Ensemble, loss: Any, loss_spec: Dict[str, Any],
                 n_features: int, feature_names: Optional[np.ndarray] = None,
                 params: Optional[Dict[str, Any]] = None,
                 evals_result: Optional[Dict[str, Dict[str, List[float]]]] = None,
                 best_iteration: Optional[int] = None):
        self.ensemble = ensemble
        self.loss = loss
        self.loss_spec = loss_spec
        self.n_features = int(n_features)
        self.feature_names = feature_names
        self.params = dict(params or {})
        self.evals_result = evals_result or {}
        self.best_iteration = best_iteration

    # -- shape -----------------------------------------------------------------------------
    @property
    def n_outputs(self) -> int:
        return self.ensemble.n_outputs

    @property
    def n_trees(self) -> int:
        return self.ensemble.n_trees

    def _threads(self, n_jobs: Optional[int]) -> int:
        return effective_n_threads(self.params.get("n_jobs") if n_jobs is None else n_jobs)

    def _X(self, X: Any) -> np.ndarray:
        """``X`` checked, with its categorical columns coded as in training."""
        mapper = self.ensemble.bin_mapper
        shape = getattr(X, "shape", None)
        n_cols = shape[1] if shape is not None and len(shape) == 2 else None
        if mapper.categorical_.any() and n_cols == self.n_features:
            X = encode_like(X, mapper.categorical_, mapper.levels_, check_X)
        else:
            X = check_X(X)
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, but the model expects "
                             f"{self.n_features}")
        return X

    # -- prediction --------------------------------------------------------------------------
    def predict(self, X: Any, *, raw: bool = False, n_jobs: Optional[int] = None) -> np.ndarray:
        """Predictions for the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
            NaN marks a missing value; float32 is read without a float64 copy.
        raw : bool, default False
            Raw scores instead of the response scale.
        n_jobs : int, optional
            Threads (default: the training parameter ``n_jobs``).

        Returns
        -------
        ndarray
            The loss's response: P(y = 1) for binary classification, shape (n_rows,); an
            (n_rows, K) matrix of class probabilities for ``multiclass``; the prediction for
            regression. With ``raw=True`` the raw scores, (n_rows,) or (n_rows, n_outputs).
        """
        scores = self.ensemble.predict_raw(self._X(X), self._threads(n_jobs))
        return scores if raw else checks.response(self.loss, scores)

    def virtual_ensemble_ends(self, n_members: int) -> List[int]:
        """The tree counts of the ``n_members`` truncated models of
        :meth:`predict_virtual_ensembles`."""
        if isinstance(n_members, bool) or not isinstance(n_members, (int, np.integer)) \
                or n_members < 1:
            raise ValueError(f"n_members={n_members!r} is invalid; expected an int >= 1")
        end = self.n_trees
        period = end // (2 * int(n_members))
        if period == 0:
            raise ValueError(f"n_members={n_members} needs a model of at least "
                             f"{2 * n_members} trees; this one has {end}")
        return [end - (n_members - 1 - k) * period for k in range(n_members)]

    def predict_virtual_ensembles(self, X: Any, n_members: int = 10, *, raw: bool = False,
                                  n_jobs: Optional[int] = None) -> np.ndarray:
        """Predictions of ``n_members`` models taken along the training chain.

        Member ``m`` is the model as it was after its first ``end - (M-1-m) * (end // 2M)``
        trees (``end`` trees in all, ``M = n_members``), with the SGLB shrinkage applied
        after them undone: truncations spaced over the second half of the chain
        (CatBoost's virtual ensembles; see ``docs/sglb.md``).

        Returns
        -------
        ndarray of shape (n_rows, n_members), or (n_rows, n_outputs, n_members) with several
        outputs (for ``multiclass``: each member's class probabilities).
        """
        X = self._X(X)
        ends = self.virtual_ensemble_ends(n_members)
        scores = self.ensemble.predict_states_raw(X, ends, self._threads(n_jobs))
        if raw:
            return scores
        if scores.ndim == 2:
            return checks.response(self.loss, scores)
        return np.stack([checks.response(self.loss, scores[..., m]) for m in range(n_members)],
                        axis=-1)

    def feature_importances(self) -> np.ndarray:
        """Total split gain per feature (all outputs), normalised to sum to 1."""
        return self.ensemble.feature_importances()

    # -- model files -------------------------------------------------------------------------
    def save(self, path: Any) -> None:
        """Write the model to ``path`` as a versioned JSON model file
        (``docs/model_files.md``); :meth:`load` reads it back bit-identically."""
        model_files.write(path, model_files.model_document(self))

    @classmethod
    def load(cls, path: Any) -> "Model":
        """Read a model file (any supported version, written by :meth:`save` or an
        estimator's ``save_model``).

        Raises
        ------
        boostlib.ModelFileError
            When the file is unreadable, corrupt, hostile, of an unsupported version or
            names a loss that is not installed.
        """
        parts = model_files.read(path)
        return cls.from_parts(parts)

    @classmethod
    def from_parts(cls, parts: "model_files.ModelParts") -> "Model":
        """The model of a validated model-file document."""
        return cls(parts.ensemble, parts.loss, parts.loss_spec, parts.n_features,
                   parts.feature_names, parts.params, parts.evals_result, parts.best_iteration)

    def __repr__(self) -> str:
        return (f"<boostlib.Model: {self.n_trees} trees, {self.n_outputs} output(s), "
                f"{self.n_features} features, loss {self.loss_spec.get('name')!r}>")
