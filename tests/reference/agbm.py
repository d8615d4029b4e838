"""Obviously correct NumPy references of the accelerated update rules, on the training rows.

Written from the paper (Lu, Karimireddy, Ponomareva and Mirrokni 2020: Algorithm 2 AGBM,
Algorithm 3 AGBMR, Algorithm 4 VAGBM) and the mapping ``docs/agbm.md`` documents, never from
``boostlib/agbm.py``:

* every vector is a model's value on the training rows; ``f`` starts at the loss's best
  constant (``bias``), and ``h^0 = f^0``;
* ``b1`` is the tree the learner fits to the loss derivatives at ``g`` (weights applied),
  exactly as SGB's; ``b2`` is the learner's least-squares fit of the corrected residual ``c``
  (gradient ``-c w``, hessian ``w``);
* ``c^m = r^m + (m+1)/(m+2) (c^{m-1} - b2^{m-1})`` with ``r = -dL/dz`` at ``g``;
* the last iteration fits no momentum tree; a restart keeps its ``f`` update, fits no
  momentum tree, then sets ``h <- f`` and ``m <- 0``.

The weak learner is a greedy depthwise tree on 0/1 features (:class:`BinaryTree`), written
from ``docs/design.md``: Newton gain ``GL^2/(HL+l2) + GR^2/(HR+l2) - G^2/(H+l2)``, only
strictly positive gains, both children with hessian sum ``>= min_child_weight``, ties to the
smaller feature, leaves ``-G/(H+l2)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple, Union

import numpy as np

Derivatives = Callable[[np.ndarray, np.ndarray], Tuple[np.ndarray, np.ndarray]]


# -- losses (boostlib's conventions: derivatives of the loss itself) ---------------------------
def logloss(y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``log(1 + e^z) - y z``."""
    return np.logaddexp(0.0, z) - y * z


def logloss_derivatives(y: np.ndarray, z: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(p - y, p (1 - p))`` with ``p = sigmoid(z)``."""
    p = 1.0 / (1.0 + np.exp(-z))
    return p - y, p * (1.0 - p)


def logloss_bias(y: np.ndarray, w: Optional[np.ndarray] = None) -> float:
    """Log-odds of the (weighted) mean label."""
    p = float(np.average(y, weights=w))
    return float(np.log(p / (1.0 - p)))


def mse(y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``(z - y)^2 / 2``."""
    return 0.5 * (z - y) ** 2


def mse_derivatives(y: np.ndarray, z: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(z - y, 1)``."""
    return z - y, np.ones_like(z)


# -- the weak learner ---------------------------------------------------------------------------
class BinaryTree:
    """Greedy depthwise regression tree on 0/1 features, evaluated on the training rows.

    Parameters
    ----------
    X : (n_rows, n_features) array of 0/1.
    max_depth, l2, min_child_weight : as the estimator's parameters.
    """

    def __init__(self, X: np.ndarray, max_depth: int, l2: float,
                 min_child_weight: float = 1e-3):
        self.X = np.asarray(X)
        self.max_depth = max_depth
        self.l2 = l2
        self.min_child_weight = min_child_weight

    def fit(self, gradient: np.ndarray, hessian: np.ndarray) -> np.ndarray:
        """The fitted tree's value on every training row."""
        out = np.empty(gradient.size)
        self._grow(np.arange(gradient.size), gradient, hessian, 0, out)
        return out

    def _score(self, G: float, H: float) -> float:
        return G * G / (H + self.l2)

    def _grow(self, rows: np.ndarray, g: np.ndarray, h: np.ndarray, depth: int,
              out: np.ndarray) -> None:
        G, H = g[rows].sum(), h[rows].sum()
        best, best_j = 0.0, -1
        if depth < self.max_depth:
            for j in range(self.X.shape[1]):
                right = self.X[rows, j] == 1
                GR, HR = g[rows][right].sum(), h[rows][right].sum()
                GL, HL = G - GR, H - HR
                if right.all() or not right.any():
                    continue
                if min(HL, HR) < self.min_child_weight:
                    continue
                gain = self._score(GL, HL) + self._score(GR, HR) - self._score(G, H)
                if gain > best:
                    best, best_j = gain, j
        if best_j < 0:
            out[rows] = -G / (H + self.l2)
            return
        right = self.X[rows, best_j] == 1
        self._grow(rows[~right], g, h, depth + 1, out)
        self._grow(rows[right], g, h, depth + 1, out)


def exact_learner(gradient: np.ndarray, hessian: np.ndarray) -> np.ndarray:
    """A strong learner: one leaf per row, ``l2 = 0`` (``-g/h``)."""
    return -gradient / hessian


# -- the rules ---------------------------------------------------------------------------------
@dataclass
class Trace:
    """Per-iteration values on the training rows (index ``m`` = after iteration ``m``)."""

    f: List[np.ndarray] = field(default_factory=list)
    h: List[np.ndarray] = field(default_factory=list)
    theta: List[float] = field(default_factory=list)
    residual: List[np.ndarray] = field(default_factory=list)     # r at g, every iteration
    error: List[Optional[np.ndarray]] = field(default_factory=list)   # c - b2(X), or None
    restarts: List[int] = field(default_factory=list)


@dataclass
class Problem:
    """The training problem: targets, loss, learner, row weights and leaf estimation."""

    y: np.ndarray
    loss: Callable[[np.ndarray, np.ndarray], np.ndarray]
    derivatives: Derivatives
    learner: Callable[[np.ndarray, np.ndarray], np.ndarray]
    bias: float
    weight: Optional[np.ndarray] = None
    newton: bool = True

    @property
    def w(self) -> np.ndarray:
        return np.ones(self.y.size) if self.weight is None else self.weight

    def tree_b1(self, z: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``(b1 on the rows, r = -dL/dz)`` at raw scores ``z``."""
        g, hess = self.derivatives(self.y, z)
        second = hess * self.w if self.newton else self.w
        return self.learner(g * self.w, second), -g

    def tree_b2(self, c: np.ndarray) -> np.ndarray:
        """Least-squares fit of ``c`` with the row weights."""
        return self.learner(-c * self.w, self.w)

    def mean_loss(self, z: np.ndarray) -> float:
        return float(np.average(self.loss(self.y, z), weights=self.weight))


def agbm(p: Problem, n_iter: int, eta: float, gamma: float,
         restart: Union[None, int, str] = None, f0: Optional[np.ndarray] = None) -> Trace:
    """Algorithm 2 (``restart=None``) or Algorithm 3 (``restart`` = period or "adaptive").

    A fixed period is implemented literally as Algorithm 3 states it: fresh AGBM runs of
    ``period`` iterations, each started from the previous run's output.
    """
    if isinstance(restart, int):
        out = Trace()
        f = np.full(p.y.size, p.bias) if f0 is None else f0
        while len(out.f) < n_iter:
            run = agbm(p, min(restart, n_iter - len(out.f)), eta, gamma, None, f)
            for name in ("f", "h", "theta", "residual", "error"):
                getattr(out, name).extend(getattr(run, name))
            f = run.f[-1]
            if len(run.f) == restart:           # a full run ends with a restart
                out.restarts.append(len(out.f) - 1)
        return out
    t = Trace()
    f = np.full(p.y.size, p.bias) if f0 is None else f0.copy()
    h = f.copy()
    m, c_prev, b2_prev, last_loss = 0, None, None, p.mean_loss(f)
    for it in range(n_iter):
        theta = 2.0 / (m + 2.0)
        g = (1.0 - theta) * f + theta * h
        b1, r = p.tree_b1(g)
        f = g + eta * b1
        t.theta.append(theta)
        t.residual.append(r)
        loss = p.mean_loss(f)
        if restart == "adaptive" and loss > last_loss:
            h, m, c_prev, b2_prev = f.copy(), 0, None, None
            t.restarts.append(it)
            error = None
        elif it == n_iter - 1:
            error = None
        else:
            c = r if m == 0 else r + (m + 1.0) / (m + 2.0) * (c_prev - b2_prev)
            b2 = p.tree_b2(c)
            h = h + gamma * eta / theta * b2
            c_prev, b2_prev, m = c, b2, m + 1
            error = c - b2
        last_loss = loss
        t.f.append(f.copy())
        t.h.append(h.copy())
        t.error.append(error)
    return t


def vagbm(p: Problem, n_iter: int, eta: float, gamma: float = 1.0) -> Trace:
    """Algorithm 4: one tree per iteration, added to ``f`` (``eta``) and ``h``
    (``gamma eta / theta``)."""
    t = Trace()
    f = np.full(p.y.size, p.bias)
    h = f.copy()
    for m in range(n_iter):
        theta = 2.0 / (m + 2.0)
        g = (1.0 - theta) * f + theta * h
        b, r = p.tree_b1(g)
        f = g + eta * b
        h = h + gamma * eta / theta * b
        t.f.append(f.copy())
        t.h.append(h.copy())
        t.theta.append(theta)
        t.residual.append(r)
    return t


def nesterov(gradient: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, eta: float,
             gamma: float, n_iter: int) -> List[np.ndarray]:
    """Accelerated gradient descent on vectors (the paper's equation (3) with a momentum
    factor): ``y = (1-t) x + t z; x <- y - eta grad(y); z <- z - gamma eta / t grad(y)``,
    ``t = 2/(k+2)``. Returns ``x`` after every iteration."""
    x, z, xs = x0.copy(), x0.copy(), []
    for k in range(n_iter):
        t = 2.0 / (k + 2.0)
        yk = (1.0 - t) * x + t * z
        d = gradient(yk)
        x = yk - eta * d
        z = z - gamma * eta / t * d
        xs.append(x.copy())
    return xs
