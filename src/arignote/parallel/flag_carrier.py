"""The step's flags inside DDP's own gradient all-reduce: a DDP communication hook.

Each data-parallel step needs a few small integers agreed by every rank (the k a rank that ran
out of memory wants, a stop request, a fatal error: the maximum over ranks). Sending them in a
collective of their own costs a second exchange every step beside DDP's bucket all-reduce; this
hook appends them to the first gradient bucket DDP all-reduces anyway (bucket 0: the first one DDP
launches; from DDP's bucket rebuild at the second step on, at most ``dist._DEFAULT_FIRST_BUCKET_BYTES``
(1 MiB) unless a parameter is larger, so the extra copy into the carrier is small) and splits them
off after. A step then runs no collective of its own.

Gradients: every bucket is multiplied by ``1 / world_size`` and summed, what DDP does without a
hook (it multiplies while copying a gradient into its bucket), so the reduced gradients are
bit-identical to DDP's default for 2 ranks (tested). With more ranks the carrying bucket is a few
elements longer, so a backend that chunks its all-reduce by length may add that bucket's
gradients in another order (rounding-level differences, as any change of DDP's bucket layout).

Encoding (the bucket's dtype may be float32, float16 or bfloat16; a SUM must give every flag
exactly): each rank writes its flags into its own row of a ``world_size x flags x 4`` block,
every flag as 4 base-256 digits (0..255 are exact in float16 and bfloat16), the other rows zero.
Each slot then has one contributor, so the SUM over ranks is every rank's flags exactly, in any
float dtype and summation order; the maxima are taken on the host after the backward. Flags are
whole numbers in ``[0, 2**32)``.

Example::

    >>> block = encode([5, 1, 0], rank=1, world=2)             # rank 1's part of the block
    >>> block.shape, decode(block + encode([2, 0, 3], rank=0, world=2), world=2, width=3)
    (torch.Size([24]), [5, 1, 3])
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
import torch.distributed as dist

__all__ = ["FlagCarrier", "encode", "decode", "DIGITS"]

DIGITS = 4  # base-256 digits a flag: 0 <= flag < 2**32


def encode(flags: list[int], rank: int, world: int) -> torch.Tensor:
    """This rank's flags as its row of the ``world x len(flags) x 4`` digit block (float32, host)."""
    width = len(flags)
    digits = []
    for value in flags:
        value = int(value)
        if not 0 <= value < 1 << 8 * DIGITS:
            raise ValueError(f"a carried flag must be a whole number in [0, 2**32), got {value}")
        digits.extend((value >> shift) & 255 for shift in (0, 8, 16, 24))
    block = torch.zeros(world * width * DIGITS, dtype=torch.float32)
    block[rank * width * DIGITS:(rank + 1) * width * DIGITS] = torch.tensor(digits, dtype=torch.float32)
    return block


def decode(block: torch.Tensor, world: int, width: int) -> list[int]:
    """The maximum over ranks of each flag, from the summed block (any float dtype)."""
    values = block.detach().tolist()  # a few dozen numbers: plain Python beats tensor ops here
    if not any(values):  # the usual step: nobody ran out, asked to stop or failed
        return [0] * width
    out = [0] * width
    for r in range(world):
        for f in range(width):
            at = (r * width + f) * DIGITS
            out[f] = max(out[f], sum(int(values[at + i]) << 8 * i for i in range(DIGITS)))
    return out


def _first(fut: Any) -> torch.Tensor:
    return fut.value()[0]


class FlagCarrier:
    """The comm hook's state for one DDP module: the flags to send with the next reduced backward,
    and the summed block of the last one.

    ``send(flags)`` before the armed backward; the backward's bucket 0 carries them; ``received()``
    after it gives the maxima. A reduced backward with nothing sent carries zeros (every rank's
    bucket 0 has the same length in every backward, whoever reduces it). ``counts`` (the strategy's
    ``collectives``) gets ``bucket`` for every bucket all-reduce the hook runs.
    """

    def __init__(self, rank: int, world: int, width: int, counts: Counter, group: Any = None) -> None:
        self.rank, self.world, self.width = rank, world, width
        self.counts = counts
        self.group = group
        self.scale = 1.0 / world  # DDP's own factor (its wrapped scalar 1. / div_factor_)
        self.pending: list[int] | None = None
        self.launched = 0  # bucket-0 reductions so far
        self._expect = -1
        self._carrier: torch.Tensor | None = None
        self._n = 0

    def send(self, flags: list[int]) -> None:
        if len(flags) != self.width:
            raise ValueError(f"the carrier takes {self.width} flags a step, got {len(flags)}")
        self.pending = list(flags)
        self._expect = self.launched + 1

    def received(self) -> list[int]:
        """The agreed maxima of the flags sent, after the backward that carried them."""
        if self.launched != self._expect or self._carrier is None:
            raise RuntimeError(
                "arignote: the step's flags did not travel in DDP's gradient all-reduce (the armed "
                "backward reduced no bucket 0); this is a bug in the data-parallel step, please report it")
        self._expect = -1
        return decode(self._carrier[self._n:], self.world, self.width)

    def hook(self, bucket: Any) -> torch.futures.Future:
        """DDP's comm hook body: average the bucket; bucket 0 carries the flags."""
        buffer = bucket.buffer()
        self.counts["bucket"] += 1
        if bucket.index() != 0:
            buffer.mul_(self.scale)
            return dist.all_reduce(buffer, group=self.group, async_op=True).get_future().then(_first)
        n = buffer.numel()
        carrier = torch.empty(n + self.world * self.width * DIGITS, dtype=buffer.dtype, device=buffer.device)
        torch.mul(buffer, self.scale, out=carrier[:n])
        if self.pending is not None and any(self.pending):
            carrier[n:] = encode(self.pending, self.rank, self.world)
        else:  # the usual step: all flags 0
            carrier[n:].zero_()
        self.pending = None
        self._carrier, self._n = carrier, n
        self.launched += 1
        fut = dist.all_reduce(carrier, group=self.group, async_op=True).get_future()
        return fut.then(lambda f: f.value()[0][:n])


def carry_hook(state, bucket):  # noqa: ANN001, ANN201 - DDP checks these names and annotations
    """The function DDP calls for each bucket (``state`` is the module's :class:`FlagCarrier`)."""
    return state.hook(bucket)
