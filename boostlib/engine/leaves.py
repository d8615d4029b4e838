"""The leaf-value formula, the one place every tree kind takes its leaf values from
(computed by ``_partition.leaf_values``, whose formula ``_leafwise.grow_tree`` shares).

A leaf of gradient sum ``G``, hessian sum ``H`` and ``count`` rows gets

* ``-G / (H + l2)`` -- a Newton step. With ``leaf_estimation="gradient"`` the boosting
  context hands the grower the row weights as hessians, so the same formula gives
  ``-G / (W + l2)``, the regularised mean of the negative gradient (first-order boosting,
  the SGLB paper's leaf averaging); a loss whose hessian can be negative has it floored at
  its ``hessian_floor`` before it gets here;
* clipped to ``[-max_delta_step, max_delta_step]`` when ``max_delta_step > 0`` (XGBoost's and
  LightGBM's cap on a leaf's step; 0: no cap), which bounds the steps of losses whose
  hessian vanishes where the gradient does not (a log link's leaf of zero counts);
* plus ``noise_scale * N(0, 1) / sqrt(H + l2)`` when ``noise_scale > 0`` (SGLB's leaf noise).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .._kernels import _partition


def leaf_values(G: np.ndarray, H: np.ndarray, count: np.ndarray, l2: float,
                noise_scale: float = 0.0,
                rng: Optional[np.random.Generator] = None,
                max_delta_step: float = 0.0) -> np.ndarray:
    """Leaf values from per-leaf sums (see the module docstring).

    A leaf no row reaches is exactly 0; it gets no noise, nor does a leaf whose rows carry
    no hessian (weight) mass. With noise, one normal is drawn per leaf either way, so the
    stream does not depend on which leaves are empty. The cap ``max_delta_step`` applies to
    the Newton step, before the noise (SGLB's noise stays Gaussian).
    """
    G, H, count = (np.ascontiguousarray(a, dtype=np.float64) for a in (G, H, count))
    value = np.empty(G.shape)
    _partition.leaf_values(G, H, count, float(l2), value)    # grow_tree's formula too
    value = cap_steps(value, max_delta_step)
    if noise_scale > 0.0:
        z = rng.standard_normal(value.size)
        denom = H + l2
        noisy = (denom > 0) & (count > 0) & (H > 0)
        value = value + np.where(noisy, noise_scale * z / np.sqrt(np.where(noisy, denom,
                                                                            1.0)), 0.0)
    return value


def cap_steps(value: np.ndarray, max_delta_step: float) -> np.ndarray:
    """``value`` clipped to ``[-max_delta_step, max_delta_step]`` in place (0: unchanged).

    A value already inside is left as it is, bit for bit, so a cap no leaf reaches gives the
    uncapped model.
    """
    if max_delta_step > 0.0:
        np.clip(value, -max_delta_step, max_delta_step, out=value)
    return value
