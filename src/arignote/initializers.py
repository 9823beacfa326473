"""Keras 2 ``keras.initializers``: ``initializer(shape, dtype=None)`` returns a new torch tensor.

``shape`` is in Keras layout (Dense kernel ``(in, units)``, Conv2D kernel ``(kh, kw, in, filters)``)
and fans are computed from it as Keras 2 does; layers that keep torch layouts permute the result.
A ``seed`` makes draws reproducible (a private ``torch.Generator``; the seed then advances by one,
as in Keras 2). Without one the draw follows torch's global RNG, seeded first from numpy's unless the
user seeded torch (:mod:`arignote.random_state`: ``numpy.random.seed(7)`` fixes a run as on Keras 2).

Example::

    >>> get("ones")((2, 3)).sum().item()
    6.0
    >>> serialize(VarianceScaling(scale=2.0))["config"]["scale"]
    2.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from arignote import _keras_objects, random_state
from arignote._keras_objects import deserialize_object, serialize_object
from arignote.backend import common as backend_common

__all__ = [
    "Initializer",
    "Zeros",
    "Ones",
    "Constant",
    "RandomNormal",
    "RandomUniform",
    "TruncatedNormal",
    "VarianceScaling",
    "Orthogonal",
    "Identity",
    "lecun_uniform",
    "lecun_normal",
    "glorot_uniform",
    "glorot_normal",
    "he_uniform",
    "he_normal",
    "zeros",
    "ones",
    "constant",
    "uniform",
    "normal",
    "random_uniform",
    "random_normal",
    "truncated_normal",
    "identity",
    "orthogonal",
    "get",
    "serialize",
    "deserialize",
]

# std of a standard normal truncated to [-2, 2] (Keras 2 divides by it so the result has the std asked)
_TRUNC_STD = 0.87962566103423978


def _dtype(dtype: Any) -> torch.dtype:
    if dtype is None:
        dtype = backend_common.floatx()
    return getattr(torch, dtype) if isinstance(dtype, str) else dtype


def _shape(shape: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in shape)


def compute_fans(shape: tuple[int, ...]) -> tuple[float, float]:
    """Keras 2's ``(fan_in, fan_out)`` for a Keras-layout weight shape (kernels channels-last)."""
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    if len(shape) in (3, 4, 5):
        receptive = math.prod(shape[:-2])
        return float(shape[-2] * receptive), float(shape[-1] * receptive)
    root = math.sqrt(math.prod(shape))
    return root, root


def _compute_fans(shape: tuple[int, ...], data_format: str = "channels_last") -> tuple[float, float]:
    """Keras 2.3.1's ``initializers._compute_fans`` (published code imports it): ``(fan_in, fan_out)``
    of a weight shape, its kernels channels-last or (``data_format='channels_first'``, Keras 1's
    Theano layout) ``(filters, channels, *kernel)``.

    >>> _compute_fans((3, 3, 4, 8)), _compute_fans((8, 4, 3, 3), "channels_first")
    ((36.0, 72.0), (36.0, 72.0))
    """
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"Invalid data_format: {data_format}")
    if data_format == "channels_first" and len(shape) in (3, 4, 5):
        receptive = math.prod(shape[2:])
        return float(shape[1] * receptive), float(shape[0] * receptive)
    return compute_fans(tuple(shape))


class Initializer:
    """Base class: subclasses define ``__call__(shape, dtype=None)`` and ``get_config``."""

    seed: int | None = None

    def __call__(self, shape: Any, dtype: Any = None) -> torch.Tensor:
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> Initializer:
        config = dict(config)
        config.pop("dtype", None)
        return cls(**config)

    def _generator(self) -> torch.Generator | None:
        if self.seed is None:
            random_state.follow_numpy()  # Keras 2 drew np.random.randint here
            return None
        g = torch.Generator().manual_seed(int(self.seed))
        self.seed += 1
        return g

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    """All zeros."""

    def __call__(self, shape: Any, dtype: Any = None) -> torch.Tensor:
        return torch.zeros(_shape(shape), dtype=_dtype(dtype))


class Ones(Initializer):
    """All ones."""

    def __call__(self, shape: Any, dtype: Any = None) -> torch.Tensor:
        return torch.ones(_shape(shape), dtype=_dtype(dtype))


class Constant(Initializer):
    """Every element ``value`` (default 0); an array ``value`` is the whole weight (broadcast to its
    shape, as Keras 2's ``K.constant``): ``Embedding(..., embeddings_initializer=Constant(matrix))``.

    Example::

        >>> Constant([1.0, 2.0])((2, 2)).tolist()
        [[1.0, 2.0], [1.0, 2.0]]
    """

    def __init__(self, value: Any = 0) -> None:
        self.value = value

    def __call__(self, shape: Any, dtype: Any = None) -> torch.Tensor:
        shape = _shape(shape)
        if isinstance(self.value, (int, float)):
            return torch.full(shape, float(self.value), dtype=_dtype(dtype))
        value = torch.as_tensor(np.array(self.value), dtype=_dtype(dtype))
        try:
            return value.expand(shape).clone()
        except RuntimeError:
            raise ValueError(f"Constant: a value of shape {tuple(value.shape)} cannot fill a weight of shape "
                             f"{shape}") from None

    def get_config(self) -> dict:
        value = self.value
        return {"value": value.tolist() if isinstance(value, np.ndarray) else value}


class RandomNormal(Initializer):
    """Normal draws, ``mean=0.``, ``stddev=0.05``."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None) -> None:
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape: Any, dtype: Any = None) -> torch.Tensor:
        t = torch.empty(_shape(shape), dtype=_dtype(dtype))
        return t.normal_(self.mean, self.stddev, generator=self._generator())

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(Initializer):
    """Uniform draws in ``[minval, maxval)``, default ``[-0.05, 0.05)``."""

    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: int | None = None) -> None:
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape: Any, dtype: Any = None) -> torch.Tensor:
        t = torch.empty(_shape(shape), dtype=_dtype(dtype))
        return t.uniform_(self.minval, self.maxval, generator=self._generator())

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


def _truncated(shape: tuple, mean: float, stddev: float, dtype: torch.dtype, gen: torch.Generator | None):
    t = torch.empty(shape, dtype=dtype)
    return torch.nn.init.trunc_normal_(t, mean, stddev, mean - 2 * stddev, mean + 2 * stddev, generator=gen)


class TruncatedNormal(Initializer):
    """Normal draws re-drawn beyond two standard deviations (``mean=0.``, ``stddev=0.05``)."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None) -> None:
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape: Any, dtype: Any = None) -> torch.Tensor:
        return _truncated(_shape(shape), self.mean, self.stddev, _dtype(dtype), self._generator())

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class VarianceScaling(Initializer):
    """Scale adapted to the fans: ``scale / n`` variance with ``n`` from ``mode``
    (``fan_in``/``fan_out``/``fan_avg``); ``distribution`` ``normal`` (truncated at 2 std, corrected so
    the std is ``sqrt(scale / n)``) or ``uniform`` (limit ``sqrt(3 * scale / n)``)."""

    def __init__(
        self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "normal", seed: int | None = None
    ) -> None:
        if not scale > 0:
            raise ValueError(f"VarianceScaling: `scale` must be a positive float, got {scale!r}")
        mode, distribution = str(mode).lower(), str(distribution).lower()
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: mode must be 'fan_in', 'fan_out' or 'fan_avg', got {mode!r}")
        if distribution not in ("normal", "uniform"):
            raise ValueError(
                f"VarianceScaling: distribution must be 'normal' or 'uniform', got {distribution!r}"
            )
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape: Any, dtype: Any = None) -> torch.Tensor:
        shape = _shape(shape)
        fan_in, fan_out = compute_fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        scale = self.scale / max(1.0, n)
        gen = self._generator()
        if self.distribution == "normal":
            return _truncated(shape, 0.0, math.sqrt(scale) / _TRUNC_STD, _dtype(dtype), gen)
        limit = math.sqrt(3.0 * scale)
        return torch.empty(shape, dtype=_dtype(dtype)).uniform_(-limit, limit, generator=gen)

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed}


class Orthogonal(Initializer):
    """A random orthogonal matrix (shape flattened to ``(prod(shape[:-1]), shape[-1])``) times ``gain``."""

    def __init__(self, gain: float = 1.0, seed: int | None = None) -> None:
        self.gain, self.seed = gain, seed

    def __call__(self, shape: Any, dtype: Any = None) -> torch.Tensor:
        shape = _shape(shape)
        rows, cols = math.prod(shape[:-1]), shape[-1]
        a = torch.empty(rows, cols, dtype=torch.float64).normal_(generator=self._generator())
        u, _, vh = torch.linalg.svd(a, full_matrices=False)
        q = u if tuple(u.shape) == (rows, cols) else vh
        return (self.gain * q).reshape(shape).to(_dtype(dtype))

    def get_config(self) -> dict:
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """``gain`` times the identity (2-D shapes only; non-square ones padded with zeros)."""

    def __init__(self, gain: float = 1.0) -> None:
        self.gain = gain

    def __call__(self, shape: Any, dtype: Any = None) -> torch.Tensor:
        shape = _shape(shape)
        if len(shape) != 2:
            raise ValueError(
                f"Identity matrix initializer can only be used for 2D matrices, got shape {shape}"
            )
        return self.gain * torch.eye(shape[0], shape[1], dtype=_dtype(dtype))

    def get_config(self) -> dict:
        return {"gain": self.gain}


def lecun_uniform(seed: int | None = None) -> VarianceScaling:
    """Uniform in ``[-sqrt(3 / fan_in), sqrt(3 / fan_in)]``."""
    return VarianceScaling(1.0, "fan_in", "uniform", seed)


def lecun_normal(seed: int | None = None) -> VarianceScaling:
    """Truncated normal with std ``sqrt(1 / fan_in)``."""
    return VarianceScaling(1.0, "fan_in", "normal", seed)


def glorot_uniform(seed: int | None = None) -> VarianceScaling:
    """Uniform in ``[-sqrt(6 / (fan_in + fan_out)), +...]`` (Keras's default kernel initializer)."""
    return VarianceScaling(1.0, "fan_avg", "uniform", seed)


def glorot_normal(seed: int | None = None) -> VarianceScaling:
    """Truncated normal with std ``sqrt(2 / (fan_in + fan_out))``."""
    return VarianceScaling(1.0, "fan_avg", "normal", seed)


def he_uniform(seed: int | None = None) -> VarianceScaling:
    """Uniform in ``[-sqrt(6 / fan_in), sqrt(6 / fan_in)]``."""
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


def he_normal(seed: int | None = None) -> VarianceScaling:
    """Truncated normal with std ``sqrt(2 / fan_in)``."""
    return VarianceScaling(2.0, "fan_in", "normal", seed)


zero = zeros = Zeros
one = ones = Ones
constant = Constant
uniform = random_uniform = RandomUniform
normal = random_normal = RandomNormal
truncated_normal = TruncatedNormal
identity = Identity
orthogonal = Orthogonal

_OBJECTS: dict[str, Any] = {
    name: obj
    for name, obj in globals().items()
    if not name.startswith("_")
    and (
        isinstance(obj, type)
        and issubclass(obj, Initializer)
        or name
        in ("lecun_uniform", "lecun_normal", "glorot_uniform", "glorot_normal", "he_uniform", "he_normal")
    )
}


def serialize(initializer: Any) -> Any:
    """``{"class_name": "VarianceScaling", "config": {...}}`` (or a function's name)."""
    return serialize_object(initializer)


def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """An initializer from :func:`serialize`'s output or a name."""
    return deserialize_object(config, _OBJECTS, custom_objects, "initializer")


def get(identifier: Any) -> Any:
    """An initializer from a name (``'glorot_uniform'``), a config dict, or a callable (passed through)."""
    return _keras_objects.get(identifier, deserialize, "initializer", none_passes=False)
