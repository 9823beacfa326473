"""Keras 2.3.1's ``keras.utils.metrics_utils``: ``Reduction``, how a ``Reduce`` metric combines its
values (published metric subclasses import it). The rest of that module is the internals of Keras's
TensorFlow metric classes (arignote's metric classes, :mod:`arignote.metrics`, do that work).

Example::

    >>> from arignote.metrics import Reduce
    >>> Reduce(Reduction.SUM, name="total").reduction
    'sum'
"""

from arignote.errors import keras_names_missing
from arignote.metrics.base import Reduction

__all__ = ["Reduction"]

__getattr__ = keras_names_missing(
    "arignote.utils.metrics_utils",
    {name: "arignote.metrics (Metric, Reduce, AUC, Precision, Recall, ...), whose classes do this"
     for name in ("update_state_wrapper", "result_wrapper", "filter_top_k", "to_list", "ConfusionMatrix",
                  "AUCCurve", "AUCSummationMethod", "update_confusion_matrix_variables")},
    deliberate=True)
