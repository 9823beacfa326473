"""From ``Model(inputs, outputs)`` to one plain ``torch.nn.Module`` (Keras 2 ``engine/network.py``).

:func:`~arignote.graph.topology.topology` walks the nodes back from the outputs once (Keras 2's
depth-first map): the execution order, the layers in Keras's ``model.layers`` order (by depth,
inputs first), and the checks Keras makes (inputs come from ``Input``, no disconnected tensor,
unique layer names).
:class:`GraphModule` is the compiled result: a ``ModuleList`` of the layers and a flat list of
steps (module, input slots, output slots, constant keyword arguments) that ``forward`` runs in
order. There is no graph walking per call, so data parallel, placement, OOM splitting,
checkpoints and ``torch.compile`` see an ordinary module.

Several inputs arrive as a list/tuple (in ``model.inputs`` order), a dict keyed by input names, or
*packed* (:class:`~arignote.graph.packing.Packing`): one ``(batch, features)`` tensor holding every
input flattened side by side (what ``fit`` feeds); outputs then leave packed the same way. The slot
helpers of one forward are in :mod:`arignote.graph.forward_slots`.

Example::

    >>> from arignote.layers import Input, Dense
    >>> x = Input(shape=(4,)); y = Dense(2)(x)
    >>> order, layers = topology([x], [y])
    >>> [type(m).__name__ for m in GraphModule([x], [y], order).layers]  # the InputLayer is slot 0
    ['Dense']
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from arignote.graph import state
from arignote.graph.forward_slots import (
    _detached,
    _leaves,
    _LiveSlots,
    _pairs,
    _seed_masks,
    _tracked,
    _Tracking,
)
from arignote.graph.node import nest_like, runtime_module
from arignote.graph.packing import Packing
from arignote.graph.tensor import KerasTensor
from arignote.graph.topology import feed_inputs, is_fixed, topology

__all__ = ["topology", "GraphModule", "Packing", "feed_inputs", "is_fixed", "cast_input", "float_dtype",
           "fused_chain"]


class GraphModule(nn.Module):
    """The compiled functional graph (see the module doc)."""

    def __init__(self, inputs: list[KerasTensor], outputs: list[KerasTensor], order: list,
                 output_structure: Any = None, input_names: list[str] | None = None,
                 extra: list[KerasTensor] | None = None, feeds: list | None = None) -> None:
        super().__init__()
        extra = list(extra or [])
        slots: dict[int, int] = {}
        fed = feed_inputs(inputs)
        for i, x in enumerate(fed):
            slots[id(x)] = i
        fixed = []  # Input(tensor=...) layers: the slot of their tensor, filled at every forward
        for x in inputs:
            if id(x) not in slots:
                slots[id(x)] = len(slots)
                fixed.append((slots[id(x)], x._keras_history[0]))
        modules: list[nn.Module] = []
        index: dict[int, int] = {}
        plan = []
        masked = False
        for node in order:
            if is_fixed(node.outbound_layer) and not node.inbound_layers:  # one reached inside the graph
                slots[id(node.output_tensors[0])] = len(slots)
                fixed.append((len(slots) - 1, node.outbound_layer))
                continue
            module = runtime_module(node.outbound_layer)
            if id(module) not in index:
                index[id(module)] = len(modules)
                modules.append(module)
            ins = tuple(slots[id(t)] for t in node.input_tensors)
            outs = []
            for t in node.output_tensors:
                slots[id(t)] = len(slots)
                outs.append(slots[id(t)])
            kwargs = dict(node.arguments)
            if isinstance(module, GraphModule):
                kwargs["packed"] = False  # a model used as a layer hands its outputs on as a list
            mask_in = any(m is not None for m in node.input_masks)
            mask_out = any(m is not None for m in node.output_masks)
            masked = masked or mask_in or mask_out
            plan.append((module, ins, node.input_structure, kwargs, tuple(outs),
                         node.output_structure is not None, mask_in and node.outbound_layer._call_takes_mask,
                         mask_out, node.outbound_layer))
        self.layers = nn.ModuleList(modules)
        object.__setattr__(self, "_plan", plan)
        self.n_slots = len(slots)
        self.n_inputs = len(fed)
        # Keras 2 feeds every array through its placeholder's dtype: integer data into a float Input
        # is cast (None: the Input is not a float one, or nothing to cast)
        casts = [float_dtype(x.dtype) for x in fed]
        self.input_casts = casts if any(c is not None for c in casts) else None
        self.fixed_inputs = nn.ModuleList([layer for _, layer in fixed])  # their tensors move with the module
        self.fixed_slots = [slot for slot, _ in fixed]
        self.out_slots = [slots[id(t)] for t in outputs]
        self.extra_slots = [slots[id(t)] for t in extra]
        # add_metric of graph tensors: (update, their slots), called with each forward's values
        self.metric_feeds = [(update, [slots[id(t)] for t in tensors]) for update, tensors in feeds or ()]
        self.output_structure = output_structure
        self.input_names = list(input_names or [])
        self.masked = masked
        # which outputs carry a Keras mask: their masks of the last forward are in output_masks
        # (what compile's loss and metrics weigh the outputs with, as Keras 2.3.1)
        self.out_masked = [t._keras_mask is not None for t in outputs]
        self.output_masks: list | None = None
        self.input_packing: Packing | None = None
        self.output_packing: Packing | None = None
        self.input_layout: Packing | None = None  # input_packing for the data of the current call
        self.output_layout: Packing | None = None  # output_packing of the last packed forward
        self.extra_losses: list[torch.Tensor] = []
        self.keep_values = False
        self.grad_slots: frozenset[int] = frozenset()  # slots a custom loss differentiates against
        self.needs_autograd = False  # a layer takes gradients in the forward (see forward)
        self.live: dict | None = None
        object.__setattr__(self, "_slot_tensors", {slot: t for t, slot in
                                                   ((t, s) for t, s in _pairs(inputs, order, slots))})
        # A custom layer's call (or a Lambda's function) may use symbolic tensors of this graph it
        # closes over (the Keras 2.0 VAE's loss layer reads z_mean): such graphs run with each
        # computed value visible to the backend functions (state.live_values), so that call
        # computes on this forward's values instead of recording symbolic nodes.
        self.live_forward = any(getattr(m, "_may_close_over_graph",
                                        not type(m).__module__.startswith("arignote."))
                                for m in (step[-1] for step in plan))
        object.__setattr__(self, "_slot_ids", {slot: id(t) for slot, t in self._slot_tensors.items()})
        object.__setattr__(self, "_chain", None if self.live_forward else self._as_chain())

    def _as_chain(self) -> list[nn.Module] | None:
        """The modules in order when the graph is a plain chain (one input, each layer called on the
        previous one's only output without arguments, one output, no masks, no extra losses): then
        ``forward`` runs them exactly as ``Sequential`` does, with no slot bookkeeping per layer."""
        if (self.n_inputs != 1 or len(self.out_slots) != 1 or self.extra_slots or self.masked
                or self.fixed_slots or self.metric_feeds):
            return None
        previous, chain = 0, []
        for module, ins, structure, kwargs, outs, multi, _, _, _ in self._plan:
            if structure is not None or kwargs or multi or ins != (previous,) or len(outs) != 1:
                return None
            chain.append(module)
            previous = outs[0]
        return fused_chain(chain) if previous == self.out_slots[0] else None

    def packed_outputs(self) -> Packing | None:
        """The layout of the outputs of the last packed forward (the declared one when it has no None)."""
        if self.output_packing is not None and self.output_packing.variable:
            return self.output_layout
        return self.output_packing

    def _inputs(self, x: Any) -> list:
        if self.n_inputs == 0:  # every input is an Input(tensor=...): the data, if any, is not used
            return []
        if self.n_inputs == 1:
            if isinstance(x, (list, tuple)) and len(x) == 1:
                return [x[0]]
            if isinstance(x, dict) and len(x) == 1:
                return list(x.values())
            return [x]
        if isinstance(x, torch.Tensor) and self.input_packing is not None:
            return (self.input_layout or self.input_packing).unpack(x)
        if isinstance(x, dict):
            missing = [n for n in self.input_names if n not in x]
            if missing:
                raise ValueError(f"no data for the model inputs {missing}; the dict has {sorted(x)}")
            return [x[n] for n in self.input_names]
        if isinstance(x, (list, tuple)) and len(x) == self.n_inputs:
            return list(x)
        raise ValueError(f"the model has {self.n_inputs} inputs {self.input_names}: pass a list of "
                         f"{self.n_inputs} arrays (or a dict keyed by input name)")

    def forward(self, x: Any, packed: bool | None = None, mask: Any = None) -> Any:
        """Outputs for ``x``; several outputs leave packed side by side when the input came as one
        tensor (what ``fit``/``predict`` feed), as a list otherwise (``packed`` forces either).
        ``mask``: the masks of the inputs (one, or a list in input order), when the model is a layer
        of another graph that hands masks on (Keras 2 runs the inner graph with them); the output
        masks are then in ``output_masks``.

        A graph whose layers take gradients in their forward (``K.gradients`` in a ``Lambda``) runs
        with autograd on even under ``torch.no_grad()`` (predict, validation), its outputs detached.
        """
        state.model_forward_begin()
        try:
            if not self.needs_autograd:
                try:
                    return self._forward(x, packed, mask)
                except state.NeedsAutograd:
                    self.needs_autograd = True
                    state.model_forward_restart()  # the losses of the abandoned run go
            outer = torch.is_grad_enabled()
            with torch.enable_grad():  # gradients may be asked for with respect to the inputs too
                out = self._forward(_tracked(x), packed, mask)
            return out if outer else _detached(out)
        finally:
            state.model_forward_end()

    def _forward(self, x: Any, packed: bool | None, mask: Any = None) -> Any:
        state.set_phase(self.training)  # K.learning_phase() inside Lambda / custom layers
        seeds = _seed_masks(mask, self.n_inputs)
        chain = self._chain
        if chain is not None and not self.keep_values and seeds is None:  # the Sequential-like fast path
            if not isinstance(x, torch.Tensor):
                x = self._inputs(x)[0]
            if self.input_casts is not None:
                x = cast_input(x, self.input_casts[0])
            for module in chain:
                x = module(x)
            return x if self.output_structure is None else nest_like(self.output_structure, [x])
        values: list = _Tracking(self.n_slots, self.grad_slots) if self.grad_slots else [None] * self.n_slots
        if packed is None:
            packed = isinstance(x, torch.Tensor)
        casts = self.input_casts or [None] * self.n_inputs
        for i, v in enumerate(self._inputs(x)):
            values[i] = cast_input(v, casts[i])
        for slot, layer in zip(self.fixed_slots, self.fixed_inputs):
            values[slot] = layer.constant
        if self.live_forward:
            with state.live_values(_LiveSlots(values, self._slot_ids)):
                masks = self._run(values, seeds)
        else:
            masks = self._run(values, seeds)
        if masks is not None:
            self.output_masks = [masks[i] for i in self.out_slots]
        if self.extra_slots:
            self.extra_losses = [values[i] for i in self.extra_slots]
        for update, feed_slots in self.metric_feeds:
            update(*[values[i] for i in feed_slots])
        if self.keep_values:
            tensors = self._slot_tensors
            self.live = {id(tensors[i]): v for i, v in enumerate(values) if i in tensors}
            state.remember_forward(self.live)
        outs = [values[i] for i in self.out_slots]
        if packed and self.output_packing is not None and len(outs) > 1:
            if self.output_packing.variable:  # None dims: remember this call's layout for unpacking
                self.output_layout = self.output_packing.concrete([tuple(o.shape[1:]) for o in outs])
            return Packing.pack(outs)
        if self.output_structure is not None:
            return nest_like(self.output_structure, outs)
        return outs[0] if len(outs) == 1 else outs

    def _run(self, values: list, seeds: list | None = None) -> list | None:
        """Run the plan, filling ``values``; with masks, the mask of every slot (else None)."""
        if self.masked or seeds is not None:
            return self._run_masked(values, seeds)
        for module, ins, structure, kwargs, outs, multi, _, _, _ in self._plan:
            arg = values[ins[0]] if structure is None else nest_like(structure, [values[i] for i in ins])
            y = module(arg, **kwargs) if kwargs else module(arg)
            if multi:
                for slot, v in zip(outs, _leaves(y)):
                    values[slot] = v
            else:
                values[outs[0]] = y
        return None

    def _run_masked(self, values: list, seeds: list | None = None) -> list:
        """Run the plan handing masks on beside the values; the mask of every slot (None: no mask).
        ``seeds``: masks of the inputs given by an outer graph; they may reach layers the graph's own
        build saw no mask at, which then take and pass on masks as Keras 2 does at run time."""
        masks: list = [None] * self.n_slots
        if seeds is not None:
            masks[:len(seeds)] = seeds
        for module, ins, structure, kwargs, outs, multi, mask_in, mask_out, layer in self._plan:
            leaves = [values[i] for i in ins]
            arg = leaves[0] if structure is None else nest_like(structure, leaves)
            in_masks = [masks[i] for i in ins]
            mask = in_masks[0] if structure is None else (in_masks if any(m is not None for m in in_masks)
                                                          else None)
            call_kwargs = dict(kwargs)
            if mask is not None and (mask_in or (seeds is not None and layer._call_takes_mask)):
                call_kwargs["mask"] = mask
            y = module(arg, **call_kwargs)
            out_leaves = _leaves(y) if multi else [y]
            for slot, v in zip(outs, out_leaves):
                values[slot] = v
            inner = getattr(module, "out_masked", None)
            if inner is not None:  # a model used as a layer: its forward computed its output masks
                m = module.output_masks if ("mask" in call_kwargs or any(inner)) else None
                m = m[0] if m is not None and len(m) == 1 else m
                for slot, v in zip(outs, m if isinstance(m, list) else [m] * len(outs)):
                    masks[slot] = v
            elif mask_out or (seeds is not None and mask is not None):
                m = layer.compute_mask(arg, mask)
                m_leaves = _leaves(m) if isinstance(m, (list, tuple)) else [m] * len(outs)
                for slot, v in zip(outs, m_leaves):
                    masks[slot] = v
        return masks

    def track_gradients(self, tensors: list[KerasTensor]) -> None:
        """Make autograd track the values of ``tensors`` (those of this graph) in every forward, so a
        custom loss can take ``K.gradients(y_pred, tensor)`` (Keras 2: one graph holds both)."""
        ids = {id(t) for t in tensors}
        self.grad_slots = frozenset(slot for slot, tid in self._slot_ids.items() if tid in ids)

    def live_values(self) -> Any:
        """A context exposing the last forward's values to backend functions (custom losses)."""
        return state.live_values(self.live)


def fused_chain(modules: list) -> list:
    """``modules`` (a chain run one after the other) with each pair a layer fuses with its successor
    (``layer.fused_with(next)``: Conv1D + GlobalMaxPooling1D) replaced by the fused callable.

    >>> from torch import nn
    >>> chain = [nn.ReLU(), nn.Tanh()]
    >>> fused_chain(chain) == chain
    True
    """
    out, i = [], 0
    while i < len(modules):
        fuse = getattr(modules[i], "fused_with", None)
        pair = fuse(modules[i + 1]) if fuse is not None and i + 1 < len(modules) else None
        out.append(modules[i] if pair is None else pair)
        i += 1 if pair is None else 2
    return out


def float_dtype(name: Any) -> torch.dtype | None:
    dtype = getattr(torch, str(name), None) if name is not None else None
    return dtype if isinstance(dtype, torch.dtype) and dtype.is_floating_point else None


def cast_input(x: Any, dtype: torch.dtype | None) -> Any:
    """``x`` as ``dtype`` when it is integer or boolean data fed to a float Input (Keras 2 casts every
    array to its placeholder's dtype), else ``x`` itself.

        >>> cast_input(torch.tensor([1, 2]), torch.float32).dtype
        torch.float32
    """
    if dtype is None or not isinstance(x, torch.Tensor) or x.is_floating_point() or x.is_complex():
        return x
    return x.to(dtype)
