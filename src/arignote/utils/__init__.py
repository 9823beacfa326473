"""Keras 2 ``utils``: ``to_categorical`` (also as ``np_utils.to_categorical``) and ``Sequence``.

Example::

    >>> from arignote.utils import to_categorical, np_utils
    >>> to_categorical([1], 2).tolist(), np_utils.to_categorical is to_categorical
    ([[0.0, 1.0]], True)
"""

from arignote.utils import np_utils
from arignote.utils.data_utils import Sequence
from arignote.utils.np_utils import to_categorical

__all__ = ["to_categorical", "np_utils", "Sequence"]
