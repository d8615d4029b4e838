"""Is AGBM's divergence on housing boostlib's or the algorithm's? An independent check.

Algorithm 2 of the AGBM paper written out in NumPy with scikit-learn's exact CART
(``DecisionTreeRegressor(max_depth=4)``, no l2) as the weak learner, least squares on the
506 rows of housing, from the mean. Prints the training loss (mse / 2) after some
iterations for the paper's corrected residual ``c = r + (m+1)/(m+2) (c_prev - b2_prev)`` and
for the published code's ``c = r - (m+1)/(m+2) (c_prev - b2_prev)``.

    python benchmarks/agbm_sklearn_check.py [--data-dir ../shared/datasets]
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agbm_common import load, parser  # noqa: E402


def agbm(X: np.ndarray, y: np.ndarray, eta: float, gamma: float, n_iter: int,
         sign: float) -> List[float]:
    """Training loss of ``f^{m+1}`` for ``m < n_iter``."""
    from sklearn.tree import DecisionTreeRegressor

    def fit(target: np.ndarray) -> np.ndarray:
        return DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, target).predict(X)

    f = np.full(y.size, y.mean())
    h = f.copy()
    error = np.zeros(y.size)
    losses = []
    for m in range(n_iter):
        theta = 2.0 / (m + 2.0)
        g = (1.0 - theta) * f + theta * h
        r = y - g
        f = g + eta * fit(r)
        c = r + sign * (m + 1.0) / (m + 2.0) * error if m else r
        b2 = fit(c)
        h = h + gamma * eta / theta * b2
        error = c - b2
        losses.append(0.5 * float(np.mean((f - y) ** 2)))
    return losses


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    args = p.parse_args()
    data = load("housing", args.data_dir)
    marks = (12, 25, 50, 100, 199)
    print("| sign | lr | momentum | " + " | ".join(f"iter {m + 1}" for m in marks) + " |")
    print("|---|---|---|" + "---|" * len(marks))
    for sign, label in ((1.0, "paper +"), (-1.0, "code -")):
        for eta in (1.0, 0.3):
            for gamma in (0.3, 0.1, 0.05):
                losses = agbm(data.X, data.y, eta, gamma, max(marks) + 1, sign)
                print(f"| {label} | {eta:g} | {gamma:g} | "
                      + " | ".join(f"{losses[m]:.3g}" for m in marks) + " |")


if __name__ == "__main__":
    main()
