"""Seeding: one SeedSequence per fit, and independent named streams derived from it."""
from __future__ import annotations

import zlib
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .._messages import shown


def seed_sequence(random_state: Any) -> np.random.SeedSequence:
    """The root SeedSequence of a fit: from an int, a numpy Generator/RandomState, or None."""
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, (bool, np.bool_)):
        raise ValueError(f"random_state={shown(random_state)} is invalid")
    if isinstance(random_state, (int, np.integer)):
        if random_state < 0:
            raise ValueError(f"random_state={shown(random_state)} is invalid; expected an int >= 0")
        return np.random.SeedSequence(int(random_state))
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(2 ** 63)))
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(int(random_state.randint(2 ** 31)))
    raise ValueError(f"random_state={shown(random_state)} is invalid; expected None, an int, or a "
                     "numpy Generator / RandomState")


def stream_rng(seed: np.random.SeedSequence, name: str) -> np.random.Generator:
    """The generator of stream ``name``: depends only on ``seed`` and the name.

    Streams are independent of each other and of the order in which they are requested, so
    adding a stream never shifts another.
    """
    key = zlib.crc32(name.encode("utf-8"))
    return np.random.default_rng(
        np.random.SeedSequence(seed.entropy, spawn_key=tuple(seed.spawn_key) + (key,)))


def _seed_key(seed: np.random.SeedSequence) -> Tuple[Any, Tuple[int, ...]]:
    """What identifies a root seed: its entropy and spawn key."""
    return seed.entropy, tuple(seed.spawn_key)


class Streams:
    """The named random streams of one fit, each created when first asked for.

    A fresh fit derives stream ``name`` from the root seed and the name alone
    (:func:`stream_rng`). A fit that continues a model (``train(..., init_model=)``,
    ``warm_start``) takes the streams from where the earlier fit left them when that fit
    recorded their states (:meth:`record`, kept in memory on the model) under the same root
    seed: it then draws exactly what one longer fit would have drawn. Otherwise (a model read
    from a file, another ``random_state``, or ``random_state=None``, which draws a new seed
    every fit) a continuation derives new streams from the seed, the name and
    ``restart_key`` (the iteration it starts at), so it never replays the earlier fit's
    draws.

    Parameters
    ----------
    seed : numpy SeedSequence
        The fit's root seed.
    init : dict, optional
        :meth:`record` of the fit being continued.
    restart_key : int, optional
        Set for a continuation (its first iteration).
    rank : int, optional
        This worker's rank in a distributed fit: its row streams (:meth:`rows`) are its
        own, derived from the seed, the name and the rank. Default: one machine, where a
        row stream is the stream of that name.
    """

    def __init__(self, seed: np.random.SeedSequence, init: Optional[Dict[str, Any]] = None,
                 restart_key: Optional[int] = None, rank: Optional[int] = None):
        self.seed = seed
        self.rank = rank
        self._row_rngs: Dict[str, np.random.Generator] = {}
        self._states: Dict[str, Any] = {}
        self._restart_key = restart_key
        if init is not None and init.get("seed") == _seed_key(seed):
            self._states = dict(init["states"])
            self._restart_key = None        # the recorded streams go on as in one fit
        self._rngs: Dict[str, np.random.Generator] = {}

    def get(self, name: str) -> np.random.Generator:
        """The generator of stream ``name`` (the same object on every call)."""
        rng = self._rngs.get(name)
        if rng is None:
            if name in self._states:
                rng = np.random.Generator(np.random.PCG64())
                rng.bit_generator.state = self._states[name]
            elif self._restart_key is None:
                rng = stream_rng(self.seed, name)
            else:
                key = (zlib.crc32(name.encode("utf-8")), int(self._restart_key))
                rng = np.random.default_rng(np.random.SeedSequence(
                    self.seed.entropy, spawn_key=tuple(self.seed.spawn_key) + key))
            self._rngs[name] = rng
        return rng

    def rows(self, name: str) -> np.random.Generator:
        """The generator of the row stream ``name``: draws one value per training row (a
        sampler's, SGLB's per-row noise). On one machine it is :meth:`get`'s stream; in a
        distributed fit every worker draws its own rows' values from a stream of its own
        (the other streams, which draw per tree, per leaf or per feature, are the same on
        every worker, so that every worker takes the same decisions)."""
        if self.rank is None:
            return self.get(name)
        rng = self._row_rngs.get(name)
        if rng is None:
            key = (zlib.crc32(name.encode("utf-8")), 1 << 32 | int(self.rank))
            rng = self._row_rngs[name] = np.random.default_rng(np.random.SeedSequence(
                self.seed.entropy, spawn_key=tuple(self.seed.spawn_key) + key))
        return rng

    def record(self) -> Dict[str, Any]:
        """The root seed and the state of every stream (those this fit used and those it
        inherited), for a later continuation."""
        states = dict(self._states)
        states.update({name: rng.bit_generator.state for name, rng in self._rngs.items()})
        return {"seed": _seed_key(self.seed), "states": states}
