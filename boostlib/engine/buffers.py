"""Work arrays reused from one boosting iteration to the next once nothing holds them.

A fit allocates arrays of one value per row every iteration (the derivatives, the node of
every row). Fresh arrays of that size come from the operating system when the allocator
hands large blocks back at once (as Dask workers configure glibc to do:
``MALLOC_TRIM_THRESHOLD_``), and every first write to one of their pages faults: on 500,000
rows that cost 28% of a fit. A pool hands back an array of the same shape and type once
no one else holds it (nor a view of it), so reuse never changes an array someone still
reads.
"""
from __future__ import annotations

import sys
from typing import Any, Dict, List, Tuple

import numpy as np

#: ``sys.getrefcount`` of an array only the pool holds: the pool's list and the call's
#: argument.
_FREE = 2


class ArrayPool:
    """Arrays by shape and dtype, each lent again once only the pool refers to it."""

    def __init__(self) -> None:
        self._arrays: Dict[Tuple[Tuple[int, ...], str], List[np.ndarray]] = {}
        self._keys: Dict[Tuple[Any, Any], Tuple[Tuple[int, ...], str]] = {}

    def empty(self, shape: Tuple[int, ...], dtype=np.float64) -> np.ndarray:
        """An array of ``shape`` and ``dtype`` with undefined contents, like ``np.empty``:
        a pooled one that nothing else refers to, or a new one (then pooled)."""
        key = self._keys.get((shape, dtype))     # the same shape and dtype, as spelled
        if key is None:
            key = (tuple(int(n) for n in shape), np.dtype(dtype).str)
            self._keys[(shape, dtype)] = key
        arrays = self._arrays.setdefault(key, [])
        for i in range(len(arrays)):
            if sys.getrefcount(arrays[i]) == _FREE:
                return arrays[i]
        arrays.append(np.empty(key[0], dtype=dtype))
        return arrays[-1]

    def zeros(self, shape: Tuple[int, ...], dtype=np.float64) -> np.ndarray:
        """:meth:`empty`, filled with 0."""
        out = self.empty(shape, dtype)
        out.fill(0)
        return out
