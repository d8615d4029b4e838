"""How values appear in error messages: as the plain Python values they hold.

A numpy scalar's ``repr`` is ``np.int64(0)`` or ``np.str_('no')``; a message shows what the
user would write, ``0`` and ``'no'``. Every message that shows a value the user gave (a
parameter, a label, a column name) formats it with :func:`shown`, and a list of names with
:func:`listing`.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

#: The longest text :func:`shown` gives; longer ones end in ``...``.
MAX_SHOWN_CHARS = 300


def plain(value: Any) -> Any:
    """``value`` with numpy scalars and arrays, also inside lists, tuples and dicts, as the
    Python values they hold."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    return value


def shown(value: Any) -> str:
    """``repr`` of :func:`plain` ``(value)``, at most :data:`MAX_SHOWN_CHARS` characters.

    Examples
    --------
    >>> shown(np.int64(0)), shown([np.str_("no")])
    ('0', "['no']")
    """
    text = repr(plain(value))
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS - 3] + "..."


def listing(values: Sequence[Any], limit: int = 10) -> str:
    """The first ``limit`` values, :func:`shown`, and how many more there are.

    Examples
    --------
    >>> listing(["a", "b", "c"], limit=2)
    "'a', 'b' and 1 more"
    """
    values = list(values)
    text = ", ".join(shown(v) for v in values[:limit])
    return text + (f" and {len(values) - limit} more" if len(values) > limit else "")
