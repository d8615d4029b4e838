"""The driver of a Dask fit: data to the workers, the global borders and starting score,
one long training task per worker, and failure handling."""
from __future__ import annotations

import functools
import time
import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..engine.binning import BinMapper
from ..engine.dataset import Dataset
from ..booster.model import Model
from ..engine.params import resolve
from ..engine.random_streams import stream_rng
from ..booster.training import distributed_start
from ..plugin.collective import CollectiveError
from .collective import install
from ..engine.validation import check_offset_columns
from .parts import Parts, balance, gather_rows, is_dask, persist, persist_offsets
from .waits import TIMEOUT, bounded, results, worker_addresses
from .worker import count_categories, fit_part

#: Seconds between the driver's checks that every worker of a fit is still there.
POLL_SECONDS = 0.5

#: Seconds the driver waits, once the workers' tasks report only collective errors, for the
#: error of the worker that failed first (it tells the others before it reports).
GRACE_SECONDS = 2.0


def fixed_seed(random_state: Any) -> int:
    """One int seed for every worker (``None`` or a generator drawn from once, here): the
    workers' shared random streams must agree."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint32)[0])
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2 ** 31))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2 ** 31))
    raise ValueError(f"random_state={random_state!r} is invalid; expected None, an int, or a "
                     "numpy Generator / RandomState")


def border_rows(seed: int, weight: Optional[np.ndarray], n_rows: int,
                subsample: int) -> np.ndarray:
    """The rows the bin borders are computed on: those one machine draws from the same
    data (``Dataset.training_matrix``: rows of positive weight, at most ``subsample`` of
    them from the ``"binning"`` stream)."""
    eligible = np.arange(n_rows) if weight is None else np.flatnonzero(weight > 0)
    if eligible.size <= subsample:
        return eligible
    rng = stream_rng(np.random.SeedSequence(seed), "binning")
    return eligible[np.sort(rng.choice(eligible.size, subsample, replace=False))]


def global_mapper(client: Any, parts: Parts, groups: Dict[str, List[int]], seed: int,
                  max_bins: int, weight: Optional[np.ndarray], dataset_kw: Dict[str, Any],
                  n_threads: int, min_samples_bin: int = 1, timeout: float = TIMEOUT
                  ) -> BinMapper:
    """Bin borders from rows drawn across every partition (equal to one machine's on the
    same rows and seed), and categorical codes counted on every row; each wait at most
    ``timeout`` seconds."""
    rows = border_rows(seed, weight, parts.n_rows, BinMapper().subsample)
    sample = Dataset(gather_rows(client, parts, rows, timeout), **dataset_kw)
    counts = None
    if sample.categorical.any():
        tasks = [client.submit(count_categories, [parts.futures[i] for i in idx],
                               _slice(weight, parts, idx), dataset_kw, workers=[addr],
                               pure=False)
                 for addr, idx in groups.items()]
        counts = _merge_counts(results(client, tasks, timeout, "counting categories"))
    return BinMapper(max_bins, min_samples_bin=min_samples_bin).fit(
        sample.X, None, n_threads, sample.categorical, sample.levels, category_counts=counts)


def _merge_counts(per_worker: List[Dict[int, Tuple[np.ndarray, np.ndarray]]]
                  ) -> Dict[int, Tuple[np.ndarray, np.ndarray]]:
    """Category counts of several workers summed, per feature."""
    merged: Dict[int, Tuple[np.ndarray, np.ndarray]] = {}
    for counts in per_worker:
        for f, (codes, n) in counts.items():
            if f in merged:
                codes = np.concatenate([merged[f][0], codes])
                n = np.concatenate([merged[f][1], n])
            values, inverse = np.unique(codes, return_inverse=True)
            merged[f] = values, np.bincount(inverse, weights=n).astype(np.int64)
    return merged


def _rows_of(parts: Parts, idx: List[int]) -> np.ndarray:
    """The global rows of partitions ``idx``, in order."""
    starts = parts.starts
    return np.concatenate([np.arange(starts[i], starts[i] + parts.lengths[i]) for i in idx])


def _slice(values: Optional[np.ndarray], parts: Parts, idx: List[int]) -> Optional[np.ndarray]:
    return None if values is None else values[_rows_of(parts, idx)]


def fit(client: Any, params: Dict[str, Any], X: Any, y: np.ndarray,
        weight: Optional[np.ndarray], dataset_kw: Dict[str, Any],
        valid: Sequence[Tuple[Any, Any, Any, Any]] = (), timeout: float = 300.0,
        init_score: Any = None) -> Tuple[Model, Dict[str, Any]]:
    """Train on a Dask collection across the workers holding its partitions.

    Parameters
    ----------
    client : distributed.Client
    params : dict
        :func:`boostlib.train` parameters.
    X : Dask array or DataFrame (rows in partitions)
    y, weight : ndarray
        The whole (encoded) target and row weights, in X's row order.
    dataset_kw : dict
        ``feature_names`` and ``categorical_features`` of every worker's Dataset.
    valid : list of (X, y, weight, init_score)
        Validation sets in memory (``init_score``: their offsets, checked, or None); every
        worker holds and scores each whole.
    timeout : float
        Seconds a worker waits for the others at one step before the fit fails, and the
        driver for the workers at each step of the set-up (:mod:`~boostlib.dask.waits`).
    init_score : ndarray or Dask collection, optional
        The rows' raw-score offsets: checked, in memory (cut by rows as ``y`` is), or a Dask
        array, Series or DataFrame whose partitions hold the rows of X's
        (:func:`~boostlib.dask.parts.persist_offsets`). The fit then starts from them, as a
        local fit does.

    Returns
    -------
    model : Model
    info : dict
        ``workers`` (addresses, by rank), ``rows`` per worker, ``seconds`` and ``steps``
        of the sums on worker 0, ``setup_seconds`` (the driver's work before the workers
        start) and ``fit_seconds`` (each worker's task).
    """
    started = time.perf_counter()
    p = resolve(params)
    if p["categorical_encoding"] not in ("sets", "auto"):
        raise ValueError(f"categorical_encoding={p['categorical_encoding']!r} is not supported "
                         "in distributed training (the statistics would come from one "
                         "worker's rows); expected categorical_encoding='sets' or 'auto' "
                         "(which keeps set splits there)")
    p["random_state"] = fixed_seed(p["random_state"])
    parts = persist(client, X, timeout)
    parts = balance(client, parts, worker_addresses(client), timeout=timeout)
    if parts.n_rows != y.shape[0]:
        raise ValueError(f"y has {y.shape[0]} entries but X has {parts.n_rows} rows")
    offset_parts, n_columns = None, None
    if is_dask(init_score):
        offset_parts, n_columns = persist_offsets(client, init_score, parts, timeout)
    groups = parts.by_worker()
    if weight is not None:      # a worker whose rows all weigh 0 adds nothing: leave it out
        groups = {a: idx for a, idx in groups.items()
                  if weight[_rows_of(parts, idx)].sum() > 0}
    addresses = list(groups)
    p, bias = distributed_start(p, y, weight, offsets=init_score is not None)
    if init_score is not None:      # one column per output, before any worker starts
        shape = init_score.shape if offset_parts is None else \
            ((parts.n_rows,) if n_columns == 0 else (parts.n_rows, n_columns))
        check_offset_columns(shape, bias.size, "init_score")
    for i, entry in enumerate(valid):
        if entry[3] is not None:
            check_offset_columns(entry[3].shape, bias.size, f"eval_init_score[{i}]")
    mapper = global_mapper(client, parts, groups, p["random_state"], p["max_bins"], weight,
                           dataset_kw, 1, p["min_samples_bin"], timeout)
    n_rows = sum(int(parts.lengths[idx].sum()) for idx in groups.values())

    def scatter(data: Any, step: str, workers: List[str], broadcast: bool = False) -> Any:
        return bounded(client, functools.partial(client.scatter, data, workers=workers,
                                                 broadcast=broadcast, hash=False),
                       timeout, step)

    shard_parts = scatter([(mapper, bias, n_rows)], "sending the bin borders", addresses,
                          broadcast=True)[0]
    valid_data = scatter(list(valid), "sending the validation sets", addresses,
                         broadcast=True) if valid else []
    names = [f"valid_{i}" for i in range(len(valid))]
    bounded(client, functools.partial(client.run, install, workers=addresses), timeout,
            "preparing the workers' connections")
    fit_id = uuid.uuid4().hex
    futures = []
    setup = time.perf_counter() - started
    for rank, address in enumerate(addresses):
        idx = groups[address]
        rows = _rows_of(parts, idx)
        y_part = scatter(y[rows], "sending the targets", [address])
        w_part = None if weight is None else scatter(weight[rows], "sending the weights",
                                                     [address])
        if offset_parts is not None:        # Dask moves them where they are needed
            offsets = [offset_parts[i] for i in idx]
        elif init_score is not None:
            offsets = scatter(init_score[rows], "sending the offsets", [address])
        else:
            offsets = None
        worker_params = dict(p, verbose=p["verbose"] if rank == 0 else 0)
        futures.append(client.submit(
            fit_part, fit_id, rank, addresses, timeout, [parts.futures[i] for i in idx],
            y_part, w_part, worker_params, shard_parts, dataset_kw, valid_data, names,
            offsets, workers=[address], allow_other_workers=False, pure=False, retries=0))
    results = _wait(client, futures, addresses)
    prints = {r["fingerprint"] for r in results}
    if len(prints) != 1:
        raise CollectiveError(f"the workers' models differ ({len(prints)} different models): "
                              "a plugin decided from rows of its own worker only")
    info = {"workers": addresses, "rows": [int(parts.lengths[groups[a]].sum())
                                           for a in addresses],
            "seconds": results[0]["seconds"], "steps": results[0]["steps"],
            "setup_seconds": setup, "fit_seconds": [r["fit_seconds"] for r in results]}
    return results[0]["model"], info


def _wait(client: Any, futures: List[Any], addresses: List[str]) -> List[Dict[str, Any]]:
    """The training tasks' results: the first real error if one fails (the other workers
    stop at their next sum), and a :class:`CollectiveError` if a worker leaves the cluster
    (the others' connections to it break) or stops answering (the others' sums time out:
    their error names it)."""
    from distributed import wait
    from distributed.client import FuturesCancelledError
    while True:
        try:
            wait([f for f in futures if not f.done()], timeout=POLL_SECONDS,
                 return_when="FIRST_COMPLETED")
        except (TimeoutError, FuturesCancelledError):
            pass
        failed = [f for f in futures if f.status == "error"]
        if failed or all(f.status == "finished" for f in futures):
            break
        alive = set(worker_addresses(client))
        lost = [a for a, f in zip(addresses, futures)
                if a not in alive or f.status in ("cancelled", "lost")]
        if lost:
            client.cancel(futures)
            raise CollectiveError(f"worker {lost[0]} left the cluster during the fit (with "
                                  "its part of the data); the fit was stopped and the client "
                                  "remains usable: fit again on the workers left")
    if failed:
        errors = [f.exception() for f in failed]
        if all(isinstance(e, CollectiveError) for e in errors):
            try:        # not for long: a worker that stopped answering never reports
                wait(futures, timeout=GRACE_SECONDS)
            except TimeoutError:
                pass
            errors = [f.exception() for f in futures if f.status == "error"]
        first = next((e for e in errors if not isinstance(e, CollectiveError)), errors[0])
        client.cancel(futures)
        raise first
    return client.gather(futures)
