"""Run Keras 2.3.1's own unit tests on arignote and write docs/keras2_conformance.md.

    python scripts/keras2_conformance.py [--src DIR] [--files PATTERN ...] [--out FILE]
        [--timeout S] [--json FILE] [--keras-repo DIR] [--tag 2.3.1] [--keep]

The tests are Keras's code, not ours: they are read from the Keras git repository at run time
(``git archive <tag> tests keras/utils/test_utils.py``) into a fresh temporary directory (one per
run, so several runs can go side by side) and never stored in this repo. What the runner changes,
and only for the run:

* **Imports.** ``from keras... import`` / ``import keras...`` lines become the same imports from
  ``arignote`` (the rewriting of scripts/run_keras2_examples.py), and a ``'keras.`` module path
  given to ``patch(...)`` or ``tf_file_io_proxy(...)`` becomes ``'arignote.``.
* **The harness.** Keras's ``keras/utils/test_utils.py`` (``layer_test``, ``get_test_data``, ...)
  is served as ``arignote.utils.test_utils``: its relative imports are pointed at arignote, it is
  written next to the tests as ``_keras2_test_utils.py`` and a root ``conftest.py`` registers it
  under that module name before any test module is imported. arignote itself ships no test_utils.
* **The reference backend.** Keras's ``keras/backend/numpy_backend.py`` (the numpy reference that
  backend_test.py compares each ``K.*`` function with; Keras ships it only for its tests) is served
  the same way as ``arignote.backend.numpy_backend``, and backend_test.py's ``KTF`` (its name for
  "the backend in use" on any backend but Theano and CNTK) is bound to ``arignote.backend``.
* **The learning phase.** After each test the phase ``K.set_learning_phase`` pinned is un-pinned, as
  Keras's own conftest does by clearing the session after each test on TensorFlow (its check names
  TensorFlow and CNTK, not this backend).
* **flaky.** Keras marks a few tests ``@flaky`` (the flaky plugin re-runs them); where that plugin
  is not installed, a stand-in decorator runs them once.
* **Environment.** One pytest process: ``--src`` first on ``PYTHONPATH`` (default: this checkout's
  ``src``), ``HOME`` a temporary home, ``ARIGNOTE_FLAGS=device=cpu``, ``OMP_NUM_THREADS=1``,
  matplotlib on Agg, pytest-timeout's per-test ``--timeout`` (default 120 s), ``--basetemp`` in the
  run's own directory.

Every test gets an outcome (pass / fail / skip; a test module that does not import counts as one
failure per test that Keras 2.3.1 collects in it, from the committed list
scripts/keras2_conformance_ids.txt) and, when it does not pass, a category from the committed table
scripts/keras2_conformance_table.txt (first matching rule wins; unmatched failures are "not yet"):

* ``tensorflow-only``: TensorFlow/CNTK sessions, CuDNN layers, TensorBoard internals, tests skipped
  for a backend other than TensorFlow. Out of the public-behaviour count.
* ``keras-internal``: Keras's private helpers, its docs generator, its module layout. Out of the count.
* ``deliberate``: a Keras 2 behaviour arignote does not copy on purpose (the reason says why).
* ``environment``: needs what this machine lacks (the network for a dataset download, Graphviz).
* ``not-yet``: should pass and does not yet.

A rule's scope (``tensorflow-only`` / ``keras-internal``) takes a test out of the public-behaviour
count whatever its outcome, so the denominator does not move as fixes land.

The doc gets per-file counts, the totals (public-behaviour tests passed / public total) and every
public test that does not pass with its category and reason. CI does not run this script (it needs
the Keras git mirror and takes several minutes); the project's own tests cover the fixes.

Example (one file, on another worktree, results as JSON too)::

    python scripts/keras2_conformance.py --src /work/wt/x/src --files 'tests/keras/optimizers_test.py' \\
        --out /tmp/opt.md --json /tmp/opt.json
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
TABLE = HERE / "keras2_conformance_table.txt"
REFERENCE_IDS = HERE / "keras2_conformance_ids.txt"
DEFAULT_REPO = "/work/.mirror/keras-team+keras/repo"
OUT_OF_SCOPE = ("tensorflow-only", "keras-internal")
CATEGORIES = ("tensorflow-only", "keras-internal", "deliberate", "environment", "not-yet")


def _load_examples_runner():
    spec = importlib.util.spec_from_file_location("_run_keras2_examples", HERE / "run_keras2_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------- preparing the tree

_PATCH_TARGET = re.compile(r"""\b(patch|tf_file_io_proxy)\((\s*)(['"])keras\.""")
# Keras's own reference numpy backend (keras/backend/numpy_backend.py, which backend_test compares
# every K.* function against) is harness too: served as arignote.backend.numpy_backend.
_NUMPY_BACKEND_IMPORTS = [
    (re.compile(r"^from \.common import floatx$", re.M), "from arignote.backend import floatx"),
    (re.compile(r"^from keras\.utils\.generic_utils import", re.M),
     "from arignote.utils.generic_utils import"),
    (re.compile(r"^from keras\.utils import", re.M), "from arignote.utils import"),
]
# backend_test.py checks "the backend in use" under the name of its module: KTF when K.backend() is
# neither 'theano' nor 'cntk' (arignote's is 'torch'), so arignote's backend is bound to KTF.
_TEST_SUBSTITUTIONS = {
    "tests/keras/backend/backend_test.py": [
        ("from arignote.backend import tensorflow_backend as KTF", "from arignote import backend as KTF"),
    ],
}
_RELATIVE = [
    (re.compile(r"^from \.generic_utils import", re.M), "from arignote.utils.generic_utils import"),
    (re.compile(r"^from \.\.engine import", re.M), "from arignote.engine import"),
    (re.compile(r"^from \.\. import backend as K", re.M), "from arignote import backend as K"),
]

ROOT_CONFTEST = '''"""Written by scripts/keras2_conformance.py: serves Keras's harness, records outcomes."""
import json
import os
import sys

import arignote.backend
import arignote.utils
import pytest
import _keras2_numpy_backend
import _keras2_test_utils

sys.modules["arignote.utils.test_utils"] = _keras2_test_utils
arignote.utils.test_utils = _keras2_test_utils
sys.modules["arignote.backend.numpy_backend"] = _keras2_numpy_backend
arignote.backend.numpy_backend = _keras2_numpy_backend

_OUT = os.environ["KERAS2_CONFORMANCE_RESULTS"]


@pytest.fixture(autouse=True)
def _unpin_learning_phase():
    # Keras's own conftest clears the session after each test on TensorFlow, which un-pins a
    # K.set_learning_phase (normalization_test.py pins 1); its check names TensorFlow and CNTK only
    yield
    arignote.backend.set_learning_phase(None)


def _message(report):
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple):  # a skip: (file, line, reason)
        return str(longrepr[2])
    crash = getattr(getattr(longrepr, "reprcrash", None), "message", None)
    text = crash if crash else str(longrepr)
    return text.strip().splitlines()[-1] if text.strip() else ""


def _frame(report):
    # the innermost arignote frame of a failure, to point at the code to fix
    entries = getattr(getattr(report.longrepr, "reprtraceback", None), "reprentries", None) or []
    for entry in reversed(entries):
        loc = getattr(getattr(entry, "reprfileloc", None), "path", "") or ""
        if "/arignote/" in loc and "_keras2_test_utils" not in loc:
            return "%s:%s" % (loc.split("/arignote/", 1)[1], entry.reprfileloc.lineno)
    return ""


def _write(row):
    with open(_OUT, "a") as f:
        f.write(json.dumps(row) + "\\n")


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _write({"id": report.nodeid, "when": report.when, "outcome": report.outcome,
                "message": _message(report)[:400], "frame": _frame(report)})


def pytest_collectreport(report):
    if report.failed:
        _write({"id": report.nodeid, "when": "collect", "outcome": "failed",
                "message": _message(report)[:400], "frame": _frame(report)})
'''

FLAKY_STUB = '''"""Written by scripts/keras2_conformance.py (the flaky plugin is not installed): runs once."""


def flaky(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda test: test
'''

# python_files: pytest's default patterns, plus the one test module of Keras 2.3.1 they miss
# (tests/keras/engine/layer_subclassing_tests.py: Keras's own run never collected it)
PYTEST_INI = """[pytest]
norecursedirs = build
python_files = test_*.py *_test.py layer_subclassing_tests.py
filterwarnings =
    ignore::DeprecationWarning
"""


def prepare(repo: str, tag: str, workdir: Path) -> Path:
    """Extract Keras's tests and harness at ``tag`` into ``workdir/run`` with imports renamed."""
    raw = workdir / "raw"
    raw.mkdir()
    archive = subprocess.run(["git", "-C", repo, "archive", tag, "tests", "keras/utils/test_utils.py",
                              "keras/backend/numpy_backend.py"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(raw)], input=archive, check=True)
    rewrite_imports = _load_examples_runner().rewrite_imports
    run = workdir / "run"
    for path in sorted((raw / "tests").rglob("*")):
        target = run / path.relative_to(raw)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".py":
            text, _ = rewrite_imports(path.read_text())
            text = _PATCH_TARGET.sub(r"\1(\2\3arignote.", text)
            for old, new in _TEST_SUBSTITUTIONS.get(str(path.relative_to(raw)), []):
                if old not in text:
                    raise SystemExit(f"{path.relative_to(raw)} at {tag}: expected {old!r} to rewrite")
                text = text.replace(old, new)
            target.write_text(text)
        else:
            shutil.copy(path, target)
    served = (("utils/test_utils.py", "_keras2_test_utils.py", _RELATIVE),
              ("backend/numpy_backend.py", "_keras2_numpy_backend.py", _NUMPY_BACKEND_IMPORTS))
    for source, name, rules in served:
        harness = (raw / "keras" / source).read_text()
        for pattern, replacement in rules:
            harness, n = pattern.subn(replacement, harness)
            if n != 1:
                raise SystemExit(f"Keras's {source} at {tag} changed: {pattern.pattern!r} matched {n} times")
        (run / name).write_text(harness)
    (run / "conftest.py").write_text(ROOT_CONFTEST)
    (run / "pytest.ini").write_text(PYTEST_INI)
    if importlib.util.find_spec("flaky") is None:
        (run / "flaky.py").write_text(FLAKY_STUB)
    return run


def run_pytest(run: Path, src: Path, files: list[str], timeout: int, workdir: Path) -> list[dict]:
    """Run pytest on ``files`` (globs under the tests tree) and return the recorded rows."""
    results = workdir / "results.jsonl"
    home = workdir / "home"
    home.mkdir()
    targets = sorted({str(p.relative_to(run)) for f in files for p in run.glob(f)
                      if p.is_file() or p.is_dir()})
    if not targets:
        raise SystemExit(f"no test file matches {files}")
    env = dict(os.environ)
    env.update(PYTHONPATH=os.pathsep.join([str(src), str(run)]), HOME=str(home),
               ARIGNOTE_FLAGS="device=cpu", OMP_NUM_THREADS="1", MPLBACKEND="Agg",
               KERAS2_CONFORMANCE_RESULTS=str(results))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(run / "pytest.ini"),
           "--rootdir", str(run), "--basetemp", str(workdir / "basetemp"), f"--timeout={timeout}",
           "--continue-on-collection-errors", *targets]
    print("+", " ".join(cmd), flush=True)
    log = workdir / "pytest.log"
    with open(log, "w") as out:
        subprocess.run(cmd, cwd=run, env=env, stdout=out, stderr=subprocess.STDOUT)
    tail = log.read_text().strip().splitlines()[-1:] or ["(no output)"]
    print("pytest:", tail[0], flush=True)
    if not results.exists():
        raise SystemExit(f"pytest recorded nothing; see {log}")
    return [json.loads(line) for line in results.read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------------------------- classification

@dataclass
class Rule:
    pattern: str   # fnmatch on the test id, or "msg~REGEX" on the failure / skip message
    category: str
    reason: str

    def matches(self, test_id: str, message: str) -> bool:
        if self.pattern.startswith("msg~"):
            return re.search(self.pattern[4:], message) is not None
        return fnmatch.fnmatchcase(test_id, self.pattern)


def read_table(path: Path = TABLE) -> list[Rule]:
    """Rules from the table: ``PATTERN | CATEGORY | REASON`` lines; ``#`` starts a comment line."""
    rules = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split(" | ")]
        if len(parts) != 3 or parts[1] not in CATEGORIES:
            raise SystemExit(f"{path}:{number}: expected 'PATTERN | CATEGORY | REASON' with a category "
                             f"in {CATEGORIES}, got {line!r}")
        rules.append(Rule(*parts))
    return rules


@dataclass
class Result:
    id: str
    outcome: str        # pass / fail / skip
    message: str = ""
    frame: str = ""
    category: str = ""  # "" for a public pass
    reason: str = ""

    @property
    def file(self) -> str:
        return self.id.split("::", 1)[0]

    @property
    def public(self) -> bool:
        return self.category not in OUT_OF_SCOPE


def collect_results(rows: list[dict], reference: list[str], files: list[str]) -> list[Result]:
    """One Result per test: the call outcome, or the setup/teardown failure or skip; a module that
    failed to import contributes its reference ids (or itself, when none are known) as failures."""
    by_id: dict[str, Result] = {}
    broken: dict[str, dict] = {}
    for row in rows:
        if row["when"] == "collect":
            broken[row["id"]] = row
            continue
        outcome = {"passed": "pass", "failed": "fail", "skipped": "skip"}[row["outcome"]]
        old = by_id.get(row["id"])
        if old is not None and old.outcome != "pass":
            continue  # keep the first non-pass (a teardown error after a failure adds nothing)
        if old is not None and outcome == "pass":
            continue
        by_id[row["id"]] = Result(row["id"], outcome, row["message"], row["frame"])
    for module, row in broken.items():
        wanted = [i for i in reference if i.startswith(module + "::") and i not in by_id]
        for test_id in wanted or [module]:
            by_id[test_id] = Result(test_id, "fail", "module does not load: " + row["message"], row["frame"])
    selected = [r for r in by_id.values() if any(fnmatch.fnmatchcase(r.file, f) or r.file.startswith(
        f.rstrip("/*") + "/") or r.file == f for f in files)]
    return sorted(selected or by_id.values(), key=lambda r: r.id)


def classify(results: list[Result], rules: list[Rule]) -> None:
    for result in results:
        for rule in rules:
            if rule.matches(result.id, result.message if result.outcome != "pass" else ""):
                scope_rule = rule.category in OUT_OF_SCOPE
                if result.outcome != "pass" or scope_rule:
                    result.category, result.reason = rule.category, rule.reason
                break
        if result.outcome != "pass" and not result.category:
            result.category = "not-yet"
            result.reason = result.message


# ----------------------------------------------------------------------------------------- the doc

def totals(results: list[Result]) -> dict:
    public = [r for r in results if r.public]
    passed = sum(r.outcome == "pass" for r in public)
    return {"tests": len(results), "public": len(public), "public_passed": passed,
            "percent": round(100.0 * passed / len(public), 1) if public else 0.0,
            "outcomes": dict(Counter(r.outcome for r in results)),
            "categories": dict(Counter(r.category for r in results if r.outcome != "pass"
                                       or not r.public))}


def render(results: list[Result], command: str, tag: str) -> str:
    t = totals(results)
    lines = [
        "# Keras 2.3.1's own unit tests on arignote",
        "",
        f"Made by `{command}` (Keras tag `{tag}`); see the script's docstring for what it changes "
        "(imports renamed `keras` -> `arignote`, Keras's `keras/utils/test_utils.py` served as "
        "`arignote.utils.test_utils`) and scripts/keras2_conformance_table.txt for the categories. "
        "Keras's tests are read from a git mirror at run time and never stored here. CI does not "
        "run it; to refresh this page:",
        "",
        "<!-- no-run: needs a git mirror of Keras and minutes; tests/test_keras2_conformance_runner.py -->",
        "```sh",
        "python scripts/keras2_conformance.py --keras-repo /path/to/keras.git",
        "```",
        "",
        "`--src DIR` tests another checkout's `src`, `--files 'tests/keras/layers/*_test.py'` a subset "
        "(written only where `--out` / `--json` say), `--timeout S` the per-test limit. It needs the "
        "project's `dev` extra (Keras's tests import six, pandas, scipy, Pillow, h5py); a full run takes "
        "a few minutes on 2 cores.",
        "",
        f"**Public-behaviour tests passed: {t['public_passed']} / {t['public']} "
        f"({t['percent']}%).** {t['tests']} tests in all; "
        + ", ".join(f"{k} {v}" for k, v in sorted(t["outcomes"].items())) + ".",
        "",
        "Every test pytest collects from Keras's `tests/` counts once per parametrization (a module that "
        "does not import counts each test Keras 2.3.1 collects in it, from "
        "scripts/keras2_conformance_ids.txt); the public-behaviour count leaves out the tensorflow-only "
        "and keras-internal ones, whatever their outcome.",
        "",
        "Not passing, by category (out-of-scope tests are counted whatever their outcome):",
        "",
        "| category | tests |",
        "| --- | ---: |",
    ]
    for category in CATEGORIES:
        lines.append(f"| {category} | {t['categories'].get(category, 0)} |")
    lines += ["", "## Per file", "",
              "| file | tests | pass | fail | skip | out of scope | public passed |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    by_file: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by_file[r.file].append(r)
    for name in sorted(by_file):
        rs = by_file[name]
        c = Counter(r.outcome for r in rs)
        pub = [r for r in rs if r.public]
        lines.append(f"| {name} | {len(rs)} | {c['pass']} | {c['fail']} | {c['skip']} | "
                     f"{len(rs) - len(pub)} | {sum(r.outcome == 'pass' for r in pub)} / {len(pub)} |")
    for category, title in (("deliberate", "Deliberate differences"),
                            ("not-yet", "Not yet (public behaviour that should pass)")):
        rows = [r for r in results if r.public and r.outcome != "pass" and r.category == category]
        lines += ["", f"## {title} ({len(rows)})", ""]
        if not rows:
            lines.append("None.")
            continue
        lines += ["| test | outcome | reason | where |", "| --- | --- | --- | --- |"]
        for r in rows:
            lines.append(f"| `{r.id}` | {r.outcome} | {_cell(r.reason)} | {_cell(r.frame)} |")
    out_rows = [r for r in results if not r.public]
    reasons = Counter((r.category, r.reason) for r in out_rows)
    lines += ["", f"## Out of scope ({len(out_rows)})", "", "| category | reason | tests |",
              "| --- | --- | ---: |"]
    for (category, reason), n in sorted(reasons.items()):
        lines.append(f"| {category} | {_cell(reason)} | {n} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    text = " ".join(text.split())
    text = text if len(text) <= 160 else text[:157] + "..."
    return text.replace("|", "\\|")


# -------------------------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", default=str(ROOT / "src"), help="arignote source dir to test (its parent "
                        "holds the arignote package)")
    parser.add_argument("--files", nargs="+", default=["tests"], help="globs under Keras's tests tree "
                        "(relative to the repo root, e.g. 'tests/keras/layers/*_test.py')")
    parser.add_argument("--out", help="the markdown page (default docs/keras2_conformance.md for a full "
                        "run; a partial run writes only what --out / --json name)")
    parser.add_argument("--json", help="also write every result as JSON here")
    parser.add_argument("--timeout", type=int, default=120, help="per-test timeout in seconds")
    parser.add_argument("--keras-repo", default=DEFAULT_REPO)
    parser.add_argument("--tag", default="2.3.1")
    parser.add_argument("--keep", action="store_true", help="keep the temporary tree (its path is printed)")
    args = parser.parse_args(argv)

    rules = read_table()
    reference = [line.strip() for line in REFERENCE_IDS.read_text().splitlines()
                 if line.strip() and not line.startswith("#")]
    workdir = Path(tempfile.mkdtemp(prefix="keras2-conformance-"))
    try:
        run = prepare(args.keras_repo, args.tag, workdir)
        rows = run_pytest(run, Path(args.src).resolve(), args.files, args.timeout, workdir)
        results = collect_results(rows, reference, args.files)
        classify(results, rules)
        t = totals(results)
        print(f"public-behaviour tests passed: {t['public_passed']} / {t['public']} ({t['percent']}%); "
              f"{t['tests']} tests: {t['outcomes']}; not passing by category: {t['categories']}")
        full = args.files == ["tests"]
        out = args.out or (str(ROOT / "docs" / "keras2_conformance.md") if full else None)
        command = "python scripts/keras2_conformance.py"
        if not full:
            command += " --files " + " ".join(args.files)
        if out:
            Path(out).write_text(render(results, command, args.tag))
            print("wrote", out)
        if args.json:
            Path(args.json).write_text(json.dumps({"totals": t, "results": [r.__dict__ for r in results]},
                                                  indent=1))
            print("wrote", args.json)
    finally:
        if args.keep:
            print("kept", workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
