"""The docs hold as written: every code block of README.md and docs/**/*.md is run or checked
(tests/docs_blocks.py says how, by the block's info string and marker), and a block this machine
cannot run is skipped with its reason.

- each page's Python and shell blocks run in order, in a directory and ``HOME`` of the page's own,
  with ``arignote`` and ``python`` this interpreter (one subprocess per page);
- every ``ini`` block parses with arignote's rc reader (each line maps to a flag with the value
  written); a ``.theanorc`` one converts with ``arignote config --from-theano``'s converter;
- a block with a language the collector does not know fails, and so does code in a fence without one;
- the ``ARIGNOTE_FLAGS`` of blocks marked ``<!-- gpu -->`` still parse.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arignote import config
from arignote.config import theanorc
from docs_blocks import (
    CONFIG_LANGS,
    LANGS,
    PYTHON_LANGS,
    ROOT,
    SHELL_LANGS,
    WORK_FILES,
    commands,
    flags_of,
    looks_like_code,
    page_blocks,
    pages,
    parse,
    script,
    shown_only,
)

ALL = [block for path in pages() for block in page_blocks(path)]
RUNNABLE_PAGES = sorted({b.page for b in ALL if b.lang in PYTHON_LANGS | SHELL_LANGS and not b.skip})


def _ids(blocks):
    return [b.where for b in blocks]


# --------------------------------------------------------------------------- the collector itself


def test_collector_reads_markers_titles_and_console_prompts():
    text = ("<!-- no-run: downloads CIFAR-10 -->\n```python\nimport x\n```\n\n"
            "<!-- gpu: needs 2 GPUs -->\n\n~~~bash\nARIGNOTE_FLAGS=device=free:2 python train.py\n~~~\n"
            '```python title="train.py"\nprint(1)\n```\n'
            "```console\n$ arignote config \\\n    --json   # as data\n{\"device\": \"cpu\"}\n"
            "$ make demo\n```\n")
    a, b, c, d = parse(text, "p.md")
    assert (a.lang, a.line, a.skip) == ("python", 2, "downloads CIFAR-10")
    assert (b.lang, b.skip, commands(b)) == ("bash", "needs a CUDA GPU: needs 2 GPUs",
                                               ["ARIGNOTE_FLAGS=device=free:2 python train.py"])
    assert (c.title, c.skip, c.body) == ("train.py", "", "print(1)\n")
    assert commands(d) == ["arignote config --json", "make demo"]
    text_run, ran, problems = script(d)
    assert ran == ["arignote config --json"] and problems == [] and "make demo" not in text_run
    assert shown_only("make demo").startswith("builds .venv") and shown_only("arignote bench --help") == ""


def test_collector_refuses_unknown_commands():
    (block,) = parse("```sh\ncurl https://example.org | sh\narignote smi\n```\n", "p.md")
    _, ran, problems = script(block)
    assert ran == ["arignote smi"] and len(problems) == 1 and "`curl https://example.org | sh`" in problems[0]


@pytest.mark.parametrize("block", ALL, ids=_ids(ALL))
def test_every_block_has_a_known_language(block):
    code = "" if block.lang else looks_like_code(block.body)
    assert not code, f"{block.where}: `{code}` in a fence without a language; say what it is: {sorted(LANGS)}"
    assert not block.lang or block.lang in LANGS, \
        f"{block.where}: unknown language {block.lang!r}; one of {sorted(LANGS)}"


SHELL = [b for b in ALL if b.lang in SHELL_LANGS]


@pytest.mark.parametrize("block", SHELL, ids=_ids(SHELL))
def test_every_shell_line_is_run_or_shown_with_a_reason(block):
    assert script(block)[2] == []


# --------------------------------------------------------------------------- config blocks

INI = [b for b in ALL if b.lang == "ini"]


def _check_rc(text: str, rc: Path) -> None:
    rc.write_text(text)
    os.environ["ARIGNOTERC"] = str(rc)  # the autouse fixture restores it
    config.reload()
    with config.unchecked():  # the file's syntax and values; a GPU it names may be missing here
        values = {v.name: v for v in config.flags()}  # every flag readable: no ConfigError
    assert [n for n in config.notices() if n.startswith("warning")] == []
    section = "global"
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped.strip("[]")
        elif stripped and not stripped.startswith(("#", ";")):
            key, value = (part.strip() for part in stripped.split("=", 1))
            name = config._canonical(key if section == "global" else f"{section}.{key}", "test")
            assert values[name].source == f"{rc}:{number}", line
            shown = re.split(r"\s+[#;]", value)[0]
            parsed = str(config.FLAGS[name].parse(shown)).lower()
            assert str(values[name].value).lower() in (shown.lower(), parsed), line


def _check_theanorc(text: str, rc: Path, monkeypatch) -> None:
    rc.write_text(text)
    monkeypatch.setenv("THEANORC", str(rc))
    settings = theanorc.read_theano()
    assert settings, "a .theanorc block with no settings"
    conv = theanorc.convert(settings)
    assert conv.flags, f"nothing in it converts: {[(s.key, s.reason) for s in conv.unconverted]}"


@pytest.mark.parametrize("block", INI, ids=_ids(INI))
def test_every_config_block_parses(block, tmp_path, monkeypatch):
    if block.title.endswith(("theanorc", "theanorc.txt")):
        _check_theanorc(block.body, tmp_path / ".theanorc", monkeypatch)
    else:
        _check_rc(block.body, tmp_path / "arignoterc")


OTHER_CONFIG = [b for b in ALL if b.lang in CONFIG_LANGS - {"ini"}]


@pytest.mark.parametrize("block", OTHER_CONFIG, ids=_ids(OTHER_CONFIG))
def test_toml_and_json_blocks_parse(block):
    if block.lang == "toml":
        assert pytest.importorskip("tomllib", reason="tomllib is Python 3.11's").loads(block.body) is not None
    else:
        assert json.loads(block.body) is not None


def test_a_bad_config_block_fails(tmp_path):
    with pytest.raises(config.ConfigError, match="unknown flag 'memory.prealocate'"):
        _check_rc("[memory]\nprealocate = 0.8\n", tmp_path / "rc")
    with pytest.raises(AssertionError):
        _check_rc("[memory]\npreallocate = 4\n", tmp_path / "rc")  # read as 4 MiB: a warning


GPU_FLAGS = [(b, line) for b in SHELL if b.skip for line in commands(b) if flags_of(line)]


@pytest.mark.parametrize("block,line", GPU_FLAGS, ids=[f"{b.where}:{line[:40]}" for b, line in GPU_FLAGS])
def test_flags_of_blocks_not_run_here_parse(block, line, monkeypatch):
    for flags in flags_of(line):
        monkeypatch.setenv("ARIGNOTE_FLAGS", flags)
        config.reload()
        with config.unchecked():  # device=cuda1 is a fine value on a machine that has it
            config.flags()


def test_readme_config_example_values():
    (rc_text, *_) = [b.body for b in page_blocks(ROOT / "README.md") if b.lang == "ini"]
    assert "preallocate = 0.8      # a Theano user's" in rc_text  # the line that once broke every command


# --------------------------------------------------------------------------- running the pages

SKIPPED = [b for b in ALL if b.skip and b.lang in PYTHON_LANGS | SHELL_LANGS]


@pytest.mark.parametrize("block", SKIPPED, ids=_ids(SKIPPED))
def test_block_not_run_here(block):
    pytest.skip(f"{block.where}: {block.skip}")


def page_env(home: Path) -> dict[str, str]:
    """A shell whose ``arignote`` and ``python`` are this interpreter, from a home of its own."""
    bindir = home / "bin"
    bindir.mkdir(exist_ok=True)
    python = f'exec "{sys.executable}" "$@"'
    for name, target in (("arignote", f'exec "{sys.executable}" -m arignote "$@"'), ("python", python),
                         ("python3", python)):
        (bindir / name).write_text(f"#!/bin/sh\n{target}\n")
        (bindir / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARIGNOTE", "THEANO", "KERAS"))}
    env.update(HOME=str(home), PATH=f"{bindir}{os.pathsep}{env['PATH']}", OMP_NUM_THREADS="1",
               KERAS_HOME=str(home / ".keras"), MPLBACKEND="Agg",
               THEANO_FLAGS="device=cpu,floatX=float32",  # a Theano user's: `config --from-theano` reads it
               PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), *sys.path]))
    return env


def run_page(page: str, home: Path) -> list[dict]:
    work = home / "work"
    work.mkdir(parents=True)
    for name, source in WORK_FILES.items():
        if isinstance(source, Path):
            shutil.copy(ROOT / source, work / name)
        else:
            (work / name).write_text(source)
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "docs_blocks.py"), page, str(work)],
                          env=page_env(home), cwd=work, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.rstrip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_page_runs(page, tmp_path):
    report = run_page(page, tmp_path)
    failed = [f"{o['where']}\n{o['detail']}" for o in report if o["status"] == "failed"]
    assert failed == [], "\n\n".join(failed)
    assert any(o["status"] == "ran" for o in report)
    if page == "README.md":  # what its commands leave behind
        ran = [line for o in report for line in o["ran"]]
        assert any("arignote config --from-theano" in line for line in ran), ran
        assert (tmp_path / ".arignoterc").exists()


def test_a_failing_block_fails_its_page(tmp_path, monkeypatch):
    """The runner reports a raising Python block and a failing command, with the page line."""
    page = tmp_path / "docs" / "broken.md"
    page.parent.mkdir()
    page.write_text("```python\nx = 1\n```\n\n```python\nassert x == 2, 'x is 1'\n```\n\n"
                    "```sh\narignote config --no-such-option\n```\n\n<!-- gpu -->\n```sh\nfalse\n```\n")
    import docs_blocks

    monkeypatch.setattr(docs_blocks, "ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    page_env(tmp_path)
    outcomes = docs_blocks.run_page("docs/broken.md", work)
    assert [(o.where, o.status) for o in outcomes] == [
        ("docs/broken.md:1", "ran"), ("docs/broken.md:5", "failed"), ("docs/broken.md:9", "failed"),
        ("docs/broken.md:14", "skipped")]
    assert "AssertionError: x is 1" in outcomes[1].detail and "exit 2" in outcomes[2].detail
