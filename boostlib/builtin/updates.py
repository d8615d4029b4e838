"""Built-in update rules, registered through the public hook.

``sgb``: classic (stochastic) gradient boosting. Each iteration computes the loss
derivatives at the current model, lets the sampler pick rows, fits one tree to them and adds
it with coefficient ``learning_rate``. For a loss with ``renews_leaves`` (``quantile``,
``l1``) the tree's leaf values are first replaced by the loss's (LightGBM's leaf renewal,
:meth:`boostlib.api.Context.renew_leaves`); the other rules do not renew, so such losses
train by first-order steps with them.

``sglb``: Stochastic Gradient Langevin Boosting (:mod:`boostlib.builtin.sglb`).

``dart``: dropout of earlier trees (:mod:`boostlib.builtin.dart`); ``rf``: random forest
mode, averaged trees fitted at the starting scores (:mod:`boostlib.builtin.rf`).
"""
from __future__ import annotations

from .agbm import AGBM, AGBMR, VAGBM
from .dart import DART
from .rf import RandomForest
from ..plugin.api import Context, UpdateRule, hookimpl
from .sglb import SGLB


class SGB(UpdateRule):
    """Stochastic gradient boosting: ``F <- F + learning_rate * tree``."""

    name = "sgb"

    def step(self, ctx: Context) -> None:
        gradient, hessian = ctx.gradients()
        sample = ctx.sample(gradient, hessian)
        tree = ctx.fit_tree(gradient, hessian, sample)
        ctx.renew_leaves(tree, sample)      # a no-op unless the loss renews (quantile, l1)
        ctx.add_tree(tree, ctx.learning_rate)


@hookimpl
def boostlib_add_updates():
    """Register the built-in update rules."""
    return {"sgb": SGB, "sglb": SGLB, "agbm": AGBM, "agbmr": AGBMR, "vagbm": VAGBM,
            "dart": DART, "rf": RandomForest}
