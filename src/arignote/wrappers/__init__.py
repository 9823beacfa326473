"""Keras 2 ``wrappers``: ``scikit_learn.KerasClassifier`` and ``KerasRegressor``.

Example::

    >>> from arignote.wrappers.scikit_learn import KerasClassifier, KerasRegressor
"""

from arignote.wrappers import scikit_learn

__all__ = ["scikit_learn"]
