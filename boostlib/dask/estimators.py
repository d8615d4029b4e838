"""``DaskBoostClassifier`` and ``DaskBoostRegressor``: the estimators, trained across a Dask
cluster on Dask arrays and DataFrames, predicting on them partition by partition."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ..engine.validation import check_init_score, check_sample_weight, feature_names
from ..engine.params import Parameter
from ..frontend.estimators import BoostClassifier, BoostRegressor, _init_scores, _pairs
from ..plugin import registry
from . import driver
from .parts import (as_collection, is_dask, is_frame, known_rows, offset_partitions_error,
                    offset_pieces, offset_rows_error, partitions)
from .waits import results, worker_addresses


def _client(client: Any) -> Any:
    """The client to train with: the one given, or the current default one."""
    if client is not None:
        return client
    from distributed import default_client
    try:
        return default_client()
    except ValueError:
        raise ValueError("no Dask client: pass client=, or create a distributed.Client "
                         "first (it becomes the default)") from None


def _in_memory(values: Any, client: Any, timeout: float, what: str) -> Any:
    """A Dask collection computed on ``client`` within ``timeout`` seconds (``what`` it is,
    for the error of a worker that stops answering); anything else as it is."""
    if not is_dask(values):
        return values
    return results(client, [client.compute(values)], timeout, f"computing {what}")[0]


def _check_timeout(name: str, value: Any) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0):
        raise ValueError(f"{name}={value!r} is invalid; expected a number of seconds > 0")


#: The parameters the Dask estimators add to the local ones'.
DASK_PARAMETERS = (
    Parameter("client", None, "distributed.Client",
              "The cluster to train on (default: the current default client).",
              None, None, scope="estimator"),
    Parameter("timeout", 300.0, "float", """\
Seconds a worker waits for the others at one step of the fit before the fit fails with
:class:`boostlib.plugin.collective.CollectiveError` (the bound on how long a worker that stops
answering can stall a fit); before training, while the driver sets the fit up, the seconds a
worker may go unheard from (:mod:`boostlib.dask.waits`).""", _check_timeout, None,
              scope="estimator"),
)


#: What the Dask estimators' ``fit`` takes (their docstring).
FIT_DOC = """Fit across the cluster; see :meth:`boostlib.{local}.fit` (without
        ``callbacks``).

        Parameters
        ----------
        X : Dask array or DataFrame, or array-like
            Rows in partitions (in memory: cut into one partition per worker). A
            DataFrame's nullable, Arrow-backed, text and categorical columns are read as a
            local fit reads them (``docs/input_data.md``).
        y, sample_weight : Dask or in-memory array-like of shape (n_samples,)
            The target and row weights, in X's row order (any partitions). With
            ``loss="aft"`` (regressor), ``y`` holds two columns, each row's lower and upper
            bound of the time (a Dask array of shape (n_samples, 2), or a DataFrame of the
            two columns); ``loss="cox"`` is refused: its risk sets span every worker's
            rows (``docs/survival.md``).
        eval_set : list of (X, y) pairs, optional
            Validation sets, computed into memory: every worker scores each whole.
        eval_sample_weight : list of array-like, optional
            Their weights.
        init_score : Dask array, Series or DataFrame, or array-like, optional
            Raw-score offsets of shape (n_samples,) or (n_samples, n_outputs) (one column
            per class for more than two classes), as for the local fit: training starts
            from them, and the model does not hold them. A Dask collection must have X's
            partitions, with as many rows in each (say, a column of the DataFrame X comes
            from); it stays on the workers. In memory, it is cut by rows as ``y`` is.
        eval_init_score : list of array-like, optional
            The offsets of each validation set (required when ``init_score`` is given).

        Returns
        -------
        self
        """


class _DaskBoost:
    """What the Dask estimators add to the local ones (a mixin before them)."""

    _local_class: type = BoostRegressor

    def _local_params(self) -> Dict[str, Any]:
        return {p.name: getattr(self, p.name)
                for p in self._local_class.parameter_table}   # type: ignore[attr-defined]

    def _check_dask(self) -> None:
        if self.warm_start:
            raise ValueError(f"warm_start={self.warm_start!r}: {type(self).__name__} does not "
                             "continue a fit; fit a new model, or continue it locally "
                             "(to_local())")
        holding_out = not isinstance(self.early_stopping, str) and bool(self.early_stopping)
        if holding_out or self.n_iter_no_change is not None:
            given = ("early_stopping=True" if holding_out
                     else f"n_iter_no_change={self.n_iter_no_change!r}")
            raise ValueError(f"{given}: {type(self).__name__} does not hold out rows of the "
                             "training data; stop early on an eval_set with "
                             "early_stopping_rounds (early_stopping='auto' is off here)")

    def _dask_fit(self, X: Any, y: Any, sample_weight: Any, eval_set: Any,
                  eval_sample_weight: Any, init_score: Any = None,
                  eval_init_score: Any = None):
        """Train across the cluster (see :meth:`fit`)."""
        self._check_params()
        self._check_dask()
        client = _client(self.client)
        n_workers = max(1, len(worker_addresses(client)))
        timeout = float(self.timeout)
        partitioned = is_dask(X)
        X = as_collection(X, n_workers, client, timeout)
        names = feature_names(X)
        y = np.asarray(_in_memory(y, client, timeout, "y"))
        n_rows = y.shape[0]
        if n_rows == 0:
            raise ValueError("y has 0 entries: a fit needs at least 1 row of X and y")
        if init_score is not None and not (partitioned and is_dask(init_score)):
            # in memory, cut by rows as y is (X in memory has no partitions to follow)
            init_score = check_init_score(_in_memory(init_score, client, timeout,
                                                     "init_score"), n_rows)
        y_enc = self._encode_y(y, n_rows)
        w = self._class_weights(y_enc, check_sample_weight(
            _in_memory(sample_weight, client, timeout, "sample_weight"), n_rows))
        params = self._training_params()
        params["loss"], params["loss_params"] = self._loss_choice()
        self._check_loss(registry.create("loss", params["loss"], params["loss_params"]))
        spec = self.categorical_features
        dataset_kw = {"feature_names": None if names is None else list(names),
                      "categorical_features": spec}
        valid = self._memory_valid(eval_set, eval_sample_weight, client, eval_init_score,
                                   init_score is not None)
        model, self.dask_info_ = driver.fit(client, params, X, y_enc, w, dataset_kw, valid,
                                            timeout, init_score)
        model.params = {**model.params, "loss": self.loss, "loss_params": self.loss_params,
                        "n_estimators": self.n_estimators}
        self._set_model(model, self._classes_of_fit())
        return self

    def _memory_valid(self, eval_set: Any, eval_sample_weight: Any, client: Any,
                      eval_init_score: Any = None, offsets: bool = False
                      ) -> List[Tuple[Any, np.ndarray, Optional[np.ndarray],
                                      Optional[np.ndarray]]]:
        """The validation sets in memory (computed on ``client``), targets encoded like the
        training target, with their weights and offsets (required when the training rows
        have ``offsets``)."""
        if eval_set is None:
            if eval_init_score is not None:
                raise ValueError("eval_init_score is given without eval_set")
            return []
        pairs = _pairs(eval_set)
        weights = [None] * len(pairs) if eval_sample_weight is None else list(eval_sample_weight)
        if len(weights) != len(pairs):
            raise ValueError(f"eval_sample_weight has {len(weights)} entries for "
                             f"{len(pairs)} validation sets")
        inits = _init_scores(eval_init_score, len(pairs), offsets)
        out = []
        timeout = float(self.timeout)
        for i, ((Xv, yv), wv, iv) in enumerate(zip(pairs, weights, inits)):
            Xv = _in_memory(Xv, client, timeout, f"eval_set[{i}]")
            yv = np.asarray(_in_memory(yv, client, timeout, f"eval_set[{i}]"))
            yv_enc = self._encode_y(yv, yv.shape[0])
            out.append((Xv, yv_enc, check_sample_weight(
                _in_memory(wv, client, timeout, f"eval_sample_weight[{i}]"), yv.shape[0]),
                check_init_score(_in_memory(iv, client, timeout, f"eval_init_score[{i}]"),
                                 yv.shape[0], f"eval_init_score[{i}]")))
        return out

    def to_local(self) -> Any:
        """The fitted model as the local estimator (:class:`boostlib.BoostClassifier` or
        :class:`boostlib.BoostRegressor`), with the same parameters: it predicts on
        in-memory data, saves and loads like any model, and continues with ``warm_start``."""
        fitted = self._state()
        local = self._local_class(**self._local_params())
        local._set_model(fitted.model, fitted.classes)
        return local

    def _map(self, method: Callable[[Any, Any, Any], np.ndarray], X: Any,
             init_score: Any = None) -> Any:
        """``method(local_estimator, part, offsets)`` on every partition of a Dask
        collection and its rows' offsets (:func:`_offsets_like`; None without
        ``init_score``), lazily (a Dask array of the results stacked in row order); in
        memory for anything else.

        The result's columns and type are those ``method`` gives for 0 rows of ``X``'s
        columns, computed here: a partition without rows gives 0 rows of them.
        """
        local = self.to_local()
        if not is_dask(X):
            if is_dask(init_score):
                init_score = init_score.compute()
            return method(local, X, init_score)
        import dask
        import dask.array as da
        if is_frame(X):
            empty, lengths = X._meta, [np.nan] * X.npartitions
        else:
            X = X.rechunk({1: -1})          # whole rows per block
            empty, lengths = np.empty((0,) + X.shape[1:], dtype=X.dtype), X.chunks[0]
        offsets, no_rows = _offsets_like(init_score, lengths)
        meta = method(local, empty, no_rows)
        task = dask.delayed(_on_partition, pure=True)
        local_ = dask.delayed(local, pure=True)
        pieces = [da.from_delayed(task(method, local_, part, i, offset),
                                  shape=(n,) + meta.shape[1:], dtype=meta.dtype)
                  for i, (part, n, offset) in enumerate(zip(partitions(X), lengths, offsets))]
        return da.concatenate(pieces, axis=0)

    def _staged(self, method: str, X: Any) -> Iterator[Any]:
        """The steps of ``staged_<method>``: for a Dask collection, step ``k`` is ``method``
        with ``iteration_range=(0, k + 1)`` (bit-identical), a Dask array."""
        if not is_dask(X):
            return getattr(super(), f"staged_{method}")(X)
        n_trees = self._state().model.n_trees
        return (getattr(self, method)(X, iteration_range=(0, k + 1)) for k in range(n_trees))

    def predict(self, X: Any, *, init_score: Any = None, **kwargs: Any) -> Any:
        """Predictions (:meth:`boostlib.BoostRegressor.predict`,
        :meth:`boostlib.BoostClassifier.predict`): for a Dask collection, a Dask array
        computed partition by partition where the partitions are.

        ``init_score``, the rows' raw-score offsets, is added to each partition's raw
        scores: a Dask array, Series or DataFrame with X's partitions (as many rows in
        each), or in memory (with a Dask array X, whose partitions' rows Dask knows).
        """
        return self._map(lambda est, part, offset: est.predict(part, init_score=offset,
                                                               **kwargs), X, init_score)

    def staged_predict(self, X: Any) -> Iterator[Any]:
        """Predictions after each iteration (:meth:`boostlib.BoostRegressor.staged_predict`);
        for a Dask collection, a generator of Dask arrays."""
        return self._staged("predict", X)

    def apply(self, X: Any) -> Any:
        """The leaf of every row in every tree (:meth:`boostlib.BoostRegressor.apply`); a Dask
        array for a Dask collection."""
        return self._map(lambda est, part, offset: est.apply(part), X)

    def predict_virtual_ensembles(self, X: Any, n_members: int = 10) -> Any:
        """Predictions of ``n_members`` models along the chain
        (:meth:`boostlib.BoostRegressor.predict_virtual_ensembles`); a Dask array for a Dask
        collection."""
        return self._map(lambda est, part, offset:
                         est.predict_virtual_ensembles(part, n_members), X)


def _offsets_like(init_score: Any, lengths: Sequence[float]
                  ) -> Tuple[List[Any], Optional[np.ndarray]]:
    """The offsets of each partition of X, whose partitions hold ``lengths`` rows (NaN:
    not known before X is computed), and 0 rows of them: ``[None, ...]`` and None without
    ``init_score``.

    Raises
    ------
    ValueError
        Naming ``init_score``: other numbers of partitions, or of rows where both are
        known, than X's; offsets in memory for a DataFrame (whose partitions' rows are not
        known), or of another shape than X's rows.
    """
    if init_score is None:
        return [None] * len(lengths), None
    if is_dask(init_score):
        pieces = offset_pieces(init_score)
        if len(pieces) != len(lengths):
            raise offset_partitions_error(len(pieces), len(lengths))
        rows = known_rows(init_score)
        if rows is not None and not any(np.isnan(n) for n in lengths):
            for i, (n, expected) in enumerate(zip(rows, lengths)):
                if n != expected:
                    raise offset_rows_error(i, n, int(expected))
        columns = (len(init_score.columns),) if is_frame(init_score) else \
            tuple(init_score.shape[1:])
        return pieces, np.zeros((0,) + columns)
    if any(np.isnan(n) for n in lengths):
        raise ValueError("init_score: X is a Dask DataFrame, whose partitions' rows are not "
                         "known before it is computed, and init_score is in memory: pass "
                         "init_score as a Dask collection with X's partitions (such as "
                         "frame['offset'] of the DataFrame X comes from)")
    offsets = check_init_score(init_score, int(sum(lengths)))
    return (np.split(offsets, np.cumsum(np.asarray(lengths, dtype=np.int64))[:-1]),
            offsets[:0])


def _on_partition(method: Callable[[Any, Any, Any], np.ndarray], est: Any, part: Any,
                  index: int, offset: Any = None) -> np.ndarray:
    """``method(est, part, offset)`` on partition ``index`` and its rows' offsets (None:
    none); an error in the data names the partition."""
    if offset is not None:
        offset = np.asarray(offset)
        n_rows = part.shape[0]
        if offset.ndim == 0 or offset.shape[0] != n_rows:
            raise offset_rows_error(index, offset.shape[0] if offset.ndim else 1, n_rows)
        try:
            offset = check_init_score(offset, n_rows)
        except ValueError as exc:
            raise ValueError(f"partition {index} of init_score: {exc} (rows counted from "
                             "the partition's first)") from exc
    try:
        return method(est, part, offset)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"partition {index} of X: {exc}") from exc


class DaskBoostRegressor(_DaskBoost, BoostRegressor):
    """:class:`boostlib.BoostRegressor` trained across a Dask cluster.

    Parameters are those of :class:`boostlib.BoostRegressor` (``warm_start`` must stay
    False), plus ``client`` and ``timeout``.

    Parameters
    ----------
    {parameters}

    Notes
    -----
    ``fit`` takes a Dask array or DataFrame (or data in memory, cut into one partition per
    worker), the target and weights as Dask or in-memory arrays, and validation sets
    (``eval_set``) that every worker holds whole. See ``docs/dask.md``.
    """

    _local_class = BoostRegressor
    parameter_table = BoostRegressor.parameter_table + DASK_PARAMETERS

    def fit(self, X: Any, y: Any, sample_weight: Any = None,
            eval_set: Optional[Sequence[Tuple[Any, Any]]] = None,
            eval_sample_weight: Optional[Sequence[Any]] = None, *, init_score: Any = None,
            eval_init_score: Optional[Sequence[Any]] = None):
        return self._dask_fit(X, y, sample_weight, eval_set, eval_sample_weight, init_score,
                              eval_init_score)

    fit.__doc__ = FIT_DOC.format(local="BoostRegressor")


class DaskBoostClassifier(_DaskBoost, BoostClassifier):
    """:class:`boostlib.BoostClassifier` trained across a Dask cluster.

    Parameters are those of :class:`boostlib.BoostClassifier` (``warm_start`` must stay
    False), plus ``client`` and ``timeout``; ``class_weight="balanced"`` counts the classes
    of the whole target.

    Parameters
    ----------
    {parameters}
    """

    _local_class = BoostClassifier
    parameter_table = BoostClassifier.parameter_table + DASK_PARAMETERS

    def fit(self, X: Any, y: Any, sample_weight: Any = None,
            eval_set: Optional[Sequence[Tuple[Any, Any]]] = None,
            eval_sample_weight: Optional[Sequence[Any]] = None, *, init_score: Any = None,
            eval_init_score: Optional[Sequence[Any]] = None):
        self._fitting_classes = None
        try:
            self._dask_fit(X, y, sample_weight, eval_set, eval_sample_weight, init_score,
                           eval_init_score)
        finally:
            del self._fitting_classes
        return self

    fit.__doc__ = FIT_DOC.format(local="BoostClassifier")

    def predict_proba(self, X: Any, *, init_score: Any = None, **kwargs: Any) -> Any:
        """Class probabilities (:meth:`boostlib.BoostClassifier.predict_proba`); a Dask
        array for a Dask collection. ``init_score``: as for ``predict``."""
        return self._map(lambda est, part, offset: est.predict_proba(
            part, init_score=offset, **kwargs), X, init_score)

    def decision_function(self, X: Any, *, init_score: Any = None, **kwargs: Any) -> Any:
        """Raw scores (:meth:`boostlib.BoostClassifier.decision_function`); a Dask array for
        a Dask collection. ``init_score``: as for ``predict``."""
        return self._map(lambda est, part, offset: est.decision_function(
            part, init_score=offset, **kwargs), X, init_score)

    def staged_predict_proba(self, X: Any) -> Iterator[Any]:
        """Class probabilities after each iteration
        (:meth:`boostlib.BoostClassifier.staged_predict_proba`); for a Dask collection, a
        generator of Dask arrays."""
        return self._staged("predict_proba", X)

    def staged_decision_function(self, X: Any) -> Iterator[Any]:
        """Raw scores after each iteration
        (:meth:`boostlib.BoostClassifier.staged_decision_function`); for a Dask collection,
        a generator of Dask arrays."""
        return self._staged("decision_function", X)
