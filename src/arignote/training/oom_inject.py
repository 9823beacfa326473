"""Fault injection for out-of-memory tests: ``memory.oom_inject_above=N`` makes every micro-batch
larger than N samples raise a real ``torch.OutOfMemoryError`` at the start of its forward pass, so
recovery (:mod:`arignote.training.oom`) is tested on a CPU. Off (0), the injector is an object
whose call does nothing: the training loop has no branch for it.

Example::

    >>> inject = make_injector(8)
    >>> inject(8); inject.count
    0
"""

from __future__ import annotations

import torch

from arignote import config

__all__ = ["OOMInjector", "make_injector"]


class _NoInjector:
    """The injector when ``memory.oom_inject_above`` is 0: a call that does nothing."""

    limit = 0
    count = 0

    def __call__(self, n: int) -> None:
        return None


class OOMInjector:
    """Raise a real ``torch.OutOfMemoryError`` for micro-batches larger than ``limit`` samples.

    ``count`` is how many failures it injected (tests use it to check that k is remembered).

    >>> inject = OOMInjector(8); inject(8); inject.count
    0
    """

    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise ValueError(f"OOMInjector limit must be > 0, got {limit}; use make_injector(0) for none")
        self.limit = int(limit)
        self.count = 0

    def __call__(self, n: int) -> None:
        if n > self.limit:
            self.count += 1
            raise torch.OutOfMemoryError(
                f"out of memory (injected by arignote: micro-batch of {n} samples > "
                f"memory.oom_inject_above={self.limit})"
            )


def make_injector(limit: int | None = None) -> OOMInjector | _NoInjector:
    """The injector for ``limit`` (default: the ``memory.oom_inject_above`` flag); a no-op when 0."""
    limit = config.get("memory.oom_inject_above") if limit is None else int(limit)
    return OOMInjector(limit) if limit > 0 else _NoInjector()
