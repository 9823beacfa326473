"""Run the corpus of Keras-2-style scripts (tests/keras2_scripts/) on REAL Keras 2.3.1 (Theano backend).

    /work/k2venv/bin/python scripts/run_keras2_scripts_on_keras.py [NAME ...] [--timeout S]

Each script is copied into a fresh temporary working directory with the import rename reversed
(``arignote`` -> ``keras``) and run by the side venv's Python (scripts/setup-keras2-venv.sh) as
``python -c "import keras2_shim; keras2_shim.force_unroll(); exec(...)"`` with scripts/ on
``sys.path`` (the shim makes Keras 2.3.1 + Theano import on Python 3.11; Theano's scan does not build
there, so RNNs unroll, or with ``--rnn scan`` run scan's pure Python implementation, which compiles much
faster for long sequences). Theano compiles into ``--compiledir`` (default ``/tmp/corpus-theano``; give
each concurrent session its own, Theano locks the directory). Prints one line per script
(``ok``/``FAIL``/``timeout`` and the seconds taken) and the tail of the output of a failure; exits 1
if any failed. The interpreter running this file does not matter: it only starts subprocesses.

Example::

    python scripts/run_keras2_scripts_on_keras.py callbacks_tour stateful_lstm
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "keras2_scripts"
K2PYTHON = "/work/k2venv/bin/python"

_RENAME = re.compile(r"\barignote\b")


def to_keras(source: str) -> str:
    """Reverse the import rename: every ``arignote`` module name becomes ``keras`` again.

        >>> to_keras("from arignote.layers import Dense\\n")
        'from keras.layers import Dense\\n'
    """
    return _RENAME.sub("keras", source)


BOOT = ("import sys; sys.path.insert(0, {scripts!r}); import keras2_shim; keras2_shim.{rnn}(); "
        "sys.argv = [{path!r}]; __file__ = {path!r}; exec(compile(open({path!r}).read(), {path!r}, 'exec'))")


def run(name: str, timeout: float, compiledir: str = "/tmp/corpus-theano",
        rnn: str = "unroll") -> tuple[str, float, str]:
    work = Path(tempfile.mkdtemp(prefix=f"k2-{name}-"))
    path = work / f"{name}.py"
    path.write_text(to_keras((SCRIPTS / f"{name}.py").read_text()))
    env = dict(os.environ, KERAS_BACKEND="theano", OMP_NUM_THREADS="1",
               THEANO_FLAGS=f"blas.ldflags=,floatX=float32,base_compiledir={compiledir}")
    start = time.time()
    try:
        boot = BOOT.format(scripts=str(ROOT / "scripts"), path=str(path), rnn=RNN_MODES[rnn])
        out = subprocess.run([K2PYTHON, "-c", boot], cwd=work, env=env, capture_output=True, text=True,
                             timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return "timeout", time.time() - start, ""
    text = out.stdout + out.stderr
    ok = out.returncode == 0 and f"OK {name}" in out.stdout
    return ("ok" if ok else "FAIL"), time.time() - start, text


RNN_MODES = {"unroll": "force_unroll", "scan": "python_scan"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="script names (default: all)")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--rnn", choices=sorted(RNN_MODES), default="unroll",
                        help="unroll every RNN (default) or run Theano's scan in Python (long sequences)")
    parser.add_argument("--compiledir", default="/tmp/corpus-theano", help="Theano's base_compiledir")
    args = parser.parse_args()
    names = args.names or sorted(p.stem for p in SCRIPTS.glob("*.py"))
    failed = 0
    for name in names:
        status, seconds, text = run(name, args.timeout, args.compiledir, args.rnn)
        print(f"{status:8s} {name} ({seconds:.0f} s)", flush=True)
        if status != "ok":
            failed += 1
            print(text[-3000:], flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
