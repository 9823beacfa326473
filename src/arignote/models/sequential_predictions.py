"""Keras 2's ``Sequential.predict_proba`` and ``predict_classes`` (a mixin of
:class:`arignote.models.Sequential`): :meth:`~arignote.models.Model.predict` read as probabilities
or as class indices.

Example::

    >>> import numpy as np
    >>> from arignote.layers import Dense
    >>> from arignote.models import Sequential
    >>> m = Sequential([Dense(4, activation="softmax", input_shape=(2,))])
    >>> m.predict_classes(np.zeros((3, 2), "float32")).shape
    (3,)
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = ["SequentialPredictions"]


class SequentialPredictions:
    """``predict_proba``, ``predict_classes`` (``self`` is a ``Sequential``: ``predict`` comes from it)."""

    def predict_proba(self, x: Any, batch_size: int = 32, verbose: int = 0) -> np.ndarray:
        """Keras 2's ``Sequential.predict_proba``: :meth:`predict`, with a warning when the outputs
        are not probabilities (below 0 or above 1: the last layer is not a softmax or sigmoid).

        Example::

            >>> from arignote import config; config.configure(print_active_device=False)
            >>> from arignote.layers import Dense
            >>> from arignote.models import Sequential
            >>> m = Sequential([Dense(3, activation="softmax", input_shape=(2,))])
            >>> m.predict_proba(np.zeros((4, 2), "float32")).shape
            (4, 3)
        """
        preds = self.predict(x, batch_size=batch_size, verbose=verbose)
        if preds.min() < 0.0 or preds.max() > 1.0:
            warnings.warn("Network returning invalid probability values. The last layer might not normalize "
                          "predictions into probabilities (like softmax or sigmoid would).", stacklevel=2)
        return preds

    def predict_classes(self, x: Any, batch_size: int = 32, verbose: int = 0) -> np.ndarray:
        """Keras 2's ``Sequential.predict_classes``: the argmax of the last axis of :meth:`predict`,
        or, for a single output unit, ``(p > 0.5)`` as int32 (shape ``(n, 1)``, as Keras 2).

        Example::

            >>> from arignote import config; config.configure(print_active_device=False)
            >>> from arignote.layers import Dense
            >>> from arignote.models import Sequential
            >>> m = Sequential([Dense(1, activation="sigmoid", input_shape=(2,))])
            >>> m.predict_classes(np.zeros((4, 2), "float32")).tolist()
            [[0], [0], [0], [0]]
        """
        proba = self.predict(x, batch_size=batch_size, verbose=verbose)
        if proba.shape[-1] > 1:
            return proba.argmax(axis=-1)
        return (proba > 0.5).astype("int32")
