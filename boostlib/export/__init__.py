"""Deploying boostlib models outside Python's boostlib: ONNX export.

``to_onnx(model)`` turns a fitted :class:`~boostlib.BoostClassifier`,
:class:`~boostlib.BoostRegressor`, :class:`~boostlib.BoostRanker` or engine
:class:`~boostlib.Model` into an ``onnx.ModelProto`` (``ai.onnx.ml`` ``TreeEnsemble``,
opset 5) that onnxruntime runs; ``onnx_input(model, X)`` gives the matrix the graph reads
(categorical columns as boostlib's category codes). onnx is an optional dependency
(``pip install "boostlib[onnx]"``), imported only when a graph is built. See
``docs/deploy.md``.

Modules: :mod:`boostlib.export.onnx_trees` (the trees as the operator's node and leaf
arrays), :mod:`boostlib.export.onnx_encoding` (a ``categorical_encoding`` as copies and
lookup tables), :mod:`boostlib.export.onnx_graph` (the graph: encoded columns, bias,
response, outputs) and :mod:`boostlib.export.onnx_export` (the public functions).
"""
from .onnx_export import FORMATS, onnx_input, to_onnx

__all__ = ["to_onnx", "onnx_input", "FORMATS"]
