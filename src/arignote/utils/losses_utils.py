"""Keras 2.3.1's ``keras.utils.losses_utils``: ``Reduction``, how 2.3.1 users pass a loss's reduction
(``MeanSquaredError(reduction=losses_utils.Reduction.SUM)``). The rest of that module is the
internals of Keras's ``Loss.__call__`` (:mod:`arignote.losses.classes` does that work here).

Example::

    >>> from arignote.losses import MeanAbsoluteError
    >>> MeanAbsoluteError(reduction=Reduction.SUM).reduction
    'sum'
"""

from arignote.errors import keras_names_missing
from arignote.losses.classes import Reduction

__all__ = ["Reduction"]

__getattr__ = keras_names_missing(
    "arignote.utils.losses_utils",
    {name: "a Loss object (arignote.losses.Loss and its subclasses), whose __call__ does this"
     for name in ("squeeze_or_expand_dimensions", "reduce_weighted_loss", "compute_weighted_loss")},
    deliberate=True)
