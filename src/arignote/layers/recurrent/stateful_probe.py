"""Probing a model with sample batches (a memory estimate, a batch-size search) without touching the
states its stateful recurrent layers carry from one real batch to the next (:func:`states_set_aside`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch

__all__ = ["states_set_aside"]


@contextlib.contextmanager
def states_set_aside(module: torch.nn.Module) -> Iterator[Callable[[], None]]:
    """Probe ``module`` with sample batches without touching what its stateful layers carry.

    Yields ``clear()``: call it before each probe so the stateful layers start from zero states at
    the probe's batch size; on leaving, every layer gets back the states it carried before (a
    memory estimate must not change what the next real batch continues from).

    Example::

        >>> from arignote.layers import SimpleRNN
        >>> rnn = SimpleRNN(2, stateful=True); _ = rnn(torch.ones(1, 3, 1))
        >>> before = rnn.states[0].clone()
        >>> with states_set_aside(rnn) as clear:
        ...     clear(); _ = rnn(torch.ones(4, 3, 1))
        >>> bool(torch.equal(rnn.states[0], before))
        True
    """
    held = [(m, m._states) for m in module.modules()
            if getattr(m, "stateful", False) and hasattr(m, "_states")]

    def clear() -> None:
        for m, _ in held:
            m._states = None

    try:
        yield clear
    finally:
        for m, states in held:
            m._states = states
