"""Theano's spellings of arignote's flags: section.key aliases (``gpuarray.preallocate``), the Theano
flags that mean nothing here (accepted with a notice instead of an error), and Theano's ``gpu``/``gpuN``
device names (read as ``cuda``/``cudaN``).

Example::

    >>> notes = []
    >>> theano_device("gpu1,cpu", "~/.arignoterc:2", notes), THEANO_ALIASES["lib.cnmem"]
    ('cuda1,cpu', 'memory.preallocate')
    >>> notes
    ['note: device=gpu1 (from ~/.arignoterc:2) is the Theano spelling; read as device=cuda1']
"""

from __future__ import annotations

__all__ = ["THEANO_ALIASES", "THEANO_IGNORED", "theano_device"]

# Theano spellings accepted in rc files and ARIGNOTE_FLAGS: section.key -> arignote flag.
THEANO_ALIASES = {
    "gpuarray.preallocate": "memory.preallocate",
    "lib.cnmem": "memory.preallocate",
    "global.floatx": "floatX",
}
# Theano flags that have no meaning here: accepted with a one-line notice instead of an error.
THEANO_IGNORED = {
    "mode", "optimizer", "cxx", "exception_verbosity", "allow_gc", "force_device", "openmp",
    "optimizer_including", "optimizer_excluding", "warn_float64", "compiledir", "base_compiledir",
    "nvcc.fastmath", "nvcc.flags", "blas.ldflags", "dnn.include_path", "dnn.library_path",
    "gpuarray.sched", "cuda.root", "scan.allow_gc",
}


def theano_device(spec: str, where: str, notes: list[str]) -> str:
    parts = [p.strip() for p in spec.split(",")]
    out = []
    for p in parts:
        if p.lower().startswith("gpu") and (p[3:] == "" or p[3:].isdigit()):
            new = "cuda" + p[3:]
            notes.append(f"note: device={p} (from {where}) is the Theano spelling; read as device={new}")
            out.append(new)
        else:
            out.append(p)
    return ",".join(out)
