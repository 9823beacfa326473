"""Merge layers and their functional forms, core extras (Lambda, Masking, Permute, RepeatVector,
ActivityRegularization, SpatialDropout, Dropout noise_shape), advanced activations and noise layers,
against numpy; Keras 2 module paths; deliberately unsupported names."""

from __future__ import annotations

import importlib
import json
import math

import numpy as np
import pytest
import torch

from arignote import backend, layers
from arignote.errors import UnsafeDeserializationError
from arignote.layers import (
    ELU,
    ActivityRegularization,
    Add,
    AlphaDropout,
    Average,
    Concatenate,
    Dense,
    Dot,
    Dropout,
    GaussianDropout,
    GaussianNoise,
    Lambda,
    LeakyReLU,
    Masking,
    Maximum,
    Minimum,
    Multiply,
    Permute,
    PReLU,
    ReLU,
    RepeatVector,
    Softmax,
    SpatialDropout1D,
    SpatialDropout3D,
    Subtract,
    ThresholdedReLU,
)

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def t(a):
    return torch.tensor(np.asarray(a, dtype=np.float32))


def test_elementwise_merges_and_functional_forms():
    a, b, c = (RNG.standard_normal((2, 3)).astype(np.float32) for _ in range(3))
    cases = [
        (Add(), layers.add, a + b + c),
        (Multiply(), layers.multiply, a * b * c),
        (Average(), layers.average, (a + b + c) / 3),
        (Maximum(), layers.maximum, np.maximum(np.maximum(a, b), c)),
        (Minimum(), layers.minimum, np.minimum(np.minimum(a, b), c)),
    ]
    for layer, fn, ref in cases:
        np.testing.assert_allclose(layer([t(a), t(b), t(c)]).numpy(), ref, rtol=1e-6)
        np.testing.assert_allclose(fn([t(a), t(b), t(c)]).numpy(), ref, rtol=1e-6)
        assert layer.compute_output_shape([(None, 3), (None, 3), (None, 3)]) == (None, 3)
    np.testing.assert_allclose(layers.subtract([t(a), t(b)]).numpy(), a - b)
    with pytest.raises(ValueError, match="exactly 2 inputs"):
        Subtract()([t(a), t(b), t(c)])
    with pytest.raises(ValueError, match="list of inputs"):
        Add()(t(a))
    with pytest.raises(ValueError, match="could not be broadcast"):
        Add().compute_output_shape([(None, 3), (None, 4)])
    # Keras 2 broadcasting: a (N, 3) input against (N, 4, 3) gets a unit axis after the batch axis
    big = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    np.testing.assert_allclose(Add()([t(big), t(a)]).numpy(), big + a[:, None], rtol=1e-6)
    assert Add().compute_output_shape([(None, 4, 3), (None, 3)]) == (None, 4, 3)


def test_concatenate_axes_shapes_and_masks():
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    b = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    np.testing.assert_array_equal(layers.concatenate([t(a), t(b)]).numpy(), np.concatenate([a, b], -1))
    np.testing.assert_array_equal(Concatenate(axis=1)([t(a), t(a)]).numpy(), np.concatenate([a, a], 1))
    assert Concatenate().compute_output_shape([(None, 3, 4), (None, 3, 5)]) == (None, 3, 9)
    assert Concatenate(axis=1).compute_output_shape([(None, 3, 4), (None, None, 4)]) == (None, None, 4)
    with pytest.raises(ValueError, match="matching shapes"):
        Concatenate().compute_output_shape([(None, 3, 4), (None, 2, 5)])
    m = torch.tensor([[True, False, True], [True, True, False]])
    got = Concatenate().compute_mask([t(a), t(b)], [m, None])
    assert torch.equal(got, m)
    assert Add().compute_mask([t(a), t(a)], [m, torch.ones_like(m)]).tolist() == m.tolist()


def test_dot_batched_and_normalized():
    a = RNG.standard_normal((4, 5)).astype(np.float32)
    b = RNG.standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(Dot(axes=1)([t(a), t(b)]).numpy(), (a * b).sum(1, keepdims=True), rtol=1e-5)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    got = layers.dot([t(a), t(b)], axes=-1, normalize=True).numpy()[:, 0]
    np.testing.assert_allclose(got, cos, rtol=1e-5)
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    y = RNG.standard_normal((2, 6, 4)).astype(np.float32)
    np.testing.assert_allclose(
        Dot(axes=(2, 2))([t(x), t(y)]).numpy(), np.einsum("nak,nbk->nab", x, y), rtol=1e-5, atol=1e-6
    )
    assert Dot(axes=2).compute_output_shape([(None, 3, 4), (None, 6, 4)]) == (None, 3, 6)
    assert Dot(axes=1).compute_output_shape([(None, 5), (None, 5)]) == (None, 1)
    with pytest.raises(ValueError, match="axes"):
        Dot(axes="x")


def test_merge_layer_builds_from_a_list_of_shapes():
    layer = Add()
    layer.build([(None, 3), (None, 3)])
    assert layer.built


def test_lambda_arguments_output_shape_mask_and_config():
    lam = Lambda(lambda x, p: x**p, arguments={"p": 2})
    assert lam(t([[3.0]])).item() == 9.0
    assert lam.compute_output_shape((None, 4)) == (None, 4)  # found by a probe run
    halves = Lambda(lambda x: x[:, : x.shape[1] // 2], output_shape=lambda s: (s[0], s[1] // 2))
    assert halves.compute_output_shape((None, 6)) == (None, 3)
    assert Lambda(lambda x: x.sum(1, keepdim=True), output_shape=(1,)).compute_output_shape((None, 6)) == (
        None,
        1,
    )
    masked = Lambda(lambda x: x, mask=lambda inputs, mask: inputs > 0)
    assert masked.compute_mask(t([[1.0, -1.0]])).tolist() == [[True, False]]
    cfg = json.loads(json.dumps(layers.serialize(lam)))
    with pytest.raises(UnsafeDeserializationError, match="safe_mode=False"):  # stored bytecode: refused
        layers.deserialize(cfg)
    clone = layers.deserialize(cfg, safe_mode=False)  # our own lambda: trusted, as in Keras 3
    assert clone(t([[2.0]])).item() == 4.0
    named = layers.deserialize(json.loads(json.dumps(layers.serialize(Lambda(math.sqrt)))))
    assert named.function is math.sqrt
    with pytest.raises(ValueError, match="callable"):
        Lambda(3)


def test_masking_permute_repeat_vector():
    x = np.array([[[0.0, 0.0], [1.0, 2.0], [0.0, 3.0]]], dtype=np.float32)
    m = Masking(0.0)
    assert m.compute_mask(t(x)).tolist() == [[False, True, True]]
    np.testing.assert_array_equal(m(t(x)).numpy(), x)
    m5 = Masking(mask_value=5.0)
    np.testing.assert_array_equal(m5(t([[[5.0, 5.0], [5.0, 1.0]]])).numpy(), [[[0.0, 0.0], [5.0, 1.0]]])
    y = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    p = Permute((3, 1, 2))
    np.testing.assert_array_equal(p(t(y)).numpy(), y.transpose(0, 3, 1, 2))
    assert p.compute_output_shape((None, 3, 4, 5)) == (None, 5, 3, 4)
    with pytest.raises(ValueError, match="permutation"):
        Permute((0, 1))
    r = RepeatVector(3)
    v = RNG.standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_array_equal(r(t(v)).numpy(), np.repeat(v[:, None], 3, 1))
    assert r.compute_output_shape((None, 4)) == (None, 3, 4)


def test_dense_on_3d_and_masks_pass_through():
    d = Dense(2, activation="tanh", use_bias=False)
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    d.build((None, 3, 4))
    (k,) = d.get_weights()
    np.testing.assert_allclose(d(t(x)).detach().numpy(), np.tanh(x @ k), rtol=1e-5, atol=1e-6)
    mask = torch.ones(2, 3, dtype=torch.bool)
    assert d.compute_mask(t(x), mask) is mask
    with pytest.raises(TypeError, match="does not support masking"):
        layers.Flatten().compute_mask(t(x), mask)


def test_dropout_noise_shape_seed_and_spatial_dropout():
    x = torch.ones(8, 5, 6)
    d = Dropout(0.5, noise_shape=(None, 1, 6), seed=3)
    d.train()
    y = d(x)
    assert torch.equal(y, y[:, :1].expand_as(y))  # one draw shared along axis 1
    assert set(y.unique().tolist()) <= {0.0, 2.0}
    d2 = Dropout(0.5, noise_shape=(None, 1, 6), seed=3)
    d2.train()
    assert torch.equal(d2(x), y)  # the seed fixes the draws
    s = SpatialDropout1D(0.5)
    s.train()
    ys = s(x)
    assert torch.equal(ys, ys[:, :1].expand_as(ys))
    s3 = SpatialDropout3D(0.5, data_format="channels_first")
    s3.train()
    v = s3(torch.ones(4, 3, 2, 2, 2))
    assert torch.equal(v, v[:, :, :1, :1, :1].expand_as(v))
    s.eval()
    assert torch.equal(s(x), x)


def test_activity_regularization_adds_its_penalty():
    a = ActivityRegularization(l1=0.5, l2=0.25)
    x = t([[1.0, -2.0]])
    assert torch.equal(a(x), x)
    assert a.losses[0].item() == pytest.approx(0.5 * 3 + 0.25 * 5)


def test_advanced_activations_match_numpy():
    x = np.array([[-2.0, -0.5, 0.0, 0.5, 1.5, 7.0]], dtype=np.float32)
    np.testing.assert_allclose(LeakyReLU()(t(x)).numpy(), np.where(x > 0, x, 0.3 * x), rtol=1e-6)
    np.testing.assert_allclose(ELU(0.5)(t(x)).numpy(), np.where(x > 0, x, 0.5 * (np.exp(x) - 1)), rtol=1e-6)
    np.testing.assert_allclose(ThresholdedReLU(1.0)(t(x)).numpy(), np.where(x > 1.0, x, 0.0))
    np.testing.assert_allclose(
        ReLU(max_value=6.0, negative_slope=0.1, threshold=0.5)(t(x)).numpy(),
        np.where(x >= 6, 6, np.where(x > 0.5, x, 0.1 * (x - 0.5))),
        rtol=1e-6,
    )
    e = np.exp(x - x.max())
    np.testing.assert_allclose(Softmax()(t(x)).numpy(), e / e.sum(), rtol=1e-5)
    with pytest.raises(ValueError, match="negative"):
        ReLU(max_value=-1)
    p = PReLU(alpha_initializer="ones", shared_axes=[1, 2])
    img = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    p.build((None, *img.shape[1:]))
    assert p.get_weights()[0].shape == (1, 1, 5) and p.weight_names() == ["alpha"]
    alpha = RNG.uniform(0, 1, (1, 1, 5)).astype(np.float32)
    p.set_weights([alpha])
    np.testing.assert_allclose(p(t(img)).detach().numpy(), np.where(img > 0, img, alpha * img), rtol=1e-6)


def test_noise_layers_statistics_and_eval_identity():
    torch.manual_seed(0)
    x = torch.ones(200, 500)
    g = GaussianNoise(0.5)
    g.train()
    assert abs((g(x) - x).std().item() - 0.5) < 0.01
    gd = GaussianDropout(0.2)
    gd.train()
    assert abs(gd(x).std().item() - math.sqrt(0.2 / 0.8)) < 0.01 and abs(gd(x).mean().item() - 1) < 0.01
    ad = AlphaDropout(0.2)
    ad.train()
    z = torch.randn(400, 500)
    out = ad(z)
    assert abs(out.mean().item()) < 0.02 and abs(out.std().item() - 1) < 0.03  # SELU statistics kept
    for layer in (g, gd, ad):
        layer.eval()
        assert torch.equal(layer(z), z)


@pytest.mark.parametrize(
    "module",
    [
        "core",
        "convolutional",
        "pooling",
        "recurrent",
        "merge",
        "embeddings",
        "normalization",
        "noise",
        "advanced_activations",
        "local",
    ],
)
def test_keras2_module_paths_import(module):
    importlib.import_module(f"arignote.layers.{module}")


def test_legacy_names_say_what_to_use_instead():
    with pytest.raises(ImportError, match="RNN\\(cell\\)"):
        from arignote.layers import Recurrent  # noqa: F401
    with pytest.raises(layers.UnsupportedLayerError, match="Keras 1 legacy.*deliberately not"):
        layers.ConvRecurrent2D  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'NoSuchLayer'"):
        layers.NoSuchLayer  # noqa: B018


def test_deserialize_keras_object_is_reexported_as_in_keras2():
    spec = {"class_name": "Dense", "config": {"units": 2}}
    obj = layers.deserialize_keras_object(spec, module_objects=vars(layers))
    assert isinstance(obj, layers.Dense) and obj.units == 2
    with pytest.raises(ValueError, match="Unknown layer: 'Dens'"):
        layers.deserialize_keras_object("Dens", module_objects=vars(layers), printable_module_name="layer")
