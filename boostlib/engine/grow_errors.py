"""The errors the grower raises for the derivatives and samples it is given (the boosting
context reports them, naming the plugin that produced them)."""
from __future__ import annotations


class DerivativeOverflow(FloatingPointError):
    """The weighted gradients or hessians of a tree exceed float32's range (about 3.4e38),
    in which histograms are accumulated: the split gains would be NaN and the tree silently
    wrong. (Values below float32's range, which become 0, are not an error: the float64
    sums would fail ``min_child_weight`` and give leaf values near 0 just the same.)"""

    def __init__(self) -> None:
        super().__init__("weighted gradients or hessians beyond float32's range (3.4e38)")


class SampleDefects(ValueError):
    """The rows or weights a tree was to be fitted on are invalid (found by the pass that
    gathers them); ``flags`` as ``_sampling.sample_defects`` returns them."""

    def __init__(self, flags: int):
        super().__init__(f"invalid sample (defect flags {flags})")
        self.flags = int(flags)
