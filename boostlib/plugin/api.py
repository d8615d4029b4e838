"""The interfaces plugins implement: everything a loss, sampler, update rule or metric may
import.

The built-in plugins (:mod:`boostlib.builtin.losses`, :mod:`boostlib.builtin.samplers`,
:mod:`boostlib.builtin.updates`) use only this module, exactly like a third-party plugin.

Array contracts
---------------
* ``y`` is a 1-D ``float64`` array with one entry per training row (2-D, one row per
  training row, for losses of several targets or of interval targets).
* Raw scores, gradients and hessians have one entry per training row: 1-D C-contiguous
  ``float64`` arrays for a loss with one output (``n_outputs == 1``, every loss written
  before vector outputs existed), ``float64`` arrays of shape ``(n_rows, n_outputs)`` for a
  loss with several (e.g. ``multiclass``: one raw score per class). Those 2-D arrays may be
  in either memory order; write into them with ``out[...] =`` or ufuncs' ``out=``.
* Gradients and hessians are derivatives of the loss itself with respect to the raw score
  (``g = dL/dz``, ``h = d2L/dz2``), not of the log-likelihood.
* Sampled row indices are sorted, unique ``int32`` indices into the training rows.
"""
from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Optional, Protocol, Sequence, Tuple

import numpy as np

from .hookspecs import hookimpl

__all__ = ["hookimpl", "Loss", "Sampler", "SampleResult", "UpdateRule", "Metric", "Context",
           "Tree", "TrackedModel", "LINKS", "METRIC_INPUTS"]

#: The values of ``Loss.link``: how a loss's ``transform`` maps raw scores ``z`` to
#: predictions: ``z`` itself, ``exp(z)``, ``sigmoid(z)``, or the row-wise softmax.
LINKS = ("identity", "log", "logit", "softmax")


class Loss(ABC):
    """A differentiable loss of the raw score.

    Attributes
    ----------
    name : str
        Registered name (set by the registry from the hook's mapping key if missing).
    is_classification : bool
        True for losses of binary targets in {0, 1}; the classifier requires it.
    hessian_can_be_negative : bool
        True when ``h`` may be negative or zero (non-convex losses such as SLA; Huber outside
        its quadratic zone). Newton leaves then use ``max(h, hessian_floor)``; ``gradient``
        leaves need no hessian at all.
    hessian_floor : float
        Positive floor used as described above.
    max_delta_step : float or None
        The cap on ``|leaf value|`` (before the learning rate) that training uses when its
        parameter ``max_delta_step`` is None (the default); None or 0: no cap. The log-link
        losses set 1.5.
    n_outputs : int
        Length of the raw score (1 by default). A loss with several outputs receives raw
        scores and fills gradients and hessians of shape ``(n_rows, n_outputs)``, returns
        an array of ``n_outputs`` from :meth:`init_raw` and ``(n_rows, n_outputs)`` from
        :meth:`transform`; :meth:`loss` stays one value per row. The engine reads it after
        :meth:`validate_target` (a loss may learn it from the target there).
    is_multiclass : bool
        True for losses of class indices ``0 .. K-1`` with ``K >= 2`` (the classifier
        requires one when y has more than two classes).
    target_columns : bool
        True for losses of several targets, a 2-D target with a column per output (as
        ``multi_mse``); :func:`boostlib.testing.check_loss` then checks it on one.
    target_bounds : bool
        True for losses of interval targets (``aft``): a 2-D target of two columns, each
        row's lower and upper bound, with one output; the upper bound may be ``+inf``
        (the only non-finite value a target may then hold).
    couples_rows : bool
        True for losses whose derivatives at one row depend on the other rows' raw scores
        beyond query groups (``cox``: the risk sets of the partial likelihood); distributed
        training refuses them (each worker would see only its own rows).
    needs_groups : bool
        True for losses of query groups (ranking): the engine then calls
        :meth:`bind_groups` once per data set and uses the bound copy on that set's rows,
        so every other method can read ``self.group_ptr``.
    needs_rng : bool
        True for losses whose derivatives draw random numbers (``rank_xendcg``'s per-query
        gammas): training then calls :meth:`bind_rng` once per fit, with the fit's random
        stream ``"loss"``, and uses the bound copy on the training rows, whose
        :meth:`gradient_hessian` draws from ``self.rng``. The same ``random_state`` then
        gives the same draws, whatever ``n_jobs``.
    link : str or None
        How :meth:`transform` maps raw scores to predictions, one of ``LINKS``:
        ``"identity"``, ``"log"`` (``exp(raw)``: a log link), ``"logit"``
        (``sigmoid(raw)``) or ``"softmax"`` (row-wise, over ``n_outputs > 1`` outputs).
        Exporters (``boostlib.export.to_onnx``) read it to rebuild the transform.
        None (the default): not declared, which exporters take as the identity when the
        class keeps the base :meth:`transform`, and refuse otherwise.
    """

    name: ClassVar[str] = ""
    is_classification: ClassVar[bool] = False
    is_multiclass: ClassVar[bool] = False
    target_columns: ClassVar[bool] = False
    target_bounds: ClassVar[bool] = False
    couples_rows: ClassVar[bool] = False
    link: Optional[str] = None
    needs_groups: ClassVar[bool] = False
    n_outputs: int = 1
    #: False for a loss without pointwise values (a function giving only derivatives, see
    #: :mod:`boostlib.plugin.callables`): a fit then records no loss curve, and early
    #: stopping needs an ``eval_metric``.
    has_loss_values: bool = True
    hessian_can_be_negative: ClassVar[bool] = False
    hessian_floor: float = 1e-6
    max_delta_step: Optional[float] = None
    #: query boundaries of the data set a loss is bound to (see :meth:`bind_groups`)
    group_ptr: Optional[np.ndarray] = None
    needs_rng: ClassVar[bool] = False
    #: the random stream a loss with ``needs_rng`` is bound to (see :meth:`bind_rng`)
    rng: Optional[np.random.Generator] = None

    def bind_rng(self, rng: np.random.Generator) -> "Loss":
        """This loss for one fit: a shallow copy whose ``rng`` (the fit's random stream
        ``"loss"``) :meth:`gradient_hessian` draws from. Called by training for losses with
        ``needs_rng``, after :meth:`bind_groups`. Unbound (``rng`` None), such a loss must
        still be deterministic, e.g. draw from a fixed seed on every call, as
        :func:`boostlib.testing.check_loss` requires."""
        bound = copy.copy(self)
        bound.rng = rng
        return bound

    def bind_groups(self, group_ptr: np.ndarray) -> "Loss":
        """This loss for one data set of query groups: a shallow copy whose
        ``group_ptr`` (int64, ``n_groups + 1`` boundaries; query ``q`` holds rows
        ``group_ptr[q] .. group_ptr[q + 1] - 1``) the other methods read. Called by the
        engine for losses with ``needs_groups``; override to precompute per-query data
        (call ``super().bind_groups`` first)."""
        bound = copy.copy(self)
        bound.group_ptr = np.ascontiguousarray(group_ptr, dtype=np.int64)
        return bound

    def validate_target(self, y: np.ndarray) -> np.ndarray:
        """Check ``y`` and return it as float64 (classification losses: labels in {0, 1}).

        Raises
        ------
        ValueError
            When ``y`` holds values the loss is not defined for.
        """
        y = np.ascontiguousarray(y, dtype=np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError(f"loss {self.name!r}: y contains NaN or infinite values")
        return y

    def init_raw(self, y: np.ndarray, sample_weight: Optional[np.ndarray]):
        """Raw score of the best constant model (the model's bias): a float, or an array of
        ``n_outputs`` entries for a loss with several outputs."""
        return 0.0

    @abstractmethod
    def gradient_hessian(self, y: np.ndarray, raw: np.ndarray, gradient: np.ndarray,
                         hessian: np.ndarray, n_threads: int = 1) -> None:
        """Write ``dL/dz`` into ``gradient`` and ``d2L/dz2`` into ``hessian`` (in place)."""

    @abstractmethod
    def loss(self, y: np.ndarray, raw: np.ndarray) -> np.ndarray:
        """Pointwise loss values, shape ``(n_rows,)``."""

    def mean_loss(self, y: np.ndarray, raw: np.ndarray, weight: Optional[np.ndarray] = None,
                  n_threads: int = 1) -> float:
        """Weighted mean of the pointwise loss (``weight`` None: plain mean).

        The boosting loop calls it every iteration on the training and validation sets. The
        default averages :meth:`loss`; a loss may override it with a faster reduction, which
        must agree with :meth:`loss` up to rounding.
        """
        return float(np.average(self.loss(y, raw), weights=weight))

    #: Optional, None by default: ``gradient_hessian_loss(y, raw, gradient, hessian,
    #: weight=None, n_threads=1) -> float`` writes what :meth:`gradient_hessian` writes and
    #: returns what :meth:`mean_loss` returns, at the same ``raw``, in one pass (for a loss
    #: whose derivatives and loss share their costly part, as logloss's ``exp`` is). The
    #: boosting loop then takes the training loss it records after an iteration together
    #: with the next iteration's derivatives. It is used only when it belongs with the
    #: class's ``gradient_hessian``, ``mean_loss`` and ``loss`` (a subclass that overrides
    #: one of them and inherits this one does not get it).
    gradient_hessian_loss: ClassVar[Optional[Any]] = None

    def transform(self, raw: np.ndarray) -> np.ndarray:
        """Map raw scores to predictions (probabilities of class 1 for binary
        classification, of every class, shape (n, n_outputs), for a multiclass loss)."""
        return raw

    #: True for a loss whose best leaf values are not Newton steps of its derivatives (e.g.
    #: ``quantile`` and ``l1``): an update rule that calls :meth:`Context.renew_leaves`
    #: (the built-in ``sgb`` does) then replaces the leaf values of its trees by those of
    #: :meth:`renew_leaves`, as LightGBM's leaf renewal does. Only for losses with one
    #: output.
    renews_leaves: ClassVar[bool] = False

    def renew_leaves(self, y: np.ndarray, raw: np.ndarray, weight: Optional[np.ndarray],
                     leaf: np.ndarray, n_leaves: int) -> np.ndarray:
        """The value each leaf of a just-fitted tree should add, before the learning rate.

        Called by :meth:`Context.renew_leaves` for losses with :attr:`renews_leaves`, after
        the tree's structure was fitted to the gradients and before the tree is added to
        the model. It receives the rows the tree was fitted on (with the sampler's
        ``leaf_values="all"``, or without a sampler: every training row); rows of weight 0
        are left out.

        Parameters
        ----------
        y : ndarray of float64, shape (n,)
            The rows' targets (read-only).
        raw : ndarray of float64, shape (n,)
            Their current raw scores, the model before this tree (read-only).
        weight : ndarray of float64, shape (n,), or None
            The rows' weights, positive: the user's ``sample_weight`` times the sampling
            weight (None: all 1).
        leaf : ndarray of intp, shape (n,)
            Compact leaf index of every row, ``0 .. n_leaves - 1``; every leaf has a row.
        n_leaves : int
            Number of leaves.

        Returns
        -------
        ndarray of float64, shape (n_leaves,)
            Finite leaf values; the context writes them into the tree (leaves that no row
            reaches keep their value) and the update rule's coefficient (the learning
            rate) then scales them.
        """
        raise NotImplementedError(f"loss {self.name or type(self).__name__!r} sets "
                                  "renews_leaves but does not implement renew_leaves")


@dataclass(frozen=True)
class SampleResult:
    """The rows a tree is fitted on in one iteration.

    Attributes
    ----------
    indices : ndarray of int32
        Sorted, unique indices of the selected training rows.
    weights : ndarray of float64 or None
        Weight of each selected row (multiplying both its gradient and hessian), or None for
        weight 1.
    """

    indices: np.ndarray
    weights: Optional[np.ndarray] = None


class Sampler(ABC):
    """Chooses, each iteration, the rows the next tree is fitted on.

    Parameters
    ----------
    subsample : float
        Target fraction of rows, in (0, 1]. With ``subsample=1`` the built-in samplers return
        None (no sampling), which is exactly ``sampler=None``.
    leaf_values : {"sample", "all"}
        Which rows the leaf values are computed on. ``"sample"`` (default; Friedman,
        LightGBM, XGBoost): the sampled rows with their weights decide both the structure and
        the leaf values. ``"all"`` (CatBoost): the sample chooses the structure only, and the
        leaf values come from every row with its user weight. The context applies it; a
        sampler only stores it.

    Notes
    -----
    Subclasses add their own keyword parameters (``sampler_params``) and pass these two on
    to ``super().__init__``.
    """

    name: ClassVar[str] = ""
    LEAF_VALUES: ClassVar[Tuple[str, ...]] = ("sample", "all")

    def __init__(self, subsample: float = 1.0, leaf_values: str = "sample"):
        label = self.name or type(self).__name__
        if not (isinstance(subsample, (int, float)) and not isinstance(subsample, bool)
                and 0.0 < subsample <= 1.0):
            raise ValueError(f"sampler {label!r}: subsample={subsample!r} is invalid; "
                             "expected a number in (0, 1]")
        if leaf_values not in self.LEAF_VALUES:
            raise ValueError(f"sampler {label!r}: leaf_values={leaf_values!r} is invalid; "
                             f"expected one of {self.LEAF_VALUES}")
        self.subsample = float(subsample)
        self.leaf_values = leaf_values

    def begin(self, ctx: "Context") -> None:
        """Called once before the first iteration (read ``ctx.learning_rate``,
        ``ctx.n_rows``, ``ctx.n_iterations`` here; reset per-fit state)."""

    @abstractmethod
    def sample(self, gradient: np.ndarray, hessian: np.ndarray, rng: np.random.Generator,
               iteration: int) -> Optional[SampleResult]:
        """Draw this iteration's rows; return None to use every row with weight 1.

        Parameters
        ----------
        gradient, hessian : float64 (n_rows,)
            The loss derivatives the tree will be fitted to (user weights applied; hessians
            are non-negative when they come from the context). Read-only: a sampler must not
            modify them.
        rng : numpy Generator
            The sampler's own random stream; every random draw must come from it.
        iteration : int
            0-based boosting iteration.

        Returns
        -------
        SampleResult or None
            Sorted, unique int32 row indices (never empty) and their weights (None for 1),
            which multiply both the gradient and the hessian of each selected row.
        """


class Tree(Protocol):
    """A fitted tree as update rules see it (see :mod:`boostlib.engine.trees`)."""

    def n_leaves(self) -> int: ...


class TrackedModel(Protocol):
    """An additive model over the context's trees whose scores the context keeps up to date.

    ``bias + sum_k coefficients[k] * tree_k(x)``, where ``tree_k`` are the trees of the model
    being trained (a tree added to one tracked model has coefficient 0 in the others). The
    context keeps its raw scores on the training rows and on every validation set, so reading
    them, combining tracked models (:meth:`Context.combine`) and adding a tree
    (:meth:`Context.add_tree` with ``to=``) never cost a pass over the trees.

    :attr:`Context.model` is the model being trained; :meth:`Context.track` makes auxiliary
    ones (e.g. AGBM's momentum sequence ``h``). Only the context changes them.
    """

    @property
    def name(self) -> str:
        """``"model"`` for the model being trained, else the name given to ``track``."""

    @property
    def bias(self) -> float:
        """The constant term."""

    @property
    def coefficients(self) -> np.ndarray:
        """A copy of the coefficients, float64 of shape ``(n_trees,)`` (all trees so far)."""

    @property
    def raw(self) -> np.ndarray:
        """Raw scores on the training rows, float64 ``(n_rows,)`` (read-only view)."""


class Context(Protocol):
    """What the boosting loop hands to :meth:`UpdateRule.step` (see ``boostlib.engine.context``).

    Attributes: ``iteration`` (0-based), ``n_iterations``, ``learning_rate``, ``n_rows``,
    ``sample_weight`` (the user's row weights, float64 ``(n_rows,)``, or None for all 1;
    do not modify), ``raw`` (current training raw scores, read-only), ``bias`` and
    ``coefficients`` (the model so far), ``model`` (the model being trained as a
    :class:`TrackedModel`).

    A fit that continues a model (``train(..., init_model=)``, ``warm_start``) starts with
    that model's trees, coefficients and scores, and numbers its iterations on from it:
    ``iteration`` runs from the model's ``n_iterations`` to ``n_iterations - 1`` (the
    attribute: the end, the continued model's iterations included).

    The model changes only through :meth:`add_tree`, :meth:`scale_model` and
    :meth:`combine`; each keeps the training and validation scores of every tracked model in
    step with its coefficients, in ``O(n_rows + n_validation_rows + n_trees)`` time.

    In a distributed fit (:mod:`boostlib.dask`) every worker runs the same update rule on its
    own rows: ``n_rows``, ``raw``, the derivatives and samples are the worker's rows,
    ``total_rows`` counts every worker's, and ``collective``
    (:class:`boostlib.plugin.collective.Collective`) sums statistics across workers.
    :meth:`fit_tree` and :meth:`train_loss` sum across workers themselves, so a rule that
    decides from them (and from :meth:`rng`'s streams, the same on every worker) stays in
    step on every worker without further work; per-row draws come from :meth:`row_rng`.
    """

    iteration: int
    n_iterations: int
    learning_rate: float
    n_rows: int
    total_rows: int
    sample_weight: Optional[np.ndarray]
    collective: Any

    @property
    def raw(self) -> np.ndarray: ...

    @property
    def model(self) -> TrackedModel: ...

    def rng(self, stream: str) -> np.random.Generator: ...

    def row_rng(self, stream: str) -> np.random.Generator: ...

    def train_loss(self, raw: Optional[np.ndarray] = None) -> float: ...

    def gradients(self, raw: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]: ...

    def sample(self, gradient: np.ndarray, hessian: np.ndarray) -> Optional[SampleResult]: ...

    def fit_tree(self, gradient: np.ndarray, hessian: np.ndarray,
                 sample: Optional[SampleResult] = None, *,
                 split_gradient: Optional[np.ndarray] = None,
                 leaf_noise_scale: float = 0.0) -> Any: ...

    def renew_leaves(self, tree: Any, sample: Optional[SampleResult] = None) -> None:
        """Replace the leaf values of ``tree`` by the loss's :meth:`Loss.renew_leaves`.

        A no-op unless the loss sets :attr:`Loss.renews_leaves` (e.g. ``quantile``,
        ``l1``). Call it between :meth:`fit_tree` and :meth:`add_tree`, in the same
        iteration, with the ``sample`` the tree was fitted on. The loss sees the rows
        whose leaf values the fit used (the sample's rows with their user times sampling
        weights; every row with its user weight when there is no sample or the sampler's
        ``leaf_values`` is ``"all"``) and the current raw scores :attr:`raw`; leaves that
        no row of positive weight reaches keep their value. The leaf noise of
        ``leaf_noise_scale`` is replaced too. Single-output trees only.
        """

    def tree_output(self, tree: Any) -> np.ndarray:
        """``tree(x)`` on every training row, without its coefficient: shape (n_rows,), or
        (n_rows, n_outputs) with several outputs. ``tree`` is a tree fitted by
        :meth:`fit_tree`, or the int index of one of the model's terms (``0 ..
        n_trees - 1``, in the order they were added; a continued model's trees first)."""

    def add_tree(self, tree: Any, coefficient: float,
                 to: Optional[TrackedModel] = None) -> int:
        """Add ``coefficient * tree`` to ``to`` (default: :attr:`model`); return the tree's
        index.

        A tree joins the shared list of trees the first time it is added to any tracked
        model (with coefficient 0 in all the others); adding it again, to the same or
        another tracked model, only changes that model's coefficient.
        """

    def scale_model(self, factor: float) -> None: ...

    def set_coefficients(self, indices: Sequence[int], values: Any) -> None:
        """Set the coefficients of some of the model's trees, ``c[indices] = values``
        (distinct indices ``0 .. n_trees - 1``; one finite value per index, or one for all).

        For rules that reweight earlier trees (``dart`` rescales the trees it dropped,
        ``rf`` keeps every coefficient at ``1/k``). The training and validation scores
        follow (one prediction pass over the changed trees; ``O(n_rows)`` when every
        coefficient is multiplied by one common factor); the bias and the auxiliary tracked
        models stay as they are. Like :meth:`combine` on the model, it rewrites
        coefficients: the model then keeps no scale history.
        """

    def track(self, name: str, like: Optional[TrackedModel] = None) -> TrackedModel:
        """A new auxiliary tracked model, a copy of ``like`` (default: :attr:`model`).

        Typically called in :meth:`UpdateRule.begin`. ``name`` (unique per fit) appears in
        error messages.
        """

    def combine(self, target: TrackedModel,
                terms: Sequence[Tuple[float, TrackedModel]]) -> None:
        """Set ``target`` to ``sum_i w_i * m_i`` over ``terms = [(w_i, m_i), ...]``.

        Bias, coefficients, training and validation scores are combined alike, so the scores
        stay exact without a prediction pass. ``target`` may appear among the terms (e.g.
        AGBM's ``model <- (1 - theta) model + theta h``); when it is :attr:`model`, this
        rewrites the model being trained.
        """


class UpdateRule(ABC):
    """One boosting iteration: how trees are fitted and combined into the model.

    Every rule produces the same kind of model, ``raw(x) = bias + sum_k c_k * tree_k(x)``,
    through the context's :meth:`Context.add_tree`, :meth:`Context.scale_model` and
    :meth:`Context.combine`; so prediction and model files never depend on the rule that
    trained it.
    """

    name: ClassVar[str] = ""
    #: The most trees one iteration adds to the model (AGBM: 2). Training checks the
    #: model-size limits for ``n_estimators`` iterations of that many at the start.
    trees_per_iteration: ClassVar[int] = 1

    def check_params(self, params: Mapping[str, Any]) -> None:
        """Refuse training parameters this rule cannot train with; called once by
        :func:`boostlib.train` before any data is binned.

        ``params`` holds every training parameter, resolved and checked (the names of
        :class:`boostlib.BoostRegressor`'s constructor: ``learning_rate``, ``subsample``,
        ``sampler``, ``colsample_bytree``, ...). Raise ValueError naming the parameter, its
        value and what the rule expects. The default accepts everything.
        """

    def begin(self, ctx: Context) -> None:
        """Called once before the first iteration (reset per-fit state here). A continued
        fit calls it too: state the model does not record starts afresh (AGBM's momentum
        model restarts from the model, as after a restart of ``agbmr``)."""

    @abstractmethod
    def step(self, ctx: Context) -> None:
        """Run iteration ``ctx.iteration``."""


#: What a :class:`Metric` evaluates: the raw scores, the loss's response (probabilities, or
#: the prediction of a regression) or the predicted class.
METRIC_INPUTS = ("raw", "response", "class")


class Metric(ABC):
    """An evaluation metric: one number from targets and predictions, recorded every
    iteration on the validation sets (``eval_metric``) and usable for early stopping.

    A metric object is callable like a scikit-learn metric,
    ``metric(y_true, y_pred, sample_weight=None)``; ``__call__`` checks the arrays and
    calls :meth:`evaluate`, which plugins implement (vectorized: it runs every iteration).

    Attributes
    ----------
    name : str
        Registered name (set by the registry from the hook's mapping key if missing).
    higher_is_better : bool
        Direction, for early stopping and the best iteration (AUC: True; losses: False).
    reads : {"raw", "response", "class"}
        The prediction it evaluates: the raw scores (shape (n,), or (n, K) with K outputs),
        the loss's response (the probability of class 1, class probabilities (n, K), or
        the regression prediction) or the predicted class (indices ``0 .. K-1``).
    needs_groups : bool
        True for metrics of query groups (``ndcg``, ``map``): they are called with
        ``group=`` (query sizes) and :meth:`evaluate` reads ``self.group_ptr`` of the copy
        :meth:`bind_groups` made.
    survival_labels : {None, "times", "bounds"}
        The survival labels a metric evaluates, for :func:`boostlib.testing.check_metric`:
        ``"times"``, signed times (positive: event, negative: censored) with raw scores
        that are risks (``cindex``); ``"bounds"``, ``(n, 2)`` lower and upper bounds with
        raw scores that are log times (``aft_nloglik``). None (default): not a survival
        metric.
    y_true
        For classifiers, class indices ``0 .. K-1`` (the encoded labels); for regression,
        the target (for survival metrics, the labels above).
    """

    name: ClassVar[str] = ""
    higher_is_better: ClassVar[bool] = False
    reads: ClassVar[str] = "response"
    needs_groups: ClassVar[bool] = False
    survival_labels: ClassVar[Optional[str]] = None
    #: query boundaries of the data set a metric is bound to (see :meth:`bind_groups`)
    group_ptr: Optional[np.ndarray] = None

    def bind_groups(self, group_ptr: np.ndarray) -> "Metric":
        """A shallow copy for one data set of query groups (see :meth:`Loss.bind_groups`)."""
        bound = copy.copy(self)
        bound.group_ptr = np.ascontiguousarray(group_ptr, dtype=np.int64)
        return bound

    def check_task(self, n_outputs: int, is_classification: bool) -> None:
        """Raise ValueError when the metric cannot evaluate this model (e.g. ``auc`` a
        regression); called once before training."""

    @abstractmethod
    def evaluate(self, y_true: np.ndarray, y_pred: np.ndarray,
                 sample_weight: Optional[np.ndarray]) -> float:
        """The metric of float64 arrays already checked (``y_pred`` 1-D or 2-D, one row
        per entry of ``y_true``; ``sample_weight`` None or 1-D, finite and >= 0)."""

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None,
                 group: Any = None) -> float:
        """``evaluate`` after checking the inputs (same length, finite weights >= 0).

        ``group`` (query sizes in row order, summing to the number of rows) is required by
        metrics with ``needs_groups`` and refused by the others.
        """
        label = self.name or type(self).__name__
        if self.needs_groups and group is None and self.group_ptr is None:
            raise ValueError(f"metric {label!r} ranks within query groups; pass group= "
                             "(the number of rows of each query)")
        if group is not None:
            if not self.needs_groups:
                raise ValueError(f"metric {label!r} does not use query groups; group= is "
                                 "only for ranking metrics")
            sizes = np.asarray(group)
            n = np.shape(y_true)[0] if np.ndim(y_true) else 0
            if sizes.ndim != 1 or sizes.size == 0 or sizes.dtype.kind not in "iu" \
                    or np.any(sizes < 1) or int(sizes.sum()) != n:
                raise ValueError(f"metric {label!r}: group must hold positive integer query "
                                 f"sizes summing to the {n} rows of y_true")
            return self.bind_groups(np.concatenate([[0], np.cumsum(sizes)]))(
                y_true, y_pred, sample_weight)
        y = np.asarray(y_true, dtype=np.float64)
        pred = np.asarray(y_pred, dtype=np.float64)
        y_ndims = (1, 2) if self.survival_labels else (1,)     # (n, 2): survival bounds
        if y.ndim not in y_ndims or pred.ndim not in (1, 2) or pred.shape[0] != y.shape[0]:
            raise ValueError(f"metric {self.name or type(self).__name__!r}: expected y_true "
                             f"of shape {' or '.join(['(n,)', '(n, 2)'][:len(y_ndims)])} "
                             f"and y_pred of shape (n,) or (n, K); got {y.shape} and "
                             f"{pred.shape}")
        w = None
        if sample_weight is not None:
            w = np.asarray(sample_weight, dtype=np.float64)
            if w.shape != y.shape[:1] or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise ValueError(f"metric {self.name or type(self).__name__!r}: "
                                 "sample_weight must be finite, >= 0 and aligned with y_true")
        if self.group_ptr is not None and int(self.group_ptr[-1]) != y.shape[0]:
            raise ValueError(f"metric {self.name or type(self).__name__!r}: its query groups "
                             f"cover {int(self.group_ptr[-1])} rows, y_true has {y.shape[0]}")
        return float(self.evaluate(y, pred, w))

