"""A boosting term of a model with several outputs: one tree per output."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List

import numpy as np


@dataclass
class TreeGroup:
    """One term of a model with several outputs: a tree per output, in output order, added
    with one coefficient (``TreeGroup(trees)(x)[k] = trees[k](x)``)."""

    trees: List[Any]

    @property
    def policy(self) -> str:
        return self.trees[0].policy

    def n_leaves(self) -> int:
        """Leaves of all the group's trees."""
        return sum(t.n_leaves() for t in self.trees)

    def all_finite(self) -> bool:
        """Whether every leaf value of every tree is finite."""
        return all(bool(np.all(np.isfinite(t.value))) for t in self.trees)
