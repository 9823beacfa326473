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


def _parts(module: torch.nn.Module) -> tuple[list, list, list]:
    """A layer's own parameters, own buffers (what its plain torch submodules hold counts as its own)
    and the layers inside it, in creation order."""
    params, buffers = list(module.parameters(recurse=False)), list(module.buffers(recurse=False))
    layers: list = []
    for child in module.children():
        if isinstance(child, Layer):
            layers.append(child)
        else:
            p, b, sub = _parts(child)
            params, buffers, layers = params + p, buffers + b, layers + sub
    return params, buffers, layers


def keras_split(layer: Any) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """``(trainable_weights, non_trainable_weights)`` of ``layer`` as Keras 2.3.1 lists them (torch
    parameters and buffers, in creation order): its own trainable ones then its sublayers', then the
    others likewise; frozen, none trainable and its own weights before each sublayer's."""
    own = getattr(type(layer), "_keras_split", None)
    if own is not None:
        return layer._keras_split()
    if not isinstance(layer, Layer):
        if hasattr(layer, "trainable_weights"):  # a model used as a layer: what it lists
            return list(layer.trainable_weights), list(layer.non_trainable_weights)
        if isinstance(layer, torch.nn.Module):  # a plain torch module: no flags, all trainable
            return list(layer.parameters()), list(layer.buffers())
        return [], []  # a cell without weights (a plain object with call and state_size)
    params, buffers, layers = _parts(layer)
    frozen = layer._frozen
    trainable = [p for p in params if id(p) not in frozen]
    rest = [p for p in params if id(p) in frozen] + buffers
    subs = [keras_split(sub) for sub in layers]
    if layer.trainable:
        return trainable + [w for t, _ in subs for w in t], rest + [w for _, nt in subs for w in nt]
    return [], trainable + rest + [w for t, nt in subs for w in t + nt]


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
