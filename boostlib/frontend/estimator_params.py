"""The estimators' constructors and ``Parameters`` docs, generated from the parameter
table (:data:`boostlib.engine.params.PARAMETERS`): a parameter is declared there once, and
every estimator's signature (what scikit-learn's ``get_params`` and ``clone`` read) and
docstring follow it."""
from __future__ import annotations

import inspect
import re
import types
from typing import Any, Callable, Sequence

from ..engine.params import Parameter

#: The line of an estimator's docstring that :func:`document` replaces with its parameters'
#: numpydoc entries (at the line's indent: Python 3.13 dedents docstrings).
PARAMETERS_MARK = "{parameters}"


def renamed(func: Any, qualname: str) -> Any:
    """A copy of ``func`` whose qualified name, which Python's own argument errors print, is
    ``qualname`` (so ``BoostClassifier(foo=1)`` names ``BoostClassifier.__init__``, not the
    private base class)."""
    code = func.__code__
    if hasattr(code, "co_qualname"):        # 3.11+: errors read the code's qualname
        code = code.replace(co_qualname=qualname)
    copy = types.FunctionType(code, func.__globals__, func.__name__, func.__defaults__,
                              func.__closure__)
    copy.__kwdefaults__ = func.__kwdefaults__
    copy.__dict__.update(func.__dict__)
    copy.__doc__, copy.__module__ = func.__doc__, func.__module__
    copy.__annotations__ = dict(func.__annotations__)
    copy.__qualname__ = qualname
    return copy


def make_init(parameters: Sequence[Parameter], class_name: str) -> Callable[..., None]:
    """An ``__init__`` that takes ``parameters`` by keyword, each defaulting to its
    table default, and stores each as the attribute of its name (scikit-learn's rule: no
    validation in ``__init__``; ``fit`` checks). Its ``__signature__`` lists them, so
    ``inspect.signature``, ``help`` and scikit-learn see ordinary keyword-only
    parameters; an unknown name is Python's own TypeError, naming ``class_name``."""
    parameters = tuple(parameters)
    names = frozenset(p.name for p in parameters)
    qualname = f"{class_name}.__init__"

    def __init__(self: Any, **params: Any) -> None:
        for name in params:
            if name not in names:
                raise TypeError(f"{qualname}() got an unexpected keyword argument {name!r}")
        for p in parameters:
            setattr(self, p.name, params.get(p.name, p.default))

    init = renamed(__init__, qualname)
    init.__doc__ = f"Store the parameters (see :class:`{class_name}`)."
    init.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=p.default,
                             annotation=p.annotation) for p in parameters],
        return_annotation=None)
    return init


def document(doc: str, parameters: Sequence[Parameter]) -> str:
    """``doc`` with its :data:`PARAMETERS_MARK` line replaced by the numpydoc entries of
    ``parameters`` (a docstring without the mark is returned as it is)."""
    match = re.search(r"^( *)" + re.escape(PARAMETERS_MARK) + r"\n", doc or "", re.M)
    if match is None:
        return doc
    entries = "".join(p.numpydoc(indent=len(match.group(1))) for p in parameters)
    return doc[:match.start()] + entries + doc[match.end():]
