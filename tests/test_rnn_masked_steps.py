"""The masked time loop (layers/recurrent/time_loop.run_steps): Keras 2's K.rnn masking, value for value."""

from __future__ import annotations

import pytest
import torch

from arignote.layers.recurrent.rnn import run_steps

MASK = torch.tensor([[1, 0, 1, 1, 0], [0, 0, 1, 0, 1], [0, 0, 0, 0, 0]], dtype=torch.bool)


def _keras2_loop(step, steps, mask, states):
    """K.rnn's rule written out: a masked step keeps the previous output (zeros at first) and states."""
    outs, prev = [], None
    for t in range(steps):
        out, new = step(t, states)
        m = mask[:, t].view(-1, 1)
        prev = torch.zeros_like(out) if prev is None else prev
        out = torch.where(m, out, prev)
        states = [torch.where(m, n, s) for n, s in zip(new, states)]
        prev = out
        outs.append(out)
    return torch.stack(outs, 1), prev, states


def _cell(output_is_state: bool):
    w = torch.linspace(-1.0, 1.0, 9).view(3, 3)

    def step(t, states):
        h = torch.tanh(states[0] @ w + 0.1 * (t + 1))
        c = states[1] * 0.5 + h
        return (h if output_is_state else 2 * h), [h, c]

    return step


@pytest.mark.parametrize("output_is_state", [True, False])
@pytest.mark.parametrize("sequence", [True, False])
def test_masked_loop_matches_keras2_rule_with_a_nonzero_initial_state(output_is_state, sequence):
    step = _cell(output_is_state)
    init = [torch.full((3, 3), 0.7), torch.full((3, 3), -0.3)]
    want_seq, want_last, want_states = _keras2_loop(step, 5, MASK, init)
    seq, last, states = run_steps(step, 5, MASK.float(), init, sequence)  # a 0/1 float mask too
    assert torch.equal(last, want_last)
    assert all(torch.equal(a, b) for a, b in zip(states, want_states))
    if sequence:
        assert torch.equal(seq, want_seq)
    else:
        assert seq is None
    # the fully masked row: zeros out, its initial states kept
    assert torch.equal(last[2], torch.zeros(3)) and torch.equal(states[0][2], init[0][2])


def test_masked_loop_gradients_match_keras2_rule():
    step = _cell(True)
    grads = []
    for loop in (_keras2_loop, lambda *a: run_steps(*a, True)):
        h0 = torch.full((3, 3), 0.7, requires_grad=True)
        seq, last, states = loop(step, 5, MASK, [h0, torch.zeros(3, 3)])
        (seq * torch.linspace(-1, 1, seq.numel()).view(seq.shape)).sum().add(last.sum()).backward()
        grads.append(h0.grad)
    torch.testing.assert_close(grads[1], grads[0], rtol=0, atol=1e-6)  # the sums' order differs


def test_a_cell_that_changes_what_it_returns_is_an_error():
    def step(t, states):
        h = states[0] + 1
        return (h if t == 0 else h * 1), [h]

    with pytest.raises(RuntimeError, match="step 1 returned its output apart from its first state"):
        run_steps(step, 3, MASK, [torch.zeros(3, 2)])
