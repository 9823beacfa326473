"""``Node`` bookkeeping (Keras 2 ``engine/base_layer.py``) and the symbolic call of a layer.

Calling a layer on :class:`~arignote.graph.tensor.KerasTensor` inputs builds it from their shapes
(batch dim ``None``), works out the output shapes (``compute_output_shape`` when the class defines
one, else by running the layer once on small zero tensors, as Keras 3 does; a layer declaring its
shape still runs once when it holds sublayers not built yet, whose weights Keras 2's symbolic call
creates: :func:`needs_call_run`), the output masks
(``compute_mask``), and records a :class:`Node` on the layer (``layer._inbound_nodes``) and on the
layers that made the inputs (``_outbound_nodes``). Nothing is computed on data here: the functional
``Model`` compiles the nodes into a torch module (:mod:`arignote.graph.compiler`).

Example::

    >>> from arignote.layers import Dense
    >>> from arignote.layers import Input
    >>> y = Dense(3)(Input(shape=(4,)))
    >>> y.shape, y._keras_history[0].name.startswith("dense")
    ((None, 3), True)
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from arignote import config
from arignote.graph import state
from arignote.graph.tensor import _RECORD, KerasTensor, flatten

__all__ = ["Node", "symbolic_call", "symbolic_mask", "runtime_module", "nest_like", "torch_dtype_name",
           "needs_call_run"]


class Node:
    """One call of ``outbound_layer`` on the outputs of other layers (Keras 2 field names).

    ``inbound_layers[i]``, ``node_indices[i]``, ``tensor_indices[i]`` say where input ``i`` came from;
    ``arguments`` are the keyword arguments of the call (other than ``mask``).
    """

    def __init__(self, outbound_layer: Any, input_tensors: list, output_tensors: list,
                 input_masks: list, output_masks: list, arguments: dict | None = None,
                 input_structure: Any = None, output_structure: Any = None) -> None:
        self.outbound_layer = outbound_layer
        self.input_tensors = list(input_tensors)
        self.output_tensors = list(output_tensors)
        self.input_masks = list(input_masks)
        self.output_masks = list(output_masks)
        self.input_shapes = [t.shape for t in self.input_tensors]
        self.output_shapes = [t.shape for t in self.output_tensors]
        self.arguments = dict(arguments or {})
        self.input_structure = input_structure  # how the call received its inputs (tensor, list, dict)
        self.output_structure = output_structure
        self.inbound_layers, self.node_indices, self.tensor_indices = [], [], []
        for t in self.input_tensors:
            layer, node_index, tensor_index = t._keras_history
            self.inbound_layers.append(layer)
            self.node_indices.append(node_index)
            self.tensor_indices.append(tensor_index)
        for layer in self.inbound_layers:
            layer._outbound_nodes.append(self)
        outbound_layer._inbound_nodes.append(self)

    def get_config(self) -> dict:
        return {"outbound_layer": self.outbound_layer.name,
                "inbound_layers": [layer.name for layer in self.inbound_layers],
                "node_indices": list(self.node_indices), "tensor_indices": list(self.tensor_indices)}


def runtime_module(layer: Any) -> nn.Module:
    """The ``nn.Module`` that computes ``layer`` (a model used as a layer runs its ``module``)."""
    return layer if isinstance(layer, nn.Module) else layer.module


def nest_like(structure: Any, leaves: list) -> Any:
    """Rebuild ``structure`` (a leaf, list, tuple or dict as made by :func:`flatten`) from ``leaves``.

    A plain recursive function, not a closure that calls itself: such a closure is a reference cycle
    (function -> cell -> function) that would hold ``leaves`` (a step's activations and their autograd
    graph) until the garbage collector's next pass.

        >>> nest_like([0, (0, 0)], ["a", "b", "c"])
        ['a', ('b', 'c')]
    """
    return _rebuild(structure, iter(leaves))


def _rebuild(s: Any, it: Any) -> Any:
    if isinstance(s, (list, tuple)):
        return type(s)(_rebuild(v, it) for v in s)
    if isinstance(s, dict):
        return {k: _rebuild(s[k], it) for k in sorted(s)}
    return next(it)


def torch_dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _dummy(t: KerasTensor, fill: int, batch: int = 2) -> torch.Tensor:
    shape = [batch if i == 0 and d is None else (fill if d is None else d) for i, d in enumerate(t.shape)]
    dtype = getattr(torch, t.dtype, None) or torch.float32
    if dtype == torch.bool:
        return torch.ones(shape, dtype=dtype)
    return torch.zeros(shape, dtype=dtype)


def _swap(x: Any, fill: int, batch: int = 2) -> Any:
    if isinstance(x, KerasTensor):
        return _dummy(x, fill, batch)
    if isinstance(x, (list, tuple)):
        return type(x)(_swap(v, fill, batch) for v in x)
    if isinstance(x, dict):
        return {k: _swap(v, fill, batch) for k, v in x.items()}
    return x


def _probe_runs(layer: Any, inputs: Any, kwargs: dict, fills: tuple[int, ...]) -> list:
    """The layer's outputs on small zeros standing in for ``inputs`` (one run per fill value of the
    unknown dims), in eval mode and without gradients; the first run tells the layer's sublayers what
    they were called on (``_after_probe``: their activity penalties)."""
    module = runtime_module(layer)
    modes = [(m, m.training) for m in module.modules()]
    module.eval()  # no moving-average updates from dummy data
    # A backend operation (K.concatenate of a 1-image variable and a 1-image placeholder, x[0]) may
    # fix its first dim: its runs differ in the unknown batch too, and a dim that does not follow it
    # stays known. A layer's first dim is its batch (Keras), always None when not declared.
    static_first = getattr(layer, "static_first_dim", False)
    runs = []
    try:
        with torch.no_grad(), state.probing():
            for fill in fills:
                batch = fill - 1 if static_first else 2
                stand_ins = _swap(inputs, fill, batch)
                out = module(stand_ins, **_swap(kwargs, fill, batch))
                runs.append(out)
                probed = getattr(layer, "_after_probe", None)  # the sublayers' calls on the stand-ins
                if probed is not None and fill == fills[0]:
                    probed(inputs, stand_ins)
    except Exception as exc:
        # a layer declaring its output shape runs here only to build its sublayers (see needs_call_run)
        hint = ("Its call runs once on zeros at graph time because it holds sublayers or weights not built "
                "yet (Keras 2 runs call symbolically): build them in build(input_shape)"
                if getattr(layer, "_declares_output_shape", False) else
                "Define compute_output_shape(input_shape) on the layer (its call still runs once when it "
                "holds sublayers or weights not built yet)")
        raise ValueError(
            f"layer '{layer.name}' ({type(layer).__name__}) failed on a symbolic input of shape "
            f"{[t.shape for t in flatten(inputs)]}: {type(exc).__name__}: {exc}. {hint}, or check the "
            "input shape") from exc
    finally:
        for m, mode in modes:
            m.training = mode
    return runs


def needs_call_run(layer: Any) -> bool:
    """Whether a layer that declares its output shape must still run its call once at graph time: a
    sublayer not built yet, a weight still lazy, or (a user's layer) a sublayer with an activity
    penalty. Keras 2 runs ``call`` symbolically, so after ``model = Model(...)`` its weights exist
    (``model.weights``, ``summary()``, ``load_weights``) and ``model.losses`` holds the penalties;
    a layer that needs nothing of this is not run (graph building stays cheap)."""
    module = runtime_module(layer)
    user = getattr(layer, "_user_layer", False)
    for sub in module.modules():
        if sub is module:
            continue
        if getattr(sub, "built", True) is False:
            return True
        if user and getattr(sub, "activity_regularizer", None) is not None:
            return True
    return any(nn.parameter.is_lazy(p) for p in module.parameters())


def _infer_outputs(layer: Any, inputs: Any, kwargs: dict) -> tuple[Any, list[tuple], list[str]]:
    """Output structure, shapes and dtypes by running the layer on zeros (twice: unknown dims differ)."""
    static_first = getattr(layer, "static_first_dim", False)
    runs = _probe_runs(layer, inputs, kwargs, (3, 4))
    leaves_a, leaves_b = flatten(runs[0]), flatten(runs[1])
    shapes, dtypes = [], []
    for a, b in zip(leaves_a, leaves_b):
        if not isinstance(a, torch.Tensor):
            raise TypeError(f"layer '{layer.name}' returned a {type(a).__name__}, not a tensor")
        shape = [None if (i == 0 and not static_first) or da != db else da
                 for i, (da, db) in enumerate(zip(a.shape, b.shape))]
        if a.dim() == 0:
            shape = []
        shapes.append(tuple(shape))
        dtypes.append(torch_dtype_name(a.dtype))
    structure = runs[0]
    return structure, shapes, dtypes


def _infer_masks(layer: Any, inputs: Any, prev_mask: Any, n_outputs: int) -> list:
    """The output masks of a symbolic call, as symbolic tensors (or None).

    ``compute_mask`` is written for torch tensors (``inputs != 0``), so it runs on small zeros (twice,
    to tell unknown dims); its errors (a mask reaching a layer that cannot take one) surface here,
    when the graph is built, as in Keras 2. At run time the compiled graph calls it on real data.
    """
    if prev_mask is None and type(layer).compute_mask is _BASE_COMPUTE_MASK[0]:
        return [None] * n_outputs
    runs = []
    with torch.no_grad():
        for fill in (3, 4):
            out = layer.compute_mask(_swap(inputs, fill), _swap(prev_mask, fill))
            runs.append(flatten(out) if isinstance(out, (list, tuple)) else [out] * n_outputs)
    if len(runs[0]) != n_outputs:
        return [None] * n_outputs
    masks = []
    for a, b in zip(*runs):
        if a is None or not isinstance(a, torch.Tensor):
            masks.append(None)
            continue
        shape = [None if i == 0 or da != db else da for i, (da, db) in enumerate(zip(a.shape, b.shape))]
        masks.append(KerasTensor(shape, torch_dtype_name(a.dtype), name=f"{layer.name}/mask"))
    return masks


_BASE_COMPUTE_MASK: list = [None]  # Layer.compute_mask, set by arignote.layers.base


def symbolic_mask(layer: Any, compute_mask: Any, inputs: Any, mask: Any) -> Any:
    """``layer.compute_mask(inputs, mask)`` asked on symbolic tensors (Keras 2: a mask tensor of the
    graph, e.g. for ``K.function([model.input], [layer.compute_mask(layer.input)])``): None when the
    layer gives no mask (tried on small zeros), else an operation node computing it from the
    graph's values. ``compute_mask(layer, inputs, mask)`` is the layer class's own."""
    with torch.no_grad():
        if compute_mask(layer, _swap(inputs, 3), _swap(mask, 3)) is None:
            return None
    def of_values(x: Any, m: Any) -> Any:
        return compute_mask(layer, x, m)

    return _RECORD[0](f"{layer.name}_compute_mask", of_values, (inputs, mask), {})


def _declared_shapes(layer: Any, inputs: Any) -> tuple[Any, list[tuple], list[str]]:
    in_shapes = [t.shape for t in flatten(inputs)]
    arg = in_shapes[0] if isinstance(inputs, KerasTensor) else in_shapes
    out = layer.compute_output_shape(arg)
    if isinstance(out, list) and out and all(isinstance(o, (tuple, list)) for o in out):
        shapes = [tuple(s) for s in out]
        structure: Any = list(range(len(shapes)))
    else:
        shapes = [tuple(out)]
        structure = 0
    dtype = getattr(layer, "_output_dtype", None) or _floatx()
    return structure, shapes, [dtype] * len(shapes)


def _checked_against_call(layer: Any, inputs: Any, kwargs: dict, declared: tuple) -> tuple:
    """A declared list of output shapes, held against what ``call`` returns. Keras 2 takes the outputs'
    structure from ``call`` and gives output ``i`` the declared shape ``i``: a layer whose
    ``compute_output_shape`` returns its input shapes verbatim (``return input_shape``, keras-gcn's
    pooling layers) while ``call`` returns one tensor has one output, shaped like its first input.

        >>> # GraphMaxPool()([features, edges]) -> one tensor of shape features.shape
    """
    try:
        structure, _, dtypes = _infer_outputs(layer, inputs, kwargs)
    except (ValueError, TypeError):
        return declared  # call cannot run on zeros: the declaration stands, as before
    n = len(flatten(structure))
    if n == len(declared[1]):
        return declared
    shapes = list(declared[1][:n])
    return structure, shapes, list(dtypes)


def _ours(method: Any) -> bool:
    """True for arignote's own ``compute_output_shape`` (built-in layers, models): trusted as declared."""
    return getattr(method, "__module__", "").startswith("arignote.")


def _floatx() -> str:
    return config.get("floatX")


def _layer_name(layer: Any) -> str:
    return getattr(layer, "name", type(layer).__name__)


def symbolic_call(layer: Any, inputs: Any, kwargs: dict) -> Any:
    """What ``layer(inputs, **kwargs)`` returns when ``inputs`` are symbolic (see the module doc)."""
    leaves = flatten(inputs)
    for t in leaves:
        if not isinstance(t, KerasTensor):
            raise ValueError(f"layer '{_layer_name(layer)}' was called with a mix of symbolic and other "
                             f"inputs ({type(t).__name__}); every input of a layer in a functional model "
                             "must come from Input() or another layer (wrap constants in a Lambda)")
        if t._keras_history is None:
            raise ValueError(f"layer '{_layer_name(layer)}' got a symbolic tensor that no layer made: "
                             "start graphs with arignote.layers.Input(shape=...)")
    check = getattr(layer, "assert_input_compatibility", None)
    if check is not None:
        check(inputs)
    if not layer.built:
        shapes = [t.shape for t in leaves]
        layer._build_once(shapes[0] if isinstance(inputs, KerasTensor) else shapes)
    masks = [t._keras_mask for t in leaves]
    single = isinstance(inputs, KerasTensor)
    prev_mask = masks[0] if single else (masks if any(m is not None for m in masks) else None)
    call_kwargs = dict(kwargs)
    if getattr(layer, "_call_takes_mask", False) and "mask" not in call_kwargs and prev_mask is not None:
        call_kwargs["mask"] = prev_mask
    if getattr(layer, "_declares_output_shape", True):
        structure, shapes, dtypes = _declared_shapes(layer, inputs)
        if len(shapes) > 1 and not _ours(type(layer).compute_output_shape):
            structure, shapes, dtypes = _checked_against_call(layer, inputs, call_kwargs,
                                                              (structure, shapes, dtypes))
        elif needs_call_run(layer):  # its sublayers get built (the shapes stay the declared ones)
            _probe_runs(layer, inputs, call_kwargs, (3,))
    else:
        structure, shapes, dtypes = _infer_outputs(layer, inputs, call_kwargs)
    node_index = len(layer._inbound_nodes)
    outputs = []
    for i, (shape, dtype) in enumerate(zip(shapes, dtypes)):
        name = layer.name if len(shapes) == 1 else f"{layer.name}/{i}"
        if node_index:
            name += f":{node_index}"
        outputs.append(KerasTensor(shape, dtype, name=name, history=(layer, node_index, i)))
    out_struct = outputs[0] if not isinstance(structure, (list, tuple)) else nest_like(structure, outputs)
    mask_leaves = _infer_masks(layer, inputs, prev_mask, len(outputs))
    for t, m in zip(outputs, mask_leaves):
        t._keras_mask = m
    arguments = {k: v for k, v in kwargs.items() if k != "mask"}
    # the input structure as a copy: the caller's list may grow afterwards (Keras's own test appends to
    # the list it concatenated)
    Node(layer, leaves, outputs, masks, mask_leaves, arguments,
         input_structure=nest_like(inputs, leaves) if not single else None,
         output_structure=structure if isinstance(structure, (list, tuple)) else None)
    # Keras 2: an output depends on the learning phase when an input does, or when the layer uses it
    # and the call does not fix `training`
    uses = any(t._uses_learning_phase for t in leaves) or (
        kwargs.get("training") is None and getattr(layer, "uses_learning_phase", False))
    for t in outputs:
        t._uses_learning_phase = uses
    hook = getattr(layer, "_after_symbolic_call", None)
    if hook is not None:
        hook(inputs, kwargs)
    return out_struct

