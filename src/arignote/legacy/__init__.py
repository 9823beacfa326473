"""Keras 2's ``keras.legacy`` package path: ``from keras.legacy import interfaces`` in custom layers
written for Keras 2.0-2.3 (see :mod:`arignote.legacy.interfaces`), and ``keras.legacy.layers``
(:mod:`arignote.legacy.layers`: the Keras 1 layers, imported on first use).

Example::

    >>> from arignote.legacy import interfaces
    >>> callable(interfaces.legacy_dense_support)
    True
"""

from arignote._lazy import lazy_namespace

# `interfaces` loads on first use: the layers import only `conversions` (Keras 1's argument names), and
# `from arignote.legacy import conversions` runs this file first (issue 32, the first use's import time)
__getattr__, __dir__ = lazy_namespace(__name__, {"interfaces": "arignote.legacy.interfaces"}, globals())

__all__ = ["interfaces"]
