"""The trained model: ``raw(x) = bias + sum_k c_k tree_k(x)`` with its loss, predicting on
the response scale, saved to and loaded from model files."""
from __future__ import annotations

from functools import partial
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .._kernels._openmp import effective_n_threads
from .._messages import shown
from ..plugin import checks
from ..io import model_files
from ..engine.ensemble import Ensemble
from ..engine.categorical import encode_like
from ..engine.encoding import CategoricalEncoder
from ..engine.frames import Columns, as_frame
from ..engine.contributions import contributions
from ..engine.validation import (AT_FIT, check_columns, check_init_score, check_X,
                                 feature_names, offsets)


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
    n_iterations : int
        Boosting iterations the model went through, those of the models it continues
        included (after early stopping: up to the best iteration). Equal to ``n_trees``
        except for rules adding several terms per iteration (``agbm``), and for a model read
        from a file, which does not record it (then ``n_trees``). A continuation
        (``train(..., init_model=)``, ``warm_start``) numbers its iterations from here.
    random_streams : dict or None
        The state of the fit's random streams when it ended, so that a continuation draws
        what one longer fit would have drawn (kept in memory only; see
        ``docs/training_controls.md``).
    encoder : CategoricalEncoder or None
        How the categorical features become the columns the trees read
        (``categorical_encoding`` other than ``"sets"``; see ``docs/categorical.md``), or
        None when the trees read the features themselves.
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
        self.n_iterations = self.n_trees
        self.random_streams: Optional[Dict[str, Any]] = None
        self.encoder: Optional[CategoricalEncoder] = None

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
        """``X`` checked, its column names (if any) against the model's, with its categorical
        columns coded as in training; it may have no rows (predictions are empty then)."""
        X = as_frame(X)
        check_columns(self.feature_names, feature_names(X), AT_FIT, "at fit")
        mapper = self.ensemble.bin_mapper
        categorical, levels = mapper.categorical_, mapper.levels_
        if self.encoder is not None:
            categorical, levels = self.encoder.categorical, self.encoder.levels
        shape = getattr(X, "shape", None)
        n_cols = shape[1] if shape is not None and len(shape) == 2 else None
        check = partial(check_X, min_rows=0)
        if categorical.any() and n_cols == self.n_features:
            X = encode_like(X, categorical, levels, check)
        else:
            X = check(X)
        if isinstance(X, Columns):          # an Arrow table's columns: the walk reads rows
            X = X.to_array()
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, but the model expects "
                             f"{self.n_features}")
        return X

    def _columns(self, X: Any) -> np.ndarray:
        """The columns the trees read: ``X`` as :meth:`_X` codes it, encoded
        (``categorical_encoding``) when the model encodes its categorical features."""
        X = self._X(X)
        return X if self.encoder is None else self.encoder.transform(X)

    # -- prediction --------------------------------------------------------------------------
    def predict(self, X: Any, *, raw: bool = False,
                iteration_range: Optional[Tuple[int, int]] = None,
                n_jobs: Optional[int] = None, pred_contrib: bool = False,
                pred_interactions: bool = False, init_score: Any = None) -> np.ndarray:
        """Predictions for the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
            NaN marks a missing value; float32 is read without a float64 copy. A DataFrame's
            string column names must be the model's ``feature_names`` (when it has them), in
            their order; an array is taken by position. With no rows, the result is empty.
        raw : bool, default False
            Raw scores instead of the response scale.
        iteration_range : tuple of (int, int), optional
            ``(start, end)``: use only the iterations (terms) ``start <= t < end``, as
            LightGBM's and XGBoost's ``iteration_range``; ``0 <= start < end <= n_trees``.
            The bias is always included, and SGLB's shrinkage applied after iteration
            ``end`` undone: ``(0, end)`` is what :meth:`staged_predict` yields at step
            ``end - 1``, bit for bit, and ``(start, end)`` that without its first ``start``
            terms; ``(0, n_trees)`` is the whole model. For ``sgb`` (and ``sglb``)
            ``(0, end)`` is the model after ``end`` iterations; for the rules that rewrite
            earlier coefficients (``agbm``, ``agbmr``, ``vagbm``, ``dart``, ``rf``) it is the
            first ``end`` terms with their *final* coefficients (a forest's: ``1 / n_trees``
            each, not the forest of ``end`` trees). See :meth:`staged_predict`.
            Default: the whole model.
        n_jobs : int, optional
            Threads (default: the training parameter ``n_jobs``).
        pred_contrib : bool, default False
            Return the SHAP values of the raw score instead (exact path-dependent TreeSHAP,
            :mod:`boostlib.engine.contributions`): shape (n_rows, n_features + 1), the last
            column the expected raw score over the training rows, each row summing to its
            raw score; (n_rows, n_features + 1, n_outputs) with several outputs. ``raw`` does
            not apply.
        pred_interactions : bool, default False
            Return the SHAP interaction values of the raw score instead: shape (n_rows,
            n_features + 1, n_features + 1) (and an output axis last with several outputs);
            ``[:, i, j]`` (``i != j``) holds half the interaction of features ``i`` and
            ``j``, ``[:, i, i]`` feature ``i``'s main effect, ``[:, -1, -1]`` the expected
            raw score; row ``i`` sums to feature ``i``'s SHAP value.
        init_score : array-like of shape (n_rows,) or (n_rows, n_outputs), optional
            Offsets added to the raw scores, before the response (for a model trained with
            offsets, the rows' own: ``log(exposure)``, another model's raw scores). SHAP
            values explain the model's part only, so they do not take it.

        Returns
        -------
        ndarray
            The loss's response: P(y = 1) for binary classification, shape (n_rows,); an
            (n_rows, K) matrix of class probabilities for ``multiclass``; the prediction for
            regression. With ``raw=True`` the raw scores, (n_rows,) or (n_rows, n_outputs).
            With ``pred_contrib`` or ``pred_interactions``: as described there.

        Raises
        ------
        ValueError
            For columns named otherwise than the model's features (the message names those
            that differ), an ``iteration_range`` that is not such a pair, or both
            ``pred_contrib`` and ``pred_interactions``; a
            :class:`~boostlib.engine.contributions.MissingCovers` error for SHAP values of
            a model read from a file older than format 4.
        """
        if pred_contrib or pred_interactions:
            if init_score is not None:
                raise ValueError("init_score does not apply to pred_contrib or "
                                 "pred_interactions: SHAP values explain the model's raw "
                                 "score, whose sum they are, without the offsets")
            return self._contributions(X, bool(pred_interactions), iteration_range, n_jobs,
                                       both=bool(pred_contrib and pred_interactions))
        if iteration_range is None:
            scores = self.ensemble.predict_raw(self._columns(X), self._threads(n_jobs))
        else:
            start, end = self.check_iteration_range(iteration_range)
            scores = next(self.ensemble.truncations_raw(self._columns(X), [end],
                                                        self._threads(n_jobs), start))
        scores = self._offset(scores, init_score)
        return scores if raw else checks.response(self.loss, scores)

    def _offset(self, scores: np.ndarray, init_score: Any) -> np.ndarray:
        """Raw ``scores`` ((n_rows,) or (n_rows, n_outputs)) plus the offsets, if any."""
        if init_score is None:
            return scores
        offset = offsets(check_init_score(init_score, scores.shape[0]), self.n_outputs)
        return scores + offset.T.reshape(scores.shape)

    def _contributions(self, X: Any, interactions: bool,
                       iteration_range: Optional[Tuple[int, int]], n_jobs: Optional[int],
                       both: bool = False) -> np.ndarray:
        if both:
            raise ValueError("pred_contrib and pred_interactions are exclusive: pass one "
                             "(pred_interactions=True gives the interaction values)")
        start, end = 0, self.n_trees
        factor = 1.0
        if iteration_range is not None:
            start, end = self.check_iteration_range(iteration_range)
            factor = float(self.ensemble.truncation_factors([end])[0])
        values = contributions(self.ensemble, self._columns(X), self._threads(n_jobs),
                               interactions=interactions, start=start, end=end, factor=factor)
        if self.encoder is not None:        # each column's share goes to its feature
            values = self.encoder.fold(values, (1, 2) if interactions else (1,))
        return values

    def check_iteration_range(self, iteration_range: Any) -> Tuple[int, int]:
        """``iteration_range`` as ``(start, end)`` ints, checked against this model.

        Raises
        ------
        ValueError
            Unless it is a pair of ints with ``0 <= start < end <= n_trees``.
        """
        n = self.n_trees
        pair = isinstance(iteration_range, (tuple, list)) and len(iteration_range) == 2 \
            and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                    for v in iteration_range)
        if pair and 0 <= iteration_range[0] < iteration_range[1] <= n:
            return int(iteration_range[0]), int(iteration_range[1])
        expected = (f"a pair (start, end) of ints with 0 <= start < end <= {n} (the model's "
                    f"n_trees), or None for the whole model" if n else
                    "None: the model has no trees")
        raise ValueError(f"iteration_range={shown(iteration_range)} is invalid; "
                         f"expected {expected}")

    def staged_predict(self, X: Any, *, raw: bool = False, n_jobs: Optional[int] = None,
                       init_score: Any = None) -> Iterator[np.ndarray]:
        """Predictions after each boosting iteration, lazily (scikit-learn's ``staged_*``).

        Step ``k`` (0-based) is the prediction of the model after ``k + 1`` iterations,
        where an iteration is one term of the model: one tree, or with several outputs one
        group of trees (one tree per class, ``multiclass``'s iteration); there are
        ``n_trees`` steps, and the last is :meth:`predict`, bit for bit.

        * ``sgb`` (and any rule adding one term per iteration without touching the others):
          step ``k`` is exactly the model training had after ``k + 1`` iterations; after
          early stopping the model, and the steps, end at the best iteration.
        * ``sglb``: the same, with the shrinkage applied after iteration ``k`` undone (the
          model records its scale history, ``Ensemble.state_factors``): the model of
          iteration ``k`` with the shrink of that time, up to rounding (one division), as
          :meth:`predict_virtual_ensembles` reads its members.
        * ``agbm``, ``agbmr``, ``vagbm``: the rules rewrite every coefficient each iteration
          (``ctx.combine``), and ``agbm``/``agbmr`` add two terms per iteration (the model's
          tree and the momentum tree; one in the last iteration and after a restart). The
          earlier models are not recorded: step ``k`` is the final model's first ``k + 1``
          terms with their *final* coefficients, a partial sum of the final model, not the
          model training had at any iteration (only the last step is).

        * ``dart``, ``rf``: they rescale earlier trees (``ctx.set_coefficients``), so step
          ``k`` is likewise the first ``k + 1`` terms with their final coefficients (for a
          forest of ``K`` trees, ``bias + (1/K) sum_{j<=k} tree_j``, not the smaller forest).

        The same holds for any model whose coefficients were rewritten, or whose scale
        history was dropped because an earlier state lies beyond floating point (see
        ``MAX_STATE_FACTOR`` in ``boostlib.engine.ensemble``): its steps are prefixes
        with the final coefficients.

        ``X`` is checked and binned when this is called; each step then adds one term to
        running scores (O(n_rows) memory and work per step, as :meth:`predict` in all).

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
        raw : bool, default False
            Raw scores instead of the response scale.
        n_jobs : int, optional
            Threads (default: the training parameter ``n_jobs``).
        init_score : array-like of shape (n_rows,) or (n_rows, n_outputs), optional
            Offsets added to every step's raw scores, as in :meth:`predict`.

        Returns
        -------
        generator of ndarray
            One new array per iteration, shaped as :meth:`predict` returns.

        Raises
        ------
        ValueError
            When the model keeps a scale history in which some earlier state is not
            recoverable (beyond ``MAX_STATE_FACTOR``).
        """
        X = self._columns(X)
        if init_score is not None:
            check_init_score(init_score, X.shape[0])
        scores = self.ensemble.truncations_raw(X, range(1, self.n_trees + 1),
                                               self._threads(n_jobs))
        return (self._offset(s, init_score) if raw else
                checks.response(self.loss, self._offset(s, init_score)) for s in scores)

    def apply(self, X: Any, *, n_jobs: Optional[int] = None) -> np.ndarray:
        """The leaf each row reaches in each tree.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
        n_jobs : int, optional
            Threads (default: the training parameter ``n_jobs``).

        Returns
        -------
        ndarray of int32
            Shape (n_rows, n_trees), or (n_rows, n_trees, n_outputs) with several outputs
            (``[:, t, k]``: the tree of output ``k`` in term ``t``). The index of a leaf is
            its position in the tree's ``value`` array, so the raw score is
            ``bias + sum_t coef[t] * tree_t.value[leaf[:, t]]``. A symmetric (oblivious)
            tree of depth ``d`` numbers its ``2**d`` leaves ``sum_l right_l << l`` (bit
            ``l`` set when the row goes right at level ``l``), 0 to ``2**d - 1``; leaves
            that share a value (a node left unsplit by ``min_samples_leaf`` /
            ``min_child_weight``) keep distinct indices. A depthwise tree (and a leaf-wise
            ``lossguide`` one, stored the same way) numbers its nodes (0 the root, children
            after their parent): a leaf's index is its node id, so the indices lie in
            ``0 .. n_nodes - 1`` and skip the split nodes.
        """
        return self.ensemble.apply(self._columns(X), self._threads(n_jobs))

    def virtual_ensemble_ends(self, n_members: int) -> List[int]:
        """The tree counts of the ``n_members`` truncated models of
        :meth:`predict_virtual_ensembles`."""
        if isinstance(n_members, bool) or not isinstance(n_members, (int, np.integer)) \
                or n_members < 1:
            raise ValueError(f"n_members={shown(n_members)} is invalid; expected an int >= 1")
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
        X = self._columns(X)
        ends = self.virtual_ensemble_ends(n_members)
        scores = self.ensemble.predict_states_raw(X, ends, self._threads(n_jobs))
        if raw:
            return scores
        if scores.ndim == 2:
            return checks.response(self.loss, scores)
        return np.stack([checks.response(self.loss, scores[..., m]) for m in range(n_members)],
                        axis=-1)

    def feature_importance(self, importance_type: str = "gain") -> np.ndarray:
        """Importance per feature, over every output's trees.

        Parameters
        ----------
        importance_type : {"gain", "split", "total_gain", "cover"}, default "gain"
            ``"gain"``: total split gain, normalised to sum to 1; ``"total_gain"``: total
            split gain (LightGBM's ``gain``); ``"split"``: number of splits (LightGBM's
            ``split``); ``"cover"``: mean training rows reaching the splits. A symmetric
            tree's level counts as one split. See :mod:`boostlib.engine.importance`.

        Returns
        -------
        ndarray of shape (n_features,)
        """
        values = self.ensemble.feature_importances(importance_type)
        if self.encoder is not None:
            values = self.encoder.fold_importance(
                values, self.ensemble.feature_importances("split"), importance_type)
        return values

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
        model = cls(parts.ensemble, parts.loss, parts.loss_spec, parts.n_features,
                    parts.feature_names, parts.params, parts.evals_result, parts.best_iteration)
        model.encoder = parts.encoder
        return model

    def __repr__(self) -> str:
        return (f"<boostlib.Model: {self.n_trees} trees, {self.n_outputs} output(s), "
                f"{self.n_features} features, loss {self.loss_spec.get('name')!r}>")
