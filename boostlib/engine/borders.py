"""Rules shared by dense and sparse binning (:mod:`~boostlib.engine.binning`,
:mod:`~boostlib.engine.sparse_binning`): quantiles of sorted values, and how many bins a
feature gets and which of its borders are kept."""
from __future__ import annotations

import numpy as np


def midpoint_percentiles(values: np.ndarray, percentiles: np.ndarray) -> np.ndarray:
    """``np.percentile(values, percentiles, method="midpoint")`` of *sorted* ``values``.

    NumPy's arithmetic, without its selection (which costs as much as the sort the values
    already had): the virtual index ``(floor(m) + ceil(m)) / 2`` of ``m = (n - 1) * q``, and
    NumPy's interpolation between its two neighbours ``a <= b``, with weight 0 (a whole
    index: ``a``) or 0.5 (``b - (b - a) * 0.5``). Where ``b - a`` overflows, NumPy's answer
    is NaN or -inf; here it is ``a`` or ``a / 2 + b / 2``. ``tests/test_kernels_binning.py``
    checks the rest against ``np.percentile`` bit for bit.
    """
    n = values.size
    q = np.true_divide(percentiles, 100)
    m = (n - 1) * q
    virtual = 0.5 * (np.floor(m) + np.ceil(m))
    gamma = np.where(virtual % 1 == 0, 0.0, 0.5)
    below = np.floor(virtual).astype(np.intp)
    above = below + 1
    last = virtual >= n - 1              # at or past the last value: the last value
    below[last] = n - 1
    above[last] = n - 1
    a, b = values[below], values[above]
    with np.errstate(over="ignore", invalid="ignore"):
        diff = b - a
        out = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)
    overflow = ~np.isfinite(out)
    if overflow.any():
        out[overflow] = np.where(gamma[overflow] >= 0.5,
                                 a[overflow] * 0.5 + b[overflow] * 0.5, a[overflow])
    return out


def bins_for_rows(max_bins: int, n_values: int, min_samples_bin: int) -> int:
    """The bins a feature of ``n_values`` sampled values is cut into by quantiles: at most
    ``max_bins``, and few enough to hold ``min_samples_bin`` values each."""
    return max(1, min(max_bins, n_values // min_samples_bin))


def keep_full_bins(borders: np.ndarray, below: np.ndarray, n_values: int,
                   min_samples_bin: int) -> np.ndarray:
    """The borders that leave every bin at least ``min_samples_bin`` of the ``n_values``
    sampled values, chosen greedily from the lowest: a border is kept when the bin it
    closes and everything above it both hold that many (``below[i]``: the values at most
    ``borders[i]``). A feature of fewer than ``2 * min_samples_bin`` values keeps none."""
    if min_samples_bin <= 1 or borders.size == 0:
        return borders
    keep = np.zeros(borders.size, dtype=bool)
    last = 0
    for i, count in enumerate(below.tolist()):
        if count - last >= min_samples_bin and n_values - count >= min_samples_bin:
            keep[i] = True
            last = count
    return borders[keep]
