"""Compiled kernels (Cython). They import nothing from the rest of boostlib."""
