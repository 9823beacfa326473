"""Keras 2 ``utils.vis_utils``: ``model_to_dot`` and ``plot_model`` (pydot + Graphviz, optional).

A node per layer (``name: ClassName``, with input/output shapes when ``show_shapes``), edges from
each layer's inbound nodes (functional models) or in order (Sequential). ``plot_model`` writes the
image format named by ``to_file``'s extension (``.png``, ``.svg``, ``.pdf``... through Graphviz's
``dot`` program); ``.dot``/``.gv`` write the graph source and need only pydot.

Example::

    >>> from arignote.layers import Dense
    >>> from arignote.models import Sequential
    >>> dot = model_to_dot(Sequential([Dense(4, input_shape=(3,), name="hidden"), Dense(1, name="out")]))
    >>> [n.get_label() for n in dot.get_nodes() if n.get_name() not in ("node", "edge")]
    ['hidden: Dense', 'out: Dense']
"""

from __future__ import annotations

import importlib
import os
import shutil
from typing import Any

__all__ = ["model_to_dot", "plot_model"]

_SOURCE_FORMATS = {"dot": "raw", "gv": "raw"}


def _pydot() -> Any:
    try:
        return importlib.import_module("pydot")
    except ImportError:
        raise ImportError("plot_model needs pydot and Graphviz: pip install pydot (or pip install "
                          "'arignote[plot]') and install Graphviz (apt install graphviz, brew install "
                          "graphviz, conda install graphviz)") from None


def _shape_text(shape: Any) -> str:
    if shape is None:
        return "multiple"
    if isinstance(shape, list):
        return ", ".join(_shape_text(s) for s in shape)
    return str(tuple(shape))


def _layer_shapes(model: Any) -> dict[int, tuple[str, str]]:
    """``id(layer) -> (input text, output text)``: Keras attributes when the layers have them,
    else shapes propagated through ``compute_output_shape`` from the model's input shape."""
    layers = list(model.layers)
    out: dict[int, tuple[str, str]] = {}
    known = getattr(model, "expected_input_shape", lambda: None)()
    shape = (None, *known) if known is not None else None
    for layer in layers:
        given_in, given_out = (getattr(layer, a, None) for a in ("input_shape", "output_shape"))
        given_in = None if callable(given_in) else given_in
        given_out = None if callable(given_out) else given_out
        if given_out is not None:
            out[id(layer)] = (_shape_text(given_in), _shape_text(given_out))
            continue
        in_shape = shape
        if shape is not None:
            try:
                shape = (None, *layer.compute_output_shape(tuple(shape[1:])))
            except (AttributeError, TypeError, ValueError, NotImplementedError):
                shape = None
        out[id(layer)] = (_shape_text(in_shape), _shape_text(shape))
    return out


def _edges(model: Any) -> list[tuple[Any, Any]]:
    """(from, to) layer pairs: Keras 2 node bookkeeping when present, else the layers in order."""
    layers = list(model.layers)
    members = {id(layer) for layer in layers}
    edges = []
    for layer in layers:
        for node in getattr(layer, "_inbound_nodes", None) or ():
            for source in getattr(node, "inbound_layers", None) or ():
                if id(source) in members:
                    edges.append((source, layer))
    if edges or len(layers) < 2:
        return edges
    return list(zip(layers[:-1], layers[1:]))


def model_to_dot(model: Any, show_shapes: bool = False, show_layer_names: bool = True,
                 rankdir: str = "TB", expand_nested: bool = False, dpi: int = 96,
                 subgraph: bool = False) -> Any:
    """A ``pydot.Dot`` graph of ``model`` (Keras 2.3 arguments; ``rankdir`` 'TB' or 'LR')."""
    pydot = _pydot()
    if rankdir not in ("TB", "LR", "BT", "RL"):
        raise ValueError(f"model_to_dot: rankdir={rankdir!r} must be 'TB' (vertical) or 'LR' (horizontal)")
    if not hasattr(model, "layers"):
        raise ValueError(f"plot_model draws Keras-style models (with .layers); got {type(model).__name__}")
    if expand_nested:
        raise ValueError("model_to_dot: expand_nested=True is not supported; "
                         "nested models are drawn as one node")
    dot = pydot.Cluster(style="dashed", graph_name=model.name) if subgraph else pydot.Dot()
    if not subgraph:
        dot.set("rankdir", rankdir)
        dot.set("concentrate", True)
        dot.set("dpi", dpi)
        dot.set_node_defaults(shape="record")
    shapes = _layer_shapes(model) if show_shapes else {}
    for layer in model.layers:
        label = f"{layer.name}: {type(layer).__name__}" if show_layer_names else type(layer).__name__
        if show_shapes:
            inputs, outputs = shapes[id(layer)]
            label = f"{label}\n|{{input:|output:}}|{{{{{inputs}}}|{{{outputs}}}}}"
        dot.add_node(pydot.Node(str(id(layer)), label=label))
    for source, target in _edges(model):
        dot.add_edge(pydot.Edge(str(id(source)), str(id(target))))
    return dot


def plot_model(model: Any, to_file: str = "model.png", show_shapes: bool = False,
               show_layer_names: bool = True, rankdir: str = "TB", expand_nested: bool = False,
               dpi: int = 96) -> Any:
    """Draw ``model`` into ``to_file``; in a notebook the returned ``IPython.display.Image`` shows it.

    The format is ``to_file``'s extension; without Graphviz's ``dot`` on the PATH only ``.dot``/``.gv``
    (the graph source) can be written, and other formats raise an OSError saying what to install.
    """
    dot = model_to_dot(model, show_shapes, show_layer_names, rankdir, expand_nested, dpi)
    extension = os.path.splitext(os.fspath(to_file))[1][1:].lower() or "png"
    fmt = _SOURCE_FORMATS.get(extension, extension)
    if fmt != "raw" and shutil.which(dot.prog if isinstance(dot.prog, str) else "dot") is None:
        raise OSError(f"plot_model: Graphviz's `dot` program was not found on the PATH, so {to_file!r} "
                      f"({extension}) cannot be rendered; install Graphviz (apt install graphviz, "
                      "brew install graphviz) or write the graph source with to_file='model.dot'")
    dot.write(os.fspath(to_file), format=fmt)
    if extension != "png":
        return None
    try:
        display = importlib.import_module("IPython.display")
    except ImportError:
        return None
    return display.Image(filename=os.fspath(to_file))
