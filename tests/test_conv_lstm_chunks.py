"""The hand-differentiated ConvLSTM recurrence runs its gate arithmetic in chunks of samples
(arignote.layers.recurrent.conv_lstm_sequence.WORKING_SET): per element the same operations in the same
order, so outputs, last cell state and every gradient equal the unchunked steps' bit for bit.

Sizes: one sample's image of the filters holds a multiple of 32 floats (4 x 4 x 8), so a chunk's dense
tensors end on a whole vector (torch's CPU loops run a tail shorter than two vectors elementwise, and
its scalar sigmoid may round differently from the vectorized one)."""

import pytest
import torch

from arignote import activations
from arignote.layers.recurrent import conv_lstm_sequence as recurrence

N, T, F, ROWS, COLS = 5, 3, 4, 4, 8  # 5 samples: chunks of 2, 2 and 1
PER_SAMPLE = 4 * F * ROWS * COLS * 4  # bytes of one sample's gate pre-activations (float32)


def _run(first, fresh, ract, act, grads):
    """Outputs, last cell state and the gradients of a fixed random projection of ``grads``."""
    g = torch.Generator().manual_seed(3)

    def torch_layout(shape):
        x = torch.randn(*shape, generator=g)
        return x if first else x.contiguous(memory_format=torch.channels_last)

    gate = recurrence.clamp01 if ract == "clamp01" else activations.get(ract)  # clamp01: fold's
    spec = recurrence.Recurrence(F, (1, 1), activations.get(act), gate, fresh, first)
    xc = (torch_layout((N * T, 4 * F, ROWS, COLS)) * 2).requires_grad_()
    w = (torch.randn(4 * F, F, 3, 3, generator=g) * 0.4).requires_grad_()
    h, c = torch_layout((N, F, ROWS, COLS)), torch_layout((N, F, ROWS, COLS))
    if fresh:
        h, c = h.zero_(), c.zero_()
    else:
        h.requires_grad_(), c.requires_grad_()
    out, last = recurrence.run(xc, h, c, w, spec)
    loss = 0
    if "out" in grads:
        loss = loss + (out * torch.randn(out.shape, generator=g)).sum()
    if "c" in grads:
        loss = loss + (last * torch.randn(last.shape, generator=g)).sum()
    loss.backward()
    tensors = [out.detach(), last.detach(), xc.grad, w.grad]
    return tensors + ([] if fresh else [h.grad, c.grad])


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("first", [False, True], ids=["channels_last", "channels_first"])
@pytest.mark.parametrize("fresh", [True, False], ids=["fresh", "given_states"])
@pytest.mark.parametrize("ract, act", [("hard_sigmoid", "tanh"), ("sigmoid", "tanh"),
                                       ("hard_sigmoid", "hard_sigmoid"), ("sigmoid", "sigmoid"),
                                       ("clamp01", "tanh")])
@pytest.mark.parametrize("grads", [("out", "c"), ("out",), ("c",)])
def test_chunked_steps_equal_unchunked_bit_for_bit(monkeypatch, first, fresh, ract, act, grads):
    monkeypatch.setattr(recurrence, "WORKING_SET", 1 << 40)  # one chunk: the whole batch
    whole = _run(first, fresh, ract, act, grads)
    calls = []
    chunked_body = recurrence._by_samples

    def counting(body, n, per_sample, rows, *args):
        calls.append((body.__name__, n, per_sample))
        chunked_body(body, n, per_sample, rows, *args)

    monkeypatch.setattr(recurrence, "_by_samples", counting)
    monkeypatch.setattr(recurrence, "WORKING_SET", 2 * PER_SAMPLE)  # chunks of 2 samples
    chunked = _run(first, fresh, ract, act, grads)
    assert {name for name, _, _ in calls} == {"_gates", "_gate_gradients"}
    assert {(n, per) for _, n, per in calls} == {(N, PER_SAMPLE)}
    assert len(whole) == len(chunked)
    for a, b in zip(whole, chunked):
        assert torch.equal(a, b)
    assert all(t.abs().max() > 0 for t in chunked[2:])  # gradients reach every input


def test_chunks_cover_the_samples_once(monkeypatch):
    monkeypatch.setattr(recurrence, "WORKING_SET", 2 * 100 + 99)  # 2 samples of 100 bytes a chunk
    seen = []
    rows = torch.arange(5.0)
    recurrence._by_samples(lambda x, none, extra: seen.append((x.tolist(), none, extra)), 5, 100,
                           (rows, None), "arg")
    assert seen == [([0.0, 1.0], None, "arg"), ([2.0, 3.0], None, "arg"), ([4.0], None, "arg")]
    monkeypatch.setattr(recurrence, "WORKING_SET", 10)  # less than a sample: one sample a chunk
    seen.clear()
    recurrence._by_samples(lambda x: seen.append(x.tolist()), 3, 100, (rows[:3],))
    assert seen == [[0.0], [1.0], [2.0]]


def test_chunks_on_the_cpu_only():
    """Off the CPU (a GPU: each chunk a kernel launch per pass) the whole batch is one chunk; the meta
    device stands in for it here."""
    per_sample = recurrence.WORKING_SET // 2
    for device, sizes in (("cpu", [2, 2, 2, 1]), ("meta", [7])):
        calls = []
        rows = (None, torch.zeros(7, 3, device=device))
        recurrence._by_samples(lambda _, t, out=calls: out.append(len(t)), 7, per_sample, rows)
        assert calls == sizes, device
