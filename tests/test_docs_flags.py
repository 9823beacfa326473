"""docs/configuration.md's flag table is the flag registry's (scripts/gen_flag_table.py writes it):
stale or a flag without a doc fails here, with the command that fixes it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from arignote import config

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gen_flag_table.py"


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_flag_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_flag_table_is_the_registrys(gen):
    page = gen.PAGE.read_text(encoding="utf-8")
    assert gen.render(page) == page, "the flag table is stale: run python scripts/gen_flag_table.py"
    generated = page.split(gen.BEGIN)[1].split(gen.END)[0]
    rows = [line for line in generated.splitlines() if line.startswith("| `")]
    assert [line.split("`")[1] for line in rows] == list(config.FLAGS)
    preallocate = next(line for line in rows if line.startswith("| `memory.preallocate`"))
    for cell in ("| `0` |", "`gpuarray.preallocate`", "`[memory] preallocate`"):
        assert cell in preallocate


def test_a_new_flag_makes_the_table_stale(gen, monkeypatch):
    page = gen.PAGE.read_text(encoding="utf-8")
    flags = dict(config.FLAGS)
    flags["memory.example"] = config.Flag("memory.example", str, "x", "a flag added in a test <here>")
    monkeypatch.setattr(config, "FLAGS", flags)
    fresh = gen.render(page)
    assert fresh != page
    row = "| `memory.example` | `str` | `x` | `[memory] example` | a flag added in a test &lt;here&gt; |"
    assert row in fresh
    assert gen.main(["--check"]) == 1


@pytest.mark.parametrize("doc", ["", "todo"])
def test_a_flag_without_a_doc_fails(gen, monkeypatch, doc):
    flags = dict(config.FLAGS)
    flags["bare"] = config.Flag("bare", str, "", doc)
    monkeypatch.setattr(config, "FLAGS", flags)
    with pytest.raises(SystemExit, match="flags without a doc in config.py: bare"):
        gen.table()


def test_a_page_without_markers_is_refused(gen):
    with pytest.raises(SystemExit, match="needs the two markers"):
        gen.render("# Configuration\n\nno table here\n")


def test_check_passes_on_the_committed_page(gen):
    assert gen.main(["--check"]) == 0
