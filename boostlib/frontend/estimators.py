"""scikit-learn style estimators: :class:`BoostClassifier` and :class:`BoostRegressor`.

They validate and encode their inputs, then call :func:`boostlib.train`, and nothing else;
the trained :class:`boostlib.Model` is ``model_``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .._compat import BaseEstimator, ClassifierMixin, NotFittedError, RegressorMixin, HAS_SKLEARN
from .._messages import listing, shown
from ..engine.callbacks import CallbackLike
from ..engine.categorical import categorical_spec, is_missing
from ..engine.dataset import Dataset
from ..engine.ensemble import Ensemble
from ..engine.frames import NamedMatrix, as_frame
from ..engine.holdout import holdout, query_sizes_of
from ..engine.random_streams import seed_sequence, stream_rng
from ..engine.importance import check_importance_type
from ..booster.model import Model
from ..engine.params import Parameter, check_orphaned_params, parameters_of, resolve
from ..booster.training import train
from ..engine.validation import (AT_FIT, check_columns, check_group, check_init_score,
                                 check_rows, check_sample_weight, check_X, check_y,
                                 feature_names)
from ..io import model_files
from ..plugin import checks, registry
from ..plugin.callables import FunctionLoss, is_function
from ..engine.class_weights import class_row_weights
from ..builtin.survival import AFTLoss, CIndexMetric, CoxLoss
from .estimator_params import document, make_init, renamed


#: ``early_stopping="auto"`` stops early from this many training rows (scikit-learn's HGB).
AUTO_EARLY_STOPPING_ROWS = 10_000
#: Iterations without improvement before early stopping when only ``early_stopping`` is set
#: (scikit-learn's ``n_iter_no_change`` default) ...
DEFAULT_STOPPING_ROUNDS = 10
#: ... and with ``n_estimators=None`` (up to ``STOPPING_ROUNDS_CAP`` iterations): on the
#: eight data sets of ``docs/defaults.md`` with 10,000 rows or more, 50 gave up to 5% lower
#: test loss than 20 on six and at most 0.4% higher on two.
AUTO_STOPPING_ROUNDS = 50


def _rows(X: Any, rows: np.ndarray) -> Any:
    """The ``rows`` of a DataFrame, table, sparse matrix or array."""
    if hasattr(X, "iloc"):
        return X.iloc[rows]
    if isinstance(X, NamedMatrix):
        return X.take(rows)
    return X[rows]


def _init_scores(eval_init_score: Any, n_sets: int, offsets: bool) -> List[Any]:
    """One ``init_score`` per validation set, from ``eval_init_score`` (a list, one entry
    per set). Required when the training rows have offsets (``offsets``): without theirs,
    the validation scores would not compare with the training scores."""
    if eval_init_score is None:
        if offsets:
            raise ValueError("init_score is given but eval_init_score is not: pass the "
                             "offsets of every eval_set pair too (a list, one array each)")
        return [None] * n_sets
    if isinstance(eval_init_score, np.ndarray) or not isinstance(eval_init_score,
                                                                 (list, tuple)):
        raise TypeError("eval_init_score must be a list with one array of offsets per "
                        "eval_set pair")
    if len(eval_init_score) != n_sets:
        raise ValueError(f"eval_init_score has {len(eval_init_score)} entries; expected one "
                         f"per eval_set pair ({n_sets})")
    return list(eval_init_score)


def _n_columns(X: Any) -> Optional[int]:
    """The number of columns of a 2-D ``X`` (None when it cannot tell)."""
    shape = getattr(X, "shape", None)
    return int(shape[1]) if shape is not None and len(shape) == 2 else None


#: The parameters a ``warm_start`` fit may not change: they define the fitted model (its
#: loss, tree kind and bin borders). The others apply to the trees the fit adds.
_FIXED_WHEN_WARM = ("loss", "loss_params", "grow_policy", "max_bins", "min_samples_bin")


def _same(a: Any, b: Any) -> bool:
    """Whether two parameter values are the same (False when they cannot be compared)."""
    try:
        return bool(a is b or a == b)
    except Exception:  # noqa: BLE001 - e.g. arrays inside dicts
        return False


class TrainingInputs(NamedTuple):
    """What :meth:`BoostRegressor.training_inputs` gives: the arguments of
    :func:`boostlib.train` and :func:`boostlib.cv` that ``fit`` would pass."""

    #: The training parameters.
    params: Dict[str, Any]
    #: Every row, as ``fit`` codes, weights and groups them.
    train_set: Dataset
    #: A classifier's labels, in the order of the target's class indices (else None).
    classes: Optional[np.ndarray]


@dataclass(frozen=True)
class _Fitted:
    """What a fit gives and predictions read: the model (with its feature names, categories
    and loss) and a classifier's labels.

    A fit builds a new one and installs it at its end with one assignment, and each
    prediction reads it once: a prediction running while another thread refits uses the
    old fit or the new one, never parts of both.
    """

    model: Model
    classes: Optional[np.ndarray] = None


class _BaseBoost(BaseEstimator):
    #: Marks boostlib's estimators for :mod:`boostlib.export`, a layer below them, which
    #: recognises a fitted estimator by this attribute and its ``model_``.
    _boostlib_estimator = True

    #: The parameters this estimator takes, from the table in :mod:`boostlib.engine.params`
    #: (its signature and docstring follow them).
    parameter_table: Tuple[Parameter, ...] = parameters_of("train", "estimator")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" not in cls.__dict__:
            cls.__init__ = make_init(cls.parameter_table, cls.__name__)   # type: ignore[misc]
        if "fit" not in cls.__dict__:
            cls.fit = renamed(cls.fit, f"{cls.__name__}.fit")          # type: ignore[misc]
        cls.__doc__ = document(cls.__doc__, cls.parameter_table)

    _default_loss = "mse"

    # -- scikit-learn tags ---------------------------------------------------------------------
    if HAS_SKLEARN:
        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            tags.input_tags.allow_nan = True
            tags.input_tags.sparse = True      # scipy.sparse X: X.toarray(), not densified
            return tags

    # -- validation ----------------------------------------------------------------------------
    def _training_params(self) -> Dict[str, Any]:
        """The parameters of :func:`boostlib.train` (all but the estimators' own, such as
        ``categorical_features``, which belongs to the :class:`~boostlib.Dataset`)."""
        return {p.name: getattr(self, p.name) for p in self.parameter_table
                if p.scope == "train"}

    def _check_params(self) -> None:
        check_orphaned_params(resolve(self._training_params()))
        for p in self.parameter_table:
            if p.scope != "train" and p.check is not None:
                p.check(p.name, getattr(self, p.name))

    def _state(self) -> _Fitted:
        """The fitted state (read it once per call: a refit replaces it as a whole)."""
        fitted = self.__dict__.get("_fitted")
        if fitted is None:
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; "
                                 "call 'fit' first")
        return fitted

    def __sklearn_is_fitted__(self) -> bool:
        """Whether a fit has run (what scikit-learn's ``check_is_fitted`` asks)."""
        return "_fitted" in self.__dict__

    @property
    def model_(self) -> Model:
        """The trained model (what :func:`boostlib.train` returns)."""
        return self._state().model

    @property
    def evals_result_(self) -> Dict[str, Dict[str, List[float]]]:
        """The loss and metrics of every iteration, by data set (``model_.evals_result``)."""
        return self._state().model.evals_result

    @property
    def best_iteration_(self) -> Optional[int]:
        """The best iteration (``model_.best_iteration``)."""
        return self._state().model.best_iteration

    @property
    def n_features_in_(self) -> int:
        """The number of features seen in fit."""
        return self._state().model.n_features

    @property
    def feature_names_in_(self) -> np.ndarray:
        """The column names seen in fit (only when ``X`` was a DataFrame with string column
        names; otherwise the attribute is absent, as scikit-learn's)."""
        names = self._state().model.feature_names
        if names is None:
            raise AttributeError(f"{type(self).__name__} was fitted on X without string "
                                 "column names, so it has no feature_names_in_")
        return names

    def _check_predict_X(self, fitted: _Fitted, X: Any) -> np.ndarray:
        """``X`` checked against the fitted model ``fitted``, as its ``_X`` codes it."""
        model = fitted.model
        X = as_frame(X)
        names = feature_names(X)
        seen = model.feature_names
        check_columns(seen, names, AT_FIT, "at fit")
        if seen is not None and names is None:
            warnings.warn(f"X does not have valid feature names, but {type(self).__name__} "
                          "was fitted with feature names", UserWarning, stacklevel=3)
        if seen is None and names is not None:
            warnings.warn(f"X has feature names, but {type(self).__name__} was fitted without "
                          "feature names", UserWarning, stacklevel=3)
        n_cols = _n_columns(X)
        if n_cols is not None and n_cols != model.n_features:
            raise ValueError(f"X has {n_cols} features, but {type(self).__name__} is "
                             f"expecting {model.n_features} features as input")
        X = model._X(X)
        if X.shape[1] != model.n_features:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {model.n_features} features as input")
        return X

    # -- fitting -------------------------------------------------------------------------------
    def _encode_y(self, y: Any, n_rows: int) -> np.ndarray:
        return check_y(y, n_rows)

    def fit(self, X: Any, y: Any = None, sample_weight: Any = None,
            eval_set: Optional[Sequence[Tuple[Any, Any]]] = None,
            eval_sample_weight: Optional[Sequence[Any]] = None,
            callbacks: Optional[Sequence[CallbackLike]] = None, *, init_score: Any = None,
            eval_init_score: Optional[Sequence[Any]] = None):
        """Fit the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or Dataset
            Features; NaN marks a missing value. Categorical features: see
            ``categorical_features``. A :class:`boostlib.Dataset` (e.g. from
            :meth:`~boostlib.Dataset.from_batches`, for data larger than memory) brings its
            target, weights, offsets and categorical features: ``y``, ``sample_weight``
            and ``init_score`` are then not given, and ``categorical_features`` stays
            ``"auto"``.
        y : array-like of shape (n_samples,)
            Targets: numbers for a regressor, class labels (two or more) for a
            classifier. Required unless ``X`` is a Dataset.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative row weights (multiply gradients and hessians); a classifier's
            ``class_weight`` multiplies them.
        eval_set : list of (X, y) pairs or Datasets, optional
            Validation sets; their loss is recorded in ``evals_result_`` every iteration and
            the last one drives ``early_stopping_rounds``.
        eval_sample_weight : list of array-like, optional
            Weights of the validation sets.
        callbacks : list, optional
            :class:`boostlib.callbacks.Callback` instances or callables ``fn(info)``, called
            after every iteration with an :class:`boostlib.callbacks.IterationInfo`; one
            returning True stops training. ``verbose=1`` adds a progress bar and
            ``early_stopping_rounds`` an :class:`boostlib.callbacks.EarlyStopping`.
        init_score : array-like of shape (n_samples,) or (n_samples, n_outputs), optional
            Offsets of the raw scores (LightGBM's ``init_score``, XGBoost's
            ``base_margin``): training starts from them instead of the loss's constant
            start, and the model learns the rest. ``log(exposure)`` for a Poisson or Tweedie
            model of counts over an exposure; another model's raw scores to boost on from
            it. The model does not hold them: pass the rows' offsets to :meth:`predict` too.
            A classifier with more than two classes takes (n_samples, n_classes).
        eval_init_score : list of array-like, optional
            The offsets of each validation set (required for each when ``init_score`` is
            given, so that their scores are comparable).

        Returns
        -------
        self
        """
        return self._fit(X, y, sample_weight=sample_weight, eval_set=eval_set,
                         eval_sample_weight=eval_sample_weight, callbacks=callbacks,
                         init_score=init_score, eval_init_score=eval_init_score)

    def _fit(self, X: Any, y: Any, *, sample_weight: Any = None, eval_set: Any = None,
             eval_sample_weight: Any = None, callbacks: Any = None, group: Any = None,
             eval_group: Any = None, init_score: Any = None, eval_init_score: Any = None):
        """:meth:`fit`, with query groups for the training and validation sets."""
        self._check_params()
        init_model = self._warm_model()
        if init_model is not None and init_model.n_iterations == self.n_estimators:
            return self             # nothing to add (scikit-learn's GradientBoosting)
        if isinstance(X, Dataset):
            return self._fit_dataset(X, y, sample_weight=sample_weight, eval_set=eval_set,
                                     eval_sample_weight=eval_sample_weight,
                                     callbacks=callbacks, group=group,
                                     init_score=init_score, eval_group=eval_group,
                                     eval_init_score=eval_init_score, init_model=init_model)
        X, names, categorical, y_enc, row_weight, w = self._fit_inputs(X, y, sample_weight)
        params = self._training_params()
        rounds = self._stopping_rounds(y_enc.shape[0])
        if rounds is not None:
            params["early_stopping_rounds"] = rounds
            if eval_set is None:        # hold out validation_fraction of the rows
                fit_rows, held = self._holdout(y_enc, check_group(group, y_enc.shape[0]))
                eval_set = [(_rows(X, held), _rows(np.asarray(y), held))]
                eval_sample_weight = [None if row_weight is None else row_weight[held]]
                if group is not None:
                    eval_group = [query_sizes_of(group, held)]
                    group = query_sizes_of(group, fit_rows)
                if init_score is not None:
                    offsets = check_init_score(init_score, y_enc.shape[0])
                    eval_init_score, init_score = [offsets[held]], offsets[fit_rows]
                X, y_enc = _rows(X, fit_rows), y_enc[fit_rows]
                w = None if w is None else w[fit_rows]
        self._choose_loss(params, init_model)
        train_set = Dataset(X, y_enc, sample_weight=w, feature_names=names,
                            categorical_features=categorical, group=group,
                            init_score=init_score)
        valid = self._valid_sets(eval_set, eval_sample_weight, train_set, eval_group,
                                 eval_init_score)
        return self._train(params, train_set, valid, callbacks, init_model)

    def _holdout(self, y_enc: np.ndarray, group: Optional[np.ndarray]
                 ) -> Tuple[np.ndarray, np.ndarray]:
        """``(fit_rows, held)``: the rows early stopping holds out (``validation_fraction``
        of them, drawn from ``random_state``'s ``"validation"`` stream; by class for a
        classifier, whole queries with groups)."""
        return holdout(y_enc.shape[0], self.validation_fraction,
                       stream_rng(seed_sequence(self.random_state), "validation"),
                       classes=(y_enc if self._classes_of_fit() is not None and y_enc.ndim == 1
                                else None),
                       group=group)

    def _choose_loss(self, params: Dict[str, Any], init_model: Optional[Model]) -> None:
        """Put the loss of this fit (checked) and the iterations to run in ``params``."""
        params["loss"], params["loss_params"] = self._checked_loss()
        if init_model is not None:      # the iterations to add
            params["n_estimators"] = self.n_estimators - init_model.n_iterations

    def _train(self, params: Dict[str, Any], train_set: Dataset, valid: List[Dataset],
               callbacks: Any, init_model: Optional[Model]):
        """Train on ``train_set`` with ``params`` (:meth:`_choose_loss`) and keep the
        model."""
        model = train(params, train_set, valid_sets=valid, callbacks=callbacks or [],
                      init_model=init_model)
        # the model records the estimator's own parameters (its loss as the user gave it)
        model.params = {**model.params, "loss": self.loss, "loss_params": self.loss_params,
                        "n_estimators": self.n_estimators}
        self._set_model(model, self._classes_of_fit())
        return self

    def _fit_inputs(self, X: Any, y: Any, sample_weight: Any
                    ) -> Tuple[Any, Any, Any, np.ndarray, Optional[np.ndarray],
                               Optional[np.ndarray]]:
        """``X`` for the training Dataset, its feature names and categorical features, the
        encoded target, the user's row weights and the fit's row weights (a classifier's
        ``class_weight`` multiplied in)."""
        X = as_frame(X)
        names = feature_names(X)
        X, categorical = self._features(X)
        y_enc = self._encode_y(y, X.shape[0])
        row_weight = check_sample_weight(sample_weight, X.shape[0])
        return X, names, categorical, y_enc, row_weight, self._class_weights(y_enc, row_weight)

    def _checked_loss(self) -> Tuple[Any, Optional[Dict[str, Any]]]:
        """The loss of this fit and its parameters (:meth:`_loss_choice`), refused when it
        does not suit the estimator."""
        spec, loss_params = self._loss_choice()
        self._check_loss(registry.create("loss", spec, loss_params))
        return spec, loss_params

    def training_inputs(self, X: Any, y: Any, *, sample_weight: Any = None,
                        group: Any = None, init_score: Any = None) -> TrainingInputs:
        """The inputs of :func:`boostlib.train` and :func:`boostlib.cv` that :meth:`fit`
        would build from ``(X, y)``, with no row held out: to cross-validate this
        estimator's setting with :func:`boostlib.cv`, which holds out each fold in turn.

        Parameters
        ----------
        X, y, sample_weight, init_score
            As for :meth:`fit`.
        group : array-like of int, optional
            Query sizes (as for :meth:`BoostRanker.fit`).

        Returns
        -------
        TrainingInputs
            ``(params, train_set, classes)``: the training parameters (the loss as ``fit``
            chooses it, e.g. ``"multiclass"`` for three classes; ``early_stopping_rounds``
            set when the estimator's early stopping is on for ``len(y)`` rows, which
            :func:`boostlib.cv` then applies to the folds' mean), the
            :class:`~boostlib.Dataset` of every row (categorical features, ``class_weight``
            and query groups as ``fit`` has them) and a classifier's labels (the classes
            the target's indices stand for; None for other estimators). ``warm_start`` does
            not apply.

        Raises
        ------
        ValueError, TypeError
            As :meth:`fit` would, for bad parameters or data.
        """
        self._check_params()
        X, names, categorical, y_enc, _, w = self._fit_inputs(X, y, sample_weight)
        params = self._training_params()
        params["early_stopping_rounds"] = self._stopping_rounds(y_enc.shape[0])
        params["loss"], params["loss_params"] = self._checked_loss()
        train_set = Dataset(X, y_enc, sample_weight=w, feature_names=names,
                            categorical_features=categorical, group=group,
                            init_score=init_score)
        return TrainingInputs(params, train_set, self._classes_of_fit())

    def _fit_dataset(self, data: Dataset, y: Any, *, sample_weight: Any, eval_set: Any,
                     eval_sample_weight: Any, callbacks: Any, group: Any, init_score: Any,
                     eval_group: Any, eval_init_score: Any, init_model: Optional[Model]):
        """:meth:`fit` of a :class:`~boostlib.Dataset`, which holds the target, weights,
        groups, offsets and categorical features; the same model as ``fit`` of its rows."""
        given = [name for name, value in (("y", y), ("sample_weight", sample_weight),
                                          ("group", group), ("init_score", init_score))
                 if value is not None]
        if given:
            raise ValueError(f"{given[0]} is given with a Dataset X, which holds its own; "
                             f"expected fit(dataset) (build the Dataset with its {given[0]})")
        spec = self.categorical_features
        if not (spec is None or isinstance(spec, str) and spec == "auto"):
            raise ValueError(f"categorical_features={shown(spec)} is set on the estimator, but "
                             "X is a Dataset, which has its own; expected categorical_features="
                             "'auto' here, and the Dataset built with categorical_features=")
        if data.y is None:
            raise ValueError("X is a Dataset without a target; build it with its y (or "
                             "label= for Dataset.from_batches)")
        y_enc = self._encode_y(data.y, data.n_rows)
        row_weight = data.sample_weight
        train_set = data.with_target(y_enc, self._class_weights(y_enc, row_weight))
        params = self._training_params()
        rounds = self._stopping_rounds(y_enc.shape[0])
        if rounds is not None:
            params["early_stopping_rounds"] = rounds
            if eval_set is None:        # hold out validation_fraction of the rows
                if eval_sample_weight is not None or eval_group is not None \
                        or eval_init_score is not None:
                    raise ValueError("eval_sample_weight, eval_group and eval_init_score "
                                     "are given without eval_set")
                fit_rows, held = self._holdout(y_enc, data.group)
                eval_set = [data.subset(held).with_target(
                    y_enc[held], None if row_weight is None else row_weight[held])]
                train_set = train_set.subset(fit_rows)
        self._choose_loss(params, init_model)
        valid = self._valid_sets(eval_set, eval_sample_weight, train_set, eval_group,
                                 eval_init_score)
        return self._train(params, train_set, valid, callbacks, init_model)

    def _stopping_rounds(self, n_rows: int) -> Optional[int]:
        """The early stopping rounds of a fit of ``n_rows`` rows (None: no early stopping):
        ``early_stopping_rounds`` or ``n_iter_no_change``, else 10 when ``early_stopping``
        is on."""
        given = [v for v in (self.early_stopping_rounds, self.n_iter_no_change)
                 if v is not None]
        if len(given) == 2 and given[0] != given[1]:
            raise ValueError(f"early_stopping_rounds={given[0]!r} and n_iter_no_change="
                             f"{given[1]!r} differ; they are one parameter: give one")
        if given:
            return int(given[0])
        on = self.early_stopping is True or (self.early_stopping == "auto"
                                             and n_rows >= AUTO_EARLY_STOPPING_ROWS)
        if not on:
            return None
        return AUTO_STOPPING_ROUNDS if self.n_estimators is None else DEFAULT_STOPPING_ROUNDS

    def _continues(self) -> bool:
        """Whether :meth:`fit` continues the fitted model (``warm_start``)."""
        return isinstance(self.warm_start, (bool, np.bool_)) and bool(self.warm_start) \
            and self.__sklearn_is_fitted__()

    def _warm_model(self) -> Optional[Model]:
        """The model a ``warm_start`` fit continues (None: a new fit), checked against this
        fit's parameters."""
        if not self._continues():
            return None
        model = self.model_
        done = model.n_iterations
        if self.n_estimators is None:
            raise ValueError("n_estimators=None: a warm_start fit needs the number of "
                             "iterations the model should have in all; expected an int of "
                             f"at least its {done} iterations")
        if self.n_estimators < done:
            raise ValueError(f"n_estimators={self.n_estimators} must be at least the {done} "
                             "iterations of the fitted model when warm_start=True (set "
                             "warm_start=False to fit a new model)")
        for name in _FIXED_WHEN_WARM:
            if name in model.params and not _same(model.params[name], getattr(self, name)):
                raise ValueError(f"{name}={shown(getattr(self, name))} differs from the fitted "
                                 f"model's {name}={shown(model.params[name])}; warm_start=True "
                                 f"adds trees to that model, whose {name} cannot change: "
                                 "set it back, or warm_start=False to fit a new model")
        return model

    def _class_weights(self, y_enc: np.ndarray,
                       sample_weight: Optional[np.ndarray]) -> Optional[np.ndarray]:
        """The row weights of the fit (the classifier multiplies in ``class_weight``)."""
        return sample_weight

    def _features(self, X: Any) -> Tuple[Any, Any]:
        """``X`` for the training Dataset, and its categorical features: a frame with
        categorical columns is passed on as it is (the Dataset codes its labels); anything
        else is checked here (a plain numeric array, whose categorical columns hold codes)."""
        spec = self.categorical_features
        if not (spec is None or isinstance(spec, str) and spec == "auto"):
            spec = categorical_spec(spec)
        if hasattr(X, "columns") and (spec is None or spec == "auto" or len(spec)):
            check_rows(X.shape)                 # before y, whose classes it would empty
            return X, spec
        return check_X(X), spec

    def _set_model(self, model: Model, classes: Optional[np.ndarray] = None) -> None:
        """Install a trained model (and a classifier's labels), replacing the fitted state
        with one assignment."""
        self._fitted = _Fitted(model, classes)

    def _classes_of_fit(self) -> Optional[np.ndarray]:
        """The class labels of the fit under way (None: not a classifier)."""
        return None

    def _loss_choice(self) -> Tuple[Any, Optional[Dict[str, Any]]]:
        """The loss (name or instance) and its parameters for this fit."""
        return (self._default_loss if self.loss is None else self.loss), self.loss_params

    @property
    def ensemble_(self) -> Ensemble:
        """The trees, coefficients, bias and borders of ``model_``."""
        return self._state().model.ensemble

    @property
    def loss_(self) -> Any:
        """The fitted loss of ``model_``."""
        return self._state().model.loss

    def _check_loss(self, loss) -> None:
        if loss.is_classification:
            raise ValueError(f"loss={loss.name!r} is a classification loss; use "
                             "BoostClassifier or a regression loss")

    def _valid_sets(self, eval_set, eval_sample_weight, train_set: Dataset,
                    eval_group: Any = None, eval_init_score: Any = None) -> List[Dataset]:
        if eval_set is None:
            for name, value in (("eval_group", eval_group), ("eval_init_score", eval_init_score)):
                if value is not None:
                    raise ValueError(f"{name} is given without eval_set")
            return []
        if isinstance(eval_set, tuple) and len(eval_set) == 2 or isinstance(eval_set, Dataset):
            eval_set = [eval_set]
        eval_set = _pairs(eval_set)
        weights = list(eval_sample_weight) if eval_sample_weight is not None else \
            [None] * len(eval_set)
        if len(weights) != len(eval_set):
            raise ValueError(f"eval_sample_weight has {len(weights)} entries; expected one "
                             f"per eval_set pair ({len(eval_set)})")
        if eval_group is not None and (isinstance(eval_group, np.ndarray) or
                                       not isinstance(eval_group, (list, tuple))):
            raise TypeError("eval_group must be a list with one array of query sizes per "
                            "eval_set pair")
        groups = list(eval_group) if eval_group is not None else [None] * len(eval_set)
        if len(groups) != len(eval_set):
            raise ValueError(f"eval_group has {len(groups)} entries; expected one per "
                             f"eval_set pair ({len(eval_set)})")
        inits = _init_scores(eval_init_score, len(eval_set), train_set.init_score is not None)
        out = []
        for i, (pair, we, ge, ie) in enumerate(zip(eval_set, weights, groups, inits)):
            if isinstance(pair, Dataset):
                out.append(self._valid_dataset(pair, i, train_set, we, ge, ie))
                continue
            Xe, ye = pair
            Xe = as_frame(Xe, f"eval_set[{i}] X")
            check_columns(train_set.feature_names, feature_names(Xe), f"eval_set[{i}] X",
                          "in the training X")
            if not hasattr(Xe, "columns"):
                Xe = check_X(Xe, f"eval_set[{i}] X")
            n_cols = _n_columns(Xe)
            if n_cols != train_set.n_features:
                raise ValueError(f"eval_set[{i}] has {n_cols} features, expected "
                                 f"{train_set.n_features}")
            n_rows = len(Xe) if hasattr(Xe, "columns") else Xe.shape[0]   # sparse: no len
            try:
                ye = self._encode_y(ye, n_rows)
            except (ValueError, TypeError) as exc:
                raise type(exc)(f"eval_set[{i}]: {exc}") from None
            try:
                we = check_sample_weight(we, n_rows)
            except (ValueError, TypeError) as exc:
                raise type(exc)(f"eval_sample_weight[{i}]: {exc}") from None
            try:
                ie = check_init_score(ie, n_rows, f"eval_init_score[{i}]")
                out.append(Dataset(Xe, ye, sample_weight=we, reference=train_set, group=ge,
                                   init_score=ie))
            except ValueError as exc:
                if ge is None or "group" not in str(exc):
                    raise
                raise ValueError(f"eval_group[{i}]: {exc}") from None
        return out

    def _valid_dataset(self, data: Dataset, i: int, train_set: Dataset, weight: Any,
                       group: Any, init_score: Any) -> Dataset:
        """A validation set given as a Dataset (it holds its weights, groups and offsets),
        with its target encoded as the training target."""
        given = [name for name, value in (("eval_sample_weight", weight),
                                          ("eval_group", group),
                                          ("eval_init_score", init_score)) if value is not None]
        if given:
            raise ValueError(f"{given[0]}[{i}] is given for eval_set[{i}], a Dataset, which "
                             "holds its own; expected None there")
        if data.y is None:
            raise ValueError(f"eval_set[{i}] is a Dataset without a target")
        if data.n_features != train_set.n_features:
            raise ValueError(f"eval_set[{i}] has {data.n_features} features, expected "
                             f"{train_set.n_features}")
        check_columns(train_set.feature_names, data.feature_names, f"eval_set[{i}]",
                      "in the training X")
        try:
            ye = self._encode_y(data.y, data.n_rows)
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"eval_set[{i}]: {exc}") from None
        valid = data.with_target(ye, data.sample_weight)
        valid.reference = None          # binned with the training set's borders
        return valid

    # -- prediction ------------------------------------------------------------------------------
    def _raw_predict(self, fitted: _Fitted, X: Any,
                     iteration_range: Optional[Tuple[int, int]] = None,
                     init_score: Any = None) -> np.ndarray:
        X = self._check_predict_X(fitted, X)
        return fitted.model.predict(X, raw=True, iteration_range=iteration_range,
                                    n_jobs=self.n_jobs, init_score=init_score)

    def _explained(self, fitted: _Fitted, X: Any, iteration_range: Optional[Tuple[int, int]],
                   pred_contrib: bool, pred_interactions: bool,
                   init_score: Any = None) -> Optional[np.ndarray]:
        """SHAP values or interaction values when asked for (see
        :meth:`boostlib.Model.predict`), else None."""
        if not (pred_contrib or pred_interactions):
            return None
        X = self._check_predict_X(fitted, X)
        return fitted.model.predict(X, iteration_range=iteration_range, n_jobs=self.n_jobs,
                                    pred_contrib=pred_contrib,
                                    pred_interactions=pred_interactions,
                                    init_score=init_score)

    def _staged_raw(self, fitted: _Fitted, X: Any) -> Iterator[np.ndarray]:
        """The raw scores after each iteration (``X`` checked and binned now)."""
        X = self._check_predict_X(fitted, X)
        return fitted.model.staged_predict(X, raw=True, n_jobs=self.n_jobs)

    def staged_predict(self, X: Any) -> Iterator[np.ndarray]:
        """Predictions after each boosting iteration, as a generator.

        Step ``k`` (0-based) is what :meth:`predict` returns for the model after ``k + 1``
        iterations; the last step equals :meth:`predict` bit for bit, and there are
        ``n_trees_`` steps (one per term of the model: AGBM adds two terms per iteration).
        With ``update="sgb"`` step ``k`` is the model training had after ``k + 1``
        iterations (a fit with ``n_estimators=k + 1`` and the same ``random_state`` predicts
        the same); with ``"sglb"`` too, its later shrinkage undone (up to rounding); after
        early stopping the steps end at ``best_iteration_``; with the rules that rewrite
        coefficients (``"agbm"``, ``"agbmr"``, ``"vagbm"``, ``"dart"``, ``"rf"``), step ``k``
        is the first ``k + 1`` terms with their final coefficients (see
        :meth:`boostlib.Model.staged_predict`). ``X`` is checked when this is called; each
        step adds one term to running scores, O(n_samples) work and memory per step.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        generator of ndarray
            One array per iteration, shaped as :meth:`predict` returns.
        """
        fitted = self._state()
        return (checks.response(fitted.model.loss, raw) for raw in self._staged_raw(fitted, X))

    def apply(self, X: Any) -> np.ndarray:
        """The leaf each sample reaches in each tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of int32
            Shape ``(n_samples, n_trees_)``, or ``(n_samples, n_trees_, n_classes)`` for a
            multiclass model. A leaf's index is its position in the tree's ``value`` array:
            0 to ``2**depth - 1`` for symmetric trees (bit ``l`` set when the sample goes
            right at level ``l``), the leaf's node id for depthwise and lossguide trees (0 is
            the root; not every id is a leaf). See :meth:`boostlib.Model.apply`.
        """
        fitted = self._state()
        return fitted.model.apply(self._check_predict_X(fitted, X), n_jobs=self.n_jobs)

    @property
    def n_trees_(self) -> int:
        """Number of trees in the model (AGBM adds two per iteration; with K classes each
        counts once though it holds one tree per class)."""
        return self._state().model.n_trees

    @property
    def feature_importances_(self) -> np.ndarray:
        """Importance per feature, of the type ``importance_type`` names (by default the
        total split gain, normalised to sum to 1)."""
        check_importance_type("importance_type", self.importance_type)
        return self._state().model.feature_importance(self.importance_type)

    # -- virtual ensembles -----------------------------------------------------------------------
    def _virtual(self, X: Any, n_members: int, raw: bool = False) -> np.ndarray:
        """The members of ``predict_virtual_ensembles`` (see
        :meth:`boostlib.Model.virtual_ensemble_ends`)."""
        fitted = self._state()
        return fitted.model.predict_virtual_ensembles(self._check_predict_X(fitted, X),
                                                      n_members, raw=raw, n_jobs=self.n_jobs)

    # -- model files ---------------------------------------------------------------------------
    def save_model(self, path: Any) -> None:
        """Write the fitted model to ``path`` as a versioned JSON model file.

        See ``docs/model_files.md`` for the format; :func:`boostlib.load_model` reads it back.
        """
        model_files.write(path, self._to_document())

    def _to_document(self) -> Dict[str, Any]:
        """The model-file document of the fitted estimator (plain JSON data): its model, class
        name, parameters and a classifier's labels.

        Raises
        ------
        ModelFileError
            When part of the model cannot be written (an unregistered loss instance, class
            labels that are not booleans, numbers or strings, a class other than
            BoostClassifier, BoostRegressor or BoostRanker).
        """
        fitted = self._state()
        return model_files.model_document(fitted.model, type(self).__name__, fitted.classes,
                                          params=self.get_params(deep=False))


class BoostRegressor(RegressorMixin, _BaseBoost):
    """Gradient-boosted trees for regression (default loss ``"mse"``).

    Parameters
    ----------
    {parameters}

    Attributes
    ----------
    model_ : boostlib.Model
        The trained model (what :func:`boostlib.train` returns).
    ensemble_ : Ensemble
    evals_result_ : dict
    best_iteration_ : int
    n_trees_ : int
    feature_importances_ : ndarray
    n_features_in_ : int
    feature_names_in_ : ndarray (only when fitted on a DataFrame with string columns)
    """

    def _encode_y(self, y: Any, n_rows: int) -> np.ndarray:
        # several targets: (n_samples, n_targets), for loss="multi_mse"
        y = check_y(y, n_rows, targets=True)
        self._n_targets = 1 if y.ndim == 1 else y.shape[1]
        return y

    def _loss_choice(self) -> Tuple[Any, Optional[Dict[str, Any]]]:
        if self.loss is None and getattr(self, "_n_targets", 1) > 1:
            return "multi_mse", self.loss_params
        return super()._loss_choice()

    def predict(self, X: Any, *,
                iteration_range: Optional[Tuple[int, int]] = None,
                pred_contrib: bool = False, pred_interactions: bool = False,
                init_score: Any = None) -> np.ndarray:
        """Predicted values, shape (n_samples,).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        iteration_range : tuple of (int, int), optional
            ``(start, end)``: use only the iterations ``start <= t < end``, with
            ``0 <= start < end <= n_trees_`` (the bias always counts); ``(0, k + 1)`` gives
            step ``k`` of :meth:`staged_predict`. Default: the whole model. See
            :meth:`boostlib.Model.predict`.
        pred_contrib, pred_interactions : bool, default False
            Return the SHAP values (n_samples, n_features + 1) or SHAP interaction values
            (n_samples, n_features + 1, n_features + 1) of the raw score instead; see
            :meth:`boostlib.Model.predict` and ``docs/explain.md``.
        init_score : array-like of shape (n_samples,) or (n_samples, n_outputs), optional
            The rows' raw-score offsets, for a model fitted with ``init_score``: added to
            the raw score before the response (see :meth:`boostlib.Model.predict`).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        fitted = self._state()
        explained = self._explained(fitted, X, iteration_range, pred_contrib, pred_interactions,
                                    init_score)
        if explained is not None:
            return explained
        return checks.response(fitted.model.loss,
                               self._raw_predict(fitted, X, iteration_range, init_score))

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """R² of :meth:`predict` (scikit-learn's ``r2_score``); for a model of the survival
        losses ``cox`` and ``aft``, Harrell's concordance index of its raw scores instead
        (the ``cindex`` metric: signed times for ``cox``, lower and upper bounds for
        ``aft``; see ``docs/survival.md``), where R² of a hazard ratio against times would
        mean nothing.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        float
        """
        fitted = self._state()
        loss = fitted.model.loss
        if isinstance(loss, (CoxLoss, AFTLoss)):
            raw = self._raw_predict(fitted, X, None, None)
            y = check_y(y, raw.shape[0], targets=True)
            with checks.blame("loss", loss, "validate_target"):
                y = loss.validate_target(y)
            return CIndexMetric()(y, raw, sample_weight)
        return super().score(X, y, sample_weight=sample_weight)

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
        return self._virtual(X, n_members)


class BoostClassifier(ClassifierMixin, _BaseBoost):
    """Gradient-boosted trees for classification, binary or multiclass.

    Parameters are those of :class:`BoostRegressor`, plus ``class_weight``; ``loss`` must be
    a classification loss. By default it is ``"logloss"`` for two classes and
    ``"multiclass"`` (softmax cross-entropy, one raw score per class) for more. Labels are
    booleans, integers (within int64), floats or strings, of one kind (what a model file
    holds); ``classes_`` holds them in order (``classes_[1]`` is the positive class of a
    binary problem). More than 50 numeric classes with fewer than 10 rows each on average
    give a warning: such a ``y`` is usually a quantity, for :class:`BoostRegressor`.

    Parameters
    ----------
    {parameters}

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    """

    _default_loss = "logloss"
    parameter_table = parameters_of("train", "estimator", "classifier")

    def _class_weights(self, y_enc: np.ndarray,
                       sample_weight: Optional[np.ndarray]) -> Optional[np.ndarray]:
        if y_enc.ndim == 2 and self.class_weight is not None:
            raise ValueError(f"class_weight={self.class_weight!r} needs one class per row; a "
                             "multilabel y has several labels per row (weight the rows with "
                             "sample_weight)")
        rows = class_row_weights(self.class_weight, self._fitting_classes, y_enc)
        if rows is None:
            return sample_weight
        return rows if sample_weight is None else sample_weight * rows

    def _encode_y(self, y: Any, n_rows: int) -> np.ndarray:
        indicator = _label_indicator(y, n_rows)
        if indicator is not None:           # multilabel: a 0/1 column per label
            labels = np.arange(indicator.shape[1])
            fitted = getattr(self, "_fitting_classes", None)
            if fitted is not None and not (self._fitting_multilabel or self._continues()):
                raise ValueError("an eval_set's y is multilabel (a 0/1 column per label), "
                                 "the training y is not")
            if fitted is not None and not np.array_equal(fitted, labels):
                raise ValueError(f"y has {labels.size} label columns; the fitted model has "
                                 f"{fitted.size} classes")
            self._fitting_classes = labels
            self._y_columns = True
            return indicator
        _check_label_types(y)
        y = check_y(y, n_rows, numeric=False)
        if y.dtype == object and y.size:
            y = np.array(y.tolist())        # labels of one type: that type's dtype
        if y.dtype.kind == "f" and np.any(y != np.round(y)):
            raise ValueError("Unknown label type: continuous; BoostClassifier needs class "
                             "labels (use BoostRegressor for continuous targets)")
        classes = getattr(self, "_fitting_classes", None)
        if classes is None:
            try:
                classes = np.unique(y)
            except TypeError as exc:
                raise TypeError(f"y: class labels must be mutually comparable ({exc})") from None
            if classes.size < 2:
                raise ValueError(f"BoostClassifier needs at least two classes in y; got "
                                 f"{classes.size} class{'' if classes.size == 1 else 'es'} "
                                 f"({listing(classes)})")
            _warn_if_a_quantity(classes, n_rows)
            self._fitting_classes = classes
        enc = np.clip(np.searchsorted(classes, y), 0, classes.size - 1)
        if not np.all(classes[enc] == y):
            unseen = np.unique(y[classes[enc] != y])
            raise ValueError(f"y contains labels not seen in the training data "
                             f"({listing(unseen, 5)}); expected {listing(classes)}")
        return enc.astype(np.float64)

    def _loss_choice(self) -> Tuple[Any, Optional[Dict[str, Any]]]:
        n_classes = self._fitting_classes.size
        if self._fitting_multilabel:
            return ("multilabel" if self.loss is None else self.loss), self.loss_params
        if self.loss is None:
            return ("logloss" if n_classes == 2 else "multiclass"), self.loss_params
        if is_function(self.loss):      # a custom objective of the class raw scores
            return FunctionLoss(self.loss, n_outputs=1 if n_classes == 2 else n_classes,
                                link="logit" if n_classes == 2 else "softmax"), \
                self.loss_params
        return self.loss, self.loss_params

    def fit(self, X: Any, y: Any = None, sample_weight: Any = None,
            eval_set: Optional[Sequence[Tuple[Any, Any]]] = None,
            eval_sample_weight: Optional[Sequence[Any]] = None,
            callbacks: Optional[Sequence[CallbackLike]] = None, *, init_score: Any = None,
            eval_init_score: Optional[Sequence[Any]] = None):
        # a warm start encodes y with the fitted model's classes
        self._fitting_classes = self.classes_ if self._continues() else None
        self._y_columns = False         # (True once _encode_y reads a multilabel y)
        try:
            super().fit(X, y, sample_weight, eval_set, eval_sample_weight, callbacks,
                        init_score=init_score, eval_init_score=eval_init_score)
        finally:
            del self._fitting_classes, self._y_columns
        return self

    fit.__doc__ = _BaseBoost.fit.__doc__

    def training_inputs(self, X: Any, y: Any, *, sample_weight: Any = None,
                        group: Any = None, init_score: Any = None) -> TrainingInputs:
        self._fitting_classes = None
        self._y_columns = False         # (True once _encode_y reads a multilabel y)
        try:
            return super().training_inputs(X, y, sample_weight=sample_weight, group=group,
                                           init_score=init_score)
        finally:
            del self._fitting_classes, self._y_columns

    training_inputs.__doc__ = _BaseBoost.training_inputs.__doc__

    def _classes_of_fit(self) -> Optional[np.ndarray]:
        return self._fitting_classes

    @property
    def _fitting_multilabel(self) -> bool:
        """Whether the fit under way has a multilabel y (a 0/1 column per label; the Dask
        classifier, which fits without :meth:`fit`, takes none)."""
        return getattr(self, "_y_columns", False)

    @property
    def classes_(self) -> np.ndarray:
        """The class labels, sorted (``classes_[1]`` is the positive class of a binary
        problem)."""
        return self._state().classes

    def _check_loss(self, loss) -> None:
        if not loss.is_classification:
            raise ValueError(f"loss={loss.name!r} is not a classification loss; "
                             "BoostClassifier needs one of those with is_classification=True "
                             "(e.g. 'logloss', 'sla', 'multiclass')")
        n_classes = self._fitting_classes.size
        if self._fitting_multilabel != loss.target_columns:
            raise ValueError(f"loss={loss.name!r} does not fit a "
                             f"{'multilabel' if self._fitting_multilabel else 'one-label'} y; "
                             "a 0/1 column per label needs loss='multilabel' (or None)")
        if self._fitting_multilabel:
            return
        if n_classes > 2 and not loss.is_multiclass:
            raise ValueError(f"loss={loss.name!r} is a binary loss, but y has {n_classes} "
                             "classes; use a multiclass loss (loss=None or 'multiclass')")

    def decision_function(self, X: Any, *,
                          iteration_range: Optional[Tuple[int, int]] = None,
                          init_score: Any = None) -> np.ndarray:
        """Raw scores: shape (n_samples,) for two classes (log-odds of ``classes_[1]`` with
        ``logloss``), (n_samples, n_classes) for more.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        iteration_range : tuple of (int, int), optional
            ``(start, end)``: use only the iterations ``start <= t < end``, with
            ``0 <= start < end <= n_trees_`` (the bias always counts); ``(0, k + 1)`` gives
            step ``k`` of :meth:`staged_decision_function`. Default: the whole model.
        init_score : array-like of shape (n_samples,) or (n_samples, n_classes), optional
            The rows' raw-score offsets, for a model fitted with ``init_score``: added to
            the raw scores (see :meth:`boostlib.Model.predict`).

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        return self._raw_predict(self._state(), X, iteration_range, init_score)

    def predict_proba(self, X: Any, *,
                      iteration_range: Optional[Tuple[int, int]] = None,
                      init_score: Any = None) -> np.ndarray:
        """Class probabilities, shape (n_samples, n_classes), columns ordered as
        ``classes_``; each row sums to 1.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        iteration_range : tuple of (int, int), optional
            As for :meth:`decision_function`.
        init_score : array-like, optional
            As for :meth:`decision_function`.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        fitted = self._state()
        return self._proba(fitted, self._raw_predict(fitted, X, iteration_range, init_score))

    def _proba(self, fitted: _Fitted, raw: np.ndarray) -> np.ndarray:
        p = checks.response(fitted.model.loss, raw)
        return np.column_stack([1.0 - p, p]) if p.ndim == 1 else p

    def _labels(self, fitted: _Fitted, raw: np.ndarray) -> np.ndarray:
        if fitted.model.loss.target_columns:    # multilabel: each label's 0/1
            return (raw > 0).astype(np.int64)
        index = (raw > 0).astype(np.intp) if raw.ndim == 1 else np.argmax(raw, axis=1)
        return fitted.classes[index]

    def staged_decision_function(self, X: Any) -> Iterator[np.ndarray]:
        """Raw scores after each boosting iteration, as a generator.

        Steps as in :meth:`BoostRegressor.staged_predict`; the last equals
        :meth:`decision_function` bit for bit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        generator of ndarray
            One array per iteration, shaped as :meth:`decision_function` returns.
        """
        return self._staged_raw(self._state(), X)

    def staged_predict_proba(self, X: Any) -> Iterator[np.ndarray]:
        """Class probabilities after each boosting iteration, as a generator.

        Steps as in :meth:`BoostRegressor.staged_predict`; the last equals
        :meth:`predict_proba` bit for bit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        generator of ndarray
            One (n_samples, n_classes) array per iteration.
        """
        fitted = self._state()
        return (self._proba(fitted, raw) for raw in self._staged_raw(fitted, X))

    def staged_predict(self, X: Any) -> Iterator[np.ndarray]:
        """Predicted labels after each boosting iteration, as a generator.

        Steps as in :meth:`BoostRegressor.staged_predict`; the last equals :meth:`predict`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        generator of ndarray
            One (n_samples,) array of labels per iteration.
        """
        fitted = self._state()
        return (self._labels(fitted, raw) for raw in self._staged_raw(fitted, X))

    def predict_virtual_ensembles(self, X: Any, n_members: int = 10) -> np.ndarray:
        """Class probabilities under ``n_members`` models taken along the chain.

        See :meth:`BoostRegressor.predict_virtual_ensembles` for how the members are chosen.
        With ``p_k`` the members' probabilities, the total uncertainty is the entropy of
        their mean, the data uncertainty the mean of their entropies, and the knowledge
        uncertainty the difference (see ``docs/sglb.md``).

        Returns
        -------
        ndarray
            Two classes: the probability of ``classes_[1]``, shape (n_samples, n_members).
            More: shape (n_samples, n_classes, n_members).
        """
        return self._virtual(X, n_members)

    def predict(self, X: Any, *,
                iteration_range: Optional[Tuple[int, int]] = None,
                pred_contrib: bool = False, pred_interactions: bool = False,
                init_score: Any = None) -> np.ndarray:
        """Predicted labels: the class of the largest raw score (two classes:
        ``classes_[1]`` where the raw score is positive).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        iteration_range : tuple of (int, int), optional
            As for :meth:`decision_function`.
        pred_contrib, pred_interactions : bool, default False
            Return the SHAP values (n_samples, n_features + 1) or SHAP interaction values
            (n_samples, n_features + 1, n_features + 1) of the raw score (the
            :meth:`decision_function`) instead, with a class axis last for more than two
            classes; see :meth:`boostlib.Model.predict` and ``docs/explain.md``.
        init_score : array-like of shape (n_samples,) or (n_samples, n_outputs), optional
            The rows' raw-score offsets, for a model fitted with ``init_score``: added to
            the raw score before the response (see :meth:`boostlib.Model.predict`).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        fitted = self._state()
        explained = self._explained(fitted, X, iteration_range, pred_contrib, pred_interactions,
                                    init_score)
        if explained is not None:
            return explained
        return self._labels(fitted, self._raw_predict(fitted, X, iteration_range, init_score))


#: More numeric classes than this, with fewer than ``ROWS_PER_CLASS`` rows per class on
#: average, look like a quantity given to the classifier: it warns.
MANY_CLASSES = 50
ROWS_PER_CLASS = 10


def _warn_if_a_quantity(classes: np.ndarray, n_rows: int) -> None:
    """A UserWarning when numeric labels are so many, for the rows, that ``y`` is likely a
    quantity to predict (an integer-valued target), not class labels: the classifier would
    fit one tree per class in every iteration."""
    if classes.dtype.kind in "iuf" and classes.size > MANY_CLASSES \
            and n_rows < ROWS_PER_CLASS * classes.size:
        warnings.warn(f"y has {classes.size} classes in {n_rows} rows ({n_rows / classes.size:.1f} "
                      "per class), all numbers: BoostClassifier fits one tree per class in "
                      "every iteration; if y is a quantity to predict rather than labels, use "
                      "BoostRegressor", UserWarning, stacklevel=2)


#: The class labels a model file holds (``classes_`` is saved with the model).
_LABEL_TYPES = "booleans, integers, floats or strings"


def _label_indicator(y: Any, n_rows: int) -> Optional[np.ndarray]:
    """A multilabel ``y`` (a 2-D array of 0/1 or booleans, a column per label, at least two)
    as float64, or None for any other ``y``."""
    arr = np.asarray(y)
    if arr.ndim != 2 or arr.shape[1] < 2:
        return None
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"y: a 2-D y is a multilabel indicator, a 0/1 column per label; "
                         f"got dtype {arr.dtype}")
    values = arr.astype(np.float64)
    if not np.all((values == 0.0) | (values == 1.0)):
        bad = np.unique(values[(values != 0.0) & (values != 1.0)])[:5]
        raise ValueError(f"y: a 2-D y is a multilabel indicator, a 0/1 column per label; got "
                         f"values {bad.tolist()}")
    if arr.shape[0] != n_rows:
        raise ValueError(f"y has {arr.shape[0]} rows but X has {n_rows}")
    return np.ascontiguousarray(values)


def _check_label_types(y: Any) -> None:
    """Refuse class labels that are missing (None, NaN), mix text with numbers, or that a
    model file cannot hold. NumPy would turn ``["a", 1]`` into the strings ``"a"`` and
    ``"1"`` (and predict ``"1"`` for ``1``), and ``[1, 2**63]`` into floats; bytes and other
    objects would fit and then fail to save."""
    dtype = getattr(y, "dtype", None)
    if getattr(dtype, "kind", "O") == "S":
        raise TypeError(f"y: class labels of dtype {dtype} are bytes; expected "
                        f"{_LABEL_TYPES} (what a model file holds): decode them to str")
    if getattr(dtype, "kind", "O") != "O":
        return                                  # an array or Series of one non-object type
    values = getattr(y, "array", y)             # a pandas Series: its values
    try:
        values = list(values) if not isinstance(values, (str, bytes)) else []
    except TypeError:
        return                                  # not iterable: check_y reports it
    if len(values) and isinstance(values[0], (list, tuple, np.ndarray)):
        return                                  # 2-D: check_y reports the shape
    kinds, has_float, beyond_float = set(), False, None
    for i, v in enumerate(values):
        if is_missing(v):
            raise ValueError(f"y: class label {i} is missing ({shown(v)}); every row needs "
                             "a label")
        if isinstance(v, str):
            kinds.add("text")
        elif isinstance(v, (bool, int, float, np.bool_, np.integer, np.floating)):
            kinds.add("number")
            has_float = has_float or isinstance(v, (float, np.floating))
            if isinstance(v, (int, np.integer)) and not -2 ** 63 <= int(v) < 2 ** 63:
                raise ValueError(f"y: class label {i} ({int(v)}) is beyond the int64 range; "
                                 "expected integers from -2**63 to 2**63 - 1 (larger ones "
                                 "would become inexact floats): write such labels as strings")
            if isinstance(v, (int, np.integer)) and abs(int(v)) > 2 ** 53:
                beyond_float = beyond_float or (i, int(v))
        else:
            raise TypeError(f"y: class label {i} is a {type(v).__name__} ({shown(v)}); "
                            f"expected {_LABEL_TYPES} (what a model file holds)")
    if len(kinds) > 1:
        raise TypeError(f"y: class labels mix {' and '.join(sorted(kinds))} values; use one "
                        "type (e.g. all str)")
    if has_float and beyond_float is not None:
        raise ValueError(f"y: class label {beyond_float[0]} ({beyond_float[1]}) has more "
                         "digits than a float holds, and other labels are floats, so labels "
                         "would merge; expected integers only, or strings")


def _pairs(eval_set: Any) -> List[Any]:
    """``eval_set`` as a list of ``(X, y)`` pairs (or Datasets), or a TypeError that shows
    what it got."""
    expected = "expected a list of (X, y) pairs (or Datasets)"
    if isinstance(eval_set, (str, bytes, dict)) or not isinstance(eval_set, (list, tuple)):
        raise TypeError(f"eval_set of type {type(eval_set).__name__} is invalid; {expected}")
    for i, pair in enumerate(eval_set):
        if isinstance(pair, Dataset):
            continue
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            what = (f"a {type(pair).__name__} of {len(pair)} items"
                    if isinstance(pair, (list, tuple)) else f"a {type(pair).__name__}")
            raise TypeError(f"eval_set[{i}] is {what}; {expected}")
    return list(eval_set)



class BoostRanker(_BaseBoost):
    """Gradient-boosted trees for ranking within query groups (default loss
    ``"lambdarank"``: LambdaMART, as LightGBM's ``LGBMRanker``).

    Takes every parameter of :class:`BoostRegressor`. ``fit`` takes the query groups:
    the number of consecutive rows of each query. Relevance labels are integers >= 0
    (higher is more relevant); ``predict`` returns ranking scores (sort each query's
    documents by them, descending). Evaluate with ``eval_metric="ndcg@10"`` or ``"map@5"``.

    Any regression loss also works (pointwise ranking); a classification loss does not.

    Parameters
    ----------
    {parameters}
    """

    _default_loss = "lambdarank"

    def fit(self, X: Any, y: Any = None, group: Any = None, sample_weight: Any = None,
            eval_set: Optional[Sequence[Tuple[Any, Any]]] = None,
            eval_sample_weight: Optional[Sequence[Any]] = None,
            eval_group: Optional[Sequence[Any]] = None,
            callbacks: Optional[Sequence[CallbackLike]] = None, *, init_score: Any = None,
            eval_init_score: Optional[Sequence[Any]] = None):
        """Fit the ranker.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or Dataset
            Features, rows of one query consecutive; or a :class:`boostlib.Dataset` holding
            the labels, query groups, weights and offsets (then not given here).
        y : array-like of shape (n_samples,)
            Relevance labels, integers >= 0. Required unless ``X`` is a Dataset.
        group : array-like of int
            Query sizes in row order (summing to ``n_samples``); required by ranking
            losses.
        sample_weight : array-like of shape (n_samples,), optional
            Row weights (multiply each document's gradient and hessian; the ranking metrics
            weight a query by its rows' mean weight).
        eval_set : list of (X, y) pairs, optional
            Validation sets, recorded every iteration in ``evals_result_``.
        eval_sample_weight : list of array-like, optional
        eval_group : list of array-like of int, optional
            The query sizes of each validation set.
        callbacks : list, optional
            As for :meth:`BoostRegressor.fit`.
        init_score, eval_init_score : optional
            Raw-score offsets of the training rows and of each validation set, as for
            :meth:`BoostRegressor.fit`.

        Returns
        -------
        self
        """
        return self._fit(X, y, sample_weight=sample_weight, eval_set=eval_set,
                         eval_sample_weight=eval_sample_weight, callbacks=callbacks,
                         group=group, eval_group=eval_group, init_score=init_score,
                         eval_init_score=eval_init_score)

    def predict(self, X: Any, *,
                iteration_range: Optional[Tuple[int, int]] = None,
                pred_contrib: bool = False, pred_interactions: bool = False,
                init_score: Any = None) -> np.ndarray:
        """Ranking scores, shape (n_samples,): higher ranks first.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        iteration_range : tuple of (int, int), optional
            As for :meth:`BoostRegressor.predict`.
        pred_contrib, pred_interactions : bool, default False
            As for :meth:`BoostRegressor.predict`.
        init_score : array-like of shape (n_samples,) or (n_samples, n_outputs), optional
            The rows' raw-score offsets, for a model fitted with ``init_score``: added to
            the raw score before the response (see :meth:`boostlib.Model.predict`).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        fitted = self._state()
        explained = self._explained(fitted, X, iteration_range, pred_contrib, pred_interactions,
                                    init_score)
        if explained is not None:
            return explained
        return checks.response(fitted.model.loss,
                               self._raw_predict(fitted, X, iteration_range, init_score))
