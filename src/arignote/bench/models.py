"""The benchmark's networks, each built three ways with the same architecture.

``cnn`` is the seeds' network (the classic Keras 2 ``cifar10_cnn.py``: 1,250,858 parameters),
``mlp`` the classic ``mnist_mlp.py`` (784-512-512-10, 669,706 parameters) and ``lstm`` a small
recurrent net that reads a CIFAR image row by row (32 steps of 96 features) so that cuDNN's
recurrent kernels show on a GPU.  Each is available as an arignote ``Sequential`` (channels-last
input, as a Keras user writes it), as a plain ``torch.nn.Module`` (NCHW, logits out: what a
PyTorch user writes) and as a Keras 3 model (for the Keras peer).

Example::

    >>> from arignote.bench import models
    >>> net = models.torch_model("cnn")
    >>> models.count_params(net) == models.SPECS["cnn"].params
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ModelSpec", "SPECS", "spec", "torch_model", "arignote_model", "keras_model", "count_params"]


@dataclass(frozen=True)
class ModelSpec:
    """What a benchmark model eats: one sample's shape (channels-last), classes and parameter count."""

    name: str
    input_shape: tuple[int, ...]
    classes: int
    params: int
    doc: str


SPECS = {
    "cnn": ModelSpec("cnn", (32, 32, 3), 10, 1_250_858, "the seeds' CIFAR-10 CNN (Keras 2 cifar10_cnn.py)"),
    "mlp": ModelSpec("mlp", (784,), 10, 669_706, "MLP 784-512-512-10 (Keras 2 mnist_mlp.py)"),
    "lstm": ModelSpec("lstm", (32, 96), 10, 116_490,
                      "LSTM(128) over the 32 rows of a CIFAR image (torch adds a 2nd bias: +512 params)"),
}

# Keras 2 cifar10_cnn.py / mnist_mlp.py hyper-parameters shared by every runner.
LEARNING_RATE = 1e-4
RMSPROP_RHO = 0.9
RMSPROP_EPS = 1e-7


def spec(name: str) -> ModelSpec:
    """The :class:`ModelSpec` called ``name``; a clear error lists the choices."""
    if name not in SPECS:
        raise ValueError(f"unknown benchmark model '{name}'; choose one of: {', '.join(SPECS)}")
    return SPECS[name]


def count_params(module: Any) -> int:
    """Trainable parameters of a torch module."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


# --------------------------------------------------------------------------- plain torch


def torch_model(name: str):
    """The network as a plain ``torch.nn.Module`` taking NCHW images (cnn) and returning logits."""
    import torch.nn as nn

    spec(name)
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3), nn.ReLU(),
            nn.MaxPool2d(2), nn.Dropout(0.25),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(),
            nn.MaxPool2d(2), nn.Dropout(0.25),
            nn.Flatten(), nn.Linear(64 * 6 * 6, 512), nn.ReLU(), nn.Dropout(0.5), nn.Linear(512, 10),
        )
    if name == "mlp":
        return nn.Sequential(
            nn.Linear(784, 512), nn.ReLU(), nn.Dropout(0.2),
            nn.Linear(512, 512), nn.ReLU(), nn.Dropout(0.2), nn.Linear(512, 10),
        )
    return _TorchLSTM()


def _TorchLSTM():
    import torch.nn as nn

    class TorchLSTM(nn.Module):
        """LSTM(128) over (batch, 32, 96) sequences, last hidden state -> 10 logits."""

        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(96, 128, batch_first=True)
            self.head = nn.Linear(128, 10)

        def forward(self, x):
            _, (h, _) = self.lstm(x)
            return self.head(h[-1])

    return TorchLSTM()


# --------------------------------------------------------------------------- arignote (Keras 2 style)


def arignote_model(name: str):
    """The network as an arignote ``Sequential``, written exactly as the Keras 2 example is."""
    # torch: `arignote bench` reads SPECS on the CLI's start path; torch loads when a model is built
    from arignote.layers import LSTM, Activation, Conv2D, Dense, Dropout, Flatten, MaxPooling2D
    from arignote.models import Sequential

    spec(name)
    model = Sequential()
    if name == "cnn":
        model.add(Conv2D(32, (3, 3), padding="same", input_shape=(32, 32, 3)))
        model.add(Activation("relu"))
        model.add(Conv2D(32, (3, 3)))
        model.add(Activation("relu"))
        model.add(MaxPooling2D(pool_size=(2, 2)))
        model.add(Dropout(0.25))
        model.add(Conv2D(64, (3, 3), padding="same"))
        model.add(Activation("relu"))
        model.add(Conv2D(64, (3, 3)))
        model.add(Activation("relu"))
        model.add(MaxPooling2D(pool_size=(2, 2)))
        model.add(Dropout(0.25))
        model.add(Flatten())
        model.add(Dense(512))
        model.add(Activation("relu"))
        model.add(Dropout(0.5))
        model.add(Dense(10))
        model.add(Activation("softmax"))
    elif name == "mlp":
        model.add(Dense(512, activation="relu", input_shape=(784,)))
        model.add(Dropout(0.2))
        model.add(Dense(512, activation="relu"))
        model.add(Dropout(0.2))
        model.add(Dense(10, activation="softmax"))
    else:
        model.add(LSTM(128, input_shape=(32, 96)))
        model.add(Dense(10, activation="softmax"))
    return model


# --------------------------------------------------------------------------- Keras 3 (peer)


def keras_model(name: str):
    """The network as a Keras 3 ``Sequential`` (import keras only after KERAS_BACKEND is set)."""
    import keras
    from keras import layers

    spec(name)
    if name == "cnn":
        stack = [
            keras.Input((32, 32, 3)),
            layers.Conv2D(32, (3, 3), padding="same"), layers.Activation("relu"),
            layers.Conv2D(32, (3, 3)), layers.Activation("relu"),
            layers.MaxPooling2D((2, 2)), layers.Dropout(0.25),
            layers.Conv2D(64, (3, 3), padding="same"), layers.Activation("relu"),
            layers.Conv2D(64, (3, 3)), layers.Activation("relu"),
            layers.MaxPooling2D((2, 2)), layers.Dropout(0.25),
            layers.Flatten(), layers.Dense(512), layers.Activation("relu"), layers.Dropout(0.5),
            layers.Dense(10), layers.Activation("softmax"),
        ]
    elif name == "mlp":
        stack = [
            keras.Input((784,)),
            layers.Dense(512, activation="relu"), layers.Dropout(0.2),
            layers.Dense(512, activation="relu"), layers.Dropout(0.2),
            layers.Dense(10, activation="softmax"),
        ]
    else:
        stack = [keras.Input((32, 96)), layers.LSTM(128), layers.Dense(10, activation="softmax")]
    return keras.Sequential(stack)
