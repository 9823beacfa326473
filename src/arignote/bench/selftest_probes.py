"""Probes the ``arignote selftest`` runs attach to a fit (they import torch: loaded in an item's own
process only).

* :class:`AutocastProbe`: the dtype of the first layer's output in each *training* forward pass
  (under ``torch.autocast`` a ``Linear``/``Conv`` returns the autocast dtype) and whether autocast
  was on then, plus the trainer's own grad scaler (not a freshly built one: issue 28 W2).

Example::

    >>> probe = AutocastProbe()
    >>> # model.fit(..., callbacks=[probe]); probe.record(model)
    >>> probe.record(None)["forward_dtypes"]
    []
"""

from __future__ import annotations

from typing import Any

import torch

from arignote.callbacks import Callback

__all__ = ["AutocastProbe"]


class AutocastProbe(Callback):
    """Records what the training forward passes ran in (see the module doc)."""

    def __init__(self) -> None:
        super().__init__()
        self.dtypes: set[str] = set()
        self.autocast: set[bool] = set()
        self._handle: Any = None

    def on_train_begin(self, logs=None):
        first = self.model.layers[0]

        def hook(module, args, output):
            if module.training and isinstance(output, torch.Tensor):
                self.dtypes.add(str(output.dtype))
                self.autocast.add(torch.is_autocast_enabled(output.device.type))

        self._handle = first.register_forward_hook(hook)

    def on_train_end(self, logs=None):
        if self._handle is not None:
            self._handle.remove()

    def record(self, model: Any) -> dict[str, Any]:
        """``forward_dtypes``, ``autocast_on``, ``policy`` and the trainer's scaler: ``scaler_enabled``
        and ``scale`` (its scale after the fit; None when disabled)."""
        trainer = getattr(model, "_trainer", None)
        scaler = trainer.scaler if trainer is not None else None
        enabled = bool(scaler is not None and scaler.is_enabled())
        return {"forward_dtypes": sorted(self.dtypes), "autocast_on": sorted(self.autocast),
                "policy": trainer.precision.describe() if trainer is not None else "",
                "scaler_enabled": enabled, "scale": float(scaler.get_scale()) if enabled else None}
