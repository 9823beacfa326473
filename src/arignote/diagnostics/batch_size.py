"""``fit(batch_size="auto")``: the largest batch whose real training step fits the device.

A short search of real steps: double from ``start`` until a step runs out of memory (or the data
runs out), then bisect between the last batch that fitted and the first that did not. The caches
are cleared between tries and the model and optimizer are put back as they were, so the search
does not train. Unlike Lightning's ``BatchSizeFinder`` the result is the batch the user trains
with, reported, and the out-of-memory policy still guards it.

Example (a step of more than 48 samples runs out of memory)::

    >>> def oom(): raise torch.OutOfMemoryError("out of memory")
    >>> result = search_batch_size(lambda b: None if b <= 48 else oom(), limit=1000)
    >>> result.batch, [b for b, ok in result.tries]
    (48, [2, 4, 8, 16, 32, 64, 48, 56, 52, 50, 49])
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from arignote.diagnostics.memory_plan import rng_devices
from arignote.runtime.memory import explain_oom
from arignote.training.oom import UnsplittableOOMError, free_memory, memory_figures

__all__ = ["SearchResult", "search_batch_size", "auto_batch_size", "TrainingSnapshot"]


@dataclass
class SearchResult:
    """The batch found, every ``(batch, fitted)`` try in order, and whether the data capped it."""

    batch: int
    tries: list[tuple[int, bool]] = field(default_factory=list)
    capped: bool = False

    def describe(self) -> str:
        """One line for the log: ``batch_size="auto": 48 (11 trial steps; 56 did not fit)``."""
        failed = [b for b, ok in self.tries if not ok]
        why = "all the training data" if self.capped else (f"{min(failed)} did not fit" if failed else "")
        return f'batch_size="auto": {self.batch} ({len(self.tries)} trial steps; {why})'


def search_batch_size(
    try_step: Callable[[int], Any],
    *,
    limit: int,
    start: int = 2,
    clear: Callable[[], Any] = lambda: None,
    tolerance: float = 0.0,
    device: torch.device | str | None = None,
) -> SearchResult:
    """Find the largest batch in ``[1, limit]`` for which ``try_step(batch)`` does not raise
    ``torch.OutOfMemoryError``, assuming fitting is monotone in the batch size.

    ``clear()`` runs after every try. Bisection stops when the gap is at most
    ``max(1, tolerance * fitted)`` (0 = exact). Raises ``UnsplittableOOMError`` when even batch 1
    does not fit.
    """
    if limit < 1:
        raise ValueError(f'batch_size="auto" needs at least one training sample, got {limit}')
    result = SearchResult(batch=0)

    def fits(batch: int) -> bool:
        try:
            try_step(batch)
            ok = True
        except torch.OutOfMemoryError:
            ok = False
        clear()
        result.tries.append((batch, ok))
        return ok

    good, bad = 0, None
    batch = max(1, min(start, limit))
    while True:  # doubling
        if fits(batch):
            good = batch
            if batch >= limit:
                result.capped = True
                break
            batch = min(2 * batch, limit)
        else:
            bad = batch
            break
    if bad is not None:  # bisection in (good, bad)
        while bad - good > max(1, int(tolerance * good)):
            mid = (good + bad) // 2
            if mid == good:
                break
            if fits(mid):
                good = mid
            else:
                bad = mid
    if good == 0:
        raise UnsplittableOOMError(
            f'batch_size="auto": out of memory even at batch 1: {explain_oom(None, device, "activations")}')
    result.batch = good
    return result


class TrainingSnapshot:
    """A copy (in host memory) of a module's and an optimizer's state, to put back after trial steps.

    >>> module = torch.nn.Linear(2, 1); optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    >>> snap = TrainingSnapshot(module, optimizer)
    >>> with torch.no_grad(): _ = module.weight.add_(1.0)   # a trial step changes the weights
    >>> snap.restore(); torch.equal(module.weight, snap.module_state["weight"])
    True
    """

    def __init__(self, module: torch.nn.Module, optimizer: torch.optim.Optimizer | None,
                 device: torch.device | str | None = None) -> None:
        self.module = module
        self.optimizer = optimizer
        self.module_state = {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}
        self.optim_state = copy.deepcopy(_to_cpu(optimizer.state_dict())) if optimizer is not None else None
        self.rng = torch.random.get_rng_state()
        # the trial steps' dropout draws from the device's generator too: saved and put back as
        # torch.random.fork_rng does (get_rng_state(index) / set_rng_state(state, index))
        where = torch.device(device) if device is not None else torch.device("cpu")
        self.device_module = torch.get_device_module(where.type) if where.type != "cpu" else None
        self.device_rng = [(i, self.device_module.get_rng_state(i)) for i in rng_devices(where)]

    def restore(self) -> None:
        self.module.load_state_dict(self.module_state)
        if self.optimizer is not None:
            self.optimizer.load_state_dict(self.optim_state)
        torch.random.set_rng_state(self.rng)
        for index, state in self.device_rng:
            self.device_module.set_rng_state(state, index)


def _to_cpu(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu")
    if isinstance(obj, dict):
        return {k: _to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to_cpu(v) for v in obj]
    return obj


def auto_batch_size(
    step: Callable[[int], Any],
    *,
    module: torch.nn.Module,
    optimizer: torch.optim.Optimizer | None,
    n_samples: int,
    zero_grad: Callable[[], Any],
    device: torch.device | str | None = None,
    strategy: Any = None,
    start: int = 2,
    tolerance: float = 0.0,
) -> SearchResult:
    """Search the batch size with real training steps ``step(batch)`` (forward, backward and optimizer
    step on ``batch`` samples of the training data), then restore the model and optimizer.

    With a data-parallel ``strategy``, ``n_samples`` is this rank's share and every rank adopts the
    smallest batch any rank found (``strategy.agree``, a maximum, on the negated value).
    """
    snapshot = TrainingSnapshot(module, optimizer, device)

    def clear() -> None:
        zero_grad()
        free_memory(device)

    distributed = strategy is not None and getattr(strategy, "world_size", 1) > 1
    failure: UnsplittableOOMError | None = None
    try:
        result = search_batch_size(step, limit=n_samples, start=start, clear=clear, tolerance=tolerance,
                                   device=device)
    except UnsplittableOOMError as exc:
        if not distributed:
            raise
        failure, result = exc, SearchResult(batch=0)  # still take part in the agreement below
    finally:
        snapshot.restore()
        clear()
    if distributed:
        result.batch = -strategy.agree([-result.batch])[0]  # the smallest batch found on any rank
        if result.batch == 0:
            raise failure or UnsplittableOOMError(
                'batch_size="auto": another rank ran out of memory even at batch 1 (see its error); on '
                f'this rank {explain_oom(None, device, "activations")}')
    return result


def trainer_batch_size(trainer: Any, data: Any) -> SearchResult:
    """``fit(batch_size="auto")`` for an :class:`~arignote.training.loop.Trainer`: trial steps on the
    first samples of ``data`` (array data on the device) with the trainer's own forward/backward
    and optimizer step (the fault injector included) on the unwrapped module, so ranks that fail
    at different sizes never wait on each other; then model, optimizer and grad scaler are put back.
    Returns the global batch (per-rank batch x ranks under data parallel)."""
    if not hasattr(data, "n"):
        raise ValueError('batch_size="auto" needs array data (x, y): a DataLoader or iterable sets its own '
                         "batch size; give fit a number instead")
    strategy = trainer.strategy
    world = getattr(strategy, "world_size", 1)
    guard = trainer.oom
    scaler_state = trainer.scaler.state_dict() if trainer.scaler.is_enabled() else None
    # trial steps on the unwrapped module: no DDP collective, each rank searches on its own
    wrapped, trainer.net = trainer.net, trainer.model.module

    def step(batch: int) -> None:
        xb, yb = next(iter(data.batches(None, batch)))
        guard.inject(batch)
        trainer._forward_backward(xb, yb, 1.0)
        trainer._optimizer_step()

    try:
        result = auto_batch_size(step, module=trainer.model.module, optimizer=trainer.model.optimizer,
                                 n_samples=-(-data.n // world), zero_grad=trainer.model.optimizer.zero_grad,
                                 device=trainer.device, strategy=strategy)
    finally:
        trainer.net = wrapped
        if scaler_state is not None:
            trainer.scaler.load_state_dict(scaler_state)
    result.batch *= world
    if trainer.strategy.is_main:
        print(f"arignote: {result.describe()}; training with batch_size={result.batch}. "
              f"Memory: {memory_figures(trainer.device)}")
    return result
