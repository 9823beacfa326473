"""Count what one training step asks of a device: operators (kernel launches), FLOPs, bytes, host syncs.

Every aten operator a step dispatches (forward, loss, backward, optimizer) is recorded by a
``TorchDispatchMode`` with its floating-point operations (PyTorch's own FLOP formulas for
matmuls and convolutions, ``torch.utils.flop_counter``) and the bytes of the tensors it reads
and writes. On a GPU each operator is at least one kernel launch, so the operator count is the
launch count of eager execution; ``aten._local_scalar_dense`` is a read back to the host
(``.item()``, ``float(t)``, ``if t:``), i.e. a host sync.

The counts are the same on every device (the operators do not depend on where tensors live),
which is what lets :mod:`arignote.bench.perfmodel` predict a GPU step on a machine without one.

Example::

    >>> import torch
    >>> with OpRecorder() as rec:
    ...     c = torch.ones(4, 8) @ torch.ones(8, 2)
    >>> rec.ops[-1].name, rec.ops[-1].flops
    ('aten.mm.default', 128)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import flop_registry

from arignote.callbacks import Callback

__all__ = ["Op", "OpRecorder", "StepCount", "count_fit_step", "count_torch_step"]

# operators that move nothing and launch no kernel (views, metadata)
_FREE = ("view", "_unsafe_view", "reshape", "alias", "t", "transpose", "permute", "expand", "squeeze",
         "unsqueeze", "as_strided", "detach", "slice", "select", "split", "split_with_sizes", "unbind",
         "empty", "empty_like", "empty_strided", "lift_fresh", "_to_copy_noop", "is_same_size", "unfold",
         "_reshape_alias", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "dim", "size",
         "stride", "numel", "set_", "resize_", "new_empty", "new_empty_strided",
         "_has_compatible_shallow_copy_type")
_SYNC = "_local_scalar_dense"


@dataclass(frozen=True)
class Op:
    """One dispatched operator: its full name, FLOPs, bytes read+written, and whether it is a matmul/conv."""

    name: str
    flops: int
    bytes: int
    matmul: bool
    sync: bool


def _bytes(tensors: list[Any]) -> int:
    seen, total = set(), 0
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            continue
        key = id(t) if t.device.type == "meta" else (t.data_ptr(), t.numel(), t.dtype)
        if key in seen:  # the same tensor passed twice is read once
            continue
        seen.add(key)
        total += t.numel() * t.element_size()
    return total


class OpRecorder(TorchDispatchMode):
    """Records every aten operator run inside the ``with`` block (this thread only) as an :class:`Op`."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[Op] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        packet = func._overloadpacket
        short = packet.__name__
        if short in _FREE:
            return out
        flops = 0
        formula = flop_registry.get(packet)
        if formula is not None:
            flops = int(formula(*args, **kwargs, out_val=out))
        ins, _ = tree_flatten((args, kwargs))
        outs, _ = tree_flatten(out)
        self.ops.append(Op(str(func), flops, _bytes(ins) + _bytes(outs), formula is not None, short == _SYNC))
        return out


@dataclass(frozen=True)
class StepCount:
    """The operators of one steady-state training step, summed."""

    ops: tuple[Op, ...]
    batch_size: int

    @property
    def launches(self) -> int:
        return len(self.ops)

    @property
    def syncs(self) -> int:
        return sum(op.sync for op in self.ops)

    @property
    def flops(self) -> int:
        return sum(op.flops for op in self.ops)

    @property
    def bytes(self) -> int:
        return sum(op.bytes for op in self.ops)

    def top(self, n: int = 8) -> list[tuple[str, int]]:
        """The most frequent operators (name, count)."""
        return Counter(op.name for op in self.ops).most_common(n)


class _Marks(Callback):
    """A Keras callback that notes where each training batch starts in the recorder's op list."""

    def __init__(self, recorder: OpRecorder) -> None:
        super().__init__()
        self.recorder, self.starts = recorder, []

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self.starts.append(len(self.recorder.ops))


def count_fit_step(model: Any, x: Any, y: Any, batch_size: int, steps: int = 4,
                   shuffle: bool = True) -> StepCount:
    """The operators of one steady-state step of ``model.fit`` (a compiled arignote model).

    ``fit`` runs ``steps`` batches; the step counted is the third (after the optimizer's state
    exists and the first step's one-off work is done), delimited by ``on_train_batch_begin``. The
    epoch is shuffled (fit's default), so the step gathers its rows as training steps do; with
    ``shuffle=False`` they are slices of the arrays (views, no operator).
    """
    if steps < 4:
        raise ValueError(f"count_fit_step needs steps >= 4 to find a steady-state step, got {steps}")
    n = batch_size * steps
    recorder = OpRecorder()
    marks = _Marks(recorder)
    with recorder:
        model.fit(x[:n], y[:n], batch_size=batch_size, epochs=1, shuffle=shuffle, verbose=0,
                  callbacks=[marks])
    a, b = marks.starts[2], marks.starts[3]
    return StepCount(tuple(recorder.ops[a:b]), batch_size)


def count_torch_step(module: torch.nn.Module, optimizer: torch.optim.Optimizer, loss_fn: Any,
                     x: torch.Tensor, y: torch.Tensor) -> StepCount:
    """The operators of one steady-state step of a hand-written PyTorch loop (the reference)."""

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss_fn(module(x), y).backward()
        optimizer.step()

    step()
    step()  # state exists now
    with OpRecorder() as recorder:
        step()
    return StepCount(tuple(recorder.ops), len(x))
