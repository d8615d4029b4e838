"""Wide sparse input: a column that cannot split costs nothing, and a wide model saves and
loads (issue 54).

A fit on 2,000 rows x 1,000,000 columns holding 40,000 values once took 10.8 GB: the
grower and the binning sized buffers by the columns (the symmetric search's gain sums,
``(n_columns, 2, 256)`` float64, died under a 6 GB cap). Here a fit of 200,000 columns, all
but 5,000 of them empty, runs in a child process whose address space may grow by
:data:`HEADROOM` only: 2.6 KB a column would exceed it.
"""
import base64
import json
import os
import subprocess
import sys
import textwrap
import time
import tracemalloc
from typing import Any, Callable

import numpy as np
import pytest

from optional_imports import importorskip

from boostlib import BoostClassifier, BoostRegressor, Model, ModelFileError, load_model
from boostlib.io.model_files import encode, model_document, parse

from .test_model_file_mutations import LOAD_MEMORY_CONSTANT, LOAD_MEMORY_FACTOR

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: address space a fit may add to the child's, once numpy, scipy and boostlib are imported
HEADROOM = 512 << 20

_CHILD = textwrap.dedent("""
    import json, resource, sys, traceback
    policy, headroom, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    sys.path.insert(0, root)
    import numpy as np
    import scipy.sparse as sp
    from boostlib import BoostClassifier
    rng = np.random.default_rng(0)
    n_rows, n_columns, n_values = 1_000, 200_000, 10_000
    columns = rng.integers(0, 5_000, n_values) * (n_columns // 5_000)
    X = sp.csr_matrix((rng.integers(1, 4, n_values).astype(float),
                       (rng.integers(0, n_rows, n_values), columns)),
                      shape=(n_rows, n_columns))
    y = (X[:, 0].toarray().ravel() + rng.random(n_rows) > 1).astype(int)
    size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
                if line.startswith("VmSize"))
    resource.setrlimit(resource.RLIMIT_AS, (size + headroom, size + headroom))
    result = {}
    try:
        model = BoostClassifier(grow_policy=policy, n_estimators=5, n_jobs=2).fit(X, y)
        result["outcome"] = "fitted"
        result["importances"] = model.feature_importances_.size
    except MemoryError as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        result["outcome"] = f"MemoryError at {where.filename}:{where.lineno}: {where.line}"
    print(json.dumps(result))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.parametrize("policy", ["symmetric", "depthwise", "lossguide"])
def test_wide_sparse_fit_takes_memory_by_stored_values(policy):
    importorskip("scipy.sparse")
    proc = subprocess.run([sys.executable, "-c", _CHILD, policy, str(HEADROOM), ROOT],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, f"the child process died: {proc.stderr[-3000:]}"
    result = json.loads(lines[-1])
    assert result == {"outcome": "fitted", "importances": 200_000}


# -- saving and loading a wide model -----------------------------------------------------------
def _wide_sparse(n_rows: int, n_columns: int, n_values: int):
    """A CSR matrix of ``n_values`` values in ``[1, 3]`` at random places, and a binary
    target that depends on its first 50 columns."""
    sp = importorskip("scipy.sparse")
    rng = np.random.default_rng(0)
    X = sp.csr_matrix((rng.integers(1, 4, n_values).astype(float),
                       (rng.integers(0, n_rows, n_values), rng.integers(0, n_columns, n_values))),
                      shape=(n_rows, n_columns))
    y = (np.asarray(X[:, :50].sum(axis=1)).ravel() + rng.random(n_rows) > 1).astype(int)
    return X, y


def _load_measured(load: Callable[[Any], Any], path: Any) -> Any:
    """``load(path)``, checking that it allocates at most what the mutation test allows a
    file of its size (tracemalloc)."""
    size = os.path.getsize(path)
    tracemalloc.start()
    try:
        model = load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= LOAD_MEMORY_FACTOR * size + LOAD_MEMORY_CONSTANT, \
        f"loading a file of {size} bytes allocated {peak} bytes at its peak"
    return model


def test_wide_sparse_model_saves_and_loads(tmp_path):
    """Every model training gives saves (issue 54): one of 200,000 columns, nearly all
    without a border, was refused (more features than ``MAX_EMPTY_TABLE`` allowed for its
    borders). Its borders are now two binary blocks, read without an object per feature, in
    memory in proportion to the file. (At 1,000,000 columns: saved in 0.4 s, a 5.5 MB file
    loaded in 0.5 s.)"""
    X, y = _wide_sparse(2_000, 200_000, 40_000)
    model = BoostClassifier(n_estimators=5, n_jobs=2, random_state=0).fit(X, y)
    assert model.feature_importances_.size == 200_000
    path = tmp_path / "wide.json"
    model.save_model(path)
    loaded = _load_measured(load_model, path)
    assert np.array_equal(loaded.predict_proba(X), model.predict_proba(X))
    assert np.array_equal(loaded.decision_function(X), model.decision_function(X))
    borders, again = model.model_.ensemble.bin_mapper, loaded.model_.ensemble.bin_mapper
    for table, other in zip(borders.border_table(), again.border_table()):
        assert np.array_equal(table, other)


def _many_features(n_features: int, offsets: np.ndarray) -> dict:
    """A small model's document claiming ``n_features`` features of no border, its
    ``bins.offsets`` block holding ``offsets``."""
    X, y = _wide_sparse(200, 50, 400)
    doc = model_document(BoostRegressor(n_estimators=2, random_state=0).fit(
        X.toarray(), y).model_)
    doc.update(n_features=n_features, feature_names=None)
    doc["bins"].update(offsets=base64.b64encode(offsets.astype("<i4").tobytes()).decode(),
                       borders="")
    doc["model"]["trees"] = doc["model"]["coefficients"] = []
    doc["model"]["scale_history"] = None
    return doc


def test_features_without_borders_cost_the_loader_in_proportion_to_the_file(tmp_path):
    """A file of 1,000,000 features without borders (5 MB) loads, within the memory the
    mutation test allows a file of its size; before format 6, a 13 MB file of 4,000,000
    such features took 76 s and 1.5 GB to load."""
    doc = _many_features(1_000_000, np.zeros(1_000_001))
    path = tmp_path / "model.json"
    path.write_text(encode(doc))
    start = time.perf_counter()
    model = _load_measured(Model.load, path)
    assert time.perf_counter() - start < 30
    assert model.n_features == 1_000_000
    assert np.all(model.predict(np.zeros((3, 1_000_000))) == model.ensemble.bias)


def test_claimed_features_must_be_backed_by_the_file():
    """``n_features`` claims a feature per 4 bytes of ``bins.offsets``: a small file cannot
    claim 2**31 - 1 features (the size is checked before the block is decoded)."""
    doc = _many_features(2 ** 31 - 1, np.zeros(11))
    with pytest.raises(ModelFileError, match=r"bins\.offsets: has 11 entries; expected "
                                             r"n_features \+ 1 = 2147483648"):
        parse(encode(doc))
