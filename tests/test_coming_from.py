"""The "coming from" pages say what the code does: every row of the Theano table is what
``arignote config --from-theano`` makes of that setting, and every ``arignote.*`` name the three pages
mention exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from arignote.config.theanorc import convert

PAGES = Path(__file__).resolve().parents[1] / "docs" / "coming-from"


def theano_rows() -> list[tuple[str, str, str]]:
    """``(theano setting, arignote column, why-none column)`` of the side-by-side table."""
    text = (PAGES / "theano.md").read_text()
    table = text[text.index("| Theano (`.theanorc` / `THEANO_FLAGS`) |"):]
    rows = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append(tuple(cell.strip() for cell in line.split("|")[1:-1]))
    return rows


def test_the_theano_table_lists_what_a_keras_theano_user_sets():
    keys = {row[0].strip("`").split("=", 1)[0] for row in theano_rows()}
    wanted = {"device", "floatX", "optimizer", "mode", "allow_gc", "lib.cnmem", "gpuarray.preallocate",
              "dnn.enabled", "dnn.conv.algo_fwd", "dnn.conv.algo_bwd_filter", "dnn.conv.algo_bwd_data",
              "nvcc.fastmath", "openmp", "exception_verbosity", "compiledir", "contexts", "warn_float64",
              "deterministic", "on_opt_error", "cxx", "linker"}
    assert wanted <= keys, wanted - keys


@pytest.mark.parametrize("row", theano_rows(), ids=lambda row: row[0])
def test_every_theano_row_maps_as_the_page_says(row):
    setting, flag, why = row
    key, value = setting.strip("`").split("=", 1)
    conv = convert([(key, value, "THEANO_FLAGS")])
    if flag == "none":
        assert conv.flags == {}, f"{setting} converts to {conv.flags}, the page says none"
        assert [s.reason for s in conv.unconverted] == [why]
    else:
        name, expected = flag.strip("`").split("=", 1)
        assert conv.unconverted == [], conv.unconverted
        assert {n: v for n, (v, _) in conv.flags.items()} == {name: expected}
        assert why == ""


def test_a_wrong_row_would_fail():
    """The comparison above can fail: a setting converted differently from a row is caught."""
    conv = convert([("lib.cnmem", "0.8", "THEANO_FLAGS")])
    assert {n: v for n, (v, _) in conv.flags.items()} != {"memory.limit": "0.8"}
    assert [s.reason for s in convert([("mode", "FAST_RUN", "x")]).unconverted] != ["nothing is compiled"]


def mentioned_names() -> list[str]:
    names = set()
    for page in sorted(PAGES.glob("*.md")):
        for code in re.findall(r"`([^`\n]+)`", page.read_text()):
            names.update(re.findall(r"\barignote(?:\.[A-Za-z_]\w*)+", code))
    return sorted(names)


@pytest.mark.parametrize("dotted", mentioned_names())
def test_every_arignote_name_on_the_pages_exists(dotted):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return
    pytest.fail(f"{dotted} does not import")


def test_theano_spellings_read_directly_as_the_page_says(tmp_path, monkeypatch):
    """The page's "Theano spellings arignote reads directly": preallocate under [gpuarray] or [lib]
    cnmem, floatx in any case, a Theano-only setting noted and ignored, and an error in configure()."""
    from arignote import config
    from arignote.errors import ConfigError

    rc = tmp_path / "rc"
    rc.write_text("[global]\nFLOATX = float64\nmode = FAST_RUN\n\n[lib]\ncnmem = 0.5\n")
    monkeypatch.setenv("ARIGNOTERC", str(rc))
    monkeypatch.delenv("ARIGNOTE_FLAGS", raising=False)
    monkeypatch.delenv("THEANO_FLAGS", raising=False)
    config.reload()
    try:
        with config.unchecked():
            assert config.get("floatX") == "float64"
            assert config.get("memory.preallocate") == 0.5
        assert any("'mode'" in note and "ignored" in note for note in config.notices())
        with pytest.raises(ConfigError, match="Theano flag"):
            config.configure(mode="FAST_RUN")
    finally:
        monkeypatch.delenv("ARIGNOTERC")
        config.reload()
