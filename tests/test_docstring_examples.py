"""Every module's docstring examples (``>>>``) run as written: the house rule's short examples stay true.

One test per module of ``src/arignote`` whose source holds a ``>>>``, found by reading the files (so
collecting imports nothing). Each runs in its own temporary folder on the CPU, with ELLIPSIS and
NORMALIZE_WHITESPACE (addresses, free memory, timings are written ``...``). Examples that cannot run
here (a GPU, a driver, a fit's trainer) carry ``# doctest: +SKIP`` with the reason next to them. A
module (or an example) that needs an optional package that is not installed is skipped, naming it.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import io
import re
from pathlib import Path

import pytest

from arignote import config
from arignote.backend import clear_session

PACKAGE = Path(importlib.util.find_spec("arignote").origin).parent
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
MISSING = re.compile(r"No module named '([^'.]+)")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_with_examples() -> list[str]:
    return sorted(_module_name(p) for p in PACKAGE.rglob("*.py")
                  if p.name != "__main__.py" and ">>>" in p.read_text(encoding="utf-8"))


def _skip_if_missing(text: str) -> None:
    """Skip when the failure is an optional package that is not installed (not one of ours)."""
    for name in set(MISSING.findall(text)):
        if name != "arignote" and importlib.util.find_spec(name) is None:
            pytest.skip(f"needs the optional package {name!r}, which is not installed")


def run_examples(module_name: str) -> tuple[int, int, str]:
    """(attempted, failed, report) of the module's docstring examples."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        _skip_if_missing(str(exc))
        raise
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in doctest.DocTestFinder().find(module, module_name):
        runner.run(test, out=report.write)
    return runner.tries, runner.failures, report.getvalue()


def test_the_walk_finds_the_package_examples():
    names = modules_with_examples()
    assert len(names) > 200
    assert "arignote" in names and "arignote.layers.core.dropout" in names
    assert not any(n.endswith("__main__") for n in names)


def test_a_broken_example_fails(tmp_path, monkeypatch):
    """The runner reports a false example (the check would otherwise pass on anything)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "doctest_probe_mod.py").write_text('"""\n>>> 1 + 1\n3\n>>> [0] * 2\n[0,\n 0]\n"""\n')
    attempted, failed, report = run_examples("doctest_probe_mod")
    assert (attempted, failed) == (2, 1)
    assert "Expected:\n    3\nGot:\n    2" in report


def test_a_missing_optional_package_skips_with_its_name(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "doctest_probe_extra.py").write_text('"""\n>>> import not_installed_extra_pkg\n"""\n')
    with pytest.raises(pytest.skip.Exception, match="'not_installed_extra_pkg'"):
        _skip_if_missing(run_examples("doctest_probe_extra")[2])
    (tmp_path / "doctest_probe_ours.py").write_text('"""\n>>> import arignote.no_such_module\n"""\n')
    assert run_examples("doctest_probe_ours")[1] == 1  # a missing module of ours is a failure
    _skip_if_missing(run_examples("doctest_probe_ours")[2])  # and no skip


@pytest.mark.parametrize("module_name", modules_with_examples())
def test_docstring_examples_hold(module_name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    clear_session()  # layer auto-names start at _1, as in a fresh session: no example depends on the order
    with config.override(device="cpu", print_active_device=False):
        attempted, failed, report = run_examples(module_name)
    if failed:
        _skip_if_missing(report)
    assert failed == 0, f"{failed} of {attempted} examples of {module_name} failed:\n{report}"
