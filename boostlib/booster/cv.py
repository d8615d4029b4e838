"""k-fold cross-validation: :func:`boostlib.cv`, as LightGBM's ``lgb.cv`` and XGBoost's
``xgb.cv``.

Every fold is an ordinary :func:`~boostlib.train` run on the other folds' rows, its own
fold as the validation set. The folds advance in lockstep, one iteration of each in turn
(never two at once: each gets the fit's ``n_jobs`` threads), so that early stopping can
watch the mean of the folds' scores and stop them all at the same round, as LightGBM's
and XGBoost's ``cv`` do; the folds' models are all in memory meanwhile. A fold's scores are
those its ``train`` run alone would record.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..engine.callbacks import CallbackLike, IterationInfo, as_callback
from .._kernels._openmp import effective_n_threads
from ..engine.dataset import BatchDataset, Dataset
from ..engine.params import n_rounds
from ..engine.frames import Columns
from ..engine.random_streams import seed_sequence, stream_rng
from ..plugin import checks, registry
from .model import Model
from .training import default_loss, train

#: The name of each fold's validation set in its ``evals_result``.
VALID = "valid"


@dataclass
class CVResult:
    """What :func:`cv` gives.

    Attributes
    ----------
    history : dict of str to list of float
        Per round, ``"<metric>-mean"`` and ``"<metric>-std"`` (population standard
        deviation, as LightGBM's) of every score over the held-out folds: the loss and the
        ``eval_metric``\\ s.
    best_iteration : int
        0-based round of the best mean of the primary score (the first metric, else the
        loss).
    metric : str
        The primary score's name.
    folds : list of (ndarray, ndarray)
        Each fold's training and held-out rows.
    models : list of Model, optional
        With ``return_models=True``: each fold's model, truncated at ``best_iteration``
        when early stopping stopped the folds.
    oof_prediction : ndarray, optional
        With ``return_models=True``: every row's prediction (the loss's response) by the
        model of the fold that held it out.
    """

    history: Dict[str, List[float]]
    best_iteration: int
    metric: str
    folds: List[Tuple[np.ndarray, np.ndarray]]
    models: Optional[List[Model]] = None
    oof_prediction: Optional[np.ndarray] = None

    @property
    def best_score(self) -> float:
        """The best mean of the primary score."""
        return self.history[f"{self.metric}-mean"][self.best_iteration]

    def to_frame(self) -> Any:
        """``history`` as a pandas DataFrame, one row per round."""
        import pandas as pd
        return pd.DataFrame(self.history)


def cv(params: Mapping[str, Any], train_set: Dataset, nfold: int = 5, *,
       stratified: Optional[bool] = None, folds: Any = None, shuffle: bool = True,
       metrics: Any = None, early_stopping_rounds: Optional[int] = None,
       callbacks: Sequence[CallbackLike] = (), return_models: bool = False,
       random_state: Any = None) -> CVResult:
    """Cross-validate: train on ``nfold - 1`` folds, score the held-out one, for each fold.

    Parameters
    ----------
    params : dict
        Training parameters, as for :func:`boostlib.train` (its ``early_stopping_rounds``,
        if any, is the default of ``early_stopping_rounds`` here).
    train_set : Dataset
        The rows to split, with their target (weights, query groups and ``init_score``
        follow their rows).
    nfold : int, default 5
    stratified : bool, optional
        Keep each class's share in every fold (default: True for a classification loss).
    folds : iterable of (train_rows, held_out_rows), or a splitter, optional
        The folds themselves, or an object with scikit-learn's ``split(X, y, groups)``
        (``KFold``, ``GroupKFold``, ...), called with the row numbers as ``X``, the target
        and, for query groups, each row's query. Then ``nfold``, ``stratified`` and
        ``shuffle`` do not apply.
    shuffle : bool, default True
        Draw the folds at random (with ``random_state``); False cuts the rows in order.
    metrics : str, Metric, function or list of them, optional
        The ``eval_metric`` of every fold (default: the one in ``params``).
    early_stopping_rounds : int, optional
        Stop every fold when the mean of the primary score over the folds has not improved
        for this many rounds; the models are truncated at the best round.
    callbacks : list, optional
        Called after every round with an :class:`boostlib.callbacks.IterationInfo` whose
        ``evals_result`` is ``{"cv": history}``; one returning True stops every fold.
    return_models : bool, default False
        Keep each fold's model and the out-of-fold predictions.
    random_state : int, optional
        Seeds the folds (default: the ``random_state`` of ``params``).

    Returns
    -------
    CVResult

    Raises
    ------
    ValueError
        For ``nfold`` below 2 or above the number of rows (queries, for ranking), folds
        that do not split the rows, or bad parameters.
    """
    if not isinstance(train_set, Dataset) or train_set.y is None:
        raise TypeError(f"train_set={train_set!r} is invalid; expected a boostlib.Dataset "
                        "with a target")
    p = dict(params)
    rounds = early_stopping_rounds if early_stopping_rounds is not None else \
        p.pop("early_stopping_rounds", None)
    p.pop("early_stopping_rounds", None)
    if rounds is not None and not (isinstance(rounds, (int, np.integer)) and rounds >= 1):
        raise ValueError(f"early_stopping_rounds={rounds!r} is invalid; expected an int >= 1")
    if metrics is not None:
        p["eval_metric"] = metrics
    # the folds' rounds: n_estimators=None runs more of them when the mean score stops
    p["n_estimators"] = n_rounds(p.get("n_estimators"), rounds is not None)
    seed = p.get("random_state") if random_state is None else random_state
    splits = _splits(train_set, p, nfold, stratified, folds, shuffle, seed)
    lockstep = _Lockstep(len(splits), rounds, [as_callback(cb, i)
                                               for i, cb in enumerate(callbacks)])
    models: List[Optional[Model]] = [None] * len(splits)
    errors: List[Optional[BaseException]] = [None] * len(splits)

    def run(k: int) -> None:
        fit_rows, held = splits[k]
        lockstep.turn.acquire()
        try:
            models[k] = train(p, train_set.subset(fit_rows),
                              valid_sets=[train_set.subset(held)], valid_names=[VALID],
                              callbacks=[lockstep.callback(k)])
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            errors[k] = exc
            lockstep.barrier.abort()
        finally:
            lockstep.turn.release()

    threads = [threading.Thread(target=run, args=(k,), name=f"boostlib-cv-fold-{k}")
               for k in range(len(splits))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    real = [e for e in errors if e is not None and not isinstance(e, threading.BrokenBarrierError)]
    if real or any(e is not None for e in errors):
        raise (real or [e for e in errors if e is not None])[0]
    result = CVResult(lockstep.history, lockstep.best_iteration, lockstep.metric, splits)
    if return_models:
        result.models = list(models)  # type: ignore[arg-type]
        result.oof_prediction = _out_of_fold(train_set, splits, result.models)
    return result


class _Lockstep:
    """Runs the folds' iterations in turn: after each iteration a fold records its scores,
    gives up its turn and waits for the others (a barrier); the barrier's action, run once
    per round, averages the scores, calls the callbacks and decides whether to stop."""

    def __init__(self, n_folds: int, rounds: Optional[int], callbacks: List[Any]):
        self.turn = threading.Lock()
        self.barrier = threading.Barrier(n_folds, action=self._round)
        self.rounds = rounds
        self.callbacks = callbacks
        self.latest: List[Dict[str, float]] = [{} for _ in range(n_folds)]
        self.history: Dict[str, List[float]] = {}
        self.metric = ""
        self.higher_is_better: Dict[str, bool] = {}
        self.best_iteration = -1
        self.best = math.nan
        self.improved = False
        self.stop = False
        self.iteration = -1
        self.n_iterations = 0

    def callback(self, k: int) -> Any:
        def on_iteration(info: IterationInfo) -> bool:
            self.latest[k] = {name: values[-1]
                              for name, values in info.evals_result[VALID].items()}
            self.metric, self.higher_is_better = info.metric, info.higher_is_better
            self.iteration, self.n_iterations = info.iteration, info.n_iterations
            self.turn.release()
            try:
                self.barrier.wait()
            finally:
                self.turn.acquire()
            if self.improved and self.rounds is not None:
                info.mark_best()            # the fold's model is truncated here if it stops
            return self.stop
        return on_iteration

    def _round(self) -> None:
        for name in self.latest[0]:
            values = np.array([scores[name] for scores in self.latest])
            self.history.setdefault(f"{name}-mean", []).append(float(values.mean()))
            self.history.setdefault(f"{name}-std", []).append(float(values.std()))
        score = self.history[f"{self.metric}-mean"][-1]
        higher = self.higher_is_better.get(self.metric, False)
        self.improved = self.best_iteration < 0 or (score > self.best if higher
                                                    else score < self.best)
        if self.improved:
            self.best, self.best_iteration = score, self.iteration
        info = IterationInfo(self.iteration, self.n_iterations, self.metric,
                             {"cv": self.history}, 0, lambda: None,
                             dict(self.higher_is_better))
        stop = [bool(cb.on_iteration(info)) for cb in self.callbacks]
        self.stop = any(stop) or (self.rounds is not None
                                  and self.iteration - self.best_iteration >= self.rounds)


def _splits(train_set: Dataset, params: Mapping[str, Any], nfold: int,
            stratified: Optional[bool], folds: Any, shuffle: bool, seed: Any
            ) -> List[Tuple[np.ndarray, np.ndarray]]:
    """The folds: ``(training rows, held-out rows)`` each."""
    n = train_set.n_rows
    group = train_set.group
    query = None if group is None else np.repeat(np.arange(group.size), group)
    if folds is not None:
        pairs = list(folds.split(np.arange(n)[:, None], train_set.y, query)
                     if hasattr(folds, "split") else folds)
        out = []
        for i, pair in enumerate(pairs):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise ValueError(f"folds[{i}] is not a (train_rows, held_out_rows) pair")
            fit_rows, held = (np.sort(np.asarray(r, dtype=np.intp)) for r in pair)
            if fit_rows.size == 0 or held.size == 0 or fit_rows.min() < 0 or \
                    max(fit_rows.max(), held.max()) >= n or np.intersect1d(fit_rows, held).size:
                raise ValueError(f"folds[{i}]: expected two non-empty, disjoint sets of row "
                                 f"numbers in [0, {n})")
            out.append((fit_rows, held))
        if len(out) < 2:
            raise ValueError(f"folds gives {len(out)} fold(s); expected at least 2")
        return out
    units = n if group is None else group.size
    if not (isinstance(nfold, (int, np.integer)) and 2 <= nfold <= units):
        raise ValueError(f"nfold={nfold!r} is invalid; expected an int in [2, {units}] (the "
                         f"number of {'rows' if group is None else 'queries'})")
    rng = stream_rng(seed_sequence(seed), "folds")
    if stratified is None:
        spec = params.get("loss")
        loss = registry.create("loss", spec if spec is not None else
                               default_loss(train_set.y), params.get("loss_params"))
        stratified = bool(loss.is_classification) and group is None
    fold_of = np.empty(units, dtype=np.intp)
    if stratified:
        if group is not None:
            raise ValueError("stratified=True does not apply to query groups, whose folds "
                             "hold whole queries")
        start = 0
        for c in np.unique(train_set.y):
            rows = np.flatnonzero(train_set.y == c)
            if shuffle:
                rows = rng.permutation(rows)
            fold_of[rows] = (start + np.arange(rows.size)) % nfold
            start += rows.size
    else:
        order = rng.permutation(units) if shuffle else np.arange(units)
        for k, part in enumerate(np.array_split(order, nfold)):
            fold_of[part] = k
    if query is not None:
        fold_of = fold_of[query]
    return [(np.flatnonzero(fold_of != k), np.flatnonzero(fold_of == k))
            for k in range(nfold)]


def _out_of_fold(train_set: Dataset, splits: Sequence[Tuple[np.ndarray, np.ndarray]],
                 models: Sequence[Model]) -> np.ndarray:
    """Every row's prediction by the model of the fold that held it out."""
    out: Optional[np.ndarray] = None
    for (_, held), model in zip(splits, models):
        held_set = train_set.subset(held)
        if isinstance(held_set, BatchDataset):      # no values: the rows binned again
            threads = effective_n_threads(model.params.get("n_jobs"))
            bins = held_set.binned(model.ensemble.bin_mapper, threads)
            pred = checks.response(model.loss, model.ensemble.predict_binned(bins, threads))
            del bins
        else:
            X = held_set.X.to_array() if isinstance(held_set.X, Columns) else held_set.X
            pred = model.predict(X, init_score=held_set.init_score)
        if out is None:
            out = np.empty((train_set.n_rows,) + pred.shape[1:])
        out[held] = pred
    assert out is not None
    return out


__all__ = ["cv", "CVResult"]
