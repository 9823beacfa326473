"""``model.summary()`` in Keras 2's layout (Layer (type) / Output Shape / Param #, then totals).

A ``Device`` column is added when the layers sit on more than one device (placement contexts).

Example::

    >>> rows = [("dense_1 (Dense)", format_shape((None, 10)), 7850, None)]
    >>> print(render(rows, total=7850, trainable=7850))  # doctest: +NORMALIZE_WHITESPACE
    _________________________________________________________________
    Layer (type)                 Output Shape              Param #
    =================================================================
    dense_1 (Dense)              (None, 10)                7850
    =================================================================
    Total params: 7,850
    Trainable params: 7,850
    Non-trainable params: 0
    _________________________________________________________________
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arignote import parallel

__all__ = ["render", "render_graph", "graph_summary", "is_chain", "layer_rows", "format_shape"]

_LINE = 65
_POSITIONS = (0.45, 0.85, 1.0)  # Keras 2's columns for sequential models


def format_shape(shape: Any) -> str:
    """``(None, 32, 32, 3)`` for a shape with its batch dim (``None`` prints as ``None``); a list of
    shapes prints as Keras does (``[(None, 3), (None, 4)]``)."""
    if shape is None:
        return "multiple"
    if isinstance(shape, list):
        return "[" + ", ".join(format_shape(s) for s in shape) + "]"
    dims = tuple("None" if d is None else str(d) for d in shape)
    return "(" + ", ".join(dims) + (",)" if len(dims) == 1 else ")")


def _row(fields: list[str], positions: list[int]) -> str:
    # Keras 2 print_row: each field truncated to its column, one space between columns
    line = ""
    for i, field in enumerate(fields):
        if i > 0:
            line = line[:-1] + " "
        line += str(field)
        line = line[:positions[i]]
        line += " " * (positions[i] - len(line))
    return line.rstrip()


def render(rows: list[tuple[str, str, int, str | None]], total: int, trainable: int,
           title: str | None = None) -> str:
    """The summary text for ``rows`` of (name (type), output shape, params, device or None)."""
    with_device = any(r[3] is not None for r in rows)
    if with_device:
        line_length = 80
        positions = [int(line_length * p) for p in (0.36, 0.68, 0.8, 1.0)]
        header = ["Layer (type)", "Output Shape", "Param #", "Device"]
    else:
        line_length = _LINE
        positions = [int(line_length * p) for p in _POSITIONS]
        header = ["Layer (type)", "Output Shape", "Param #"]
    out = []
    if title:
        out.append(f'Model: "{title}"')
    out.append("_" * line_length)
    out.append(_row(header, positions))
    out.append("=" * line_length)
    for i, (name, shape, params, device) in enumerate(rows):
        fields = [name, shape, str(params)] + ([device or ""] if with_device else [])
        out.append(_row(fields, positions))
        out.append(("=" if i == len(rows) - 1 else "_") * line_length)
    if not rows:
        out.append("=" * line_length)
    out.append(f"Total params: {total:,}")
    out.append(f"Trainable params: {trainable:,}")
    out.append(f"Non-trainable params: {total - trainable:,}")
    out.append("_" * line_length)
    return "\n".join(out)


def is_chain(layer_nodes: list[list[Any]]) -> bool:
    """Whether a functional model's layers (each given by its nodes in the model) form one chain: one
    node per layer, at most one inbound layer per node, no layer feeding two nodes. Keras 2.3.1's
    ``print_summary`` prints such a model ("sequential-like") as it prints a Sequential."""
    fed: set[int] = set()
    for nodes in layer_nodes:
        if len(nodes) != 1 or len(nodes[0].inbound_layers) > 1:
            return False
        for src in nodes[0].inbound_layers:
            if id(src) in fed:
                return False
            fed.add(id(src))
    return True


def render_graph(rows: list[tuple[str, str, int, list[str]]], total: int, trainable: int,
                 title: str | None = None) -> str:
    """Keras 2's functional-model table: Layer (type) / Output Shape / Param # / Connected to (one
    inbound tensor per line, ``dense_1[0][0]``)."""
    line_length = 98
    positions = [int(line_length * p) for p in (0.33, 0.55, 0.67, 1.0)]
    out = []
    if title:
        out.append(f'Model: "{title}"')
    out.append("_" * line_length)
    out.append(_row(["Layer (type)", "Output Shape", "Param #", "Connected to"], positions))
    out.append("=" * line_length)
    for i, (name, shape, params, connected) in enumerate(rows):
        out.append(_row([name, shape, str(params), connected[0] if connected else ""], positions))
        for more in connected[1:]:
            out.append(_row(["", "", "", more], positions))
        out.append(("=" if i == len(rows) - 1 else "_") * line_length)
    out.append(f"Total params: {total:,}")
    out.append(f"Trainable params: {trainable:,}")
    out.append(f"Non-trainable params: {total - trainable:,}")
    out.append("_" * line_length)
    return "\n".join(out)


def graph_summary(model: Any) -> str:
    """The summary table of a functional ``model``: a chain of layers ("sequential-like", one input
    and one output) as a Sequential's, any other graph with the "Connected to" column (Keras 2.3.1's
    ``print_summary``)."""
    kept = {id(n) for n in model._order}
    rows = []
    layer_nodes = []
    for layer in model._layers:
        nodes = [n for n in layer._inbound_nodes if id(n) in kept or not n.inbound_layers]
        layer_nodes.append(nodes)
        shapes = [n.output_shapes[0] if len(n.output_shapes) == 1 else list(n.output_shapes)
                  for n in nodes]
        shape = shapes[0] if len({str(s) for s in shapes}) == 1 else None
        connected = []
        for n in nodes:
            connected += [f"{src.name}[{ni}][{ti}]" for src, ni, ti in
                          zip(n.inbound_layers, n.node_indices, n.tensor_indices)]
        params = layer.count_params() if getattr(layer, "built", True) else 0
        kind = type(layer).__name__
        rows.append((f"{layer.name} ({kind})", format_shape(shape), params, connected))
    total = model.count_params()
    trainable = model.count_trainable_params()
    if is_chain(layer_nodes) and len(model.inputs) == 1 and len(model.outputs) == 1:
        return render([row[:3] + (None,) for row in rows], total, trainable, title=model.name)
    return render_graph(rows, total, trainable, title=model.name)


def _device_of(module: Any) -> str | None:
    # A Model used as a layer (a pretrained conv base added to a Sequential) is not itself a torch
    # module: its parameters live in its ``module``.
    parameters = getattr(module, "parameters", None) or getattr(getattr(module, "module", None),
                                                                 "parameters", None)
    for p in parameters() if parameters is not None else ():
        return str(p.device)
    return None


def layer_rows(layers: list[Any], input_shape: tuple | None) -> list[tuple[str, str, int, str | None]]:
    """Rows for Keras-style layers, propagating the batch shape through ``compute_output_shape``."""
    shape = input_shape
    rows = []
    devices = []
    for layer in layers:
        if shape is not None:
            shape = tuple(layer.compute_output_shape(shape))
        params = layer.count_params() if getattr(layer, "built", True) else 0
        devices.append(parallel.layer_device(layer) or _device_of(layer))  # context device when placed
        rows.append((f"{layer.name} ({type(layer).__name__})", format_shape(shape), params))
    placed = (len({d for d in devices if d is not None}) > 1
              or any(getattr(layer, "device_context", None) is not None for layer in layers))
    return [(*r, d if placed else None) for r, d in zip(rows, devices)]


def module_rows(module: Any, hidden: Any = None,
                held: dict | None = None) -> list[tuple[str, str, int, str | None]]:
    """Rows for an arbitrary torch module: its direct children (output shapes unknown; a layer by its
    Keras name, as Keras 2.3.1 lists a subclassed model's layers), but ``hidden`` (the holder of a
    subclassed model's own weights: Keras 2.3.1 shows no row for them, the totals count them). ``held``:
    ``{id(child): model}``, the models a subclassed model holds (a row names the model, not its module)."""
    rows = []
    for name, child in module.named_children():
        if child is hidden:
            continue
        shown = (held or {}).get(id(child), child)
        keras_name = getattr(shown, "name", None)
        name = keras_name if isinstance(keras_name, str) else name
        params = sum(p.numel() for p in child.parameters())
        rows.append((f"{name} ({type(shown).__name__})", "multiple", params, None))
    if not rows and hidden is None:
        params = sum(p.numel() for p in module.parameters())
        rows.append((f"{type(module).__name__.lower()} ({type(module).__name__})", "multiple", params, None))
    return rows


def print_summary(text: str, print_fn: Callable[[str], Any] | None = None) -> None:
    (print_fn or print)(text)
