"""Out-of-memory resilience: keep the batch size the user asked for.

A training step that raises ``torch.OutOfMemoryError`` is redone on the SAME batch as k = 2, 4, ...
micro-batches whose gradients accumulate before one optimizer step, so the update equals the
full-batch update (up to float rounding). The smallest k that works is kept for the rest of the run
and one notice says so. ``memory.on_oom=raise`` turns this off; ``fit(accumulate=k)`` uses the same
path on purpose; ``memory.oom_inject_above`` fakes an out-of-memory above a micro-batch size so all
of this is tested on a CPU.

Example::

    >>> guard = OOMGuard(inject_above=8)          # pretend only 8 samples fit
    >>> outs = guard.step(x, y, forward_backward, optimizer_step, zero_grad)   # x: 32 samples
    >>> guard.k, len(outs)                        # redone as 4 micro-batches of 8, one update
    (4, 4)

``forward_backward(xb, yb, weight)`` must scale its loss by ``weight`` (the micro-batch's share of
the batch) before ``backward()`` so that the accumulated gradient is the full-batch gradient.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from arignote import config
from arignote.errors import ArignoteError
from arignote.sizes import format_mib
from arignote.training.oom_inject import OOMInjector, make_injector

__all__ = ["OOMGuard", "OOMInjector", "UnsplittableOOMError", "make_injector", "micro_slices", "take",
           "batch_len", "next_k", "memory_figures", "free_memory", "selftest_real_oom", "sync_gradients"]

# Sent by a rank that cannot split further, so every rank raises together instead of hanging.
CANNOT_SPLIT = 1 << 30


class UnsplittableOOMError(ArignoteError, torch.OutOfMemoryError):
    """Out of memory with one sample per micro-batch: nothing is left to split.

    A subclass of ``torch.OutOfMemoryError`` so existing ``except`` clauses still catch it.
    """


# --------------------------------------------------------------------------- micro-batch slicing


def micro_slices(n: int, k: int) -> list[tuple[int, int]]:
    """Split ``n`` samples into ``k`` contiguous, as-even-as-possible ``(start, stop)`` ranges.

    Every sample is in exactly one range, in order (nothing skipped or seen twice).

    >>> micro_slices(10, 4)
    [(0, 3), (3, 6), (6, 8), (8, 10)]
    """
    if n <= 0 or k <= 0:
        raise ValueError(f"micro_slices needs n > 0 and k > 0, got n={n}, k={k}")
    k = min(k, n)
    base, extra = divmod(n, k)
    out, start = [], 0
    for i in range(k):
        stop = start + base + (1 if i < extra else 0)
        out.append((start, stop))
        start = stop
    return out


def take(obj: Any, start: int, stop: int) -> Any:
    """Rows ``start:stop`` of a batch: a tensor/array, or a tuple/list/dict of them; None stays None."""
    if obj is None:
        return None
    if isinstance(obj, (tuple, list)):
        return type(obj)(take(o, start, stop) for o in obj)
    if isinstance(obj, dict):
        return {key: take(value, start, stop) for key, value in obj.items()}
    return obj[start:stop]


def batch_len(obj: Any) -> int:
    """Number of samples in a batch (the length of its first tensor)."""
    if isinstance(obj, (tuple, list)):
        return batch_len(obj[0])
    if isinstance(obj, dict):
        return batch_len(next(iter(obj.values())))
    return len(obj)


def next_k(k: int, n: int) -> int:
    """The next number of micro-batches after ``k`` failed on ``n`` samples (doubling, at most n);
    ``CANNOT_SPLIT`` when each micro-batch already holds one sample.

    >>> next_k(2, 32), next_k(16, 30), next_k(30, 30) == CANNOT_SPLIT
    (4, 30, True)
    """
    return CANNOT_SPLIT if k >= n else min(2 * k, n)


# --------------------------------------------------------------------------- memory figures


def _cuda_index(dev: torch.device) -> int:
    return dev.index if dev.index is not None else 0


def memory_figures(device: torch.device | str | None) -> str:
    """One line of memory numbers for ``device``: this process's allocator figures, the driver's
    free/total and the ``memory.limit`` cap on a GPU; available RAM on the CPU."""
    dev = torch.device(device) if device is not None else torch.device("cpu")
    if dev.type == "cuda":
        from arignote import memory
        from arignote.devices import cuda as cuda_dev

        index = _cuda_index(dev)
        allocated, reserved = cuda_dev.memory_in_use(index)
        peak, _ = cuda_dev.peak_memory(index)
        free, total = cuda_dev.mem_get_info(index)
        text = (f"{dev}: {format_mib(allocated)} allocated, {format_mib(reserved)} reserved, "
                f"peak {format_mib(peak)}; {format_mib(free)} free of {format_mib(total)}")
        applied = memory.applied(f"cuda:{index}")
        if applied is not None and applied.limit_bytes:
            text += f"; capped at {format_mib(applied.limit_bytes)} by memory.limit={applied.limit:g}"
        return text
    import psutil

    vm = psutil.virtual_memory()
    return f"cpu: RAM {format_mib(vm.available)} available of {format_mib(vm.total)}"


def free_memory(device: torch.device | str | None) -> None:
    """Return what a failed attempt held to the GPU driver: collect reference cycles (a traceback can
    pin tensors), then empty the caching allocator (devices/cuda.py). On the CPU, reference counting
    already returned it, so this does nothing (a full ``gc.collect`` costs ~0.1-0.3 s there)."""
    dev = torch.device(device) if device is not None else torch.device("cpu")
    if dev.type == "cuda":
        from arignote.devices import cuda as cuda_dev

        gc.collect()
        cuda_dev.empty_cache()


def _advice(device: torch.device | str | None) -> str:
    limit = config.get("memory.limit")
    cap = f"memory.limit is {limit:g} ({config.source('memory.limit')})" if limit else "memory.limit is off"
    return (
        "Try: precision=mixed-bf16 (halves activations), a smaller model, or more memory for this "
        f"process ({cap}; raise it, or free the device)."
    )


# --------------------------------------------------------------------------- the policy


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@dataclass
class OOMEvent:
    """One change of k: the batch it happened on, k before and after, and the memory figures."""

    batch: int
    k_before: int
    k_after: int
    message: str
    figures: str


class OOMGuard:
    """Runs each training step as ``k`` micro-batches and raises ``k`` when memory runs out.

    ``accumulate`` is the starting k (``fit(accumulate=k)``); ``on_oom`` and ``inject_above`` default
    to the ``memory.on_oom`` and ``memory.oom_inject_above`` flags. With a ``strategy`` of more than
    one rank (split mode), every step ends with one reduction that all ranks reach, also the ones
    that did not run out: the gradients with each rank's failure flag (``sync``), or ``agree_max``
    of the flag. Only when a flag is set do the ranks agree on the new k (``agree_max``), so every
    rank uses the same k and no collective is left waiting.

    >>> guard = OOMGuard(accumulate=2, on_oom="raise")
    >>> guard.k
    2
    """

    def __init__(
        self,
        *,
        accumulate: int = 1,
        on_oom: str | None = None,
        inject_above: int | None = None,
        strategy: Any = None,
        device: torch.device | str | None = None,
        stream: Any = None,
    ) -> None:
        if not isinstance(accumulate, int) or isinstance(accumulate, bool) or accumulate < 1:
            raise ValueError(f"accumulate must be a whole number >= 1, got {accumulate!r}")
        mode = on_oom if on_oom is not None else config.get("memory.on_oom")
        if mode not in ("split", "raise"):
            raise ValueError(f"on_oom must be 'split' or 'raise', got {mode!r} (flag memory.on_oom)")
        self.k = accumulate
        self.split = mode == "split"
        self.inject = make_injector(inject_above)
        self.strategy = strategy
        # ranks agree on k only when they may change it (split); raise mode adds no collective
        self.distributed = self.split and strategy is not None and getattr(strategy, "world_size", 1) > 1
        self.is_main = strategy is None or getattr(strategy, "is_main", True)
        self.device = device if device is not None else getattr(strategy, "device", None)
        self.stream = stream
        self.events: list[OOMEvent] = []
        self.failures = 0  # out-of-memory errors caught on this rank

    # -- one step ------------------------------------------------------------------------------

    def step(
        self,
        x: Any,
        y: Any,
        forward_backward: Callable[[Any, Any, float], Any],
        optimizer_step: Callable[[], Any],
        zero_grad: Callable[[], Any],
        *,
        local: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
        sync: Callable[[bool], bool] | None = None,
    ) -> list[Any]:
        """Run one optimizer step on batch ``(x, y)``; return ``forward_backward``'s outputs, one per
        micro-batch. Expects the gradients zeroed on entry, like a plain step. ``local()`` wraps the
        micro-batches. With several ranks, ``sync(failed) -> anyone_failed`` (see
        :func:`sync_gradients`) reduces the gradients together with this rank's failure flag, so a
        step costs no extra collective until some rank runs out; without ``sync`` the flag is agreed
        with ``agree_max``."""
        n = batch_len(x)
        k = self.k if self.k < n else n
        if k == 1 and not self.distributed:  # the hot path: one try, nothing more
            try:
                self.inject(n)
                with local():
                    out = forward_backward(x, y, 1.0)
            except torch.OutOfMemoryError as exc:
                if not self.split:
                    raise
                self.failures += 1
                outs, failure = None, _first_line(exc)  # leaving the handler frees the traceback
            else:
                self._update(optimizer_step)
                return [out]
        else:
            outs, failure = self._attempt(x, y, n, k, forward_backward, local)
        start_k, first_failure = k, None
        while True:
            first_failure = first_failure or failure
            if self.distributed:  # every rank takes part in every round, failed or not
                failed = failure is not None
                anyone = sync(failed) if sync is not None else self.strategy.agree_max(int(failed)) > 0
                if not anyone:
                    break
                agreed = self.strategy.agree_max(next_k(k, n) if failed else k)
            elif failure is None:
                break
            else:
                agreed = next_k(k, n)
            if agreed >= CANNOT_SPLIT:
                self._give_up(n, k, failure)
            self.k = k = min(agreed, n)
            if failure is not None:  # this rank redoes the batch; ranks that succeeded keep their grads
                zero_grad()
                free_memory(self.device)
                outs, failure = self._attempt(x, y, n, k, forward_backward, local)
        if k > start_k:
            self._notice(n, start_k, k, first_failure or "out of memory on another rank")
        self._update(optimizer_step)
        return outs

    def _update(self, optimizer_step: Callable[[], Any]) -> None:
        try:
            optimizer_step()
        except torch.OutOfMemoryError as exc:
            if not self.split:
                raise
            raise UnsplittableOOMError(
                f"out of memory in the optimizer step{'' if self.device is None else f' on {self.device}'} "
                f"({_first_line(exc)}): the optimizer's state, not the batch, fills the memory, so "
                f"splitting the batch cannot help. Memory: {memory_figures(self.device)}. Try: an "
                "optimizer with less state (SGD keeps 0-1 values per parameter, Adam/Adadelta 2), a "
                "smaller model, or more memory for this process (memory.limit)."
            ) from None

    def _attempt(self, x, y, n, k, forward_backward, local) -> tuple[list[Any] | None, str | None]:
        outs: list[Any] = []
        try:
            with local():
                if k == 1:
                    self.inject(n)
                    outs.append(forward_backward(x, y, 1.0))
                else:
                    for start, stop in micro_slices(n, k):
                        self.inject(stop - start)
                        xb, yb = take(x, start, stop), take(y, start, stop)
                        outs.append(forward_backward(xb, yb, (stop - start) / n))
        except torch.OutOfMemoryError as exc:
            if not self.split:
                raise
            self.failures += 1
            # keep the text only: the exception's traceback pins the failed attempt's tensors
            return None, _first_line(exc)
        return outs, None

    def _give_up(self, n: int, k: int, failure: str | None) -> None:
        where = f"on {self.device}" if self.device is not None else ""
        why = failure if failure is not None else "another rank ran out at one sample per micro-batch"
        raise UnsplittableOOMError(
            f"out of memory {where} even with 1 sample per micro-batch (batch of {n} split {k} ways): "
            f"{why}. Memory: {memory_figures(self.device)}. {_advice(self.device)}"
        )

    def _notice(self, n: int, k_before: int, k: int, message: str) -> None:
        sizes = sorted({stop - start for start, stop in micro_slices(n, k)}, reverse=True)
        size_text = "/".join(str(s) for s in sizes)
        figures = memory_figures(self.device)
        self.events.append(OOMEvent(n, k_before, k, message, figures))
        if not self.is_main:
            return
        ranks, batch = "", f"batch {n}"
        if self.distributed:
            ranks, batch = " on every rank (agreed by all ranks)", f"batch {n} per rank"
        print(
            f"arignote: out of memory at {batch}; each step now runs as {k} micro-batches of "
            f"{size_text} samples{ranks} with gradients accumulated before one update, so each update "
            f"equals the unsplit batch's (BatchNorm statistics are per micro-batch of {size_text}). "
            f"Memory: {figures}. Set memory.on_oom=raise to stop instead.",
            file=self.stream if self.stream is not None else sys.stderr,
        )


def sync_gradients(module: torch.nn.Module, strategy: Any, failed: bool = False) -> bool:
    """Average gradients (and floating buffers such as BatchNorm statistics) over the ranks, with
    this rank's out-of-memory flag in the same reduction; True when some rank failed, and then
    nothing is written back (ranks that succeeded keep their own gradients for the redo round).

    A parameter without a gradient counts as zeros, so every rank reduces the same sizes; averaging
    the buffers keeps the replicas identical, as DDP's buffer broadcast does.
    """
    grads = [(p, p.grad) for p in module.parameters() if p.requires_grad]
    pairs = grads + [(b, b) for b in module.buffers() if b.is_floating_point()]
    if not pairs:
        return strategy.agree_max(int(failed)) > 0
    reduced = []
    for i, dtype in enumerate(dict.fromkeys(t.dtype for t, _ in pairs)):
        group = [(t, g) for t, g in pairs if t.dtype == dtype]
        parts = [(g if g is not None else torch.zeros_like(t)).reshape(-1) for t, g in group]
        if i == 0:
            parts.append(torch.full((1,), float(failed), dtype=dtype, device=group[0][0].device))
        reduced.append((group, strategy.all_reduce_mean(torch.cat(parts))))
    if float(reduced[0][1][-1]) > 0:  # the one host sync of the step
        return True
    for group, flat in reduced:
        offset = 0
        for t, g in group:
            part = flat[offset:offset + t.numel()].view_as(t)
            offset += t.numel()
            if g is None:
                t.grad = part.clone()
            else:
                with torch.no_grad():
                    g.copy_(part)
    return False


# --------------------------------------------------------------------------- self-test on a GPU


def selftest_real_oom(device: torch.device | str) -> tuple[bool, str]:
    """Provoke a real out-of-memory on ``device`` under a small ``memory.limit`` and check that a
    step recovers by splitting, with the same gradients as a split-free step. ``(ok, detail)``."""
    from arignote.training.oom_selftest import selftest_real_oom as run

    return run(device)
