"""The Keras layer names arignote deliberately leaves out, with what to use instead.

Keras 2.3.1 still exported a few Keras 1 layers (``keras.legacy``) from ``keras.layers`` and its
submodules. MaxoutDense, Highway and the Atrous constructors are provided
(:mod:`arignote.layers.legacy`); Keras 1's abstract recurrent bases are not: arignote answers them
with one :class:`~arignote.errors.KerasNameMissing` that names the Keras 2 replacement. Each module
path that had such names installs :func:`legacy_getattr` as its module ``__getattr__``.

Example::

    >>> getattr_ = legacy_getattr("arignote.layers.recurrent", ["Recurrent"])
    >>> try:
    ...     getattr_("Recurrent")
    ... except ImportError as e:
    ...     print(str(e).split("; ")[1])
    use RNN(cell) with a cell class (SimpleRNNCell, LSTMCell, GRUCell or your own) instead
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from arignote.errors import keras_names_missing

__all__ = ["LEGACY", "legacy_getattr"]

#: each left-out legacy layer name -> what to write instead
LEGACY = {
    "Recurrent": "RNN(cell) with a cell class (SimpleRNNCell, LSTMCell, GRUCell or your own)",
    "ConvRecurrent2D": "ConvLSTM2D",
}


def legacy_getattr(module: str, names: Iterable[str]) -> Callable[[str], object]:
    """The module ``__getattr__`` of ``module`` for its legacy ``names`` (each a key of LEGACY)."""
    return keras_names_missing(module, {name: LEGACY[name] for name in names}, deliberate=True,
                               origin="a Keras 1 legacy layer, keras.legacy.layers.{name}")
