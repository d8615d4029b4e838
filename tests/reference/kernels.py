"""NumPy / pure-Python reference implementations of boostlib's kernels.

Each function restates a documented contract in the most literal way available (explicit
loops, ``np.searchsorted``, ``np.add.at``, ``math.fsum``), so that it is easy to convince
oneself that it is right; none of them shares code with :mod:`boostlib`.

Conventions (from ``boostlib/_kernels/common.pxd``): binned data are ``uint8`` with the
missing-value bin ``missing_bin == max_bins``; a split ``(f, b, nan_right)`` sends a row left
when its bin is ``<= b`` and not missing, and missing rows right exactly when ``nan_right``.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

# --------------------------------------------------------------------------------------------
# binning
# --------------------------------------------------------------------------------------------


def map_to_bins(X: np.ndarray, borders: Sequence[np.ndarray], missing_bin: int) -> np.ndarray:
    """Bins of ``X`` (n_rows, n_features) as a feature-major (n_features, n_rows) uint8 array.

    The bin of ``x`` is the number of borders strictly below ``x`` (``searchsorted`` with
    ``side='left'``), NaN goes to ``missing_bin``.
    """
    X = np.asarray(X, dtype=np.float64)
    n_rows, n_features = X.shape
    out = np.empty((n_features, n_rows), dtype=np.uint8)
    for f in range(n_features):
        col = X[:, f]
        b = np.searchsorted(np.asarray(borders[f], dtype=np.float64), col, side="left")
        b = np.where(np.isnan(col), missing_bin, b)
        out[f] = b.astype(np.uint8)
    return out


def feature_borders(col: np.ndarray, max_bins: int) -> np.ndarray:
    """Borders of one feature, from the definition: with at most ``max_bins`` distinct
    non-missing values, the midpoint of each pair of neighbours (the lower value where the
    midpoint rounds onto the upper one); otherwise the distinct ``max_bins - 1`` evenly
    spaced percentiles of the values (NumPy's ``"midpoint"`` method; where its interpolation
    overflows, the lower neighbour for a whole index, else the mean of the two halves). The
    sign of zero is ignored: -0.0 counts as 0.0."""
    col = np.asarray(col, dtype=np.float64)
    values = col[~np.isnan(col)] + 0.0        # -0.0 + 0.0 is 0.0
    if values.size == 0:
        return np.empty(0)
    distinct = np.unique(values)
    if distinct.size <= max_bins:
        borders = []
        for lo, hi in zip(distinct[:-1], distinct[1:]):
            with np.errstate(over="ignore"):    # an overflowing midpoint is inf: lo is used
                mid = lo + (hi - lo) / 2.0
            borders.append(lo if mid >= hi else mid)
        return np.array(borders, dtype=np.float64)
    q = np.linspace(0, 100, max_bins + 1)[1:-1]
    with np.errstate(over="ignore", invalid="ignore"):
        p = np.percentile(values, q, method="midpoint")
    s = np.sort(values)
    for j in np.flatnonzero(~np.isfinite(p)):
        m = (values.size - 1) * (q[j] / 100)
        lo, hi = s[int(np.floor(m))], s[int(np.ceil(m))]
        p[j] = lo if np.floor(m) == np.ceil(m) else lo * 0.5 + hi * 0.5
    return np.unique(p)


def sorted_sample(X: np.ndarray, rows: np.ndarray) -> list:
    """Each feature's non-missing values over ``rows`` (all rows when empty), sorted, -0.0
    as 0.0."""
    X = np.asarray(X, dtype=np.float64)
    sub = X if len(rows) == 0 else X[np.asarray(rows)]
    return [np.sort(c[~np.isnan(c)] + 0.0) for c in sub.T]


def bin_of_value(x: float, borders: np.ndarray, missing_bin: int) -> int:
    """Bin of one value by a linear scan: the count of borders ``< x``."""
    if math.isnan(x):
        return missing_bin
    return sum(1 for t in borders if t < x)


def greedy_bundles(feature_rows, need, max_tries: int, max_values: int):
    """``(bundle of each feature, number of bundles)``: in order, each feature joins the
    first of the last ``max_tries`` bundles with room (``size + need <= max_values - 1``)
    and none of its rows, else opens one of size ``1 + need`` (with sets of rows)."""
    held: List[set] = []
    size: List[int] = []
    out = []
    for rows, k in zip(feature_rows, need):
        rows = set(int(r) for r in rows)
        for b in range(max(0, len(size) - max_tries), len(size)):
            if size[b] + k <= max_values - 1 and not held[b] & rows:
                break
        else:
            b = len(size)
            held.append(set())
            size.append(1)
        held[b] |= rows
        size[b] += int(k)
        out.append(b)
    return out, len(size)


# --------------------------------------------------------------------------------------------
# histograms
# --------------------------------------------------------------------------------------------


def build_histograms(X_rows: np.ndarray, rows: np.ndarray, node_of_row: np.ndarray,
                     slot_of_node: np.ndarray, gradient: np.ndarray, hessian: np.ndarray,
                     n_slots: int, n_bins: int) -> np.ndarray:
    """``hist[slot, f, bin, (g, h, count)]`` by ``np.add.at``.

    ``gradient``/``hessian`` are first cast to float32 (as the kernel receives them) and then
    accumulated in float64. ``rows`` empty means the identity.
    """
    X_rows = np.asarray(X_rows)
    n_features = X_rows.shape[1]
    n_fit = len(node_of_row)
    rows = np.arange(n_fit) if len(rows) == 0 else np.asarray(rows, dtype=np.int64)
    g = np.asarray(gradient, dtype=np.float32).astype(np.float64)
    h = np.asarray(hessian, dtype=np.float32).astype(np.float64)
    hist = np.zeros((n_slots, n_features, n_bins, 3))
    slot = np.asarray(slot_of_node)[np.asarray(node_of_row, dtype=np.int64)]
    keep = slot >= 0
    s, r, g, h = slot[keep], rows[keep], g[keep], h[keep]
    for f in range(n_features):
        b = X_rows[r, f].astype(np.int64)
        np.add.at(hist[:, f, :, 0], (s, b), g)
        np.add.at(hist[:, f, :, 1], (s, b), h)
        np.add.at(hist[:, f, :, 2], (s, b), 1.0)
    return hist


def entry_parts(m: int, n_entries: int, n_rows: int, n_bins: int, max_parts: int,
                part_work: int) -> int:
    """The parts a histogram of ``m`` rows from entries is summed in: as many as keep each
    part's rows adding on average ``part_work`` entries per bin (``n_entries`` over
    ``n_rows`` training rows, ``n_bins`` bins), from 1 to ``max_parts``."""
    p = (m * n_entries) // (n_rows * part_work * n_bins) if n_rows and n_bins else 1
    return int(min(max(p, 1), max_parts))


def build_histograms_in_parts(X_rows: np.ndarray, rows: np.ndarray, node_of_row: np.ndarray,
                              slot_of_node: np.ndarray, gradient: np.ndarray,
                              hessian: np.ndarray, n_slots: int, n_bins: int,
                              parts_of) -> np.ndarray:
    """:func:`build_histograms` with each slot's rows (in their order) cut into
    ``parts_of(m)`` runs of consecutive rows (run ``k`` of ``P``: ``k * m // P`` to
    ``(k + 1) * m // P``), each run summed on its own and the runs' sums added in order."""
    slot = np.asarray(slot_of_node)[np.asarray(node_of_row, dtype=np.int64)]
    hist = np.zeros((n_slots, np.asarray(X_rows).shape[1], n_bins, 3))
    rows = np.arange(len(node_of_row)) if len(rows) == 0 else np.asarray(rows)
    for s in range(n_slots):
        pos = np.flatnonzero(slot == s)
        m, total = pos.size, None
        n_parts = parts_of(m)
        for k in range(n_parts):
            run = pos[k * m // n_parts:(k + 1) * m // n_parts]
            part = build_histograms(X_rows, rows[run], np.zeros(run.size, np.int32),
                                    np.zeros(1, np.int32), np.asarray(gradient)[run],
                                    np.asarray(hessian)[run], 1, n_bins)[0]
            total = part if total is None else total + part
        if total is not None:
            hist[s] = total
    return hist


# --------------------------------------------------------------------------------------------
# split finding
# --------------------------------------------------------------------------------------------


def child_sums(hist_f, nb: int, missing_bin: int, b: int, d: int):
    """Exactly rounded (g, h, count) of both children of split ``(b, d)`` of one feature.

    ``hist_f`` is (n_bins, 3) (an array, or a list of 3 per-channel lists for speed); bins
    ``0..b`` go left, ``b+1..nb-1`` right, the missing bin right when ``d == 1`` else left.
    """
    if isinstance(hist_f, np.ndarray):
        hist_f = [hist_f[:, c].tolist() for c in range(3)]
    left, right = [], []
    for vals in hist_f:
        miss = [vals[missing_bin]]
        left.append(math.fsum(vals[:b + 1] + ([] if d else miss)))
        right.append(math.fsum(vals[b + 1:nb] + (miss if d else [])))
    return tuple(left), tuple(right)


def is_valid(left, right, l2: float, min_samples_leaf: float, min_child_weight: float) -> bool:
    """Validity rule of ``_splitting.pyx``'s module docstring."""
    (_, hl, cl), (_, hr, cr) = left, right
    return (cl >= min_samples_leaf and cr >= min_samples_leaf and hl >= min_child_weight
            and hr >= min_child_weight and hl + l2 > 0 and hr + l2 > 0)


def newton_gain(left, right, l2: float) -> float:
    """``GL^2/(HL+l2) + GR^2/(HR+l2) - G^2/(H+l2)`` with ``G = GL + GR``, ``H = HL + HR``."""
    (gl, hl, _), (gr, hr, _) = left, right
    G = math.fsum([gl, gr])
    H = math.fsum([hl, hr])
    parent = G * G / (H + l2) if H + l2 > 0 else 0.0
    return gl * gl / (hl + l2) + gr * gr / (hr + l2) - parent


def gain_magnitude(left, right, l2: float) -> float:
    """Sum of the absolute terms of the gain (scale of its rounding error)."""
    (gl, hl, _), (gr, hr, _) = left, right
    G, H = gl + gr, hl + hr
    mag = gl * gl / (hl + l2) + gr * gr / (hr + l2)
    if H + l2 > 0:
        mag += G * G / (H + l2)
    return abs(mag)


class Candidate:
    """One split candidate of one node."""

    __slots__ = ("f", "b", "d", "left", "right", "valid", "gain", "mag")

    def __init__(self, f, b, d, left, right, valid, gain, mag):
        self.f, self.b, self.d = f, b, d
        self.left, self.right = left, right
        self.valid, self.gain, self.mag = valid, gain, mag

    @property
    def key(self):
        """The exact child sums: candidates with equal keys are exactly tied."""
        return self.left

    def __repr__(self):
        return (f"Candidate(f={self.f}, b={self.b}, d={self.d}, valid={self.valid}, "
                f"gain={self.gain!r})")


def node_candidates(hist: np.ndarray, n_bins_nonmissing: np.ndarray, missing_bin: int,
                    l2: float, min_samples_leaf: float, min_child_weight: float
                    ) -> List[Candidate]:
    """Every candidate ``(f, b, d)`` of a node, ``b < n_bins_nonmissing[f]``, ``d in {0, 1}``.

    Listed in the documented tie-breaking order (feature, then bin, then ``d = 0`` first).
    """
    out = []
    for f in range(hist.shape[0]):
        nb = int(n_bins_nonmissing[f])
        channels = [hist[f, :, c].tolist() for c in range(3)]
        for b in range(nb):
            for d in (0, 1):
                left, right = child_sums(channels, nb, missing_bin, b, d)
                valid = is_valid(left, right, l2, min_samples_leaf, min_child_weight)
                gain = newton_gain(left, right, l2) if valid else 0.0
                out.append(Candidate(f, b, d, left, right, valid, gain,
                                     gain_magnitude(left, right, l2) if valid else 0.0))
    return out


def best_by_score(items, score_of):
    """First item (in list order) with the strictly largest score, or None."""
    best, best_score = None, None
    for it in items:
        s = score_of(it)
        if best is None or s > best_score:
            best, best_score = it, s
    return best


def find_split_node(hist: np.ndarray, n_bins_nonmissing: np.ndarray, missing_bin: int,
                    l2: float, min_samples_leaf: float, min_child_weight: float,
                    noise: Optional[np.ndarray] = None):
    """Brute-force best split of one node.

    Returns ``(best, candidates)``; ``best`` is None when no valid candidate has a strictly
    positive gain. The score is ``gain + noise[f, b]``; ties go to the first in order.
    """
    cands = node_candidates(hist, n_bins_nonmissing, missing_bin, l2, min_samples_leaf,
                            min_child_weight)
    eligible = [c for c in cands if c.valid and c.gain > 0]
    if noise is None:
        best = best_by_score(eligible, lambda c: c.gain)
    else:
        best = best_by_score(eligible, lambda c: c.gain + noise[c.f, c.b])
    return best, cands


class LevelCandidate:
    """A candidate of a whole level: its summed gain over the leaves where it is valid."""

    __slots__ = ("f", "b", "d", "gain", "n_valid", "mag", "keys")

    def __init__(self, f, b, d, gain, n_valid, mag, keys):
        self.f, self.b, self.d = f, b, d
        self.gain, self.n_valid, self.mag, self.keys = gain, n_valid, mag, keys

    @property
    def key(self):
        return self.keys

    def __repr__(self):
        return (f"LevelCandidate(f={self.f}, b={self.b}, d={self.d}, n_valid={self.n_valid}, "
                f"gain={self.gain!r})")


def level_candidates(hists: Sequence[np.ndarray], n_bins_nonmissing: np.ndarray,
                     missing_bin: int, l2: float, min_samples_leaf: float,
                     min_child_weight: float) -> List[LevelCandidate]:
    """Candidates of a symmetric level over the leaves' histograms ``hists`` (in order)."""
    per_leaf = [node_candidates(hh, n_bins_nonmissing, missing_bin, l2, min_samples_leaf,
                                min_child_weight) for hh in hists]
    out = []
    n_cand = len(per_leaf[0]) if per_leaf else 0
    for i in range(n_cand):
        total, nv, mag, keys = 0.0, 0, 0.0, []
        for cands in per_leaf:
            c = cands[i]
            keys.append((c.valid, c.left) if c.valid else (False,))
            if c.valid:
                total += c.gain       # leaves in order, like any left-to-right sum
                nv += 1
                mag += c.mag
        c0 = per_leaf[0][i]
        out.append(LevelCandidate(c0.f, c0.b, c0.d, total, nv, mag, tuple(keys)))
    return out


def find_split_level(hists: Sequence[np.ndarray], n_bins_nonmissing: np.ndarray,
                     missing_bin: int, l2: float, min_samples_leaf: float,
                     min_child_weight: float, noise: Optional[np.ndarray] = None):
    """Brute-force best symmetric split: ``(best, candidates)`` (best None when none)."""
    cands = level_candidates(hists, n_bins_nonmissing, missing_bin, l2, min_samples_leaf,
                             min_child_weight)
    eligible = [c for c in cands if c.n_valid > 0 and c.gain > 0]
    if noise is None:
        best = best_by_score(eligible, lambda c: c.gain)
    else:
        best = best_by_score(eligible, lambda c: c.gain + noise[c.f, c.b])
    return best, cands


def level_choice_in_leaf_order(hists: Sequence[np.ndarray], n_bins_nonmissing: np.ndarray,
                               missing_bin: int, l2: float, min_samples_leaf: float,
                               min_child_weight: float, count_channel: bool = True,
                               noise: Optional[np.ndarray] = None):
    """The choice ``(f, b, d, gain)`` that ``find_split_level`` documents, bit for bit: each
    leaf's gain at each candidate, in the kernel's arithmetic, summed over the leaves in
    order (leaves where it is valid), the best score first in (f, b, d) order.

    ``hists``: the leaves' ``(n_features, n_bins, 3)`` histograms; ``count_channel=False``
    is the 2-channel kernel, which counts the hessian for ``min_samples_leaf``.
    """
    cc = 2 if count_channel else 1
    n_features = len(n_bins_nonmissing)
    sums = {}
    for hist in hists:
        for f in range(n_features):
            nb = int(n_bins_nonmissing[f])
            g, h, c = (hist[f, :, 0].tolist(), hist[f, :, 1].tolist(), hist[f, :, cc].tolist())
            gm, hm, cm = g[missing_bin], h[missing_bin], c[missing_bin]
            no_miss = cm == 0.0 and (count_channel or gm == 0.0)
            G, H, C = gm, hm, cm
            for b in range(nb):
                G, H, C = G + g[b], H + h[b], C + c[b]
            parent = G * G / (H + l2) if H + l2 > 0.0 else 0.0
            gl = hl = cl = 0.0
            for b in range(nb):
                gl, hl, cl = gl + g[b], hl + h[b], cl + c[b]
                for d in ((0,) if no_miss else (0, 1)):
                    GL, HL, CL = (gl + gm, hl + hm, cl + cm) if d == 0 else (gl, hl, cl)
                    if not (CL >= min_samples_leaf and C - CL >= min_samples_leaf
                            and HL >= min_child_weight and H - HL >= min_child_weight
                            and HL + l2 > 0.0 and H - HL + l2 > 0.0):
                        continue
                    gain = GL * GL / (HL + l2) + (G - GL) * (G - GL) / (H - HL + l2) - parent
                    for dd in ((0, 1) if no_miss else (d,)):
                        total, n = sums.get((f, b, dd), (0.0, 0))
                        sums[(f, b, dd)] = (total + gain, n + 1)
    best, best_score = (-1, -1, 0, 0.0), None
    for (f, b, d) in sorted(sums):
        gain, n = sums[(f, b, d)]
        if n == 0 or not gain > 0.0:
            continue
        score = gain + float(noise[f, b]) if noise is not None else gain
        if best_score is None or score > best_score:
            best, best_score = (f, b, d, gain), score
    return best


def choice_is_consistent(kernel_choice, best, cands, exact: bool, rel: float = 1e-9,
                         noise=None):
    """Check a kernel's ``(f, b, d, gain)`` against the brute force; return an error or None.

    * ``best is None``: the kernel must return feature -1.
    * Candidates with the same ``key`` (identical child sums, and identical noise) are
      exactly tied: the first of them in the documented order must be chosen when the best
      key is better than every other key by a margin, and either ``exact`` (inputs whose
      sums are exact whatever the order) or all tied candidates are of one feature (sums
      taken in the same order).
    * Otherwise (a near-tie of different partitions) the kernel's candidate must have a
      reference score within tolerance of the best score.
    The reported gain must match the reference gain of the chosen candidate.
    """
    f, b, d, gain = kernel_choice
    if best is None:
        if f != -1:
            return f"kernel chose {kernel_choice} but no candidate is valid with gain > 0"
        return None
    if f < 0:
        return f"kernel found no split, reference best is {best}"

    def score(c):
        return c.gain + (float(noise[c.f, c.b]) if noise is not None else 0.0)

    def key(c):
        return (c.key, float(noise[c.f, c.b])) if noise is not None else c.key

    def valid(c):
        return c.valid if hasattr(c, "valid") else c.n_valid > 0

    scale = max([c.mag for c in cands] + [abs(score(c)) for c in cands] + [1e-300])
    tol = rel * scale
    by = {(c.f, c.b, c.d): c for c in cands}
    chosen = by.get((f, b, d))
    if chosen is None:
        return f"kernel chose a non-existent candidate {kernel_choice}"
    if not valid(chosen) or chosen.gain < -tol:
        return f"kernel chose {kernel_choice}, reference says {chosen}"
    if abs(gain - chosen.gain) > tol:
        return f"kernel gain {gain!r} differs from reference {chosen.gain!r} (tol {tol:g})"
    eligible = [c for c in cands if valid(c) and c.gain > 0]
    best_group = [c for c in eligible if key(c) == key(best)]
    runner_up = max((score(c) for c in eligible if key(c) != key(best)), default=-math.inf)
    if score(best) - runner_up > 2 * tol:
        if exact or len({c.f for c in best_group}) == 1:
            if (f, b, d) != (best.f, best.b, best.d):
                return (f"kernel chose {kernel_choice} ({chosen}); the reference best, unique "
                        f"by a margin with ties broken by order, is {best}")
        elif key(chosen) != key(best):
            return f"kernel chose {kernel_choice} ({chosen}), reference best is {best}"
    elif score(chosen) < score(best) - 2 * tol:
        return f"kernel chose {kernel_choice} ({chosen}), reference best is {best}"
    return None


# --------------------------------------------------------------------------------------------
# partition
# --------------------------------------------------------------------------------------------


def goes_right(bin_value: int, split_bin: int, nan_right: int, missing_bin: int) -> bool:
    """The documented routing rule for one binned value."""
    if bin_value == missing_bin:
        return bool(nan_right)
    return bin_value > split_bin


def apply_level(X_rows, rows, node_of_row, split_feature, split_bin, nan_right, left_child,
                right_child, missing_bin) -> np.ndarray:
    """New node of every fitted row after one depthwise level (a copy)."""
    out = np.array(node_of_row, dtype=np.int64)
    for p in range(len(rows)):
        k = out[p]
        if left_child[k] < 0:
            continue
        v = int(X_rows[rows[p], split_feature[k]])
        out[p] = right_child[k] if goes_right(v, split_bin[k], nan_right[k], missing_bin) \
            else left_child[k]
    return out


def apply_level_oblivious(X_binned, rows, node_of_row, feature, split_bin, nan_right, level,
                          missing_bin) -> np.ndarray:
    out = np.array(node_of_row, dtype=np.int64)
    for p in range(len(rows)):
        v = int(X_binned[feature, rows[p]])
        if goes_right(v, split_bin, nan_right, missing_bin):
            out[p] |= 1 << level
    return out


def row_list(node_of_row, slot_of_node, block: int):
    """``(listed, block_counts)`` as the partition kernels document them: per block of
    ``block`` positions, the positions whose node has a slot, in order (the entries of
    ``listed`` past a block's count are unspecified; here -1)."""
    n = len(node_of_row)
    n_blocks = -(-n // block)
    listed = np.full(n, -1, dtype=np.int64)
    counts = np.zeros(n_blocks, dtype=np.int64)
    for b in range(n_blocks):
        keep = [p for p in range(b * block, min(n, (b + 1) * block))
                if slot_of_node[node_of_row[p]] >= 0]
        listed[b * block:b * block + len(keep)] = keep
        counts[b] = len(keep)
    return listed, counts


def node_sums(node_of_row, gradient, hessian, n_nodes) -> np.ndarray:
    out = np.zeros((n_nodes, 3))
    for k in range(n_nodes):
        m = np.asarray(node_of_row) == k
        out[k, 0] = math.fsum(np.asarray(gradient)[m])
        out[k, 1] = math.fsum(np.asarray(hessian)[m])
        out[k, 2] = float(m.sum())
    return out


def leaf_values(G, H, count, l2: float) -> np.ndarray:
    """The Newton value ``-G / (H + l2)`` of each leaf, 0 where no row reaches it or its
    ``H + l2`` is not positive (one leaf at a time, in Python floats)."""
    out = []
    for g, h, c in zip(G, H, count):
        denom = float(h) + float(l2)
        out.append(-float(g) / denom if denom > 0 and c > 0 else 0.0)
    return np.array(out, dtype=np.float64)


def subtree_sums(left, right, values) -> np.ndarray:
    """Each node's sum over the leaves below it (recursion from the node)."""
    def below(k):
        return float(values[k]) if left[k] < 0 else below(left[k]) + below(right[k])
    return np.array([below(k) for k in range(len(left))])


# --------------------------------------------------------------------------------------------
# prediction
# --------------------------------------------------------------------------------------------


def oblivious_leaf_binned(x_bins: Sequence[int], features, bins, nan_right, missing_bin) -> int:
    """Leaf index ``sum_l right_l << l`` of one binned row."""
    leaf = 0
    for lvl, (f, b, d) in enumerate(zip(features, bins, nan_right)):
        if goes_right(int(x_bins[f]), int(b), int(d), missing_bin):
            leaf += 2 ** lvl
    return leaf


def depthwise_leaf_binned(x_bins: Sequence[int], feature, split_bin, nan_right, left, right,
                          missing_bin) -> int:
    """Node id of the leaf a binned row reaches."""
    k = 0
    steps = 0
    while left[k] >= 0:
        right_ = goes_right(int(x_bins[feature[k]]), int(split_bin[k]), int(nan_right[k]),
                            missing_bin)
        k = int(right[k] if right_ else left[k])
        steps += 1
        assert steps <= len(left), "cycle in tree"
    return k


def raw_goes_right(x: float, threshold: float, nan_right: int) -> bool:
    """Raw-feature routing: ``x <= threshold`` goes left; NaN follows ``nan_right``."""
    if math.isnan(x):
        return bool(nan_right)
    return not (x <= threshold)


def predict_trees_binned(X_binned: np.ndarray, trees, coef, missing_bin: int,
                         bias: float = 0.0) -> np.ndarray:
    """``bias + sum_t coef[t] * tree_t(x)`` by explicit traversal of binned rows.

    ``trees`` are objects with the attributes of ``ObliviousTree`` / ``DepthwiseTree``.
    """
    n_rows = X_binned.shape[1]
    out = np.full(n_rows, float(bias))
    for r in range(n_rows):
        x = X_binned[:, r]
        acc = float(bias)
        for t, c in zip(trees, coef):
            if hasattr(t, "left"):
                k = depthwise_leaf_binned(x, t.feature, t.bin, t.nan_right, t.left, t.right,
                                          missing_bin)
            else:
                k = oblivious_leaf_binned(x, t.feature, t.bin, t.nan_right, missing_bin)
            acc += float(c) * float(t.value[k])
        out[r] = acc
    return out


def predict_trees_raw(X: np.ndarray, trees, coef, threshold, bias: float = 0.0) -> np.ndarray:
    """Same on raw floats; ``threshold(f, b)`` gives the raw threshold of a split."""
    n_rows = X.shape[0]
    out = np.empty(n_rows)
    for r in range(n_rows):
        x = X[r]
        acc = float(bias)
        for t, c in zip(trees, coef):
            if hasattr(t, "left"):
                k = 0
                while t.left[k] >= 0:
                    f = int(t.feature[k])
                    go = raw_goes_right(float(x[f]), threshold(f, int(t.bin[k])),
                                        int(t.nan_right[k]))
                    k = int(t.right[k] if go else t.left[k])
            else:
                k = 0
                for lvl in range(len(t.feature)):
                    f = int(t.feature[lvl])
                    if raw_goes_right(float(x[f]), threshold(f, int(t.bin[lvl])),
                                      int(t.nan_right[lvl])):
                        k += 2 ** lvl
            acc += float(c) * float(t.value[k])
        out[r] = acc
    return out


# --------------------------------------------------------------------------------------------
# losses (formulas of boostlib/losses.py's module docstring)
# --------------------------------------------------------------------------------------------


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def logloss_grad_hess(y: float, z: float) -> Tuple[float, float]:
    p = _sigmoid(z)
    return p - y, _sigmoid(z) * _sigmoid(-z)


def mse_grad_hess(y: float, z: float) -> Tuple[float, float]:
    return z - y, 1.0


def sla_grad_hess(y: float, z: float, s: float) -> Tuple[float, float]:
    t = 2.0 * y - 1.0
    q = _sigmoid(t * z / s)
    one_minus_q = _sigmoid(-t * z / s)
    return -(t / s) * q * one_minus_q, -(q * one_minus_q * (1.0 - 2.0 * q)) / (s * s)


def multiclass_grad_hess_loss(y: int, z: Sequence[float]) -> Tuple[List[float], List[float],
                                                                   float]:
    """Softmax cross-entropy of one row: ``p_k = exp(z_k) / sum_j exp(z_j)``, gradient
    ``p_k - [k == y]``, hessian ``p_k (1 - p_k)``, loss ``log sum_j exp(z_j) - z_y``
    (``math.fsum`` of the exponentials shifted by the row's largest score)."""
    top = max(z)
    e = [math.exp(v - top) for v in z]
    s = math.fsum(e)
    p = [v / s for v in e]
    return ([pk - (1.0 if k == y else 0.0) for k, pk in enumerate(p)],
            [pk * (1.0 - pk) for pk in p], top + math.log(s) - z[y])


# --------------------------------------------------------------------------------------------
# tree growing (brute force, from the rows; small inputs only)
# --------------------------------------------------------------------------------------------


def _sums(mask: np.ndarray, g: np.ndarray, h: np.ndarray):
    return (math.fsum(g[mask]), math.fsum(h[mask]), float(mask.sum()))


def _row_candidates(Xb: np.ndarray, mask: np.ndarray, g: np.ndarray, h: np.ndarray,
                    nbnm, missing_bin, l2, msl, mcw):
    """Candidates of the node holding the rows ``mask``, from the rows themselves.

    ``Xb`` is (n_features, n_fit) binned data of the fitted rows. Yields
    ``(f, b, d, valid, gain, left_sums, right_sums)`` in tie-breaking order.
    """
    out = []
    for f in range(Xb.shape[0]):
        col = Xb[f].astype(np.int64)
        miss = col == missing_bin
        for b in range(int(nbnm[f])):
            for d in (0, 1):
                right = mask & ((col > b) & ~miss | (miss & bool(d)))
                left = mask & ~right
                ls, rs = _sums(left, g, h), _sums(right, g, h)
                valid = is_valid(ls, rs, l2, msl, mcw)
                gain = newton_gain(ls, rs, l2) if valid else 0.0
                out.append((f, b, d, valid, gain, ls, rs))
    return out


def _side_stats(mask: np.ndarray, right: np.ndarray, h: np.ndarray, tie_d: int,
                any_missing: bool):
    """Row counts and hessian sums of both sides of a split (rows in ``mask``, missing ones
    excluded), ``tie_d``, the direction the brute force picked (by the tie-breaking rule
    when no missing row carries any weight) and whether there are missing rows at all."""
    return dict(n_left=float(np.sum(mask & ~right)), n_right=float(np.sum(mask & right)),
                h_left=math.fsum(h[mask & ~right]), h_right=math.fsum(h[mask & right]),
                tie_d=int(tie_d), any_missing=bool(any_missing))


def majority_by_count(where, stats) -> int:
    """Missing direction of a split no (weighted) missing row took part in: the side with
    strictly more rows (right), else left. Missing rows whose gradient and hessian are both 0
    change no sum, so when they are the only missing rows, the brute force's own choice
    (``tie_d``) is as good; tests accept either."""
    return int(stats["n_right"] > stats["n_left"])


def _leaf_value(G: float, H: float, l2: float) -> float:
    return -G / (H + l2) if H + l2 > 0 else 0.0


def grow_symmetric(Xb: np.ndarray, g: np.ndarray, h: np.ndarray, nbnm, missing_bin: int,
                   max_depth: int, l2: float, msl: float, mcw: float,
                   leaf_g: Optional[np.ndarray] = None, unseen_side=None) -> Dict:
    """Reference symmetric (oblivious) grower, following the docstring of
    ``boostlib.engine.trees.symmetric``.

    ``Xb`` (n_features, n_fit) are the fitted rows, ``g``/``h`` their gradient and hessian as
    the structure sees them (already rounded to float32 by the caller if wanted).
    The tree's nodes are sets of leaves, searched and valued on the union of their rows (the
    root: leaf 0). One split per level maximises the sum of the gains of the nodes where it
    is valid; a node where it is valid becomes two (its leaves' left children, its leaves'
    right children), a node where it is not stays one node of all its leaves' children (the
    rows still follow the split) and takes part in the next levels' searches.
    A missing direction that no row exercises is set to the majority side (right when
    strictly more rows go right).

    Returns dict(feature, bin, nan_right, gain, leaf_of_row, value, group, margins) where
    ``group[leaf]`` is the first leaf of the leaf's node and ``margins[l]`` the gap between
    the best and the runner-up score of level ``l`` (for deciding whether an exact
    comparison is meaningful).
    """
    n = Xb.shape[1]
    leaf_g = g if leaf_g is None else leaf_g
    unseen_side = majority_by_count if unseen_side is None else unseen_side
    leaf = np.zeros(n, dtype=np.int64)
    node_of_leaf = [0]                 # per leaf: its node (the node's first leaf)
    feats, bins, nanr, gains, margins, scales, seen = [], [], [], [], [], [], []
    for level in range(max_depth):
        n_leaves = 1 << level
        nodes = sorted(set(node_of_leaf))
        members = [np.isin(leaf, [k for k in range(n_leaves) if node_of_leaf[k] == nd])
                   for nd in nodes]
        per_leaf = [_row_candidates(Xb, m, g, h, nbnm, missing_bin, l2, msl, mcw)
                    for m in members]
        totals = []
        for i in range(len(per_leaf[0])):
            total, nv, keyl, mag = 0.0, 0, [], 0.0
            for cands in per_leaf:
                f, b, d, valid, gain, ls, rs = cands[i]
                if valid:
                    total += gain
                    nv += 1
                    mag += gain_magnitude(ls, rs, l2)
                keyl.append((valid, ls) if valid else (False,))
            f, b, d = per_leaf[0][i][:3]
            totals.append((f, b, d, total, nv, tuple(keyl), mag))
        eligible = [t for t in totals if t[4] > 0 and t[3] > 0]
        if not eligible:
            break
        best = best_by_score(eligible, lambda t: t[3])
        others = [t[3] for t in eligible if t[5] != best[5]]
        margins.append(best[3] - max(others, default=-math.inf))
        # A gain is a difference of score terms, its rounding error scales with them; a
        # candidate whose gain is rounding noise may come out positive in the kernel.
        scales.append(max(t[6] for t in totals if t[4] > 0))
        f, b, d = best[0], best[1], best[2]
        col = Xb[f].astype(np.int64)
        miss = col == missing_bin
        every = np.ones(n, dtype=bool)
        # rows with g == h == 0 (zero weight) take part in nothing: if they are the only
        # missing ones, the direction is free (see majority_by_count)
        seen.append(bool(np.any(miss & ((g != 0) | (h != 0)))))
        if not seen[-1]:
            d = unseen_side(level, _side_stats(every, (col > b) & ~miss, h, d, np.any(miss)))
        right_all = ((col > b) & ~miss) | (miss & bool(d))
        split_node = {}
        for nd, m in zip(nodes, members):
            split_node[nd] = is_valid(_sums(m & ~right_all, g, h), _sums(m & right_all, g, h),
                                      l2, msl, mcw)
        # children of leaf k: k (left) and k + n_leaves (right); a split node's right
        # children form a node of their own, first leaf nd + n_leaves
        node_of_leaf = node_of_leaf + [nd + n_leaves if split_node[nd] else nd
                                       for nd in node_of_leaf]
        leaf = leaf | (right_all.astype(np.int64) << level)
        feats.append(f)
        bins.append(b)
        nanr.append(d)
        gains.append(best[3])
    depth = len(feats)
    n_leaves = 1 << depth
    group = np.array(node_of_leaf[:n_leaves], dtype=np.int64)
    value = np.zeros(n_leaves)
    for k in range(n_leaves):
        m = np.isin(leaf, np.flatnonzero(group == group[k]))
        value[k] = _leaf_value(math.fsum(leaf_g[m]), math.fsum(h[m]), l2)
    return dict(feature=feats, bin=bins, nan_right=nanr, gain=gains, leaf_of_row=leaf,
                value=value, group=group, margins=margins, scales=scales, nan_seen=seen)


def grow_depthwise(Xb: np.ndarray, g: np.ndarray, h: np.ndarray, nbnm, missing_bin: int,
                   max_depth: int, l2: float, msl: float, mcw: float,
                   leaf_g: Optional[np.ndarray] = None, unseen_side=None) -> Dict:
    """Reference depthwise grower (recursive): each node takes its own best split, a node
    without a valid positive-gain split is a leaf, the unexercised missing direction goes to
    the majority side. Returns a nested dict; leaves are ``{"value", "rows"}``, inner nodes
    ``{"feature", "bin", "nan_right", "gain", "margin", "scale", "left", "right"}``."""
    leaf_g = g if leaf_g is None else leaf_g
    unseen_side = majority_by_count if unseen_side is None else unseen_side

    def node(mask: np.ndarray, depth: int, path: str):
        leaf = {"value": _leaf_value(math.fsum(leaf_g[mask]), math.fsum(h[mask]), l2),
                "rows": np.flatnonzero(mask)}
        if depth >= max_depth:
            return leaf
        cands = _row_candidates(Xb, mask, g, h, nbnm, missing_bin, l2, msl, mcw)
        eligible = [c for c in cands if c[3] and c[4] > 0]
        if not eligible:
            return leaf
        best = best_by_score(eligible, lambda c: c[4])
        others = [c[4] for c in eligible if c[5] != best[5]]
        f, b, d = best[0], best[1], best[2]
        col = Xb[f].astype(np.int64)
        miss = col == missing_bin
        seen = bool(np.any(mask & miss & ((g != 0) | (h != 0))))
        if not seen:
            d = unseen_side(path, _side_stats(mask, (col > b) & ~miss, h, d,
                                              np.any(mask & miss)))
        right = mask & (((col > b) & ~miss) | (miss & bool(d)))
        return {"feature": f, "bin": b, "nan_right": d, "gain": best[4],
                "margin": best[4] - max(others, default=-math.inf),
                "scale": max(gain_magnitude(c[5], c[6], l2) for c in cands if c[3]),
                "nan_seen": seen,
                "left": node(mask & ~right, depth + 1, path + "L"),
                "right": node(right, depth + 1, path + "R")}

    return node(np.ones(Xb.shape[1], dtype=bool), 0, "")


# --------------------------------------------------------------------------------------------
# histogram layout
# --------------------------------------------------------------------------------------------


def hist_offsets(n_bins_nonmissing) -> np.ndarray:
    """The kernels' per-feature layout: feature ``f`` owns ``nbnm[f] + 1`` bins (its missing
    bin last) from ``offsets[f]``."""
    nbnm = np.asarray(n_bins_nonmissing, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(nbnm + 1)]).astype(np.int32)


def compact_hist(hist: np.ndarray, n_bins_nonmissing, missing_bin: int) -> np.ndarray:
    """A ``(..., n_features, n_bins, channels)`` histogram in the kernels' layout ``(...,
    offsets[-1], channels)``: each feature's bins in use, then its missing bin (copied, so
    every value is bit-identical)."""
    nbnm = np.asarray(n_bins_nonmissing, dtype=np.int64)
    blocks = [np.concatenate([hist[..., f, :nb, :], hist[..., f, missing_bin:missing_bin + 1, :]],
                             axis=-2) for f, nb in enumerate(nbnm)]
    return np.ascontiguousarray(np.concatenate(blocks, axis=-2))


def compact_rows_hist(hist: np.ndarray, n_bins_nonmissing) -> np.ndarray:
    """Like :func:`compact_hist` for data whose missing values sit at each feature's own
    bin ``nbnm[f]`` (the grower's row-major matrix): the first ``nbnm[f] + 1`` bins."""
    nbnm = np.asarray(n_bins_nonmissing, dtype=np.int64)
    return np.ascontiguousarray(np.concatenate([hist[..., f, :nb + 1, :]
                                                for f, nb in enumerate(nbnm)], axis=-2))


def dense_hist(compact: np.ndarray, n_bins_nonmissing, missing_bin: int) -> np.ndarray:
    """The inverse of :func:`compact_hist` (bins between a feature's last and the missing
    bin are 0)."""
    nbnm = np.asarray(n_bins_nonmissing, dtype=np.int64)
    off = hist_offsets(nbnm)
    out = np.zeros(compact.shape[:-2] + (nbnm.size, missing_bin + 1, compact.shape[-1]))
    for f, nb in enumerate(nbnm):
        out[..., f, :nb, :] = compact[..., off[f]:off[f] + nb, :]
        out[..., f, missing_bin, :] = compact[..., off[f] + nb, :]
    return out


def full_bin_borders(col: np.ndarray, max_bins: int, min_samples_bin: int) -> np.ndarray:
    """Borders of one feature whose bins hold at least ``min_samples_bin`` of its values,
    from the definition, one value at a time: the candidates are :func:`feature_borders`'s
    with ``min(max_bins, n // min_samples_bin)`` bins (at least 1) when the feature has more
    than ``max_bins`` distinct values, all of them otherwise; walking up, a candidate is kept
    when the values since the last kept one, and the values above it, both number at least
    ``min_samples_bin``. With 1, the candidates themselves (a quantile border may then
    close a bin with every value above it empty)."""
    col = np.asarray(col, dtype=np.float64)
    if min_samples_bin == 1:
        return feature_borders(col, max_bins)
    values = np.sort(col[~np.isnan(col)] + 0.0)
    if np.unique(values).size > max_bins:
        candidates = feature_borders(values, max(1, min(max_bins,
                                                        values.size // min_samples_bin)))
    else:
        candidates = feature_borders(values, max_bins)
    kept, last = [], -np.inf
    for border in candidates:
        in_bin = sum(1 for v in values if last < v <= border)
        above = sum(1 for v in values if v > border)
        if in_bin >= min_samples_bin and above >= min_samples_bin:
            kept.append(border)
            last = border
    return np.array(kept, dtype=np.float64)
