"""An RNN's built-in cell over the whole sequence in one call rather than step by step: torch's fused
kernel (:func:`fused_under_mask`) or an LSTM's hand-differentiated loop (:func:`lstm_function`,
:mod:`arignote.layers.recurrent.lstm_sequence`). Under a Keras mask both run over each row's valid
steps gathered to the front (:func:`gathered`, :func:`on_valid_steps`: the row gather and scatter).
``RNN._run`` picks the path; the step loop (:mod:`arignote.layers.recurrent.time_loop`) is what is left
when none takes the call.

Example::

    >>> import torch
    >>> x, mask = torch.arange(6.).view(2, 3, 1), torch.tensor([[0, 1, 1], [1, 0, 1]])
    >>> seq, last, _ = on_valid_steps(x, mask, lambda steps: steps.cumsum(1), sequences=True)
    >>> seq[..., 0].tolist(), last[:, 0].tolist()
    ([[0.0, 1.0, 3.0], [3.0, 3.0, 8.0]], [3.0, 8.0])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from arignote.layers.recurrent.cells import LSTMCell

__all__ = ["fused_under_mask", "gathered", "lstm_function", "on_valid_steps"]


def fused_under_mask(
    layer: Any, x: torch.Tensor, mask: torch.Tensor, states: list, training: bool
) -> tuple | None:
    """A mask on the fused kernel of ``layer``'s cell (:func:`gathered`)."""
    return gathered(layer, x, mask, lambda shifted: layer.cell.fused(shifted, states, training)[0])


def lstm_function(layer: Any, x: torch.Tensor, dp: list | None, mask: torch.Tensor | None, states: list,
                  rec: list | None) -> tuple | None:
    """An LSTM loop as one hand-differentiated function (:mod:`.lstm_sequence`) over the input
    projection of ``x`` (input dropout masks ``dp``) when :func:`.lstm_sequence.takes` says so
    (under a mask: over each row's valid steps, :func:`gathered`, which moves ``x`` before its
    projection: a quarter of the data), else None (the graph's loop)."""
    cell = layer.cell
    if not isinstance(cell, LSTMCell):
        return None
    from arignote.layers.recurrent import lstm_sequence as seq  # why: loaded when an LSTM runs its loop

    if not seq.takes(lstm_step=type(cell).step is LSTMCell.step, activation=cell.activation,
                     recurrent_activation=cell.recurrent_activation, recurrent_masks=len(rec or ()),
                     steps=x.shape[1], tracing=seq.tracing(),
                     autocast=torch.is_autocast_enabled(x.device.type)):
        return None
    spec = seq.Spec(cell.activation, cell.recurrent_activation)

    def run(steps: torch.Tensor) -> tuple:
        masks = None if not rec else rec[0] if len(rec) == 1 else torch.stack(rec)
        return seq.run(cell.project(steps, dp), states[0], states[1], cell.recurrent_weight, masks, spec)

    if mask is not None:
        return gathered(layer, x, mask, lambda shifted: run(shifted)[0])
    out, c = run(x)
    last = out[:, -1]
    return out, last, [last, c]


def gathered(layer: Any, x: torch.Tensor, mask: torch.Tensor, run: Callable) -> tuple | None:
    """:func:`on_valid_steps` for ``layer`` (an RNN); None when an LSTM's cell state at the last valid
    step is needed (``return_state``/``stateful``: ``run`` gives the outputs only)."""
    if isinstance(layer.cell, LSTMCell) and (layer.return_state or layer.stateful):
        return None
    return on_valid_steps(x, mask, run, layer.return_sequences)


def on_valid_steps(x: torch.Tensor, mask: torch.Tensor, run: Callable, sequences: bool) -> tuple | None:
    """A mask on a whole-sequence function ``run`` (``(n, t, ...) -> outputs (n, t, units)``: the
    fused kernel, the LSTM recurrence): each row's valid steps are gathered to the front, in order
    (a masked step changes nothing, so the recurrence over them is Keras 2's), ``run`` runs over
    them (the rows' masked steps after them cannot change earlier outputs), and the outputs are
    spread back with Keras 2's masked values (zeros before a row's first valid step, the last
    output after a valid one). Padded sequences (``pad_sequences`` 'pre' or 'post') and masks with
    zeros inside alike. Returns ``(outputs or None, last output, [last output])``; None when a row
    has no valid step, and under ``torch.export``. Steps move as whole rows (``index_select`` on
    ``(batch * time, features)``: a row copy, where ``gather`` indexed each element, ~8x slower
    forward and backward); the outputs of all steps are spread back only for ``sequences``
    (``return_sequences``)."""
    if torch.compiler.is_exporting():  # the test below reads data: an exported graph takes the step loop
        return None
    m = mask.to(torch.bool)
    n, t = m.shape
    lengths = m.sum(1)
    if not bool((lengths > 0).all()):  # one host sync
        return None
    order = torch.argsort((~m).to(torch.int8), dim=1, stable=True)  # valid steps first, in order
    start = torch.arange(0, n * t, t, device=m.device).unsqueeze(1)  # each row's first step, flattened
    out = run(_steps_at(x, order + start))
    last = _steps_at(out, (lengths - 1).unsqueeze(1) + start)[:, 0]
    if not sequences:
        return None, last, [last]
    done = m.cumsum(1)  # valid steps up to each step
    seq = _steps_at(out, (done - 1).clamp(min=0) + start)
    seq = seq * (done > 0).unsqueeze(-1).to(seq.dtype)
    return seq, last, [last]


def _steps_at(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``x`` ``(n, t, ...)`` at the flattened steps ``index`` ``(n, k)`` (row ``i``'s steps are
    ``i * t .. i * t + t - 1``): ``(n, k, ...)``, one row copy per step.

    >>> _steps_at(torch.arange(6.).view(2, 3, 1), torch.tensor([[2, 0], [3, 5]]))[..., 0].tolist()
    [[2.0, 0.0], [3.0, 5.0]]
    """
    rows = x.reshape(x.shape[0] * x.shape[1], *x.shape[2:]).index_select(0, index.reshape(-1))
    return rows.view(*index.shape, *x.shape[2:])
