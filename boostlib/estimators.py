"""scikit-learn style estimators: :class:`BoostClassifier` and :class:`BoostRegressor`."""
from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import registry
from ._compat import BaseEstimator, ClassifierMixin, NotFittedError, RegressorMixin, HAS_SKLEARN
from ._kernels._openmp import effective_n_threads
from ._random import seed_sequence, stream_rng
from ._validation import (check_choice, check_number, check_sample_weight, check_X, check_y,
                          feature_names)
from .binning import BinMapper
from .boosting import LEAF_ESTIMATIONS, BoostingContext, EvalSet, run
from .callbacks import Callback, CallbackLike, EarlyStopping, ProgressBar, as_callback
from .ensemble import Ensemble
from .tree import GROW_POLICIES, GrowParams, TreeGrower


class _BaseBoost(BaseEstimator):
    _default_loss = "mse"

    def __init__(self, *, n_estimators: int = 100, learning_rate: float = 0.1,
                 max_depth: int = 6, grow_policy: str = "symmetric", max_bins: int = 255,
                 l2_regularization: float = 1.0, min_samples_leaf: int = 1,
                 min_child_weight: float = 1e-3, leaf_estimation: str = "newton",
                 random_strength: float = 0.0, loss: Any = None,
                 loss_params: Optional[Dict[str, Any]] = None, sampler: Any = None,
                 subsample: float = 1.0, sampler_params: Optional[Dict[str, Any]] = None,
                 update: Any = "sgb", update_params: Optional[Dict[str, Any]] = None,
                 early_stopping_rounds: Optional[int] = None, random_state: Any = None,
                 n_jobs: Optional[int] = None, verbose: int = 0):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.grow_policy = grow_policy
        self.max_bins = max_bins
        self.l2_regularization = l2_regularization
        self.min_samples_leaf = min_samples_leaf
        self.min_child_weight = min_child_weight
        self.leaf_estimation = leaf_estimation
        self.random_strength = random_strength
        self.loss = loss
        self.loss_params = loss_params
        self.sampler = sampler
        self.subsample = subsample
        self.sampler_params = sampler_params
        self.update = update
        self.update_params = update_params
        self.early_stopping_rounds = early_stopping_rounds
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # -- scikit-learn tags ---------------------------------------------------------------------
    if HAS_SKLEARN:
        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            tags.input_tags.allow_nan = True
            return tags

    # -- validation ----------------------------------------------------------------------------
    def _check_params(self) -> None:
        check_number("n_estimators", self.n_estimators, 1, integer=True)
        check_number("learning_rate", self.learning_rate, 0.0, low_open=True)
        check_number("max_depth", self.max_depth, 1, 30, integer=True)
        check_choice("grow_policy", self.grow_policy, GROW_POLICIES)
        check_number("max_bins", self.max_bins, 2, 255, integer=True)
        check_number("l2_regularization", self.l2_regularization, 0.0)
        check_number("min_samples_leaf", self.min_samples_leaf, 1, integer=True)
        check_number("min_child_weight", self.min_child_weight, 0.0)
        if self.l2_regularization == 0 and self.min_child_weight == 0:
            raise ValueError("l2_regularization and min_child_weight cannot both be 0 (leaf "
                             "values -G/(H+l2) would divide by zero)")
        check_choice("leaf_estimation", self.leaf_estimation, LEAF_ESTIMATIONS)
        check_number("random_strength", self.random_strength, 0.0)
        check_number("subsample", self.subsample, 0.0, 1.0, low_open=True)
        if self.early_stopping_rounds is not None:
            check_number("early_stopping_rounds", self.early_stopping_rounds, 1, integer=True)
        check_number("verbose", self.verbose, 0, integer=True)
        for name in ("loss_params", "sampler_params", "update_params"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, dict):
                raise TypeError(f"{name}={value!r} is invalid; expected a dict or None")

    def _check_fitted(self) -> None:
        if not hasattr(self, "ensemble_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; "
                                 "call 'fit' first")

    def _check_predict_X(self, X: Any) -> np.ndarray:
        self._check_fitted()
        names = feature_names(X)
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is not None and names is not None and not np.array_equal(names, fitted):
            raise ValueError("The feature names should match those that were passed during "
                             f"fit: expected {list(fitted)}, got {list(names)}")
        if fitted is not None and names is None:
            warnings.warn(f"X does not have valid feature names, but {type(self).__name__} "
                          "was fitted with feature names", UserWarning, stacklevel=3)
        if fitted is None and names is not None:
            warnings.warn(f"X has feature names, but {type(self).__name__} was fitted without "
                          "feature names", UserWarning, stacklevel=3)
        X = check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        return X

    # -- fitting -------------------------------------------------------------------------------
    def _encode_y(self, y: Any, n_rows: int) -> np.ndarray:
        return check_y(y, n_rows)

    def _make_loss(self):
        return registry.create("loss", self._default_loss if self.loss is None else self.loss,
                               self.loss_params)

    def fit(self, X: Any, y: Any, sample_weight: Any = None,
            eval_set: Optional[Sequence[Tuple[Any, Any]]] = None,
            eval_sample_weight: Optional[Sequence[Any]] = None,
            callbacks: Optional[Sequence[CallbackLike]] = None):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric features; NaN marks a missing value.
        y : array-like of shape (n_samples,)
            Targets: numbers for a regressor, two class labels for a classifier.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative row weights (multiply gradients and hessians).
        eval_set : list of (X, y) pairs, optional
            Validation sets; their loss is recorded in ``evals_result_`` every iteration and
            the last one drives ``early_stopping_rounds``.
        eval_sample_weight : list of array-like, optional
            Weights of the validation sets.
        callbacks : list, optional
            :class:`boostlib.callbacks.Callback` instances or callables ``fn(info)``, called
            after every iteration with an :class:`boostlib.callbacks.IterationInfo`; one
            returning True stops training. ``verbose=1`` adds a progress bar and
            ``early_stopping_rounds`` an :class:`boostlib.callbacks.EarlyStopping`.

        Returns
        -------
        self
        """
        self._check_params()
        callback_list = self._callbacks(callbacks)
        n_threads = effective_n_threads(self.n_jobs)
        names = feature_names(X)
        X = check_X(X)
        y_enc = self._encode_y(y, X.shape[0])
        w = check_sample_weight(sample_weight, X.shape[0])
        loss = self._make_loss()
        self._check_loss(loss)
        y_enc = loss.validate_target(y_enc)

        seed = seed_sequence(self.random_state)
        # Rows of weight 0 must not influence the model, borders included.
        mapper = BinMapper(self.max_bins).fit(X if w is None else X[w > 0],
                                              stream_rng(seed, "binning"), n_threads)
        X_binned = mapper.transform(X, n_threads)
        evals = self._make_evals(eval_set, eval_sample_weight, mapper, loss, n_threads)
        ensemble = Ensemble(mapper, self.grow_policy, loss.init_raw(y_enc, w))
        for ev in evals:
            ev.raw[:] = ensemble.bias
        params = GrowParams(self.max_depth, float(self.l2_regularization),
                            int(self.min_samples_leaf), float(self.min_child_weight))
        grower = TreeGrower(X_binned, np.ascontiguousarray(X_binned.T),
                            mapper.n_bins_nonmissing_, mapper.missing_bin, self.grow_policy,
                            params, n_threads)
        sampler = None
        if self.sampler is not None or self.subsample < 1.0:
            sampler = registry.create("sampler", self.sampler or "uniform",
                                      self.sampler_params, subsample=self.subsample)
        update = registry.create("update", self.update, self.update_params)
        ctx = BoostingContext(X_binned, y_enc, w, loss, sampler, grower, ensemble, seed,
                              self.learning_rate, self.n_estimators, self.leaf_estimation,
                              self.random_strength, evals, n_threads)
        self.evals_result_, self.best_iteration_ = run(ctx, update, callback_list)
        self.ensemble_ = ensemble
        self.loss_ = loss
        self.n_features_in_ = X.shape[1]
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return self

    def _callbacks(self, callbacks: Any) -> List[Callback]:
        """The callbacks of one fit: progress and early stopping from the parameters, then the
        user's."""
        if callbacks is None:
            callbacks = []
        elif isinstance(callbacks, (str, bytes)) or not isinstance(callbacks, (list, tuple)):
            raise TypeError(f"callbacks={callbacks!r} is invalid; expected a list of "
                            "Callback instances or callables")
        out: List[Callback] = []
        if self.verbose:
            out.append(ProgressBar())
        if self.early_stopping_rounds:
            out.append(EarlyStopping(int(self.early_stopping_rounds)))
        return out + [as_callback(cb, i) for i, cb in enumerate(callbacks)]

    def _check_loss(self, loss) -> None:
        if loss.is_classification:
            raise ValueError(f"loss={loss.name!r} is a classification loss; use "
                             "BoostClassifier or a regression loss")

    def _make_evals(self, eval_set, eval_sample_weight, mapper, loss, n_threads) -> List[EvalSet]:
        if eval_set is None:
            return []
        if isinstance(eval_set, tuple) and len(eval_set) == 2:
            eval_set = [eval_set]
        weights = list(eval_sample_weight) if eval_sample_weight is not None else \
            [None] * len(eval_set)
        if len(weights) != len(eval_set):
            raise ValueError("eval_sample_weight must have one entry per eval_set pair")
        evals = []
        for i, ((Xe, ye), we) in enumerate(zip(eval_set, weights)):
            Xe = check_X(Xe, f"eval_set[{i}] X")
            if Xe.shape[1] != mapper.n_features:
                raise ValueError(f"eval_set[{i}] has {Xe.shape[1]} features, expected "
                                 f"{mapper.n_features}")
            ye = loss.validate_target(self._encode_y(ye, Xe.shape[0]))
            evals.append(EvalSet(f"valid_{i}", mapper.transform(Xe, n_threads), ye,
                                 check_sample_weight(we, Xe.shape[0]), np.empty(Xe.shape[0])))
        return evals

    # -- prediction ------------------------------------------------------------------------------
    def _raw_predict(self, X: Any) -> np.ndarray:
        X = self._check_predict_X(X)
        return self.ensemble_.predict_raw(X, effective_n_threads(self.n_jobs))

    @property
    def n_trees_(self) -> int:
        """Number of trees in the model (AGBM adds two per iteration)."""
        self._check_fitted()
        return self.ensemble_.n_trees

    @property
    def feature_importances_(self) -> np.ndarray:
        """Total split gain per feature, normalised to sum to 1."""
        self._check_fitted()
        return self.ensemble_.feature_importances()

    # -- virtual ensembles -----------------------------------------------------------------------
    def _virtual_raw(self, X: Any, n_members: int) -> np.ndarray:
        """Raw scores of the ``n_members`` truncated models (see ``predict_virtual_ensembles``)."""
        X = self._check_predict_X(X)
        if isinstance(n_members, bool) or not isinstance(n_members, (int, np.integer)) \
                or n_members < 1:
            raise ValueError(f"n_members={n_members!r} is invalid; expected an int >= 1")
        end = self.ensemble_.n_trees
        period = end // (2 * int(n_members))
        if period == 0:
            raise ValueError(f"n_members={n_members} needs a model of at least "
                             f"{2 * n_members} trees; this one has {end}")
        ends = [end - (n_members - 1 - k) * period for k in range(n_members)]
        return self.ensemble_.predict_states_raw(X, ends, effective_n_threads(self.n_jobs))

    # -- model files ---------------------------------------------------------------------------
    def save_model(self, path: Any) -> None:
        """Write the fitted model to ``path`` as a versioned JSON model file.

        See ``docs/model_files.md`` for the format; :func:`boostlib.load_model` reads it back.
        """
        from .model_io import save_estimator
        self._check_fitted()
        save_estimator(self, path)


class BoostRegressor(RegressorMixin, _BaseBoost):
    """Gradient-boosted trees for regression (default loss ``"mse"``).

    Parameters
    ----------
    n_estimators : int, default 100
        Number of boosting iterations.
    learning_rate : float, default 0.1
        Step size (the coefficient of each SGB tree).
    max_depth : int, default 6
        Maximum tree depth.
    grow_policy : {"symmetric", "depthwise"}, default "symmetric"
        Oblivious trees (one split per level, CatBoost-style) or per-node splits.
    max_bins : int, default 255
        Bins per feature for non-missing values (2 to 255); NaN has its own bin.
    l2_regularization : float, default 1.0
        ``lambda`` in the gain ``G^2/(H+lambda)`` and in the leaves ``-G/(H+lambda)``.
    min_samples_leaf : int, default 1
        Minimum rows in a child of a split.
    min_child_weight : float, default 1e-3
        Minimum hessian sum in a child of a split.
    leaf_estimation : {"newton", "gradient"}, default "newton"
        ``"newton"``: leaves ``-G/(H+l2)``. ``"gradient"``: hessians replaced by the row
        weights, leaves ``-G/(W+l2)`` (the SGLB paper's leaf averaging).
    random_strength : float, default 0.0
        Gaussian noise on split scores: std ``random_strength * RMS(g) / (1 + e^{t lr}/N)``
        at iteration ``t`` (CatBoost's schedule, SGLB supplement B).
    loss : str or Loss, default "mse"
        A registered loss name (``"mse"``; ``"logloss"`` and ``"sla"`` for the classifier)
        or an instance of :class:`boostlib.api.Loss`.
    loss_params : dict, optional
        Keyword arguments of the loss, e.g. ``{"scale": 0.1}`` for ``"sla"``.
    sampler : str or Sampler, optional
        Row sampler: ``"uniform"`` (Bernoulli, weight 1), ``"goss"`` (LightGBM's
        gradient-based one-side sampling), ``"mvs"`` (CatBoost's Minimal Variance
        Sampling), a registered plugin's name or an instance. With ``None`` and
        ``subsample < 1``, ``"uniform"`` is used. See ``docs/samplers.md``.
    subsample : float, default 1.0
        Fraction of rows each tree is fitted on, in (0, 1]; 1 means no sampling (the same
        model as ``sampler=None``). Ignored when ``sampler`` is an instance.
    sampler_params : dict, optional
        Keyword arguments of the sampler, e.g. ``{"leaf_values": "all"}`` (leaf values on
        every row, the sample choosing only the structure, as CatBoost does), GOSS's
        ``top_rate``, ``other_rate``, ``score`` and ``warmup``, MVS's ``mvs_reg``.
    update : str or UpdateRule, default "sgb"
        The update rule (what one iteration does): a registered name or an instance of
        :class:`boostlib.api.UpdateRule`.
    update_params : dict, optional
        Keyword arguments of the update rule.
    early_stopping_rounds : int, optional
        Stop when the last eval set's loss has not improved for this many iterations; the
        model is truncated to the best iteration.
    random_state : int, numpy Generator or RandomState, optional
        Seeds every random stream; the same value gives bit-identical models whatever
        ``n_jobs``.
    n_jobs : int, optional
        Threads for the kernels (None: all cores; negative counts back from all cores).
    verbose : int, default 0
        When > 0, show the progress of the fit on stderr with the current losses (a tqdm bar
        when tqdm is installed, otherwise a log line every tenth of the iterations).

    Attributes
    ----------
    ensemble_ : Ensemble
    evals_result_ : dict
    best_iteration_ : int
    n_trees_ : int
    feature_importances_ : ndarray
    n_features_in_ : int
    feature_names_in_ : ndarray (only when fitted on a DataFrame with string columns)
    """

    def predict(self, X: Any) -> np.ndarray:
        """Predicted values, shape (n_samples,)."""
        raw = self._raw_predict(X)
        return self.loss_.transform(raw)

    def predict_virtual_ensembles(self, X: Any, n_members: int = 10) -> np.ndarray:
        """Predictions of ``n_members`` models taken along the training chain.

        Member ``k`` is the model as it was after its first ``end - (K-1-k) * (end // 2K)``
        trees (``end`` trees in all, ``K = n_members``): truncations spaced over the second
        half of the chain, with the SGLB shrinkage applied after them undone, so each member
        is exactly the model training had at that point (CatBoost's virtual ensembles).
        Trained with ``update="sglb"`` (e.g. ``update_params={"posterior_sampling": True}``)
        the members are approximate samples from the posterior: their mean is a prediction
        and their variance the *knowledge* uncertainty (see ``docs/sglb.md``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        n_members : int, default 10
            Needs a model of at least ``2 * n_members`` trees.

        Returns
        -------
        ndarray of shape (n_samples, n_members)
        """
        return self.loss_.transform(self._virtual_raw(X, n_members))


class BoostClassifier(ClassifierMixin, _BaseBoost):
    """Gradient-boosted trees for binary classification (default loss ``"logloss"``).

    Parameters are those of :class:`BoostRegressor`; ``loss`` must be a classification loss
    (``"logloss"`` or ``"sla"``). Labels may be any two values; ``classes_[1]`` is the
    positive class.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    """

    _default_loss = "logloss"

    if HAS_SKLEARN:
        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            tags.classifier_tags.multi_class = False
            return tags

    def _encode_y(self, y: Any, n_rows: int) -> np.ndarray:
        y = check_y(y, n_rows, numeric=False)
        if y.dtype.kind == "f" and np.any(y != np.round(y)):
            raise ValueError("Unknown label type: continuous; BoostClassifier needs class "
                             "labels (use BoostRegressor for continuous targets)")
        classes = getattr(self, "_fitting_classes", None)
        if classes is None:
            classes = np.unique(y)
            if classes.size > 2:
                raise ValueError("Only binary classification is supported. The type of the "
                                 f"target is multiclass ({classes.size} classes: "
                                 f"{classes[:5].tolist()}...)")
            if classes.size < 2:
                raise ValueError(f"BoostClassifier needs two classes in y; got 1 class "
                                 f"({classes.tolist()})")
            self._fitting_classes = classes
        enc = np.searchsorted(classes, y)
        enc = np.clip(enc, 0, 1)
        if not np.all(classes[enc] == y):
            raise ValueError(f"y contains labels not seen in the training data; expected "
                             f"{classes.tolist()}")
        return enc.astype(np.float64)

    def fit(self, X: Any, y: Any, sample_weight: Any = None,
            eval_set: Optional[Sequence[Tuple[Any, Any]]] = None,
            eval_sample_weight: Optional[Sequence[Any]] = None,
            callbacks: Optional[Sequence[CallbackLike]] = None):
        self._fitting_classes = None
        try:
            super().fit(X, y, sample_weight, eval_set, eval_sample_weight, callbacks)
            self.classes_ = self._fitting_classes
        finally:
            del self._fitting_classes
        return self

    fit.__doc__ = _BaseBoost.fit.__doc__

    def _check_loss(self, loss) -> None:
        if not loss.is_classification:
            raise ValueError(f"loss={loss.name!r} is not a classification loss; "
                             "BoostClassifier needs one of those with is_classification=True "
                             "(e.g. 'logloss', 'sla')")

    def decision_function(self, X: Any) -> np.ndarray:
        """Raw scores (log-odds for ``logloss``), shape (n_samples,)."""
        return self._raw_predict(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities, shape (n_samples, 2), columns ordered as ``classes_``."""
        raw = self._raw_predict(X)
        p = self.loss_.transform(raw)
        return np.column_stack([1.0 - p, p])

    def predict_virtual_ensembles(self, X: Any, n_members: int = 10) -> np.ndarray:
        """Probability of ``classes_[1]`` under ``n_members`` models taken along the chain.

        See :meth:`BoostRegressor.predict_virtual_ensembles` for how the members are chosen.
        With ``p_k`` the members' probabilities, the total uncertainty is the entropy of
        their mean, the data uncertainty the mean of their entropies, and the knowledge
        uncertainty the difference (see ``docs/sglb.md``).

        Returns
        -------
        ndarray of shape (n_samples, n_members)
        """
        return self.loss_.transform(self._virtual_raw(X, n_members))

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels (``classes_[1]`` where the raw score is positive)."""
        positive = self._raw_predict(X) > 0
        return self.classes_[positive.astype(np.intp)]
