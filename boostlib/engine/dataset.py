"""Training and validation data, validated once and binned once."""
from __future__ import annotations

import copy
import os
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from . import batches as _batches
from .binning import BinMapper
from .categorical import categorical_mask, encode, translate
from .frames import Columns, as_frame
from .holdout import query_sizes_of
from .random_streams import stream_rng
from .validation import (check_distinct, check_group, check_init_score, check_rows,
                         check_sample_weight, check_X, check_y,
                         feature_names as _frame_names)


class Dataset:
    """Features, an optional target and row weights, binned once for training.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
        Features; NaN marks a missing value. float32 and float64 arrays are used as they
        are, in either memory order (no float64 copy of the matrix is made). A DataFrame's
        category, object and string columns are categorical features.
    y : array-like of shape (n_rows,) or (n_rows, n_targets), optional
        Numeric targets (class indices for classification losses; a column per target for
        losses of several targets; lower and upper bounds, the upper possibly ``inf``, for
        the ``aft`` loss). Needed for training and validation sets.
    sample_weight : array-like of shape (n_rows,), optional
        Non-negative row weights. Rows of weight 0 do not influence the model, bin borders
        included.
    group : array-like of int, optional
        Query group sizes for ranking (as LightGBM's ``group``): the first ``group[0]`` rows
        are the first query, the next ``group[1]`` the second, ... (sizes sum to the number
        of rows). Ranking losses (``lambdarank``) and metrics (``ndcg``, ``map``) need it.
    init_score : array-like of shape (n_rows,) or (n_rows, n_outputs), optional
        Offsets added to the raw scores (LightGBM's ``init_score``, XGBoost's
        ``base_margin``): training starts from them instead of the loss's constant start,
        and the model learns what they leave out (for Poisson and Tweedie exposure, pass
        ``log(exposure)``; for boosting on from another model, its raw scores). The model
        does not hold them: add them to its raw predictions (``Model.predict(X,
        init_score=...)``).
    feature_names : sequence of str, optional
        Names of the features (default: a DataFrame's string column names, if any).
    reference : Dataset, optional
        The training set whose bin borders this (validation) set is binned with.
        :func:`boostlib.train` bins every validation set with the training set's borders;
        naming another training set there is an error.
    categorical_features : "auto", sequence of str or int, or boolean mask, default "auto"
        The categorical features: ``"auto"`` takes a DataFrame's category, object and
        string columns (and a table's ``categories`` columns); otherwise the columns named,
        indexed or masked. A numeric array's categorical columns hold integer codes
        ``0 .. 2**20 - 1`` (NaN: missing); labelled columns keep their labels, so a
        validation or test frame whose categories differ is coded by the training labels
        (labels unseen in training count as missing). With a ``reference``, its
        categorical features are used.

    Notes
    -----
    Binning happens when :func:`boostlib.train` first needs it, with that call's
    ``max_bins`` and ``random_state`` (borders are computed on at most 200,000 rows drawn
    from the ``"binning"`` random stream); the binned matrix is kept for later calls with
    the same binning settings.
    """

    def __init__(self, X: Any, y: Any = None, *, sample_weight: Any = None,
                 feature_names: Optional[Sequence[str]] = None,
                 reference: Optional["Dataset"] = None, categorical_features: Any = "auto",
                 group: Any = None, init_score: Any = None):
        X = as_frame(X)
        names = _frame_names(X)
        shape = getattr(X, "shape", None)
        n_cols = shape[1] if shape is not None and len(shape) == 2 else np.shape(X)[-1]
        mask = (reference.categorical if isinstance(reference, Dataset) else
                categorical_mask(X, categorical_features, n_cols, names))
        self.X, self.levels = encode(X, mask, check_X)
        check_rows(self.X.shape)                # also a frame of categorical columns only
        self.categorical = mask
        n_rows, n_features = self.X.shape
        self.y = None if y is None else check_y(y, n_rows, targets=True)
        self.sample_weight = check_sample_weight(sample_weight, n_rows)
        #: query sizes, int64 (n_groups,), or None
        self.group = check_group(group, n_rows)
        #: raw-score offsets, float64 (n_rows,) or (n_rows, n_outputs), or None
        self.init_score = check_init_score(init_score, n_rows)
        if feature_names is not None:
            names = np.asarray([str(n) for n in feature_names], dtype=object)
            if names.shape != (n_features,):
                raise ValueError(f"feature_names has {names.size} entries; X has "
                                 f"{n_features} features")
            check_distinct(names, "feature_names")
        self.feature_names = names
        if reference is not None and not isinstance(reference, Dataset):
            raise TypeError(f"reference={reference!r} is invalid; expected a boostlib.Dataset")
        if reference is not None and reference.n_features != n_features:
            raise ValueError(f"this Dataset has {n_features} features, its reference "
                             f"{reference.n_features}")
        self.reference = reference
        # (key, mapper, X_binned): as a training set for one binning setting, and as a
        # validation set for the last mapper it was binned with
        self._as_training: Optional[Tuple[Any, BinMapper, np.ndarray]] = None
        self._as_valid: Optional[Tuple[BinMapper, np.ndarray]] = None

    @classmethod
    def from_batches(cls, batches: Any, *, label: Any = None, weight: Any = None,
                     feature_names: Optional[Sequence[str]] = None,
                     categorical_features: Any = "auto",
                     reference: Optional["Dataset"] = None,
                     spill: Optional[Any] = None) -> "Dataset":
        """A Dataset of data read in batches, which need not fit in memory: only its bins
        (one byte per value), targets and weights are kept.

        The batches are read three times: here, to check them and keep their targets and
        weights; then, when :func:`boostlib.train` first needs the binned matrix (with that
        call's ``max_bins``, ``min_samples_bin`` and ``random_state``, as for any Dataset),
        to sample the rows the bin borders are computed on and to bin them, a batch at a
        time. The model is the one the same rows give in memory, bit for bit:
        ``train(p, Dataset.from_batches(parts))`` equals ``train(p, Dataset(X, y))`` where
        ``X`` and ``y`` are the batches one after the other.

        Parameters
        ----------
        batches : iterable or callable
            A list of batches (or any object whose ``iter()`` starts a new read, such as
            :func:`boostlib.io.batches.parquet_batches`), or a function without arguments
            that returns a fresh iterator of the same batches on every call. A one-shot
            iterator (a generator) is refused: it cannot be read again. A batch is an
            ``(X, y)`` or ``(X, y, sample_weight)`` tuple (``X`` a NumPy array, a pandas
            DataFrame, or an Arrow table or record batch), or a table (pandas, Arrow,
            polars) holding the target column ``label`` (and the weight column ``weight``),
            its other columns being the features.
        label, weight : column name, optional
            The target and row-weight columns of table batches (not with tuples).
        feature_names : sequence of str, optional
            Names of the features (default: the batches' string column names).
        categorical_features : "auto", sequence of str or int, or boolean mask
            As for :class:`Dataset`, read from the first batch. The levels of a text column
            are all the values of every batch, sorted; those of a category (dictionary)
            column every batch's categories, in the order first seen (what concatenating
            the batches in Arrow gives; give every batch the same categories to get the
            codes pandas gives their concatenation).
        reference : Dataset, optional
            The training set of this validation set (its categorical features are used).
        spill : str or path-like, optional
            A folder: the binned matrix is then a memory-mapped temporary file there
            (unnamed, removed when the matrix is freed), which the operating system can page
            out under memory pressure. Default: in memory.

        Returns
        -------
        Dataset
            It holds no feature values (its ``X`` is absent): it is for :func:`boostlib.train`,
            ``cv`` and the estimators' ``fit``.

        Raises
        ------
        TypeError
            For a one-shot iterator, a single table or array instead of batches, or a batch
            of another type.
        ValueError
            For no batch or no row, a batch whose columns, column names or column types
            differ from the first batch's, a target whose length is not the batch's, and
            any value ``Dataset(X, y)`` refuses; each message names the batch.
        """
        if reference is not None and not isinstance(reference, Dataset):
            raise TypeError(f"reference={reference!r} is invalid; expected a boostlib.Dataset")
        if spill is not None:
            spill = os.fspath(spill)
            if not os.path.isdir(spill):
                raise ValueError(f"spill={spill!r} is not a folder; expected an existing "
                                 "folder for the temporary file of the binned matrix")
        source = _batches.BatchSource(batches)
        reader = _batches.Reader(label, weight, categorical_features, feature_names,
                                 None if reference is None else reference.categorical)
        found = _batches.scan(source, reader)
        if reference is not None and reference.n_features != reader.n_features:
            raise ValueError(f"this Dataset has {reader.n_features} features, its reference "
                             f"{reference.n_features}")
        return BatchDataset(source, reader, found, None, found.y, found.sample_weight,
                            reference, spill)

    def subset(self, rows: np.ndarray) -> "Dataset":
        """The Dataset of the given rows (sorted row numbers; with query groups, whole
        queries): their values as this one codes them, with its categorical features, their
        levels and the feature names, and the rows' target, weights, groups and offsets.
        It bins as a Dataset of those rows built from scratch would."""
        rows = np.asarray(rows, dtype=np.intp)
        group = None
        if self.group is not None:
            query = np.repeat(np.arange(self.group.size), self.group)[rows]
            group = query_sizes_of(self.group, rows)
            if not np.array_equal(group, self.group[np.unique(query)]):
                raise ValueError("a subset of a Dataset with query groups needs whole "
                                 "queries")
        X = self.X.rows(rows) if isinstance(self.X, Columns) else self.X[rows]
        sub = Dataset(X, None if self.y is None else self.y[rows],
                      sample_weight=None if self.sample_weight is None
                      else self.sample_weight[rows],
                      feature_names=self.feature_names,
                      categorical_features=self.categorical, group=group,
                      init_score=None if self.init_score is None else self.init_score[rows])
        sub.levels = self.levels            # the codes are this Dataset's
        return sub

    def with_target(self, y: np.ndarray, sample_weight: Optional[np.ndarray]) -> "Dataset":
        """This Dataset with another target and row weights, one per row (what the
        estimators train on: encoded classes, class weights). It shares the features; it
        bins anew when needed (the weights choose the rows borders come from)."""
        out = copy.copy(self)
        out.y, out.sample_weight = y, sample_weight
        out.forget_bins()
        return out

    def forget_bins(self) -> None:
        """Free the binned matrices this Dataset keeps (as a training set and as a validation
        set); they are made again when needed. For large data once training is done: a
        Dataset read in batches keeps one byte per value until then."""
        self._as_training = None
        self._as_valid = None

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def group_ptr(self) -> Optional[np.ndarray]:
        """Query boundaries, int64 (n_groups + 1,): query ``q`` holds rows
        ``group_ptr[q] .. group_ptr[q + 1] - 1`` (None without groups)."""
        if self.group is None:
            return None
        return np.concatenate([[0], np.cumsum(self.group)]).astype(np.int64)

    def binned(self, mapper: BinMapper, n_threads: int) -> np.ndarray:
        """uint8 (n_features, n_rows): this set binned with ``mapper``'s borders (cached for
        the mapper last used)."""
        if self._as_valid is None or self._as_valid[0] is not mapper:
            if not np.array_equal(mapper.categorical_, self.categorical):
                raise ValueError("this Dataset's categorical features differ from the "
                                 "training set's")
            X = self.X
            recode = [j for j in np.flatnonzero(self.categorical)
                      if self.levels[j] is not None]
            if recode:
                X = X.copy()
                for j in recode:
                    X[:, j] = translate(X[:, j], self.levels[j], mapper.levels_[j], j)
            self._as_valid = (mapper, mapper.transform(X, n_threads, "engine"))
        return self._as_valid[1]

    def training_matrix(self, max_bins: int, seed: np.random.SeedSequence,
                        n_threads: int, min_samples_bin: int = 1
                        ) -> Tuple[BinMapper, np.ndarray]:
        """``(mapper, X_binned)`` of this training set: borders computed on the rows of
        positive weight (at most 200,000 drawn from the fit's ``"binning"`` stream) and the
        uint8 (n_features, n_rows) matrix; cached per ``(max_bins, min_samples_bin,
        seed)``."""
        key = (int(max_bins), int(min_samples_bin), seed.entropy, tuple(seed.spawn_key))
        if self._as_training is None or self._as_training[0] != key:
            w = self.sample_weight
            X = self.X if w is None else (
                self.X.rows(w > 0) if isinstance(self.X, Columns) else self.X[w > 0])
            mapper = BinMapper(max_bins, min_samples_bin=min_samples_bin).fit(
                X, stream_rng(seed, "binning"), n_threads, self.categorical, self.levels)
            self._as_training = (key, mapper, mapper.transform(self.X, n_threads,
                                                                      "engine"))
        return self._as_training[1], self._as_training[2]

    def __repr__(self) -> str:
        n_cat = int(self.categorical.sum())
        return (f"<boostlib.Dataset: {self.n_rows} rows x {self.n_features} features"
                f"{f' ({n_cat} categorical)' if n_cat else ''}, {self.X.dtype}"
                f"{', with y' if self.y is not None else ''}"
                f"{', weighted' if self.sample_weight is not None else ''}"
                f"{f', {self.group.size} queries' if self.group is not None else ''}"
                f"{', with init_score' if self.init_score is not None else ''}>")


class BatchDataset(Dataset):
    """A :class:`Dataset` read in batches (:meth:`Dataset.from_batches`): the source of the
    batches, what its first read found (targets, weights, levels), and the rows it holds
    (all, or those of a subset). It bins a batch at a time; it keeps no feature values.
    """

    def __init__(self, source: Any, reader: Any, found: Any, rows: Optional[np.ndarray],
                 y: np.ndarray, sample_weight: Optional[np.ndarray],
                 reference: Optional[Dataset], spill: Optional[str]):
        schema = reader.schema
        self._source, self._reader, self._found = source, reader, found
        #: the source rows this Dataset holds (sorted), None: all of them
        self.rows = rows
        self.y = y
        self.sample_weight = sample_weight
        self.group = None
        self.init_score = None
        self.categorical = schema.categorical
        self.levels = schema.levels
        self.feature_names = schema.names
        self.reference = reference
        self.spill = spill
        self._as_training: Optional[Tuple[Any, BinMapper, np.ndarray]] = None
        self._as_valid: Optional[Tuple[BinMapper, np.ndarray]] = None

    @property
    def X(self) -> Any:
        raise AttributeError("a Dataset read in batches (Dataset.from_batches) keeps no "
                             "feature values, only their bins: read the batches again for them")

    @property
    def n_rows(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_features(self) -> int:
        return int(self._reader.n_features)

    def subset(self, rows: np.ndarray) -> "Dataset":
        """The Dataset of the given rows (sorted row numbers), read from the same batches:
        it bins as a Dataset of those rows would (borders from those rows)."""
        rows = np.asarray(rows, dtype=np.intp)
        if rows.ndim != 1 or not rows.size or rows[0] < 0 or rows[-1] >= self.n_rows \
                or np.any(np.diff(rows) <= 0):
            raise ValueError(f"rows must be increasing row numbers in [0, {self.n_rows}), at "
                             "least one (the batches are read in order)")
        source_rows = rows if self.rows is None else self.rows[rows]
        weight = None if self.sample_weight is None else \
            check_sample_weight(self.sample_weight[rows], rows.size)
        return BatchDataset(self._source, self._reader, self._found, source_rows,
                            self.y[rows], weight, None, self.spill)

    def binned(self, mapper: BinMapper, n_threads: int) -> np.ndarray:
        if self._as_valid is None or self._as_valid[0] is not mapper:
            if not np.array_equal(mapper.categorical_, self.categorical):
                raise ValueError("this Dataset's categorical features differ from the "
                                 "training set's")
            self._as_valid = None           # free the last one first
            self._as_valid = (mapper, _batches.bin_batches(
                self._source, self._reader, self._found, self.rows, mapper, n_threads,
                self.spill))
        return self._as_valid[1]

    def training_matrix(self, max_bins: int, seed: np.random.SeedSequence,
                        n_threads: int, min_samples_bin: int = 1
                        ) -> Tuple[BinMapper, np.ndarray]:
        key = (int(max_bins), int(min_samples_bin), seed.entropy, tuple(seed.spawn_key))
        if self._as_training is None or self._as_training[0] != key:
            self._as_training = None        # free the last one first
            mapper = _batches.fit_mapper(self._source, self._reader, self._found, self.rows,
                                         self.sample_weight, max_bins, min_samples_bin,
                                         stream_rng(seed, "binning"), n_threads)
            self._as_training = (key, mapper, _batches.bin_batches(
                self._source, self._reader, self._found, self.rows, mapper, n_threads,
                self.spill))
        return self._as_training[1], self._as_training[2]

    def __repr__(self) -> str:
        n_cat = int(self.categorical.sum())
        return (f"<boostlib.Dataset from batches: {self.n_rows} rows x {self.n_features} "
                f"features{f' ({n_cat} categorical)' if n_cat else ''}"
                f"{', weighted' if self.sample_weight is not None else ''}"
                f"{', binned' if self._as_training or self._as_valid else ''}>")
