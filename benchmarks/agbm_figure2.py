"""AGBM paper, Figures 2 and 3: VAGBM (no corrected residual) against AGBM on housing.

Training loss (``mse``: half the mean squared error) against the number of trees on the 506
rows of LIBSVM ``housing_scale``, for learning rates 1 and 0.3 (Figure 2) and 0.1 (Figure 3:
"VAGBM may diverge with small eta"). VAGBM (``update="vagbm"``, momentum 1: the paper's
Algorithm 4) adds one tree per iteration, AGBM two. Besides boostlib's ``agbm`` (the paper's
corrected residual ``c = r + (m+1)/(m+2) (c_prev - b2_prev)``) it runs the variant of the
paper's published code, ``c = r - (m+1)/(m+2) (c_prev - b2_prev)`` (dashed), and ``agbmr``
with adaptive restarts. A run whose loss exceeds 1e6 times the initial loss is stopped and
drawn up to that point. Depth-4 CART trees with least-squares leaves
(``leaf_estimation="gradient"``, ``l2=1``), 100 bins, as the paper's code.

    python benchmarks/agbm_figure2.py [--trees 400] [--rates 1 0.3 0.1] [--out docs/agbm]

Writes ``figure2.png`` and ``figure2.md`` to ``--out``.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agbm_common import code_sign_agbm, load, n_iterations, parser  # noqa: E402

from boostlib import BoostRegressor  # noqa: E402
from boostlib.builtin.agbm import AGBM, AGBMR, VAGBM  # noqa: E402

GAMMAS = (0.3, 0.1, 0.05)
BLOW_UP = 1e6


AGBMCodeSign = type(code_sign_agbm(0.5))


class Diverged(Exception):
    """Raised by :func:`watched` rules when the training loss blew up."""


def watched(cls):
    """``cls`` recording the training loss after every step, stopping on a blow-up."""

    class Watched(cls):
        def begin(self, ctx):
            super().begin(ctx)
            self.losses: List[float] = []
            self.trees: List[int] = []
            self.start = ctx.train_loss()

        def step(self, ctx):
            super().step(ctx)
            loss = ctx.train_loss()
            if not np.isfinite(loss) or loss > BLOW_UP * self.start:
                raise Diverged
            self.losses.append(loss)
            self.trees.append(int(np.count_nonzero(ctx.model.coefficients)))  # trees used

    Watched.name = cls.name
    return Watched


Run = Tuple[np.ndarray, List[float], bool]


def curve(X, y, cls, gamma: float, eta: float, n_trees: int) -> Run:
    """The tree axis and training losses of one run (cut where it diverged), and whether it
    diverged."""
    rule = watched(cls)(momentum=gamma)
    n_iter = n_iterations(rule.name, n_trees)
    try:
        BoostRegressor(early_stopping=False, n_estimators=n_iter, learning_rate=eta, max_depth=4,
                       grow_policy="depthwise", leaf_estimation="gradient", max_bins=100,
                       update=rule, random_state=0, n_jobs=1).fit(X, y)
        diverged = False
    except Diverged:
        diverged = True
    return np.array(rule.trees), rule.losses, diverged


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--trees", type=int, default=400)
    p.add_argument("--rates", type=float, nargs="+", default=[1.0, 0.3, 0.1])
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    data = load("housing", args.data_dir)
    runs: Dict[Tuple[float, str], Run] = {}
    for eta in args.rates:
        runs[eta, "VAGBM"] = curve(data.X, data.y, VAGBM, 1.0, eta, args.trees)
        for gamma in GAMMAS:
            runs[eta, f"AGBM g={gamma}"] = curve(data.X, data.y, AGBM, gamma, eta, args.trees)
        for gamma in GAMMAS:
            runs[eta, f"AGBM code-sign g={gamma}"] = curve(data.X, data.y, AGBMCodeSign,
                                                           gamma, eta, args.trees)
        runs[eta, "AGBMR adaptive g=0.3"] = curve(data.X, data.y, AGBMR, 0.3, eta,
                                                  args.trees)
    plot(runs, args.rates, args.out / "figure2.png")
    text = table(runs, [m for m in (25, 50, 100, 200, 400, 800) if m <= args.trees])
    (args.out / "figure2.md").write_text(text + "\n")
    print(text)


def plot(runs, rates, path: Path) -> None:
    """One panel per learning rate, log-scale loss."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(rates), figsize=(5.2 * len(rates), 4.6), squeeze=False)
    colors = dict(zip(GAMMAS, ("tab:blue", "tab:orange", "tab:green")))
    for ax, eta in zip(axes[0], rates):
        for (rate, label), (x, losses, _) in runs.items():
            if rate != eta:
                continue
            if label == "VAGBM":
                style = dict(lw=2.2, color="black")
            elif label.startswith("AGBMR"):
                style = dict(lw=1.6, color="tab:red")
            else:
                style = dict(lw=1.3, color=colors[float(label.split("=")[1])],
                             ls="--" if "code-sign" in label else "-")
            ax.plot(x, losses, label=label, **style)
        ax.set_yscale("log")
        ax.set_title(f"housing, learning rate {eta:g}")
        ax.set_xlabel("number of trees")
    axes[0, 0].set_ylabel("training loss (mse / 2)")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def table(runs, marks: List[int]) -> str:
    """Markdown: the loss at some tree counts, the minimum, and where a run diverged."""
    head = "| lr | method | " + " | ".join(f"@{m}" for m in marks) + " | min (trees) |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for (eta, label), (x, losses, diverged) in runs.items():
        cells = []
        for m in marks:
            k = int(np.searchsorted(x, m, side="right")) - 1
            gone = diverged and (x.size == 0 or x[-1] < m)
            cells.append("diverged" if gone else f"{losses[k]:.4g}")
        best = int(np.argmin(losses)) if losses else -1
        low = f"{losses[best]:.4g} ({x[best]})" if losses else "-"
        lines.append(f"| {eta:g} | {label} | " + " | ".join(cells) + f" | {low} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
