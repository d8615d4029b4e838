"""Explaining models: SHAP values through shap's own tools.

boostlib computes exact SHAP values itself (``predict(X, pred_contrib=True)``, see
:mod:`boostlib.engine.contributions`); this package hands models and values to the ``shap``
package (``pip install boostlib[shap]``) for its plots.
"""
from .shap_trees import explanation, to_shap

__all__ = ["to_shap", "explanation"]
