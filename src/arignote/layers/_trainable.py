"""Which weights train, as Keras 2.3.1 decides it for layers and models that hold other layers (an RNN
and its cell, ``StackedRNNCells``, the wrappers, a user's layer holding Dense layers, a model and its
layers, a model inside another): from the ``trainable`` flags at every level, not from what the last
``trainable =`` assignment happened to set.

Keras 2.3.1 (``keras/engine/base_layer.py``, ``network.py``, ``layers/recurrent.py``, ``wrappers.py``):
a layer's ``trainable_weights`` are its own trainable weights then its sublayers', ``[]`` while it is
frozen; its ``non_trainable_weights`` the others likewise (frozen: its own weights, then each
sublayer's ``weights``); ``weights`` is ``trainable_weights + non_trainable_weights``. A model lists
its layers the same way and leaves their flags alone, so freezing a model (or an RNN) and unfreezing
it again gives back the per-layer freezing the user had. arignote keeps weights as torch parameters
and trains those with ``requires_grad``: :func:`apply` sets it from :func:`keras_split` and from the
flags of every layer or model found holding this one, so a weight trains only while its own layer
and every enclosing one are trainable (``compile`` then fixes, per model, what its ``fit`` trains:
:mod:`arignote.models.compiled_state`).

Example::

    >>> import torch
    >>> from arignote.layers import RNN, SimpleRNNCell
    >>> rnn = RNN(SimpleRNNCell(2)); _ = rnn(torch.zeros(1, 3, 4))
    >>> rnn.cell.trainable = False
    >>> rnn.trainable = False; rnn.trainable = True  # the cell stays frozen, as in Keras
    >>> [p.requires_grad for p in rnn.parameters()], len(keras_split(rnn)[1])
    ([False, False, False], 3)
    >>> rnn.cell.trainable = True; rnn.trainable = False; rnn.cell.trainable = True
    >>> [p.requires_grad for p in rnn.parameters()]  # its RNN is frozen: the cell does not train
    [False, False, False]

The lists ``weights`` / ``trainable_weights`` / ``non_trainable_weights`` return are
:class:`WeightList`: they compare weights as Keras 2.3.1 compares its variables, by which weight they
are, not by value. One weight has two faces here, the torch parameter (``trainable_weights``: what
autograd and the optimizers train) and its Keras-layout view (``weights``: a Dense kernel ``(in, out)``
over the torch ``(out, in)`` parameter); a plain list compares tensors with ``==``, elementwise
("Boolean value of Tensor with more than one value is ambiguous"), a ``WeightList`` by weight (the same
object, or the whole parameter and a whole view of it):

    >>> p = torch.nn.Parameter(torch.zeros(3, 2))
    >>> WeightList([p.T]) == [p], p.T in WeightList([p]), WeightList([p[0]]) == [p]
    (True, True, False)
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

import torch

__all__ = ["keras_split", "model_split", "keras_weights", "model_weights", "apply", "WeightList",
           "same_weight"]


def is_layer(obj: Any) -> bool:
    """An arignote ``Layer`` (told by a class marker: ``layers.base`` imports this module)."""
    return isinstance(obj, torch.nn.Module) and getattr(type(obj), "_keras_layer", False)


def _parts(module: torch.nn.Module) -> tuple[list, list, list]:
    """A layer's own parameters, own buffers (what its plain torch submodules hold counts as its own)
    and the layers inside it, in creation order."""
    params, buffers = list(module.parameters(recurse=False)), list(module.buffers(recurse=False))
    layers: list = []
    for child in module.children():
        if is_layer(child):
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
    if not is_layer(layer):
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


def model_split(model: Any) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Keras 2.3.1's ``Network.trainable_weights`` / ``non_trainable_weights`` of a functional,
    Sequential or subclassed model: every layer's trainable weights in layer order, then every other
    one; frozen, none trainable (its layers' trainable weights first). The layers keep their flags."""
    subs = [keras_split(layer) for layer in _own_and_layers(model)]
    trainable = [w for t, _ in subs for w in t]
    rest = [w for _, nt in subs for w in nt]
    return (trainable, rest) if model.trainable else ([], trainable + rest)


def keras_weights(layer: Any) -> list[torch.Tensor]:
    """Keras 2.3.1's ``layer.weights`` of a layer without a weight table of its own (a user's layer),
    as Keras-layout tensors: ``trainable_weights + non_trainable_weights`` (a weight created with
    ``trainable=False`` after the trainable ones, whatever order ``build`` created them in; a sublayer's
    weights in its own Keras layout). Non-persistent buffers are not weights."""
    params, buffers, layers = _parts(layer)
    buffers = [b for b in buffers if _persistent(layer, b)]
    trainable = [p for p in params if id(p) not in layer._frozen]
    rest = [p for p in params if id(p) in layer._frozen] + buffers
    subs = [view_split(sub) for sub in layers]
    if layer.trainable:
        return trainable + [w for t, _ in subs for w in t] + rest + [w for _, nt in subs for w in nt]
    return trainable + rest + [w for t, nt in subs for w in t + nt]


def view_split(layer: Any) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """``layer.weights`` (Keras-layout tensors, Keras order) cut into its trainable part and the rest
    (a model used as a layer: its ``weights``)."""
    views = list(layer._keras_weights() if hasattr(layer, "_keras_weights") else layer.weights)
    if not layer.trainable:
        return [], views
    t, nt = keras_split(layer)
    # a weight computed from several parameters (CuDNN layouts): all counted trainable
    n = len(t) if len(t) + len(nt) == len(views) else len(views)
    return views[:n], views[n:]


def model_weights(model: Any) -> list[torch.Tensor]:
    """Keras 2.3.1's ``model.weights`` (``trainable_weights + non_trainable_weights``) as Keras-layout
    tensors: every layer's trainable weights, then the others (frozen or not: a model keeps that order)."""
    subs = [view_split(layer) for layer in _own_and_layers(model)]
    return [w for t, _ in subs for w in t] + [w for _, nt in subs for w in nt]


def _own_and_layers(model: Any) -> list:
    """The holder of a model's own weights (``model.add_weight``; Keras 2.3.1 lists them first), then
    its layers."""
    own = model.__dict__.get("_own_weights")
    return ([own] if own is not None else []) + list(model.layers)


def _persistent(layer: torch.nn.Module, buffer: torch.Tensor) -> bool:
    for module in layer.modules():
        for name, b in module._buffers.items():
            if b is buffer:
                return name not in module._non_persistent_buffers_set
    return True


def children(holder: Any) -> list:
    """The layers (or models) directly inside ``holder`` whose flags Keras 2.3.1 nests under its own."""
    own = getattr(holder, "_keras_children", None)
    if own is not None:
        return own()
    if is_layer(holder):
        return _parts(holder)[2]
    try:
        return list(holder.layers)
    except (AttributeError, TypeError):  # a model wrapping a plain torch module: no layers
        return []


# layer or model -> the layers and models found holding it (weak both ways, and outside the objects:
# a layer pickles and deep-copies as before)
_HELD_BY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _holders(obj: Any) -> Any:
    held = _HELD_BY.get(obj)
    if held is None:
        held = _HELD_BY[obj] = weakref.WeakSet()
    return held


def _record(holder: Any, seen: set[int]) -> None:
    """Note ``holder`` in each layer inside it (at every depth), for :func:`enclosing_trainable`."""
    if id(holder) in seen:
        return
    seen.add(id(holder))
    for child in children(holder):
        _holders(child).add(holder)
        _record(child, seen)


def enclosing_trainable(obj: Any, seen: frozenset = frozenset()) -> bool:
    """Whether every layer or model known to hold ``obj`` (at every level up) is trainable."""
    for holder in list(_HELD_BY.get(obj, ())):
        if id(holder) in seen or not any(c is obj for c in children(holder)):
            continue  # a cycle, or obj was taken out of it since
        if not holder.trainable or not enclosing_trainable(holder, seen | {id(obj)}):
            return False
    return True


def parameters(obj: Any) -> list[torch.Tensor]:
    """The torch parameters of a layer or a model (its module's)."""
    module = obj if isinstance(obj, torch.nn.Module) else getattr(obj, "module", None)
    return list(module.parameters()) if isinstance(module, torch.nn.Module) else []


def apply(layer: Any) -> None:
    """Set ``requires_grad`` of every parameter of ``layer`` (a layer or a model) to whether
    :func:`keras_split` lists it as trainable and every layer or model holding ``layer`` is trainable;
    note ``layer`` as the holder of the layers inside it."""
    _record(layer, set())
    on = enclosing_trainable(layer)
    trainable = {id(p) for p in keras_split(layer)[0]} if on else set()
    for p in parameters(layer):
        p.requires_grad_(id(p) in trainable)


def frozen_first(trainable: list, non_trainable: list, on: bool) -> tuple[list, list]:
    """A holder's split from its parts' (Keras 2.3.1's ``RNN`` / ``StackedRNNCells``): the parts'
    trainable weights when the holder is trainable, else nothing, and those before the rest."""
    return (trainable, non_trainable) if on else ([], trainable + non_trainable)


def _source(t: Any) -> Any:
    """The torch parameter ``t`` shows whole (itself, a whole view of it, or a reordered copy made
    for the Keras layout), else None."""
    if not isinstance(t, torch.Tensor):
        return None
    copied = getattr(t, "_keras_source", None)  # gates kept in another order: a copy that writes back
    if copied is not None:
        return copied[0]
    base = t._base if t._base is not None else t
    return base if base.numel() == t.numel() else None


def same_weight(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are the same weight (see the module doc)."""
    if a is b:
        return True
    src = _source(a)
    return src is not None and src is _source(b)


class WeightList(list):
    """A list of weights that compares them by weight (see the module doc)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, list):
            return NotImplemented
        return len(self) == len(other) and all(same_weight(a, b) for a, b in zip(self, other))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]

    def __contains__(self, item: object) -> bool:
        return any(same_weight(w, item) for w in self)

    def index(self, item: Any, start: int = 0, stop: int = sys.maxsize) -> int:  # type: ignore[override]
        for i in range(*slice(start, stop).indices(len(self))):
            if same_weight(self[i], item):
                return i
        raise ValueError("the weight is not in the list")

    def __add__(self, other: Any) -> WeightList:
        return WeightList(list(self) + list(other))
