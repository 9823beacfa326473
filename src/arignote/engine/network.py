"""Keras 2 ``keras.engine.network``: ``Network`` (the functional ``Model``)."""

from arignote.engine.topology import Network, get_source_inputs

__all__ = ["Network", "get_source_inputs"]
