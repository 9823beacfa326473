"""Several per-sample arrays side by side in one ``(batch, features)`` tensor: how a functional model
with several inputs (outputs) is fed by ``fit`` (the training loop moves one tensor per batch) and
how its outputs leave when called with one tensor.

Example::

    >>> import torch
    >>> layout = Packing([(2,), (1, 3)], ["a", "b"])
    >>> packed = Packing.pack([torch.zeros(5, 2), torch.ones(5, 1, 3)])
    >>> packed.shape, [tuple(t.shape) for t in layout.unpack(packed)]
    (torch.Size([5, 5]), [(5, 2), (5, 1, 3)])
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch

__all__ = ["Packing"]


class Packing:
    """Several per-sample arrays side by side in one ``(batch, features)`` tensor (see the module doc).

    A shape may hold ``None`` (a variable-length ``Input(shape=(None, 8))``): the layout is then
    only known from data, and :meth:`concrete` gives the packing of arrays with those dims filled in.
    """

    def __init__(self, shapes: list[tuple], names: list[str]) -> None:
        self.shapes = [tuple(s) for s in shapes]
        self.names = list(names)
        self.variable = any(d is None for s in self.shapes for d in s)
        self.bounds: list[tuple[int, int]] = []
        self.width: int | None = None
        if self.variable:
            return
        at = 0
        for n in (math.prod(s) for s in self.shapes):
            self.bounds.append((at, at + n))
            at += n
        self.width = at

    def concrete(self, shapes: list[tuple]) -> Packing:
        """This packing for arrays of per-sample ``shapes`` (filling its ``None`` dims); an array that
        does not fit its declared shape is an error naming it."""
        if not self.variable:
            return self
        for name, want, got in zip(self.names, self.shapes, shapes):
            if len(want) != len(got) or any(w is not None and w != g for w, g in zip(want, got)):
                raise ValueError(f"{name}: expected samples of shape {want}, got {tuple(got)}")
        return Packing([tuple(int(d) for d in s) for s in shapes], self.names)

    def unpack(self, packed: torch.Tensor) -> list[torch.Tensor]:
        if self.variable:
            raise ValueError(f"the layout of {self.names} depends on the data ({self.shapes} hold None): "
                             "pack arrays first")
        n = packed.shape[0]
        return [packed[:, a:b].reshape(n, *s) for (a, b), s in zip(self.bounds, self.shapes)]

    @staticmethod
    def pack(parts: list[Any]) -> Any:
        n = parts[0].shape[0]
        if isinstance(parts[0], torch.Tensor):
            dtype = functools.reduce(torch.promote_types, [p.dtype for p in parts])  # takes two at a time
            # the width spelled out, not -1: a batch of 0 samples packs too (predict on 0 samples)
            return torch.cat([p.reshape(n, math.prod(p.shape[1:])).to(dtype) for p in parts], dim=1)
        import numpy as np

        return np.concatenate([np.asarray(p, dtype=np.float32).reshape(n, math.prod(np.shape(p)[1:]))
                               for p in parts], axis=1)

