"""Accelerated gradient boosting (Lu, Karimireddy, Ponomareva and Mirrokni, AISTATS 2020).

Three update rules, registered by :mod:`boostlib.builtin.updates`; see ``docs/agbm.md`` for the
algorithms, how they map onto Newton and gradient trees, and the paper reproductions.

``agbm``
    Algorithm 2: Nesterov momentum with the *corrected residual*. Three sequences over the
    same trees: the model ``f``, the momentum model ``h`` and their mix
    ``g = (1 - theta) f + theta h`` with ``theta_m = 2 / (m + 2)``. Each iteration fits
    ``b1`` to the residual at ``g`` (``f <- g + eta b1``) and ``b2`` to the corrected
    residual ``c^m = r^m + (m+1)/(m+2) (c^{m-1} - b2^{m-1}(X))``
    (``h <- h + gamma eta / theta b2``): two trees per iteration.
``agbmr``
    Algorithm 3: ``agbm`` restarted (``h <- f``, ``m <- 0``) every ``restart`` iterations,
    every ``ceil(sqrt(2 / (eta gamma mu)))`` iterations when the strong-convexity constant
    ``mu`` is given, or (default) whenever the training loss goes up.
``vagbm``
    Algorithm 4, "vanilla" AGBM (Biau et al. 2018): one tree per iteration, fitted to the
    residual at ``g`` and added to both ``f`` and ``h``. It may diverge (Section 5.1).

The model is ``f``, plain trees with coefficients: the rules keep ``h`` as a tracked model
of the context (``ctx.track``) and rewrite ``f`` with ``ctx.combine``.

Continued training (``init_model``, ``warm_start``): ``h``, ``m`` and the carried error are
not part of the model, so ``begin`` starts them afresh (``h = f``, ``m = 0``): a continuation
restarts the momentum, as ``agbmr`` restarts (see ``docs/training_controls.md``).
"""
from __future__ import annotations

import math
from numbers import Real
from typing import Any, ClassVar, Optional, Sequence

import numpy as np

from ..plugin.api import Context, TrackedModel, UpdateRule


def _bad(rule: str, param: str, value: Any, expected: str) -> ValueError:
    return ValueError(f"update rule {rule!r}: {param}={value!r} is invalid; expected {expected}")


def _positive(rule: str, param: str, value: Any, upper: Optional[float] = None) -> float:
    """``value`` as a float in ``(0, upper]`` (or ``(0, inf)``), else a clear ValueError."""
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value) \
        and value > 0 and (upper is None or value <= upper)
    if not ok:
        bound = f"(0, {upper:g}]" if upper is not None else "(0, inf)"
        raise _bad(rule, param, value, f"a number in {bound}")
    return float(value)


def _no_unknown(rule: str, unknown: dict, known: Sequence[str]) -> None:
    """Reject unknown keyword parameters (the registry reports the TypeError with the rule's
    provider)."""
    if unknown:
        key = sorted(unknown)[0]
        raise TypeError(f"update rule {rule!r}: unknown parameter {key}={unknown[key]!r}; "
                        f"expected one of: {', '.join(known)}")


def _per_row(weight: np.ndarray, like: np.ndarray) -> np.ndarray:
    """Row weights shaped to broadcast against ``like`` ((n,) or (n, n_outputs))."""
    return weight if like.ndim == 1 else weight[:, None]


def residual(gradient: np.ndarray, weight: Optional[np.ndarray]) -> np.ndarray:
    """The pseudo-residual ``r = -dL/dz`` of every row.

    Parameters
    ----------
    gradient : float64 (n_rows,) or (n_rows, n_outputs)
        The weighted gradient ``g * w`` that ``ctx.gradients()`` returns.
    weight : float64 (n_rows,) or None
        The row weights ``w`` (None: all 1).

    Returns
    -------
    ndarray
        ``-g`` per row, without the weight (0 where ``w == 0``).
    """
    if weight is None:
        return -gradient
    weight = _per_row(weight, gradient)
    out = np.zeros_like(gradient)
    np.divide(gradient, weight, out=out, where=weight > 0)
    np.negative(out, out=out)
    return out


class _Momentum(UpdateRule):
    """Shared state of the accelerated rules: the momentum model ``h`` and the counter ``m``
    of iterations since the (re)start (``theta = 2 / (m + 2)``)."""

    name = ""
    PARAMS: Sequence[str] = ("momentum",)

    def __init__(self, momentum: float, **unknown: Any):
        _no_unknown(self.name, unknown, self.PARAMS)
        self.momentum = _positive(self.name, "momentum", momentum, 1.0)
        self._h: Optional[TrackedModel] = None
        self._m = 0

    def begin(self, ctx: Context) -> None:
        """Start a fit: ``h^0 = f^0`` (the bias), ``m = 0``."""
        self._h = ctx.track("h")
        self._m = 0

    @property
    def theta(self) -> float:
        """``theta_m = 2 / (m + 2)`` of the current iteration (1 right after a (re)start)."""
        return 2.0 / (self._m + 2.0)

    def _mix(self, ctx: Context) -> float:
        """Model <- ``g^m = (1 - theta) f^m + theta h^m``; return theta."""
        theta = self.theta
        ctx.combine(ctx.model, [(1.0 - theta, ctx.model), (theta, self._h)])
        return theta


class AGBM(_Momentum):
    """Accelerated gradient boosting with the corrected residual (Algorithm 2).

    Each iteration ``m`` (``theta = 2/(m+2)``, ``eta`` the learning rate, ``gamma`` the
    momentum, ``w`` the row weights):

    1. ``g = (1 - theta) f + theta h`` (the model is rewritten by ``ctx.combine``);
    2. gradients of the loss at ``g``, one sample from the sampler;
    3. ``b1`` = tree fitted to them, exactly as SGB fits its tree (Newton or gradient leaves
       per ``leaf_estimation``); ``f <- g + eta b1``;
    4. ``c = r + (m+1)/(m+2) (c_prev - b2_prev(X))`` with the residual ``r = -dL/dz`` at
       ``g`` (``c = r`` at ``m = 0``);
    5. ``b2`` = least-squares tree fitted to ``c`` (gradient ``-c w``, hessian ``w``, the
       same sample), ``h <- h + gamma eta / theta b2``.

    The last iteration skips steps 4-5 (``b2`` could no longer reach ``f``), so ``M``
    iterations give ``2M - 1`` trees.

    Parameters
    ----------
    momentum : float, default 0.1
        ``gamma`` in (0, 1]. The paper's theory asks for ``gamma <= Theta^4 / (4 + Theta^2)``
        (``Theta``: how well a tree can fit a residual), far below the 0.1 to 0.5 of its
        experiments; with such values long runs can diverge (``docs/agbm.md``, section 6.2):
        prefer ``agbmr`` or early stopping.
    """

    name = "agbm"
    trees_per_iteration = 2
    #: Sign of the carried error in ``c``: +1 is the paper's (error feedback: ``h`` tracks
    #: the accumulated residuals, property A2); the paper's published code uses -1. Only for
    #: experiments (``benchmarks/agbm_figure2.py``); not a user parameter.
    CORRECTION_SIGN: ClassVar[float] = 1.0

    def __init__(self, momentum: float = 0.1, **unknown: Any):
        super().__init__(momentum, **unknown)
        self._error: Optional[np.ndarray] = None
        self._unit: Optional[np.ndarray] = None

    def begin(self, ctx: Context) -> None:
        """Start a fit (``h = f``, ``m = 0``, no carried fitting error)."""
        super().begin(ctx)
        self._error = None

    def step(self, ctx: Context) -> None:
        """One AGBM iteration (see the class docstring)."""
        theta = self._mix(ctx)
        gradient, hessian = ctx.gradients()
        sample = ctx.sample(gradient, hessian)
        ctx.add_tree(ctx.fit_tree(gradient, hessian, sample), ctx.learning_rate)
        if self._restart_now(ctx):
            self.restart(ctx)
        elif ctx.iteration < ctx.n_iterations - 1:
            self._momentum_tree(ctx, gradient, sample, theta)
            self._m += 1

    def _momentum_tree(self, ctx: Context, gradient: np.ndarray, sample: Any,
                       theta: float) -> None:
        """Steps 4-5: fit ``b2`` to the corrected residual and add it to ``h``.

        ``c`` is in gradient units (the paper's), and ``b2`` is its least-squares fit
        whatever ``leaf_estimation`` is: gradient ``-c w``, hessian ``w`` (the row weights),
        leaves ``sum w c / (sum w + l2)``. So ``c - b2(X)`` compares like with like and the
        carried error never meets a changing hessian (see ``docs/agbm.md``).
        """
        weight = ctx.sample_weight
        corrected = residual(gradient, weight)
        if self._error is not None:
            corrected += self.CORRECTION_SIGN * (self._m + 1.0) / (self._m + 2.0) * self._error
        if weight is None:
            weight = self._ones(ctx.n_rows)
            b2 = ctx.fit_tree(-corrected, weight, sample)
        else:
            b2 = ctx.fit_tree(-corrected * _per_row(weight, corrected), weight, sample)
        self._error = corrected - ctx.tree_output(b2)
        ctx.add_tree(b2, self.momentum * ctx.learning_rate / theta, to=self._h)

    def _ones(self, n: int) -> np.ndarray:
        if self._unit is None or self._unit.size != n:
            self._unit = np.ones(n)
        return self._unit

    def _restart_now(self, ctx: Context) -> bool:
        """Whether to restart after this iteration's ``f`` update (never, for AGBM)."""
        return False

    def restart(self, ctx: Context) -> None:
        """Restart the momentum: ``h <- f``, ``m <- 0``, no carried fitting error."""
        ctx.combine(self._h, [(1.0, ctx.model)])
        self._m = 0
        self._error = None


class AGBMR(AGBM):
    """AGBM with restarts (Algorithm 3).

    A restart sets ``h <- f`` and ``m <- 0`` (so the next ``theta`` is 1 and ``g = f``) and
    forgets the corrected residual. The iteration that restarts keeps its ``f`` update and
    fits no momentum tree (one tree instead of two).

    Parameters
    ----------
    momentum : float, default 0.1
        ``gamma`` in (0, 1], as for ``agbm``.
    restart : "adaptive" or int, optional
        ``"adaptive"`` (Option 2, the default unless ``mu`` is given): restart after an
        iteration whose training loss is above the previous one (O'Donoghue and Candes'
        function restart; the step is kept). An int ``M >= 1`` (Option 1): restart every
        ``M`` iterations.
    mu : float, optional
        Strong-convexity constant of the loss (Option 1 with ``M = ceil(sqrt(2 / (eta gamma
        mu)))``, ``eta`` the learning rate). Give ``restart`` or ``mu``, not both.

    Attributes
    ----------
    restarts_ : list of int
        Iterations (0-based) after which the last fit restarted.
    period_ : int or None
        The fixed restart period of the last fit (None for adaptive restarts).
    """

    name = "agbmr"
    PARAMS = ("momentum", "restart", "mu")

    def __init__(self, momentum: float = 0.1, restart: Any = None, mu: Optional[float] = None,
                 **unknown: Any):
        super().__init__(momentum, **unknown)
        if mu is not None:
            mu = _positive(self.name, "mu", mu)
            if restart is not None:
                raise _bad(self.name, "restart", restart, "None when mu is given (mu sets the "
                           "restart period; give restart or mu, not both)")
        elif restart is None:
            restart = "adaptive"
        elif isinstance(restart, str):
            if restart != "adaptive":
                raise _bad(self.name, "restart", restart, "'adaptive' or a positive int")
        elif not (isinstance(restart, (int, np.integer)) and not isinstance(restart, bool)
                  and restart >= 1):
            raise _bad(self.name, "restart", restart, "'adaptive' or a positive int")
        self.restart_policy = restart
        self.mu = mu
        self.restarts_: list = []
        self.period_: Optional[int] = None
        self._last_loss = math.inf

    def begin(self, ctx: Context) -> None:
        """Start a fit; fix the restart period from ``mu`` and the learning rate."""
        super().begin(ctx)
        self.restarts_ = []
        if self.mu is not None:
            self.period_ = max(1, math.ceil(math.sqrt(
                2.0 / (ctx.learning_rate * self.momentum * self.mu))))
        elif self.restart_policy == "adaptive":
            self.period_ = None
        else:
            self.period_ = int(self.restart_policy)
        self._last_loss = ctx.train_loss()

    def _restart_now(self, ctx: Context) -> bool:
        if self.period_ is not None:
            due = self._m + 1 >= self.period_
        else:
            loss = ctx.train_loss()
            due = loss > self._last_loss
            self._last_loss = loss
        if due:
            self.restarts_.append(ctx.iteration)
        return due


class VAGBM(_Momentum):
    """Vanilla accelerated gradient boosting (Algorithm 4; Biau et al. 2018).

    Each iteration: ``g = (1 - theta) f + theta h``; one tree ``b`` fitted to the gradients at
    ``g``; ``f <- g + eta b`` and ``h <- h + gamma eta / theta b``. Without the corrected
    residual the fitting errors accumulate in ``h``: it may stall or diverge (the paper's
    Section 5.1 and Figure 2).

    Parameters
    ----------
    momentum : float, default 1.0
        ``gamma`` in (0, 1]; 1 is Algorithm 4 (Remark B.1 suggests trying smaller values).
    """

    name = "vagbm"

    def __init__(self, momentum: float = 1.0, **unknown: Any):
        super().__init__(momentum, **unknown)

    def step(self, ctx: Context) -> None:
        """One VAGBM iteration (see the class docstring)."""
        theta = self._mix(ctx)
        gradient, hessian = ctx.gradients()
        tree = ctx.fit_tree(gradient, hessian, ctx.sample(gradient, hessian))
        ctx.add_tree(tree, ctx.learning_rate)
        if ctx.iteration < ctx.n_iterations - 1:
            ctx.add_tree(tree, self.momentum * ctx.learning_rate / theta, to=self._h)
        self._m += 1
