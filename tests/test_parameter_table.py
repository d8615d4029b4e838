"""The parameter table (``boostlib.engine.params.PARAMETERS``) is the one declaration of
every parameter: the estimators' signatures and docstrings, :func:`resolve`, the command
line's options, the model files' names and the documentation's list must agree with it."""
import inspect
import re
from pathlib import Path

import pytest

from boostlib import BoostClassifier, BoostRanker, BoostRegressor
from boostlib.engine.params import DEFAULTS, PARAMETERS, TRAINING, parameters_of, resolve
from boostlib.frontend.cli.options import (TRAIN_SET_PARAMETERS, add_estimator_options,
                                           estimator_parameters)
from boostlib.io.model_files import ESTIMATOR_PARAMETERS
from optional_imports import importorskip

DOCS = Path(__file__).resolve().parents[1] / "docs" / "estimators.md"
ESTIMATORS = {BoostRegressor: ("train", "estimator"), BoostRanker: ("train", "estimator"),
              BoostClassifier: ("train", "estimator", "classifier")}


def _documented(doc):
    """The ``name : type`` entries of a numpydoc ``Parameters`` section."""
    section = re.split(r"\n\s*Parameters\n\s*-+\n", inspect.cleandoc(doc), maxsplit=1)[1]
    section = re.split(r"\n\n\S.*\n-+\n", section, maxsplit=1)[0]
    return dict(re.findall(r"^(\w+) : (.*)$", section, re.M))


def test_names_are_unique_and_defaults_derive_from_the_table():
    names = [p.name for p in PARAMETERS]
    assert len(names) == len(set(names))
    assert DEFAULTS == {p.name: p.default for p in TRAINING}
    # n_estimators=None: 100 iterations, or 1,000 when early stopping is on
    assert resolve({}) == {**DEFAULTS, "n_estimators": 100}
    assert resolve({"early_stopping_rounds": 5})["n_estimators"] == 1000
    assert resolve({"n_estimators": 7, "early_stopping_rounds": 5})["n_estimators"] == 7


@pytest.mark.parametrize("cls", list(ESTIMATORS))
def test_signature_and_docstring_follow_the_table(cls):
    table = parameters_of(*ESTIMATORS[cls])
    signature = inspect.signature(cls)
    assert [(p.name, p.default) for p in signature.parameters.values()] == \
        [(p.name, p.default) for p in table]
    assert all(p.kind is p.KEYWORD_ONLY for p in signature.parameters.values())
    assert cls().get_params() == {p.name: p.default for p in table}
    assert _documented(cls.__doc__) == {p.name: p.type_line for p in table}


def test_dask_estimators_add_their_parameters_to_the_local_ones():
    dask_estimators = importorskip("boostlib.dask.estimators")
    for dask_cls, local in [(dask_estimators.DaskBoostRegressor, BoostRegressor),
                            (dask_estimators.DaskBoostClassifier, BoostClassifier)]:
        expected = [*inspect.signature(local).parameters, "client", "timeout"]
        assert list(inspect.signature(dask_cls).parameters) == expected
        assert list(_documented(dask_cls.__doc__)) == expected


def test_command_line_options_follow_the_table():
    import argparse
    parser = argparse.ArgumentParser()
    names = add_estimator_options(parser)
    expected = [p.name for p in parameters_of("train", "estimator") if p.cli is not None]
    assert names == expected == [p.name for p in estimator_parameters()]
    unset = {p.name for p in parameters_of("train", "estimator") if p.cli is None}
    assert {"warm_start", *TRAIN_SET_PARAMETERS} <= unset
    assert not unset & {p.dest for p in parser._actions}


def test_model_files_know_every_estimator_parameter():
    assert set(ESTIMATOR_PARAMETERS) | set(DEFAULTS) == {p.name for p in PARAMETERS}


@pytest.mark.parametrize("parameter", [p for p in TRAINING if p.check is not None],
                         ids=lambda p: p.name)
def test_each_checked_parameter_names_itself_when_refused(parameter):
    with pytest.raises((TypeError, ValueError), match=rf"^{parameter.name}="):
        resolve({parameter.name: object()})


def _split(cell):
    """A table cell's comma-separated items (commas inside parentheses kept)."""
    return [item.strip() for item in re.split(r",\s*(?![^()]*\))", cell)]


def _default(text):
    """A default as the docs' table shows it: ``none (...)``, ``"text"``, a number."""
    text = text.strip("`")
    if text.startswith("none"):
        return None
    if text.startswith('"'):
        return text.strip('"')
    if text in ("True", "False"):
        return text == "True"
    return float(text) if "." in text or "e" in text else int(text)


def test_docs_list_every_parameter_with_its_default():
    if not DOCS.exists():
        pytest.skip("docs/ not present")
    page = DOCS.read_text(encoding="utf-8")
    table = page.split("## The parameters at a glance", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in table.splitlines()
            if line.startswith("| `")]
    listed = {}
    for names, defaults in rows:
        names, defaults = _split(names), _split(defaults)
        assert len(names) == len(defaults), (names, defaults)
        for name, default in zip(names, defaults):
            assert name.strip("`") not in listed, name
            listed[name.strip("`")] = _default(default)
    assert listed == {p.name: p.default for p in PARAMETERS}
