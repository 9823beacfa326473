"""The benchmark's data: CIFAR-10 when it is on this machine, otherwise synthetic data of its shape.

The bench never downloads unless asked (``source="cifar10"``); ``auto`` uses CIFAR-10 found
locally by :mod:`arignote.datasets` and falls back to synthetic CIFAR-shaped images, and the report
says which one it used.  The MLP eats MNIST-shaped vectors (784 features): MNIST when present,
else synthetic.  Arrays are Keras-style: float32 images in [0, 1], channels last, one-hot labels.

Example::

    >>> from arignote.bench import data
    >>> d = data.load("cnn", n_train=64, n_val=16, source="synthetic")
    >>> d.x_train.shape, d.y_val.shape, d.source
    ((64, 32, 32, 3), (16, 10), 'synthetic CIFAR-shaped (seed 0)')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arignote import datasets
from arignote.bench.models import spec

__all__ = ["BenchData", "SOURCES", "load", "default_val"]

SOURCES = ("auto", "cifar10", "synthetic")


@dataclass
class BenchData:
    """Train and validation arrays (channels-last float32, one-hot float32) and where they came from."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    source: str


def default_val(n_train: int) -> int:
    """Validation samples for ``n_train`` training samples: the seeds' 45000/5000 split (1 in 10)."""
    return max(1, n_train // 9)


def load(model: str, n_train: int, n_val: int, source: str = "auto", seed: int = 0) -> BenchData:
    """Data for ``model`` ('cnn', 'mlp', 'lstm'): ``n_train`` + ``n_val`` samples from ``source``."""
    if source not in SOURCES:
        raise ValueError(f"unknown data source '{source}'; choose one of: {', '.join(SOURCES)}")
    if n_train <= 0 or n_val < 0:
        raise ValueError(f"--samples must be a positive number of training samples (got {n_train})")
    s = spec(model)
    real = None if source == "synthetic" else _real(model, n_train + n_val, download=source == "cifar10")
    if real is not None:
        x, labels, name = real
    else:
        x, labels = _synthetic(model, n_train + n_val, seed)
        name = f"synthetic {'MNIST' if model == 'mlp' else 'CIFAR'}-shaped (seed {seed})"
    x = x.reshape((len(x),) + s.input_shape)
    y = np.eye(s.classes, dtype=np.float32)[labels]
    # the seeds' validation_split=0.1 holds out the last samples
    return BenchData(x[:n_train], y[:n_train], x[n_train:], y[n_train:], name)


def _synthetic(model: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random 8-bit pixels scaled to [0, 1] (as the real data is), random labels."""
    rng = np.random.default_rng(seed)
    shape = (n, 784) if model == "mlp" else (n, 32, 32, 3)
    x = rng.integers(0, 256, size=shape, dtype=np.uint8).astype(np.float32)
    x /= 255.0  # in place: a second float copy would inflate every run's peak-memory figure
    return x, rng.integers(0, 10, size=n)


def _real(model: str, n: int, download: bool) -> tuple[np.ndarray, np.ndarray, str] | None:
    """The first ``n`` training samples of CIFAR-10 (MNIST for the MLP) when found, else None."""
    module = datasets.mnist if model == "mlp" else datasets.cifar10
    label = "MNIST" if model == "mlp" else "CIFAR-10"
    where = module.find() if not download else None
    if where is None and not download:
        return None
    (x, y), _ = module.load_data()
    if len(x) < n:
        raise ValueError(f"{label} has {len(x)} training images but {n} were asked for; lower --samples")
    x = np.asarray(x[:n], dtype=np.float32)
    x /= 255.0
    return x, np.asarray(y[:n]).reshape(-1).astype(np.int64), f"{label} ({where or 'downloaded'})"
