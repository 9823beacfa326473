"""Keras 2 ``keras.engine.training``: ``Model``."""

from arignote.models.model import Model

__all__ = ["Model"]
