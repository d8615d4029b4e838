"""The ``_loss`` kernels built for CPUs with AVX2 (see :mod:`boostlib._kernels`).

The same source, compiled by setup.py with -mavx2 and without FMA, so every result is
bit-identical to the baseline build's.
"""
include "_loss.pyx"
