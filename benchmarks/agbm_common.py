"""Datasets, options and curves shared by the AGBM paper reproductions (``agbm_*.py``).

The six datasets of the paper's Table 3 are read from the shared dataset folder (see its
README): LIBSVM text files for a1a, w1a, diabetes, german.numer and housing (``housing_scale``)
and the UCI CSV for sonar. Labels are mapped to {0, 1} for classification.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "datasets"
DEFAULT_OUT = REPO / "docs" / "agbm"

#: name -> (relative path, test file or None, n_features, task)
FILES = {
    "a1a": ("a1a/a1a", "a1a/a1a.t", 123, "classification"),
    "w1a": ("w1a/w1a", "w1a/w1a.t", 300, "classification"),
    "diabetes": ("diabetes/diabetes", None, 8, "classification"),
    "german": ("german.numer/german.numer", None, 24, "classification"),
    "housing": ("housing/housing_scale", None, 13, "regression"),
    "sonar": ("sonar/sonar.csv", None, 60, "classification"),
}


@dataclass
class Dataset:
    """Features and targets; ``X_test``/``y_test`` only where LIBSVM ships a test file."""

    name: str
    task: str
    X: np.ndarray
    y: np.ndarray
    X_test: Optional[np.ndarray] = None
    y_test: Optional[np.ndarray] = None


def _labels(y: np.ndarray, task: str) -> np.ndarray:
    return (y > 0).astype(int) if task == "classification" else y.astype(float)


def load(name: str, data_dir: Path = DEFAULT_DATA, test: bool = False) -> Dataset:
    """Load one of :data:`FILES` (with its LIBSVM test file when ``test`` is set)."""
    from sklearn.datasets import load_svmlight_file, load_svmlight_files

    if name not in FILES:
        raise ValueError(f"dataset {name!r} is unknown; expected one of {sorted(FILES)}")
    path, test_path, n_features, task = FILES[name]
    root = Path(data_dir)
    if not (root / path).exists():
        raise FileNotFoundError(f"{root / path} not found; pass --data-dir (the folder of the "
                                "shared datasets README)")
    if name == "sonar":
        raw = np.genfromtxt(root / path, delimiter=",", dtype=str)
        X, y = raw[:, :60].astype(float), (raw[:, 60] == "M").astype(int)
        return Dataset(name, task, X, y)
    if test and test_path:
        X, y, Xt, yt = load_svmlight_files([str(root / path), str(root / test_path)],
                                           n_features=n_features)
        return Dataset(name, task, X.toarray(), _labels(y, task), Xt.toarray(),
                       _labels(yt, task))
    X, y = load_svmlight_file(str(root / path), n_features=n_features)
    return Dataset(name, task, X.toarray(), _labels(y, task))


def parser(description: str) -> argparse.ArgumentParser:
    """An argument parser with the shared ``--data-dir`` and ``--out`` options."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA,
                   help=f"folder of the shared datasets (default: {DEFAULT_DATA})")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT,
                   help=f"folder for the PNGs and markdown (default: {DEFAULT_OUT})")
    return p


def code_sign_agbm(momentum: float):
    """AGBM with the corrected residual's sign of the paper's published code
    (``agbt.py``: ``c = r - (m+1)/(m+2) (c_prev - b2_prev)``), not the paper's ``+``."""
    from boostlib.builtin.agbm import AGBM

    class AGBMCodeSign(AGBM):
        CORRECTION_SIGN = -1.0

    return AGBMCodeSign(momentum=momentum)


def trees_per_iteration(update: str) -> int:
    """Trees an iteration adds (AGBM: ``b1`` and ``b2``)."""
    return 2 if update in ("agbm", "agbmr") else 1


def n_iterations(update: str, n_trees: int) -> int:
    """Iterations whose model uses at most ``n_trees`` trees (AGBM: ``2M - 1 <= n_trees``)."""
    return (n_trees + 1) // 2 if trees_per_iteration(update) == 2 else n_trees


def tree_axis(update: str, n_iter: int) -> np.ndarray:
    """Trees used by the model after each iteration: ``k + 1`` (one per iteration) or
    ``2k + 1`` (AGBM: ``f^{k+1}`` uses ``b1_0..b1_k`` and ``b2_0..b2_{k-1}``)."""
    k = np.arange(n_iter)
    return 2 * k + 1 if trees_per_iteration(update) == 2 else k + 1


def curves(data: Dataset, update, params: Optional[Dict], n_trees: int,
           **estimator) -> Tuple[np.ndarray, List[float], Optional[List[float]]]:
    """Fit on ``data.X`` (evaluating on ``data.X_test`` when present); return the tree axis,
    the training-loss curve and the test-loss curve (None without a test set).

    ``update`` is a registered name or an update rule instance."""
    from boostlib import BoostClassifier, BoostRegressor

    cls = BoostClassifier if data.task == "classification" else BoostRegressor
    n_iter = n_iterations(update if isinstance(update, str) else update.name, n_trees)
    model = cls(n_estimators=n_iter, update=update, update_params=params, **estimator)
    evals = [(data.X_test, data.y_test)] if data.X_test is not None else None
    model.fit(data.X, data.y, eval_set=evals)
    name = model.loss_.name
    test = model.evals_result_["valid_0"][name] if evals else None
    axis = tree_axis(update if isinstance(update, str) else update.name, n_iter)
    return axis, model.evals_result_["train"][name], test
