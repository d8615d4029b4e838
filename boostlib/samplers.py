"""Built-in row samplers, registered through the public hook.

``uniform``: each row is kept independently with probability ``subsample`` and weight 1
(stochastic gradient boosting, Friedman 2002). The sample is never empty: if no row is
drawn, one row is picked uniformly.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .api import SampleResult, Sampler, hookimpl


class UniformSampler(Sampler):
    """Bernoulli row sampling with probability ``subsample``, weight 1."""

    name = "uniform"

    def sample(self, gradient: np.ndarray, hessian: np.ndarray, rng: np.random.Generator,
               iteration: int) -> Optional[SampleResult]:
        n = gradient.shape[0]
        if self.subsample >= 1.0:
            return None
        keep = rng.random(n) < self.subsample
        idx = np.flatnonzero(keep).astype(np.int32)
        if idx.size == 0:
            idx = np.array([rng.integers(n)], dtype=np.int32)
        return SampleResult(indices=idx)


@hookimpl
def boostlib_add_samplers():
    """Register the built-in samplers."""
    return {"uniform": UniformSampler}
