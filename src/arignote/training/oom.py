"""Out-of-memory resilience: keep the batch size the user asked for.

A training step that raises ``torch.OutOfMemoryError`` is redone on the SAME batch as k = 2, 4, ...
micro-batches whose gradients accumulate before one optimizer step, so the update equals the
full-batch update (up to float rounding). The smallest k that works is kept for the rest of the run
and one notice says so. ``memory.on_oom=raise`` turns this off; ``fit(accumulate=k)`` uses the same
path on purpose; ``memory.oom_inject_above`` fakes an out-of-memory above a micro-batch size so all
of this is tested on a CPU.

Example::

    >>> import torch
    >>> x, y = torch.ones(32, 2), torch.ones(32, 1)
    >>> forward_backward = lambda xb, yb, weight: len(xb)   # a real one runs (loss * weight).backward()
    >>> guard = OOMGuard(inject_above=8)          # pretend only 8 samples fit
    >>> outs = guard.step(x, y, forward_backward, lambda: None, lambda: None)   # the notice goes to stderr
    >>> guard.k, outs                             # redone as 4 micro-batches of 8, one update
    (4, [8, 8, 8, 8])

``forward_backward(xb, yb, weight)`` must scale its loss by ``weight`` (the micro-batch's share of
the batch) before ``backward()`` so that the accumulated gradient is the full-batch gradient.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from arignote import config
from arignote.config import ConfigError
from arignote.errors import ArignoteError
from arignote.runtime.memory import explain_oom
from arignote.training.oom_inject import OOMInjector, make_injector
from arignote.training.oom_memory import free_memory, is_out_of_memory, memory_figures

__all__ = ["OOMGuard", "OOMInjector", "StepFns", "UnsplittableOOMError", "make_injector", "micro_slices",
           "take", "batch_len", "next_k", "memory_figures", "free_memory",
           "is_out_of_memory", "STOPPED"]

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


@dataclass
class StepFns:
    """What one optimizer step is made of (the trainer's methods, or plain functions in tests).

    ``forward(xb, yb) -> handle`` and ``backward(handle, weight) -> record`` (gradients scaled by
    ``weight``); ``no_sync()`` wraps every forward (DDP's, a no-op otherwise) and ``arm(handle)`` makes
    the next backward (of that forward) reduce the gradients (once a step, before the last
    backward; it returns the handle to run that backward from), ``reduced()`` runs after it;
    ``stand_in()`` is that armed backward for a rank whose forward ran out of memory (zero
    gradients through DDP's reducer, so every rank takes part in the reduction); ``stop()`` is this
    rank's stop request (sent in the step's agreement). ``carry(flags)`` starts the step's
    agreement so that the armed backward (or the stand-in) carries it
    (``strategy.agree_in_reduction``: the flags ride in DDP's gradient all-reduce); None:
    ``strategy.agree_later``. Optional, for TerminateOnNaN:
    ``finite()`` says whether the (reduced) gradients are finite, else the update is skipped (the
    trainer makes a non-finite loss give non-finite gradients, so DDP's reduction carries it to
    every rank without an agreement).
    """

    forward: Callable[[Any, Any], Any]
    backward: Callable[[Any, float], Any]
    optimizer_step: Callable[[], Any]
    zero_grad: Callable[[], Any]
    no_sync: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
    arm: Callable[[Any], Any] = lambda handle: handle
    stand_in: Callable[[], Any] = lambda: None
    reduced: Callable[[], Any] = lambda: None
    stop: Callable[[], bool] = lambda: False
    carry: Callable[[list[int]], Any] | None = None
    finite: Callable[[], bool] | None = None
    # False: forward() only captures the micro-batch and backward() does all the work (the
    # forward_backward form), so the last micro-batch runs before the agreement too
    split_last: bool = True


def _weight(rows: int, share: tuple[int, int]) -> float:
    """``rows * W / B``: exactly 1.0 for a whole batch in one process."""
    world, total = share
    return 1.0 if rows * world == total else rows * world / total


def _pair(xb: Any, yb: Any) -> tuple[Any, Any]:
    return xb, yb


# the step was abandoned on every rank because some rank asked to stop
STOPPED = None


class OOMGuard:
    """Runs each training step as ``k`` micro-batches and raises ``k`` when memory runs out.

    ``accumulate`` is the starting k (``fit(accumulate=k)``); ``on_oom`` and ``inject_above`` default
    to the ``memory.on_oom`` and ``memory.oom_inject_above`` flags. With a ``strategy`` of more than
    one rank, every step has exactly one agreement, handed over after the forward of its last
    micro-batch and read after that micro-batch's backward, which is the only one DDP is armed for,
    so the gradients are reduced once per step, overlapped with the backward by DDP. The agreement
    (the k a rank that ran out wants, every rank's stop request and a fatal error from an earlier
    step) travels inside that reduction (``fns.carry``: ``strategy.agree_in_reduction``), or in
    ``strategy.agree_later`` where it cannot, so all ranks redo, stop or fail together.

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
        if getattr(strategy, "static_graph", False) and (accumulate > 1 or self.split):
            raise ConfigError(
                "parallel.static_graph=true needs every backward to reduce the gradients, but "
                f"{f'fit(accumulate={accumulate})' if accumulate > 1 else 'memory.on_oom=split'} runs "
                "micro-batches under DDP's no_sync, which DDP's static graph breaks on (pytorch/pytorch"
                "#143580). Use accumulate=1 with memory.on_oom=raise, or parallel.static_graph=false")
        self.inject = make_injector(inject_above)
        self.strategy = strategy
        self.distributed = strategy is not None and getattr(strategy, "world_size", 1) > 1
        self.rank = getattr(strategy, "rank", 0)
        self.is_main = strategy is None or getattr(strategy, "is_main", True)
        self.device = device if device is not None else getattr(strategy, "device", None)
        self.stream = stream
        self.events: list[OOMEvent] = []
        self.failures = 0  # out-of-memory errors caught on this rank
        self.skipped = 0  # updates skipped on non-finite gradients
        # rank + 1 when this rank's optimizer step ran out (data parallel: told at the next agreement)
        self.fatal = 0
        self._fatal_error: BaseException | None = None

    # -- one step ------------------------------------------------------------------------------

    def step(self, x: Any, y: Any, forward_backward: Callable[[Any, Any, float], Any] | None,
             optimizer_step: Callable[[], Any] | None = None, zero_grad: Callable[[], Any] | None = None, *,
             fns: StepFns | None = None, share: tuple[int, int] | None = None) -> list[Any] | None:
        """Run one optimizer step on batch ``(x, y)``; return one record per micro-batch, or
        ``STOPPED`` (None) when the ranks agreed to stop before this step's update.

        Either ``forward_backward(xb, yb, weight)`` with ``optimizer_step`` and ``zero_grad``, or
        ``fns`` (:class:`StepFns`, forward and backward apart: the form data parallel needs).
        ``share=(W, B)``: a micro-batch of ``r`` rows has its mean loss weighted by ``r * W / B``
        (default ``(1, len(x))``; under data parallel the world size and the global batch, with
        ``W=0`` for a padding row). Expects the gradients zeroed on entry, like a plain step.
        """
        if fns is None:
            fns = StepFns(_pair, lambda h, w: forward_backward(h[0], h[1], w), optimizer_step, zero_grad,
                          split_last=False)
        n = batch_len(x)
        scale = (1, n) if share is None else share
        if self.k == 1 and not self.distributed:  # the hot path: one try, nothing more
            try:
                self.inject(n)
                out = fns.backward(fns.forward(x, y), _weight(n, scale))
            except RuntimeError as exc:
                if not (self.split and is_out_of_memory(exc)):
                    raise
                self.failures += 1
                failure = _first_line(exc)  # leaving the handler frees the traceback
            else:
                self._update(fns)
                return [out]
            return self._retry(x, y, n, scale, fns, failure)
        return self._retry(x, y, n, scale, fns, None)

    def _retry(self, x, y, n, scale: tuple[int, int], fns: StepFns, failure: str | None) -> list | None:
        start_k = k = min(self.k, n)
        first_failure = failure
        if failure is not None:  # the hot path failed: the next round starts from there
            fns.zero_grad()
            free_memory(self.device)
            k = self.k = self._next(k, n, failure)
        while True:
            records, last, failure = self._attempt(x, y, n, k, scale, fns)
            first_failure = first_failure or failure
            if self.distributed:  # every rank takes part in every round, failed or not
                flags = [next_k(k, n) if failure is not None else 0, int(bool(fns.stop())), self.fatal]
                if fns.split_last and fns.carry is not None:
                    # the armed backward (or the stand-in) carries the flags in DDP's gradient
                    # all-reduce: the step runs no collective of its own
                    pending = fns.carry(flags)
                    self._reduce(fns, records, last, failure)
                else:
                    # started before the last backward, waited for after it: the flags travel while
                    # DDP reduces the gradients, and no rank stands at a rendezvous in the step (the
                    # forward_backward form knows them only after its last backward: no carrier)
                    pending = self.strategy.agree_later(flags)
                    if fns.split_last:
                        self._reduce(fns, records, last, failure)
                agreed, stop, fatal = pending.wait()
                if fatal:
                    self._raise_fatal(fatal)
                if stop:  # a rank asked to stop after the previous batch: nobody applies this one
                    fns.zero_grad()
                    return STOPPED
                if not agreed:
                    break
                if agreed >= CANNOT_SPLIT:
                    self._give_up(n, k, failure)
            elif failure is None:
                break
            else:
                agreed = self._next(k, n, failure)
            fns.zero_grad()
            free_memory(self.device)
            k = self.k = agreed
        if self.k > start_k:
            self._notice(n, start_k, self.k, first_failure or "out of memory on another rank")
        self._update(fns)
        return records

    def _reduce(self, fns: StepFns, records: list | None, last: Any, failure: str | None) -> None:
        """The step's one armed backward (DDP reduces the gradients while it runs): the last
        micro-batch's, or, on a rank whose forward ran out of memory, a stand-in with zero
        gradients (the agreement that follows makes every rank redo the step). A rank that runs
        out here cannot leave the reduction the others are in: it stops the job with a clear
        error (the launcher then stops every rank)."""
        try:
            if failure is not None:
                fns.zero_grad()
                free_memory(self.device)  # room for the stand-in's gradients
                fns.stand_in()  # arms the reducer itself
                return
            handle, weight = last
            handle = fns.arm(handle)
            records.append(fns.backward(handle, weight))
            fns.reduced()
        except RuntimeError as exc:
            if not is_out_of_memory(exc):
                raise
            raise UnsplittableOOMError(
                f"rank {self.rank}: out of memory in the backward pass while the gradients were being "
                f"reduced over the ranks ({_first_line(exc)}); the ranks cannot recover together from "
                f"there, so the job stops. Memory: {memory_figures(self.device)}. Next run: "
                f"fit(accumulate={2 * self.k}) runs smaller micro-batches from the start; "
                f"{explain_oom(exc, self.device, 'activations')}.") from None

    def _next(self, k: int, n: int, failure: str | None) -> int:
        nxt = next_k(k, n)
        if nxt >= CANNOT_SPLIT:
            self._give_up(n, k, failure)
        return nxt

    def _attempt(self, x, y, n, k, scale, fns: StepFns) -> tuple[list[Any] | None, Any, str | None]:
        """The micro-batches of one try. Under data parallel the last one's backward is left to
        the caller (after the agreement); returns ``(records, (last handle, weight) or None, failure)``."""
        records: list[Any] = []
        slices = micro_slices(n, k)
        try:
            for i, (start, stop) in enumerate(slices):
                self.inject(stop - start)
                xb, yb = (x, y) if k == 1 else (take(x, start, stop), take(y, start, stop))
                weight = _weight(stop - start, scale)
                if i + 1 < len(slices):
                    with fns.no_sync():
                        records.append(fns.backward(fns.forward(xb, yb), weight))
                elif self.distributed and fns.split_last:
                    with fns.no_sync():  # armed after the agreement (see DataParallel.reduce_next_backward)
                        return records, (fns.forward(xb, yb), weight), None
                else:
                    records.append(fns.backward(fns.forward(xb, yb), weight))
        except RuntimeError as exc:
            if not (self.split and is_out_of_memory(exc)):
                raise
            self.failures += 1
            # keep the text only: the exception's traceback pins the failed attempt's tensors
            return None, None, _first_line(exc)
        return records, None, None

    def _update(self, fns: StepFns) -> None:
        if fns.finite is not None and not fns.finite():
            self.skipped += 1
            return
        try:
            fns.optimizer_step()
        except RuntimeError as exc:
            if not is_out_of_memory(exc):
                raise
            if not self.split:
                raise
            error = UnsplittableOOMError(
                f"out of memory in the optimizer step{'' if self.device is None else f' on {self.device}'} "
                f"({_first_line(exc)}): the optimizer's state, not the batch, fills the memory, so "
                f"splitting the batch cannot help. Memory: {memory_figures(self.device)}. "
                f"{explain_oom(exc, self.device, 'optimizer')}."
            )
            if not self.distributed:
                raise error from None
            # the other ranks are on their way to the next agreement: fail there, all together
            self.fatal, self._fatal_error = self.rank + 1, error

    def _raise_fatal(self, fatal: int) -> None:
        if self._fatal_error is not None:
            raise self._fatal_error
        raise UnsplittableOOMError(
            f"rank {fatal - 1} ran out of memory in its optimizer step, so the ranks' weights are no longer "
            f"the same; every rank stops (see rank {fatal - 1}'s error for its memory figures)")

    def check_fatal(self, agreed: int) -> None:
        """Raise the error of a rank whose optimizer step ran out (``agreed``: the agreed ``fatal``)."""
        if agreed:
            self._raise_fatal(agreed)

    def _give_up(self, n: int, k: int, failure: str | None) -> None:
        where = f"on {self.device}" if self.device is not None else ""
        why = failure if failure is not None else "another rank ran out at one sample per micro-batch"
        raise UnsplittableOOMError(
            f"out of memory {where} even with 1 sample per micro-batch (batch of {n} split {k} ways): "
            f"{why}. Memory: {memory_figures(self.device)}. "
            f"{explain_oom(failure, self.device, 'activations')}."
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
