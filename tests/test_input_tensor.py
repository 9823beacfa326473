"""``Input(tensor=...)`` as Keras 2.3.1 (``engine/input_layer.py``): an input with a tensor of its own,
which the model feeds itself; ``fit``/``predict``/``evaluate`` take data only for the other inputs
(Keras 2's ``_feed_inputs``). Issue 13, the neural_doodle leftover."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote import config
from arignote.layers import AveragePooling2D, Conv2D, Dense, Input, Lambda
from arignote.models import Model

config.configure(print_active_device=False)

RNG = np.random.default_rng(13)


def _offset_model():
    offset = K.variable(np.array([[1.0, 2.0, 3.0]], dtype="float32"))
    c = Input(tensor=offset, name="offset")
    x = Input(shape=(3,), name="x")
    out = Dense(2, name="d")(Lambda(lambda t: t[0] + t[1])([x, c]))
    return Model([x, c], out), offset


def test_input_tensor_shape_dtype_and_no_placeholder():
    value = np.zeros((2, 5, 4, 3), dtype="float64")
    t = Input(tensor=value)
    assert t.shape == (2, 5, 4, 3)  # Keras 2: K.int_shape(tensor), its first axis included
    layer = t._keras_history[0]
    assert layer.is_placeholder is False and layer.fixed
    assert layer.constant.dtype == torch.float32  # floats declared as floatx, as Keras's Input
    # a declared shape must fit; its None dims take the tensor's sizes (Keras keeps None there)
    assert Input(tensor=value, shape=(None, None, 3)).shape == (2, 5, 4, 3)
    assert Input(shape=(3,))._keras_history[0].is_placeholder


def test_input_tensor_with_a_shape_it_does_not_fit_is_one_clear_error():
    with pytest.raises(ValueError, match=r"tensor has shape \(2, 3\), which does not fit the declared shape "
                                         r"\(None, 4\)"):
        Input(tensor=np.zeros((2, 3)), shape=(4,))


def test_model_feeds_the_tensor_itself_in_predict_fit_and_evaluate():
    model, _ = _offset_model()
    assert model.input_names == ["x", "offset"] and model._feed_input_names == ["x"]
    model.compile("sgd", "mse")
    x = RNG.random((6, 3), dtype=np.float32)
    w, b = model.get_layer("d").get_weights()
    np.testing.assert_allclose(model.predict(x), (x + [1, 2, 3]) @ w + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.predict([x]), model.predict({"x": x}), rtol=0, atol=0)
    y = np.zeros((6, 2), dtype="float32")
    before = model.evaluate(x, y, verbose=0)
    assert before == pytest.approx(float(np.mean(((x + [1, 2, 3]) @ w + b) ** 2)), rel=1e-5)
    model.fit(x, y, epochs=3, batch_size=2, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before


def test_the_tensor_is_read_at_each_call_k_set_value_reaches_it():
    model, offset = _offset_model()
    x = np.zeros((2, 3), dtype="float32")
    first = model.predict(x)
    K.set_value(offset, np.array([[0.0, 0.0, 0.0]], dtype="float32"))
    w, b = model.get_layer("d").get_weights()
    np.testing.assert_allclose(model.predict(x), np.broadcast_to(b, (2, 2)), atol=1e-6)
    assert not np.allclose(first, model.predict(x))


def test_neural_doodle_style_mask_model_inside_k_function():
    """neural_doodle.py: ``Input(tensor=masks, shape=(None, None, None))`` of two constant masks, a
    pooling model on it, and its output used in a loss that ``K.function([target_image], ...)``
    computes with ``K.gradients`` of a placeholder image."""
    style_mask = K.variable(RNG.random((1, 8, 8, 2)).astype("float32"))
    target_mask = K.variable(RNG.random((1, 8, 8, 2)).astype("float32"))
    masks = K.concatenate([style_mask, target_mask], axis=0)
    mask_input = Input(tensor=masks, shape=(None, None, None), name="mask_input")
    pooled = AveragePooling2D((2, 2))(AveragePooling2D((2, 2))(mask_input))
    mask_model = Model(mask_input, pooled)
    assert mask_model._feed_input_names == [] and mask_model.input_names == ["mask_input"]

    target_image = K.placeholder(shape=(1, 8, 8, 3))
    conv = Conv2D(2, (4, 4), strides=4, name="features")
    features = conv(target_image)  # (1, 2, 2, 2), like the pooled masks
    loss = K.sum(K.square(features * mask_model.output[1:2]))
    grads = K.gradients(loss, target_image)
    f = K.function([target_image], [loss, grads[0]])
    image = RNG.random((1, 8, 8, 3)).astype("float32")
    got_loss, got_grad = f([image])

    # the same by hand in torch
    img = torch.tensor(image, requires_grad=True)
    kernel, bias = (torch.tensor(v) for v in conv.get_weights())
    feat = torch.nn.functional.conv2d(img.permute(0, 3, 1, 2), kernel.permute(3, 2, 0, 1), bias, stride=4)
    both = np.concatenate([K.get_value(style_mask), K.get_value(target_mask)])
    m = torch.nn.functional.avg_pool2d(torch.tensor(both).permute(0, 3, 1, 2), 4)
    want = (feat * m[1:2]).square().sum()
    want.backward()
    assert float(got_loss) == pytest.approx(float(want.detach()), rel=1e-5)
    np.testing.assert_allclose(got_grad, img.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_input_on_a_symbolic_backend_tensor_starts_a_model_and_computes_inside_k_function():
    """Keras 2 applications wrap a backend tensor given as ``input_tensor`` (``K.concatenate`` of image
    variables and a placeholder) in ``Input(tensor=...)``: the model's first layer is that input."""
    style = K.variable(RNG.random((1, 4, 4, 3)).astype("float32"))
    target = K.placeholder(shape=(1, 4, 4, 3))
    images = K.concatenate([style, target], axis=0)
    start = Input(tensor=images)
    assert start.shape == (2, 4, 4, 3) and not start._keras_history[0].is_placeholder
    conv = Conv2D(2, (3, 3), padding="same", name="conv")
    model = Model(start, conv(start))
    assert [type(layer).__name__ for layer in model.layers] == ["InputLayer", "Conv2D"]
    f = K.function([target], [K.sum(model.output)])
    image = RNG.random((1, 4, 4, 3)).astype("float32")
    both = np.concatenate([K.get_value(style), image])
    assert float(f([image])[0]) == pytest.approx(float(model.predict(both).sum()), rel=1e-5)


def test_a_sequential_cannot_start_at_an_input_tensor():
    from arignote.models import Sequential

    with pytest.raises(ValueError, match=r"cannot start at an Input\(tensor=...\).*functional API"):
        Sequential([Input(tensor=np.zeros((2, 3), "float32")), Dense(1)])


def test_a_model_with_an_input_tensor_used_as_a_layer_takes_only_its_other_inputs():
    inner, _ = _offset_model()
    outer_in = Input(shape=(3,))
    outer = Model(outer_in, Dense(1, name="top")(inner(outer_in)))
    x = RNG.random((4, 3), dtype=np.float32)
    w, b = inner.get_layer("d").get_weights()
    top_w, top_b = outer.get_layer("top").get_weights()
    want = ((x + [1, 2, 3]) @ w + b) @ top_w + top_b
    np.testing.assert_allclose(outer.predict(x), want, rtol=1e-5, atol=1e-6)
