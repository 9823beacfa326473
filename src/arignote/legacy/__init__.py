"""Keras 2's ``keras.legacy`` package path: ``from keras.legacy import interfaces`` in custom layers
written for Keras 2.0-2.3 (see :mod:`arignote.legacy.interfaces`), and ``keras.legacy.layers``
(:mod:`arignote.legacy.layers`: the Keras 1 layers, imported on first use).

Example::

    >>> from arignote.legacy import interfaces
    >>> callable(interfaces.legacy_dense_support)
    True
"""

from arignote.legacy import interfaces

__all__ = ["interfaces"]
