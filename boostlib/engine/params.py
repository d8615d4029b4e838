"""Training parameters: their names, defaults and validation (shared by
:func:`boostlib.train` and the estimators, which take the same names)."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

import numpy as np

from .._messages import shown
from ..plugin.api import Metric
from .trees import GROW_POLICIES, TreeGroup, kind_of
from .trees.base import MAX_DEPTH
from .validation import check_choice, check_number

LEAF_ESTIMATIONS = ("newton", "gradient")

#: Largest ``|n_jobs|`` accepted (a thread count; model files store it).
MAX_N_JOBS = 1024
#: Deepest symmetric trees: an oblivious tree of depth ``d`` has ``2**d`` leaves.
MAX_SYMMETRIC_DEPTH = 16
#: Most scalar trees a model may hold (every output's tree counts): the bound model files
#: enforce, so every model training gives can be saved and loaded back.
MAX_TREES = 500_000
#: Most bytes the trees of a model may take in a model file (their arrays, as the file's
#: binary blocks hold them before base64): what training's parameters allow is checked
#: against it at the start, so that every model fits a model file (at most 1 GiB: the
#: trees' 853 MiB of base64 at this bound, with room for the rest; see docs/reliability.md).
MAX_TREE_BYTES = 640 << 20

#: Most leaves of a leaf-wise tree (``max_leaves``; LightGBM's bound on ``num_leaves``).
MAX_LEAVES = 131_072

#: ``max_leaves`` of leaf-wise trees when the parameter is None (LightGBM's ``num_leaves``).
DEFAULT_MAX_LEAVES = 31

#: Every training parameter with its default (the estimators' constructor defaults).
DEFAULTS: Dict[str, Any] = {
    "n_estimators": 100, "learning_rate": 0.1, "max_depth": 6, "grow_policy": "symmetric",
    "max_leaves": None, "prune_features": False, "max_bins": 255,
    "min_samples_bin": 1, "monotonic_cst": None, "interaction_constraints": None,
    "colsample_bytree": 1.0, "colsample_bynode": 1.0, "l2_regularization": 1.0,
    "min_samples_leaf": 1,
    "min_child_weight": 1e-3, "cat_smooth": 10.0, "cat_l2": 10.0,
    "min_data_per_group": None, "max_cat_threshold": 32,
    "leaf_estimation": "newton", "random_strength": 0.0,
    "loss": None, "loss_params": None, "sampler": None, "subsample": 1.0,
    "sampler_params": None, "update": "sgb", "update_params": None,
    "early_stopping_rounds": None, "eval_metric": None, "random_state": None, "n_jobs": None,
    "verbose": 0,
}


def metric_specs(value: Any) -> List[Any]:
    """``eval_metric`` as a list of metric names and :class:`~boostlib.api.Metric` instances
    (None: none), or a TypeError/ValueError naming it."""
    if value is None:
        return []
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not items:
        raise ValueError("eval_metric=[] is invalid; expected None, a metric name, a Metric "
                         "or a non-empty list of them")
    for item in items:
        if not (isinstance(item, str) and item or isinstance(item, Metric)):
            raise TypeError(f"eval_metric={value!r} is invalid; expected a metric name, a "
                            "boostlib.api.Metric or a list of them")
    names = [m if isinstance(m, str) else (m.name or type(m).__name__) for m in items]
    if len(set(names)) != len(names):
        raise ValueError(f"eval_metric={value!r} names a metric twice")
    return items


def min_data_per_group(value: Any, n_rows: int) -> int:
    """``min_data_per_group``, with None (the default) meaning 0.5% of the training rows,
    at least 10 and at most 200: on UCI Adult (5-fold cross-validation, with and without a
    ~2,000-level column) fixed values of 10 overfit set splits, 100-200 beat ordinal codes,
    and a fixed 100 would forbid set splits on small data altogether."""
    if value is not None:
        return int(value)
    return int(min(200, max(10, round(n_rows / 200))))


def resolve(params: Mapping[str, Any]) -> Dict[str, Any]:
    """``params`` over the defaults, validated.

    Raises
    ------
    TypeError, ValueError
        An unknown name (the message lists the known ones) or a value out of range (the
        message names the parameter, the value and what was expected).
    """
    if not isinstance(params, Mapping):
        raise TypeError(f"params={params!r} is invalid; expected a dict of training "
                        "parameters")
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown training parameter(s) {unknown}; expected names among "
                         f"{sorted(DEFAULTS)}")
    p = {**DEFAULTS, **params}
    check_number("n_estimators", p["n_estimators"], 1, MAX_TREES, integer=True)
    check_number("learning_rate", p["learning_rate"], 0.0, low_open=True)
    check_number("max_depth", p["max_depth"], 1, MAX_DEPTH, integer=True)
    check_choice("grow_policy", p["grow_policy"], GROW_POLICIES)
    if p["grow_policy"] == "symmetric" and p["max_depth"] > MAX_SYMMETRIC_DEPTH:
        raise ValueError(f"max_depth={p['max_depth']!r} is too deep for symmetric trees; "
                         f"expected at most {MAX_SYMMETRIC_DEPTH} (a symmetric tree of depth d "
                         "has 2**d leaves)")
    if p["max_leaves"] is not None:
        if p["grow_policy"] != "lossguide":
            raise ValueError(f"max_leaves={p['max_leaves']!r} is for grow_policy='lossguide' "
                             f"(leaf-wise trees); grow_policy={p['grow_policy']!r} trees are "
                             "limited by max_depth: leave max_leaves=None")
        check_number("max_leaves", p["max_leaves"], 2, MAX_LEAVES, integer=True)
    if not isinstance(p["prune_features"], (bool, np.bool_)):
        raise ValueError(f"prune_features={p['prune_features']!r} is invalid; expected True or "
                        "False")
    if p["prune_features"] and p["grow_policy"] != "lossguide":
        raise ValueError(f"prune_features=True is for grow_policy='lossguide' (leaf-wise "
                         f"trees); grow_policy={p['grow_policy']!r} trees search every "
                         "feature in every node: leave prune_features=False")
    check_number("max_bins", p["max_bins"], 2, 255, integer=True)
    check_number("min_samples_bin", p["min_samples_bin"], 1, integer=True)
    check_number("colsample_bytree", p["colsample_bytree"], 0.0, 1.0, low_open=True)
    check_number("colsample_bynode", p["colsample_bynode"], 0.0, 1.0, low_open=True)
    if p["interaction_constraints"] is not None and p["grow_policy"] == "symmetric":
        raise ValueError("interaction_constraints need grow_policy='depthwise' or "
                         "'lossguide': a symmetric tree shares each level's split among all "
                         "its leaves, so every path uses the same features")
    check_number("l2_regularization", p["l2_regularization"], 0.0)
    check_number("min_samples_leaf", p["min_samples_leaf"], 1, integer=True)
    check_number("min_child_weight", p["min_child_weight"], 0.0)
    if p["l2_regularization"] == 0 and p["min_child_weight"] == 0:
        raise ValueError("l2_regularization and min_child_weight cannot both be 0 (leaf "
                         "values -G/(H+l2) would divide by zero)")
    check_number("cat_smooth", p["cat_smooth"], 0.0)
    check_number("cat_l2", p["cat_l2"], 0.0)
    if p["min_data_per_group"] is not None:
        check_number("min_data_per_group", p["min_data_per_group"], 1, integer=True)
    check_number("max_cat_threshold", p["max_cat_threshold"], 1, 255, integer=True)
    check_choice("leaf_estimation", p["leaf_estimation"], LEAF_ESTIMATIONS)
    check_number("random_strength", p["random_strength"], 0.0)
    check_number("subsample", p["subsample"], 0.0, 1.0, low_open=True)
    if p["early_stopping_rounds"] is not None:
        check_number("early_stopping_rounds", p["early_stopping_rounds"], 1, integer=True)
    if p["verbose"] is not True:
        check_number("verbose", p["verbose"], 0, integer=True)
    metric_specs(p["eval_metric"])
    n_jobs = p["n_jobs"]
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(
            n_jobs, (int, np.integer)) or n_jobs == 0 or abs(n_jobs) > MAX_N_JOBS):
        raise ValueError(f"n_jobs={n_jobs!r} is invalid; expected None or a non-zero integer "
                         f"in [-{MAX_N_JOBS}, {MAX_N_JOBS}] (negative: all cores but some)")
    for name in ("loss_params", "sampler_params", "update_params"):
        value = p[name]
        if value is not None and not isinstance(value, dict):
            raise TypeError(f"{name}={shown(value)} is invalid; expected a dict or None")
    return p


def check_orphaned_params(p: Mapping[str, Any]) -> None:
    """Refuse parameter dicts that no component would receive: ``sampler_params`` (non-empty)
    with ``sampler=None`` and ``subsample=1``, where rows are not sampled. (``loss_params``
    and ``update_params`` always reach their component, which refuses unknown keys; so do
    ``sampler_params`` given with a sampler.)

    Separate from :func:`resolve`, which the model-file loader also runs: files written
    before this check may hold such dicts, and they still load.

    Parameters
    ----------
    p : mapping
        Resolved parameters (:func:`resolve`).

    Raises
    ------
    ValueError
        Naming ``sampler_params`` and what it needs.
    """
    if p["sampler_params"] and p["sampler"] is None and p["subsample"] >= 1.0:
        raise ValueError(f"sampler_params={shown(p['sampler_params'])} has no sampler to go "
                         "to: with sampler=None and subsample=1.0 rows are not sampled; "
                         "expected sampler=NAME too (or subsample below 1, which samples "
                         "with 'uniform')")


def check_model_size(p: Mapping[str, Any], n_outputs: int, n_rows: int, categorical: bool,
                     update: Any, init_ensemble: Optional[Any] = None) -> None:
    """Refuse, before training starts, parameters that allow a model larger than a model
    file holds: more than :data:`MAX_TREES` trees, or trees of more than
    :data:`MAX_TREE_BYTES`, counting every tree at the largest size the parameters allow.

    Parameters
    ----------
    p : mapping
        The parameters, as :func:`resolve` gives them.
    n_outputs : int
        The loss's number of outputs (each term has a tree per output).
    n_rows : int
        Training rows: a depthwise or leaf-wise tree has at most one leaf per
        ``min_samples_leaf`` of them.
    categorical : bool
        Whether the data has categorical features (a categorical split stores a set).
    update : UpdateRule
        The update rule; an iteration adds at most its ``trees_per_iteration`` terms.
    init_ensemble : Ensemble, optional
        The model training continues (``init_model``), whose trees count as they are.

    Raises
    ------
    ValueError
        Naming the parameters, what they allow and the limit.
    """
    per_iteration = int(getattr(update, "trees_per_iteration", 1))
    n_new = p["n_estimators"] * per_iteration * n_outputs
    before = [] if init_ensemble is None else [
        s for t in init_ensemble.trees for s in (t.trees if isinstance(t, TreeGroup) else [t])]
    given = f"n_estimators={p['n_estimators']}" \
        + (f" x {per_iteration} trees per iteration (update rule "
           f"{getattr(update, 'name', '') or type(update).__name__!r})"
           if per_iteration > 1 else "") \
        + (f" x {n_outputs} outputs" if n_outputs > 1 else "")
    if len(before) + n_new > MAX_TREES:
        raise ValueError(f"{given} would give {len(before) + n_new} trees"
                         + (f" (init_model has {len(before)})" if before else "")
                         + f"; a model holds at most MAX_TREES = {MAX_TREES}: lower "
                           "n_estimators")
    policy, depth = p["grow_policy"], p["max_depth"]
    kind = kind_of(policy)
    msl = p["min_samples_leaf"]
    leaves = min(1 << depth, max(1, n_rows // msl))      # a leaf holds min_samples_leaf rows
    shape = f"max_depth={depth}: {1 << depth} leaves"
    advice = "n_estimators or max_depth"
    if policy != "symmetric":
        max_leaves = p["max_leaves"] or DEFAULT_MAX_LEAVES
        if policy == "lossguide":
            leaves = min(leaves, max_leaves)
        shape = (f"max_leaves={max_leaves}, " if policy == "lossguide" else "") \
            + f"max_depth={depth}, min_samples_leaf={msl} of {n_rows} rows: up to " \
              f"{leaves} leaves"
        advice = ("n_estimators, max_leaves or max_depth" if policy == "lossguide" else
                  "n_estimators or max_depth") + ", or raise min_samples_leaf"
    per_tree = kind.max_tree_bytes(depth, leaves, categorical)
    total = sum(kind_of(t.policy).tree_bytes(t) for t in before) + n_new * per_tree
    if total > MAX_TREE_BYTES:
        raise ValueError(f"{given} {policy} trees ({shape}, {per_tree / 2**20:.3g} MiB each) "
                         f"could take {total / 2**20:.4g} MiB"
                         + (" with init_model's trees" if before else "")
                         + ", more than a model file "
                         f"holds (MAX_TREE_BYTES = {MAX_TREE_BYTES >> 20} MiB of trees): "
                         f"lower {advice}")
