"""The leaf-value formula, the one place every tree kind takes its leaf values from
(computed by ``_partition.leaf_values``, whose formula ``_leafwise.grow_tree`` shares).

A leaf of gradient sum ``G``, hessian sum ``H`` and ``count`` rows gets

* ``-G / (H + l2)`` -- a Newton step. With ``leaf_estimation="gradient"`` the boosting
  context hands the grower the row weights as hessians, so the same formula gives
  ``-G / (W + l2)``, the regularised mean of the negative gradient (first-order boosting,
  the SGLB paper's leaf averaging); a loss whose hessian can be negative has it floored at
  its ``hessian_floor`` before it gets here;
* plus ``noise_scale * N(0, 1) / sqrt(H + l2)`` when ``noise_scale > 0`` (SGLB's leaf noise).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .._kernels import _partition


def leaf_values(G: np.ndarray, H: np.ndarray, count: np.ndarray, l2: float,
                noise_scale: float = 0.0,
                rng: Optional[np.random.Generator] = None) -> np.ndarray:
    """Leaf values from per-leaf sums (see the module docstring).

    A leaf no row reaches is exactly 0; it gets no noise, nor does a leaf whose rows carry
    no hessian (weight) mass. With noise, one normal is drawn per leaf either way, so the
    stream does not depend on which leaves are empty.
    """
    G, H, count = (np.ascontiguousarray(a, dtype=np.float64) for a in (G, H, count))
    value = np.empty(G.shape)
    _partition.leaf_values(G, H, count, float(l2), value)    # grow_tree's formula too
    if noise_scale > 0.0:
        z = rng.standard_normal(value.size)
        denom = H + l2
        noisy = (denom > 0) & (count > 0) & (H > 0)
        value = value + np.where(noisy, noise_scale * z / np.sqrt(np.where(noisy, denom,
                                                                            1.0)), 0.0)
    return value
