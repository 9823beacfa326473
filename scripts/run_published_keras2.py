"""Run published Keras 2 layer packages' own unit tests on arignote (and on Keras 2.3.1 when asked).

    python scripts/run_published_keras2.py SRC_DIR [NAME ...] [--keras2] [--quick] [--timeout S]
        [--show-failures]

``SRC_DIR`` holds one directory per published package, each a checkout of its repository (for example
``git --git-dir=<mirror> archive <commit> | tar -x -C SRC_DIR/keras-multi-head``); nothing of theirs is
stored in this repository. Every package is copied into one fresh temporary directory with its imports
renamed (``keras`` -> ``arignote``: ``from keras import backend as K``, ``keras.layers``,
``keras.engine.topology``, ...) and ``TF_KERAS=0`` (packages that choose ``tensorflow.keras`` through that
variable take plain Keras), all copies on ``PYTHONPATH`` (the packages import one another), and each
package's ``tests/`` run by pytest. Prints one line per package: passed / failed / errors, and the rate.

With ``--keras2`` the unrenamed copies run on real Keras 2.3.1 (Theano) in /work/k2venv instead, through
scripts/keras2_shim.py (loaded by a conftest.py written into the temporary copy), for comparison.

Example::

    python scripts/run_published_keras2.py /tmp/pub keras-multi-head keras-pos-embd
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
K2PYTHON = "/work/k2venv/bin/python"
OURS = str(Path(sys.executable))

# ``keras`` as a module name: ``import keras``, ``from keras.x import``, ``keras.layers.Dense`` — not
# ``keras_contrib``/``keras_multi_head`` (``_`` is a word character) and not ``tf.keras``.
_KERAS = re.compile(r"(?<![.\w])keras\b(?![-_])")

QUICK = "not fit and not train"  # pytest -k: the packages' training tests run 1000s of steps

CONFTEST_K2 = ("import sys\nsys.path.insert(0, {scripts!r})\n"
               "import keras2_shim\nkeras2_shim.force_unroll()\n")


def rename(source: str) -> str:
    """The import rename a user makes: every ``keras`` module name becomes ``arignote``.

        >>> rename("from keras import backend as K\\nimport keras.layers\\nimport keras_pos_embd\\n")
        'from arignote import backend as K\\nimport arignote.layers\\nimport keras_pos_embd\\n'
    """
    return _KERAS.sub("arignote", source)


def copy_packages(src: Path, work: Path, to_arignote: bool) -> list[Path]:
    out = []
    for package in sorted(p for p in src.iterdir() if p.is_dir()):
        dest = work / package.name
        shutil.copytree(package, dest, ignore=shutil.ignore_patterns(".git", "*.pyc", "__pycache__"))
        if to_arignote:
            for path in dest.rglob("*.py"):
                text = path.read_text(errors="replace")
                path.write_text(rename(text))
        out.append(dest)
    return out


def run_package(package: Path, paths: list[Path], keras2: bool, timeout: float, select: str = "") -> dict:
    report = package / "report.xml"
    env = dict(os.environ, TF_KERAS="0", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(str(p) for p in paths))
    python = OURS
    if keras2:
        python = K2PYTHON
        env.update(KERAS_BACKEND="theano", THEANO_FLAGS="blas.ldflags=,floatX=float32,"
                   f"base_compiledir=/tmp/published-theano-{package.name}")
        (package / "conftest.py").write_text(CONFTEST_K2.format(scripts=str(ROOT / "scripts")))
    else:
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env["PYTHONPATH"]])
    tests = "tests" if (package / "tests").is_dir() else "."
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
           f"--junitxml={report}", tests] + (["-k", select] if select else [])
    try:
        out = subprocess.run(cmd, cwd=package, env=env, capture_output=True, text=True, timeout=timeout)
        text = out.stdout + out.stderr
    except subprocess.TimeoutExpired:
        return {"passed": 0, "failed": 0, "errors": 0, "note": "timeout", "failures": []}
    if not report.exists():
        return {"passed": 0, "failed": 0, "errors": 1, "note": text[-400:], "failures": []}
    counts = {"passed": 0, "failed": 0, "errors": 0, "note": "", "failures": []}
    for case in ET.parse(report).getroot().iter("testcase"):
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if case.find("skipped") is not None:
            continue
        if bad is None:
            counts["passed"] += 1
            continue
        counts["failed" if bad.tag == "failure" else "errors"] += 1
        message = (bad.get("message") or "").splitlines()
        counts["failures"].append(f"{case.get('classname')}::{case.get('name')}: "
                                  f"{message[0][:200] if message else ''}")
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path, help="directory with one checkout per published package")
    parser.add_argument("names", nargs="*", help="package directory names (default: all)")
    parser.add_argument("--keras2", action="store_true", help="run on Keras 2.3.1 (/work/k2venv) instead")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per package")
    parser.add_argument("--quick", action="store_true",
                        help="leave out tests that train to an accuracy (fit/train in the name: slow)")
    parser.add_argument("--show-failures", action="store_true", help="print each failing test's message")
    args = parser.parse_intermixed_args()
    work = Path(tempfile.mkdtemp(prefix="published-keras2-"))
    packages = copy_packages(args.src.resolve(), work, to_arignote=not args.keras2)
    chosen = [p for p in packages if not args.names or p.name in args.names]
    if not chosen:
        print(f"no package named {args.names} in {args.src}", file=sys.stderr)
        return 2
    total_pass = total_run = 0
    for package in chosen:
        r = run_package(package, packages, args.keras2, args.timeout, QUICK if args.quick else "")
        ran = r["passed"] + r["failed"] + r["errors"]
        total_pass += r["passed"]
        total_run += ran
        rate = f"{100 * r['passed'] / ran:.0f}%" if ran else "-"
        print(f"{package.name:40s} passed {r['passed']:4d}  failed {r['failed']:4d}  errors {r['errors']:4d}"
              f"  rate {rate:>5s} {r['note']}", flush=True)
        if args.show_failures:
            for line in r["failures"]:
                print("    " + line)
    rate = f"{100 * total_pass / total_run:.0f}%" if total_run else "-"
    print(f"{'TOTAL (' + ('Keras 2.3.1' if args.keras2 else 'arignote') + ')':40s} passed {total_pass:4d} "
          f"of {total_run:4d}  rate {rate:>5s}")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if total_pass == total_run else 1


if __name__ == "__main__":
    sys.exit(main())
