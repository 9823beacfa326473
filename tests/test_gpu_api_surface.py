"""Every GPU-facing torch API arignote names exists in the installed torch, as it is called.

No machine that runs the tests has a GPU, so a misspelt ``torch.cuda.*`` call, a keyword torch does
not take, or a switch that is set but does not exist (``torch.backends.cudnn.benchmarks = True``
silently adds an attribute) would only surface on the first GPU box. This test reads the package's
source with ``ast``, collects every attribute chain under the prefixes in :data:`PREFIXES` (through
``import torch.distributed as dist``, ``from torch import cuda``, ``c = torch.backends.cudnn`` and
function-level imports), and checks on the installed torch:

* the chain resolves (attribute by attribute, importing submodules as torch does lazily); a private
  ``torch._C._cuda_*`` binding, which a CPU build does not compile, must be declared in torch's own
  stub ``torch/_C/__init__.pyi``;
* a call's literal keywords and its number of positional arguments bind to ``inspect.signature``
  (when torch gives one) of what the chain names.

The same holds for the NVML queries (``pynvml.*``, nvidia-ml-py), which also only answer on a
machine with a driver. It also extends the import-graph rule (tests/test_import_graph.py, which now
includes ``torch.backends.cuda``) to the ``torch._C._cuda*`` bindings: only in ``devices/cuda.py``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

SRC = Path(__file__).resolve().parents[1] / "src" / "arignote"
TORCH_STUB = Path(torch.__file__).parent / "_C" / "__init__.pyi"

# the torch namespaces whose misuse only a GPU (or a multi-process job) would reveal
PREFIXES = ("torch.cuda", "torch.backends", "torch.distributed", "torch.amp", "torch.autocast",
            "torch.OutOfMemoryError", "torch._C._cuda", "torch.compiler", "torch._dynamo", "torch._inductor",
            "torch._C._dynamo", "torch._TorchCompileInductorWrapper", "torch.nn.parallel")


@dataclass(frozen=True)
class Use:
    """One use of a torch API in the source: where, the full dotted name, and for a call the number
    of positional arguments and the literal keyword names (None when the call spreads ``*``/``**``)."""

    where: str
    name: str
    positional: int | None = None
    keywords: tuple[str, ...] | None = None

    @property
    def is_call(self) -> bool:
        return self.keywords is not None


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _wanted(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") or (p.endswith("_cuda") and name.startswith(p))
               for p in PREFIXES)


def torch_uses(source: str, where: str = "<source>") -> list[Use]:
    """The uses of :data:`PREFIXES` APIs in ``source``, aliases resolved (a module's aliases are
    collected from all its imports and plain ``name = torch.x.y`` assignments, at any depth)."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "torch" or a.name.startswith("torch."):
                    if a.asname:
                        aliases[a.asname] = a.name
                    else:
                        aliases["torch"] = "torch"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and (
                node.module == "torch" or node.module.startswith("torch.")):
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    # `c = torch.backends.cudnn` (after the imports are known)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            parts = _dotted(node.value) if isinstance(node.value, ast.Attribute) else None
            if parts and parts[0] in aliases:
                full = ".".join([aliases[parts[0]], *parts[1:]])
                if _wanted(full):
                    aliases[node.targets[0].id] = full

    def resolve(node: ast.AST) -> str | None:
        parts = _dotted(node)
        if not parts or parts[0] not in aliases:
            return None
        full = ".".join([aliases[parts[0]], *parts[1:]])
        return full if _wanted(full) else None

    inner: set[int] = set()  # Attribute nodes that are the value of a longer chain
    calls: dict[int, ast.Call] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            inner.add(id(node.value))
        if isinstance(node, ast.Call):
            calls[id(node.func)] = node
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner or (
                isinstance(node, ast.Name) and id(node) in calls):
            name = resolve(node)
            if name is None:
                continue
            at = f"{where}:{node.lineno}"
            call = calls.get(id(node))
            if call is None:
                uses.append(Use(at, name))
                continue
            spread = (any(isinstance(a, ast.Starred) for a in call.args)
                      or any(k.arg is None for k in call.keywords))
            uses.append(Use(at, name, None if spread else len(call.args),
                            None if spread else tuple(k.arg for k in call.keywords)))
    # the imported names themselves (`from torch.cuda import nccl`)
    for alias, full in aliases.items():
        if _wanted(full) and alias != "torch":
            uses.append(Use(f"{where}:import", full))
    return uses


def _stub_names() -> set[str]:
    """Names ``torch/_C/__init__.pyi`` declares at its top level (functions and classes)."""
    if not TORCH_STUB.exists():
        return set()
    tree = ast.parse(TORCH_STUB.read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


_MISSING = object()


def lookup(name: str) -> object:
    """What ``name`` (``torch.cuda.memory_stats``) is on the installed torch, or ``_MISSING``.
    Submodules load on demand, as ``import torch.cuda.nccl`` would; a ``torch._C._cuda*`` binding a
    CPU build lacks counts as present when torch's stub declares it (returned as ``None``)."""
    parts = name.split(".")
    obj: object = torch
    for i, part in enumerate(parts[1:], start=1):
        try:
            obj = getattr(obj, part)
            continue
        except AttributeError:
            pass
        try:
            obj = importlib.import_module(".".join(parts[:i + 1]))
            continue
        except ImportError:
            pass
        if parts[:2] == ["torch", "_C"] and i == 2 and len(parts) == 3 and part in _stub_names():
            return None
        return _MISSING
    return obj


def _pybind_overloads(obj: object) -> list[tuple[list[str], bool]] | None:
    """``[(parameter names, has *args/**kwargs)]`` per overload from a pybind11 docstring
    (``name(self: T, host_name: str, port: int, ...) -> None``), None when there is none."""
    doc = getattr(obj.__init__ if isinstance(obj, type) else obj, "__doc__", None) or ""
    out = []
    for line in doc.splitlines():
        m = re.match(r"^(?:\d+\. )?\w+\((.*)\) -> ", line.strip())
        if not m:
            continue
        depth, cur, params = 0, "", []
        for ch in m.group(1) + ",":  # split on top-level commas (types hold brackets and commas)
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            if ch == "," and depth == 0:
                params.append(cur.strip())
                cur = ""
            else:
                cur += ch
        names = [q.split(":")[0].strip() for q in params if q]
        spread = any(n.startswith("*") for n in names)
        names = [n for n in names if n != "self" and not n.startswith("*")]
        out.append((names, spread))
    return out or None


def _binds_pybind(overloads: list[tuple[list[str], bool]], use: Use) -> bool:
    for names, spread in overloads:
        if spread:
            return True
        rest = names[use.positional or 0:]
        if len(names) >= (use.positional or 0) and set(use.keywords or ()) <= set(rest):
            return True
    return False


def problems(uses: list[Use]) -> list[str]:
    """One line per use that does not hold on the installed torch."""
    out = []
    for use in uses:
        obj = lookup(use.name)
        if obj is _MISSING:
            out.append(f"{use.where}: {use.name} does not exist in torch {torch.__version__}")
            continue
        if not use.is_call or obj is None or not callable(obj):
            continue
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):  # a C binding: its pybind11 docstring, where it has one
            overloads = _pybind_overloads(obj)
            if overloads is not None and not _binds_pybind(overloads, use):
                shown = " | ".join(f"({', '.join(names)})" for names, _ in overloads)
                out.append(f"{use.where}: {use.name}(...) with {use.positional} positional and keywords "
                           f"{list(use.keywords or ())} matches none of torch's {shown}")
            continue
        try:
            sig.bind(*([None] * (use.positional or 0)), **{k: None for k in use.keywords or ()})
        except TypeError as exc:
            out.append(f"{use.where}: {use.name}(...) does not match {use.name}{sig}: {exc}")
    return out


def all_uses() -> list[Use]:
    uses = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).as_posix()
        uses.extend(torch_uses(path.read_text(encoding="utf-8"), rel))
    return uses


# --------------------------------------------------------------------------- the checks


def test_the_collector_finds_aliases_calls_assignments_and_function_level_imports():
    sample = (
        "import torch\nimport torch.distributed as dist\nfrom torch.cuda import nccl\n"
        "def f():\n    import torch.cuda.nccl as n2\n    c = torch.backends.cudnn\n"
        "    c.benchmark = True\n    torch.cuda.set_per_process_memory_fraction(0.5, device=0)\n"
        "    dist.all_reduce(t, op=dist.ReduceOp.SUM)\n    return n2.version(), nccl\n"
        "x = torch.zeros(3).cuda()\n")
    got = {(u.name, u.positional, u.keywords) for u in torch_uses(sample)}
    assert ("torch.backends.cudnn.benchmark", None, None) in got
    assert ("torch.cuda.set_per_process_memory_fraction", 1, ("device",)) in got
    assert ("torch.distributed.all_reduce", 1, ("op",)) in got
    assert ("torch.distributed.ReduceOp.SUM", None, None) in got
    assert ("torch.cuda.nccl.version", 0, ()) in got
    assert ("torch.cuda.nccl", None, None) in got
    assert not any(name.startswith("torch.zeros") for name, _, _ in got)  # not a GPU namespace


@pytest.mark.parametrize("line, culprit", [
    ("torch.cuda.max_memory_reserverd(0)", "torch.cuda.max_memory_reserverd does not exist"),
    ("torch.backends.cudnn.benchmarks = True", "torch.backends.cudnn.benchmarks does not exist"),
    ("torch.cuda.set_per_process_memory_fraction(0.5, devise=0)", "devise"),
    ("torch.cuda.mem_get_info(0, 1)", "too many positional arguments"),
    ("dist.init_process_group('gloo', device_idx=0)", "device_idx"),
    ("torch._C._cuda_cudaCachingAllocator_is_enabld()", "_is_enabld does not exist"),
    ("dist.TCPStore('h', 1, 2, is_master=True, wait_for_worker=False)", "wait_for_worker"),
])
def test_a_wrong_name_keyword_or_arity_is_caught(line, culprit):
    source = f"import torch\nimport torch.distributed as dist\n{line}\n"
    found = problems(torch_uses(source, "bad.py"))
    assert len(found) == 1 and culprit in found[0] and found[0].startswith("bad.py:3"), found


def test_a_cuda_binding_a_cpu_build_lacks_passes_when_torch_declares_it():
    # compiled only into CUDA builds, declared in torch/_C/__init__.pyi: devices/cuda.caching_enabled
    assert lookup("torch._C._cuda_cudaCachingAllocator_is_enabled") is not _MISSING
    assert problems(torch_uses("import torch\ntorch._C._cuda_cudaCachingAllocator_is_enabled()\n")) == []


def test_every_gpu_facing_torch_api_in_the_package_exists_as_called():
    uses = all_uses()
    names = {u.name for u in uses}
    # the walk sees the device module, the data-parallel strategy and the precision policy
    assert {"torch.cuda.max_memory_reserved", "torch.cuda.set_sync_debug_mode",
            "torch.backends.cudnn.benchmark", "torch.distributed.init_process_group",
            "torch.amp.GradScaler", "torch.cuda.nccl.version"} <= names, sorted(names)
    assert len(uses) > 100
    found = problems(uses)
    assert not found, "\n".join(found)


def test_the_private_cuda_bindings_are_named_only_in_devices_cuda():
    """The rule of DESIGN.md for the part of the CUDA surface tests/test_import_graph.py's prefix
    match does not see: ``torch._C._cuda*`` bindings (found here with aliases resolved)."""
    wrong = sorted({f"{u.where}: {u.name}" for u in all_uses() if u.name.startswith("torch._C._cuda")
                    and not u.where.startswith("arignote/devices/cuda.py:")})
    assert not wrong, "only devices/cuda.py may call these:\n" + "\n".join(wrong)


def test_torch_cuda_amp_is_not_used():
    """``torch.cuda.amp.autocast``/``GradScaler`` are deprecated aliases (a FutureWarning on every
    construction); ``torch.amp`` takes the device type."""
    assert not [u for u in all_uses() if u.name.startswith("torch.cuda.amp")]


# --------------------------------------------------------------------------- NVML (nvidia-ml-py)


def pynvml_uses(source: str, where: str = "<source>") -> list[Use]:
    """Uses of ``pynvml.<name>`` (the module object devices/nvml.py's ``session()`` hands out is
    always held in a name ``pynvml``): calls with their arity and keywords, other reads as names."""
    tree = ast.parse(source)
    calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "pynvml":
            call = calls.get(id(node))
            name, at = f"pynvml.{node.attr}", f"{where}:{node.lineno}"
            if call is None or any(isinstance(a, ast.Starred) for a in call.args) or any(
                    k.arg is None for k in call.keywords):
                uses.append(Use(at, name))
            else:
                uses.append(Use(at, name, len(call.args), tuple(k.arg for k in call.keywords)))
    return uses


def pynvml_problems(uses: list[Use]) -> list[str]:
    pynvml = pytest.importorskip("pynvml")
    out = []
    for use in uses:
        obj = getattr(pynvml, use.name.split(".", 1)[1], _MISSING)
        if obj is _MISSING:
            out.append(f"{use.where}: {use.name} does not exist in nvidia-ml-py")
        elif use.is_call and inspect.isfunction(obj):
            try:
                args = [None] * (use.positional or 0)
                inspect.signature(obj).bind(*args, **dict.fromkeys(use.keywords or ()))
            except TypeError as exc:
                out.append(f"{use.where}: {use.name}(...) does not match {inspect.signature(obj)}: {exc}")
    return out


def test_every_nvml_query_the_package_makes_exists_in_nvidia_ml_py():
    uses = []
    for path in sorted(SRC.rglob("*.py")):
        uses.extend(pynvml_uses(path.read_text(encoding="utf-8"), path.relative_to(SRC.parent).as_posix()))
    assert {"pynvml.nvmlDeviceGetMemoryInfo", "pynvml.nvmlDeviceGetPowerUsage"} <= {u.name for u in uses}
    found = pynvml_problems(uses)
    assert not found, "\n".join(found)
    bad = pynvml_uses("pynvml.nvmlDeviceGetMemoryInfos(h)\npynvml.nvmlDeviceGetCount(0)\n", "bad.py")
    assert [p.split(" ")[1] for p in pynvml_problems(bad)] == ["pynvml.nvmlDeviceGetMemoryInfos",
                                                                 "pynvml.nvmlDeviceGetCount(...)"]


def test_the_gpu_tests_benchmarks_and_examples_name_real_apis_too():
    """The ``gpu``-marked tests, the benchmarks and the examples also run on GPUs only."""
    root = SRC.parents[1]
    uses = []
    for folder in ("tests", "benchmarks", "examples"):
        for path in sorted((root / folder).rglob("*.py")):
            uses.extend(torch_uses(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix()))
    assert any(u.name.startswith("torch.cuda.") for u in uses)  # tests/test_cuda_gpu.py's
    found = problems(uses)
    assert not found, "\n".join(found)
