"""A fixed zoo of Keras 2 models, in the shapes of Keras 2.3.1's examples, buildable by any Keras-2-like
API: arignote, or Keras 3 for the side-by-side benchmark (``benchmarks/vs_keras3.py``).

Each entry builds, compiles and feeds one model from a namespace ``api`` with ``layers``, ``models``
and ``ops`` (``exp``, ``square``, ``sum``, ``mean``, ``shape``, ``random_normal``): arignote's is
:func:`arignote_api`; the benchmark makes Keras 3's from ``keras.layers`` / ``keras.ops``. Arguments
whose defaults differ between Keras 2 and Keras 3 are spelled out (``GRU(reset_after=False)``,
``ConvLSTM2D(recurrent_activation='hard_sigmoid')``), so both build the Keras 2 model.

Example::

    >>> from arignote.bench import zoo
    >>> model, x, y = zoo.build("mlp", zoo.arignote_api(), batch=4)
    >>> model.output_shape, x.shape
    ((None, 10), (4, 784))
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["MODELS", "build", "arignote_api", "make_api"]


def make_api(layers: Any, models: Any, ops: Any, random_normal: Callable) -> Any:
    """The namespace the builders use: ``layers``, ``models`` and ``ops`` (``exp``, ``square``, ``sum``,
    ``mean``, ``shape`` taken from ``ops``: a Keras backend or ``keras.ops``; ``random_normal(shape)``)."""
    picked = {name: getattr(ops, name) for name in ("exp", "square", "sum", "mean", "shape")}
    return types.SimpleNamespace(layers=layers, models=models,
                                 ops=types.SimpleNamespace(**picked, random_normal=random_normal))


def arignote_api() -> Any:
    """arignote's Keras 2 namespace for the builders."""
    # import time: the zoo's names load torch and every layer only when a model is built
    from arignote import backend as K
    from arignote import layers, models

    return make_api(layers, models, K, lambda shape: K.random_normal(shape))


def _data(
    rng: np.random.RandomState, batch: int, shape: tuple, kind: str = "float", high: int = 2
) -> np.ndarray:
    if kind == "int":
        return rng.randint(1, high, size=(batch, *shape)).astype("int32")
    if kind == "binary":
        return (rng.rand(batch, *shape) > 0.5).astype("float32")
    return rng.rand(batch, *shape).astype("float32")


def _onehot(rng: np.random.RandomState, batch: int, classes: int) -> np.ndarray:
    return np.eye(classes, dtype="float32")[rng.randint(0, classes, batch)]


def mlp(api: Any, rng: Any, batch: int) -> tuple:
    """mnist_mlp.py: Dense(512)-Dropout-Dense(512)-Dropout-Dense(10), RMSprop."""
    L = api.layers
    model = api.models.Sequential(
        [
            L.Dense(512, activation="relu", input_shape=(784,)),
            L.Dropout(0.2),
            L.Dense(512, activation="relu"),
            L.Dropout(0.2),
            L.Dense(10, activation="softmax"),
        ]
    )
    model.compile(loss="categorical_crossentropy", optimizer="rmsprop", metrics=["accuracy"])
    return model, _data(rng, batch, (784,)), _onehot(rng, batch, 10)


def cnn(api: Any, rng: Any, batch: int) -> tuple:
    """mnist_cnn.py: Conv2D(32)-Conv2D(64)-MaxPooling2D-Dropout-Dense(128)-Dense(10), Adadelta."""
    L = api.layers
    model = api.models.Sequential(
        [
            L.Conv2D(32, (3, 3), activation="relu", input_shape=(28, 28, 1)),
            L.Conv2D(64, (3, 3), activation="relu"),
            L.MaxPooling2D((2, 2)),
            L.Dropout(0.25),
            L.Flatten(),
            L.Dense(128, activation="relu"),
            L.Dropout(0.5),
            L.Dense(10, activation="softmax"),
        ]
    )
    model.compile(loss="categorical_crossentropy", optimizer="adadelta", metrics=["accuracy"])
    return model, _data(rng, batch, (28, 28, 1)), _onehot(rng, batch, 10)


def seeds_cnn(api: Any, rng: Any, batch: int) -> tuple:
    """cifar10_cnn.py (the seeds' CIFAR-10 network): conv blocks of 32 and 64 filters, Dense(512), RMSprop."""
    L = api.layers
    model = api.models.Sequential(
        [
            L.Conv2D(32, (3, 3), padding="same", input_shape=(32, 32, 3)),
            L.Activation("relu"),
            L.Conv2D(32, (3, 3)),
            L.Activation("relu"),
            L.MaxPooling2D((2, 2)),
            L.Dropout(0.25),
            L.Conv2D(64, (3, 3), padding="same"),
            L.Activation("relu"),
            L.Conv2D(64, (3, 3)),
            L.Activation("relu"),
            L.MaxPooling2D((2, 2)),
            L.Dropout(0.25),
            L.Flatten(),
            L.Dense(512),
            L.Activation("relu"),
            L.Dropout(0.5),
            L.Dense(10),
            L.Activation("softmax"),
        ]
    )
    model.compile(loss="categorical_crossentropy", optimizer="rmsprop", metrics=["accuracy"])
    return model, _data(rng, batch, (32, 32, 3)), _onehot(rng, batch, 10)


def conv1d_text(api: Any, rng: Any, batch: int) -> tuple:
    """imdb_cnn.py: Embedding(5000, 50)-Conv1D(250, 3)-GlobalMaxPooling1D-Dense(250)-Dense(1), Adam."""
    L = api.layers
    model = api.models.Sequential(
        [
            L.Embedding(5000, 50, input_shape=(400,)),
            L.Dropout(0.2),
            L.Conv1D(250, 3, activation="relu"),
            L.GlobalMaxPooling1D(),
            L.Dense(250),
            L.Dropout(0.2),
            L.Activation("relu"),
            L.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model, _data(rng, batch, (400,), "int", 5000), _data(rng, batch, (1,), "binary")


def _text_rnn(api: Any, rng: Any, batch: int, rnn: Any, maxlen: int = 80) -> tuple:
    L = api.layers
    model = api.models.Sequential(
        [L.Embedding(20000, 128, input_shape=(maxlen,)), rnn, L.Dense(1, activation="sigmoid")]
    )
    model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model, _data(rng, batch, (maxlen,), "int", 20000), _data(rng, batch, (1,), "binary")


def lstm(api: Any, rng: Any, batch: int) -> tuple:
    """imdb_lstm.py without dropout: Embedding(20000, 128)-LSTM(128)-Dense(1), 80 steps."""
    return _text_rnn(api, rng, batch, api.layers.LSTM(128))


def gru(api: Any, rng: Any, batch: int) -> tuple:
    """The same with GRU(128) and Keras 2's default reset_after=False."""
    return _text_rnn(api, rng, batch, api.layers.GRU(128, reset_after=False))


def lstm_dropout(api: Any, rng: Any, batch: int) -> tuple:
    """imdb_lstm.py: LSTM(128, dropout=0.2, recurrent_dropout=0.2)."""
    return _text_rnn(api, rng, batch, api.layers.LSTM(128, dropout=0.2, recurrent_dropout=0.2))


def bilstm(api: Any, rng: Any, batch: int) -> tuple:
    """imdb_bidirectional_lstm.py: Bidirectional(LSTM(64))-Dropout-Dense(1), 100 steps."""
    L = api.layers
    return _text_rnn(api, rng, batch, L.Bidirectional(L.LSTM(64)), maxlen=100)


def conv_lstm(api: Any, rng: Any, batch: int) -> tuple:
    """conv_lstm.py's network with two ConvLSTM2D(40, 3x3) + BatchNormalization, then Conv3D; 15 frames of
    40x40 (the issue's measurement; the example stacks four)."""
    L = api.layers
    model = api.models.Sequential(
        [
            L.ConvLSTM2D(
                40,
                (3, 3),
                padding="same",
                return_sequences=True,
                recurrent_activation="hard_sigmoid",
                input_shape=(15, 40, 40, 1),
            ),
            L.BatchNormalization(),
            L.ConvLSTM2D(
                40, (3, 3), padding="same", return_sequences=True, recurrent_activation="hard_sigmoid"
            ),
            L.BatchNormalization(),
            L.Conv3D(1, (3, 3, 3), activation="sigmoid", padding="same", data_format="channels_last"),
        ]
    )
    model.compile(loss="binary_crossentropy", optimizer="adadelta")
    return model, _data(rng, batch, (15, 40, 40, 1), "binary"), _data(rng, batch, (15, 40, 40, 1), "binary")


def two_inputs(api: Any, rng: Any, batch: int) -> tuple:
    """A functional model of two inputs (the functional API guide's shape): Dense towers, concatenate."""
    L = api.layers
    a, b = L.Input(shape=(64,)), L.Input(shape=(32,))
    merged = L.concatenate([L.Dense(64, activation="relu")(a), L.Dense(64, activation="relu")(b)])
    out = L.Dense(1, activation="sigmoid")(L.Dense(64, activation="relu")(merged))
    model = api.models.Model([a, b], out)
    model.compile(loss="binary_crossentropy", optimizer="rmsprop", metrics=["accuracy"])
    return model, [_data(rng, batch, (64,)), _data(rng, batch, (32,))], _data(rng, batch, (1,), "binary")


def _vae_layers(api: Any) -> tuple[type, type]:
    ops, base = api.ops, api.layers.Layer

    class Sampling(base):
        def call(self, inputs):
            mean, log_var = inputs
            return mean + ops.exp(0.5 * log_var) * ops.random_normal(ops.shape(mean))

    class KLLoss(base):  # the custom loss: Keras 2's vae_loss KL term, added inside call
        def call(self, inputs):
            mean, log_var = inputs
            self.add_loss(
                ops.mean(-0.5 * ops.sum(1 + log_var - ops.square(mean) - ops.exp(log_var), axis=-1))
            )
            return mean

    return Sampling, KLLoss


def vae(api: Any, rng: Any, batch: int) -> tuple:
    """variational_autoencoder.py: 784-512-2 encoder, sampling, 2-512-784 decoder; reconstruction loss
    plus the KL term added by a layer (a custom loss)."""
    L = api.layers
    sampling, kl_loss = _vae_layers(api)
    x = L.Input(shape=(784,))
    h = L.Dense(512, activation="relu")(x)
    mean, log_var = L.Dense(2)(h), L.Dense(2)(h)
    z = sampling()([kl_loss()([mean, log_var]), log_var])
    out = L.Dense(784, activation="sigmoid")(L.Dense(512, activation="relu")(z))
    model = api.models.Model(x, out)
    model.compile(loss="binary_crossentropy", optimizer="adam")
    data = _data(rng, batch, (784,))
    return model, data, data


# name -> (builder, training batch)
MODELS: dict[str, tuple[Callable, int]] = {
    "mlp": (mlp, 128),
    "cnn": (cnn, 128),
    "seeds_cnn": (seeds_cnn, 32),
    "conv1d_text": (conv1d_text, 32),
    "lstm": (lstm, 32),
    "gru": (gru, 32),
    "lstm_dropout": (lstm_dropout, 32),
    "bilstm": (bilstm, 32),
    "conv_lstm": (conv_lstm, 10),
    "two_inputs": (two_inputs, 64),
    "vae": (vae, 128),
}


def build(name: str, api: Any, batch: int | None = None, seed: int = 0) -> tuple:
    """``(compiled model, x, y)`` of zoo model ``name`` with a batch of random data (``batch`` rows,
    default the example's batch size)."""
    if name not in MODELS:
        raise ValueError(f"no zoo model {name!r}; choose from {', '.join(MODELS)}")
    builder, default = MODELS[name]
    return builder(api, np.random.RandomState(seed), batch or default)
