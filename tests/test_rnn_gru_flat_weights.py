"""GRU(reset_after=True) keeps its torch tensors in cuDNN's gate order r, z, n so that on a GPU they are one
flat buffer cuDNN reads in place (issue 28 S3), while everything a user sees stays in Keras 2's z, r, h.

Checked on a CPU: ``torch._cudnn_rnn_flatten_weight`` is replaced by what it does (copy each weight into
one new buffer, then ``set_`` each tensor it was given onto its place: aten/src/ATen/native/cudnn/RNN.cpp,
``_cudnn_rnn_flatten_weight``) and the weights are passed off as cuDNN's; ``torch.gru`` is recorded to
see what it would hand to cuDNN (``try_get_weight_buf`` uses the buffer in place when each weight
starts where cuDNN expects it, else it copies and warns)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote.devices import cuda
from arignote.layers.recurrent import fused_weights
from arignote.layers.recurrent.cells import GRUCell

U, IN = 4, 3


def _fake_flatten(gap: int = 0):
    """torch's flatten on a CPU: one buffer, each weight copied in and re-pointed; ``gap`` spare
    elements before the recurrent bias (cuDNN decides where each weight goes)."""
    buffers = []

    def flatten(weights, n, *args):
        sizes = [w.numel() for w in weights]
        buf = torch.zeros(sum(sizes) + gap, dtype=weights[0].dtype)
        buffers.append(buf)
        offset = 0
        for i, w in enumerate(weights):
            offset += gap if i == 3 else 0
            buf[offset:offset + w.numel()].copy_(w.reshape(-1))
            w.set_(buf.untyped_storage(), offset, w.shape, w.contiguous().stride())
            offset += w.numel()

    return flatten, buffers


@pytest.fixture
def on_cudnn(monkeypatch):
    """The cell believes it is on cuDNN; returns (buffers made, torch.gru calls seen)."""
    import torch.backends.cudnn.rnn as cudnn_rnn

    monkeypatch.setattr(fused_weights, "_on_cudnn", lambda w: True)
    monkeypatch.setattr(torch, "_use_cudnn_rnn_flatten_weight", lambda: True)
    monkeypatch.setattr(torch.backends.cudnn, "is_acceptable", lambda t: True)
    monkeypatch.setattr(cudnn_rnn, "get_cudnn_mode", lambda mode: mode)
    state = {"gap": 0, "calls": []}

    def flatten(*a):
        fn, bufs = _fake_flatten(state["gap"])
        fn(*a)
        state.setdefault("buffers", []).extend(bufs)

    monkeypatch.setattr(torch, "_cudnn_rnn_flatten_weight", flatten)
    real_gru = torch.gru

    def gru(x, h, params, *rest):
        state["calls"].append(list(params))
        return real_gru(x, h, params, *rest)

    monkeypatch.setattr(torch, "gru", gru)
    return state


def _cell(**kw):
    torch.manual_seed(0)
    cell = GRUCell(U, reset_after=True, **kw)
    cell.build((IN,))
    return cell


def _keras_weights():
    rng = np.random.RandomState(1)
    return [rng.randn(IN, 3 * U).astype("float32"), rng.randn(U, 3 * U).astype("float32"),
            rng.randn(2, 3 * U).astype("float32")]


def _cudnn_order(k: np.ndarray) -> np.ndarray:
    """Keras (n, 3u) z, r, h -> torch (3u, n) r, z, n."""
    z, r, h = np.split(k, 3, axis=-1)
    return np.concatenate([r, z, h], axis=-1).T


def test_the_torch_tensors_are_in_cudnn_order_and_keras_views_round_trip():
    cell = _cell()
    ws = _keras_weights()
    cell.set_weights(ws)
    np.testing.assert_array_equal(cell.weight.detach().numpy(), _cudnn_order(ws[0]))
    np.testing.assert_array_equal(cell.recurrent_weight.detach().numpy(), _cudnn_order(ws[1]))
    np.testing.assert_array_equal(cell.bias.detach().numpy(), _cudnn_order(ws[2]).T)
    for got, want in zip(cell.get_weights(), ws):
        np.testing.assert_array_equal(got, want)
    # a Keras weight is a reordered copy here: K.set_value writes it back, in Keras order
    K.set_value(cell.weights[0], ws[0] * 2)
    np.testing.assert_array_equal(cell.get_weights()[0], ws[0] * 2)
    np.testing.assert_array_equal(K.get_value(cell.kernel), ws[0] * 2)


def test_the_keras_initial_values_are_the_same_as_before_the_reorder():
    # fans and initializers act on Keras's layout: the Keras weights are what Keras-order storage gave
    torch.manual_seed(0)
    old = GRUCell(U, reset_after=False)
    old.build((IN,))
    new = _cell()
    np.testing.assert_array_equal(new.get_weights()[0], old.get_weights()[0])
    np.testing.assert_array_equal(new.get_weights()[1], old.get_weights()[1])


def test_constraints_act_on_keras_columns():
    from arignote.constraints import MaxNorm

    cell = _cell(kernel_constraint=MaxNorm(0.5, axis=0))
    ws = _keras_weights()
    cell.set_weights(ws)
    cell.apply_constraints()
    want = MaxNorm(0.5, axis=0)(torch.as_tensor(ws[0])).numpy()
    np.testing.assert_allclose(cell.get_weights()[0], want, rtol=1e-6)


def test_on_cudnn_the_fused_call_gets_one_chunk_in_cudnn_order(on_cudnn):
    cell = _cell()
    ws = _keras_weights()
    cell.set_weights(ws)
    x, h0 = torch.randn(2, 5, IN), [torch.zeros(2, U)]
    out, _ = cell.fused(x, h0, training=False)
    (buf,) = on_cudnn["buffers"]
    (params,) = on_cudnn["calls"]
    # the four weights torch hands to cuDNN start one after the other in one storage, in cuDNN's order
    base, size = buf.data_ptr(), buf.element_size()
    starts = [(p.data_ptr() - base) // size for p in params]
    assert starts == [0, 3 * U * IN, 3 * U * (IN + U), 3 * U * (IN + U + 1)]
    assert all(p.untyped_storage().data_ptr() == base for p in params)
    assert params[0] is cell.weight and params[1] is cell.recurrent_weight
    np.testing.assert_array_equal(buf[: 3 * U * IN].view(3 * U, IN).numpy(), _cudnn_order(ws[0]))
    np.testing.assert_array_equal(buf[3 * U * (IN + U):].view(2, 3 * U).numpy(), _cudnn_order(ws[2]).T)
    # the bias parameter itself is re-pointed onto the buffer (not a copy beside it)
    assert cell.bias.untyped_storage().data_ptr() == base and cell.bias.data_ptr() == params[2].data_ptr()
    # the same function as the unflattened CPU call (views at odd offsets: the CPU kernel may round apart)
    ref, _ = torch.gru(x, h0[0][None], [cell.weight.detach().clone(), cell.recurrent_weight.detach().clone(),
                                        cell.bias[0].detach().clone(), cell.bias[1].detach().clone()],
                       True, 1, 0.0, False, False, True)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_the_buffer_aliases_what_set_weights_and_an_optimizer_step_change(on_cudnn):
    cell = _cell()
    x, h0 = torch.randn(2, 5, IN), [torch.zeros(2, U)]
    first, _ = cell.fused(x, h0, training=True)
    (buf,) = on_cudnn["buffers"]
    ws = _keras_weights()
    cell.set_weights(ws)  # writes into the buffer: no new flatten, the next call uses the new weights
    after_set, _ = cell.fused(x, h0, training=True)
    assert len(on_cudnn["buffers"]) == 1 and not torch.equal(first, after_set)
    np.testing.assert_array_equal(buf[: 3 * U * IN].view(3 * U, IN).numpy(), _cudnn_order(ws[0]))
    before = buf.clone()
    opt = torch.optim.SGD(cell.parameters(), lr=0.1)
    after_set.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in cell.parameters())
    opt.step()
    changed = (buf != before)
    assert changed[: 3 * U * IN].any() and changed[3 * U * (IN + U):].any()  # kernel and bias moved in place
    bias_in_buf = buf[3 * U * (IN + U):].view(2, 3 * U).numpy()  # r, z, n
    np.testing.assert_array_equal(cell.get_weights()[2], _cudnn_order(bias_in_buf).T)  # r,z,n -> z,r,h
    assert len(on_cudnn["buffers"]) == 1
    cell.fused(x, h0, training=True)
    assert len(on_cudnn["buffers"]) == 1  # still in place: no second flatten


def test_a_weight_given_new_memory_is_flattened_again(on_cudnn):
    cell = _cell()
    x, h0 = torch.randn(2, 5, IN), [torch.zeros(2, U)]
    cell.fused(x, h0, training=False)
    cell.recurrent_weight.data = cell.recurrent_weight.data.clone()  # a move or a load
    cell.fused(x, h0, training=False)
    assert len(on_cudnn["buffers"]) == 2
    params = on_cudnn["calls"][-1]
    assert len({p.untyped_storage().data_ptr() for p in params}) == 1


def test_a_gap_before_the_recurrent_bias_gives_a_strided_bias_row(on_cudnn):
    on_cudnn["gap"] = 5
    cell = _cell()
    ws = _keras_weights()
    cell.set_weights(ws)
    x, h0 = torch.randn(2, 5, IN), [torch.zeros(2, U)]
    out, _ = cell.fused(x, h0, training=False)
    params = on_cudnn["calls"][-1]
    assert cell.bias.stride() == (3 * U + 5, 1)
    assert params[3].data_ptr() - params[2].data_ptr() == (3 * U + 5) * 4
    for got, want in zip(cell.get_weights(), ws):
        np.testing.assert_array_equal(got, want)


def test_cudnn_gru_layer_keeps_its_keras_cudnn_layout():
    from arignote.layers import CuDNNGRU

    layer = CuDNNGRU(U)
    layer.build((None, 5, IN))
    rng = np.random.RandomState(2)
    ws = [rng.randn(*w.shape).astype("float32") for w in layer.get_weights()]
    layer.set_weights(ws)
    for got, want in zip(layer.get_weights(), ws):
        np.testing.assert_array_equal(got, want)
    cell = layer.cell
    # the input bias's r block (torch block 0) is Keras's second block of the flat (6 units,) bias
    np.testing.assert_array_equal(cell.bias.detach().numpy()[:U], ws[2][U:2 * U])


def test_optimizer_state_of_a_gru_is_saved_and_loaded_in_keras_layout(tmp_path):
    import h5py

    from arignote.layers import GRU
    from arignote.models import Sequential, load_model

    torch.manual_seed(0)
    model = Sequential([GRU(U, reset_after=True, input_shape=(5, IN))])
    model.compile("adam", "mse")
    rng = np.random.RandomState(3)
    x, y = rng.rand(4, 5, IN).astype("float32"), rng.rand(4, U).astype("float32")
    model.fit(x, y, epochs=2, verbose=0)
    path = str(tmp_path / "gru.h5")
    with _no_warning():
        model.save(path)
    cell = model.layers[0].cell
    m_kernel = model.optimizer.torch.state[cell.weight]["exp_avg"]
    with h5py.File(path, "r") as f:
        saved = f["optimizer_weights"]["training/Adam/m_0:0"][()]
    np.testing.assert_array_equal(saved, cell.keras_layout("kernel").to_keras(m_kernel).numpy())
    assert not np.array_equal(saved, m_kernel.numpy().T)  # the gates really were reordered
    loaded = load_model(path)
    model.train_on_batch(x, y)
    loaded.train_on_batch(x, y)
    for a, b in zip(loaded.get_weights(), model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _no_warning():
    import warnings

    class _Ctx:
        def __enter__(self):
            self.cm = warnings.catch_warnings()
            self.cm.__enter__()
            warnings.simplefilter("error")

        def __exit__(self, *exc):
            return self.cm.__exit__(*exc)

    return _Ctx()


def test_lstm_slots_map_after_its_weights_share_one_flat_buffer():
    # after cuDNN's flatten every LSTM weight is a view into one storage at some offset: each Keras
    # weight must still map to its own parameter, also when input_dim == units (equal sizes)
    from arignote.layers import LSTM
    from arignote.models import Sequential
    from arignote.saving import optimizer_state

    model = Sequential([LSTM(3, input_shape=(4, 3))])
    model.compile("adam", "mse")
    cell = model.layers[0].cell
    flatten, _ = _fake_flatten()
    params = [cell.weight, cell.recurrent_weight, cell.bias]
    with torch.no_grad():
        flatten(params + [torch.zeros_like(cell.bias)], 4)
    assert cell.recurrent_weight.storage_offset() > 0
    views = optimizer_state._views(model)
    assert [v[0] for v in views] == params
    slot = torch.arange(float(cell.recurrent_weight.numel())).view_as(cell.recurrent_weight)
    got = optimizer_state._to_keras_layout(slot, cell.recurrent_weight, views[1][1])
    np.testing.assert_array_equal(got, slot.T.numpy())
    back = optimizer_state._from_keras_layout(got, cell.recurrent_weight, views[1][1])
    assert torch.equal(back, slot)


def test_cuda_flatten_helper_is_what_the_cell_calls(monkeypatch):
    seen = []
    monkeypatch.setattr(fused_weights, "_on_cudnn", lambda w: True)
    monkeypatch.setattr(cuda, "flatten_rnn_weights",
                        lambda ws, m, i, h: seen.append((len(ws), m, i, h)) or False)
    cell = _cell()
    cell.fused(torch.randn(1, 2, IN), [torch.zeros(1, U)], training=False)
    cell.fused(torch.randn(1, 2, IN), [torch.zeros(1, U)], training=False)
    assert seen == [(4, "GRU", IN, U)] * 2  # refused (not on cuDNN): tried again, nothing re-pointed


@pytest.mark.gpu
def test_on_a_gpu_gru_and_cudnn_layers_run_without_a_copy_warning_and_match_the_cpu():
    import warnings

    from arignote.layers import GRU, CuDNNGRU, CuDNNLSTM
    from arignote.saving import layouts

    x = torch.randn(3, 6, IN)
    for make, plain in ((lambda: GRU(U, reset_after=True, return_sequences=True), None),
                        (lambda: CuDNNGRU(U, return_sequences=True),
                         (lambda: GRU(U, reset_after=True, return_sequences=True), 3)),
                        (lambda: CuDNNLSTM(U, return_sequences=True), None)):
        layer = make()
        layer.build((None, 6, IN))
        rng = np.random.RandomState(4)
        ws = [rng.randn(*w.shape).astype("float32") for w in layer.get_weights()]
        layer.set_weights(ws)
        if plain is not None:
            ref_layer = plain[0]()
            ref_layer.build((None, 6, IN))
            ref_layer.set_weights(layouts.cudnn_to_plain(ws, plain[1]))
            ref = ref_layer(x).detach()
        elif not type(layer).__name__.startswith("CuDNN"):
            ref = layer(x).detach()
        else:
            ref = None
        layer.to("cuda")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # cuDNN's "not part of single contiguous chunk" fails here
            got = layer(x.cuda())
            got.sum().backward()
            got = layer(x.cuda()).detach().cpu()
        assert len({p.untyped_storage().data_ptr() for p in layer.cell.parameters()}) == 1
        for a, b in zip(layer.get_weights(), ws):
            np.testing.assert_array_equal(a, b)
        if ref is not None:
            np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("grad", [False, True])
def test_the_cpu_numbers_are_those_of_the_keras_order_copies(grad):
    # before the reorder the fused call got fresh cuDNN-order copies of Keras-order tensors; torch's CPU
    # kernel rounds differently for weights that need a gradient, so inference passes them detached
    cell = _cell()
    ws = _keras_weights()
    cell.set_weights(ws)
    x, h0 = torch.randn(2, 5, IN), [torch.zeros(2, U)]
    copies = [torch.tensor(_cudnn_order(ws[0])), torch.tensor(_cudnn_order(ws[1])),
              *torch.tensor(_cudnn_order(ws[2]).T)]
    with torch.set_grad_enabled(grad):
        out, _ = cell.fused(x, h0, training=False)
        ref, _ = torch.gru(x, h0[0][None], [c.requires_grad_(grad) for c in copies], True, 1, 0.0, False,
                           False, True)
    assert torch.equal(out, ref)


def _in_keras_gate_order(state: dict) -> dict:
    """What an arignote checkpoint written before the reorder held: GRU gates in Keras's z, r, h."""
    out = dict(state)
    for key, value in state.items():
        if key.endswith(("cell.weight", "cell.recurrent_weight")):
            out[key] = torch.tensor(np.ascontiguousarray(_cudnn_order(value.numpy().T)))
        elif key.endswith("cell.bias"):
            out[key] = torch.tensor(np.ascontiguousarray(_cudnn_order(value.numpy()).T))
    assert len(out) == len(state) and any(not torch.equal(out[k], state[k]) for k in state)
    return out


@pytest.mark.parametrize("kind", ["model", "weights", "training state"])
def test_an_arignote_checkpoint_written_in_keras_gate_order_loads_reordered(tmp_path, kind):
    from arignote import checkpoint
    from arignote.layers import GRU
    from arignote.models import Sequential, load_model, saving

    def build():
        torch.manual_seed(1)
        return Sequential([GRU(U, reset_after=True, input_shape=(5, IN))])

    torch.manual_seed(0)
    model = Sequential([GRU(U, reset_after=True, input_shape=(5, IN))])
    model.compile("sgd", "mse")
    x = np.random.RandomState(5).rand(2, 5, IN).astype("float32")
    want = model.predict(x, verbose=0)
    new, old = str(tmp_path / "new.ckpt"), str(tmp_path / "old.ckpt")
    if kind == "training state":
        obj, key = {k: v for k, v in model.training_state().items() if k != "optimizer"}, "module"
    else:
        (model.save if kind == "model" else model.save_weights)(new)
        obj, key = checkpoint.load(new), "weights"
    assert obj[saving.GATES_KEY] == saving.GATES_CUDNN
    before = {**{k: v for k, v in obj.items() if k != saving.GATES_KEY}, key: _in_keras_gate_order(obj[key])}
    checkpoint.save(old, before)
    for path, state in ((new, obj), (old, before)):
        if kind == "model":
            got = load_model(path).predict(x, verbose=0)
        else:
            other = build()
            other.compile("sgd", "mse")
            other.load_training_state(state) if kind == "training state" else other.load_weights(path)
            got = other.predict(x, verbose=0)
        np.testing.assert_array_equal(got, want)
