"""Training and validation data, validated once and binned once."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

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
    y : array-like of shape (n_rows,), optional
        Numeric targets (class indices for classification losses). Needed for training and
        validation sets.
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
