"""Collectives: what the workers of a distributed fit exchange, and its one-worker identity.

A distributed fit (:mod:`boostlib.dask`) runs the same boosting loop on every worker, each
on its own rows. The workers stay in step because every quantity that depends on all rows
is summed across them before anyone reads it: the histograms a split is chosen from, the
per-leaf sums of the leaf values, the training loss, and the global statistics of the
samplers (GOSS's and MVS's thresholds). Every worker then takes the same decisions from the
same sums, and grows the same tree.

:class:`Collective` is the interface; the base class is the one-worker fit, where summing
across workers is the identity. Plugins reach it as ``ctx.collective`` (a sampler in its
``begin``); a plugin whose statistics span rows (a quantile, a threshold) sums its partial
statistics with :meth:`Collective.allreduce` and then decides from the totals, identically
on every worker.
"""
from __future__ import annotations

import numpy as np


class CollectiveError(RuntimeError):
    """A distributed fit could not complete a collective step: a worker failed, left, or did
    not answer within the timeout. Raised on every worker still running."""


class Collective:
    """Sums arrays across the workers of a fit; this base class is the one-worker fit.

    Attributes
    ----------
    rank : int
        This worker's number, 0 to ``n_workers - 1`` (0 for a local fit).
    n_workers : int
        Workers taking part in the fit (1 for a local fit).
    """

    rank: int = 0
    n_workers: int = 1

    @property
    def distributed(self) -> bool:
        """Whether more than one worker takes part (sums cross workers)."""
        return self.n_workers > 1

    def allreduce(self, array: np.ndarray) -> np.ndarray:
        """Replace ``array`` by its sum over every worker, in place, and return it.

        Every worker must call it, in the same order, with an array of the same shape and
        dtype. The sum is taken in rank order, so it is the same on every worker and the
        same from one run to the next. Here (one worker) it returns ``array`` unchanged.
        """
        return array

    def total(self, *values: float) -> np.ndarray:
        """The sums over every worker of a few numbers (one collective step for all)."""
        return self.allreduce(np.array(values, dtype=np.float64))


#: The collective of a fit on one machine.
LOCAL = Collective()
