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
           "note_activity_call", "activity_losses_for", "sublayer_activity_losses"]


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


def sublayer_penalty(x: Any, layer: Any) -> Any:
    """The activity penalty of ``layer(x)`` (the graph node of a sublayer's activity loss)."""
    layer(x)
    return layer.__dict__["_activity_call"][0]


def sublayer_activity_losses(layer: Any, inputs: Any, stand_ins: Any) -> None:
    """After ``layer``'s ``call`` ran on torch ``stand_ins`` of its symbolic ``inputs`` (to learn its
    output shapes): each sublayer whose activity penalty came from a call on some of those stand-ins
    gets that penalty recorded as a symbolic loss conditional on the matching symbolic inputs, as Keras
    2.3.1 records it when a custom layer's ``call`` calls a Dense on the tensors it was given
    (``model.get_losses_for(inputs)`` finds it). A sublayer called on an intermediate tensor depends on
    a tensor outside the model: Keras 2.3.1 keeps that one out of ``model.losses``, and so do we."""
    symbolic = flatten(inputs) if isinstance(inputs, (list, tuple, dict)) else [inputs]
    torch_leaves = flatten(stand_ins) if isinstance(stand_ins, (list, tuple, dict)) else [stand_ins]
    by_id = {id(t): s for t, s in zip(torch_leaves, symbolic)}
    for sub in layer.modules():
        noted = sub.__dict__.get("_activity_call") if sub is not layer else None
        if noted is None:
            continue
        found = [by_id.get(id(ref())) for ref in noted[1]]
        if not found or any(s is None for s in found):
            continue
        x = found[0] if len(found) == 1 else found
        record(sub._loss_inputs, record_symbolic(sublayer_penalty, x, layer=sub), x)
