"""The Python examples in README.md run as written."""
import re
import types
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks():
    if not README.exists():
        pytest.skip("README.md is not next to the tests")
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_usage_examples_run():
    blocks = _blocks()
    ns = {}
    exec(compile(blocks[0], "README-usage", "exec"), ns)
    assert ns["clf"].n_trees_ >= 1
    exec(compile("from boostlib import BoostClassifier\n" + blocks[1], "README-sla", "exec"),
         {})
    sglb = next(b for b in blocks if "predict_virtual_ensembles" in b)
    exec(compile(sglb, "README-sglb", "exec"), ns)
    assert ns["members"].shape == (ns["X_test"].shape[0], 10)
    multi = next(b for b in blocks if "multi = BoostClassifier" in b)
    exec(compile(multi, "README-multiclass", "exec"), ns)
    assert list(ns["multi"].classes_) == ["high", "low", "mid"]
    assert ns["multi"].predict_proba(ns["X_test"][:2]).shape == (2, 3)
    engine = next(b for b in blocks if "train_set = Dataset" in b)
    exec(compile(engine, "README-engine", "exec"), ns)
    # the engine example repeats the first example's parameters: the same model
    np.testing.assert_array_equal(ns["proba"], ns["clf"].predict_proba(ns["X_test"])[:, 1])


def test_plugin_example_registers_and_trains():
    from boostlib import BoostRegressor, registry

    plugin_src = next(b for b in _blocks() if "@hookimpl" in b)
    module = types.ModuleType("readme_plugin")
    exec(compile(plugin_src, "README-plugin", "exec"), module.__dict__)
    name = registry.register_plugin(module, "readme_plugin")
    try:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(400, 3))
        y = X[:, 0] + rng.standard_cauchy(400) * 0.1
        m = BoostRegressor(loss="pseudo_huber", n_estimators=30, random_state=0).fit(X, y)
        assert np.corrcoef(m.predict(X), X[:, 0])[0, 1] > 0.9
    finally:
        registry.unregister_plugin(name)


def test_plugin_example_passes_check_loss():
    """The README's plugin loss passes boostlib.testing.check_loss, and the README shows
    the check (a loss that ignored its row weights in init_raw once failed it)."""
    from boostlib.testing import check_loss

    blocks = _blocks()
    ns = {}
    exec(compile(next(b for b in blocks if "@hookimpl" in b), "README-plugin", "exec"), ns)
    shown = next(b for b in blocks if "check_loss(" in b)
    exec(compile(shown, "README-check-loss", "exec"), ns)     # raises on a failed check
    for delta in (0.05, 1.0, 10.0):
        check_loss(ns["PseudoHuber"](delta=delta))
    rng = np.random.default_rng(1)
    y = rng.normal(size=101)
    w = rng.uniform(0.1, 3.0, size=101)
    start = ns["PseudoHuber"]().init_raw(y, w)     # a weighted median: half the weight below
    assert w[y < start].sum() < 0.5 * w.sum() <= w[y <= start].sum()
