"""Tree kinds: what a tree is and how it is grown, walked, predicted and stored.

Each kind is one :class:`~boostlib.engine.trees.base.TreeKind` subclass, selected by the
``grow_policy`` parameter through :data:`KINDS`; the grower, the ensemble, model files and
the context dispatch to it and never compare policy names.
"""
from typing import Dict

from .base import TreeKind
from .depthwise import DepthwiseKind, DepthwiseTree
from .group import TreeGroup
from .lossguide import LossguideKind, LossguideTree
from .symmetric import ObliviousTree, SymmetricKind

#: The registered tree kinds by ``grow_policy`` name.
KINDS: Dict[str, TreeKind] = {k.name: k for k in (SymmetricKind(), DepthwiseKind(),
                                                  LossguideKind())}
GROW_POLICIES = tuple(KINDS)

__all__ = ["KINDS", "GROW_POLICIES", "TreeKind", "TreeGroup", "ObliviousTree",
           "DepthwiseTree", "LossguideTree", "SymmetricKind", "DepthwiseKind",
           "LossguideKind", "kind_of"]


def kind_of(policy: str) -> TreeKind:
    """The tree kind of ``grow_policy=policy``.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones).
    """
    try:
        return KINDS[policy]
    except (KeyError, TypeError):
        raise ValueError(f"grow_policy={policy!r} is invalid; expected one of "
                         f"{list(GROW_POLICIES)}") from None
