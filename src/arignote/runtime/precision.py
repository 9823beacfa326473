"""``floatX`` and mixed precision as objects the training loop uses without branching.

``Precision.autocast()`` is a ``nullcontext`` under ``fp32`` and ``torch.autocast`` otherwise;
``Precision.scaler`` is always a ``torch.amp.GradScaler`` whose ``enabled`` says whether it scales,
so the loop is always ``with p.autocast(): loss = ...; p.scaler.scale(loss).backward();
p.scaler.step(opt); p.scaler.update()`` (nanoGPT's pattern).

Behaviour by device:

* ``mixed-bf16``: autocast to bfloat16, no scaling (bf16 has fp32's exponent range). Works on CPU;
  on a GPU older than compute capability 8.0 it is an error naming ``precision=mixed-fp16``.
* ``mixed-fp16``: autocast to float16 with gradient scaling (small fp16 gradients underflow to 0
  otherwise). On CUDA as usual. On CPU torch >= 2.3 supports both fp16 autocast and
  ``GradScaler("cpu")``, so arignote does the same there (slow on most CPUs, but correct); use
  ``mixed-bf16`` for speed on CPU.
* Mixed modes keep parameters in float32: with ``floatX`` other than float32 they are an error.

Example::

    >>> from arignote.runtime.precision import Precision, dtype_of
    >>> dtype_of("bfloat16")
    torch.bfloat16
    >>> p = Precision("mixed-bf16", "cpu")
    >>> with p.autocast():
    ...     pass
    >>> p.scaler.is_enabled(), p.describe()
    (False, 'mixed-bf16: autocast to bfloat16 on cpu, no gradient scaling')
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from arignote import config
from arignote.config import ConfigError

__all__ = ["dtype_of", "Precision", "MODES"]

_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
           "bfloat16": torch.bfloat16}
MODES = {"fp32": None, "mixed-fp16": torch.float16, "mixed-bf16": torch.bfloat16}


def dtype_of(floatX: str | None = None) -> torch.dtype:
    """The torch dtype for a ``floatX`` name (default: the ``floatX`` flag)."""
    name = config.get("floatX") if floatX is None else floatX
    try:
        return _DTYPES[name]
    except KeyError:
        raise ConfigError(f"floatX={name!r} is not a float type; use one of {', '.join(_DTYPES)}") from None


def _device_of(device: Any) -> tuple[str, int | None]:
    """(type, index) of a Device, torch.device or string like ``cuda:1``."""
    if hasattr(device, "kind"):
        return device.kind, device.index
    d = torch.device(device)
    return d.type, d.index


class Precision:
    """Mixed-precision policy for one device: ``autocast()`` context and ``scaler`` (see module doc)."""

    def __init__(self, mode: str | None = None, device: Any = "cpu", floatX: str | None = None) -> None:
        self.mode = config.get("precision") if mode is None else mode
        if self.mode not in MODES:
            raise ConfigError(f"precision={self.mode!r} is not a mode; use one of {', '.join(MODES)}")
        self.device_type, index = _device_of(device)
        self.device = self.device_type if index is None else f"{self.device_type}:{index}"
        self.dtype: torch.dtype | None = MODES[self.mode]
        self.floatX = config.get("floatX") if floatX is None else floatX
        self.param_dtype = dtype_of(self.floatX)
        if self.dtype is not None:
            self._check(index)
        self.enabled = self.dtype is not None
        self.scaling = self.mode == "mixed-fp16"
        self.scaler = torch.amp.GradScaler(self.device_type, enabled=self.scaling)

    def _check(self, index: int | None) -> None:
        where = f" (from {config.source('precision')})" if config.source("precision") != "default" else ""
        if self.floatX != "float32":
            raise ConfigError(f"precision={self.mode}{where} computes in reduced precision over float32 "
                              f"parameters, but floatX={self.floatX}; set floatX=float32 or precision=fp32")
        if not torch.amp.is_autocast_available(self.device_type):
            raise ConfigError(f"precision={self.mode}{where}: torch has no autocast for device type "
                              f"{self.device_type!r}; use precision=fp32")
        if self.mode == "mixed-bf16" and self.device_type == "cuda":
            from arignote.devices import cuda  # the CUDA probes load when a GPU is asked (issue 32)

            if not cuda.bf16_supported(index or 0):
                raise ConfigError(f"precision=mixed-bf16{where}: {self.device} has no native bfloat16 "
                                  "(needs compute capability 8.0+); use precision=mixed-fp16")

    @classmethod
    def from_config(cls, device: Any) -> Precision:
        """The policy the ``precision`` and ``floatX`` flags ask for on ``device``."""
        return cls(None, device, None)

    def autocast(self) -> contextlib.AbstractContextManager:
        """A fresh context for one forward pass: autocast in mixed modes, a no-op under fp32."""
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def describe(self) -> str:
        """One line for the banner."""
        if self.dtype is None:
            return f"fp32: parameters and compute in {self.floatX} on {self.device}"
        dtype = str(self.dtype).removeprefix("torch.")
        scaling = "with gradient scaling" if self.scaling else "no gradient scaling"
        return f"{self.mode}: autocast to {dtype} on {self.device}, {scaling}"

    def __repr__(self) -> str:
        return f"Precision({self.mode!r}, {self.device!r})"
