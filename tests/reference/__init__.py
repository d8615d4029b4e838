"""Slow, obviously-correct NumPy references of boostlib's Cython kernels (for tests only).

Everything here is written from the documented contracts (the kernels' docstrings and the
module docstrings of :mod:`boostlib.engine.trees`, :mod:`boostlib.engine.binning` and
:mod:`boostlib.builtin.losses`),
never from the kernels' code, and favours plain loops over speed.
"""
