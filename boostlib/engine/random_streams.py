"""Seeding: one SeedSequence per fit, and independent named streams derived from it."""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np


def seed_sequence(random_state: Any) -> np.random.SeedSequence:
    """The root SeedSequence of a fit: from an int, a numpy Generator/RandomState, or None."""
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, (bool, np.bool_)):
        raise ValueError(f"random_state={random_state!r} is invalid")
    if isinstance(random_state, (int, np.integer)):
        if random_state < 0:
            raise ValueError(f"random_state={random_state!r} is invalid; expected an int >= 0")
        return np.random.SeedSequence(int(random_state))
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(2 ** 63)))
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(int(random_state.randint(2 ** 31)))
    raise ValueError(f"random_state={random_state!r} is invalid; expected None, an int, or a "
                     "numpy Generator / RandomState")


def stream_rng(seed: np.random.SeedSequence, name: str) -> np.random.Generator:
    """The generator of stream ``name``: depends only on ``seed`` and the name.

    Streams are independent of each other and of the order in which they are requested, so
    adding a stream never shifts another.
    """
    key = zlib.crc32(name.encode("utf-8"))
    return np.random.default_rng(
        np.random.SeedSequence(seed.entropy, spawn_key=tuple(seed.spawn_key) + (key,)))
