"""ConvLSTM2D's outputs and gradients pinned to the values of commit a8f17dd (before the speed work of
issue 32 item 2), so that a faster ConvLSTM2D provably computes the same numbers.

tests/fixtures/conv_lstm_pinned.npz holds, for each case below, the forward output, the gradient of
a fixed random projection of it with respect to the input and to every weight; it was written by
``PYTHONPATH=src python tests/test_conv_lstm_pinned.py --write`` on that commit. Tolerance: float32
results may differ by summation order only (a convolution of the 4 gates in one call, or of all
frames at once, sums the same products in another order): relative 2e-5 and absolute 2e-6, about
100 float32 roundings (eps 1.2e-7) accumulated over 5 recurrent steps, two layers and
BatchNormalization's batch statistics; a wrong gate, slice or mask moves values by 1e-2 or more.
"""

import os
import sys

import numpy as np
import pytest
import torch

from arignote.layers import BatchNormalization, Conv3D, ConvLSTM2D
from arignote.models import Sequential

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "conv_lstm_pinned.npz")
RTOL, ATOL = 2e-5, 2e-6

# one ConvLSTM2D per case: (layer arguments, input shape, call options)
CASES = {
    "same_seq": (dict(filters=3, kernel_size=3, padding="same", return_sequences=True), (2, 5, 7, 6, 2), {}),
    "valid_stride_last": (dict(filters=3, kernel_size=(3, 2), strides=2), (2, 4, 9, 8, 3), {}),
    "first_dilated_back": (
        dict(filters=2, kernel_size=3, padding="same", dilation_rate=2, data_format="channels_first",
             go_backwards=True, return_sequences=True),
        (2, 4, 3, 8, 7), {},
    ),
    "even_kernel_sigmoid": (
        dict(filters=3, kernel_size=2, padding="same", recurrent_activation="sigmoid", activation="relu",
             return_sequences=True),
        (2, 4, 6, 5, 2), {},
    ),
    "masked": (dict(filters=3, kernel_size=3, padding="same", return_sequences=True), (2, 5, 6, 6, 2),
               {"mask": [[1, 0, 1, 1, 0], [0, 1, 1, 1, 1]]}),
    "initial_state": (dict(filters=3, kernel_size=3, padding="same", return_sequences=True), (2, 4, 6, 6, 2),
                      {"initial_state": True}),
    "dropout": (dict(filters=3, kernel_size=3, padding="same", dropout=0.3, recurrent_dropout=0.4,
                     return_sequences=True), (2, 4, 6, 6, 2), {"training": True}),
    "no_bias_first_last": (dict(filters=2, kernel_size=3, padding="same", use_bias=False,
                                data_format="channels_first"), (2, 4, 2, 6, 5), {}),
}


def _layer_case(name):
    kwargs, shape, opts = CASES[name]
    rng = np.random.RandomState(sum(map(ord, name)))
    layer = ConvLSTM2D(**kwargs)
    layer.build(shape)
    layer.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype("float32") for w in layer.get_weights()])
    x = torch.tensor(rng.uniform(-1, 1, shape).astype("float32"), requires_grad=True)
    call = {}
    states = []
    if "mask" in opts:
        call["mask"] = torch.tensor(opts["mask"], dtype=torch.bool)
    if opts.get("initial_state"):
        state_shape = tuple(layer.compute_output_shape(shape))
        state_shape = (state_shape[0], *state_shape[2:]) if len(state_shape) == 5 else state_shape
        states = [torch.tensor(rng.uniform(-1, 1, state_shape).astype("float32"), requires_grad=True)
                  for _ in range(2)]
        call["initial_state"] = states
    if opts.get("training"):
        torch.manual_seed(5)
        layer.train()
        call["training"] = True
    else:
        layer.eval()
    y = layer(x, **call)
    proj = torch.tensor(rng.uniform(-1, 1, tuple(y.shape)).astype("float32"))
    (y * proj).sum().backward()
    out = {"y": y.detach().numpy(), "dx": x.grad.numpy()}
    out.update({f"d_{n}": p.grad.numpy() for n, p in layer.named_parameters()})
    out.update({f"d_state{i}": s.grad.numpy() for i, s in enumerate(states)})
    return out


def _zoo_case():
    """The zoo's conv_lstm network, small: two ConvLSTM2D + BatchNormalization (batch statistics),
    Conv3D, in training mode."""
    rng = np.random.RandomState(11)
    model = Sequential([
        ConvLSTM2D(4, (3, 3), padding="same", return_sequences=True, input_shape=(5, 8, 8, 1)),
        BatchNormalization(),
        ConvLSTM2D(4, (3, 3), padding="same", return_sequences=True),
        BatchNormalization(),
        Conv3D(1, (3, 3, 3), activation="sigmoid", padding="same", data_format="channels_last"),
    ])
    model.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype("float32") if w.ndim > 1 else
                       rng.uniform(0.5, 1.5, w.shape).astype("float32") for w in model.get_weights()])
    x = torch.tensor(rng.uniform(0, 1, (3, 5, 8, 8, 1)).astype("float32"), requires_grad=True)
    model.module.train()
    y = model(x)
    target = torch.tensor((rng.uniform(0, 1, tuple(y.shape)) > 0.5).astype("float32"))
    torch.nn.functional.binary_cross_entropy(y, target).backward()
    out = {"y": y.detach().numpy(), "dx": x.grad.numpy()}
    out.update({f"d_{n}": p.grad.numpy() for n, p in model.module.named_parameters()})
    return out


def _all_cases():
    got = {f"zoo/{k}": v for k, v in _zoo_case().items()}
    for name in CASES:
        got.update({f"{name}/{k}": v for k, v in _layer_case(name).items()})
    return got


@pytest.fixture(scope="module")
def pinned():
    with np.load(FIXTURE) as f:
        return dict(f)


@pytest.fixture(scope="module")
def computed():
    return _all_cases()


def test_the_same_arrays_are_computed(pinned, computed):
    assert sorted(computed) == sorted(pinned)


@pytest.mark.parametrize("case", ["zoo", *CASES])
def test_outputs_and_gradients_equal_the_pinned_ones(pinned, computed, case):
    keys = [k for k in pinned if k.split("/")[0] == case]
    assert keys
    for key in keys:
        assert computed[key].shape == pinned[key].shape, key
        np.testing.assert_allclose(computed[key], pinned[key], rtol=RTOL, atol=ATOL, err_msg=key)
        assert np.abs(pinned[key]).max() > 0, key  # every pinned array carries a signal


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    np.savez_compressed(FIXTURE, **_all_cases())
    print("wrote", FIXTURE)
