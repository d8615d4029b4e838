"""Built-in update rules, registered through the public hook.

``sgb``: classic (stochastic) gradient boosting. Each iteration computes the loss
derivatives at the current model, lets the sampler pick rows, fits one tree to them and adds
it with coefficient ``learning_rate``.

``sglb``: Stochastic Gradient Langevin Boosting (:mod:`boostlib.builtin.sglb`).
"""
from __future__ import annotations

from .agbm import AGBM, AGBMR, VAGBM
from ..plugin.api import Context, UpdateRule, hookimpl
from .sglb import SGLB


class SGB(UpdateRule):
    """Stochastic gradient boosting: ``F <- F + learning_rate * tree``."""

    name = "sgb"

    def step(self, ctx: Context) -> None:
        gradient, hessian = ctx.gradients()
        sample = ctx.sample(gradient, hessian)
        tree = ctx.fit_tree(gradient, hessian, sample)
        ctx.add_tree(tree, ctx.learning_rate)


@hookimpl
def boostlib_add_updates():
    """Register the built-in update rules."""
    return {"sgb": SGB, "sglb": SGLB, "agbm": AGBM, "agbmr": AGBMR, "vagbm": VAGBM}
