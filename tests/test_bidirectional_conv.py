"""``Bidirectional(ConvLSTM2D(...))`` (Keras 2.3.1 wraps any RNN layer, image sequences included):
against real Keras 2.3.1 output (tests/fixtures/keras2/rnnfix/bidir_convlstm.h5, from
scripts/make_keras2_rnnfix_fixture.py: every merge mode, return_sequences, return_state) and against
the two directions run separately."""

import os

import numpy as np
import pytest
import torch

from arignote.layers import Bidirectional, ConvLSTM2D, Input
from arignote.models import Model, Sequential, load_model
from arignote.saving import layouts

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "keras2", "rnnfix")
RNG = np.random.RandomState(9)


def test_a_keras_2_3_1_bidirectional_convlstm2d_file_predicts_as_keras():
    ref = np.load(os.path.join(HERE, "rnnfix.npz"))
    model = load_model(os.path.join(HERE, "bidir_convlstm.h5"))
    got = model.predict(ref["bidir_x"], verbose=0)
    assert len(got) == 11  # concat, sum, mul, ave, None (2 outputs), return_state (output + 2 x [h, c])
    for i, y in enumerate(got):
        np.testing.assert_allclose(y, ref[f"bidir_y{i}"], rtol=1e-5, atol=1e-6)
    # the weights in Keras's order and names (forward_ then backward_, Theano writes no ':0')
    names = [n.removesuffix(":0") for layer in model.layers for n in layouts.to_file(layer)[0]]
    assert names == [str(n) for n in ref["bidir_weight_names"]]


@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
def test_each_merge_mode_is_the_two_directions_merged(merge_mode):
    x = torch.tensor(RNG.uniform(-1, 1, (2, 4, 5, 5, 3)).astype("float32"))
    layer = Bidirectional(ConvLSTM2D(2, 3, padding="same", return_sequences=True), merge_mode=merge_mode)
    with torch.no_grad():
        got = layer(x)
        fwd = layer.forward_layer(x)
        bwd = layer.backward_layer(x).flip(1)  # go_backwards: reversed back before merging
    want = {"concat": lambda: torch.cat([fwd, bwd], -1), "sum": lambda: fwd + bwd, "mul": lambda: fwd * bwd,
            "ave": lambda: (fwd + bwd) / 2, None: lambda: [fwd, bwd]}[merge_mode]()
    for g, w in zip(got if merge_mode is None else [got], want if merge_mode is None else [want]):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
    assert not np.allclose(fwd.numpy(), bwd.numpy())
    assert layer.backward_layer.go_backwards and not layer.forward_layer.go_backwards
    shape = layer.compute_output_shape((None, 4, 5, 5, 3))
    assert shape == ([(None, 4, 5, 5, 2)] * 2 if merge_mode is None
                     else (None, 4, 5, 5, 4 if merge_mode == "concat" else 2))


def test_return_state_gives_both_directions_states_and_the_model_round_trips(tmp_path):
    x = RNG.uniform(-1, 1, (2, 3, 6, 6, 2)).astype("float32")
    inp = Input((3, 6, 6, 2))
    outs = Bidirectional(ConvLSTM2D(3, 3, return_state=True), name="bi")(inp)
    model = Model(inp, outs)
    got = model.predict(x, verbose=0)
    assert [y.shape for y in got] == [(2, 4, 4, 6)] + [(2, 4, 4, 3)] * 4
    np.testing.assert_allclose(got[0][..., :3], got[1], rtol=1e-6)  # forward h
    np.testing.assert_allclose(got[0][..., 3:], got[3], rtol=1e-6)  # backward h
    path = str(tmp_path / "bi.h5")
    model.save(path)
    loaded = load_model(path)
    for a, b in zip(loaded.predict(x, verbose=0), got):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    seq = Sequential([Bidirectional(ConvLSTM2D(2, 3, padding="same"), input_shape=(3, 6, 6, 2))])
    assert seq.predict(x, verbose=0).shape == (2, 6, 6, 4)


def test_wrong_rank_names_the_layer_and_the_expected_shape():
    with pytest.raises(ValueError, match=r"Bidirectional 'bi'.*\(batch, timesteps, rows, cols, channels\)"):
        Bidirectional(ConvLSTM2D(2, 3), name="bi")(torch.zeros(2, 3, 5, 2))


def test_a_theano_file_pads_the_wrapped_convlstm2d_as_theano_did(tmp_path):
    """Even kernels: Theano's 'same' padding reaches the layers inside Bidirectional too."""
    import h5py

    def model():
        return Sequential([Bidirectional(ConvLSTM2D(2, 2, padding="same"), input_shape=(3, 5, 5, 2))])

    path = str(tmp_path / "w.h5")
    model().save_weights(path)
    with h5py.File(path, "r+") as f:
        f.attrs["backend"] = np.bytes_(b"theano")
    loaded = model()
    loaded.load_weights(path)
    bi = loaded.layers[0]
    assert bi.forward_layer.cell.theano_same_padding and bi.backward_layer.cell.theano_same_padding
