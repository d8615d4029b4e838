"""The package's layers: no import cycles among boostlib's modules, and each layer imports
only the layers below it (see the docstring of ``boostlib/__init__.py``)."""
import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "boostlib")

# layer of each top-level folder or module; a module may import only equal or lower layers
# (engine/model.py, engine/training.py and engine/continuation.py sit above io: they save
# and load through it, or continue a Model)
LAYERS = {"_kernels": 0, "_compat": 0, "plugin": 1, "builtin": 2, "engine": 2, "io": 3,
          "engine.model": 4, "engine.training": 4,
          "engine.continuation": 4, "frontend": 5, "datasets": 5,
          "explain": 5, "export": 5, "dask": 5}


def _modules():
    out = {}
    for folder, _, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                out[rel[:-9] if rel.endswith(".__init__") else rel] = path
    return out


def _top_level_imports(module, path, modules):
    """The boostlib modules ``module`` imports when it is imported (not inside functions,
    nor under ``if TYPE_CHECKING``)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    found = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m in modules and m != module}


def _graph():
    modules = _modules()
    return {m: _top_level_imports(m, p, modules) for m, p in modules.items()}


def test_no_import_cycles():
    graph = _graph()
    state = {}

    def visit(m, stack):
        state[m] = "open"
        for dep in sorted(graph[m]):
            if state.get(dep) == "open":
                cycle = stack[stack.index(dep):] + [dep]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep, stack + [dep])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


def _layer(module):
    if module == "boostlib":
        return 5         # the package's public face, with the surfaces (its __version__)
    parts = module.split(".")[1:]
    for k in (".".join(parts[:2]), parts[0] if parts else ""):
        if k in LAYERS:
            return LAYERS[k]
    return None          # the public alias modules (boostlib.api, ...)


def test_layers_import_only_layers_below():
    bad = []
    for module, deps in _graph().items():
        own = _layer(module)
        if own is None or module == "boostlib":
            continue
        for dep in deps:
            theirs = _layer(dep)
            if theirs is None or theirs > own:
                bad.append(f"{module} (layer {own}) imports {dep} (layer {theirs})")
    assert not bad, "\n".join(bad)


def test_builtin_plugins_and_the_engine_do_not_import_each_other():
    # the built-in plugins use only the plugin interfaces and the kernels, exactly as a
    # third-party plugin would; the engine finds them through the registry, by name
    bad = [f"{m} imports {d}" for m, deps in _graph().items() for d in deps
           if (m.startswith("boostlib.builtin") and d.startswith("boostlib.engine"))
           or (m.startswith("boostlib.engine") and d.startswith("boostlib.builtin"))]
    assert not bad, "\n".join(bad)
