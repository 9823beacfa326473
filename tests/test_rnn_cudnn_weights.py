"""LSTM, SimpleRNN and GRU(reset_after=True) keep their weights in one contiguous chunk for cuDNN
(issue 28 S3; more in tests/test_rnn_gru_flat_weights.py), checked on a CPU: the flatten call is
compared with the one ``torch.nn.LSTM.flatten_parameters`` makes (``torch/nn/modules/rnn.py``),
recorded with ``torch._cudnn_rnn_flatten_weight`` replaced and the weights passed off as CUDA ones
(this CPU build has no cuDNN)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote.devices import cuda
from arignote.layers.recurrent import fused_weights
from arignote.layers.recurrent.cells import GRUCell, LSTMCell, SimpleRNNCell


def _weights(cell):
    return [cell.weight, cell.recurrent_weight, cell.bias, torch.zeros_like(cell.bias)]


def test_flatten_rnn_weights_passes_what_torch_passes(monkeypatch):
    calls = []
    monkeypatch.setattr(torch, "_cudnn_rnn_flatten_weight",
                        lambda weights, *args: calls.append(([tuple(w.shape) for w in weights], args)))
    monkeypatch.setattr(torch, "_use_cudnn_rnn_flatten_weight", lambda: True)
    monkeypatch.setattr(torch.backends.cudnn, "is_acceptable", lambda t: True)
    import torch.backends.cudnn.rnn as cudnn_rnn

    monkeypatch.setattr(cudnn_rnn, "get_cudnn_mode", lambda mode: f"cudnn:{mode}")  # no cuDNN module here
    lstm = torch.nn.LSTM(3, 5, batch_first=True)
    rnn = torch.nn.RNN(3, 5, batch_first=True, nonlinearity="relu")
    gru = torch.nn.GRU(3, 5, batch_first=True)
    with monkeypatch.context() as m:
        m.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
        lstm.flatten_parameters()
        rnn.flatten_parameters()
        gru.flatten_parameters()
    cells = [LSTMCell(5), SimpleRNNCell(5, activation="relu"), GRUCell(5, reset_after=True)]
    for cell in cells:
        cell.build((3,))
    assert cuda.flatten_rnn_weights(_weights(cells[0]), "LSTM", 3, 5)
    assert cuda.flatten_rnn_weights(_weights(cells[1]), "RNN_RELU", 3, 5)
    monkeypatch.setattr(fused_weights, "_on_cudnn", lambda w: True)
    cells[2]._fused_params("GRU")  # the GRU's biases are rows of one parameter: stand-ins are flattened
    torch_lstm, torch_rnn, torch_gru, ours_lstm, ours_rnn, ours_gru = calls
    assert ours_lstm == torch_lstm and ours_rnn == torch_rnn and ours_gru == torch_gru


def test_mixed_dtypes_or_aliased_weights_are_left_alone(monkeypatch):
    monkeypatch.setattr(torch, "_cudnn_rnn_flatten_weight", lambda *a: pytest.fail("flattened"))
    monkeypatch.setattr(torch, "_use_cudnn_rnn_flatten_weight", lambda: True)
    monkeypatch.setattr(torch.backends.cudnn, "is_acceptable", lambda t: True)
    w = torch.zeros(4, 3)
    assert not cuda.flatten_rnn_weights([w, w.double()], "RNN_TANH", 3, 4)
    assert not cuda.flatten_rnn_weights([w, w], "RNN_TANH", 3, 4)


@pytest.mark.parametrize(("make", "mode"), [(lambda: LSTMCell(5), "LSTM"),
                                           (lambda: SimpleRNNCell(5), "RNN_TANH"),
                                           (lambda: SimpleRNNCell(5, activation="relu"), "RNN_RELU")])
def test_on_cudnn_the_cell_flattens_once_and_again_after_a_weight_moves(monkeypatch, make, mode):
    flattened = []
    monkeypatch.setattr(fused_weights, "_on_cudnn", lambda w: True)
    monkeypatch.setattr(cuda, "flatten_rnn_weights",
                        lambda ws, m, i, h: flattened.append((list(ws), m, i, h)) or True)
    cell = make()
    cell.build((3,))
    x, h0 = torch.randn(2, 4, 3), [torch.zeros(2, 5)] * (2 if mode == "LSTM" else 1)
    first, _ = cell.fused(x, h0, training=True)
    again, _ = cell.fused(x, h0, training=True)
    assert len(flattened) == 1
    weights, got_mode, inputs, hidden = flattened[0]
    assert weights[:3] == [cell.weight, cell.recurrent_weight, cell.bias]
    assert (got_mode, inputs, hidden) == (mode, 3, 5)
    assert torch.equal(weights[3], torch.zeros(5 * cell.gates)) and not weights[3].requires_grad
    assert torch.equal(first, again)
    cell.weight.data = cell.weight.data.clone()  # a move or a load gave the weight new memory
    cell.fused(x, h0, training=True)
    assert len(flattened) == 2
    assert cell.get_weights()[0].shape == (3, 5 * cell.gates)  # Keras's layout, untouched


def test_the_cpu_path_is_unchanged_and_never_flattens(monkeypatch):
    monkeypatch.setattr(cuda, "flatten_rnn_weights", lambda *a: pytest.fail("flattened on a CPU"))
    torch.manual_seed(0)
    cell = LSTMCell(5)
    cell.build((3,))
    x, h0 = torch.randn(2, 4, 3), [torch.zeros(2, 5)] * 2
    out, _ = cell.fused(x, h0, training=False)
    b = cell.bias
    params = [cell.weight, cell.recurrent_weight, b, torch.zeros_like(b)]
    ref, _, _ = torch.lstm(x, (h0[0][None], h0[1][None]), params, True, 1, 0.0, False, False, True)
    assert torch.equal(out, ref)
    assert np.array_equal(np.asarray(cell.get_weights()[2]), b.detach().numpy())
