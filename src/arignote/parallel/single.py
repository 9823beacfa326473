"""The no-op strategy: one process, one device (the contract is in docs/architecture.md).

Example::

    >>> import torch
    >>> s = SingleDevice("cpu")
    >>> s.world_size, s.is_main, s.local_batch(32)
    (1, True, 32)
    >>> s.shard(4, epoch=0, shuffle=False, seed=None).tolist()
    [0, 1, 2, 3]
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["SingleDevice"]


def _torch_device(device: Any) -> torch.device:
    """Accept an :class:`arignote.devices.Device` (``.torch``), a ``torch.device`` or a string."""
    inner = getattr(device, "torch", None)
    if isinstance(inner, torch.device):
        return inner
    return torch.device(device)


class SingleDevice:
    """Train in this process on one device: sharding is the whole epoch, reductions are identities.

    ``shuffle`` with ``seed=None`` draws from torch's global RNG (``torch.manual_seed`` makes runs
    reproducible); an integer seed gives the permutation ``seed + epoch`` whatever the RNG state.
    """

    rank = 0
    world_size = 1
    is_main = True

    def __init__(self, device: Any = "cpu") -> None:
        self.device = _torch_device(device)
        self.arignote_device = device if hasattr(device, "torch") else None

    def __repr__(self) -> str:
        return f"SingleDevice({str(self.device)!r})"

    def wrap(self, module: torch.nn.Module) -> torch.nn.Module:
        return module

    def shard(self, n: int, epoch: int, shuffle: bool, seed: int | None) -> torch.Tensor:
        """Sample indices of this epoch (a LongTensor on the device)."""
        if not shuffle:
            return torch.arange(n, device=self.device)
        if seed is None:
            return torch.randperm(n, device=self.device)
        gen = torch.Generator().manual_seed(int(seed) + int(epoch))
        return torch.randperm(n, generator=gen).to(self.device)

    def local_batch(self, global_batch: int) -> int:
        return int(global_batch)

    def all_reduce_mean(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    def agree_max(self, value: int) -> int:
        return int(value)

    def broadcast_object(self, obj: Any) -> Any:
        return obj

    def barrier(self) -> None:
        return None

    def teardown(self) -> None:
        return None
