"""ConvRNN2D (Keras 2.3.1 ``keras.layers.convolutional_recurrent.ConvRNN2D``) and ConvLSTM2D as a
ConvRNN2D around ConvLSTM2DCell: against real Keras 2.3.1 output (fixtures from
scripts/make_keras2_convrnn_fixture.py), against the cell stepped by hand, and with a user's own cell
written the Keras 2 way (a ConvGRU cell) in Sequential and functional models."""

import os

import h5py
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from arignote import backend, layers
from arignote.layers import ConvLSTM2D, ConvLSTM2DCell, Dense, Flatten, Input, Lambda, Masking
from arignote.layers.convolutional_recurrent import ConvRNN2D
from arignote.models import Model, Sequential, load_model

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "keras2", "convrnn")
RNG = np.random.RandomState(3)


def _seq(*shape):
    return RNG.uniform(-1, 1, shape).astype("float32")


def _set_random_weights(layer, scale=0.4):
    layer.set_weights([RNG.uniform(-scale, scale, w.shape).astype("float32") for w in layer.get_weights()])


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


class ConvGRUCell(layers.Layer):
    """A user's cell the Keras 2 way: add_weight in Keras layout, convolutions in the cell's call."""

    def __init__(self, filters, kernel_size, padding="same", **kwargs):
        super().__init__(**kwargs)
        self.filters = filters
        self.kernel_size = (kernel_size, kernel_size)
        self.strides, self.dilation_rate = (1, 1), (1, 1)
        self.padding, self.data_format = padding, "channels_last"
        self.state_size = (filters,)

    def build(self, input_shape):
        kh, kw = self.kernel_size
        self.kernel = self.add_weight("kernel", (kh, kw, input_shape[-1], 3 * self.filters),
                                      initializer="glorot_uniform")
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (kh, kw, self.filters, 3 * self.filters),
                                                initializer="orthogonal")
        self.bias = self.add_weight("bias", (3 * self.filters,), initializer="zeros")
        super().build(input_shape)

    def conv(self, x, w, padding="same"):  # Keras layouts: x (n, rows, cols, c), w (kh, kw, in, out)
        return F.conv2d(x.permute(0, 3, 1, 2), w.permute(3, 2, 0, 1), padding=padding).permute(0, 2, 3, 1)

    def call(self, inputs, states, training=None):
        h, f = states[0], self.filters
        xz = self.conv(inputs, self.kernel, self.padding) + self.bias
        hz = self.conv(h, self.recurrent_kernel[..., : 2 * f])
        z = torch.sigmoid(xz[..., :f] + hz[..., :f])
        r = torch.sigmoid(xz[..., f : 2 * f] + hz[..., f:])
        candidate = torch.tanh(xz[..., 2 * f :] + self.conv(r * h, self.recurrent_kernel[..., 2 * f :]))
        h = z * h + (1 - z) * candidate
        return h, [h]

    def get_config(self):
        config = super().get_config()
        config.update(filters=self.filters, kernel_size=self.kernel_size[0], padding=self.padding)
        return config


def _gru_reference(cell, x, h=None, backwards=False):
    """The ConvGRU by hand in numpy-fed torch, independent of ConvRNN2D's loop."""
    k, rk, b = (torch.tensor(w) for w in cell.get_weights())
    f = cell.filters
    xs = torch.tensor(x)
    if backwards:
        xs = xs.flip(1)
    if h is None:
        h = torch.zeros(*xs.shape[:1], *xs.shape[2:4], f)
    outs = []
    for t in range(xs.shape[1]):
        xz = cell.conv(xs[:, t], k, cell.padding) + b
        hz = cell.conv(h, rk[..., : 2 * f])
        z, r = torch.sigmoid(xz[..., :f] + hz[..., :f]), torch.sigmoid(xz[..., f : 2 * f] + hz[..., f:])
        h = z * h + (1 - z) * torch.tanh(xz[..., 2 * f :] + cell.conv(r * h, rk[..., 2 * f :]))
        outs.append(h)
    return torch.stack(outs, 1).numpy(), h.numpy()


class SteppedConvLSTM2DCell(ConvLSTM2DCell):
    """ConvLSTM2DCell through Keras's per-step call (a subclass replacing call loses the batched path)."""

    def call(self, inputs, states, training=None):
        return super().call(inputs, states, training=training)


# ------------------------------------------------------------------------------ (a) ConvLSTM2D is a ConvRNN2D
@pytest.mark.parametrize("kwargs", [
    dict(padding="same", return_sequences=True),
    dict(strides=2, go_backwards=True),
    dict(padding="same", dilation_rate=2, data_format="channels_first", return_sequences=True),
])
def test_conv_lstm_2d_equals_conv_rnn_2d_around_its_cell_on_both_paths(kwargs):
    layer = ConvLSTM2D(3, (3, 2), **kwargs)
    first = kwargs.get("data_format") == "channels_first"
    x = _seq(2, 4, 3, 7, 6) if first else _seq(2, 4, 7, 6, 3)
    layer.build(x.shape)
    _set_random_weights(layer)
    assert isinstance(layer, ConvRNN2D) and isinstance(layer.cell, ConvLSTM2DCell)
    assert layer.cell.runs_sequences  # the batched input convolution of all steps
    assert [n for n, _ in layer.named_parameters()] == ["cell.weight", "cell.recurrent_weight", "cell.bias"]
    assert layer.weight_names() == ["kernel", "recurrent_kernel", "bias"]
    assert [w.shape for w in layer.get_weights()] == [(3, 2, 3, 12), (3, 2, 3, 12), (12,)]
    assert layer.cell.kernel_shape == (3, 2, 3, 12)
    rnn_args = {k: v for k, v in kwargs.items() if k in ("return_sequences", "go_backwards")}
    cell_args = {k: v for k, v in kwargs.items() if k not in rnn_args}
    for cell_cls in (ConvLSTM2DCell, SteppedConvLSTM2DCell):
        other = ConvRNN2D(cell_cls(3, (3, 2), **cell_args), **rnn_args)
        other.build(x.shape)
        other.set_weights(layer.get_weights())
        assert other.cell.runs_sequences == (cell_cls is ConvLSTM2DCell)
        mask = torch.tensor([[True, False, True, True], [False, True, True, False]])
        with torch.no_grad():
            for m in (None, mask):
                got, want = other(torch.tensor(x), mask=m), layer(torch.tensor(x), mask=m)
                np.testing.assert_allclose(_np(got), _np(want), rtol=1e-5, atol=1e-6)


def test_conv_lstm_2d_takes_keras_positional_arguments_and_refuses_unroll():
    layer = ConvLSTM2D(2, 3, strides=(2, 2), padding="same")
    with pytest.raises(TypeError, match="at most 3 positional arguments"):  # Keras 2.3.1's legacy check
        ConvLSTM2D(2, 3, (2, 2), "same")
    assert layer.strides == (2, 2) and layer.padding == "same" and layer.cell.strides == (2, 2)
    assert layer.compute_output_shape((None, 4, 7, 6, 3)) == (None, 4, 3, 2)
    with pytest.raises(TypeError, match="Unrolling isn't possible"):
        ConvLSTM2D(2, 3, unroll=True)
    with pytest.raises(TypeError, match="stack convolutional cells"):
        ConvRNN2D([ConvLSTM2DCell(2, 3), ConvLSTM2DCell(2, 3)])
    with pytest.raises(ValueError, match="rank 5"):
        ConvLSTM2D(2, 3).build((None, 4, 7, 3))


# ------------------------------------------------------------------------------ (b) real Keras 2.3.1
FIXTURE = os.path.join(HERE, "convlstm2d.npz")


def _keras_layer_configs(path):
    import json

    with h5py.File(path, "r") as f:
        raw = f.attrs["model_config"]
    config = json.loads(raw.decode() if isinstance(raw, bytes) else raw)["config"]
    return {layer["config"]["name"]: layer["config"] for layer in config["layers"]
            if layer["class_name"] == "ConvLSTM2D"}


def test_keras_2_3_1_conv_lstm_2d_branches_load_and_predict_as_keras():
    ref = np.load(FIXTURE)
    path = os.path.join(HERE, "convlstm2d_branches.h5")
    model = load_model(path)
    outputs = model.predict(ref["branches_x"], verbose=0)
    names = [n for n in ref.files if n.startswith("branches_") and n != "branches_x"]
    assert len(names) == 7 and len(outputs) == 7
    for layer_name, y in zip(model.output_names, outputs):
        np.testing.assert_allclose(y, ref["branches_" + layer_name], rtol=1e-5, atol=1e-5, err_msg=layer_name)
    # our config of each layer is Keras's, key for key
    configs = _keras_layer_configs(path)
    assert len(configs) == 7
    assert model.get_layer("even_same").cell.theano_same_padding  # mirrored as Theano padded
    for name, keras_config in configs.items():
        assert model.get_layer(name).get_config() == keras_config, name


def test_keras_2_3_1_channels_first_conv_lstm_2d_predicts_as_keras():
    ref = np.load(FIXTURE)
    path = os.path.join(HERE, "convlstm2d_first.h5")
    names = ["first_strided", "first_back"]
    # our own channels_first layers, given the file's weights
    x = Input(ref["first_x"].shape[1:])
    ours = Model(x, [
        ConvLSTM2D(2, 3, strides=2, data_format="channels_first", return_sequences=True, name=names[0])(x),
        ConvLSTM2D(2, (1, 3), padding="same", data_format="channels_first", go_backwards=True,
                   name=names[1])(x),
    ])
    ours.load_weights(path)
    for name, y in zip(names, ours.predict(ref["first_x"], verbose=0)):
        np.testing.assert_allclose(y, ref["first_" + name], rtol=1e-5, atol=1e-5, err_msg=name)
    # load_model keeps it as saved, as Keras 2.3.1 does: the same channels-first sequences
    kept = load_model(path)
    assert kept.get_layer(names[0]).data_format == "channels_first"
    for name, y in zip(names, kept.predict(ref["first_x"], verbose=0)):
        np.testing.assert_allclose(y, ref["first_" + name], rtol=1e-5, atol=1e-5, err_msg=name)
    # rebuilt channels-last on request (images fed as (..., rows, cols, channels))
    loaded = load_model(path, data_format="channels_last")
    assert loaded.get_layer(names[0]).data_format == "channels_last"
    got = loaded.predict(np.ascontiguousarray(ref["first_x"].transpose(0, 1, 3, 4, 2)), verbose=0)
    want = [ref["first_" + names[0]].transpose(0, 1, 3, 4, 2), ref["first_" + names[1]].transpose(0, 2, 3, 1)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_keras_2_3_1_masked_conv_lstm_2d_predicts_as_keras():
    ref = np.load(FIXTURE)
    x = ref["masked_x"]
    # Keras 2.3.1 does not save a Lambda's mask function: the same model built here, the file's weights
    inp = Input(x.shape[1:])
    frames = Lambda(lambda t: t, mask=lambda t, mask: backend.any(backend.not_equal(t, 0.0), axis=[2, 3, 4]),
                    name="frames")(inp)
    model = Model(inp, [ConvLSTM2D(2, 3, padding="same", return_sequences=True, name="masked_seq")(frames),
                        ConvLSTM2D(2, 3, padding="same", go_backwards=True, name="masked_back")(frames)])
    model.load_weights(os.path.join(HERE, "convlstm2d_masked.h5"))
    flags = backend.any(backend.not_equal(torch.tensor(x), 0.0), axis=[2, 3, 4])  # several axes, as Theano's
    np.testing.assert_array_equal(_np(flags), np.any(x != 0, axis=(2, 3, 4)))
    every = backend.all(torch.tensor(x) != 0, axis=(-3, -2, -1))
    np.testing.assert_array_equal(_np(every), np.all(x != 0, axis=(2, 3, 4)))
    seq, back = model.predict(x, verbose=0)
    np.testing.assert_allclose(seq, ref["masked_masked_seq"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(back, ref["masked_masked_back"], rtol=1e-5, atol=1e-5)
    assert not seq[1, 0].any()  # a first step masked: zeros, as Keras 2 (the previous output starts at 0)
    np.testing.assert_array_equal(seq[0, 2], seq[0, 1])  # a masked step repeats the previous output


def test_keras_2_3_1_conv_lstm_2d_return_state_loads_and_predicts_as_keras():
    ref = np.load(FIXTURE)
    model = load_model(os.path.join(HERE, "convlstm2d_state.h5"))
    y, h, c = model.predict(ref["state_x"], verbose=0)
    assert y.shape == (2, 4, 5, 5, 2) and h.shape == c.shape == (2, 5, 5, 2)
    for i, got in enumerate((y, h, c)):
        np.testing.assert_allclose(got, ref[f"state_y{i}"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h, y[:, -1], rtol=1e-6)  # go_backwards: the last step processed


def test_keras_2_3_1_stateful_conv_lstm_2d_carries_and_resets_as_keras():
    ref = np.load(FIXTURE)
    model = load_model(os.path.join(HERE, "convlstm2d_stateful.h5"))
    assert model.layers[0].stateful
    np.testing.assert_allclose(model.predict(ref["stateful_x1"], batch_size=2), ref["stateful_y1"], atol=1e-5)
    np.testing.assert_allclose(model.predict(ref["stateful_x2"], batch_size=2), ref["stateful_y2"], atol=1e-5)
    model.reset_states()
    np.testing.assert_allclose(model.predict(ref["stateful_x2"], batch_size=2), ref["stateful_y2_reset"],
                               atol=1e-5)
    assert not np.allclose(ref["stateful_y2"], ref["stateful_y2_reset"], atol=1e-3)  # the state mattered


# ------------------------------------------------------------------------------ (c) a user's cell
def test_user_conv_gru_cell_matches_a_hand_loop_and_its_shapes():
    cell = ConvGRUCell(3, 3)
    layer = ConvRNN2D(cell, return_sequences=True, return_state=True, go_backwards=True)
    x = _seq(2, 4, 6, 5, 2)
    with torch.no_grad():
        y, h = layer(torch.tensor(x))
    ref_seq, ref_h = _gru_reference(cell, x, backwards=True)
    np.testing.assert_allclose(_np(y), ref_seq, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(h), ref_h, rtol=1e-5, atol=1e-6)
    assert layer.compute_output_shape((None, 4, 6, 5, 2)) == [(None, 4, 6, 5, 3), (None, 6, 5, 3)]
    valid = ConvRNN2D(ConvGRUCell(3, 3, padding="valid"))
    assert tuple(valid(torch.tensor(x)).shape) == (2, 4, 3, 3)  # zero states of the convolution's size


def test_user_conv_gru_cell_trains_in_sequential_and_round_trips_with_custom_objects(tmp_path):
    torch.manual_seed(0)
    x = _seq(16, 4, 6, 6, 2)
    y = x.mean(axis=(1, 2, 3, 4))[:, None] * 4
    model = Sequential([ConvRNN2D(ConvGRUCell(3, 3), input_shape=(4, 6, 6, 2)), Flatten(), Dense(1)])
    model.compile("adam", "mse")
    loss = model.fit(x, y, epochs=8, batch_size=8, verbose=0).history["loss"]
    assert loss[-1] < 0.8 * loss[0], loss
    config = model.layers[0].get_config()
    assert config["cell"]["class_name"] == "ConvGRUCell" and config["cell"]["config"]["filters"] == 3
    assert {"return_sequences", "return_state", "go_backwards", "stateful", "unroll"} <= set(config)
    path = str(tmp_path / "gru.h5")
    model.save(path)
    with pytest.raises(ValueError, match="ConvGRUCell"):
        load_model(path)
    loaded = load_model(path, custom_objects={"ConvGRUCell": ConvGRUCell})
    assert isinstance(loaded.layers[0].cell, ConvGRUCell)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    clone = layers.deserialize(layers.serialize(model.layers[0]), custom_objects={"ConvGRUCell": ConvGRUCell})
    assert type(clone) is ConvRNN2D and clone.cell.filters == 3 and clone.cell.kernel_size == (3, 3)


def test_user_cell_in_a_functional_model_with_masking_trains():
    torch.manual_seed(1)
    x = _seq(12, 5, 6, 6, 2)
    x[:6, 3:] = 0.0  # padded frames: Masking's per-pixel mask skips whole steps
    y = x[:, :3].mean(axis=(1, 2, 3, 4))[:, None] * 4
    inp = Input((5, 6, 6, 2))
    seq = ConvRNN2D(ConvGRUCell(2, 3), return_sequences=True)(Masking(0.0)(inp))
    out = Dense(1)(Flatten()(ConvRNN2D(ConvGRUCell(2, 3))(seq)))
    model = Model(inp, out)
    model.compile("adam", "mse")
    loss = model.fit(x, y, epochs=8, batch_size=6, verbose=0).history["loss"]
    assert loss[-1] < loss[0], loss
    first = model.layers[2]
    with torch.no_grad():
        got = _np(first(torch.tensor(x[:2]), mask=torch.tensor(np.any(x[:2] != 0, axis=-1))))
    ref, _ = _gru_reference(first.cell, x[:2, :3])
    np.testing.assert_allclose(got[:, :3], ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 3], got[:, 2])  # masked steps repeat the last output
    np.testing.assert_allclose(got[:, 4], got[:, 2])


class ConditionedCell(ConvGRUCell):
    """Takes ``constants``: a fixed image added to the new state at every step."""

    def build(self, input_shape):  # Keras 2: [step input shape, *constant shapes]
        assert isinstance(input_shape, list) and input_shape[1] == (None, 5, 5, 3), input_shape
        super().build(input_shape[0])

    def call(self, inputs, states, training=None, constants=None):
        h, _ = super().call(inputs, states, training)
        h = h + constants[0]
        return h, [h]


def test_constants_reach_the_cell_and_survive_the_functional_round_trip(tmp_path):
    x, bonus = _seq(2, 3, 5, 5, 2), _seq(2, 5, 5, 3)
    cell = ConditionedCell(3, 3)
    layer = ConvRNN2D(cell, return_sequences=True)
    with torch.no_grad():
        got = _np(layer(torch.tensor(x), constants=torch.tensor(bonus)))
    k, rk, b = (torch.tensor(w) for w in cell.get_weights())
    h = torch.zeros(2, 5, 5, 3)
    for t in range(3):  # the hand loop, with the constant added each step
        xz = cell.conv(torch.tensor(x[:, t]), k) + b
        hz = cell.conv(h, rk[..., :6])
        z, r = torch.sigmoid(xz[..., :3] + hz[..., :3]), torch.sigmoid(xz[..., 3:6] + hz[..., 3:])
        h = z * h + (1 - z) * torch.tanh(xz[..., 6:] + cell.conv(r * h, rk[..., 6:])) + torch.tensor(bonus)
        np.testing.assert_allclose(got[:, t], h.numpy(), rtol=1e-5, atol=1e-6)
    xi, ci = Input((3, 5, 5, 2)), Input((5, 5, 3))
    model = Model([xi, ci], ConvRNN2D(ConditionedCell(3, 3), name="cond")(xi, constants=ci))
    assert model.get_layer("cond").get_config()["num_constants"] == 1
    path = str(tmp_path / "cond.h5")
    model.save(path)
    loaded = load_model(path, custom_objects={"ConditionedCell": ConditionedCell})
    np.testing.assert_allclose(loaded.predict([x, bonus], verbose=0), model.predict([x, bonus], verbose=0),
                               rtol=1e-6)
    with pytest.raises(ValueError, match="does not support constants"):
        ConvRNN2D(ConvGRUCell(3, 3))(torch.tensor(x), constants=torch.tensor(bonus))


def test_a_cell_without_the_convolution_geometry_is_named():
    class Bare(layers.Layer):
        state_size = (2,)

        def call(self, inputs, states):
            return states[0], states

    with pytest.raises(ValueError, match=r"cell Bare has no filters, kernel_size, strides, padding, "
                                         r"data_format, dilation_rate"):
        ConvRNN2D(Bare()).build((None, 3, 5, 5, 2))


# ------------------------------------------------------------------------------ (d) states
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_return_state_shapes(data_format):
    layer = ConvLSTM2D(4, 3, strides=2, data_format=data_format, return_state=True, return_sequences=True)
    shape = (None, 5, 7, 9, 3) if data_format == "channels_last" else (None, 5, 3, 7, 9)
    image = (None, 3, 4, 4) if data_format == "channels_last" else (None, 4, 3, 4)
    expected = [(image[0], 5, *image[1:]), image, image]
    assert layer.compute_output_shape(shape) == expected
    y, h, c = layer(torch.tensor(_seq(2, *shape[1:])))
    assert [tuple(t.shape) for t in (y, h, c)] == [(2, *s[1:]) for s in expected]
    inp = Input(shape[1:])
    outs = ConvLSTM2D(4, 3, strides=2, data_format=data_format, return_state=True)(inp)
    assert [o.shape for o in outs] == [image, image, image]


def test_initial_state_equals_stepping_the_cell_from_it(tmp_path):
    x, h0, c0 = _seq(2, 3, 5, 5, 2), _seq(2, 5, 5, 3), _seq(2, 5, 5, 3)
    layer = ConvLSTM2D(3, 3, padding="same", return_sequences=True, return_state=True)
    with torch.no_grad():
        y, h, c = layer(torch.tensor(x), initial_state=[torch.tensor(h0), torch.tensor(c0)])
        states = [torch.tensor(h0), torch.tensor(c0)]
        for t in range(3):
            out, states = layer.cell.call(torch.tensor(x[:, t]), states)
            np.testing.assert_allclose(_np(y[:, t]), _np(out), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(h), _np(states[0]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(c), _np(states[1]), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError,
                       match=r"initial state 0 has shape \(2, 5, 5, 2\), expected \(2, 5, 5, 3\)"):
        layer(torch.tensor(x), initial_state=[torch.zeros(2, 5, 5, 2), torch.tensor(c0)])
    # functional: the states are two more inputs; the file keeps the wiring (Keras 2.3.1 itself refuses
    # initial_state as Keras tensors on ConvRNN2D, an AssertionError in _standardize_args)
    xi, hi, ci = Input((3, 5, 5, 2)), Input((5, 5, 3)), Input((5, 5, 3))
    model = Model([xi, hi, ci], ConvLSTM2D(3, 3, padding="same", name="conv")(xi, initial_state=[hi, ci]))
    model.get_layer("conv").set_weights(layer.get_weights())
    np.testing.assert_allclose(model.predict([x, h0, c0], verbose=0), _np(h), rtol=1e-5, atol=1e-6)
    path = str(tmp_path / "init.h5")
    model.save(path)
    np.testing.assert_allclose(load_model(path).predict([x, h0, c0], verbose=0), _np(h), rtol=1e-5, atol=1e-6)


def test_stateful_carries_resets_and_sets_states():
    x1, x2 = _seq(2, 3, 5, 5, 2), _seq(2, 3, 5, 5, 2)
    layer = ConvRNN2D(ConvGRUCell(3, 3), stateful=True, batch_input_shape=(2, 3, 5, 5, 2))
    fresh = ConvRNN2D(ConvGRUCell(3, 3))
    with torch.no_grad():
        first = layer(torch.tensor(x1))
        fresh.build(x1.shape)
        fresh.set_weights(layer.get_weights())
        carried = _np(layer(torch.tensor(x2)))
        np.testing.assert_allclose(carried, _np(fresh(torch.tensor(x2), initial_state=[first])), rtol=1e-6)
        assert [tuple(s.shape) for s in layer.states] == [(2, 5, 5, 3)]
        layer.reset_states()
        assert not layer.states[0].any()
        np.testing.assert_allclose(_np(layer(torch.tensor(x2))), _np(fresh(torch.tensor(x2))), rtol=1e-6)
        h = _seq(2, 5, 5, 3)
        layer.reset_states([h])
        np.testing.assert_allclose(_np(layer(torch.tensor(x2))),
                                   _np(fresh(torch.tensor(x2), initial_state=[torch.tensor(h)])), rtol=1e-6)
    with pytest.raises(ValueError, match=r"State 0 is incompatible with layer .*shape=\(2, 5, 5, 3\)"):
        layer.reset_states([np.zeros((2, 5, 5, 4))])
    with pytest.raises(ValueError, match="expects 1 states"):
        layer.reset_states([h, h])
    with pytest.raises(AttributeError, match="must be stateful"):
        fresh.reset_states()
    # a stateful layer built from a full batch shape starts from zeros it can show before any batch
    built = ConvLSTM2D(2, 3, stateful=True, batch_input_shape=(4, 3, 7, 7, 1))
    built.build((4, 3, 7, 7, 1))
    built.reset_states()
    assert [tuple(s.shape) for s in built.states] == [(4, 5, 5, 2), (4, 5, 5, 2)]


def test_conv_lstm_2d_dropout_in_training_only():
    torch.manual_seed(0)
    x = torch.tensor(_seq(2, 3, 5, 5, 2))
    layer = ConvLSTM2D(2, 3, padding="same", dropout=0.5, recurrent_dropout=0.5, return_sequences=True)
    plain = ConvLSTM2D(2, 3, padding="same", return_sequences=True)
    layer.build(tuple(x.shape))
    plain.build(tuple(x.shape))
    plain.set_weights(layer.get_weights())
    layer.train()
    a, b = layer(x), layer(x)
    assert not torch.allclose(a, b)  # fresh masks per batch
    a.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in layer.parameters())
    layer.eval()
    with torch.no_grad():
        np.testing.assert_allclose(_np(layer(x)), _np(plain(x)), rtol=1e-6)

