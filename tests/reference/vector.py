"""Slow, obviously correct references for vector-leaf trees (``boostlib._kernels._vector``):
histograms summed row by row, and the split search by partitioning the rows of every node
for every candidate."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np


def build_histograms(X_rows: np.ndarray, rows: np.ndarray, node_of_row: np.ndarray,
                     slot_of_node: np.ndarray, gh: np.ndarray, offsets: np.ndarray,
                     n_slots: int, counted: bool) -> np.ndarray:
    """``(n_slots, offsets[-1], 2K (+1))``: per slot and bin, every output's gradient and
    hessian sums (interleaved) and the row count."""
    n_gh = gh.shape[1]
    hist = np.zeros((n_slots, int(offsets[-1]), n_gh + int(counted)))
    for p in range(node_of_row.size):
        s = slot_of_node[node_of_row[p]]
        if s < 0:
            continue
        r = p if rows.size == 0 else rows[p]
        for f in range(X_rows.shape[1]):
            b = offsets[f] + X_rows[r, f]
            hist[s, b, :n_gh] += gh[p].astype(np.float64)
            if counted:
                hist[s, b, n_gh] += 1.0
    return hist


@dataclass
class Candidate:
    f: int
    b: int
    d: int
    gain: float
    n_valid: int


def node_candidate(bins: np.ndarray, g: np.ndarray, h: np.ndarray, nb: int, b: int, d: int,
                   l2: float, msl: float, mcw: float, counted: bool):
    """``(valid, gain)`` of split ``(b, d)`` (missing values, bin ``nb``, go right when
    ``d == 1``) of one node whose rows have feature bins ``bins`` and derivatives ``g``,
    ``h`` (n, K)."""
    left = (bins <= b) if d == 1 else ((bins <= b) | (bins == nb))
    right = ~left
    GL, HL = g[left].sum(0), h[left].sum(0)
    GR, HR = g[right].sum(0), h[right].sum(0)
    G, H = GL + GR, HL + HR
    if counted:
        CL, CR = float(left.sum()), float(right.sum())
    else:
        CL, CR = float(HL.sum()), float(HR.sum())
    ok = (np.all(HL + l2 > 0) and np.all(HR + l2 > 0) and CL >= msl and CR >= msl
          and HL.sum() >= mcw and HR.sum() >= mcw)
    if not ok:
        return False, 0.0
    parent = float(np.sum(np.where(H + l2 > 0, G * G / np.where(H + l2 > 0, H + l2, 1), 0)))
    return True, float(np.sum(GL * GL / (HL + l2) + GR * GR / (HR + l2))) - parent


def find_split(node_rows: Sequence[np.ndarray], X_rows: np.ndarray, g: np.ndarray,
               h: np.ndarray, n_bins_nonmissing: np.ndarray, l2: float, msl: float,
               mcw: float, counted: bool, allowed: Optional[np.ndarray] = None
               ) -> List[Candidate]:
    """Every candidate ``(f, b, d)`` with its gain summed over the nodes (each given by its
    row indices into ``X_rows``, ``g`` and ``h``) where it is valid."""
    out = []
    for f, nb in enumerate(n_bins_nonmissing):
        if allowed is not None and not allowed[f]:
            continue
        for b in range(int(nb)):
            for d in range(2):
                total, n_valid = 0.0, 0
                for rows in node_rows:
                    valid, gain = node_candidate(X_rows[rows, f], g[rows], h[rows], int(nb),
                                                 b, d, l2, msl, mcw, counted)
                    if valid:
                        total += gain
                        n_valid += 1
                out.append(Candidate(f, b, d, total, n_valid))
    return out


def node_sums(node_of_row: np.ndarray, gradient: np.ndarray, hessian: np.ndarray,
              n_nodes: int) -> np.ndarray:
    """(n_nodes, 2K + 1): every output's gradient and hessian summed per node, in row order,
    then the rows."""
    K = gradient.shape[1]
    out = np.zeros((n_nodes, 2 * K + 1))
    for p, node in enumerate(node_of_row):
        for k in range(K):
            out[node, 2 * k] += gradient[p, k]
            out[node, 2 * k + 1] += hessian[p, k]
        out[node, 2 * K] += 1.0
    return out
