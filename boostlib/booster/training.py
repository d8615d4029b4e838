"""``train(params, train_set) -> Model``: the engine's entry point, which the estimators,
the command line and distributed training call."""
from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .._kernels._openmp import training_n_threads
from ..plugin import checks, registry
from ..plugin.collective import LOCAL
from ..plugin.registry import PluginError
from ..engine.context import BoostingContext, EvalSet
from ..engine.loop import run
from ..engine.callbacks import (Callback, CallbackLike, EarlyStopping, ProgressBar,
                                as_callback)
from ..engine.dataset import BatchDataset, Dataset
from ..engine.encoding import CategoricalEncoder, stat_targets
from ..engine.categorical import translate
from ..engine.frames import Columns
from ..engine.random_streams import stream_rng
from ..engine.evaluation import Evaluator, create_metrics
from ..engine.ensemble import MAX_RAW_BOUND, Ensemble
from .model import Model
from ..engine.params import (DEFAULT_MAX_LEAVES, check_model_size, check_orphaned_params,
                             max_delta_step, min_data_per_group, resolve)
from ..engine.constraints import ColumnRules, interaction_groups, monotone_constraints
from ..engine.random_streams import Streams, seed_sequence
from ..engine.shard import Shard
from ..engine.validation import check_columns, offsets
from . import continuation
from ..engine.grower import GrowParams, TreeGrower
from ..engine.linear_leaves import RawColumns
from ..engine.working_features import working_features


def default_loss(y: np.ndarray) -> str:
    """The loss :func:`train` uses when ``params`` names none: ``"logloss"`` for a target of
    0s and 1s (both present), ``"mse"`` otherwise. Multiclass is asked for by name
    (``loss="multiclass"``); the classifier does that for more than two classes."""
    values = np.unique(y)
    return "logloss" if values.size == 2 and values[0] == 0 and values[1] == 1 else "mse"


def _callbacks(p: Mapping[str, Any], callbacks: Any) -> List[Callback]:
    """Progress and early stopping from the parameters, then the caller's callbacks."""
    if callbacks is None:
        callbacks = []
    elif isinstance(callbacks, (str, bytes)) or not isinstance(callbacks, (list, tuple)):
        raise TypeError(f"callbacks={callbacks!r} is invalid; expected a list of "
                        "Callback instances or callables")
    out: List[Callback] = []
    if p["verbose"] is True:
        out.append(ProgressBar())
    elif p["verbose"]:
        out.append(ProgressBar(period=int(p["verbose"])))
    if p["early_stopping_rounds"]:
        out.append(EarlyStopping(int(p["early_stopping_rounds"])))
    return out + [as_callback(cb, i) for i, cb in enumerate(callbacks)]


def _bias(loss: Any, y: np.ndarray, weight: Optional[np.ndarray], n_outputs: int) -> np.ndarray:
    """The loss's starting raw score, checked: ``n_outputs`` finite numbers."""
    with checks.blame("loss", loss, "init_raw"):
        value = np.asarray(loss.init_raw(y, weight), dtype=np.float64)
    if value.size == n_outputs and not np.all(np.isfinite(value)):
        overflow = checks.overflow_in_start(loss, value, y, weight)
        if overflow:
            raise FloatingPointError(overflow)
    if value.size != n_outputs or not np.all(np.isfinite(value)):
        raise PluginError(f"loss {loss.name or type(loss).__name__!r}: init_raw returned "
                          f"{value.tolist() if value.size < 10 else value.shape}; expected "
                          f"{n_outputs} finite number(s)")
    return value.reshape(n_outputs)


def _with_offset(scores: np.ndarray, offset: Optional[np.ndarray]) -> np.ndarray:
    """Start scores (n_outputs, n_rows) plus a set's offsets, if it has them."""
    return scores if offset is None else scores + offset


def _check_bounded(bounds: np.ndarray, learning_rate: float) -> None:
    """Refuse a model whose raw scores could exceed :data:`MAX_RAW_BOUND` (its file would
    not load back; its predictions are at the edge of overflow); ``bounds`` as
    :meth:`Ensemble.raw_bounds` gives them."""
    bound = bounds[-1]
    if not bound <= MAX_RAW_BOUND:
        raise FloatingPointError(f"training diverged: the model's raw scores could reach "
                                 f"{bound:.3g}, beyond MAX_RAW_BOUND = {MAX_RAW_BOUND:g}; "
                                 f"lower learning_rate (now {learning_rate!r}) or rescale the "
                                 "target")


def _target(loss: Any, data: Dataset, what: str) -> np.ndarray:
    """``loss.validate_target`` of a data set's target, checked (one number per row)."""
    with checks.blame("loss", loss, "validate_target"):
        returned = loss.validate_target(data.y)
    y = checks.target(loss, returned, data.n_rows, what)
    if getattr(loss, "target_bounds", False):
        if y.ndim != 2 or y.shape[1] != 2:
            raise ValueError(f"loss {checks.label(loss)!r} needs {what}'s target as two "
                             f"columns (lower and upper bounds); got shape {y.shape}")
    elif y.ndim == 2 and y.shape[1] != loss.n_outputs:
        raise ValueError(f"{what}'s target has {y.shape[1]} columns, but loss "
                         f"{checks.label(loss)!r} has {loss.n_outputs} output(s); several "
                         "targets need a loss with one output per target (e.g. 'multi_mse')")
    return y


def _bound(loss: Any, data: Dataset, what: str) -> Any:
    """The loss for one data set: bound to its query groups when it ranks within them."""
    if not loss.needs_groups:
        return loss
    if data.group is None:
        raise ValueError(f"loss {checks.label(loss)!r} ranks within query groups; {what} has "
                         "none: pass group= (the number of rows of each query)")
    with checks.blame("loss", loss, "bind_groups"):
        bound = loss.bind_groups(data.group_ptr)
    if not isinstance(bound, type(loss)):
        raise PluginError(f"loss {checks.label(loss)!r}: bind_groups returned "
                          f"{type(bound).__name__}, not a {type(loss).__name__}")
    return bound


def _loss_spec(spec: Any, loss: Any, loss_params: Optional[dict]) -> dict:
    """``{"name", "params"}`` that re-create the loss for model files: the registered name
    (None for an instance; the model file looks its class up) and the parameters it was
    created with, plus those it learned from the target: constructor parameters left at a
    default of None that the loss has since set (e.g. ``multiclass``'s ``n_classes``)."""
    if not isinstance(spec, str):
        return {"name": None, "params": {}}
    params = dict(loss_params or {})
    try:
        signature = registry.init_parameters(type(loss))
    except (TypeError, ValueError):
        signature = []
    for arg in signature:
        if arg.default is None and arg.name not in params \
                and getattr(loss, arg.name, None) is not None:
            params[arg.name] = getattr(loss, arg.name)
    return {"name": spec, "params": params}


def distributed_start(params: Mapping[str, Any], y: np.ndarray,
                      sample_weight: Optional[np.ndarray], offsets: bool = False
                      ) -> Tuple[dict, np.ndarray]:
    """What the driver of a distributed fit computes once from the whole target: the
    parameters every worker trains with (the loss resolved to its name and every parameter
    it learns from the target, such as ``multiclass``'s ``n_classes``, so that workers whose
    rows lack a class agree) and the starting raw score (the
    :class:`~boostlib.engine.shard.Shard`'s ``bias``).

    Parameters
    ----------
    params : dict
        The fit's parameters (as for :func:`train`).
    y, sample_weight : ndarray
        The whole training target and row weights (None: 1).
    offsets : bool, default False
        Whether the rows have offsets (``init_score``): they replace the loss's constant
        start, as in a local fit, so the starting raw score is 0.
    """
    p = dict(params)
    spec = p.get("loss") if p.get("loss") is not None else default_loss(y)
    loss = registry.create("loss", spec, p.get("loss_params"))
    _check_shardable(loss, None)
    with checks.blame("loss", loss, "validate_target"):
        target = checks.target(loss, loss.validate_target(y), y.shape[0], "the training set")
    n_outputs = loss.n_outputs
    if isinstance(spec, str):
        p["loss"], p["loss_params"] = spec, _loss_spec(spec, loss, p.get("loss_params"))["params"]
    if offsets:
        return p, np.zeros(int(n_outputs))
    return p, _bias(loss, target, sample_weight, int(n_outputs))


def _matrix(data: Dataset) -> np.ndarray:
    return data.X.to_array() if isinstance(data.X, Columns) else np.asarray(data.X)


def _encoded(encoder: CategoricalEncoder, data: Dataset, X: np.ndarray) -> Dataset:
    """A Dataset of the encoded matrix ``X`` with ``data``'s target, weights, groups and
    offsets."""
    out = Dataset(X, data.y, sample_weight=data.sample_weight,
                  feature_names=encoder.column_names(data.feature_names),
                  categorical_features=encoder.column_categorical, group=data.group,
                  init_score=data.init_score)
    out.levels = encoder.column_levels
    return out


def statistics_order(w: Optional[np.ndarray], n_rows: int, rng: np.random.Generator
                     ) -> np.ndarray:
    """The permutation of the training rows that orders their target statistics: the rows
    of positive weight in a random order, then those of weight 0 (which add nothing to a
    statistic), so that rows of weight 0 change neither the order of the others nor their
    statistics."""
    if w is None:
        return rng.permutation(n_rows)
    positive = np.flatnonzero(w > 0)
    return np.concatenate([positive[rng.permutation(positive.size)],
                           np.flatnonzero(~(w > 0))])


def _unencodable(train_set: Dataset, shard: Optional[Shard]) -> Optional[str]:
    """Why ``train_set``'s categorical features cannot be encoded in this fit (None when
    they can)."""
    if shard is not None:
        return ("is not supported in distributed training (the statistics would come from "
                "one worker's rows)")
    if isinstance(train_set, BatchDataset):
        return ("encodes the categorical features' values, which a Dataset read in batches "
                "(Dataset.from_batches) does not keep")
    return None


def _coded_as(data: Dataset, levels: Sequence[Any]) -> np.ndarray:
    """``data``'s matrix with each categorical column's codes translated to ``levels``
    (those of the training set, or of the model continued)."""
    X = _matrix(data)
    recode = [j for j in np.flatnonzero(data.categorical) if data.levels[j] is not None]
    if recode:
        X = X.copy()
        for j in recode:
            X[:, j] = translate(X[:, j], data.levels[j], levels[j], j)
    return X


def encode_sets(p: Mapping[str, Any], train_set: Dataset, valid_sets: Sequence[Dataset],
                y: np.ndarray, n_outputs: int, seed: np.random.SeedSequence, n_rows: int,
                shard: Optional[Shard] = None, init_model: Optional[Model] = None
                ) -> Tuple[Optional[CategoricalEncoder], Dataset, List[Dataset]]:
    """``categorical_encoding`` applied before binning: the encoder (None when every
    categorical feature keeps its set splits) and the training and validation sets as the
    trees see them.

    The training rows' target statistics are ordered by a permutation from the
    ``"target_stats"`` random stream. ``"auto"`` keeps set splits where encoding is not
    possible (distributed training, a Dataset read in batches) and gives no encoder when it
    picks set splits for every feature. A continued model (``init_model``) keeps its
    encoder: its levels, its one-hot columns, its prior and frequencies, and its statistics
    at prediction; the new training rows get ordered statistics over their own targets, as
    the model's first training rows did (the encoder's statistics include each of its
    training rows' own target, which new trees would learn as if it were the answer).

    Raises
    ------
    ValueError
        For ``"onehot"`` or ``"target_stats"`` where encoding is not possible, and for a
        continuation asking for another encoding than the model's.
    """
    encoding = p["categorical_encoding"]
    if not np.any(train_set.categorical):
        return None, train_set, list(valid_sets)
    t = stat_targets(y, n_outputs if (np.ndim(y) == 1 and n_outputs > 1) else None)
    if init_model is not None:
        had = init_model.params.get("categorical_encoding", "sets")
        if encoding not in ("auto", had):
            raise ValueError(f"categorical_encoding={encoding!r} differs from init_model's "
                             f"({had!r}); a continued model keeps its encoding: pass "
                             f"{had!r} or 'auto'")
        encoder = init_model.encoder
        if encoder is None:
            return None, train_set, list(valid_sets)
        reason = _unencodable(train_set, shard)
        if reason is not None:
            raise ValueError(f"init_model was trained with categorical_encoding={had!r}, which "
                             f"{reason}; continue it on a Dataset of rows in memory")
        X = _coded_as(train_set, encoder.levels)
    else:
        if encoding == "sets":
            return None, train_set, list(valid_sets)
        reason = _unencodable(train_set, shard)
        if reason is not None:
            if encoding == "auto":
                return None, train_set, list(valid_sets)
            raise ValueError(f"categorical_encoding={encoding!r} {reason}; expected "
                             "categorical_encoding='sets' or 'auto' (which keeps set splits "
                             "there)")
        X = _matrix(train_set)      # coded against its own levels: the encoder's
        encoder = CategoricalEncoder.fit(
            X, train_set.categorical, train_set.levels, encoding, t,
            train_set.sample_weight, int(p["max_cat_to_onehot"]),
            min_data_per_group(p["min_data_per_group"], n_rows))
        if not encoder.encodes:
            return None, train_set, list(valid_sets)
    order = statistics_order(train_set.sample_weight, train_set.n_rows,
                             stream_rng(seed, "target_stats"))
    train_enc = _encoded(encoder, train_set,
                         encoder.transform(X, order, t, train_set.sample_weight))
    return encoder, train_enc, [
        _encoded(encoder, ds, encoder.transform(_coded_as(ds, encoder.levels)))
        for ds in valid_sets]


def _check_linear(p: Mapping[str, Any], loss: Any, train_set: Dataset) -> None:
    """Refuse ``linear_leaves=True`` where the linear parts could not be fitted or kept."""
    if isinstance(train_set, BatchDataset):
        raise ValueError("linear_leaves=True fits each leaf on the raw feature values, which "
                         "a Dataset read in batches (Dataset.from_batches) does not keep; "
                         "expected a Dataset of a matrix or frame with it")
    if getattr(loss, "renews_leaves", False):
        raise ValueError(f"linear_leaves=True fits the leaves' slopes by Newton steps, but "
                         f"loss {loss.name or type(loss).__name__!r} sets its leaf values by "
                         "renewal, which the slopes would not follow; expected a loss "
                         "without leaf renewal (e.g. 'mse' or 'huber')")


def _centers(mapper: Any) -> np.ndarray:
    """The middle border of every feature (0 without borders): the same on every worker of
    a distributed fit, near the middle of the feature's values."""
    flat, starts, n_borders = mapper.border_table()
    middle = np.minimum(np.asarray(starts) + np.asarray(n_borders) // 2, flat.size - 1)
    return np.where(np.asarray(n_borders) > 0, flat[middle], 0.0)


def _check_shardable(loss: Any, init_model: Optional[Model]) -> None:
    """Refuse what a distributed fit cannot do: continue a model, rank within query groups
    (groups would have to stay within one worker), renew leaf values from per-leaf
    quantiles (which do not sum across workers), couple every row (``cox``'s risk sets)."""
    label = checks.label(loss)
    if init_model is not None:
        raise ValueError("distributed training does not continue a model (init_model)")
    if loss.needs_groups:
        raise ValueError(f"loss {label!r} ranks within query groups, which distributed "
                         "training does not support")
    if getattr(loss, "renews_leaves", False):
        raise ValueError(f"loss {label!r} renews its leaf values from per-leaf quantiles of "
                         "the rows, which distributed training does not support")
    if getattr(loss, "couples_rows", False):
        raise ValueError(f"loss {label!r} couples the rows (the derivatives of one row depend "
                         "on every other row), which distributed training does not support")


def train(params: Mapping[str, Any], train_set: Dataset, *,
          valid_sets: Sequence[Dataset] = (), valid_names: Optional[Sequence[str]] = None,
          callbacks: Sequence[CallbackLike] = (), init_model: Optional[Model] = None,
          shard: Optional[Shard] = None) -> Model:
    """Train a boosting model.

    Parameters
    ----------
    params : dict
        Training parameters, with the estimators' names and defaults (``n_estimators``,
        ``learning_rate``, ``max_depth``, ``grow_policy``, ``loss``, ``sampler``,
        ``update``, ...; see :class:`boostlib.BoostRegressor`). Without ``loss``: ``"logloss"``
        for a 0/1 target, ``"mse"`` otherwise (see :func:`~boostlib.booster.training.default_loss`).
    train_set : Dataset
        Training data with its target.
    valid_sets : sequence of Dataset, optional
        Validation sets, binned with the training set's borders; their loss is recorded
        every iteration, and the last one drives ``early_stopping_rounds``.
    valid_names : sequence of str, optional
        Their names in ``evals_result`` (default ``valid_0``, ``valid_1``, ...).
    callbacks : sequence, optional
        :class:`boostlib.callbacks.Callback` instances or callables ``fn(info)``, called after
        every iteration; one returning True stops training.
    init_model : Model, optional
        A model to continue (LightGBM's name): its raw scores on the training and
        validation sets are the starting scores, the ``n_estimators`` new iterations append
        their trees to its trees (its bias and coefficients kept), the data is binned with
        its bin borders, and the iterations are numbered on from its ``n_iterations``
        (``best_iteration`` counts them all; ``evals_result`` holds the new iterations only).
        ``grow_policy``, ``max_bins``, ``loss`` and ``loss_params`` default to the model's
        and may not differ from them; the number of outputs, features, feature names and
        categorical features must match. Continuing a fit of ``n`` iterations by ``m`` gives
        the model one fit of ``n + m`` iterations gives (bit for bit for ``update="sgb"``;
        see ``docs/training_controls.md`` for sampling and the rules with state). The model
        passed is not modified.
    shard : Shard, optional
        Train as one worker of a distributed fit (what :mod:`boostlib.dask` runs on every
        worker): ``train_set`` holds this worker's rows, and the bin borders, the starting
        score and the row count come from the whole data set. Every worker must call
        ``train`` with the same parameters and validation sets; each returns the same model.
        With offsets, each worker's ``train_set`` holds its rows' ``init_score`` and the
        shard's bias is 0 (``distributed_start(..., offsets=True)``). Not with
        ``init_model``, nor with losses that rank within query groups or renew their leaf
        values from per-leaf quantiles.

    Returns
    -------
    Model
    """
    if init_model is not None:
        params = continuation.inherit_params(params, init_model)
    p = resolve(params)
    check_orphaned_params(p)
    if not isinstance(train_set, Dataset):
        raise TypeError(f"train_set={train_set!r} is invalid; expected a boostlib.Dataset")
    if train_set.y is None:
        raise ValueError("train_set has no target; build it as Dataset(X, y)")
    valid_sets = list(valid_sets)
    names = [f"valid_{i}" for i in range(len(valid_sets))] if valid_names is None \
        else [str(n) for n in valid_names]
    if len(names) != len(valid_sets) or len(set(names)) != len(names) or "train" in names:
        raise ValueError(f"valid_names={valid_names!r} is invalid; expected one distinct name "
                         "per validation set, other than 'train'")
    for name, ds in zip(names, valid_sets):
        if not isinstance(ds, Dataset) or ds.y is None:
            raise TypeError(f"validation set {name!r} must be a boostlib.Dataset with a target")
        if ds.reference is not None and ds.reference is not train_set:
            raise ValueError(f"validation set {name!r} was built with another training set "
                             "as its reference")
        if ds.n_features != train_set.n_features:
            raise ValueError(f"validation set {name!r} has {ds.n_features} features, the "
                             f"training set {train_set.n_features}")
        check_columns(train_set.feature_names, ds.feature_names, f"validation set {name!r}",
                      "in the training set")
    callback_list = _callbacks(p, callbacks)
    n_threads = training_n_threads(p["n_jobs"])
    seed = seed_sequence(p["random_state"])

    spec = p["loss"] if p["loss"] is not None else default_loss(train_set.y)
    loss = registry.create("loss", spec, p["loss_params"])
    train_loss = _bound(loss, train_set, "the training set")
    y = _target(loss, train_set, "the training set")
    n_outputs = loss.n_outputs
    if isinstance(n_outputs, bool) or not isinstance(n_outputs, (int, np.integer)) \
            or n_outputs < 1:
        raise PluginError(f"loss {loss.name or type(loss).__name__!r}: n_outputs="
                          f"{n_outputs!r}; expected an int >= 1")
    n_outputs = int(n_outputs)
    if shard is not None:
        _check_shardable(loss, init_model)
    if p["linear_leaves"]:
        _check_linear(p, loss, train_set)
    if init_model is not None:
        continuation.check_compatible(init_model, train_set,
                                      _loss_spec(spec, loss, p["loss_params"]), n_outputs)
    metrics = create_metrics(p["eval_metric"], n_outputs, bool(loss.is_classification))
    n_rows = train_set.n_rows if shard is None else int(shard.n_rows)
    update = registry.create("update", p["update"], p["update_params"])
    update.check_params(dict(p))        # its errors name the rule and the parameter
    check_model_size(p, n_outputs, n_rows, bool(np.any(train_set.categorical)), update,
                     None if init_model is None else init_model.ensemble)
    features = train_set        # what the model's inputs are; train_set: what the trees read
    encoder, train_set, valid_sets = encode_sets(p, train_set, valid_sets, y, n_outputs, seed,
                                                 n_rows, shard, init_model)
    w = train_set.sample_weight
    offset = offsets(train_set.init_score, n_outputs, "train_set's init_score")
    if offset is not None and shard is not None and np.any(np.asarray(shard.bias) != 0):
        raise ValueError("init_score: a distributed fit with offsets starts from them alone "
                         "(as a local one does), so its Shard's bias must be 0, not "
                         f"{np.asarray(shard.bias).tolist()}: take it from "
                         "distributed_start(..., offsets=True)")

    if shard is not None:
        bias = np.asarray(shard.bias, dtype=np.float64).reshape(n_outputs)
        mapper, X_binned = shard.mapper, train_set.binned(shard.mapper, n_threads)
        ensemble = Ensemble(mapper, p["grow_policy"], bias, n_outputs)
        first_iteration, init_raw = 0, None
    elif init_model is None:
        # offsets replace the loss's constant start (as LightGBM's init_score does)
        bias = np.zeros(n_outputs) if offset is not None else _bias(loss, y, w, n_outputs)
        mapper, X_binned = train_set.training_matrix(p["max_bins"], seed, n_threads,
                                                     p["min_samples_bin"])
        ensemble = Ensemble(mapper, p["grow_policy"], bias, n_outputs)
        first_iteration, init_raw = 0, None
    else:       # the model's borders, trees, bias; its scores as the start
        ensemble = continuation.continued_ensemble(init_model)
        mapper = ensemble.bin_mapper
        X_binned = train_set.binned(mapper, n_threads)
        first_iteration = init_model.n_iterations
    # the raw values, for linear leaves (new ones, or those of the model continued)
    raw_values = bool(p["linear_leaves"]) or ensemble.has_linear
    train_columns = RawColumns(train_set.X, _centers(mapper)) if raw_values else None
    if init_model is not None:
        init_raw = continuation.start_scores(ensemble, X_binned, n_threads, train_columns)
    if offset is not None:
        init_raw = offset + (ensemble.bias_array[:, None] if init_raw is None else init_raw)
    evals = []
    for name, ds in zip(names, valid_sets):
        binned = ds.binned(mapper, n_threads)
        columns = RawColumns(ds.X) if raw_values else None
        valid_offset = offsets(ds.init_score, n_outputs, f"validation set {name!r}'s "
                                                         "init_score")
        evals.append(EvalSet(name, binned, _target(loss, ds, f"validation set {name!r}"),
                             ds.sample_weight, _with_offset(continuation.start_scores(
                                 ensemble, binned, n_threads, columns), valid_offset),
                             _bound(loss, ds, f"validation set {name!r}"), valid_offset,
                             columns))
    collective = LOCAL if shard is None else shard.collective
    if shard is not None:       # row streams of its own on every worker
        streams = Streams(seed, rank=collective.rank)
    else:
        streams = continuation.streams(seed, init_model)
    grow = GrowParams(
        max_depth=int(p["max_depth"]), l2_regularization=float(p["l2_regularization"]),
        min_samples_leaf=int(p["min_samples_leaf"]),
        min_child_weight=float(p["min_child_weight"]), cat_smooth=float(p["cat_smooth"]),
        cat_l2=float(p["cat_l2"]),
        min_data_per_group=min_data_per_group(p["min_data_per_group"], n_rows),
        max_cat_threshold=int(p["max_cat_threshold"]),
        max_leaves=int(DEFAULT_MAX_LEAVES if p["max_leaves"] is None else p["max_leaves"]),
        prune_features=bool(p["prune_features"]),
        max_delta_step=max_delta_step(p["max_delta_step"], loss),
        n_outputs=n_outputs if p["multi_strategy"] == "multi_output_tree" else 1,
        linear_lambda=float(p["linear_lambda"]) if p["linear_leaves"] else None)
    if grow.n_outputs > 1 and np.any(mapper.categorical_):
        names = [train_set.feature_names[i] if train_set.feature_names is not None else
                 str(i) for i in np.flatnonzero(mapper.categorical_)[:5]]
        raise ValueError(f"multi_strategy='multi_output_tree' splits on thresholds only; "
                         f"categorical feature(s) {names} need multi_strategy="
                         "'one_output_per_tree' (or pass them as numeric codes)")
    groups = interaction_groups(p["interaction_constraints"], features.n_features,
                                features.feature_names)
    monotone = monotone_constraints(p["monotonic_cst"], features.n_features,
                                    features.feature_names, features.categorical)
    if encoder is not None:     # the constraints of a feature hold for its columns
        source = encoder.source
        if groups is not None:
            groups = [frozenset(int(i) for i in np.flatnonzero(np.isin(source, list(g))))
                      for g in groups]
        if monotone is not None:
            monotone = monotone[source]
    columns = ColumnRules(train_set.n_features, p["colsample_bytree"], p["colsample_bynode"],
                          groups, streams.get("columns"))
    # the grower works on the features that can split, and only on them
    work = working_features(X_binned, mapper.n_bins_nonmissing_, grow.min_samples_leaf,
                            mapper.categorical_, collective.distributed)
    grower = TreeGrower(work.select(X_binned), work.take(mapper.n_bins_nonmissing_),
                        mapper.missing_bin, p["grow_policy"], grow, n_threads,
                        work.take(mapper.categorical_),
                        default_bins=work.take(mapper.zero_bins()),
                        monotone=work.take(monotone),
                        column_rules=columns.restrict(work.original) if columns.active
                        else None,
                        collective=collective, features=work, raw_columns=train_columns)
    sampler = None
    if p["sampler"] is not None or p["subsample"] < 1.0:
        sampler_spec = "uniform" if p["sampler"] is None else p["sampler"]
        sampler = registry.create("sampler", sampler_spec, p["sampler_params"],
                                  subsample=p["subsample"])
    ctx = BoostingContext(X_binned, y, w, train_loss, sampler, grower, ensemble, seed,
                          p["learning_rate"], p["n_estimators"], p["leaf_estimation"],
                          p["random_strength"], evals, n_threads, streams=streams,
                          first_iteration=first_iteration, init_raw=init_raw,
                          collective=collective, offset=offset)
    evaluator = Evaluator(loss, metrics, names, [ds.group_ptr for ds in valid_sets])
    if evaluator.primary is None and p["early_stopping_rounds"]:
        raise ValueError(f"early_stopping_rounds={p['early_stopping_rounds']} has no score "
                         f"to watch: loss {evaluator.loss_name!r} gives derivatives only "
                         "(give the function a 'loss(y_true, raw)' attribute), and there is "
                         "no eval_metric")
    loss_spec = _loss_spec(spec, loss, p["loss_params"])

    def model_view() -> Model:
        view = Model(ensemble, loss, loss_spec, features.n_features, features.feature_names,
                     p, evaluator.curves, evaluator.best_iteration)
        view.encoder = encoder
        return view

    # a default thread count follows the load of the machine through the fit
    follow = (lambda: training_n_threads(None)) if p["n_jobs"] is None else None
    evals_result, best_iteration = run(ctx, update, callback_list, evaluator, model_view,
                                       threads=follow)
    bounds = ensemble.raw_bounds()
    _check_bounded(bounds, p["learning_rate"])
    ensemble.forget_unrecoverable_states(bounds)
    model = Model(ensemble, loss, loss_spec,
                  features.n_features, features.feature_names, p, evals_result,
                  best_iteration)
    model.encoder = encoder
    model.n_iterations = ctx.completed_iterations
    model.random_streams = streams.record()
    return model
