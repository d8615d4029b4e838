"""Work arrays reused from one boosting iteration to the next once nothing holds them.

A fit allocates arrays of one value per row every iteration (the derivatives, the node of
every row). Fresh arrays of that size come from the operating system when the allocator
hands large blocks back at once (as Dask workers configure glibc to do:
``MALLOC_TRIM_THRESHOLD_``), and every first write to one of their pages faults: on 500,000
rows that cost 28% of a fit. A pool lends a view of one of its buffers once no one else
holds that buffer (nor a view of it), so reuse never changes an array someone still reads.
Buffers are kept by dtype, not by shape: a sampled fit's trees ask for a different number
of rows each time, and one buffer per size would keep a buffer for every size ever asked.
"""
from __future__ import annotations

import math
import sys
from typing import Dict, List, Tuple

import numpy as np

#: ``sys.getrefcount`` of a buffer only the pool holds: the pool's list and the call's
#: argument (a lent view refers to its buffer, and so counts as a holder).
_FREE = 2

#: A new buffer's room beyond the size asked, as a fraction (sizes of samples vary).
HEADROOM = 0.05


class ArrayPool:
    """Buffers by dtype, each lent again (as a view of the size asked) once only the pool
    refers to it."""

    def __init__(self) -> None:
        self._buffers: Dict[np.dtype, List[np.ndarray]] = {}

    def empty(self, shape: Tuple[int, ...], dtype=np.float64) -> np.ndarray:
        """An array of ``shape`` and ``dtype`` with undefined contents, like ``np.empty``: a
        view of a free buffer large enough, or of a new one. A free buffer too small is
        replaced by the new one, so the pool holds no more buffers of a dtype than were
        ever lent at once."""
        dtype = np.dtype(dtype)
        size = math.prod(shape)
        buffers = self._buffers.setdefault(dtype, [])
        small = -1
        for i in range(len(buffers)):
            if sys.getrefcount(buffers[i]) == _FREE:
                if buffers[i].size >= size:
                    return buffers[i][:size].reshape(shape)
                small = i
        fresh = np.empty(size + int(size * HEADROOM), dtype=dtype)
        if small >= 0:
            buffers[small] = fresh
        else:
            buffers.append(fresh)
        return fresh[:size].reshape(shape)

    def zeros(self, shape: Tuple[int, ...], dtype=np.float64) -> np.ndarray:
        """:meth:`empty`, filled with 0."""
        out = self.empty(shape, dtype)
        out.fill(0)
        return out

    def n_buffers(self) -> int:
        """Buffers held, of every dtype."""
        return sum(len(b) for b in self._buffers.values())
