"""The no-op strategy: one process, one device (the protocol is in docs/architecture.md).

Example::

    >>> s = SingleDevice("cpu")
    >>> s.world_size, s.is_main, s.agree([0, 1])
    (1, True, [0, 1])
    >>> s.order(4, epoch=0, shuffle=False).tolist()
    [0, 1, 2, 3]
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

__all__ = ["Agreed", "SingleDevice"]


class Agreed:
    """An agreement already reached (one process): ``wait()`` gives the flags back.

    >>> Agreed([0, 1]).wait()
    [0, 1]
    """

    def __init__(self, flags: list[int]) -> None:
        self.flags = list(flags)

    def wait(self) -> list[int]:
        return self.flags


def _torch_device(device: Any) -> torch.device:
    """Accept an :class:`arignote.devices.Device` (``.torch``), a ``torch.device`` or a string."""
    inner = getattr(device, "torch", None)
    if isinstance(inner, torch.device):
        return inner
    return torch.device(device)


class SingleDevice:
    """Train in this process on one device: the whole batch is this rank's, reductions are identities.

    ``order(n, epoch, shuffle)`` draws from torch's global RNG (``torch.manual_seed`` makes runs
    reproducible, and each epoch draws a new order).
    """

    rank = 0
    world_size = 1
    is_main = True

    def __init__(self, device: Any = "cpu") -> None:
        self.device = _torch_device(device)
        self.arignote_device = device if hasattr(device, "torch") else None

    def __repr__(self) -> str:
        return f"SingleDevice({str(self.device)!r})"

    def wrap(self, module: torch.nn.Module, stepped: bool = False) -> torch.nn.Module:  # noqa: ARG002
        return module

    def order(self, n: int, epoch: int, shuffle: bool) -> torch.Tensor:  # noqa: ARG002 - protocol
        """Sample (or batch) indices of this epoch, on the host."""
        return torch.randperm(n) if shuffle else torch.arange(n)

    def no_sync(self, net: torch.nn.Module) -> contextlib.AbstractContextManager:  # noqa: ARG002
        return contextlib.nullcontext()

    def reduce_next_backward(self, net: torch.nn.Module, loss: Any) -> Any:  # noqa: ARG002
        return loss

    def check_reduced(self, net: torch.nn.Module) -> None:  # noqa: ARG002 - protocol
        return None

    def reduce(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    def agree(self, flags: list[int]) -> list[int]:
        return list(flags)

    def agree_later(self, flags: list[int]) -> Agreed:
        return Agreed(flags)

    def agree_in_reduction(self, net: torch.nn.Module, flags: list[int]) -> Agreed:  # noqa: ARG002
        return Agreed(flags)

    def stand_in_backward(self, net: torch.nn.Module) -> None:  # noqa: ARG002 - protocol
        return None

    def gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        return [tensor]

    def broadcast_seed(self, draw: Any) -> int:
        return int(draw())

    def barrier(self) -> None:
        return None

    def close(self) -> None:
        return None
