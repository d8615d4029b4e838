"""A boostlib model in the dict-of-trees form ``shap.TreeExplainer`` accepts, and boostlib's
own SHAP values as a ``shap.Explanation``."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from ..booster.model import Model
from ..engine.trees import TreeGroup
from ..engine.trees.base import CAT_SPLIT, subtree_sums

#: Added, times the number of leaves below, to the covers of a tree that has nodes no
#: training row reached (relative to its smallest positive cover), so that shap's ratios of
#: covers stay defined; boostlib's own SHAP values take the limit of this (see
#: :mod:`boostlib.engine.contributions`), which they match to about this relative size.
EMPTY_COVER = 1e-12


def _model(model: Any) -> Model:
    inner = getattr(model, "model_", model)
    if not isinstance(inner, Model):
        raise TypeError(f"model must be a fitted boostlib estimator or a boostlib.Model, got "
                        f"{type(model).__name__}")
    return inner


def _shap_tree(model: Model, tree: Any, coef: float, output: int, where: str
               ) -> Dict[str, np.ndarray]:
    ensemble = model.ensemble
    a = ensemble.kind.node_arrays(tree)
    if a["cover"] is None:
        raise ValueError(f"{where} has no covers (the training rows per node): the model was "
                         "read from a model file older than format 4; retrain it")
    left = a["left"].astype(np.int32)
    right = a["right"].astype(np.int32)
    split = left >= 0
    if np.any(split & (a["nan_right"] == CAT_SPLIT)):
        k = int(np.argmax(split & (a["nan_right"] == CAT_SPLIT)))
        raise ValueError(f"{where} splits feature {int(a['feature'][k])} on a set of "
                         "categories, which shap's tree format cannot express (it has "
                         "thresholds only); use predict(X, pred_contrib=True) and "
                         "boostlib.explain.explanation for models with categorical features")
    mapper = ensemble.bin_mapper
    thresholds = np.array([mapper.threshold(int(f), int(b)) if s else 0.0
                           for f, b, s in zip(a["feature"], a["bin"], split)])
    cover = np.asarray(a["cover"], dtype=np.float64)
    if np.any(cover <= 0):
        positive = cover[cover > 0]
        scale = float(positive.min()) if positive.size else 1.0
        cover = cover + EMPTY_COVER * scale * subtree_sums(left, right, np.ones(left.size))
    values = np.zeros((left.size, model.n_outputs))
    values[:, output] = np.where(split, 0.0, coef * a["value"])
    return {
        "children_left": left,
        "children_right": right,
        "children_default": np.where(a["nan_right"] == 1, right, left).astype(np.int32),
        "features": np.where(split, a["feature"], -2).astype(np.int32),
        "thresholds": thresholds,
        "values": values,
        "node_sample_weight": cover,
    }


def to_shap(model: Any) -> Dict[str, Any]:
    """The model as the dict of trees ``shap.TreeExplainer`` takes, for shap's plots.

    Every tree becomes shap's explicit binary tree: ``children_left`` / ``children_right``
    (-1 at leaves), ``children_default`` (where a missing value goes), ``features``,
    ``thresholds`` (``x <= threshold`` goes left; raw feature values), ``values`` (n_nodes,
    n_outputs) (leaf values times the tree's coefficient, in the column of the tree's
    output) and ``node_sample_weight`` (the covers: training rows per node). The bias is
    ``base_offset``. shap's SHAP values of it are boostlib's own,
    ``predict(X, pred_contrib=True)``, explaining the raw score.

    Parameters
    ----------
    model : fitted BoostClassifier, BoostRegressor, BoostRanker, or boostlib.Model

    Returns
    -------
    dict
        ``{"trees": [...], "base_offset": ..., "tree_output": "raw_value",
        "input_dtype": float64, "internal_dtype": float64}``.

    Raises
    ------
    ValueError
        For a model with categorical splits (shap's format has thresholds only), one
        trained with a ``categorical_encoding`` other than ``"sets"``, one with linear
        leaves, or one without covers (read from a file older than format 4).

    Examples
    --------
    >>> import shap                                                   # doctest: +SKIP
    >>> explainer = shap.TreeExplainer(boostlib.explain.to_shap(clf))  # doctest: +SKIP
    >>> values = explainer.shap_values(X)                              # doctest: +SKIP
    """
    m = _model(model)
    if m.encoder is not None:
        raise ValueError(f"the model was trained with categorical_encoding="
                         f"{m.params.get('categorical_encoding')!r}: its trees read encoded "
                         "columns, not the features shap would pass; use "
                         "boostlib.explain.explanation or predict(X, pred_contrib=True), "
                         "which give each feature its columns' share")
    if m.ensemble.has_linear:
        raise ValueError("the model has linear leaves (linear_leaves=True), which shap's "
                         "trees cannot hold (a leaf there is a constant); use "
                         "boostlib.explain.explanation or predict(X, pred_contrib=True), "
                         "which include the leaves' linear terms")
    ensemble = m.ensemble
    trees: List[Dict[str, np.ndarray]] = []
    for t, (term, c) in enumerate(zip(ensemble.trees, ensemble.coef.tolist())):
        members = term.trees if isinstance(term, TreeGroup) else [term]
        for k, tree in enumerate(members):
            where = f"tree {t}" + (f" (output {k})" if m.n_outputs > 1 else "")
            trees.append(_shap_tree(m, tree, c, k, where))
    bias = ensemble.bias_array.copy()
    return {"trees": trees, "base_offset": float(bias[0]) if m.n_outputs == 1 else bias,
            "tree_output": "raw_value", "input_dtype": np.float64,
            "internal_dtype": np.float64}


def explanation(model: Any, X: Any, *, feature_names: Optional[List[str]] = None,
                n_jobs: Optional[int] = None) -> Any:
    """boostlib's SHAP values of the rows ``X`` as a ``shap.Explanation``, for shap's plots
    (``shap.plots.beeswarm``, ``waterfall``, ``scatter``, ...); categorical features too.

    Parameters
    ----------
    model : fitted BoostClassifier, BoostRegressor, BoostRanker, or boostlib.Model
    X : array-like of shape (n_samples, n_features)
    feature_names : list of str, optional
        Default: the names the model was trained with, if any.
    n_jobs : int, optional

    Returns
    -------
    shap.Explanation
        ``values`` (n_samples, n_features) (a class axis last for several outputs),
        ``base_values`` the expected raw score, ``data`` the rows.
    """
    try:
        import shap
    except ImportError:                                   # pragma: no cover - optional
        raise ImportError("boostlib.explain.explanation needs shap: pip install "
                          "boostlib[shap]") from None
    m = _model(model)
    contrib = m.predict(X, pred_contrib=True, n_jobs=n_jobs)
    names = feature_names
    if names is None and m.feature_names is not None:
        names = [str(n) for n in m.feature_names]
    data = X.to_numpy() if hasattr(X, "to_numpy") else np.asarray(X)
    return shap.Explanation(values=contrib[:, :-1], base_values=contrib[:, -1], data=data,
                            feature_names=names)
