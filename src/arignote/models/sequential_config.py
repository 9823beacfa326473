"""A ``Sequential``'s Keras 2 config (a mixin of :class:`arignote.models.Sequential`):
``get_config`` writes ``{"name", "layers": [{"class_name", "config"}, ...]}`` (the declared input
shape on the first layer, ``build_input_shape`` for a model built from data); ``from_config`` reads
Keras 2.3.1's, Keras 2.0-2.2's bare list of layers, tf.keras's leading ``InputLayer`` and ours, a
nested ``Sequential`` or functional ``Model`` rebuilt by its own class.

Example::

    >>> from arignote.layers import Dense
    >>> from arignote.models import Sequential
    >>> config = Sequential([Dense(2, input_shape=(3,)), Dense(1)], name="s").get_config()
    >>> [spec["class_name"] for spec in Sequential.from_config(config).get_config()["layers"]]
    ['Dense', 'Dense']
"""

from __future__ import annotations

from typing import Any

from arignote.config.safe_mode import scope as safe_mode_scope
from arignote.layers.base import deserialize, serialize
from arignote.layers.input_layer import InputLayer
from arignote.models.model import Model

__all__ = ["SequentialConfig"]


class SequentialConfig:
    """``get_config`` / ``from_config`` of a ``Sequential`` (``self`` is one; ``cls`` its class)."""

    def get_config(self) -> dict:
        """Keras 2.3.1's config: ``{"name", "layers": [{"class_name", "config"}, ...]}``, the layers the
        user added (no InputLayer entry); a declared input shape is the first layer's
        ``batch_input_shape``, and ``build_input_shape`` is there only for a model built from data or
        ``build()`` (Keras 2.3.1 writes nothing for a model started by an ``InputLayer``, so its own
        files of such models do not load: arignote writes the shape on the first layer instead).

        Example::

            >>> from arignote.layers import Dense
            >>> from arignote.models import Sequential
            >>> config = Sequential([Dense(2, input_shape=(3,), name="d")], name="s").get_config()
            >>> [(spec["class_name"], spec["config"]["batch_input_shape"]) for spec in config["layers"]]
            [('Dense', [None, 3])]
            >>> "build_input_shape" in config
            False
        """
        # the file formats' rules load when a config is written (issue 32, import time)
        from arignote.saving.config_to_keras import with_batch_input_shape

        specs = [serialize(layer) for layer in self.layers]
        if self._input_layer is not None and specs:
            shape = self._input_layer.batch_input_shape
            specs[0]["config"] = with_batch_input_shape(specs[0]["config"], shape)
        config: dict[str, Any] = {"name": self.name, "layers": specs}
        declared = self._input_layer is not None or (
            bool(self.layers) and getattr(self.layers[0], "batch_input_shape", None) is not None)
        if self._built_shape is not None and not declared:
            config["build_input_shape"] = list(self._built_shape)
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None,
                    safe_mode: bool | None = None) -> Any:
        """Rebuild from :meth:`get_config` (Keras 2's or ours); ``safe_mode`` (None: the enclosing
        loading call's, else the ``saving.safe_mode`` flag) refuses a function stored as bytecode."""
        with safe_mode_scope(safe_mode, "Sequential.from_config"):
            return cls._from_config(config, custom_objects)

    @classmethod
    def _from_config(cls, config: dict, custom_objects: dict | None) -> Any:
        model = cls(name=config.get("name"))
        layers = config["layers"] if isinstance(config, dict) else config  # Keras 2.0-2.2: a bare list
        for i, spec in enumerate(layers):
            kind = spec.get("class_name") if isinstance(spec, dict) else None
            if kind == "Sequential":  # a nested model is rebuilt by its own class, as Keras 2 does
                layer = cls.from_config(spec["config"], custom_objects)
            elif kind in ("Model", "Functional"):
                layer = Model.from_config(spec["config"], custom_objects)
            else:
                layer = deserialize(spec, custom_objects)
            if i == 0 and isinstance(layer, InputLayer):  # (tf.keras, older arignote) the model's input
                model.add(layer)
                continue
            model.module.append(layer)
        shape = config.get("build_input_shape") if isinstance(config, dict) else None
        shape = shape or model._batch_input_shape()
        if shape is not None:
            model._build(tuple(shape))
        return model
