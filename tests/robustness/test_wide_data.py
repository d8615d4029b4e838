"""Wide sparse input: a column that cannot split costs nothing (issue 54).

A fit on 2,000 rows x 1,000,000 columns holding 40,000 values once took 10.8 GB: the
grower and the binning sized buffers by the columns (the symmetric search's gain sums,
``(n_columns, 2, 256)`` float64, died under a 6 GB cap). Here a fit of 200,000 columns, all
but 5,000 of them empty, runs in a child process whose address space may grow by
:data:`HEADROOM` only: 2.6 KB a column would exceed it.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

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
    pytest.importorskip("scipy.sparse")
    proc = subprocess.run([sys.executable, "-c", _CHILD, policy, str(HEADROOM), ROOT],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, f"the child process died: {proc.stderr[-3000:]}"
    result = json.loads(lines[-1])
    assert result == {"outcome": "fitted", "importances": 200_000}
