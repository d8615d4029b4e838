"""The work-array pool: an array is lent again only once nothing else refers to it."""
import numpy as np

from boostlib.engine.buffers import ArrayPool
from boostlib.engine.dataset import Dataset
from boostlib.booster.training import train


def test_an_array_is_reused_only_when_free():
    pool = ArrayPool()
    a = pool.empty((4,))
    b = pool.empty((4,))
    assert not np.shares_memory(a, b)       # both held
    first = id(a.base)
    del a
    assert id(pool.empty((4,)).base) == first   # free again
    held = pool.empty((4,))
    view = held[1:]
    del held
    other = pool.empty((4,))
    assert not np.shares_memory(other, view)    # a view holds it
    assert pool.zeros((3,), np.int32).tolist() == [0, 0, 0]
    assert pool.empty((3,), np.int32).dtype == np.int32
    assert pool.empty((2, 3)).shape == (2, 3) and pool.empty((2, 3)).flags.c_contiguous


def test_sizes_that_vary_share_buffers():
    """A sampled fit asks for a different number of rows every tree: the pool keeps no
    more buffers than were lent at once, whatever the sizes."""
    pool = ArrayPool()
    rng = np.random.default_rng(0)
    for size in rng.integers(900, 1100, size=200):
        a = pool.zeros((int(size),), np.int32)
        b = pool.empty((int(size), 2))
        assert a.shape == (size,) and not a.any() and b.shape == (size, 2)
        del a, b                            # done with them, as a tree is
    assert pool.n_buffers() == 2


def test_a_sampled_fit_keeps_a_bounded_pool(monkeypatch):
    from boostlib.engine import grower as grower_module
    made = []
    init = grower_module.TreeGrower.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4))
    y = (X[:, 0] > 0).astype(float)
    monkeypatch.setattr(grower_module.TreeGrower, "__init__", spy)
    train(dict(n_estimators=40, grow_policy="depthwise", sampler="uniform", subsample=0.5,
               random_state=0), Dataset(X, y))
    assert made and made[-1].histograms.row_arrays.n_buffers() <= 2


def test_gradients_held_by_a_rule_are_not_overwritten(temp_plugin):
    """A rule that keeps the derivatives of one call while it asks for more (AGBM does)
    gets separate arrays; the model equals a fit without the pool's reuse."""
    from boostlib.api import UpdateRule, hookimpl
    kept = []

    class Holds(UpdateRule):
        name = "holds_gradients"

        def step(self, ctx):
            g, h = ctx.gradients()
            g2, _ = ctx.gradients(raw=ctx.raw + 1.0)
            assert not np.shares_memory(g, g2)
            kept.append((g, g.copy()))      # held across iterations: must not change
            ctx.add_tree(ctx.fit_tree(g, h), ctx.learning_rate)

    class Plugin:
        @hookimpl
        def boostlib_add_updates(self):
            return {"holds_gradients": Holds}

    temp_plugin(Plugin(), "holds")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    y = (X[:, 0] > 0).astype(float)
    train(dict(n_estimators=5, update="holds_gradients", random_state=0), Dataset(X, y))
    assert len({id(g) for g, _ in kept}) == len(kept)
    for g, at_the_time in kept:
        np.testing.assert_array_equal(g, at_the_time)
