"""Every place in ``src/`` that can turn bytes into running code is listed in FAULTS.md with how it is
guarded (issue 30): an AST scan finds the calls; a new one (or one gone) fails here until the table
"Code from files" in FAULTS.md says what guards it.

Sinks: ``marshal.load(s)``; ``pickle``/``dill``/``cloudpickle``/``joblib`` ``load(s)`` and
``Unpickler`` (also subclassed); builtin ``eval``/``exec``/``__import__``; ``types.FunctionType``
(a code object made a function); ``yaml.load``/``load_all``/``full_load``/``unsafe_load``;
``np.load`` with ``allow_pickle`` other than ``False``; ``torch.load`` without ``weights_only=True``;
``importlib.import_module`` of a name that is not a literal.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "arignote"
_PICKLERS = {"pickle", "cPickle", "dill", "cloudpickle", "joblib"}
_YAML_LOADS = {"load", "load_all", "full_load", "full_load_all", "unsafe_load", "unsafe_load_all"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_const(node: ast.AST | None, value: object) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def _is_unpickler(base: ast.AST) -> bool:
    name = _dotted(base)
    return name.split(".")[0] in _PICKLERS and name.endswith("Unpickler")


def sink_of(call: ast.Call) -> str | None:
    """The sink a call is, or None."""
    name = _dotted(call.func)
    head, _, attr = name.rpartition(".")
    if head == "marshal" and attr in ("load", "loads"):
        return f"marshal.{attr}"
    if head in _PICKLERS and attr in ("load", "loads", "Unpickler"):
        return f"{head}.{attr}"
    if name in ("eval", "exec", "__import__"):
        return name
    if name in ("types.FunctionType", "FunctionType"):
        return "types.FunctionType"
    if head == "yaml" and attr in _YAML_LOADS:
        loader = _keyword(call, "Loader")
        return f"yaml.{attr}(Loader={_dotted(loader) or '?'})"
    if name in ("np.load", "numpy.load") and not _is_const(_keyword(call, "allow_pickle"), False) \
            and _keyword(call, "allow_pickle") is not None:
        return "np.load(allow_pickle=True)"
    if name == "torch.load" and not _is_const(_keyword(call, "weights_only"), True):
        return "torch.load(weights_only=False)"
    if name == "importlib.import_module" and call.args and not isinstance(call.args[0], ast.Constant):
        return "importlib.import_module(a computed name)"
    return None


def scan(root: Path = SRC) -> set[tuple[str, str, str]]:
    """``(file under src/arignote, enclosing function or class, sink)`` for every sink in ``root``."""
    found: set[tuple[str, str, str]] = set()
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(root).as_posix()

        def visit(node: ast.AST, where: str, rel: str = rel) -> None:
            for child in ast.iter_child_nodes(node):
                inner = where
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    inner = f"{where}.{child.name}" if where else child.name
                if isinstance(child, ast.ClassDef) and any(_is_unpickler(b) for b in child.bases):
                    found.add((rel, inner, "pickle.Unpickler (subclassed)"))
                if isinstance(child, ast.Call) and (sink := sink_of(child)):
                    found.add((rel, where or "<module>", sink))
                visit(child, inner)

        visit(tree, "")
    return found


def documented() -> set[tuple[str, str, str]]:
    """The rows of FAULTS.md's table under "## Code from files": `file` | `function` | `sink` | guard."""
    text = (ROOT / "FAULTS.md").read_text(encoding="utf-8")
    section = text.split("## Code from files", 1)[1].split("\n## ", 1)[0]
    rows = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0].startswith("`") and cells[3]:
            rows.add(tuple(re.sub(r"^`|`$", "", c) for c in cells[:3]))
    return rows


def test_the_scan_finds_each_kind_of_sink(tmp_path):
    (tmp_path / "bad.py").write_text(
        "import marshal, pickle, yaml, numpy as np, torch, importlib, types\n"
        "def a(b): return marshal.loads(b)\n"
        "def b(b): return pickle.loads(b)\n"
        "class C(pickle.Unpickler): pass\n"
        "def d(s): eval(s); exec(s)\n"
        "def e(s): return yaml.load(s, Loader=yaml.Loader)\n"
        "def f(p): return np.load(p, allow_pickle=True), np.load(p), np.load(p, allow_pickle=False)\n"
        "def g(p): return torch.load(p), torch.load(p, weights_only=True)\n"
        "def h(n): return importlib.import_module(n), importlib.import_module('json')\n"
        "def i(c): return types.FunctionType(c, {})\n"
        "def j(m): return m.eval()\n")
    assert scan(tmp_path) == {
        ("bad.py", "a", "marshal.loads"), ("bad.py", "b", "pickle.loads"),
        ("bad.py", "C", "pickle.Unpickler (subclassed)"), ("bad.py", "d", "eval"), ("bad.py", "d", "exec"),
        ("bad.py", "e", "yaml.load(Loader=yaml.Loader)"), ("bad.py", "f", "np.load(allow_pickle=True)"),
        ("bad.py", "g", "torch.load(weights_only=False)"),
        ("bad.py", "h", "importlib.import_module(a computed name)"), ("bad.py", "i", "types.FunctionType"),
    }


def test_every_path_to_running_code_is_listed_in_faults_md_with_its_guard():
    found, listed = scan(), documented()
    new = sorted(found - listed)
    gone = sorted(listed - found)
    assert not new, ("new ways to run code from data in src/ (add each to FAULTS.md, 'Code from files', "
                     "with how it is guarded):\n" + "\n".join(" | ".join(r) for r in new))
    assert not gone, "FAULTS.md lists sinks that are gone (delete their rows):\n" + "\n".join(
        " | ".join(r) for r in gone)
