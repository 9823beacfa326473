"""Which weights train, as Keras 2.3.1 decides it for layers that hold other layers (an RNN and its
cell, ``StackedRNNCells``, the wrappers): from the ``trainable`` flags at every level, not from what
the last ``trainable =`` assignment happened to set.

Keras 2.3.1 (``keras/layers/recurrent.py``, ``wrappers.py``): ``RNN.trainable_weights`` is ``[]`` when
the RNN is frozen, else its cell's trainable weights; its ``non_trainable_weights`` are the cell's,
after the cell's trainable ones when the RNN is frozen. So freezing an RNN and unfreezing it again
leaves a cell the user froze (or a cell weight created with ``trainable=False``) frozen. arignote
keeps weights as torch parameters and trains those with ``requires_grad``: :func:`apply` sets it from
:func:`keras_split`, so the two always agree.

Example::

    >>> import torch
    >>> from arignote.layers import RNN, SimpleRNNCell
    >>> rnn = RNN(SimpleRNNCell(2)); _ = rnn(torch.zeros(1, 3, 4))
    >>> rnn.cell.trainable = False
    >>> rnn.trainable = False; rnn.trainable = True  # the cell stays frozen, as in Keras
    >>> [p.requires_grad for p in rnn.parameters()], len(keras_split(rnn)[1])
    ([False, False, False], 3)
"""

from __future__ import annotations

from typing import Any

import torch

from arignote.layers.base import Layer

__all__ = ["keras_split", "apply"]


def keras_split(layer: Any) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """``(trainable_weights, non_trainable_weights)`` of ``layer`` as Keras 2.3.1 lists them (torch
    parameters and buffers, in the order the weights were created, trainable ones first)."""
    own = getattr(type(layer), "_keras_split", None)
    if own is not None:
        return layer._keras_split()
    if not isinstance(layer, Layer) or any(isinstance(m, Layer) for m in layer.modules() if m is not layer):
        if not hasattr(layer, "trainable_weights"):
            return [], []  # a cell without weights (a plain object with call and state_size)
        return list(layer.trainable_weights), list(layer.non_trainable_weights)  # a model, a composite layer
    frozen = layer._frozen
    created = [p for p in layer.parameters() if id(p) not in frozen]
    rest = [p for p in layer.parameters() if id(p) in frozen] + list(layer.buffers())
    return (created, rest) if layer.trainable else ([], created + rest)


def apply(layer: Any) -> None:
    """Set ``requires_grad`` of every parameter of ``layer`` to whether :func:`keras_split` lists it
    as trainable."""
    trainable = {id(p) for p in keras_split(layer)[0]}
    for p in layer.parameters():
        p.requires_grad_(id(p) in trainable)


def frozen_first(trainable: list, non_trainable: list, on: bool) -> tuple[list, list]:
    """A holder's split from its parts' (Keras 2.3.1's ``RNN`` / ``StackedRNNCells``): the parts'
    trainable weights when the holder is trainable, else nothing, and those before the rest."""
    return (trainable, non_trainable) if on else ([], trainable + non_trainable)
