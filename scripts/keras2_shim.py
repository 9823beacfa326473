"""Make Keras 2.3.1 + Theano 1.0.5 import and behave on Python 3.11 with h5py 3.

Imported (first) by scripts/make_keras2_fixtures.py and scripts/check_keras2_reads_ours.py,
which run in the side venv that scripts/setup-keras2-venv.sh builds; never by arignote.

* ``collections.Iterable`` & co. moved to ``collections.abc`` (gone from ``collections`` in 3.10);
  Keras 2.3.1 imports them from the old place.
* Theano: no BLAS library to link (``blas.ldflags=``), compiled modules in /tmp, float32.
* h5py 3 writes Python ``bytes`` attributes as variable-length strings and reads them back as
  ``str``; h5py 2 (what Keras 2 users had) wrote fixed-length byte strings and read back bytes.
  The attribute manager is patched both ways so files look like h5py-2-era Keras files and
  Keras's ``.decode('utf8')`` calls work on whatever it reads.
"""

import collections
import collections.abc
import os
import tempfile

for _name in ("Iterable", "Mapping", "MutableMapping", "Sequence", "Callable", "Hashable", "Set"):
    if not hasattr(collections, _name):
        setattr(collections, _name, getattr(collections.abc, _name))

os.environ.setdefault("KERAS_BACKEND", "theano")
_compiledir = os.path.join(tempfile.gettempdir(), f"theano-keras2-{os.getuid()}")
os.environ.setdefault("THEANO_FLAGS", "blas.ldflags=,floatX=float32,base_compiledir=" + _compiledir)

import h5py  # noqa: E402
import numpy as np  # noqa: E402

_set = h5py._hl.attrs.AttributeManager.__setitem__
_get = h5py._hl.attrs.AttributeManager.__getitem__


def _as_h5py2(value):
    if isinstance(value, bytes):
        return np.bytes_(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, bytes) for v in value):
        return np.array(value, dtype="S")
    return value


def _setitem(self, name, value):
    _set(self, name, _as_h5py2(value))


def _getitem(self, name):
    value = _get(self, name)
    if isinstance(value, str):
        return value.encode("utf8")
    if isinstance(value, np.ndarray) and value.dtype == object:
        return np.array([v.encode("utf8") if isinstance(v, str) else v for v in value], dtype=object)
    return value


h5py._hl.attrs.AttributeManager.__setitem__ = _setitem
h5py._hl.attrs.AttributeManager.__getitem__ = _getitem


def python_scan():
    """Make Theano's scan run its pure Python implementation: the C one (scan_perform_ext) does not build
    on Python 3.11. Slower per step than an unrolled graph, but much faster to compile for long
    sequences."""
    import sys

    sys.modules["theano.scan_module.scan_perform_ext"] = None  # the import fails: Theano falls back


def force_unroll():
    """Theano's scan needs a C extension that does not build on Python 3.11 (longintrepr.h moved):
    make every Keras RNN unroll (the results are the same; the sequence length must be known).
    Theano refuses to unroll one time step (``input_length=1``): that case runs scan in Theano's pure
    Python implementation instead (the C one is the extension that does not build)."""
    from keras import backend
    from keras.layers import recurrent

    python_scan()
    rnn = backend.rnn

    def rnn_one_step_scans(*args, **kwargs):
        if kwargs.get("input_length") == 1:
            kwargs["unroll"] = False
        return rnn(*args, **kwargs)

    backend.rnn = rnn_one_step_scans  # keras.layers.recurrent calls K.rnn on this module

    init = recurrent.RNN.__init__

    def patched(self, *args, **kwargs):
        if len(args) < 6:  # (ConvRNN2D passes unroll=False by position, refuses True, and its K.rnn
            kwargs["unroll"] = True  # call, which passes no unroll, scans in Theano's Python scan)
        init(self, *args, **kwargs)

    recurrent.RNN.__init__ = patched
