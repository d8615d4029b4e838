"""The interface every tree kind implements (symmetric, depthwise; a new kind is one new
subclass registered in :data:`boostlib.engine.trees.KINDS`)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..._kernels import _partition
# ``nan_right`` of a categorical split (its ``bin`` names a row of the tree's ``cat_sets``)
from ..linear_leaves import LINEAR_FIELDS
from ..split_rules import CAT_SPLIT

#: Deepest trees: the largest ``max_depth``, and the depth of model files' depthwise trees.
MAX_DEPTH = 30

#: Tree fields a model-file tree may lack (older formats; the linear parts: trees without
#: linear leaves).
OPTIONAL_FIELDS = ("cat_sets", "cover") + LINEAR_FIELDS


def no_sets() -> np.ndarray:
    """An empty ``cat_sets`` array (a tree without categorical splits)."""
    return np.zeros((0, 8), dtype=np.uint32)


def set_members(words: np.ndarray) -> np.ndarray:
    """The bin values (0..255) in a 256-bit set (uint32 (8,))."""
    bits = np.unpackbits(np.ascontiguousarray(words, dtype=np.uint32).view(np.uint8),
                         bitorder="little")
    return np.flatnonzero(bits)


def read_cover(value: Any, path: str, reader: Any, size: int) -> Optional[np.ndarray]:
    """The ``cover`` of a tree read from a model file: None when absent (files before format
    4, or trees continued from them), else ``size`` finite counts >= 0."""
    if "cover" not in value:
        return None
    cover = reader.floats(value, "cover", path, size, f"expected {size}, one per entry of "
                                                      "value")
    if np.any(cover < 0):
        raise reader.fail(f"{path}.cover[{int(np.argmax(cover < 0))}]", "covers are >= 0")
    return cover


def read_cat_sets(value: Any, path: str, reader: Any, bins: np.ndarray,
                  nan_right: np.ndarray, split: np.ndarray) -> np.ndarray:
    """The ``cat_sets`` of a tree read from a model file (absent before format 3), checked
    against the categorical splits that name them."""
    sets = reader.sets(value, path)
    cat = split & (nan_right == CAT_SPLIT)
    bad = cat & ((bins < 0) | (bins >= sets.shape[0]))
    if bad.any():
        k = int(np.argmax(bad))
        raise reader.fail(f"{path}.bin[{k}]", f"categorical split names set {int(bins[k])}; "
                                              f"the tree has {sets.shape[0]}")
    return sets


class TreeKind(ABC):
    """How one kind of tree is grown, walked, predicted and stored.

    Every method that grows or walks trees receives the
    :class:`~boostlib.engine.grower.TreeGrower`, which holds the shared machinery: its
    ``histograms`` (:class:`~boostlib.engine.histograms.Histograms`: the binned data, the
    root histogram, the histogram passes) and its split ``rules``
    (:class:`~boostlib.engine.split_rules.SplitRules`: the split search and its
    constraints), and computes the leaf values; a kind only decides the structure, through
    their public methods.

    Attributes
    ----------
    name : str
        The ``grow_policy`` value that selects this kind.
    tree_class : type
        The dataclass of one fitted tree (its array fields, ``gain`` and ``value`` included).
    fields : tuple of str
        The tree's array fields, in model-file order.
    field_dtypes : dict of str to str
        The type of each field's binary block in model files (format 5 on): its numpy type
        string, little-endian.
    packed_feature : str
        The array of :meth:`pack`'s result that holds split features (-1 at leaves).
    walks_unfitted_rows : bool
        Whether, after a fit on a sample, the other rows' leaves are cheaper found by a
        row-major walk (:meth:`add_values`) than by a prediction pass.
    """

    name: str = ""
    tree_class: Optional[type] = None
    fields: Tuple[str, ...] = ()
    field_dtypes: Dict[str, str] = {}
    packed_feature: str = "feature"
    walks_unfitted_rows: bool = False

    @abstractmethod
    def grow(self, grower: Any, rows: np.ndarray, g: np.ndarray, h: np.ndarray,
             noise_std: float, split_rng: Any, prepared: Any = None
             ) -> Tuple[Any, np.ndarray, Optional[np.ndarray]]:
        """Grow one tree's structure on ``rows`` (leaf values left at 0), splitting only on
        the features ``grower.rules.column_rules`` allows, and within
        ``grower.rules.monotone``.

        Returns
        -------
        tree, node_of_row, group, bounds
            ``node_of_row``: the leaf slot of every fitted row (what :meth:`apply` returns);
            ``group``: None, or for every leaf slot the slot whose value it shares (leaves
            that a constraint left unsplit); ``bounds``: None, or (n_slots, 2) the interval
            each slot's value must lie in (monotone constraints).
        """

    @abstractmethod
    def apply(self, grower: Any, tree: Any, rows: Optional[np.ndarray],
              known: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> np.ndarray:
        """The leaf slot of the training rows ``rows`` (None: every row); ``known``: sorted
        rows whose leaves are known already (a kind may skip them)."""

    def add_values(self, grower: Any, tree: Any, coefficient: float, raw: np.ndarray,
                   known: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> None:
        """``raw += coefficient * tree(x)`` on every training row by a walk (kinds with
        ``walks_unfitted_rows``)."""
        raise NotImplementedError(f"{self.name} trees are not walked row by row")

    @abstractmethod
    def split_mask(self, tree: Any) -> np.ndarray:
        """Which entries of ``tree.feature`` / ``tree.bin`` are splits."""

    @abstractmethod
    def split_covers(self, tree: Any) -> np.ndarray:
        """The training rows that reached each split (the entries :meth:`split_mask`
        selects, in order); the tree must have ``cover``."""

    @abstractmethod
    def leaf_mask(self, tree: Any) -> np.ndarray:
        """Which entries of ``tree.value`` are leaves a row can reach."""

    @abstractmethod
    def pack(self, trees: List[Any]) -> Dict[str, np.ndarray]:
        """The trees concatenated into the arrays
        :meth:`~boostlib.engine.trees.TreeKind.predict` reads."""

    def predict(self, X_binned: np.ndarray, out: np.ndarray, packed: Dict[str, np.ndarray],
                coef: np.ndarray, missing_bin: int, n_threads: int) -> None:
        """``out += sum_t coef[t] * tree_t(x)`` on a binned matrix (n_features, n_rows)."""
        self.predict_prepared(X_binned, out, self.prepare(packed, X_binned.shape[0],
                                                          missing_bin), coef, n_threads)

    def prepare(self, packed: Dict[str, np.ndarray], n_features: int,
                missing_bin: int) -> Dict[str, Any]:
        """:meth:`~boostlib.engine.trees.TreeKind.pack`'s arrays as the prediction kernel
        reads them, for matrices of ``n_features`` rows (what a model predicted many times
        keeps)."""
        return dict(packed, missing_bin=missing_bin)

    @abstractmethod
    def predict_prepared(self, X_binned: np.ndarray, out: np.ndarray,
                         prepared: Dict[str, Any], coef: np.ndarray, n_threads: int) -> None:
        """:meth:`~boostlib.engine.trees.TreeKind.predict` with tables from
        :meth:`~boostlib.engine.trees.TreeKind.prepare`."""

    @abstractmethod
    def path_features(self, tree: Any) -> Tuple[np.ndarray, np.ndarray]:
        """``(ptr, feature)``: for every slot of ``tree.value`` that is a leaf, the distinct
        numeric features of the splits on its path, sorted (``feature[ptr[s]:ptr[s+1]]``,
        int32; none for split nodes), what its linear part may use
        (:mod:`boostlib.engine.linear_leaves`)."""

    @abstractmethod
    def node_arrays(self, tree: Any) -> Dict[str, np.ndarray]:
        """The tree as an explicit binary tree (what plots, SHAP values and exports read):
        arrays ``feature``, ``bin``, ``nan_right``, ``left``, ``right`` (-1 at leaves),
        ``value`` and ``cover`` (the training rows reaching each node; None for a tree
        without covers) over nodes, node 0 the root, every child after its parent; a row
        at a split node goes right when its bin is above ``bin`` (missing values: when
        ``nan_right``), or, at a categorical split (``nan_right == 2``), when its bin is not
        in the set ``cat_sets[bin]`` (also returned)."""

    def to_document(self, tree: Any) -> Dict[str, np.ndarray]:
        """The tree's ``fields`` as arrays, in model-file order (``cover`` only when the tree
        has one); a model file stores each as a binary block of its ``field_dtypes``."""
        return {k: np.asarray(getattr(tree, k)) for k in self.fields
                if getattr(tree, k) is not None}

    def field_bytes(self, fields: Tuple[str, ...]) -> int:
        """Bytes one entry of each of ``fields`` takes in a model file's blocks."""
        return sum(np.dtype(self.field_dtypes[k]).itemsize for k in fields)

    def tree_bytes(self, tree: Any) -> int:
        """Bytes ``tree``'s arrays take in a model file's blocks (before base64)."""
        return sum(a.size * np.dtype(self.field_dtypes[k]).itemsize
                   for k, a in self.to_document(tree).items())

    @abstractmethod
    def max_tree_bytes(self, max_depth: int, max_leaves: int, categorical: bool,
                       linear: bool = False) -> int:
        """The most bytes one tree of at most ``max_depth`` levels and ``max_leaves``
        leaves can take in a model file's blocks (:meth:`tree_bytes`); ``categorical``:
        whether it may have categorical splits (each stores a set of 8 words);
        ``linear``: whether it has linear leaves (:meth:`linear_bytes`)."""

    def linear_bytes(self, slots: int, leaves: int, max_depth: int) -> int:
        """The most bytes the linear parts of a tree of ``slots`` value slots and
        ``leaves`` leaves of depth at most ``max_depth`` take: a pointer per slot and one
        more, and an entry (feature, weight, mean) per path feature of every leaf."""
        entry = self.field_bytes(("linear_feature", "linear_weight", "linear_mean"))
        return (slots + 1) * self.field_bytes(("linear_ptr",)) + leaves * max_depth * entry

    def document_keys(self, value: Any) -> Tuple[str, ...]:
        """The fields a tree document must have (``cat_sets`` only from format 3 on; ``cover``
        only from format 4 on, and not for trees continued from older files)."""
        absent = {k for k in OPTIONAL_FIELDS if isinstance(value, dict) and k not in value}
        return tuple(k for k in self.fields if k not in absent)

    @staticmethod
    def _set_ids(trees: List[Any]) -> List[np.ndarray]:
        """Every tree's ``bin`` with its categorical splits renumbered into the
        concatenation of all trees' ``cat_sets``."""
        out, base = [], 0
        for t in trees:
            out.append(np.where(t.nan_right == CAT_SPLIT, t.bin + base, t.bin))
            base += t.cat_sets.shape[0]
        return out

    @staticmethod
    def _sets(trees: List[Any]) -> np.ndarray:
        sets = [t.cat_sets for t in trees if t.cat_sets.shape[0]]
        return np.ascontiguousarray(np.concatenate(sets) if sets else no_sets())

    @abstractmethod
    def from_document(self, value: Any, path: str, n_borders: np.ndarray, reader: Any) -> Any:
        """Validate a tree read from a model file and build it.

        ``reader`` is the model-file reader of the file's format version
        (:mod:`boostlib.io.model_files`), whose typed readers (``check_keys``, ``length``:
        a field's number of entries, ``ints``, ``floats``, ``sets``, ``fail``) check every
        size before building an array and raise its error naming ``path``; the kind checks
        shapes, index ranges, its structure, bins within each feature's borders and
        non-negative gains.
        """

    @staticmethod
    def _offsets(sizes: List[int]) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)

    @staticmethod
    def _cat(arrays: List[np.ndarray], dtype: Any) -> np.ndarray:
        return np.ascontiguousarray(np.concatenate(arrays) if arrays else np.empty(0),
                                    dtype=dtype)


def level_nodes(left: np.ndarray, right: np.ndarray) -> List[np.ndarray]:
    """The nodes of an explicit binary tree (node 0 the root, ``left[k] < 0`` at leaves),
    level by level from the root: one numpy pass per level, not per node."""
    levels = [np.zeros(1, dtype=np.intp)]
    while True:
        split = levels[-1][left[levels[-1]] >= 0]
        if split.size == 0:
            return levels
        levels.append(np.concatenate([left[split], right[split]]).astype(np.intp))


def subtree_sums(left: np.ndarray, right: np.ndarray, values: np.ndarray,
                 levels: Optional[List[np.ndarray]] = None) -> np.ndarray:
    """``values`` at the leaves, and at every split node the sum over its leaves (e.g. the
    rows reaching it from the rows of each leaf), each sum its children's.

    One compiled pass (``_partition.subtree_sums``), or with ``levels``
    (:func:`level_nodes`, which the caller has) one numpy pass per level."""
    total = np.where(left < 0, values, 0.0).astype(np.float64, copy=False)
    if levels is None:
        _partition.subtree_sums(np.ascontiguousarray(left, dtype=np.int32),
                                np.ascontiguousarray(right, dtype=np.int32), total)
        return total
    for nodes in reversed(levels):
        split = nodes[left[nodes] >= 0]
        total[split] = total[left[split]] + total[right[split]]
    return total


def bins_in_range(bins: np.ndarray, feature: np.ndarray, n_borders: np.ndarray,
                  split: np.ndarray) -> Optional[Tuple[str, str]]:
    """A split bin ``b`` of feature ``f`` lies in ``[0, len(borders[f])]`` (the top: all
    left); ``split`` masks the entries that split."""
    over = (bins > n_borders[np.maximum(feature, 0)]) & split
    if over.any():
        k = int(np.argmax(over))
        return (f"bin[{k}]", f"bin {int(bins[k])} is out of range for feature "
                             f"{int(feature[k])} ({int(n_borders[feature[k]])} borders)")
    return None


def bins_below(bins: np.ndarray, cat: np.ndarray, high: int) -> Optional[Tuple[str, str]]:
    """The bins of every entry but the categorical splits (``cat``: their bins index the
    tree's sets, which :func:`read_cat_sets` checks) lie in ``[0, high]``."""
    over = ~cat & (bins > high)
    if over.any():
        k = int(np.argmax(over))
        return f"bin[{k}]", f"{int(bins[k])} is out of range [0, {high}]"
    return None


def gains_non_negative(gain: np.ndarray) -> Optional[Tuple[str, str]]:
    negative = gain < 0
    if negative.any():
        return f"gain[{int(np.argmax(negative))}]", "split gains are non-negative"
    return None
