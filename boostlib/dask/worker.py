"""What runs on the workers of a Dask fit: one long task per worker, which trains on the
partitions that worker holds, and a short pass that counts categories."""
from __future__ import annotations

import hashlib
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..engine.binning import code_counts
from ..engine.dataset import Dataset
from ..booster.model import Model
from ..engine.shard import Shard
from ..booster.training import train
from ..plugin.collective import CollectiveError
from .collective import DaskCollective
from .parts import concat


def count_categories(parts: List[Any], weight: Optional[np.ndarray],
                     dataset_kw: Dict[str, Any]) -> Dict[int, Tuple[np.ndarray, np.ndarray]]:
    """``{feature: (codes, counts)}`` of the categorical features over this worker's rows of
    positive weight (their sum over workers chooses the codes that get bins)."""
    data = Dataset(concat(parts), **dataset_kw)
    keep = slice(None) if weight is None else np.flatnonzero(weight > 0)
    return {int(f): code_counts(np.asarray(data.X[keep, f], dtype=np.float64))
            for f in np.flatnonzero(data.categorical)}


def fingerprint(model: Model) -> str:
    """A digest of a model's trees and coefficients: equal on every worker of a fit that
    stayed in step."""
    digest = hashlib.sha256(np.ascontiguousarray(model.ensemble.coef).tobytes())
    digest.update(np.ascontiguousarray(model.ensemble.bias_array).tobytes())
    for tree in model.ensemble.trees:
        for part in getattr(tree, "trees", [tree]):
            digest.update(np.ascontiguousarray(part.value).tobytes())
            digest.update(np.ascontiguousarray(part.feature).tobytes())
    return digest.hexdigest()


def _worker_threads() -> int:
    """The threads of the Dask worker running this task (1 outside a worker)."""
    try:
        from distributed import get_worker
        return max(1, int(get_worker().state.nthreads))
    except (ImportError, ValueError, AttributeError):
        return 1


def joined_offsets(offsets: Any) -> Optional[np.ndarray]:
    """This worker's rows' offsets: None, an array (cut from offsets in memory), or the
    partitions of a Dask collection (arrays, Series or DataFrames), stacked in order."""
    if offsets is None or isinstance(offsets, np.ndarray):
        return offsets
    return np.concatenate([np.asarray(part, dtype=np.float64) for part in offsets], axis=0)


def fit_part(fit: str, rank: int, addresses: List[str], timeout: float,
             parts: List[Any], y: np.ndarray, weight: Optional[np.ndarray],
             params: Dict[str, Any], shard_parts: Tuple[Any, np.ndarray, int],
             dataset_kw: Dict[str, Any], valid: List[Tuple[Any, Any, Any, Any]],
             valid_names: List[str], offsets: Any = None) -> Dict[str, Any]:
    """Train on this worker's partitions as worker ``rank`` of the workers at
    ``addresses`` (fit ``fit``); ``offsets``: their rows' offsets (:func:`joined_offsets`),
    and each validation set ``(X, y, weight, offsets)``.

    Returns the model (worker 0 only; the others return None), its fingerprint, the time
    and number of the sums this worker took part in, and the time of the whole fit. A
    failure here fails the fit on every worker at once instead of leaving them waiting.
    """
    start = time.perf_counter()
    collective = DaskCollective(fit, rank, addresses, timeout)
    try:
        train_set = Dataset(concat(parts), y, sample_weight=weight,
                            init_score=joined_offsets(offsets), **dataset_kw)
        valid_sets = [Dataset(Xv, yv, sample_weight=wv, reference=train_set, init_score=iv)
                      for Xv, yv, wv, iv in valid]
        mapper, bias, n_rows = shard_parts
        if params.get("n_jobs") is None:        # the worker's threads, not the machine's
            params = dict(params, n_jobs=_worker_threads())
        model = train(params, train_set, valid_sets=valid_sets, valid_names=valid_names,
                      shard=Shard(collective, mapper, bias, n_rows))
    except CollectiveError:
        collective.close()
        raise
    except BaseException as exc:
        collective.fail(f"worker {rank} failed: {type(exc).__name__}: {exc}")
        collective.close()
        raise
    collective.close()
    return {"model": model if rank == 0 else None, "fingerprint": fingerprint(model),
            "seconds": collective.seconds, "steps": collective.steps,
            "fit_seconds": time.perf_counter() - start}
