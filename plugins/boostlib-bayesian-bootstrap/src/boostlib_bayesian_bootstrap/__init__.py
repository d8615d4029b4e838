"""CatBoost-style Bayesian bootstrap for boostlib: random row weights instead of dropped rows.

Installing this distribution registers the sampler ``"bayesian_bootstrap"`` through the
``boostlib`` entry-point group::

    BoostRegressor(sampler="bayesian_bootstrap", sampler_params={"temperature": 1.0})

Every iteration each row gets the weight ``w = (-log u) ** temperature`` with ``u`` uniform
on (0, 1), so ``-log u`` is standard exponential: with ``temperature = 1`` the weights are
Exp(1), i.e. (up to a common scale, which Newton leaves ignore) Dirichlet(1, ..., 1) weights
of Rubin's Bayesian bootstrap. ``temperature = 0`` gives every row weight 1 (no sampling);
larger temperatures make the weights more uneven (stronger regularisation, more randomness).
Unlike Bernoulli subsampling no row is ever dropped, so small data sets lose no information
in any tree; the weights multiply both the gradient and the hessian of each row, as every
boostlib sampler's weights do.

With ``subsample < 1`` each row is first kept with probability ``subsample`` (as the built-in
``"uniform"`` sampler does) and the kept rows get the random weights; the default
``subsample=1`` is the plain Bayesian bootstrap.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from boostlib.api import Sampler, SampleResult, hookimpl

__all__ = ["BOOSTLIB_API_VERSION", "BayesianBootstrap", "boostlib_add_samplers"]
__version__ = "0.1.0"

#: The boostlib plugin API this package was written for.
BOOSTLIB_API_VERSION = 1


class BayesianBootstrap(Sampler):
    """Random Exp(1)**temperature row weights, redrawn every iteration.

    Parameters
    ----------
    subsample : float, default 1.0
        Probability that a row takes part in an iteration at all, in (0, 1]. With 1 every
        row is used (the Bayesian bootstrap proper).
    temperature : float, default 1.0
        Exponent of the exponential weights, >= 0. 0 gives weight 1 to every row.
    **kwargs
        Passed on to :class:`boostlib.api.Sampler` (options later boostlib versions add).
    """

    name = "bayesian_bootstrap"

    def __init__(self, subsample: float = 1.0, temperature: float = 1.0, **kwargs: Any):
        super().__init__(subsample, **kwargs)
        if not (isinstance(temperature, (int, float)) and not isinstance(temperature, bool)
                and np.isfinite(temperature) and temperature >= 0):
            raise ValueError(f"sampler 'bayesian_bootstrap': temperature={temperature!r} is "
                             "invalid; expected a finite number >= 0")
        self.temperature = float(temperature)

    def sample(self, gradient: np.ndarray, hessian: np.ndarray, rng: np.random.Generator,
               iteration: int) -> SampleResult | None:
        """Draw this iteration's rows and weights (every random draw comes from ``rng``).

        Returns
        -------
        SampleResult or None
            Sorted int32 row indices (all rows when ``subsample == 1``) with float64 weights;
            None (every row, weight 1) when there is nothing to draw
            (``temperature == 0`` and ``subsample == 1``).
        """
        n = gradient.shape[0]
        if self.subsample >= 1.0:
            if self.temperature == 0.0:
                return None
            indices = np.arange(n, dtype=np.int32)
        else:
            indices = np.flatnonzero(rng.random(n) < self.subsample).astype(np.int32)
            if indices.size == 0:  # never an empty tree: keep one row
                indices = np.array([rng.integers(n)], dtype=np.int32)
        weights = rng.standard_exponential(indices.size)
        if self.temperature != 1.0:
            np.power(weights, self.temperature, out=weights)
        return SampleResult(indices=indices, weights=weights)


@hookimpl
def boostlib_add_samplers():
    """Register ``"bayesian_bootstrap"``."""
    return {"bayesian_bootstrap": BayesianBootstrap}
