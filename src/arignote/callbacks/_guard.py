"""What the checkpoint callbacks ask before they write: is this epoch finished, are the weights finite?

A stopped epoch is not a finished epoch, and NaN weights are never a resume point: BackupAndRestore,
ModelCheckpoint and ``TerminateOnNaN(restore=True)`` all use these two questions.

Example::

    >>> import torch
    >>> class M: module = torch.nn.Linear(2, 1)
    >>> m = M()
    >>> nonfinite_weights(m)
    []
    >>> with torch.no_grad(): _ = m.module.bias.fill_(float("nan"))
    >>> nonfinite_weights(m)
    ['bias']
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["epoch_interrupted", "nonfinite_weights", "describe_nonfinite"]


def epoch_interrupted(model: Any) -> bool:
    """True when the epoch being closed ended early (``stop_training`` set during its batches).

    The training loop sets ``model.epoch_interrupted`` before ``on_epoch_end``; a model or loop
    that does not set it counts every epoch as complete.
    """
    return bool(getattr(model, "epoch_interrupted", False))


def nonfinite_weights(model: Any) -> list[str]:
    """Names of the floating-point parameters and buffers of ``model.module`` holding NaN or Inf.

    One device sync per device (a stacked flag per tensor), so a per-epoch check costs one read of
    every weight, not one host round trip per tensor. A model without a ``module`` has
    nothing to check.
    """
    module = getattr(model, "module", None)
    if not isinstance(module, torch.nn.Module):
        return []
    by_device: dict[torch.device, tuple[list[str], list[torch.Tensor]]] = {}
    for name, tensor in module.state_dict().items():
        if isinstance(tensor, torch.Tensor) and (tensor.is_floating_point() or tensor.is_complex()):
            names, flags = by_device.setdefault(tensor.device, ([], []))
            names.append(name)
            flags.append(torch.isfinite(tensor.detach()).all())
    bad = []
    for names, flags in by_device.values():  # one read-back per device (placement spreads a model)
        bad += [name for name, good in zip(names, torch.stack(flags).tolist()) if not good]
    return bad


def describe_nonfinite(names: list[str]) -> str:
    """``'dense_1.weight, dense_1.bias'`` (at most 3 names, then how many more)."""
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")
