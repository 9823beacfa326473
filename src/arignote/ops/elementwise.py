"""K's elementwise operations: one tensor's (``K.abs``, ``K.exp``, ``K.sigmoid``, ``K.cast``, ...),
two broadcast tensors' (``K.maximum``, ``K.equal``, ...), and ``K.bias_add`` (a bias on the channel
axis). Each records an operation node on the functional API's symbolic tensors.

Example::

    >>> import torch
    >>> maximum(torch.tensor([1., -2.]), 0.0), hard_sigmoid(torch.tensor([0.]))
    (tensor([1., 0.]), tensor([0.5000]))
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote import activations, backend
from arignote.layers.op_layer import symbolic
from arignote.ops.arguments import _t, _torch_dtype

__all__ = [
    "abs", "sqrt", "square", "exp", "log", "sign", "round", "sin", "cos", "tanh", "sigmoid", "softplus",
    "softsign", "hard_sigmoid", "zeros_like", "ones_like", "stop_gradient", "pow", "clip", "maximum",
    "minimum", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "relu", "elu",
    "softmax", "cast", "bias_add",
]


def _unary(torch_fn: Any, name: str) -> Any:
    def fn(x: Any) -> torch.Tensor:
        return torch_fn(_t(x))

    fn.__name__ = name
    fn.__doc__ = f"Keras ``K.{name}(x)``."
    return symbolic(fn)


abs = _unary(torch.abs, "abs")  # noqa: A001 - Keras's name
sqrt = _unary(lambda x: torch.sqrt(torch.clamp(x, min=0.0)), "sqrt")  # Keras clips at 0
square = _unary(torch.square, "square")
exp = _unary(torch.exp, "exp")
log = _unary(torch.log, "log")
sign = _unary(torch.sign, "sign")
round = _unary(torch.round, "round")  # noqa: A001
sin = _unary(torch.sin, "sin")
cos = _unary(torch.cos, "cos")
tanh = _unary(torch.tanh, "tanh")
sigmoid = _unary(torch.sigmoid, "sigmoid")
softplus = _unary(F.softplus, "softplus")
softsign = _unary(F.softsign, "softsign")
hard_sigmoid = _unary(lambda x: torch.clamp(0.2 * x + 0.5, 0.0, 1.0), "hard_sigmoid")
zeros_like = _unary(torch.zeros_like, "zeros_like")
ones_like = _unary(torch.ones_like, "ones_like")
_stop_gradient = _unary(lambda x: x.detach(), "stop_gradient")


def stop_gradient(variables: Any) -> Any:
    """Keras ``K.stop_gradient``: the tensor with no gradient flowing back through it; a list of
    tensors gives a list."""
    if isinstance(variables, (list, tuple)):
        return [_stop_gradient(v) for v in variables]
    return _stop_gradient(variables)


@symbolic
def pow(x: Any, a: Any) -> torch.Tensor:  # noqa: A001
    return torch.pow(_t(x), a)


@symbolic
def clip(x: Any, min_value: Any, max_value: Any) -> torch.Tensor:
    return torch.clamp(_t(x), min_value, max_value)


def _binary(torch_fn: Any, name: str) -> Any:
    def fn(x: Any, y: Any) -> torch.Tensor:
        x = _t(x)
        return torch_fn(x, y if isinstance(y, (int, float)) else _t(y))

    fn.__name__ = name
    fn.__doc__ = f"Keras ``K.{name}(x, y)`` (elementwise, broadcasting)."
    return symbolic(fn)


maximum = _binary(lambda a, b: torch.maximum(a, torch.as_tensor(b).to(a)), "maximum")
minimum = _binary(lambda a, b: torch.minimum(a, torch.as_tensor(b).to(a)), "minimum")
equal = _binary(torch.eq, "equal")
not_equal = _binary(torch.ne, "not_equal")
greater = _binary(torch.gt, "greater")
greater_equal = _binary(torch.ge, "greater_equal")
less = _binary(torch.lt, "less")
less_equal = _binary(torch.le, "less_equal")


@symbolic
def relu(x: Any, alpha: float = 0.0, max_value: Any = None, threshold: float = 0.0) -> torch.Tensor:
    """Keras 2 ``K.relu`` (as its Theano backend: ``max_value`` clips to ``[0, max_value]`` even
    below a negative ``threshold``): :func:`arignote.activations.relu`."""
    return activations.relu(_t(x), alpha=alpha, max_value=max_value, threshold=threshold)


@symbolic
def elu(x: Any, alpha: float = 1.0) -> torch.Tensor:
    return F.elu(_t(x), alpha)


@symbolic
def softmax(x: Any, axis: int = -1) -> torch.Tensor:
    return torch.softmax(_t(x), dim=axis)


@symbolic
def cast(x: Any, dtype: Any) -> torch.Tensor:  # noqa: A002
    """Keras ``K.cast(x, dtype)``; ``dtype`` a name (``'float32'``), numpy dtype or torch dtype."""
    return _t(x).to(_torch_dtype(dtype))


@symbolic
def bias_add(x: Any, bias: Any, data_format: str | None = None) -> torch.Tensor:
    """``x + bias`` on the channel axis: the last for ``channels_last``, axis 1 for ``channels_first``
    (``bias`` of shape ``(channels,)``, or the full per-sample shape given channels-last; for
    ``channels_first`` such a bias is reshaped, not transposed, to ``(channels, *rest)``, as Keras 2's
    backends did, so weights stored by Keras 2 add up the same)."""
    t, b = _t(x), _t(bias)
    data_format = data_format or backend.image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"K.bias_add: unknown data_format {data_format!r}")
    if b.dim() not in (1, t.dim() - 1):
        raise ValueError(f"K.bias_add: bias of shape {tuple(b.shape)} does not fit x of shape "
                         f"{tuple(t.shape)}")
    if data_format == "channels_first" and t.dim() > 2:
        if b.dim() == 1:
            return t + b.reshape(1, -1, *([1] * (t.dim() - 2)))
        return t + b.reshape(1, b.shape[-1], *b.shape[:-1])
    return t + b
