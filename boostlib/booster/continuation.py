"""Continued training (``train(..., init_model=)``, the estimators' ``warm_start``): what
the new fit takes from the model it continues, what must match, and where it starts.

A continued fit keeps the model's bin borders (the new data is binned with its
:class:`~boostlib.engine.binning.BinMapper`), its tree kind, its loss and its bias; its
training and validation scores start from the model's raw scores, its iterations are
numbered on from the model's, and its random streams go on from where the model's fit left
them (see :class:`~boostlib.engine.random_streams.Streams`). The guide is
``docs/training_controls.md``.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import numpy as np

from ..io.model_files import plain
from ..engine.dataset import Dataset
from ..engine.ensemble import Ensemble
from ..engine.linear_leaves import RawColumns
from .model import Model
from ..engine.random_streams import Streams
from ..engine.validation import check_columns


def _loss_label(model: Model) -> str:
    return model.loss_spec.get("name") or type(model.loss).__name__


def inherit_params(params: Mapping[str, Any], init_model: Any) -> Dict[str, Any]:
    """``params`` with what a continuation of ``init_model`` takes from the model.

    ``grow_policy``, ``max_bins``, ``min_samples_bin``, ``categorical_encoding``, ``loss``
    and ``loss_params`` left out of ``params`` are the model's; given, the first three and
    ``loss`` must equal the model's, ``categorical_encoding`` must be the model's or
    ``"auto"`` (checked by ``training.encode_sets``), and ``loss_params`` are merged over the
    model's (a changed value is refused by :func:`check_compatible`).

    Raises
    ------
    TypeError
        When ``init_model`` is not a :class:`~boostlib.Model`.
    ValueError
        When ``grow_policy``, ``max_bins``, ``min_samples_bin`` or ``loss`` differ from the
        model's.
    """
    if not isinstance(init_model, Model):
        raise TypeError(f"init_model={init_model!r} is invalid; expected a boostlib.Model (what "
                        "train returns, Model.load reads, or an estimator's model_)")
    if not isinstance(params, Mapping):
        return params                   # resolve() reports it
    out = dict(params)
    ensemble = init_model.ensemble
    if "grow_policy" in out and out["grow_policy"] != ensemble.policy:
        raise ValueError(f"grow_policy={out['grow_policy']!r} differs from the tree kind of "
                         f"init_model ({ensemble.policy!r}); a continued model keeps its tree "
                         f"kind: leave grow_policy out or pass {ensemble.policy!r}")
    out["grow_policy"] = ensemble.policy
    max_bins = int(ensemble.bin_mapper.max_bins)
    if "max_bins" in out and out["max_bins"] != max_bins:
        raise ValueError(f"max_bins={out['max_bins']!r} differs from init_model's "
                         f"({max_bins}); a continued fit bins the data with the model's bin "
                         "borders: leave max_bins out or pass the model's")
    out["max_bins"] = max_bins
    out.setdefault("categorical_encoding",
                   init_model.params.get("categorical_encoding", "sets"))
    had = int(init_model.params.get("min_samples_bin", 1))
    if "min_samples_bin" in out and out["min_samples_bin"] != had:
        raise ValueError(f"min_samples_bin={out['min_samples_bin']!r} differs from "
                         f"init_model's ({had}); a continued fit bins the data with the "
                         "model's bin borders: leave min_samples_bin out or pass the model's")
    out["min_samples_bin"] = had
    spec = init_model.loss_spec
    name = spec.get("name")
    given = out.get("loss")
    if given is None:
        out["loss"] = name if name is not None else init_model.loss
    elif (given != name) if isinstance(given, str) else (type(given) is not
                                                         type(init_model.loss)):
        shown = given if isinstance(given, str) else type(given).__name__
        raise ValueError(f"loss={shown!r} differs from the loss of init_model "
                         f"({_loss_label(init_model)!r}); a continued model keeps its loss: "
                         "leave loss out or pass the model's")
    if name is not None and isinstance(out["loss"], str):
        extra = out.get("loss_params")
        out["loss_params"] = {**dict(spec.get("params") or {}),
                              **(extra if isinstance(extra, dict) else {})}
    return out


def check_compatible(init_model: Model, train_set: Dataset, loss_spec: Dict[str, Any],
                     n_outputs: int) -> None:
    """Refuse a training set or loss the model cannot be continued on.

    Raises
    ------
    ValueError
        For another number of outputs, other loss parameters, another number of features,
        other feature names, or other categorical features than the model's.
    """
    if n_outputs != init_model.n_outputs:
        raise ValueError(f"init_model has {init_model.n_outputs} output(s); the loss "
                         f"{_loss_label(init_model)!r} gives {n_outputs} on this training set "
                         "(a continued model keeps its outputs, e.g. a multiclass model's "
                         "classes)")
    old = init_model.loss_spec
    if old.get("name") is not None and \
            plain(loss_spec.get("params")) != plain(old.get("params") or {}):
        raise ValueError(f"loss_params={loss_spec.get('params')!r} differ from those of "
                         f"init_model's loss ({old.get('params')!r}); a continued model keeps "
                         "its loss")
    if train_set.n_features != init_model.n_features:
        raise ValueError(f"train_set has {train_set.n_features} features; init_model was "
                         f"trained on {init_model.n_features}")
    check_columns(init_model.feature_names, train_set.feature_names,
                  "the feature names of train_set differ from init_model's: train_set",
                  "in init_model")
    # an encoded model's mapper bins its encoded columns; its encoder knows the features
    categorical = (init_model.ensemble.bin_mapper.categorical_ if init_model.encoder is None
                   else init_model.encoder.categorical)
    if not np.array_equal(np.asarray(categorical, dtype=bool),
                          np.asarray(train_set.categorical, dtype=bool)):
        raise ValueError(
            f"the categorical features of train_set (columns "
            f"{np.flatnonzero(train_set.categorical).tolist()}) differ from init_model's "
            f"(columns {np.flatnonzero(categorical).tolist()}); set "
            "categorical_features as for the model")


def continued_ensemble(init_model: Model) -> Ensemble:
    """A new ensemble holding ``init_model``'s trees, coefficients, bias, bin borders and
    scale history (the model itself is left as it is; the trees are shared, never
    modified)."""
    old = init_model.ensemble
    ensemble = Ensemble(old.bin_mapper, old.policy, old.bias, old.n_outputs)
    for tree, coef in zip(old.trees, old.coef.tolist()):
        ensemble.add(tree, coef)
    ensemble.scale_history = (None if old.scale_history is None
                              else list(old.scale_history))
    return ensemble


def start_scores(ensemble: Ensemble, X_binned: Any, n_threads: int,
                 columns: Optional[RawColumns] = None) -> np.ndarray:
    """The raw scores of ``ensemble`` on rows binned with its mapper, output-major
    ``(n_outputs, n_rows)``: the bias plus every tree in order, summed per row as training
    sums them (so a continuation of SGB starts from the scores one longer fit had, bit for
    bit); ``columns``: the rows' raw values (trees with linear leaves)."""
    n_rows = X_binned.shape[1]
    out = ensemble.start_scores(n_rows)
    if ensemble.trees:
        ensemble.add_trees_binned(X_binned, out, ensemble.trees, ensemble.coef.copy(),
                                  n_threads, columns)
    return out.reshape(ensemble.n_outputs, n_rows)


def streams(seed: np.random.SeedSequence, init_model: Optional[Model]) -> Streams:
    """The random streams of a fit: fresh, or continuing ``init_model``'s."""
    if init_model is None:
        return Streams(seed)
    return Streams(seed, getattr(init_model, "random_streams", None),
                   restart_key=getattr(init_model, "n_iterations", init_model.n_trees))
