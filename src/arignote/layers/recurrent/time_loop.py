"""The time loop every recurrent layer shares (:func:`run_steps`): a step function called for each
step, a Keras mask keeping the previous output and states at masked steps, as Keras 2's ``K.rnn``.
:class:`~arignote.layers.recurrent.rnn.RNN` and ``ConvRNN2D`` run it when no whole-sequence path
(:mod:`arignote.layers.recurrent.whole_sequence`) takes the call.

Example::

    >>> import torch
    >>> add = lambda t, st: (st[0] + t, [st[0] + t])
    >>> out, last, _ = run_steps(add, 3, torch.tensor([[1, 0, 1]]), [torch.zeros(1, 1)])
    >>> out[0, :, 0].tolist(), last.tolist()
    ([0.0, 0.0, 2.0], [[2.0]])
"""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["run_steps"]


def run_steps(
    step: Callable[[int, list], tuple], steps: int, mask: torch.Tensor | None, states: list,
    sequence: bool = True,
) -> tuple:
    """The time loop every RNN shares: ``step(t, states) -> (output, new_states)`` for t in
    ``range(steps)``; returns ``(outputs stacked on axis 1, last output, last states)`` (outputs None
    when ``sequence`` is false: a layer that returns only the last output need not stack them).

    A masked step (``mask[:, t]`` false) keeps the previous output (zeros before the first valid
    step) and the previous states, as Keras 2's ``K.rnn``; outputs and states may have any rank
    (vectors for RNN, images for ConvRNN2D).

    Example::

        >>> count = lambda t, st: (st[0] + 1, [st[0] + 1])
        >>> out, last, (s,) = run_steps(count, 3, None, [torch.zeros(2, 1)])
        >>> out[:, :, 0].tolist(), last.tolist()
        ([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]], [[3.0], [3.0]])
    """
    if mask is not None:
        return _run_masked(step, steps, mask, states, sequence)
    outs: list[torch.Tensor] = []
    prev = None
    for t in range(steps):
        out, new = step(t, states)
        states, prev = list(new), out
        if sequence:
            outs.append(out)
    return (torch.stack(outs, 1) if sequence else None), prev, states


def _run_masked(
    step: Callable[[int, list], tuple], steps: int, mask: torch.Tensor, states: list, sequence: bool
) -> tuple:
    """:func:`run_steps` under a mask. When a step's output is its first new state (LSTM, GRU,
    SimpleRNN, ConvLSTM2D cells), the masked output at ``t`` is the masked first state where a valid
    step has been seen by ``t``, else zeros: one ``where`` per state a step, and one on the stacked
    outputs at the end, instead of one more per step on the output (the same values; in the backward
    the output's and the state's gradients are summed in another order)."""
    valid_all = mask.to(torch.bool)
    valid = valid_all.unbind(1)  # one cast; per-step views
    outs: list[torch.Tensor] = []
    prev = None
    first_is_output = None
    for t in range(steps):
        out, new = step(t, states)
        if first_is_output is None:
            first_is_output = out is new[0]
        elif first_is_output != (out is new[0]):
            how = "apart from" if first_is_output else "as"
            raise RuntimeError(f"an RNN cell's step {t} returned its output {how} its first state, unlike "
                               "its step 0: a step must do the same every time")
        m = valid[t]
        new = [torch.where(_along(m, n), n, s) for n, s in zip(new, states)]
        if first_is_output:
            out = new[0]
        else:
            prev = torch.zeros_like(out) if prev is None else prev
            out = torch.where(_along(m, out), out, prev)
        states, prev = new, out
        if sequence:
            outs.append(out)
    if not first_is_output:
        return (torch.stack(outs, 1) if sequence else None), prev, states
    seen = valid_all.to(torch.int32).cumsum(1) > 0  # a valid step seen by t (cumsum: ONNX has no cummax)
    last = torch.where(_along(seen[:, -1], prev), prev, torch.zeros((), dtype=prev.dtype, device=prev.device))
    if not sequence:
        return None, last, states
    seq = torch.stack(outs, 1)
    zero = torch.zeros((), dtype=seq.dtype, device=seq.device)
    return torch.where(seen.view(*seen.shape, *([1] * (seq.dim() - 2))), seq, zero), last, states



def _along(m: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A per-sample mask ``(batch,)`` shaped to broadcast over ``like`` ``(batch, ...)``."""
    return m.view(m.shape[0], *([1] * (like.dim() - 1)))
