"""What the notebooks of "Deep Learning with Python" (1st edition, Keras 2.0.x) needed from arignote
(docs/keras2_book.md, measured by scripts/run_keras2_book.py), each checked on its mechanism with
models and values we write ourselves, against Keras 2.3.1's behaviour."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

import arignote
from arignote import backend as K
from arignote import config, layers, metrics
from arignote.losses import check_targets
from arignote.models import Model, Sequential


@pytest.fixture(autouse=True)
def cpu():
    torch.manual_seed(0)
    with config.override(device="cpu", print_active_device=False):
        yield


# ---------------------------------------------- 5.3: a pretrained conv base added to a Sequential

def _conv_base():
    x = layers.Input(shape=(8, 8, 3))
    return Model(x, layers.Conv2D(4, 3, name="base_conv")(x), name="conv_base")


def test_summary_of_a_sequential_holding_a_functional_model(capsys):
    # Keras 2.3.1 lists the inner model as one row "conv_base (Model)" with its output shape and
    # parameter count (3*3*3*4 + 4 = 112), then the layers after it.
    base = _conv_base()
    model = Sequential()
    model.add(base)
    model.add(layers.Flatten())
    model.add(layers.Dense(2))
    model.summary()
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("conv_base"))
    assert row.split() == ["conv_base", "(Model)", "(None,", "6,", "6,", "4)", "112"]
    assert "Total params: 402" in text  # 112 + (6*6*4*2 + 2)


def test_freezing_the_conv_base_removes_its_weights_from_trainable_weights():
    # 5.3's printout: the conv base's kernel and bias leave trainable_weights when it is frozen
    base = _conv_base()
    model = Sequential([base, layers.Flatten(), layers.Dense(2)])
    assert len(model.trainable_weights) == 4
    base.trainable = False
    assert len(model.trainable_weights) == 2


# ----------------------------------------------------------- 8.5: keras.Input and the root names

def test_root_names_of_keras_2():
    # keras/__init__.py (2.3.1): `from .layers import Input`, `from .models import Model, Sequential`,
    # and the submodules importable as attributes after `import keras`
    assert arignote.Input is layers.Input
    assert arignote.Model is Model and arignote.Sequential is Sequential
    x = arignote.Input(shape=(3,))
    assert K.int_shape(x) == (None, 3)
    for name in ("activations", "applications", "constraints", "engine", "initializers", "regularizers"):
        assert getattr(arignote, name) is importlib.import_module(f"arignote.{name}")
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        arignote.Nope  # noqa: B018


# -------------------------------------- 8.4: compile(loss=None) with a loss layer (the 2.0 VAE)

class _KLLayer(layers.Layer):
    """The book's VAE pattern: a layer whose call adds a loss computed from graph tensors it closes
    over (``mu`` is not one of its inputs) and returns its first input unchanged."""

    def __init__(self, mu, **kwargs):
        super().__init__(**kwargs)
        self.mu = mu

    def call(self, inputs):
        x, decoded = inputs
        xent = metrics.binary_crossentropy(K.flatten(x), K.flatten(decoded))
        self.add_loss(K.mean(xent + K.mean(K.square(self.mu), axis=-1)), inputs=inputs)
        return x


def _vae_like():
    x = layers.Input(shape=(4,))
    mu = layers.Dense(2, use_bias=False, name="mu")(x)
    decoded = layers.Dense(4, activation="sigmoid", use_bias=False, name="dec")(mu)
    y = _KLLayer(mu)([x, decoded])
    return Model(x, y)


def test_compile_without_loss_trains_on_the_losses_layers_add():
    model = _vae_like()
    model.compile(optimizer="sgd", loss=None)  # Keras 2.3.1: model.losses is not empty, so it compiles
    rng = np.random.RandomState(0)
    x = rng.rand(16, 4).astype("float32")
    w_mu = rng.uniform(-1, 1, (4, 2)).astype("float32")
    w_dec = rng.uniform(-1, 1, (2, 4)).astype("float32")
    model.get_layer("mu").set_weights([w_mu])
    model.get_layer("dec").set_weights([w_dec])
    # the loss is the layer's: mean over the batch of (binary cross-entropy + mean(mu ** 2)), with
    # mu and the decoding computed on this batch (the closed-over graph tensor read live)
    mu = x @ w_mu
    p = np.clip(1 / (1 + np.exp(-(mu @ w_dec))), 1e-7, 1 - 1e-7)
    xent = -(x * np.log(p) + (1 - x) * np.log(1 - p)).mean()
    want = xent + (mu ** 2).mean()
    assert model.evaluate(x, None, batch_size=16, verbose=0) == pytest.approx(want, rel=1e-5)
    history = model.fit(x, None, batch_size=16, epochs=2, verbose=0, validation_data=(x, None))
    assert history.history["loss"][0] == pytest.approx(want, rel=1e-5)
    assert history.history["loss"][1] < history.history["loss"][0]  # the gradient reached the weights


def test_compile_without_any_loss_is_still_refused():
    x = layers.Input(shape=(4,))
    model = Model(x, layers.Dense(2)(x))
    with pytest.raises(ValueError, match="compile\\(\\) needs a loss"):
        model.compile(optimizer="sgd", loss=None)


# ------------------------------------------- 6.3: generators that yield reversed (strided) views

def test_fit_generator_on_reversed_views_equals_fit_on_copies():
    rng = np.random.RandomState(0)
    data = rng.rand(8, 5, 3).astype("float32")
    targets = rng.rand(8, 1).astype("float32")

    def batches(copy):
        while True:
            view = data[:, ::-1, :]  # negative strides, as the book's reverse-order generator
            yield (view.copy() if copy else view), targets

    losses = []
    for copy in (False, True):
        torch.manual_seed(1)
        model = Sequential([layers.GRU(4, input_shape=(5, 3)), layers.Dense(1)])
        model.compile(optimizer="rmsprop", loss="mae")
        losses.append(model.fit_generator(batches(copy), steps_per_epoch=3, epochs=2, verbose=0)
                      .history["loss"])
    assert losses[0] == losses[1]


# ------------------------------------------------- 8.5: noisy 0/1 labels with binary cross-entropy

def test_binary_crossentropy_takes_noisy_labels_as_keras_2_does():
    # The GAN adds 0.05 * uniform noise to its 0/1 labels: targets up to 1.05. Keras 2.3.1 computes
    # -(t log p + (1 - t) log(1 - p)) on them without a check; class ids (whole numbers) stay refused.
    check_targets("binary_crossentropy", np.array([[1.04], [0.02]]), (1,))
    with pytest.raises(ValueError, match=r"expects targets in \[0, 1\], got 3"):
        check_targets("binary_crossentropy", np.array([[3.0], [0.0]]), (1,))
    model = Sequential([layers.Dense(1, activation="sigmoid", use_bias=False, input_shape=(2,))])
    model.compile(optimizer="sgd", loss="binary_crossentropy")
    w = np.array([[0.5], [-0.25]], "float32")
    model.set_weights([w])
    x = np.array([[1.0, 2.0], [2.0, -1.0]], "float32")
    t = np.array([[1.05], [0.03]], "float32")
    p = 1 / (1 + np.exp(-(x @ w)))
    want = -(t * np.log(p) + (1 - t) * np.log(1 - p)).mean()
    assert model.train_on_batch(x, t) == pytest.approx(want, rel=1e-5)


# ------------------------- 8.5: the GAN's discriminator, compiled with clipvalue, then frozen for the gan

def test_discriminator_compiled_then_frozen_trains_in_its_own_train_on_batch():
    # Keras 2.3.1 fixes the trainable weights at compile: the discriminator (compiled while
    # trainable, clipvalue=1.0 as in the book) updates in its own train_on_batch even though it is
    # frozen afterwards, and the gan (compiled after the freeze) leaves it alone.
    from arignote.optimizers import RMSprop

    d_in = layers.Input(shape=(3,))
    disc = Model(d_in, layers.Dense(1, activation="sigmoid")(layers.Dense(4)(d_in)))
    disc.compile(optimizer=RMSprop(lr=0.01, clipvalue=1.0), loss="binary_crossentropy")
    disc.trainable = False
    g_in = layers.Input(shape=(2,))
    gen = Model(g_in, layers.Dense(3)(g_in))
    gan = Model(g_in, disc(gen(g_in)))
    gan.compile(optimizer=RMSprop(lr=0.01, clipvalue=1.0), loss="binary_crossentropy")
    rng = np.random.RandomState(0)
    before = [w.copy() for w in disc.get_weights()]
    disc.train_on_batch(rng.rand(8, 3), np.ones((8, 1)))  # the first call also places the model
    after_d = [w.copy() for w in disc.get_weights()]
    g_before = [w.copy() for w in gen.get_weights()]
    gan.train_on_batch(rng.rand(8, 2), np.zeros((8, 1)))
    # RMSprop's first step moves each weight by lr / sqrt(1 - rho) = 0.01 / sqrt(0.1) at most
    assert all(0 < np.abs(a - b).max() <= 0.0317 for a, b in zip(before, after_d))
    assert all(np.array_equal(a, b) for a, b in zip(after_d, disc.get_weights()))
    assert all(np.abs(a - b).max() > 0 for a, b in zip(g_before, gen.get_weights()))
    assert len(disc.trainable_weights) == 0 and len(gan.trainable_weights) == 2


# -------------------------- 5.4: K.function fed preprocess_input's output (a BGR-flipped numpy view)

def test_k_function_takes_a_negative_stride_view():
    from arignote.applications.vgg16 import preprocess_input

    x = layers.Input(shape=(2, 2, 3))
    fn = K.function([x], [K.sum(x, axis=-1)])
    img = np.arange(12, dtype="float32").reshape(1, 2, 2, 3)
    view = preprocess_input(img.copy())  # Keras 2.3.1 (caffe mode): x[..., ::-1] minus the BGR means
    assert any(s < 0 for s in view.strides)
    want = (img[..., ::-1] - np.array([103.939, 116.779, 123.68], "float32")).sum(-1)
    np.testing.assert_allclose(fn([view])[0], want, rtol=1e-6)
