"""The ONNX graph of a boostlib model: the tree ensemble, the bias, the loss's response and
the outputs of the estimator's predictions.

The graph (default domain opset :data:`OPSET`, ``ai.onnx.ml`` opset :data:`ML_OPSET`)::

    X (N, n_features) [-> encoded columns (N, n_columns)]
        -> TreeEnsemble -> + bias (+ linear leaves) -> raw (N, K)
        regression, ranking:   prediction  = response(raw)              (N,) or (N, K)
        binary classifier:     probabilities = [1 - sigmoid(raw), sigmoid(raw)]   (N, 2)
                               label = classes[raw > 0]                 (N,)
        multiclass classifier: probabilities = softmax(raw)             (N, K)
                               label = classes[argmax(raw)]             (N,)
        raw=True:              raw_score = raw                          (N,) or (N, K)

The encoded columns (``_encoded_columns``, a model with a ``categorical_encoding`` other
than ``"sets"``; see :mod:`boostlib.export.onnx_encoding`): ``Gather`` copies runs of
numeric and set-split features; a one-hot or target-statistics feature's column goes
through ``LabelEncoder`` (each seen code to its row of the feature's table, any other value
to the "unseen" row), ``Where(IsNaN)`` sends NaN to the "missing" row, and ``Gather``
fetches the rows; ``Concat`` puts the parts in the encoder's order. The trees (and the
linear leaves) read that matrix instead of ``X``.

Linear leaves (``_linear_part``): a second ``TreeEnsemble`` finds every row's leaf in
each tree with linear leaves (its leaves weigh their row in the tables), ``Gather`` fetches
the leaves' padded entries, ``GatherElements`` the row's values of their features, and the
terms ``coef * w * (x - m)`` are summed per tree (0 where a feature of the leaf is NaN or
infinite) and per output (``MatMul`` by a 0/1 matrix).

The response is applied by explicit nodes after the tree operator (``Sigmoid``, ``Softmax``,
``Clip`` and ``Exp``), not by the operator's ``post_transform``, which runtimes implement
differently. onnx is imported when a graph is built, not with this module.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .onnx_encoding import CopiedColumns, EncodingArrays, LookupTable
from .onnx_trees import LinearLeafArrays, TreeEnsembleArrays, as_arrays

#: Version of the default ONNX domain the graphs use (``Softmax`` over one axis, ``Clip``
#: with tensor bounds).
OPSET = 21
#: Version of the ``ai.onnx.ml`` domain: ``TreeEnsemble`` appeared in 5.
ML_OPSET = 5
#: ONNX IR version of the files (that of ONNX 1.16, the first with ``TreeEnsemble``).
IR_VERSION = 10
#: boostlib's log-link losses clip raw scores to this bound before ``exp``.
MAX_LOG = 700.0

ONNX_EXTRA = 'pip install "boostlib[onnx]"'


def import_onnx() -> Any:
    """The ``onnx`` module.

    Raises
    ------
    ImportError
        When onnx is not installed, saying how to install it.
    """
    try:
        import onnx
    except ImportError as exc:
        raise ImportError("ONNX export needs the onnx package (an optional dependency of "
                          f"boostlib): {ONNX_EXTRA}") from exc
    return onnx


def _label_values(classes: Sequence[Any]) -> np.ndarray:
    """The class labels as an array ONNX can hold: int64, float64, bool or strings."""
    arr = np.asarray(classes)
    if arr.dtype.kind == "O":
        values = arr.tolist()
        if all(isinstance(v, (bool, np.bool_)) for v in values):
            arr = np.asarray(values, dtype=bool)
        elif all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                 for v in values):
            arr = np.asarray(values, dtype=np.int64)
        elif all(isinstance(v, (int, float, np.integer, np.floating)) for v in values):
            arr = np.asarray(values, dtype=np.float64)
        else:
            return np.array([str(v) for v in values], dtype=object)
    if arr.dtype.kind in "US":
        return np.array([v.decode() if isinstance(v, bytes) else str(v)
                         for v in arr.tolist()], dtype=object)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        return arr.astype(np.float64)
    return arr


class _Graph:
    """Nodes, initializers and outputs of one graph under construction."""

    def __init__(self, onnx: Any, dtype: Any):
        self.onnx = onnx
        self.helper = onnx.helper
        self.numpy_helper = onnx.numpy_helper
        self.dtype = np.dtype(dtype)
        self.elem = self.helper.np_dtype_to_tensor_dtype(self.dtype)
        self.nodes: List[Any] = []
        self.initializers: List[Any] = []
        self.outputs: List[Any] = []

    def const(self, name: str, value: Any) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: List[str], output: str, domain: str = "",
             **attrs: Any) -> str:
        self.nodes.append(self.helper.make_node(op, inputs, [output], name=output,
                                                domain=domain, **attrs))
        return output

    def output(self, name: str, elem: int, shape: List[Any]) -> None:
        self.outputs.append(self.helper.make_tensor_value_info(name, elem, shape))

    def tensor(self, name: str, value: np.ndarray) -> Any:
        return self.numpy_helper.from_array(value, name)

    def flat(self, name: str, output: str) -> str:
        """``name`` of shape (N, 1) reshaped to (N,)."""
        shape = "flat_shape"
        if not any(i.name == shape for i in self.initializers):
            self.const(shape, np.array([-1], dtype=np.int64))
        return self.node("Reshape", [name, shape], output)


def _response(g: _Graph, raw: str, link: str, output: str) -> str:
    """Nodes applying the inverse of ``link`` to ``raw``; returns the result's name."""
    if link == "identity":
        return g.node("Identity", [raw], output)
    if link == "logit":
        return g.node("Sigmoid", [raw], output)
    if link == "softmax":
        return g.node("Softmax", [raw], output, axis=1)
    # "log": boostlib computes exp(clip(raw, -700, 700))
    low = g.const("log_link_min", np.array(-MAX_LOG, dtype=g.dtype))
    high = g.const("log_link_max", np.array(MAX_LOG, dtype=g.dtype))
    return g.node("Exp", [g.node("Clip", [raw, low, high], "raw_clipped")], output)


def _tree_node(g: _Graph, arrays: TreeEnsembleArrays, output: str, name: str,
               prefix: str = "", columns: str = "X") -> str:
    """A ``TreeEnsemble`` node ``name`` of ``arrays`` reading the matrix ``columns``; its
    tensor attributes are named ``prefix`` + attribute."""
    attrs = as_arrays(arrays)
    for key in ("nodes_modes", "nodes_splits", "leaf_weights", "membership_values"):
        if key in attrs:
            attrs[key] = g.tensor(prefix + key, attrs[key])
    g.nodes.append(g.helper.make_node("TreeEnsemble", [columns], [output], name=name,
                                      domain="ai.onnx.ml", **attrs))
    return output


def _lookup(g: _Graph, part: LookupTable) -> str:
    """Nodes fetching the table rows of one feature's values (N, width): seen codes their
    own, NaN the missing row, any other value the unseen row."""
    p = f"encoding_f{part.feature}"
    x = g.node("Gather", ["X", g.const(p + "_index", np.array(part.feature, np.int64))],
               p + "_x", axis=1)                                               # (N,)
    unseen = np.array(part.unseen_row, dtype=np.int64)
    if part.codes.size:
        row = g.node("LabelEncoder", [x], p + "_code_row", domain="ai.onnx.ml",
                     keys_tensor=g.tensor(p + "_codes", part.codes),
                     values_tensor=g.tensor(p + "_rows",
                                            np.arange(part.codes.size, dtype=np.int64)),
                     default_tensor=g.tensor(p + "_unseen", unseen.reshape(1)))
    else:                                   # no code seen in training: every value unseen
        row = g.const(p + "_unseen", unseen)
    missing = g.const(p + "_missing", np.array(part.missing_row, dtype=np.int64))
    row = g.node("Where", [g.node("IsNaN", [x], p + "_nan"), missing, row], p + "_row")
    return g.node("Gather", [g.const(p + "_table", part.table), row], p + "_columns",
                  axis=0)                                                      # (N, width)


def _encoded_columns(g: _Graph, encoding: EncodingArrays) -> str:
    """Nodes building the columns the trees read (N, n_columns) from ``X``; see the module
    docstring."""
    parts = []
    for part in encoding.parts:
        if isinstance(part, CopiedColumns):
            name = f"encoding_copy_f{int(part.features[0])}"
            parts.append(g.node("Gather", ["X", g.const(name + "_index", part.features)],
                                name, axis=1))
        else:
            parts.append(_lookup(g, part))
    if len(parts) == 1:
        return g.node("Identity", parts, "X_encoded")
    return g.node("Concat", parts, "X_encoded", axis=1)


def _linear_part(g: _Graph, linear: LinearLeafArrays, columns: str = "X") -> str:
    """Nodes adding up the linear parts of the linear leaves (N, K) of the matrix
    ``columns``; see the module docstring."""
    onnx = g.onnx
    slot_f = _tree_node(g, linear.index, "linear_slot_f", "linear_trees", "linear_", columns)
    slot = g.node("Cast", [slot_f], "linear_slot", to=onnx.TensorProto.INT64)   # (N, L)
    feature = g.node("Gather", [g.const("linear_feature", linear.feature), slot],
                     "linear_entry_feature", axis=0)                              # (N, L, P)
    flat = g.node("Reshape", [feature, g.const("linear_flat", np.array([0, -1], np.int64))],
                  "linear_entry_feature_flat")                                  # (N, L*P)
    values = g.node("Reshape", [g.node("GatherElements", [columns, flat],
                                       "linear_x_flat", axis=1),
                                g.node("Shape", [feature], "linear_entry_shape")],
                    "linear_x")                                                 # (N, L, P)
    bad = g.node("Or", [g.node("IsNaN", [values], "linear_x_nan"),
                        g.node("IsInf", [values], "linear_x_inf")], "linear_x_missing")
    used = g.node("Gather", [g.const("linear_used", linear.used), slot], "linear_entry_used",
                  axis=0)
    missing = g.node("Cast", [g.node("And", [bad, used], "linear_missing_bool")],
                     "linear_missing", to=g.elem)
    axis = g.const("linear_axis", np.array([2], dtype=np.int64))
    incomplete = g.node("ReduceMax", [missing, axis], "linear_incomplete", keepdims=0)
    zero = g.const("linear_zero", np.zeros(1, dtype=g.dtype))
    x = g.node("Where", [bad, zero, values], "linear_x_finite")
    centred = g.node("Sub", [x, g.node("Gather", [g.const("linear_mean", linear.mean), slot],
                                       "linear_entry_mean", axis=0)], "linear_centred")
    terms = g.node("Mul", [centred, g.node("Gather", [g.const("linear_weight", linear.weight),
                                                      slot], "linear_entry_weight", axis=0)],
                   "linear_terms")
    per_tree = g.node("ReduceSum", [terms, axis], "linear_per_tree", keepdims=0)  # (N, L)
    kept = g.node("Where", [g.node("Greater", [incomplete, zero], "linear_drop"), zero,
                            per_tree], "linear_kept")
    return g.node("MatMul", [kept, g.const("linear_output", linear.output)], "linear_sum")


def build_model(arrays: TreeEnsembleArrays, bias: np.ndarray, n_features: int, *,
                link: str, task: str, classes: Optional[Sequence[Any]] = None,
                raw: bool = False, name: str = "boostlib_model", doc: str = "",
                metadata: Optional[Dict[str, Any]] = None,
                producer_version: str = "",
                linear: Optional[LinearLeafArrays] = None,
                encoding: Optional[EncodingArrays] = None) -> Any:
    """The ``onnx.ModelProto`` of a model's trees.

    Parameters
    ----------
    arrays : TreeEnsembleArrays
        The trees (:func:`~boostlib.export.onnx_trees.tree_ensemble_arrays`), in the graph's
        dtype.
    bias : ndarray of shape (K,)
        The model's bias.
    n_features : int
        Columns of the input ``X`` (the original features).
    link : {"identity", "log", "logit", "softmax"}
        The loss's link (the response is its inverse).
    task : {"classification", "regression"}
        Classification gives ``label`` and ``probabilities``, regression ``prediction``.
    classes : sequence, optional
        Labels of the classes (by index); default: the indices ``0 .. n_classes - 1``.
    raw : bool, default False
        Output the raw scores alone (``raw_score``).
    name : str, default "boostlib_model"
        The graph's name.
    doc : str, default ""
        The model's ``doc_string``.
    metadata : dict, optional
        ``metadata_props`` (values written as JSON).
    producer_version : str, default ""
        boostlib's version.
    linear : LinearLeafArrays, optional
        The linear parts of trees with linear leaves
        (:func:`~boostlib.export.onnx_trees.linear_leaf_arrays`).
    encoding : EncodingArrays, optional
        How to build the columns the trees read from ``X``
        (:func:`~boostlib.export.onnx_encoding.encoding_arrays`); default: the trees read
        ``X``.

    Returns
    -------
    onnx.ModelProto
        Checked by ``onnx.checker.check_model``.
    """
    onnx = import_onnx()
    helper = onnx.helper
    g = _Graph(onnx, arrays.dtype)
    k = arrays.n_targets
    if encoding is not None and encoding.n_features != n_features:
        raise ValueError(f"the encoding reads {encoding.n_features} features; the input has "
                         f"{n_features}")
    columns = "X" if encoding is None else _encoded_columns(g, encoding)
    _tree_node(g, arrays, "tree_sum", "trees", columns=columns)
    raw_name = g.node("Add", ["tree_sum", g.const("bias", bias.astype(g.dtype).reshape(k))],
                      "raw" if linear is None else "raw_constant")
    if linear is not None:
        raw_name = g.node("Add", [raw_name, _linear_part(g, linear, columns)], "raw")
    scores = ["N"] if k == 1 else ["N", k]
    if raw:
        if k == 1:
            g.flat(raw_name, "raw_score")
        else:
            g.node("Identity", [raw_name], "raw_score")
        g.output("raw_score", g.elem, scores)
    elif task == "regression":
        if k == 1:
            g.flat(_response(g, raw_name, link, "response"), "prediction")
        else:
            _response(g, raw_name, link, "prediction")
        g.output("prediction", g.elem, scores)
    else:
        n_classes = 2 if k == 1 else k
        label_index = "label_index" if classes is not None else "label"
        if k == 1:
            p1 = _response(g, raw_name, link, "p1")
            p0 = g.node("Sub", [g.const("one", np.ones(1, dtype=g.dtype)), p1], "p0")
            g.node("Concat", [p0, p1], "probabilities", axis=1)
            positive = g.node("Greater", [raw_name, g.const("zero", np.zeros(1, g.dtype))],
                              "positive")
            g.flat(g.node("Cast", [positive], "positive_index", to=onnx.TensorProto.INT64),
                   label_index)
        else:
            _response(g, raw_name, link, "probabilities")
            g.node("ArgMax", [raw_name], label_index, axis=1, keepdims=0)
        if classes is None:
            label_elem = onnx.TensorProto.INT64
        else:
            values = _label_values(classes)
            if values.shape != (n_classes,):
                raise ValueError(f"classes has {values.size} labels; the model has "
                                 f"{n_classes} classes")
            label_elem = g.tensor("classes", values).data_type
            g.node("Gather", [g.const("classes", values), label_index], "label", axis=0)
        g.output("label", label_elem, ["N"])
        g.output("probabilities", g.elem, ["N", n_classes])
    graph = helper.make_graph(
        g.nodes, name, [helper.make_tensor_value_info("X", g.elem, ["N", n_features])],
        g.outputs, initializer=g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid("ai.onnx.ml",
                                                                        ML_OPSET)],
                              ir_version=IR_VERSION, producer_name="boostlib",
                              producer_version=producer_version, doc_string=doc)
    if metadata:
        helper.set_model_props(model, {key: json.dumps(value)
                                       for key, value in metadata.items()})
    onnx.checker.check_model(model)
    return model
