"""Models that training accepts save and load back (``docs/reliability.md``)."""
from __future__ import annotations

import numpy as np

from boostlib import BoostRegressor, load_model


def test_trees_of_many_categorical_splits_save_and_load(tmp_path):
    """A leaf-wise tree of more than 256 categorical splits names sets beyond 255 (a split's
    ``bin`` is the index of its set): the loader held every ``bin`` to 255, so such a model
    trained, and could not be saved."""
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 250, size=(3000, 2))
    effect = rng.normal(size=(2, 250))
    y = effect[0][codes[:, 0]] * effect[1][codes[:, 1]]
    model = BoostRegressor(n_estimators=1, grow_policy="lossguide", max_leaves=3000,
                           max_depth=30, categorical_features=[0, 1], min_data_per_group=1,
                           cat_smooth=0.0, cat_l2=0.0, max_cat_threshold=255,
                           random_state=0).fit(codes.astype(float), y)
    tree = model.model_.ensemble.trees[0]
    assert tree.cat_sets.shape[0] > 256
    model.save_model(tmp_path / "m.json")
    X = codes.astype(float)
    assert np.array_equal(load_model(tmp_path / "m.json").predict(X), model.predict(X))
