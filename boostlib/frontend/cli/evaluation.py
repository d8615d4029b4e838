"""What ``train`` prints about a model: its evaluation on the training or held-out rows,
from predictions made at once (:func:`~boostlib.frontend.cli.evaluation.evaluation`) or a
batch at a time (:func:`~boostlib.frontend.cli.evaluation.predictions`, then
:func:`~boostlib.frontend.cli.evaluation.evaluation_of`)."""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from ...builtin.survival import AFTLoss, CIndexMetric, CoxLoss
from ...plugin import registry
from .columns import class_index

#: The survival losses, whose models ``train`` evaluates by the concordance index.
SURVIVAL_LOSSES = (CoxLoss, AFTLoss)


def predictions(model: Any, X: Any, init_score: Optional[np.ndarray] = None
                ) -> Dict[str, np.ndarray]:
    """What :func:`evaluation_of` reads of ``model``'s predictions on ``X``: a classifier's
    ``"proba"`` and ``"label"`` (``predict_proba`` and ``predict``), any other estimator's
    ``"score"`` (``predict``), and a survival model's raw scores ``"raw"`` (log hazard
    ratios, log times); ``init_score`` holds the rows' raw-score offsets."""
    offset = {} if init_score is None else {"init_score": init_score}
    if hasattr(model, "classes_"):
        return {"proba": model.predict_proba(X, **offset), "label": model.predict(X, **offset)}
    if isinstance(model.loss_, SURVIVAL_LOSSES):
        return {"raw": model.model_.predict(X, raw=True, **offset)}
    return {"score": model.predict(X, **offset)}


def survival_evaluation(model: Any, raw: np.ndarray, y: np.ndarray) -> str:
    """Harrell's concordance index of a survival model's raw scores ``raw`` on the labels
    ``y`` (signed times, or ``[lower, upper]`` bounds), and its loss on these rows (as the
    fit records it: ``cox``, minus the log partial likelihood over these rows' risk sets
    per row; ``aft``, the mean negative log-likelihood, XGBoost's ``aft-nloglik``)."""
    try:
        cindex = f"{CIndexMetric()(y, raw):.4f}"
    except ValueError:      # no event, or no row outliving one
        cindex = "undefined (no comparable pair: no event, or no row outlives one)"
    loss = model.loss_
    value = float(np.mean(loss.loss(loss.validate_target(y), raw)))
    return f"C-index {cindex}  loss ({loss.name}) {value:.6g}"


def evaluation_of(model: Any, outputs: Dict[str, np.ndarray], y: np.ndarray,
                  group: Optional[np.ndarray] = None) -> str:
    """The line :func:`evaluation` prints, from :func:`predictions` of the rows of ``y``."""
    from ...engine.metrics import accuracy, logloss, multiclass_logloss, roc_auc

    if "raw" in outputs:
        return survival_evaluation(model, outputs["raw"], y)
    if group is not None:
        score = outputs["score"]
        return "  ".join(f"{name.upper()}@10 "
                         f"{registry.create('metric', name, {'k': 10})(y, score, group=group):.4f}"
                         for name in ("ndcg", "map"))
    if hasattr(model, "classes_"):
        proba, label = outputs["proba"], outputs["label"]
        if model.classes_.size > 2:
            mlogloss = multiclass_logloss(class_index(model.classes_, y), proba)
            return f"multiclass logloss {mlogloss:.4f}  accuracy {accuracy(y, label):.4f}"
        p = proba[:, 1]
        positive = y == model.classes_[1]
        parts = [f"logloss {logloss(positive, p):.4f}"]
        if 0 < positive.sum() < positive.size:
            parts.append(f"AUC {roc_auc(positive, p):.4f}")
        parts.append(f"accuracy {accuracy(y, label):.4f}")
        return "  ".join(parts)
    err = outputs["score"] - y
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum(err ** 2)) / ss_tot if ss_tot > 0 else float("nan")
    return (f"RMSE {float(np.sqrt(np.mean(err ** 2))):.6g}  MAE {float(np.mean(np.abs(err))):.6g}"
            f"  R^2 {r2:.4f}")


def evaluation(model: Any, X: Any, y: np.ndarray, group: Optional[np.ndarray] = None,
               init_score: Optional[np.ndarray] = None) -> str:
    """Metrics of ``model`` on ``(X, y)``, as printed by ``train``.

    Parameters
    ----------
    model : BoostClassifier, BoostRegressor or BoostRanker
        A fitted estimator.
    X : array-like of shape (n_rows, n_features)
    y : ndarray of shape (n_rows,) or (n_rows, 2)
        True labels (classifier), values (regressor; signed times for ``cox``, ``[lower,
        upper]`` bounds for ``aft``) or relevance labels (ranker).
    group : ndarray of int, optional
        Query sizes (ranking).
    init_score : ndarray, optional
        The rows' raw-score offsets (``--offset``).

    Returns
    -------
    str
        Binary classification: logloss, AUC (when both classes occur) and accuracy;
        multiclass: multiclass logloss and accuracy; regression: RMSE, MAE and R^2;
        survival (loss ``cox`` or ``aft``): Harrell's C-index and the loss; ranking:
        NDCG@10 and MAP@10.
    """
    return evaluation_of(model, predictions(model, X, init_score), y, group)
