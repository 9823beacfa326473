"""The package's import graph: no circles, and function-level imports only where they say why.

Every ``import``/``from ... import`` of an ``arignote`` module, at any depth of a file (a function-level
import is still a dependency), is an edge; a strongly connected component of more than one module
is an import circle. Imports of a package's own ``__init__`` from inside the package count too
(``from arignote.layers import Dense`` inside ``arignote.layers.conv``), because that is how a
circle through a re-exporting ``__init__`` starts.

A function-level import of an arignote module must carry a comment on its line or the line above
saying why it is there (a heavy optional dependency, a plugin loaded on demand, import time).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules() -> dict[str, Path]:
    mods = {}
    for path in (SRC / "arignote").rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


def _targets(node: ast.AST, package: str, mods: dict[str, Path]) -> list[str]:
    """What an import statement depends on: ``from p import m`` of a submodule ``m`` depends on ``p.m``
    (the parent package's ``__init__`` runs for any submodule import, so it is not counted), of a name
    on ``p`` itself."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        return [f"{module}.{a.name}" if f"{module}.{a.name}" in mods else module for a in node.names]
    return []


def import_graph() -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """(module -> arignote modules it imports, [(module, line, target) of function-level imports])."""
    mods = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    local: list[tuple[str, int, str]] = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        top_level = {id(n) for n in tree.body} | {id(n) for stmt in tree.body if isinstance(stmt, ast.If)
                                                   for n in stmt.body}
        for node in ast.walk(tree):
            for target in _targets(node, package, mods):
                if not target.startswith("arignote"):
                    continue
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
                    if id(node) not in top_level:
                        local.append((name, node.lineno, target))
    return edges, local


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


# The floors of docs/architecture.md: a module may import its own floor and the floors below, never
# one above. Keys are the first name under arignote (a module or a package); "arignote" is the
# package's own __init__.
FLOORS = {
    # 0 ground: plain data, errors and helpers that import nothing of arignote
    "errors": 0, "sizes": 0, "_version": 0, "random_state": 0, "_lazy": 0, "_moved": 0, "legacy": 0,
    "atomic_file": 0,
    # 1 machine: the devices as they are (no flag read), atomic files
    "devices": 1, "checkpoint": 1,
    # 2 settings: the one flag registry, its parsers, the safe-mode switch, Keras's object rules
    "config": 2, "_keras_objects": 2,
    # 3 process: K's settings and face, the symbolic core, leases, data parallel
    "backend": 3, "graph": 3, "share": 3, "parallel": 3,
    # 4 runtime: the flags applied to the devices; Keras modules that need only K's face
    "runtime": 4, "activations": 4, "initializers": 4, "regularizers": 4, "constraints": 4, "optimizers": 4,
    "datasets": 4,
    # 5 layers: Keras's layer contract and built-in layers (and keras.legacy.layers's face over them)
    "layers": 5, "legacy.layers": 5,
    # 6 numerics: K's operations, losses below metrics, utils, preprocessing
    "ops": 6, "losses": 6, "utils": 6, "metrics": 6, "preprocessing": 6,
    # 7 engine: callbacks, file formats, the training loop, diagnostics
    "callbacks": 7, "saving": 7, "training": 7, "diagnostics": 7,
    # 8 models: what users build, fit and export
    "models": 8, "engine": 8, "wrappers": 8, "applications": 8, "export": 8,
    # 9 tools and entry points: nothing below imports them
    "monitor": 9, "dash": 9, "bench": 9, "commands": 9, "cli": 9, "__main__": 9, "arignote": 9,
}

# Upward imports, each with its reason: the test fails on any new one and when one of these is gone.
KNOWN_UPWARD: set[tuple[str, str]] = {
    # K's face (floor 3, light: no torch at import) names its operations in one lazy table; the
    # operations sit above layers/ because a symbolic call builds an OpLayer (LAYOUT.md, "left for later")
    ("arignote.backend", "arignote.ops.tensor"), ("arignote.backend", "arignote.ops.nn"),
    ("arignote.backend", "arignote.ops.control"), ("arignote.backend", "arignote.ops.function"),
    # Keras 2.3.1's Layer.add_metric(value, name) makes a metrics.Mean (its base_layer imports
    # keras.metrics inside add_metric too): loaded by the first add_metric only
    ("arignote.layers.added_metrics", "arignote.metrics.base"),
}


def floor_of(module: str) -> int:
    """The floor of the longest FLOORS key that ``module`` (without ``arignote.``) starts with: a
    package's floor, or a module's own where one face module of a package stands higher."""
    parts = module.split(".")[1:]
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in FLOORS:
            return FLOORS[".".join(parts[:n])]
    key = parts[0] if parts else "arignote"
    if key not in FLOORS:
        raise AssertionError(f"{module}: put '{key}' on a floor in FLOORS (tests/test_import_graph.py) "
                             "and in docs/architecture.md")
    return FLOORS[key]


def upward_imports(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(m, t) for m, targets in edges.items() for t in targets if floor_of(t) > floor_of(m)}


def _is_lazy_face(tree: ast.AST) -> bool:
    """A module that imports by name on first use: it calls ``lazy_namespace`` or its ``__getattr__``
    calls ``import_module``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _dotted(node.func).endswith("lazy_namespace"):
            return True
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__" and any(isinstance(
                n, ast.Call) and _dotted(n.func).endswith("import_module") for n in ast.walk(node)):
            return True
    return False


def lazy_edges() -> dict[str, set[str]]:
    """The string imports as edges: each lazy face's ``_LAZY_TARGETS`` table (``_lazy.lazy_namespace``
    users, backend's ``_LAZY``, devices' ``_NAMES``, the package's ``_LAZY``/``_SUBMODULES``) and every
    ``import_module("arignote....")`` with a literal name."""
    import importlib

    mods = _modules()
    edges: dict[str, set[str]] = defaultdict(set)

    def add(source: str, target: str) -> None:
        while target and target not in mods:
            target = target.rpartition(".")[0]
        if target and target != source:
            edges[source].add(target)

    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if _is_lazy_face(tree) and name != "arignote._lazy":  # (the helper itself)
            table = getattr(importlib.import_module(name), "_LAZY_TARGETS", None)
            assert isinstance(table, dict) and table, f"{name}: a lazy face keeps its table as _LAZY_TARGETS"
            for target in table.values():
                add(name, target)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _dotted(node.func).endswith("import_module") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and str(first.value).startswith("arignote."):
                    add(name, first.value)
    return edges


def all_edges() -> dict[str, set[str]]:
    """Import statements (any depth) and string imports together."""
    edges, _ = import_graph()
    merged: dict[str, set[str]] = defaultdict(set)
    for source in set(edges) | set(lazy := lazy_edges()):
        merged[source] = set(edges.get(source, ())) | lazy.get(source, set())
    return merged


def unit_of(module: str) -> str:
    """The FLOORS unit of a module: its top-level package or module, or a face module with a floor of
    its own (``legacy.layers``, Keras's ``keras.legacy.layers`` over ``layers/``)."""
    parts = module.split(".")[1:]
    for n in range(len(parts), 1, -1):
        if ".".join(parts[:n]) in FLOORS:
            return ".".join(parts[:n])
    return parts[0] if parts else "arignote"


def package_loops(edges: dict[str, set[str]]) -> list[list[str]]:
    """Loops between units (a package, a module at the top, a face with its own floor): LAYOUT.md's
    measure, with FLOORS's units."""
    top = unit_of

    rooms: dict[str, set[str]] = defaultdict(set)
    for m, targets in edges.items():
        for t in targets:
            if top(m) != top(t):
                rooms[top(m)].add(top(t))
    return circles(rooms)


def test_no_loops_between_packages():
    """Every package on one floor: no two top-level units import each other, through any modules
    (string imports included; each KNOWN_UPWARD entry says why it may close a loop)."""
    edges = all_edges()
    kept = {m: {t for t in ts if (m, t) not in KNOWN_UPWARD} for m, ts in edges.items()}
    assert package_loops(kept) == []
    assert package_loops({"arignote.a.x": {"arignote.b.y"}, "arignote.b.z": {"arignote.a"}}) == [["a", "b"]]
    assert package_loops({"arignote.legacy.layers": {"arignote.layers.x"}, "arignote.layers.y": {
        "arignote.legacy.conversions"}}) == []


def test_lazy_tables_are_read_as_edges():
    lazy = lazy_edges()
    assert "arignote.ops.tensor" in lazy["arignote.backend"]
    assert "arignote.callbacks.base" in lazy["arignote.callbacks"]
    assert "arignote.runtime.memory" in lazy["arignote"]
    assert "arignote.devices.inventory" in lazy["arignote.devices"]
    assert "arignote.models.loading" in lazy["arignote.models.weights_and_saving"]  # a literal import_module


# what may stand at the top of src/arignote (issue 33 item 4: at most 20), and why
TOP_LEVEL = {
    "__init__": "the package face", "__main__": "python -m arignote", "cli": "the command line's entry",
    "_version": "ground", "errors": "ground", "sizes": "ground", "random_state": "ground",
    "_lazy": "ground: lazy package namespaces", "_moved": "ground: old module names, one release",
    "atomic_file": "ground: the one atomic file writer",
    "checkpoint": "machine floor: atomic checkpoint files", "_keras_objects": "Keras's object rules",
    "activations": "Keras 2", "initializers": "Keras 2", "regularizers": "Keras 2", "constraints": "Keras 2",
    "monitor": "arignote.monitor (smi's views), public",
}


def test_at_most_twenty_modules_stand_at_the_top():
    top = {p.stem for p in (SRC / "arignote").glob("*.py")}
    new, gone = sorted(top - set(TOP_LEVEL)), sorted(set(TOP_LEVEL) - top)
    assert not new and not gone, f"a module at the top belongs in a package: new {new}, gone {gone}"
    assert len(top) <= 20


def test_devices_read_no_flag():
    """The machine knows no flags: runtime/ reads them and calls down into devices/."""
    edges = all_edges()
    readers = sorted(m for m, ts in edges.items() if m.startswith("arignote.devices") and any(
        t.startswith("arignote.config") for t in ts))
    assert readers == []


def test_the_checker_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles():
    edges, _ = import_graph()
    found = circles(edges)
    assert not found, "import circles (break each by moving the shared piece down a floor):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_no_module_imports_a_floor_above_its_own():
    found = upward_imports(all_edges())
    new = sorted(found - KNOWN_UPWARD)
    assert not new, "imports of a higher floor (docs/architecture.md, 'Floors'):\n" + "\n".join(
        f"{m} -> {t} (floor {floor_of(m)} -> {floor_of(t)})" for m, t in new)
    assert not KNOWN_UPWARD - found, f"gone, delete from KNOWN_UPWARD: {sorted(KNOWN_UPWARD - found)}"


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def _torch_apis(tree: ast.AST) -> set[str]:
    """The :data:`TORCH_API_HOMES` APIs (``torch.cuda``, ``torch.backends.cudnn``, ...) the module uses."""
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Attribute):
            names = [_dotted(node)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            for api in TORCH_API_HOMES:
                if name == api or name.startswith(api + "."):
                    found.add(api)
    return found


# the rule per folder (docs/architecture.md): who may call which torch API
TORCH_API_HOMES = {"torch.cuda": {"arignote.devices.cuda"}, "torch.backends.cudnn": {"arignote.devices.cuda"},
                   "torch.backends.cuda": {"arignote.devices.cuda"},  # cuBLAS/TF32/SDPA switches
                   "torch.distributed": {"arignote.parallel"}}


def test_torch_cuda_only_in_devices_cuda_and_torch_distributed_only_in_parallel():
    wrong = []
    for name, path in _modules().items():
        for api in _torch_apis(ast.parse(path.read_text(encoding="utf-8"))):
            if not any(name == home or name.startswith(home + ".") for home in TORCH_API_HOMES[api]):
                wrong.append(f"{name} uses {api} (only {', '.join(sorted(TORCH_API_HOMES[api]))} may)")
    assert not wrong, "\n".join(sorted(wrong))
    sample = "import torch\ntorch.cuda.synchronize()\nfrom torch import distributed"
    assert _torch_apis(ast.parse(sample)) == {"torch.cuda", "torch.distributed"}


# what `arignote smi`, `dash`, `config` and the flag registry load: no torch at import, all the way down
TORCH_FREE = ["arignote", "arignote.config", "arignote.devices", "arignote.devices.info",
              "arignote.devices.order", "arignote.devices.spec", "arignote.devices.nvml",
              "arignote.devices.identity", "arignote.devices.snapshot", "arignote.devices.banner",
              "arignote.atomic_file", "arignote.runtime.memory", "arignote.share", "arignote.monitor",
              "arignote.dash", "arignote.cli"]


def _top_level_graph() -> tuple[dict[str, set[str]], set[str]]:
    """(module -> arignote modules imported at module level, modules importing torch at module level)."""
    mods = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    with_torch = set()
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        body = list(tree.body) + [n for stmt in tree.body if isinstance(stmt, ast.If) for n in stmt.body]
        for node in body:
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "torch" for a in node.names):
                with_torch.add(name)
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
                with_torch.add(name)
            for target in _targets(node, package, mods):
                while target.startswith("arignote") and target not in mods:
                    target = target.rpartition(".")[0]
                if target.startswith("arignote") and target != name:
                    edges[name].add(target)
                    # importing a.b.c runs the __init__ of a and a.b first
                    parts = target.split(".")
                    parents = {".".join(parts[:k]) for k in range(1, len(parts))}
                    edges[name].update(parents - {name})
    return edges, with_torch


def test_the_torch_free_modules_import_no_torch_all_the_way_down():
    edges, with_torch = _top_level_graph()
    for start in TORCH_FREE:
        seen, todo, via = {start}, [start], {start: None}
        while todo:
            m = todo.pop()
            for t in edges.get(m, ()):
                if t not in seen:
                    seen.add(t)
                    via[t] = m
                    todo.append(t)
        bad = sorted(seen & with_torch)
        if bad:
            chain, m = [], bad[0]
            while m is not None:
                chain.append(m)
                m = via[m]
            raise AssertionError(f"{start} loads torch at import: " + " <- ".join(chain))


def test_the_training_loop_imports_only_the_fault_hook_from_diagnostics():
    """diagnostics/ looks at training from the outside: the loop's one use of it is OOM injection."""
    edges, _ = import_graph()
    used = {t for m, targets in edges.items() if m.startswith("arignote.training") for t in targets
            if t.startswith("arignote.diagnostics")}
    assert not used, sorted(used)


def test_the_floors_table_of_the_architecture_doc_is_this_one():
    import re

    doc = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    shown = {}
    for floor, cells in re.findall(r"^\| (\d) \w+ \| ([^|]+) \|", doc, flags=re.MULTILINE):
        for name in re.findall(r"`([\w_]+(?:/[\w_]+\.py)?)/?`", cells):
            name = name.removesuffix(".py").replace("/", ".")
            shown[name] = int(floor)
    shown["arignote"] = shown.pop("__init__", FLOORS["arignote"])  # "the package `__init__`"
    assert shown == FLOORS


def test_the_floor_check_finds_an_upward_import():
    assert upward_imports({"arignote.config": {"arignote.layers.core", "arignote.errors"}}) == {
        ("arignote.config", "arignote.layers.core")}


def _says_why(lines: list[str], i: int) -> bool:
    """A comment on line ``i`` itself, or on the line above the block of import lines it belongs to
    (blank lines between isort's sections do not end a block)."""
    if "#" in lines[i]:
        return True
    while i > 0 and (not lines[i - 1].strip() or lines[i - 1].strip().startswith(("from ", "import "))):
        i -= 1
    return i > 0 and lines[i - 1].strip().startswith("#")


def test_a_comment_above_a_group_of_imports_covers_the_group():
    lines = ["def f():", "    # torch: kept off the CLI's start", "    import torch", "",
             "    from a import b", "    x = 1", "    from c import d"]
    assert [_says_why(lines, i) for i in (2, 4, 6)] == [True, True, False]


def test_function_level_imports_say_why():
    _, local = import_graph()
    mods = _modules()
    unexplained = []
    for module, line, target in local:
        path = mods[module]
        lines = path.read_text(encoding="utf-8").splitlines()
        if not _says_why(lines, line - 1):
            unexplained.append(f"{path.relative_to(SRC)}:{line} imports {target}")
    assert not unexplained, ("function-level imports without a comment saying why "
                             f"({len(unexplained)}):\n" + "\n".join(unexplained[:40]))


def test_the_version_is_pyprojects():
    import re

    from arignote._version import __version__

    text = (SRC.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^version = "([^"]+)"', text, flags=re.MULTILINE).group(1) == __version__


def test_arignote_help_loads_neither_torch_nor_numpy():
    """Every command module is imported for ``arignote --help``: what they import at the top must
    stay light; the heavy imports are the function-level ones that say so."""
    import subprocess
    import sys

    code = ("import sys; from arignote import cli; cli.build_parser(); "
            "print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _named_in_doc(doc: str) -> set[str]:
    """The arignote modules and files docs/architecture.md names: ``arignote.x.y`` (a module, or a name
    in one) and ``dir/file.py`` paths (under src/arignote, or the repository's own)."""
    import re

    names = set(re.findall(r"\barignote(?:\.\w+)+", doc))
    for a, b in re.findall(r"`((?:\w+/)*\w+\.py)(?:::\w+)?`|\(((?:\w+/)+\w+\.py)", doc):
        path = (a or b).removeprefix("arignote/")
        if not path.startswith("keras/"):  # Keras 2's own files, named for comparison
            names.add(path)
    return names


def _exists(name: str) -> bool:
    root = SRC / "arignote"
    if name.endswith(".py"):
        return (root / name).exists() or (SRC.parent / name).exists() or (
            "/" not in name and any(root.rglob(name)))
    import re

    parts = name.split(".")[1:]
    for n in range(len(parts), 0, -1):
        for path in ((root / Path(*parts[:n])).with_suffix(".py"), root / Path(*parts[:n]) / "__init__.py"):
            if path.exists():  # the module, or a name its source defines or imports
                source = path.read_text(encoding="utf-8")
                return n == len(parts) or bool(re.search(rf"\b{parts[n]}\b", source))
    return False


def test_every_module_the_architecture_doc_names_exists():
    doc = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = _named_in_doc(doc)
    assert len(named) > 50
    assert sorted(n for n in named if not _exists(n)) == []
    assert not _exists("no_such_file.py") and not _exists("arignote.no_such_module")
    assert not _exists("arignote.layers._no_such") and _exists("arignote.layers.Dense")
