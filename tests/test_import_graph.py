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

import pytest

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


def test_the_checker_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles():
    edges, _ = import_graph()
    found = circles(edges)
    assert not found, "import circles (break each by moving the shared piece down a floor):\n" + "\n".join(
        " <-> ".join(c) for c in found)


@pytest.mark.xfail(strict=True, reason="191 function-level imports still without a comment: issue 17")
def test_function_level_imports_say_why():
    _, local = import_graph()
    mods = _modules()
    unexplained = []
    for module, line, target in local:
        path = mods[module]
        lines = path.read_text(encoding="utf-8").splitlines()
        here, above = lines[line - 1], lines[line - 2] if line > 1 else ""
        if "#" not in here and not above.strip().startswith("#"):
            unexplained.append(f"{path.relative_to(SRC)}:{line} imports {target}")
    assert not unexplained, ("function-level imports without a comment saying why "
                             f"({len(unexplained)}):\n" + "\n".join(unexplained[:40]))
