"""The step's flags inside DDP's own gradient all-reduce: the gradient of a parameter of their own.

Each data-parallel step needs a few small integers agreed by every rank (the k a rank that ran
out of memory wants, a stop request, a fatal error: the maximum over ranks). Sending them in a
collective of their own costs a second exchange every step beside DDP's bucket all-reduce. Here
they travel as a gradient: the module DDP wraps is a :class:`FlagCarrier` holding the user's
module and one more parameter, ``flags`` (``world_size x flags x 4`` float32 values, never
trained, never saved with the model; float64 for a float64 model, so that both share DDP's
buckets). The step's armed backward runs through :meth:`FlagCarrier.attach`,
an identity on the loss whose backward hands the flags (encoded) to ``flags`` as its gradient, so
DDP's own C++ reducer averages them with the model's gradients in its buckets: no comm hook, no
Python on the reduction path, no collective of arignote's in the step. After the backward
:meth:`FlagCarrier.received` reads the averaged block on the host (the CPU: gloo's buckets live
there) and decodes the maxima.

Encoding: each rank writes its flags into its own row of the block, every flag as 4 base-256
digits; the other rows are zero. Each slot then has one contributor, so DDP's average (each
rank's gradient times ``1 / world_size``, summed) is ``digit / world_size`` in every slot, in any
summation order; times ``world_size`` and rounded, every digit comes back exactly (float32 keeps
``digit / world_size`` to 7 significant digits, far inside the 0.5 that rounding forgives). Flags
are whole numbers in ``[0, 2**32)``.

Example::

    >>> block = encode([5, 1, 0], rank=1, world=2)             # rank 1's part of the block
    >>> block.shape, decode((block + encode([2, 0, 3], rank=0, world=2)) / 2, world=2, width=3)
    (torch.Size([24]), [5, 1, 3])
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["FlagCarrier", "encode", "decode", "DIGITS", "STEP_FLAGS"]

DIGITS = 4  # base-256 digits a flag: 0 <= flag < 2**32
STEP_FLAGS = 3  # what a training step sends (training/oom.py): [k wanted, stop, fatal]


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
    """The maximum over ranks of each flag, from the block as DDP averaged it (each rank's block
    divided by ``world`` and summed)."""
    values = block.detach().tolist()  # a few dozen numbers: plain Python beats tensor ops here
    if not any(values):  # the usual step: nobody ran out, asked to stop or failed
        return [0] * width
    out = [0] * width
    for r in range(world):
        for f in range(width):
            at = (r * width + f) * DIGITS
            out[f] = max(out[f], sum(round(values[at + i] * world) << 8 * i for i in range(DIGITS)))
    return out


class _Attach(torch.autograd.Function):
    """Identity on the loss; its backward gives the carrier's pending block to ``flags``."""

    @staticmethod
    def forward(ctx: Any, loss: torch.Tensor, flags: torch.Tensor, carrier: FlagCarrier) -> torch.Tensor:  # noqa: ARG004 - flags: its gradient is the point
        ctx.carrier = carrier
        return loss.view_as(loss)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        return grad, ctx.carrier._take(), None


class _Mailbox:
    """The carrier's per-step state, kept off the module (``nn.Module.__setattr__`` is slow, and
    this changes every step)."""

    __slots__ = ("pending", "delivered")

    def __init__(self) -> None:
        self.pending: torch.Tensor | None = None
        self.delivered = 0


class FlagCarrier(torch.nn.Module):
    """The module DDP wraps when the step's flags ride in its buckets: ``module`` (the user's,
    called as is) and ``flags``, the parameter whose gradient carries them.

    ``send(flags)`` before the armed backward, whose loss went through :meth:`attach`;
    ``received()`` after it gives the maxima over ranks. An armed backward with nothing sent
    carries zeros (DDP needs a gradient for every parameter it reduces). ``delivered`` counts the
    backwards that carried a block.

    >>> c = FlagCarrier(torch.nn.Linear(2, 1), rank=0, world=1, width=3)
    >>> c.send([4, 0, 1]); c.attach(c(torch.ones(1, 2)).sum()).backward(); c.received()
    [4, 0, 1]
    """

    def __init__(self, module: torch.nn.Module, rank: int, world: int, width: int) -> None:
        super().__init__()
        self.module = module
        # its gradient is ready first in every backward (attach is at the loss), so from DDP's
        # bucket rebuild on it sits in bucket 0, the first reduced
        self.flags = torch.nn.Parameter(torch.zeros(world * width * DIGITS, **_like(module)))
        self.rank, self.world, self.width = rank, world, width
        self._box = _Mailbox()

    @property
    def delivered(self) -> int:
        """Backwards that carried a block so far."""
        return self._box.delivered

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def attach(self, loss: torch.Tensor) -> torch.Tensor:
        """``loss`` unchanged, with ``flags`` in its graph (its gradient: the pending block)."""
        return _Attach.apply(loss, self.flags, self)

    def send(self, flags: list[int]) -> None:
        if len(flags) != self.width:
            raise ValueError(f"the carrier takes {self.width} flags a step, got {len(flags)}")
        self._box.pending = encode(flags, self.rank, self.world) if any(flags) else None

    def received(self) -> list[int]:
        """The agreed maxima of the flags sent, after the backward that carried them."""
        grad = self.flags.grad
        if grad is None:
            raise RuntimeError(
                "arignote: the step's flags did not travel in DDP's gradient all-reduce (the armed "
                "backward gave the flag carrier no gradient); this is a bug in the data-parallel step, "
                "please report it")
        self.flags.grad = None
        return decode(grad, self.world, self.width)

    def _take(self) -> torch.Tensor:
        box = self._box
        block, box.pending = box.pending, None
        box.delivered += 1
        if block is None:  # the usual step: all flags 0
            return torch.zeros_like(self.flags)
        return block.to(self.flags.device, self.flags.dtype)


def _like(module: torch.nn.Module) -> dict[str, Any]:
    """Device and dtype for ``flags``: DDP buckets gradients by dtype, so the module's float32 or
    float64 lets them share its buckets; a float16/bfloat16 module's flags stay float32 (exact for
    any world size) in a small bucket of their own."""
    first = next((p for p in module.parameters() if p.is_floating_point()), None)
    if first is None:
        return {"device": torch.device("cpu"), "dtype": torch.float32}
    dtype = first.dtype if first.dtype in (torch.float32, torch.float64) else torch.float32
    return {"device": first.device, "dtype": dtype}
