"""Stochastic Gradient Langevin Boosting (``update="sglb"``): Algorithm 2 of Ustimenko &
Prokhorenkova, "SGLB: Stochastic Gradient Langevin Boosting" (ICML 2021).

Each iteration ``t``:

1. derivatives ``g, h`` at the current model ``F`` (and the sampler's rows, if any);
2. the tree *structure* is chosen on ``g + c * sqrt(h) * zeta'`` (independent per-row noise,
   used for the split scores only);
3. the *leaf values* are ``-(G + c * sqrt(H + l2) * zeta) / (H + l2)`` from the noiseless
   ``g`` (independent per-leaf noise);
4. ``F <- s_t * F + learning_rate * tree``, the shrink ``s_t`` applied to the whole model
   (bias and every coefficient).

Noise scale (CatBoost's parametrisation, the one the paper's experiments use):
``c = sqrt(2 / (learning_rate * T))`` with ``T = diffusion_temperature``, so a leaf's noise
has standard deviation ``sqrt(2 * learning_rate / T) / sqrt(H_leaf + l2)`` in the model.
With ``leaf_estimation="gradient"`` (the paper's setting), ``h`` is the row weight and
``H_leaf`` the leaf's weight ``W_leaf``; with Newton leaves the hessian takes its place (the
preconditioned analogue; CatBoost's CPU code silently drops the noise there, we do not).
In the paper's notation (``beta``, ``N`` rows) this is ``beta = T * N``: the per-row noise
``sqrt(2N / (eps * beta))`` of Algorithm 2 equals ``c``. ``T = inf`` means no noise.

All randomness comes from the context's named streams: ``"structure_noise"`` (zeta'),
``"leaf_noise"`` (zeta, drawn by the context) and the sampler's own stream, so they are
independent and the model depends only on ``random_state``.

Continued training (``init_model``, ``warm_start``): the shrink factor depends only on the
(global) iteration number, so a continuation goes on with the schedule and the model's scale
history; it equals one longer fit up to the rounding of its starting scores (see
``docs/training_controls.md``).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..plugin.api import Context, SampleResult, UpdateRule

SHRINK_MODES = ("constant", "decreasing")
DEFAULT_TEMPERATURE = 1e4               # CatBoost's default when Langevin is on
DEFAULT_SHRINK = {"constant": 1e-3, "decreasing": 1e-2}
MAX_NOISE_SCALE = 1e12          # beyond it the noisy gradients leave float32 histogram range


def _number(name: str, value, *, low: float = 0.0, low_open: bool = False,
            allow_inf: bool = False) -> float:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if ok:
        x = float(value)
        ok = (not math.isnan(x) and (allow_inf or math.isfinite(x))
              and (x > low if low_open else x >= low))
    if not ok:
        bound = f"> {low:g}" if low_open else f">= {low:g}"
        raise ValueError(f"update 'sglb': {name}={value!r} is invalid; expected a number "
                         f"{bound}{' (inf allowed)' if allow_inf else ''}")
    return x


class SGLB(UpdateRule):
    """Stochastic Gradient Langevin Boosting.

    Parameters
    ----------
    diffusion_temperature : float, optional
        ``T > 0`` (``inf`` allowed: no noise). Larger means less noise; the paper's inverse
        temperature is ``beta = T * n_rows``. Default ``1e4`` (CatBoost's).
    model_shrink_rate : float, optional
        ``gamma >= 0``, the L2 regularisation of the model: each iteration the whole model is
        multiplied by ``1 - gamma * learning_rate`` ("constant") or ``1 - gamma / t`` at
        iteration ``t >= 1`` ("decreasing"). Default 0.001 (constant) or 0.01 (decreasing),
        as CatBoost.
    model_shrink_mode : {"constant", "decreasing"}, default "constant"
    structure_noise : bool, default True
        Add the per-row noise ``zeta'`` to the gradients that choose the tree structure.
        When False, only the leaf values are noisy.
    posterior_sampling : bool, default False
        CatBoost's setting for sampling from the posterior (uncertainty estimates with
        virtual ensembles): ``T = n_rows`` and ``model_shrink_rate = 1 / (2 n_rows)``,
        constant mode. It cannot be combined with an explicit temperature or shrink rate.

    Notes
    -----
    Ordering: the derivatives are taken at the unshrunk model and the shrink applies with the
    new tree, ``F <- (1 - gamma*eps) F + eps * tree`` (the paper's Algorithm 2; CatBoost
    shrinks first and takes the derivatives at the shrunk model). The shrink is applied at
    every iteration in constant mode (also the first, so the bias shrinks too) and from
    iteration 1 in decreasing mode.

    With a sampler, the structure noise is drawn for the sampled rows only, with variance
    ``c^2 * h_i / w_i`` before the sampler's weight ``w_i`` multiplies it: its weighted sum
    over a leaf then has variance ``c^2 * H_leaf`` for the sampled (estimated) hessian sum,
    as without sampling.
    """

    name = "sglb"

    def __init__(self, diffusion_temperature: Optional[float] = None,
                 model_shrink_rate: Optional[float] = None, model_shrink_mode: str = "constant",
                 structure_noise: bool = True, posterior_sampling: bool = False):
        if model_shrink_mode not in SHRINK_MODES:
            raise ValueError(f"update 'sglb': model_shrink_mode={model_shrink_mode!r} is "
                             f"invalid; expected one of {SHRINK_MODES}")
        for flag, value in (("structure_noise", structure_noise),
                            ("posterior_sampling", posterior_sampling)):
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"update 'sglb': {flag}={value!r} is invalid; expected "
                                 "True or False")
        if diffusion_temperature is not None:
            _number("diffusion_temperature", diffusion_temperature, low_open=True,
                    allow_inf=True)
        if model_shrink_rate is not None:
            rate = _number("model_shrink_rate", model_shrink_rate)
            if model_shrink_mode == "decreasing" and rate >= 1.0:
                raise ValueError(f"update 'sglb': model_shrink_rate={model_shrink_rate!r} is "
                                 "invalid in decreasing mode; expected a number in [0, 1)")
        if posterior_sampling:
            given = [k for k, v in (("diffusion_temperature", diffusion_temperature),
                                    ("model_shrink_rate", model_shrink_rate)) if v is not None]
            if given:
                raise ValueError(f"update 'sglb': posterior_sampling=True sets {given[0]} "
                                 "itself; do not pass it")
            if model_shrink_mode != "constant":
                raise ValueError("update 'sglb': posterior_sampling=True needs "
                                 "model_shrink_mode='constant'")
        self.diffusion_temperature = diffusion_temperature
        self.model_shrink_rate = model_shrink_rate
        self.model_shrink_mode = model_shrink_mode
        self.structure_noise = bool(structure_noise)
        self.posterior_sampling = bool(posterior_sampling)
        self.temperature_ = math.inf
        self.shrink_rate_ = 0.0
        self.noise_scale_ = 0.0
        self._learning_rate = 0.0

    # -- setup ---------------------------------------------------------------------------------
    def begin(self, ctx: Context) -> None:
        """Resolve the defaults that depend on the data (posterior sampling) and check that
        the shrink factor stays in (0, 1]."""
        if self.posterior_sampling:
            n_rows = getattr(ctx, "total_rows", ctx.n_rows)     # every worker's rows
            self.temperature_ = float(n_rows)
            self.shrink_rate_ = 1.0 / (2.0 * n_rows)
        else:
            self.temperature_ = float(DEFAULT_TEMPERATURE if self.diffusion_temperature is None
                                      else self.diffusion_temperature)
            self.shrink_rate_ = float(DEFAULT_SHRINK[self.model_shrink_mode]
                                      if self.model_shrink_rate is None
                                      else self.model_shrink_rate)
        if self.model_shrink_mode == "constant" and self.shrink_rate_ * ctx.learning_rate >= 1:
            raise ValueError(f"update 'sglb': model_shrink_rate={self.shrink_rate_!r} times "
                             f"learning_rate={ctx.learning_rate!r} must be < 1 in constant mode")
        self.noise_scale_ = noise_scale(ctx.learning_rate, self.temperature_)
        if self.noise_scale_ > MAX_NOISE_SCALE:
            raise ValueError(f"update 'sglb': diffusion_temperature={self.temperature_!r} is "
                             f"too small: the noise scale sqrt(2/(learning_rate*T)) = "
                             f"{self.noise_scale_:.3g} exceeds {MAX_NOISE_SCALE:g}")
        self._learning_rate = float(ctx.learning_rate)

    def shrink_factor(self, iteration: int) -> float:
        """The factor ``s_t`` the model is multiplied by at (0-based) ``iteration``."""
        if self.model_shrink_mode == "constant":
            return 1.0 - self.shrink_rate_ * self._learning_rate
        return 1.0 if iteration == 0 else 1.0 - self.shrink_rate_ / iteration

    # -- one iteration -------------------------------------------------------------------------
    def step(self, ctx: Context) -> None:
        gradient, hessian = ctx.gradients()
        sample = ctx.sample(gradient, hessian)
        c = self.noise_scale_
        split_gradient = None
        if c > 0.0 and self.structure_noise:
            split_gradient = structure_gradient(gradient, hessian, sample, c,
                                                ctx.row_rng("structure_noise"))
        tree = ctx.fit_tree(gradient, hessian, sample, split_gradient=split_gradient,
                            leaf_noise_scale=c)
        factor = self.shrink_factor(ctx.iteration)
        if factor != 1.0:
            ctx.scale_model(factor)
        ctx.add_tree(tree, ctx.learning_rate)


def noise_scale(learning_rate: float, temperature: float) -> float:
    """``c = sqrt(2 / (learning_rate * T))`` (0 for ``T = inf``)."""
    if math.isinf(temperature):
        return 0.0
    return math.sqrt(2.0 / (learning_rate * temperature))


def structure_gradient(gradient: np.ndarray, hessian: np.ndarray,
                       sample: Optional[SampleResult], c: float,
                       rng: np.random.Generator) -> np.ndarray:
    """``g + c * sqrt(h) * zeta'`` on the rows the tree is fitted on (every output of a
    row with several outputs gets its own draw).

    With a sample, only the sampled rows get noise, of variance ``c^2 h_i / w_i`` (``w_i`` the
    sampler's weight, which the context multiplies in afterwards).
    """
    out = gradient.copy()
    if sample is None:
        out += c * np.sqrt(hessian) * rng.standard_normal(out.shape)
        return out
    rows = np.asarray(sample.indices)
    var = hessian[rows]
    if sample.weights is not None:
        w = np.asarray(sample.weights, dtype=np.float64)
        w = w if var.ndim == 1 else w[:, None]     # several outputs: (rows, n_outputs)
        var = np.divide(var, w, out=np.zeros_like(var), where=w > 0)
    out[rows] += c * np.sqrt(var) * rng.standard_normal(var.shape)
    return out
