"""Keras 2's updates and losses "conditional on inputs": what ``layer.updates``,
``get_updates_for(inputs)`` and ``get_losses_for(inputs)`` read.

torch runs an update (BatchNormalization's moving averages) in place while the layer computes, so
nothing is left to schedule; what Keras 2 code inspects is the bookkeeping: which updates a layer
has, and on which of its inputs each depends (``None``: unconditional). A built-in layer whose call
updates state tells :func:`symbolic_updates` what it adds for one symbolic call; ``add_update`` /
``add_loss`` record what the user adds outside a running forward (symbolic inputs or plain values;
a torch tensor made during a forward was applied already and is not kept, so nothing grows batch
after batch).

Example::

    >>> from arignote.layers import Dense, Input
    >>> a = Input(shape=(2,))
    >>> layer = Dense(1)
    >>> layer.add_update("u", inputs=a); layer.add_update("v")
    >>> layer.get_updates_for(a), layer.get_updates_for(None)
    (['u'], ['v'])
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

from arignote.graph.tensor import flatten, is_symbolic, record_symbolic

__all__ = ["inputs_key", "record", "select", "symbolic_updates", "symbolic_activity_loss",
           "note_activity_call", "activity_losses_for"]


def inputs_key(inputs: Any) -> tuple | None:
    """Keras's ``object_list_uid``: the identities of the input tensors (None: unconditional)."""
    if inputs is None:
        return None
    leaves = flatten(inputs) if isinstance(inputs, (list, tuple, dict)) else [inputs]
    return tuple(id(t) for t in leaves) or None


def record(store: list, items: Any, inputs: Any) -> None:
    """Append ``items`` (one or a list) to ``store`` as ``(item, inputs_key)``, unless they are torch
    tensors of a running forward (see the module doc)."""
    items = list(items) if isinstance(items, (list, tuple)) else [items]
    key = inputs_key(inputs)
    for item in items:
        if item is None or (isinstance(item, torch.Tensor) and not is_symbolic(inputs)):
            continue
        store.append((item, key))


def select(store: list, inputs: Any) -> list:
    """The items of ``store`` that depend on exactly ``inputs`` (None: the unconditional ones)."""
    key = inputs_key(inputs)
    return [item for item, k in store if k == key]


def symbolic_updates(layer: Any, inputs: Any, kwargs: dict) -> None:
    """After ``layer`` was called on symbolic ``inputs``: record the updates that call adds
    (``layer._updates_per_call``: a method giving them, or None), unless ``training=False``."""
    make = getattr(layer, "_updates_per_call", None)
    if make is None or kwargs.get("training") in (False, 0):
        return
    record(layer._updates, make(), inputs)


def activity_penalty(y: Any, regularizer: Any) -> Any:
    """The penalty ``regularizer(y)`` of a layer's output (the graph node of an activity loss)."""
    return regularizer(y)


def symbolic_activity_loss(layer: Any, inputs: Any) -> None:
    """After ``layer`` (with an ``activity_regularizer``) was called on symbolic ``inputs``: record the
    penalty of that call's output as a loss conditional on ``inputs``, a symbolic tensor (Keras 2.3.1's
    ``Layer.__call__`` adds one per call: a layer shared by two inputs has two; ``model.losses``
    lists those of its own calls; ``K.function`` evaluates one). Training adds the penalty of each
    forward itself (``layer._activity``)."""
    regularizer = getattr(layer, "activity_regularizer", None)
    if regularizer is None and type(layer).__name__ == "TimeDistributed":
        # Keras 2.3.1's TimeDistributed applies its inner layer's activity regularizer to its output
        regularizer = getattr(getattr(layer, "layer", None), "activity_regularizer", None)
    if regularizer is None or not layer._inbound_nodes:
        return
    outputs = layer._inbound_nodes[-1].output_tensors
    output = outputs[0] if len(outputs) == 1 else list(outputs)
    record(layer._loss_inputs, record_symbolic(activity_penalty, output, regularizer=regularizer),
           inputs)


def note_activity_call(layer: Any, inputs: Any) -> None:
    """After a call of ``layer`` on torch tensors whose ``call`` added an activity penalty
    (``layer._add_activity_loss``): keep that penalty as conditional on ``inputs``, as Keras 2.3.1's
    ``Layer.__call__`` adds it (``add_loss(penalty, inputs=inputs)``). Only the last call's is kept
    (weak references to its inputs), so a training loop adds nothing batch after batch."""
    penalty = layer.__dict__.pop("_activity_loss")
    leaves = flatten(inputs) if isinstance(inputs, (list, tuple, dict)) else [inputs]
    refs = tuple(weakref.ref(t) for t in leaves if isinstance(t, torch.Tensor))
    layer.__dict__["_activity_call"] = (penalty, refs)


def activity_losses_for(layer: Any, inputs: Any) -> list:
    """``[penalty]`` when the last call of ``layer`` on torch tensors was on exactly ``inputs`` (the
    same tensor objects) and its penalty is still among the layer's call losses; else ``[]``."""
    noted = layer.__dict__.get("_activity_call")
    if noted is None or inputs is None:
        return []
    penalty, refs = noted
    leaves = flatten(inputs) if isinstance(inputs, (list, tuple, dict)) else [inputs]
    same = len(leaves) == len(refs) and all(ref() is t for ref, t in zip(refs, leaves))
    return [penalty] if same and any(loss is penalty for loss in layer._call_losses) else []
