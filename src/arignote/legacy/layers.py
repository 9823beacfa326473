"""Keras 2's ``keras.legacy.layers``: the Keras 1 layers Keras 2 kept for old code. ``MaxoutDense``,
``Highway`` and ``AtrousConvolution1D/2D`` are arignote's (:mod:`arignote.layers.legacy`); Keras 1's
abstract ``Recurrent`` and ``ConvRecurrent2D`` bases raise :class:`arignote.errors.KerasNameMissing`
(an ImportError) naming the Keras 2 replacement.

Example::

    >>> from arignote.legacy.layers import MaxoutDense
    >>> MaxoutDense(3, nb_feature=2).nb_feature
    2
"""

from arignote.layers._left_out import legacy_getattr
from arignote.layers.legacy import AtrousConvolution1D, AtrousConvolution2D, Highway, MaxoutDense

__all__ = ["MaxoutDense", "Highway", "AtrousConvolution1D", "AtrousConvolution2D"]

__getattr__ = legacy_getattr("arignote.legacy.layers", ["Recurrent", "ConvRecurrent2D"])
