"""``boostlib demo``: every update rule and sampler on the bundled HIGGS subset, then the
``multiclass`` loss on a synthetic 5-class problem."""
from __future__ import annotations

import argparse
import textwrap
import time
from typing import Tuple

import numpy as np

from ..._version import __version__
from ...plugin import registry
from .columns import split_rows


def run_demo(args: argparse.Namespace) -> int:
    """``boostlib demo``: the binary HIGGS comparison, then the multiclass part."""
    _demo_binary(args)
    _demo_multiclass(args)
    return 0


#: The demo's HIGGS part holds out this fraction of the training rows for early stopping.
DEMO_VALID_FRACTION = 0.2
#: Update rules with momentum: they reach a low training loss in far fewer iterations than
#: sgb, so a fixed number of iterations overfits them first.
ACCELERATED_UPDATES = ("agbm", "agbmr", "vagbm")
#: settings a rule needs in the demo: a random forest averages unshrunk trees on bagged rows
RULE_SETTINGS = {"rf": {"learning_rate": 1.0, "subsample": 0.632}}


def _demo_binary(args: argparse.Namespace) -> None:
    """HIGGS: every update rule and sampler with both tree kinds.

    With ``--early-stopping-rounds N`` (default 20; 0 turns it off), DEMO_VALID_FRACTION
    of the training rows are held out and every model is cut back to its best iteration on
    them. Without it, every model runs ``--n-estimators`` iterations, and at the default
    settings the accelerated rules (ACCELERATED_UPDATES) overfit far beyond the constant
    model's logloss (their training loss falls about four times faster than sgb's: at 200
    iterations of learning rate 0.1, agbm's test logloss was 1.66, its best, 0.55, at
    iteration 55). Rows worse than the constant model are marked and explained.
    """
    from ...datasets import load_higgs
    from ..estimators import BoostClassifier
    from ...engine.metrics import accuracy, logloss, roc_auc

    X, y = load_higgs("train")
    Xt, yt = load_higgs("test")
    rounds = args.early_stopping_rounds
    fit_rows, valid_rows = split_rows(X.shape[0], DEMO_VALID_FRACTION if rounds else 0.0,
                                  args.random_state)
    print(f"boostlib {__version__} demo: HIGGS subset bundled with boostlib "
          f"({X.shape[0]} train / {Xt.shape[0]} test rows, {X.shape[1]} features)")
    if rounds:
        print(f"at most {args.n_estimators} iterations, learning rate {args.learning_rate}, "
              f"depth {args.max_depth}, random_state {args.random_state}\nearly stopping: "
              f"fitted on {fit_rows.size} training rows, cut back to the best iteration on "
              f"the other {valid_rows.size} (patience {rounds})")
    else:
        print(f"{args.n_estimators} iterations, learning rate {args.learning_rate}, depth "
              f"{args.max_depth}, random_state {args.random_state}, no early stopping")
    rate = float(np.mean(y[fit_rows]))
    constant = logloss(yt, np.full(yt.size, rate))
    print(f"constant model (the training rows' positive rate, {rate:.4f}): logloss "
          f"{constant:.4f}, AUC 0.5000, accuracy "
          f"{accuracy(yt, np.full(yt.size, float(rate > 0.5))):.4f}\n")
    configs = []
    for policy in ("symmetric", "depthwise"):
        for update in registry.available("update"):
            configs.append(dict(grow_policy=policy, update=update, **RULE_SETTINGS.get(
                update, {})))
        for sampler in registry.available("sampler"):
            configs.append(dict(grow_policy=policy, update="sgb", sampler=sampler,
                                subsample=0.5))
    header = (f"{'grow policy':<11} {'update':<7} {'sampler':<16} {'trees':>5} "
              f"{'fit s':>6} {'logloss':>8} {'AUC':>7} {'accuracy':>8}")
    print(header)
    print("-" * len(header))
    worse = []
    for i, cfg in enumerate(configs, 1):
        settings = {"learning_rate": args.learning_rate, **cfg}
        model = BoostClassifier(n_estimators=args.n_estimators,
                                max_depth=args.max_depth, random_state=args.random_state,
                                n_jobs=args.n_jobs, early_stopping_rounds=rounds or None,
                                **settings)
        eval_set = None if valid_rows is None else [(X[valid_rows], y[valid_rows])]
        t0 = time.perf_counter()
        model.fit(X[fit_rows], y[fit_rows], eval_set=eval_set)
        fit_s = time.perf_counter() - t0
        p = model.predict_proba(Xt)[:, 1]
        sampler = cfg.get("sampler") or ("bagging" if cfg.get("subsample") else "-")
        if cfg.get("sampler") or cfg.get("subsample"):
            sampler += f" ({cfg['subsample']:g})"
        loss = logloss(yt, p)
        if loss > constant:
            worse.append(cfg["update"])
        print(f"{cfg['grow_policy']:<11} {cfg['update']:<7} {sampler:<16} {model.n_trees_:>5} "
              f"{fit_s:>6.2f} {loss:>8.4f} {roc_auc(yt, p):>7.4f} "
              f"{accuracy(yt, model.predict(Xt)):>8.4f}" + (" *" if loss > constant else ""),
              flush=True)
    notes = ["trees: those kept; agbm and agbmr fit two trees per iteration."]
    accelerated = [u for u in ACCELERATED_UPDATES if u in registry.available("update")]
    if worse:
        why = (f"the accelerated update rules ({', '.join(accelerated)}) fit the training "
               "rows in far fewer iterations than sgb, so at this learning rate they overfit "
               "long before the last iteration" if set(worse) <= set(accelerated) else
               "the model overfits the training rows at these settings")
        notes.append(f"* worse than the constant model: {why}. Keep early stopping on "
                     "(--early-stopping-rounds N), or lower --n-estimators or "
                     "--learning-rate.")
    elif rounds and accelerated:
        notes.append(f"Early stopping picks each model's number of iterations. The "
                     f"accelerated update rules ({', '.join(accelerated)}) fit the training "
                     "rows in far fewer iterations than sgb: without early stopping "
                     "(--early-stopping-rounds 0) they overfit, and at the default 200 "
                     "iterations their test logloss ends above the constant model's.")
    print("\n" + "\n".join(textwrap.fill(note, 90, subsequent_indent="  ") for note in notes))


#: Size of the demo's multiclass problem.
DEMO_CLASSES, DEMO_FEATURES, DEMO_ROWS = 5, 10, (4000, 1000)


def multiclass_demo_data(n_rows: int, seed: int, n_classes: int = DEMO_CLASSES,
                         n_features: int = DEMO_FEATURES
                         ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A synthetic multiclass problem whose true class probabilities are known.

    Features are standard normal; class ``k`` has the score ``0.8 * X @ W[:, k] +
    sin(2 * X[:, k])`` (``W`` fixed, standard normal), and the label is the class of the
    largest score plus Gumbel noise, so the class probabilities are the softmax of the
    scores.

    Parameters
    ----------
    n_rows : int
    seed : int
        Seed of the rows (the score weights do not depend on it).
    n_classes : int, default DEMO_CLASSES
        At most ``n_features``.
    n_features : int, default DEMO_FEATURES

    Returns
    -------
    X : ndarray of shape (n_rows, n_features)
    y : ndarray of shape (n_rows,)
        Labels ``0 .. n_classes - 1`` (int64).
    proba : ndarray of shape (n_rows, n_classes)
        The true class probabilities.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    weights = np.random.default_rng(20240607).normal(size=(n_features, n_classes))
    score = 0.8 * X @ weights + np.sin(2.0 * X[:, :n_classes])
    y = np.argmax(score + rng.gumbel(size=score.shape), axis=1).astype(np.int64)
    proba = np.exp(score - score.max(axis=1, keepdims=True))
    return X, y, proba / proba.sum(axis=1, keepdims=True)


def _demo_multiclass(args: argparse.Namespace) -> None:
    """A synthetic 5-class problem: softmax loss with both tree kinds."""
    from ..estimators import BoostClassifier
    from ...engine.metrics import accuracy, multiclass_logloss

    X, y, _ = multiclass_demo_data(DEMO_ROWS[0], seed=1)
    Xt, yt, truth = multiclass_demo_data(DEMO_ROWS[1], seed=2)
    prior = np.bincount(y, minlength=DEMO_CLASSES) / y.size
    print(f"\nmulticlass: {DEMO_CLASSES} classes, synthetic numpy data ({X.shape[0]} train / "
          f"{Xt.shape[0]} test rows, {X.shape[1]} features), loss multiclass (softmax)")
    print(f"on the test rows, the class frequencies score multiclass logloss "
          f"{multiclass_logloss(yt, np.tile(prior, (yt.size, 1))):.4f}; the true "
          f"probabilities {multiclass_logloss(yt, truth):.4f} (accuracy "
          f"{accuracy(yt, truth.argmax(axis=1)):.4f})\n")
    header = (f"{'grow policy':<11} {'trees':>5} {'fit s':>6} {'multiclass logloss':>18} "
              f"{'accuracy':>8}")
    print(header)
    print("-" * len(header))
    for policy in ("symmetric", "depthwise"):
        model = BoostClassifier(n_estimators=args.n_estimators, learning_rate=args.learning_rate,
                                max_depth=args.max_depth, random_state=args.random_state,
                                n_jobs=args.n_jobs, grow_policy=policy)
        t0 = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - t0
        proba = model.predict_proba(Xt)
        print(f"{policy:<11} {model.n_trees_:>5} {fit_s:>6.2f} "
              f"{multiclass_logloss(yt, proba):>18.4f} "
              f"{accuracy(yt, model.predict(Xt)):>8.4f}", flush=True)
