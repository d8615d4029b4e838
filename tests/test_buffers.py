"""The work-array pool: an array is lent again only once nothing else refers to it."""
import numpy as np

from boostlib.engine.buffers import ArrayPool
from boostlib.engine.dataset import Dataset
from boostlib.engine.training import train


def test_an_array_is_reused_only_when_free():
    pool = ArrayPool()
    a = pool.empty((4,))
    b = pool.empty((4,))
    assert a is not b                       # both held
    first = id(a)
    del a
    assert id(pool.empty((4,))) == first    # free again
    held = pool.empty((4,))
    view = held[1:]
    del held
    other = pool.empty((4,))
    assert other.base is not view.base and id(other) != id(view.base)   # a view holds it
    assert pool.zeros((3,), np.int32).tolist() == [0, 0, 0]
    assert pool.empty((3,), np.int32).dtype == np.int32


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
