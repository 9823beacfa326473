"""Keras 2's bookkeeping on a layer (a mixin of :class:`arignote.layers.base.Layer`): its losses
(``add_loss``, ``losses``: weight penalties, added losses, the last call's), updates and losses
conditional on inputs (``add_update``, ``updates``, ``get_updates_for``, ``get_losses_for``:
:mod:`arignote.layers.conditional`), ``uses_learning_phase``, and the tracking attributes Keras's
own tests read (``_layers``, ``_trainable_weights``, ``_non_trainable_weights``).

Example::

    >>> from arignote.layers import BatchNormalization, Input
    >>> bn = BatchNormalization()
    >>> _ = bn(Input(shape=(3,)))
    >>> len(bn.updates), bn.uses_learning_phase
    (2, True)
"""

from __future__ import annotations

from typing import Any

from torch import nn

from arignote.graph import state
from arignote.graph.tensor import KerasTensor
from arignote.layers import conditional
from arignote.layers._trainable import is_layer

__all__ = ["Bookkeeping", "is_model", "is_metric", "track_metric", "layer_metrics"]

_METRIC_GENERATION = [0]  # bumped whenever a layer or model gains a metric (layers.added_metrics.refresh)


def is_metric(value: Any) -> bool:
    """A ``keras.metrics.Metric`` object (``arignote.metrics.base.Metric`` marks its class)."""
    return getattr(type(value), "_keras_metric", False)


def track_metric(owner: Any, metric: Any) -> None:
    """Keep ``metric`` in ``owner._metrics`` once (Keras 2.3.1 tracks a metric attribute of a layer or
    model, and each metric ``add_metric`` adds)."""
    metrics = owner.__dict__.setdefault("_metrics", [])
    if not any(m is metric for m in metrics):
        metrics.append(metric)
        _METRIC_GENERATION[0] += 1


def is_model(value: Any) -> bool:
    """An arignote model (a functional or Sequential ``Model``: not an ``nn.Module`` itself, it runs
    its ``module``)."""
    return (not isinstance(value, nn.Module) and isinstance(getattr(value, "module", None), nn.Module)
            and hasattr(type(value), "layers"))


def layer_metrics(layers: Any) -> list:
    """Keras 2.3.1's ``_get_metrics_from_layers``: each layer's metrics (a model among them: its own
    and its layers', not its compile metrics)."""
    out: list = []
    for layer in layers:
        if is_model(layer):
            out += list(layer.__dict__.get("_metrics", []))
            has = getattr(layer, "_has_layers", None)
            out += layer_metrics(layer.layers if has is not None and has() else [])
        else:
            out += list(getattr(layer, "metrics", None) or [])
    return out


class Bookkeeping:
    """The methods (``self`` is a ``Layer``: ``_updates``, ``_loss_inputs``, ``_regularizers``,
    ``_added_losses``, ``_call_losses``, ``_frozen``, ``trainable`` come from it)."""

    _user_layer = False
    _call_takes_training = False

    def add_update(self, updates: Any, inputs: Any = None) -> None:
        """Keras 2 ``add_update``: torch updates happen in place when ``call`` runs, so nothing is left
        to schedule; what is added outside a forward is listed by ``updates`` / ``get_updates_for``
        (:mod:`arignote.layers.conditional`)."""
        conditional.record(self._updates, updates, inputs)

    def get_updates_for(self, inputs: Any) -> list:
        """Keras 2: the updates that depend on ``inputs`` (None: the unconditional ones), this layer's
        and its sublayers'; none while the layer is frozen."""
        if not self.trainable:
            return []
        return [u for m in self._layer_tree() for u in conditional.select(m._updates, inputs)]

    def get_losses_for(self, inputs: Any) -> list:
        """Keras 2: the losses added for ``inputs`` (None: the unconditional ones, weight penalties
        included), this layer's and its sublayers'."""
        out = []
        for m in self._layer_tree():
            if inputs is None:
                out += [fn(p) for p, fn in m._regularizers]
            out += conditional.select(m._loss_inputs, inputs)
            out += conditional.activity_losses_for(m, inputs)  # its last call on torch tensors
        return out

    def _after_symbolic_call(self, inputs: Any, kwargs: dict) -> None:
        conditional.symbolic_updates(self, inputs, kwargs)
        conditional.symbolic_activity_loss(self, inputs)

    def _after_probe(self, inputs: Any, stand_ins: Any) -> None:
        # a symbolic call ran this layer's call on torch stand-ins of ``inputs``: its sublayers' activity
        # penalties of calls on them count for ``inputs``, as in Keras 2.3.1 (its call runs symbolically)
        conditional.sublayer_activity_losses(self, inputs, stand_ins)

    @property
    def metrics(self) -> list:
        """Keras 2.3.1 ``layer.metrics``: this layer's metrics (``add_metric``, metric attributes), then
        its sublayers'."""
        return list(self.__dict__.get("_metrics", [])) + layer_metrics(self._layers)

    @property
    def _layers(self) -> list:
        """Keras 2: the layers and models this layer holds as attributes, in assignment order."""
        names = self.__dict__.get("_sublayer_names", {})
        found = [getattr(self, n, None) for n in names]
        return [v for v in found if is_layer(v) or is_model(v)]

    @property
    def _trainable_weights(self) -> list:
        """Keras 2: this layer's own trainable weights (not its sublayers')."""
        return [p for p in self.parameters(recurse=False) if id(p) not in self._frozen]

    @property
    def _non_trainable_weights(self) -> list:
        """Keras 2: this layer's own other weights (created with trainable=False, and its buffers)."""
        return [p for p in self.parameters(recurse=False) if id(p) in self._frozen] + list(
            self.buffers(recurse=False))

    def _layer_tree(self) -> list:
        return [m for m in self.modules() if is_layer(m)]

    @property
    def uses_learning_phase(self) -> bool:
        """Keras 2: whether the output depends on the learning phase (dropout, noise, BatchNormalization;
        a custom layer whose ``call`` takes ``training``)."""
        return self._user_layer and self._call_takes_training

    @property
    def updates(self) -> list:
        """Keras 2 ``layer.updates``: this layer's and its sublayers' (none while frozen)."""
        if not self.trainable:
            return []
        return [u for m in self._layer_tree() for u, _ in m._updates]

    def add_loss(self, losses: Any, inputs: Any = None) -> None:
        """Keras 2 ``add_loss``: a tensor (or list) added to the training loss. Inside ``call`` it counts
        for that call; a callable (or a tensor given outside ``call``) is kept. ``inputs``: what the
        loss depends on (``get_losses_for``)."""
        conditional.record(self._loss_inputs, losses, inputs)
        for loss in losses if isinstance(losses, (list, tuple)) else [losses]:
            if loss is None:
                continue
            if callable(loss) or isinstance(loss, KerasTensor):
                self._added_losses.append(loss)
            else:
                self._call_losses.append(loss)
                self._losses_forward = state.model_forward_id()

    def _add_activity_loss(self, penalty: Any) -> None:
        """Add the activity penalty of this call's output (``activity_regularizer``) to the loss; Keras
        2.3.1 counts it as conditional on the call's inputs (``get_losses_for(inputs)``, not ``None``)."""
        self.add_loss(penalty)
        self.__dict__["_activity_loss"] = penalty  # noted with the inputs when __call__ returns

    def _own_losses(self) -> list:
        """This layer's own losses (not its sublayers'): what a model sums over its modules."""
        out = [fn(p) for p, fn in self._regularizers]
        out += [loss() if callable(loss) else loss for loss in self._added_losses
                if not isinstance(loss, KerasTensor)]
        return out + self._call_losses

    @property
    def losses(self) -> list:
        """Regularization penalties of the current weights, added losses, and the last call's losses
        (this layer and the layers inside it)."""
        return [loss for m in self.modules() if isinstance(m, Bookkeeping) for loss in m._own_losses()]
