"""AGBM paper, Figures 1 and 4: training and test logloss against the number of trees on a1a.

GBM (``update="sgb"``) against AGBM with momentum ``gamma`` in {0.5, 0.3, 0.1}, for learning
rates 1, 0.1 and 0.01; depth-4 trees (Figure 1) and stumps (Figure 4). The x-axis counts the
trees the model uses (AGBM: two per iteration, ``2M - 1`` after ``M`` iterations). Dashed:
AGBM with the corrected residual's sign of the paper's published code
(``c = r - (m+1)/(m+2) (c_prev - b2_prev)``; boostlib's ``agbm`` uses the paper's ``+``).

Setup as the paper's code (google-research/accelerated_gbm): CART trees (``depthwise``) with
least-squares leaves (``leaf_estimation="gradient"``, ``l2=1``), 100 bins per feature; trained
on LIBSVM ``a1a`` (1,605 rows) and evaluated on ``a1a.t`` (30,956 rows). boostlib starts from
the best constant (the paper's code from 0).

    python benchmarks/agbm_figure1.py [--trees 200] [--depth 4 1] [--out docs/agbm]

Writes ``figure1_depth{d}.png`` and ``figure1.md`` (a table of the curves) to ``--out``.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agbm_common import code_sign_agbm, curves, load, parser  # noqa: E402

RATES = (1.0, 0.1, 0.01)
GAMMAS = (0.5, 0.3, 0.1)
COLORS = dict(zip(GAMMAS, ("tab:blue", "tab:orange", "tab:green")))
Curve = Tuple[np.ndarray, List[float], List[float]]


def run(data, depth: int, n_trees: int, code_sign: bool) -> Dict[Tuple[float, str], Curve]:
    """Every (learning rate, method) curve for one tree depth."""
    est = dict(max_depth=depth, grow_policy="depthwise", leaf_estimation="gradient",
               l2_regularization=1.0, max_bins=100, random_state=0, n_jobs=1)
    out = {}
    for eta in RATES:
        out[eta, "GBM"] = curves(data, "sgb", None, n_trees, learning_rate=eta, **est)
        for gamma in GAMMAS:
            out[eta, f"AGBM g={gamma}"] = curves(data, "agbm", {"momentum": gamma}, n_trees,
                                                 learning_rate=eta, **est)
        if code_sign:
            for gamma in GAMMAS:
                out[eta, f"AGBM code-sign g={gamma}"] = curves(
                    data, code_sign_agbm(gamma), None, n_trees, learning_rate=eta, **est)
    return out


def plot(results: Dict[Tuple[float, str], Curve], depth: int, path: Path) -> None:
    """Two rows (train, test) by three columns (learning rates)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(RATES), figsize=(13, 7), sharex=True)
    for j, eta in enumerate(RATES):
        for (rate, label), (x, train, test) in results.items():
            if rate != eta:
                continue
            if label == "GBM":
                style = dict(lw=2.2, color="black")
            else:
                style = dict(lw=1.4, color=COLORS[float(label.split("=")[1])],
                             ls="--" if "code-sign" in label else "-")
            axes[0, j].plot(x, train, label=label, **style)
            axes[1, j].plot(x, test, label=label, **style)
        axes[0, j].set_title(f"a1a, depth {depth}, learning rate {eta:g}")
        axes[1, j].set_xlabel("number of trees")
        tests = [c[2] for (rate, _), c in results.items() if rate == eta]
        low, start = min(min(t) for t in tests), tests[0][0]
        axes[1, j].set_ylim(0.95 * low, low + 1.5 * (start - low))   # overfitting runs off
    axes[0, 0].set_ylabel("training logloss")
    axes[1, 0].set_ylabel("test logloss (a1a.t)")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def table(results: Dict[Tuple[float, str], Curve], depth: int, marks: List[int]) -> str:
    """Markdown: training loss at some tree counts, best test loss and where."""
    head = ("| depth | lr | method | " + " | ".join(f"train @{m}" for m in marks)
            + " | best test (trees) | test @last |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for (eta, label), (x, train, test) in results.items():
        at = [train[int(np.searchsorted(x, m, side="right")) - 1] for m in marks]
        best = int(np.argmin(test))
        lines.append(f"| {depth} | {eta:g} | {label} | " + " | ".join(f"{v:.4f}" for v in at)
                     + f" | {test[best]:.4f} ({x[best]}) | {test[-1]:.4f} |")
    return "\n".join(lines)


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--trees", type=int, default=200, help="trees per curve (default 200)")
    p.add_argument("--depth", type=int, nargs="+", default=[4, 1],
                   help="tree depths (4: Figure 1, 1: Figure 4)")
    p.add_argument("--no-code-sign", action="store_true",
                   help="leave out AGBM with the published code's corrected-residual sign")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    data = load("a1a", args.data_dir, test=True)
    marks = [m for m in (10, 25, 50, 100, 200, 400) if m <= args.trees]
    tables = []
    for depth in args.depth:
        start = time.perf_counter()
        results = run(data, depth, args.trees, not args.no_code_sign)
        plot(results, depth, args.out / f"figure1_depth{depth}.png")
        tables.append(table(results, depth, marks))
        print(f"depth {depth}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    text = "\n\n".join(tables) + "\n"
    (args.out / "figure1.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
