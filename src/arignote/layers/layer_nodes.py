"""Where a layer was called in the functional API (a mixin of :class:`arignote.layers.base.Layer`):
Keras 2's ``inbound_nodes`` / ``outbound_nodes``, ``get_input_at(i)``, ``get_output_shape_at(i)``
... and the one-node properties ``input``, ``output``, ``input_mask``, ``output_mask``,
``input_shape``, ``output_shape`` (with Keras 2's messages when they are ill-defined).

Example::

    >>> from arignote.layers import Dense, Input
    >>> d = Dense(2)
    >>> y = d(Input(shape=(3,)))
    >>> d.input_shape, d.output_shape, d.get_output_at(0) is y, len(d.inbound_nodes)
    ((None, 3), (None, 2), True, 1)
"""

from __future__ import annotations

from typing import Any

__all__ = ["NodeAccess"]


class NodeAccess:
    """The node queries of a layer (``self`` is a ``Layer``: ``name``, ``_inbound_nodes``,
    ``_outbound_nodes``, ``_built_input_shape``, ``batch_input_shape``, ``compute_output_shape``)."""

    def _node_attr(self, node_index: int, attr: str, what: str) -> Any:
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} is not connected, no input to return."
                                 if what == "input" else f"The layer {self.name} has never been called and "
                                 f"thus has no defined {what}.")
        if len(self._inbound_nodes) <= node_index:
            raise ValueError(f"Asked to get {what} at node {node_index}, but the layer has only "
                             f"{len(self._inbound_nodes)} inbound nodes.")
        values = getattr(self._inbound_nodes[node_index], attr)
        return values[0] if len(values) == 1 else list(values)

    def get_input_at(self, node_index: int) -> Any:
        return self._node_attr(node_index, "input_tensors", "input")

    def get_output_at(self, node_index: int) -> Any:
        return self._node_attr(node_index, "output_tensors", "output")

    def get_input_shape_at(self, node_index: int) -> Any:
        return self._node_attr(node_index, "input_shapes", "input shape")

    def get_output_shape_at(self, node_index: int) -> Any:
        return self._node_attr(node_index, "output_shapes", "output shape")

    def get_input_mask_at(self, node_index: int) -> Any:
        return self._node_attr(node_index, "input_masks", "input mask")

    def get_output_mask_at(self, node_index: int) -> Any:
        return self._node_attr(node_index, "output_masks", "output mask")

    def _single_node(self, what: str) -> None:
        if len(self._inbound_nodes) > 1:
            raise AttributeError(f"Layer {self.name} has multiple inbound nodes, hence the notion of "
                                 f"\"layer {what}\" is ill-defined. Use `get_{what.replace(' ', '_')}_at"
                                 "(node_index)` instead.")

    @property
    def inbound_nodes(self) -> list:
        return self._inbound_nodes

    @property
    def outbound_nodes(self) -> list:
        return self._outbound_nodes

    @property
    def input(self) -> Any:
        self._single_node("input")
        return self.get_input_at(0)

    @property
    def output(self) -> Any:
        self._single_node("output")
        return self.get_output_at(0)

    @property
    def input_mask(self) -> Any:
        self._single_node("input mask")
        return self.get_input_mask_at(0)

    @property
    def output_mask(self) -> Any:
        self._single_node("output mask")
        return self.get_output_mask_at(0)

    @property
    def input_shape(self) -> Any:
        """The input shape with batch dim (from the first call, or the shape the layer was built for)."""
        if self._inbound_nodes:
            shapes = {str(n.input_shapes) for n in self._inbound_nodes}
            if len(shapes) > 1:
                raise AttributeError(f'The layer "{self.name}" has multiple inbound nodes, with different '
                                     "input shapes. Hence the notion of \"input shape\" is ill-defined for "
                                     "the layer. Use `get_input_shape_at(node_index)` instead.")
            return self.get_input_shape_at(0)
        if self._built_input_shape is not None:
            return self._built_input_shape
        if self.batch_input_shape is not None:
            return self.batch_input_shape
        raise AttributeError(f"The layer {self.name} has never been called and thus has no defined input "
                             "shape.")

    @property
    def output_shape(self) -> Any:
        """The output shape with batch dim."""
        if self._inbound_nodes:
            shapes = {str(n.output_shapes) for n in self._inbound_nodes}
            if len(shapes) > 1:
                raise AttributeError(f'The layer "{self.name}" has multiple inbound nodes, with different '
                                     "output shapes. Use `get_output_shape_at(node_index)` instead.")
            return self.get_output_shape_at(0)
        return self.compute_output_shape(self.input_shape)
