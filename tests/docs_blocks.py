"""The code blocks of README.md and docs/**/*.md, and how each is checked (tests/test_docs.py).

A block's info string says what it is:

- ```` ```python ````: run. The Python blocks of one page share one namespace, in page order; a block
  with a title (```` ```python title="train.py" ````) is a file written into the page's directory
  instead (a later ``python train.py`` runs it).
- ```` ```sh ```` / ```` ```bash ```` / ```` ```console ```` (commands after ``$ ``): run in bash, each
  block as one script (``set -e``; its ``export`` lines hold for the block), in the page's directory,
  with ``arignote`` and ``python`` this interpreter. Lines whose command is not arignote's or
  Python's are shown, not run, and :data:`SHOWN_ONLY` says why; an unknown command fails the test.
- ```` ```ini ````: an ``~/.arignoterc``, parsed by arignote's rc reader (every line must map to a flag
  with the value written); titled ``.theanorc``: a Theano file, read by ``arignote config
  --from-theano``'s converter. ```` ```toml ```` / ```` ```json ````: parsed.
- ```` ```text ```` (output, logs), ```` ```csv ````: not checked. A fence without a language may hold
  a diagram or output, never code: a line that reads as a command or Python (:func:`looks_like_code`)
  fails the test.

An HTML comment on the line before a block marks what this machine cannot run: ``<!-- gpu -->`` (or
``<!-- gpu: needs 2 GPUs -->``) and ``<!-- no-run: downloads CIFAR-10 -->``. Such a block is skipped
with that reason (its ``ARIGNOTE_FLAGS`` are still parsed).

Every page runs in a directory of its own with its own ``HOME`` (so ``~/.arignoterc`` is the page's)
holding :data:`WORK_FILES`: a Keras-style ``train.py`` and ``old_theano_model.h5`` (a Keras 2
fixture saved by Theano).

``python tests/docs_blocks.py PAGE WORKDIR`` runs one page's blocks and prints a JSON report.

Example::

    >>> [(b.lang, b.line, b.skip) for b in parse("x\\n<!-- gpu -->\\n```sh\\nls\\n```\\n", "p.md")]
    [('sh', 3, 'needs a CUDA GPU')]
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON_LANGS = {"python", "py"}
SHELL_LANGS = {"sh", "bash", "shell", "console"}
CONFIG_LANGS = {"ini", "toml", "json"}
TEXT_LANGS = {"text", "csv"}
LANGS = PYTHON_LANGS | SHELL_LANGS | CONFIG_LANGS | TEXT_LANGS

# Commands shown in the docs but never run by the tests, by their start, and why. A shell line starting
# with none of these, nor with `arignote` or `python`, nor a plain shell verb (SHELL_VERBS), fails.
SHOWN_ONLY = {
    "make": "builds .venv or runs the suite: CI runs make test and make lint; tests/test_demo.py the demo",
    "pip": "installs packages (the dev extra has every optional one)",
    "torchrun": "starts processes across machines; tests/test_parallel_*.py launch real process groups",
    "srun": "needs a SLURM cluster", "sbatch": "needs a SLURM cluster", "salloc": "needs a SLURM cluster",
    "nvidia-smi": "needs an NVIDIA driver", "apt-get": "installs system packages", "git": "needs a clone",
    "arignote dash": "serves a web page until stopped; tests/test_dash_browser.py opens it in Chromium",
    "arignote bench": "minutes to hours of training; tests/test_bench.py runs it small",
    "arignote selftest": "exercises GPUs; tests/test_bench.py runs it on the CPU",
}
SHELL_VERBS = {"export", "unset", "cd", "mkdir", "ls", "cat", "echo", "rm", "cp", "mv", "head", "tail"}
RUN = ("arignote", "python", "python3")

# Files every page's directory starts with: name -> text, or a path (relative to the repo) to copy.
TRAIN_PY = '''\
import numpy as np
from arignote.layers import Dense
from arignote.models import Sequential

x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
y = (x.sum(axis=1) > 0).astype("float32")
model = Sequential()
model.add(Dense(1, activation="sigmoid", input_shape=(4,)))
model.compile(optimizer="sgd", loss="binary_crossentropy")
model.fit(x, y, batch_size=16, epochs=1, verbose=2)
'''
WORK_FILES: dict[str, str | Path] = {
    "train.py": TRAIN_PY,
    "old_theano_model.h5": Path("tests/fixtures/keras2/th_cf_conv.h5"),
}

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([\w+-]*)\s*(.*)$")
_MARK = re.compile(r"^<!--\s*(gpu|no-run)\s*(?::\s*(.*?))?\s*-->$")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=(\"[^\"]*\"|'[^']*'|\S*)\s+")


@dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    body: str
    title: str = ""
    skip: str = ""  # why it is not run here ("" runs it)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def parse(text: str, page: str) -> list[Block]:
    """Every fenced block of a Markdown page, with its marker (the HTML comment before it)."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang, rest = m.groups()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = "\n".join(line[len(indent):] for line in lines[i + 1:end]) + "\n"
        title = re.search(r'title="([^"]*)"', rest)
        before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        mark = _MARK.match(before)
        skip = ""
        if mark:
            kind, why = mark.groups()
            skip = ("needs a CUDA GPU" + (f": {why}" if why else "")) if kind == "gpu" else (why or "no-run")
        blocks.append(Block(page, i + 1, lang.lower(), body, title.group(1) if title else "", skip))
        i = end + 1
    return blocks


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def page_blocks(path: Path) -> list[Block]:
    return parse(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))


# --------------------------------------------------------------------------- shell lines


def commands(block: Block) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments and ``console`` output dropped."""
    text = re.sub(r"\\\n\s*", "", block.body)
    out = []
    for line in text.splitlines():
        if block.lang == "console":
            if not line.startswith("$ "):
                continue
            line = line[2:]
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _without_assignments(line: str) -> str:
    """A shell line without its ``NAME=value`` prefixes."""
    while m := _ASSIGN.match(line):
        line = line[m.end():]
    return line


def command_word(line: str) -> str:
    """The command a shell line runs: ``ARIGNOTE_FLAGS=device=cpu arignote config`` -> ``arignote``."""
    words = _without_assignments(line).split()
    return words[0] if words else ""


def shown_only(line: str) -> str:
    """Why a shell line is not run (its entry of :data:`SHOWN_ONLY`), or ""."""
    rest = _without_assignments(line)
    if "--help" in rest.split():
        return ""
    for start, why in SHOWN_ONLY.items():
        if rest == start or rest.startswith(start + " "):
            return why
    return ""


def flags_of(line: str) -> list[str]:
    """The ``ARIGNOTE_FLAGS`` values a shell line sets (``export`` or a command prefix)."""
    found = []
    for word in shlex.split(line, comments=True):
        if word.startswith("ARIGNOTE_FLAGS="):
            found.append(word.split("=", 1)[1])
    return found


def script(block: Block) -> tuple[str, list[str], list[str]]:
    """``(bash script, lines run, problems)`` for a shell block: the lines :data:`SHOWN_ONLY` names are
    left out; a line that is neither run nor shown-only is a problem."""
    run, problems, kept = [], [], ["set -e"]
    for line in commands(block):
        word = command_word(line)
        if shown_only(line):
            continue
        if word in RUN or word in SHELL_VERBS:
            kept.append(line)
            run.append(line)
        else:
            problems.append(f"{block.where}: `{line}` is neither run ({', '.join(RUN)}) nor listed in "
                            "SHOWN_ONLY (tests/docs_blocks.py); mark the block <!-- no-run: why -->")
    return "\n".join(kept) + "\n", run, problems


def looks_like_code(body: str) -> str:
    """The first line of ``body`` that reads as a shell command or Python, or "".

    >>> looks_like_code("flags (config) -> devices -> Model.fit"), looks_like_code("x\\npython a.py")
    ('', 'python a.py')
    """
    words = set(RUN) | SHELL_VERBS | {start.split()[0] for start in SHOWN_ONLY}
    for line in body.splitlines():
        stripped = line.strip()
        if (stripped.startswith(("$ ", ">>> ", "import ", "from ", "def ", "class "))
                or command_word(stripped) in words):
            return stripped
    return ""


# --------------------------------------------------------------------------- running one page


@dataclass
class Outcome:
    where: str
    status: str  # "ran", "failed", "skipped", "file"
    detail: str = ""
    ran: list[str] = field(default_factory=list)


def run_page(page: str, work: Path) -> list[Outcome]:
    """Run a page's Python and shell blocks in order in ``work`` (this process's cwd and env)."""
    namespace: dict = {"__name__": "__main__"}
    out = []
    for block in page_blocks(ROOT / page):
        if block.skip:
            out.append(Outcome(block.where, "skipped", block.skip))
        elif block.lang in PYTHON_LANGS and block.title:
            (work / block.title).write_text(block.body, encoding="utf-8")
            out.append(Outcome(block.where, "file", block.title))
        elif block.lang in PYTHON_LANGS:
            try:
                exec(compile(block.body, block.where, "exec"), namespace)  # noqa: S102 - the docs' own code
                out.append(Outcome(block.where, "ran"))
            except BaseException:  # noqa: BLE001 - SystemExit included: reported as the block's failure
                out.append(Outcome(block.where, "failed", traceback.format_exc(limit=-6)))
        elif block.lang in SHELL_LANGS:
            text, ran, problems = script(block)
            if problems:
                out.append(Outcome(block.where, "failed", "\n".join(problems)))
                continue
            proc = subprocess.run(["bash", "-c", text], cwd=work, capture_output=True, text=True, timeout=600)
            failed = proc.returncode != 0 or "Traceback" in proc.stderr
            out.append(Outcome(block.where, "failed" if failed else "ran",
                               f"exit {proc.returncode}\n{text}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
                               if failed else "", ran))
        sys.stdout.flush()
    return out


def main(argv: list[str]) -> int:
    page, work = argv[0], Path(argv[1])
    os.chdir(work)
    sys.path.insert(0, str(work))
    sys.argv = [str(work / "page.py")]
    report = [asdict(o) for o in run_page(page, work)]
    print("\n" + json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
