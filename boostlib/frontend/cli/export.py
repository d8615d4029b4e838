"""``boostlib export``: a model file as an ONNX model (:func:`boostlib.export.to_onnx`).

:func:`add_export` registers the subcommand on the ``boostlib`` parser's subparsers. It
reads estimator model files (``save_model``, ``boostlib train``) and engine model files
(``Model.save``) alike.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ...booster.model import Model
from ...export import FORMATS, to_onnx
from ...io import model_files
from ..estimator_files import estimator_from_parts
from .files import check_output, write_output

_EXPORT_EPILOG = """examples:
  boostlib export higgs.json --format onnx                 # writes higgs.onnx
  boostlib export higgs.json --output /srv/models/higgs.onnx
  boostlib export higgs.json --dtype float64 -o higgs64.onnx

The ONNX model (ai.onnx.ml TreeEnsemble, opset 5; onnxruntime runs it) reads one input X of
shape (N, n_features), float32 (--dtype float64: float64), NaN for missing values, the
columns in the model's feature order; categorical features hold their integer category
codes (boostlib.export.onnx_input builds X from a DataFrame). Outputs:
  regressor, ranker         prediction       (N,)   as predict()
  classifier                label            (N,)   as predict()
                            probabilities    (N, n_classes)   as predict_proba()
  --raw                     raw_score        the raw scores (decision_function())
Needs the onnx package: pip install "boostlib[onnx]"."""


def load_any_model(path: str) -> Any:
    """The estimator or engine model in the model file ``path``; errors name the file."""
    try:
        parts = model_files.read(path)
    except ValueError as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        if path not in message:
            message = f"MODEL.json {path!r}: {message}"
        raise ValueError(message) from None
    return Model.from_parts(parts) if parts.estimator is None else estimator_from_parts(parts)


def default_output(model_path: str, fmt: str) -> str:
    """``model_path`` with the format's suffix instead of its own (``m.json`` -> ``m.onnx``)."""
    root, ext = os.path.splitext(model_path)
    return (root if ext.lower() == ".json" else model_path) + "." + fmt


def run_export(args: argparse.Namespace) -> int:
    output = args.output if args.output is not None else default_output(args.model,
                                                                        args.format)
    check_output(output, {"MODEL.json": args.model}, "model.onnx")
    model = load_any_model(args.model)
    try:
        onx = to_onnx(model, dtype=args.dtype, raw=args.raw)
    except ImportError as exc:
        print(f"boostlib: error: {exc}", file=sys.stderr)
        return 2
    data = onx.SerializeToString()
    write_output(output, data, "ONNX file")
    outputs = ", ".join(o.name for o in onx.graph.output)
    n_features = onx.graph.input[0].type.tensor_type.shape.dim[1].dim_value
    print(f"{type(model).__name__} exported to {output} (ONNX, {len(data):,} bytes): input X "
          f"{args.dtype} (N, {n_features}); outputs {outputs}")
    return 0


def add_export(sub: Any) -> None:
    """Register ``boostlib export`` on ``sub``, the subparsers of the ``boostlib`` parser."""
    export = sub.add_parser(
        "export", help="convert a model file to another format (ONNX) for serving",
        description="Convert the model in MODEL.json (an estimator's or an engine model's "
                    "file) to ONNX.",
        epilog=_EXPORT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    export.add_argument("model", metavar="MODEL.json",
                        help="model file from 'boostlib train', save_model() or Model.save()")
    export.add_argument("--format", choices=FORMATS, default="onnx",
                        help="output format (default: onnx)")
    export.add_argument("--output", "-o", default=None, metavar="PATH",
                        help="file to write (default: MODEL with the format's suffix, e.g. "
                             "model.json -> model.onnx)")
    export.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                        help="type of the input and of the computation (default: float32)")
    export.add_argument("--raw", action="store_true",
                        help="output the raw scores only (raw_score)")
    export.set_defaults(func=run_export)
