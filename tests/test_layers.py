"""The package's layers: no import cycles among boostlib's modules, and each layer imports
only the layers below it (see the docstring of ``boostlib/__init__.py``). Every import
counts, at a module's top level or inside a function."""
import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "boostlib")

# layer of each top-level folder or module; a module may import only equal or lower layers.
# The public alias modules (boostlib.api, ...) sit in the layer of the module they re-export.
LAYERS = {"_kernels": 0, "_compat": 0, "_version": 0, "_messages": 0, "plugin": 1, "api": 1,
          "hookspecs": 1, "registry": 1, "builtin": 2, "engine": 2, "callbacks": 2, "io": 3,
          "booster": 4, "datasets": 4, "explain": 5, "export": 5, "frontend": 6, "plotting": 6,
          "testing": 6, "dask": 7, "__main__": 7}


def _modules():
    out = {}
    for folder, _, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                out[rel[:-9] if rel.endswith(".__init__") else rel] = path
    return out


def _type_checking_blocks(tree):
    """The ``if TYPE_CHECKING:`` blocks of ``tree`` (their imports are never executed)."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.If)
            and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"]


def _imports(module, path, modules):
    """The boostlib modules ``module`` imports, at its top level or inside its functions
    (an import inside a function is a dependency too, only a later one), but not under
    ``if TYPE_CHECKING``."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    skipped = {id(n) for block in _type_checking_blocks(tree) for n in ast.walk(block)}
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
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
    return {m: _imports(m, p, modules) for m, p in modules.items()}


def test_no_import_cycles():
    graph = _graph()
    state, cycles = {}, []

    def visit(m, stack):
        state[m] = "open"
        for dep in sorted(graph[m]):
            if state.get(dep) == "open":
                cycles.append(" -> ".join(stack[stack.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep, stack + [dep])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def _layer(module):
    if module == "boostlib":
        return 5         # the package's public face, with the surfaces (its __version__)
    parts = module.split(".")[1:]
    for k in (".".join(parts[:2]), parts[0] if parts else ""):
        if k in LAYERS:
            return LAYERS[k]
    return None          # a module of no layer: the test fails until LAYERS names it


def test_layers_import_only_layers_below():
    bad = []
    for module, deps in _graph().items():
        own = _layer(module)
        if module == "boostlib":
            continue
        if own is None:
            bad.append(f"{module} is in no layer of LAYERS")
        for dep in deps:
            theirs = _layer(dep)
            if own is not None and (theirs is None or theirs > own):
                bad.append(f"{module} (layer {own}) imports {dep} (layer {theirs})")
    assert not bad, "\n".join(bad)


def test_builtin_plugins_and_the_engine_do_not_import_each_other():
    # the built-in plugins use only the plugin interfaces and the kernels, exactly as a
    # third-party plugin would; the engine finds them through the registry, by name
    bad = [f"{m} imports {d}" for m, deps in _graph().items() for d in deps
           if (m.startswith("boostlib.builtin") and d.startswith("boostlib.engine"))
           or (m.startswith("boostlib.engine") and d.startswith("boostlib.builtin"))]
    assert not bad, "\n".join(bad)
