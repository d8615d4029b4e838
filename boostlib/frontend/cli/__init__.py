"""The ``boostlib`` command: ``demo``, ``train``, ``predict``, ``export`` and ``plugins``.

One module per subcommand (:mod:`~boostlib.frontend.cli.demo`,
:mod:`~boostlib.frontend.cli.train`, with its cross-validation mode ``--cv K`` in
:mod:`~boostlib.frontend.cli.cv`, :mod:`~boostlib.frontend.cli.predict`,
:mod:`~boostlib.frontend.cli.export`, :mod:`~boostlib.frontend.cli.plugins`) over shared
parts: the estimator parameters as options (:mod:`~boostlib.frontend.cli.options`), what
``train`` reads from a table (:mod:`~boostlib.frontend.cli.columns`), what it prints of a
model (:mod:`~boostlib.frontend.cli.evaluation`) and the files the commands read and write
(:mod:`~boostlib.frontend.cli.files`); :mod:`~boostlib.frontend.cli.command` builds the
parser and runs a command. ``train`` of a folder of Parquet files, or with
``--out-of-core``, reads the data in batches (:mod:`~boostlib.frontend.cli.out_of_core`).

``train`` exposes every estimator parameter as a ``--kebab-case`` option generated from the
estimators' signature (types from the annotations, help from the numpydoc docstring), so a
new parameter appears on the command line without changes here. User errors (missing file,
unknown column or plugin, bad JSON or value) end with a one-line message on stderr and exit
status 2, never a traceback. Without ``--task``, ``train`` infers classification (binary
or multiclass) or regression from the target column (:func:`~boostlib.frontend.cli.columns.infer_task`) and says which on
stderr. Text feature columns, and those named by ``--categorical``, are categorical features
(:func:`~boostlib.frontend.cli.columns.feature_columns`); ``predict`` reads them the same way, matching levels by their
text.
"""
from .command import build_parser, main

__all__ = ["build_parser", "main"]
