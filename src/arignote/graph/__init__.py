"""The functional graph (Keras 2 ``Model(inputs, outputs)``): symbolic tensors, nodes, compilation.

* :mod:`arignote.graph.state` — the learning phase and the values of a running graph (no torch import
  beyond the module level state, no arignote imports: everything may use it);
* :mod:`arignote.graph.tensor` — :class:`KerasTensor`, the symbolic tensor ``Input()`` and every layer
  called on one return (shape with ``None`` batch, dtype, the node that made it);
* :mod:`arignote.graph.node` — :class:`Node` bookkeeping and the symbolic call of a layer;
* :mod:`arignote.layers.op_layer` — backend functions on symbolic tensors record an operation node;
* :mod:`arignote.graph.topology` — the node order of ``Model(inputs, outputs)`` and Keras 2's graph checks;
* :mod:`arignote.graph.network` — that order compiled once into a plain ``torch.nn.Module``, with
  :mod:`arignote.graph.packing` (several inputs side by side in one tensor) and
  :mod:`arignote.graph.forward_slots` (the values of one forward);
* :mod:`arignote.models.functional` — the functional ``Model``.
* :mod:`arignote.models.construction`, :mod:`arignote.models.output_losses`,
  :mod:`arignote.models.multi_output`, :mod:`arignote.models.functional_config` — what ``Model(...)`` was
  asked for, a model's own losses, ``compile`` of several outputs, the Keras 2 ``model_config``.

Keras 2 spellings live in :mod:`arignote.engine` (``Layer``, ``InputSpec``, ``Input``, ``Model``,
``engine.topology``).

Example::

    >>> from arignote.graph.tensor import KerasTensor
    >>> KerasTensor((None, 3)).shape
    (None, 3)
"""
