"""Keras 2's optimizer variables (``optimizer.lr``) as floats that ``K.set_value`` can write back.

Example::

    >>> from arignote import backend as K
    >>> from arignote.optimizers import SGD
    >>> opt = SGD(lr=0.1)
    >>> K.set_value(opt.lr, 0.01); K.get_value(opt.lr), opt.lr * 2
    (0.01, 0.02)
"""

from __future__ import annotations

from typing import Any

__all__ = ["HyperParameter"]


class HyperParameter(float):
    """Keras 2's ``optimizer.lr`` variable: a float (its value when read) that ``K.set_value`` and
    ``.assign`` write back to the optimizer (``owner.<name> = value``), and ``K.get_value`` reads live."""

    def __new__(cls, value: float, owner: Any, name: str) -> HyperParameter:
        obj = super().__new__(cls, value)
        obj._owner, obj._name = owner, name
        return obj

    def value(self) -> float:
        """The optimizer's current value (not the one captured when this object was read)."""
        return float(getattr(self._owner, self._name))

    def assign(self, value: Any) -> None:
        """Set the optimizer's hyper-parameter (validated as the constructor does)."""
        setattr(self._owner, self._name, float(value) if hasattr(value, "__float__") else value)

    def numpy(self) -> float:
        return self.value()

    def __reduce__(self) -> tuple:  # pickles and copies as the plain number
        return float, (float(self),)
