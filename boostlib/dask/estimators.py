"""``DaskBoostClassifier`` and ``DaskBoostRegressor``: the estimators, trained across a Dask
cluster on Dask arrays and DataFrames, predicting on them partition by partition."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ..engine.validation import check_sample_weight, feature_names
from ..engine.params import Parameter
from ..frontend.estimators import BoostClassifier, BoostRegressor, _pairs
from ..plugin import registry
from . import driver
from .parts import as_collection, is_dask, is_frame, partitions
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

    def _dask_fit(self, X: Any, y: Any, sample_weight: Any, eval_set: Any,
                  eval_sample_weight: Any):
        """Train across the cluster (see :meth:`fit`)."""
        self._check_params()
        self._check_dask()
        client = _client(self.client)
        n_workers = max(1, len(worker_addresses(client)))
        timeout = float(self.timeout)
        X = as_collection(X, n_workers, client, timeout)
        names = feature_names(X)
        y = np.asarray(_in_memory(y, client, timeout, "y"))
        n_rows = y.shape[0]
        if n_rows == 0:
            raise ValueError("y has 0 entries: a fit needs at least 1 row of X and y")
        y_enc = self._encode_y(y, n_rows)
        w = self._class_weights(y_enc, check_sample_weight(
            _in_memory(sample_weight, client, timeout, "sample_weight"), n_rows))
        params = self._training_params()
        params["loss"], params["loss_params"] = self._loss_choice()
        self._check_loss(registry.create("loss", params["loss"], params["loss_params"]))
        spec = self.categorical_features
        dataset_kw = {"feature_names": None if names is None else list(names),
                      "categorical_features": spec}
        valid = self._memory_valid(eval_set, eval_sample_weight, client)
        model, self.dask_info_ = driver.fit(client, params, X, y_enc, w, dataset_kw, valid,
                                            timeout)
        model.params = {**model.params, "loss": self.loss, "loss_params": self.loss_params,
                        "n_estimators": self.n_estimators}
        self._set_model(model, self._classes_of_fit())
        return self

    def _memory_valid(self, eval_set: Any, eval_sample_weight: Any, client: Any
                      ) -> List[Tuple[Any, np.ndarray, Optional[np.ndarray]]]:
        """The validation sets in memory (computed on ``client``), targets encoded like the
        training target."""
        if eval_set is None:
            return []
        pairs = _pairs(eval_set)
        weights = [None] * len(pairs) if eval_sample_weight is None else list(eval_sample_weight)
        if len(weights) != len(pairs):
            raise ValueError(f"eval_sample_weight has {len(weights)} entries for "
                             f"{len(pairs)} validation sets")
        out = []
        timeout = float(self.timeout)
        for i, ((Xv, yv), wv) in enumerate(zip(pairs, weights)):
            Xv = _in_memory(Xv, client, timeout, f"eval_set[{i}]")
            yv = np.asarray(_in_memory(yv, client, timeout, f"eval_set[{i}]"))
            yv_enc = self._encode_y(yv, yv.shape[0])
            out.append((Xv, yv_enc, check_sample_weight(
                _in_memory(wv, client, timeout, f"eval_sample_weight[{i}]"), yv.shape[0])))
        return out

    def to_local(self) -> Any:
        """The fitted model as the local estimator (:class:`boostlib.BoostClassifier` or
        :class:`boostlib.BoostRegressor`), with the same parameters: it predicts on
        in-memory data, saves and loads like any model, and continues with ``warm_start``."""
        fitted = self._state()
        local = self._local_class(**self._local_params())
        local._set_model(fitted.model, fitted.classes)
        return local

    def _map(self, method: Callable[[Any, Any], np.ndarray], X: Any) -> Any:
        """``method(local_estimator, part)`` on every partition of a Dask collection, lazily
        (a Dask array of the results stacked in row order); in memory for anything else.

        The result's columns and type are those ``method`` gives for 0 rows of ``X``'s
        columns, computed here: a partition without rows gives 0 rows of them.
        """
        local = self.to_local()
        if not is_dask(X):
            return method(local, X)
        import dask
        import dask.array as da
        if is_frame(X):
            empty, lengths = X._meta, [np.nan] * X.npartitions
        else:
            X = X.rechunk({1: -1})          # whole rows per block
            empty, lengths = np.empty((0,) + X.shape[1:], dtype=X.dtype), X.chunks[0]
        meta = method(local, empty)
        task = dask.delayed(_on_partition, pure=True)
        local_ = dask.delayed(local, pure=True)
        pieces = [da.from_delayed(task(method, local_, part, i), shape=(n,) + meta.shape[1:],
                                  dtype=meta.dtype)
                  for i, (part, n) in enumerate(zip(partitions(X), lengths))]
        return da.concatenate(pieces, axis=0)

    def _staged(self, method: str, X: Any) -> Iterator[Any]:
        """The steps of ``staged_<method>``: for a Dask collection, step ``k`` is ``method``
        with ``iteration_range=(0, k + 1)`` (bit-identical), a Dask array."""
        if not is_dask(X):
            return getattr(super(), f"staged_{method}")(X)
        n_trees = self._state().model.n_trees
        return (getattr(self, method)(X, iteration_range=(0, k + 1)) for k in range(n_trees))

    def predict(self, X: Any, **kwargs: Any) -> Any:
        """Predictions (:meth:`boostlib.BoostRegressor.predict`,
        :meth:`boostlib.BoostClassifier.predict`): for a Dask collection, a Dask array
        computed partition by partition where the partitions are."""
        return self._map(lambda est, part: est.predict(part, **kwargs), X)

    def staged_predict(self, X: Any) -> Iterator[Any]:
        """Predictions after each iteration (:meth:`boostlib.BoostRegressor.staged_predict`);
        for a Dask collection, a generator of Dask arrays."""
        return self._staged("predict", X)

    def apply(self, X: Any) -> Any:
        """The leaf of every row in every tree (:meth:`boostlib.BoostRegressor.apply`); a Dask
        array for a Dask collection."""
        return self._map(lambda est, part: est.apply(part), X)

    def predict_virtual_ensembles(self, X: Any, n_members: int = 10) -> Any:
        """Predictions of ``n_members`` models along the chain
        (:meth:`boostlib.BoostRegressor.predict_virtual_ensembles`); a Dask array for a Dask
        collection."""
        return self._map(lambda est, part: est.predict_virtual_ensembles(part, n_members), X)


def _on_partition(method: Callable[[Any, Any], np.ndarray], est: Any, part: Any,
                  index: int) -> np.ndarray:
    """``method(est, part)`` on partition ``index``; an error in the data names the
    partition."""
    try:
        return method(est, part)
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
            eval_sample_weight: Optional[Sequence[Any]] = None):
        """Fit across the cluster; see :meth:`boostlib.BoostRegressor.fit` (without
        ``callbacks``)."""
        return self._dask_fit(X, y, sample_weight, eval_set, eval_sample_weight)


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
            eval_sample_weight: Optional[Sequence[Any]] = None):
        """Fit across the cluster; see :meth:`boostlib.BoostClassifier.fit` (without
        ``callbacks``)."""
        self._fitting_classes = None
        try:
            self._dask_fit(X, y, sample_weight, eval_set, eval_sample_weight)
        finally:
            del self._fitting_classes
        return self

    def predict_proba(self, X: Any, **kwargs: Any) -> Any:
        """Class probabilities (:meth:`boostlib.BoostClassifier.predict_proba`); a Dask
        array for a Dask collection."""
        return self._map(lambda est, part: est.predict_proba(part, **kwargs), X)

    def decision_function(self, X: Any, **kwargs: Any) -> Any:
        """Raw scores (:meth:`boostlib.BoostClassifier.decision_function`); a Dask array for
        a Dask collection."""
        return self._map(lambda est, part: est.decision_function(part, **kwargs), X)

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
