"""Keras activation names mapped onto torch functions, and Keras 2 weight initializers.

Example::

    >>> get("relu") is torch.relu
    True
    >>> get("linear") is None   # no op: layers skip the call
    True
"""

from __future__ import annotations

import difflib
import functools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

__all__ = ["get", "name_of", "ACTIVATIONS", "initialize", "INITIALIZERS"]


def _hard_sigmoid(x: torch.Tensor) -> torch.Tensor:
    # Keras 2: clip(0.2 * x + 0.5, 0, 1)
    return torch.clamp(0.2 * x + 0.5, 0.0, 1.0)


ACTIVATIONS: dict[str, Callable | None] = {
    "linear": None,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "softmax": functools.partial(torch.softmax, dim=-1),
    "elu": F.elu,
    "selu": F.selu,
    "softplus": F.softplus,
    "softsign": F.softsign,
    "hard_sigmoid": _hard_sigmoid,
    "exponential": torch.exp,
}

# softmax over channels for internal NCHW image tensors (Keras's axis=-1 is our dim 1)
_SOFTMAX_CHANNELS = functools.partial(torch.softmax, dim=1)


def get(identifier: str | Callable | None, image: bool = False) -> Callable | None:
    """The torch function for a Keras activation name (``None`` for ``linear``); callables pass through.

    ``image=True`` gives the variant for internal NCHW tensors (softmax over channels).
    """
    if identifier is None:
        return None
    if callable(identifier):
        return identifier
    if not isinstance(identifier, str) or identifier not in ACTIVATIONS:
        close = difflib.get_close_matches(str(identifier), list(ACTIVATIONS), n=1, cutoff=0.5)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise ValueError(
            f"unknown activation {identifier!r}.{hint} Valid activations: {', '.join(ACTIVATIONS)}"
        )
    if image and identifier == "softmax":
        return _SOFTMAX_CHANNELS
    return ACTIVATIONS[identifier]


def name_of(identifier: str | Callable | None) -> str:
    """The serializable name of an activation (for ``get_config``)."""
    if identifier is None:
        return "linear"
    if isinstance(identifier, str):
        return identifier
    for name, fn in ACTIVATIONS.items():
        if fn is identifier:
            return name
    raise ValueError(
        f"activation {identifier!r} is a custom callable and cannot be serialized; "
        "use one of " + ", ".join(ACTIVATIONS)
    )


# --------------------------------------------------------------------------- initializers


def _fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """Keras fan_in/fan_out for a torch-layout weight: (out, in) or (out, in, kh, kw)."""
    if len(shape) < 2:
        return shape[0], shape[0]
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _truncated(t: torch.Tensor, std: float) -> torch.Tensor:
    # Keras 2 VarianceScaling(distribution='normal') draws a normal truncated at 2 stddev
    return torch.nn.init.trunc_normal_(t, 0.0, std, -2 * std, 2 * std)


def _variance_scaling(scale: float, mode: str, distribution: str) -> Callable[[torch.Tensor], torch.Tensor]:
    def init(t: torch.Tensor) -> torch.Tensor:
        fan_in, fan_out = _fans(tuple(t.shape))
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        if distribution == "uniform":
            limit = math.sqrt(3.0 * scale / n)
            return torch.nn.init.uniform_(t, -limit, limit)
        return _truncated(t, math.sqrt(scale / n))

    return init


INITIALIZERS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "zeros": torch.nn.init.zeros_,
    "ones": torch.nn.init.ones_,
    "glorot_uniform": _variance_scaling(1.0, "fan_avg", "uniform"),
    "glorot_normal": _variance_scaling(1.0, "fan_avg", "normal"),
    "he_uniform": _variance_scaling(2.0, "fan_in", "uniform"),
    "he_normal": _variance_scaling(2.0, "fan_in", "normal"),
    "lecun_uniform": _variance_scaling(1.0, "fan_in", "uniform"),
    "lecun_normal": _variance_scaling(1.0, "fan_in", "normal"),
    # Keras 2 RandomUniform / RandomNormal defaults
    "random_uniform": lambda t: torch.nn.init.uniform_(t, -0.05, 0.05),
    "uniform": lambda t: torch.nn.init.uniform_(t, -0.05, 0.05),
    "random_normal": lambda t: torch.nn.init.normal_(t, 0.0, 0.05),
    "normal": lambda t: torch.nn.init.normal_(t, 0.0, 0.05),
    "orthogonal": torch.nn.init.orthogonal_,
}


def check_initializer(name: str | Callable, what: str) -> str | Callable:
    """Validate an initializer name early (at layer construction), with did-you-mean."""
    if callable(name) or name in INITIALIZERS:
        return name
    close = difflib.get_close_matches(str(name), list(INITIALIZERS), n=1, cutoff=0.5)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    raise ValueError(f"unknown {what} {name!r}.{hint} Valid initializers: {', '.join(INITIALIZERS)}")


def initialize(t: torch.Tensor, name: str | Callable) -> torch.Tensor:
    """Fill torch-layout weight ``t`` in place with Keras initializer ``name`` (or a callable)."""
    with torch.no_grad():
        fn = name if callable(name) else INITIALIZERS[name]
        fn(t)
    return t
