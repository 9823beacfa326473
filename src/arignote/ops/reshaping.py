"""K's operations that move, join or pick elements without computing new values: ``K.reshape``,
``K.permute_dimensions``, ``K.concatenate``, ``K.stack``, ``K.tile``, ``K.gather``, ``K.slice``,
``K.reverse``, ``K.one_hot``, the flattening ones, ``K.identity`` and ``K.to_dense``; and the products
``K.dot`` / ``K.batch_dot``.

Example::

    >>> import torch
    >>> x = torch.arange(6.).reshape(2, 3)
    >>> tuple(permute_dimensions(x, (1, 0)).shape), concatenate([x, x]).shape, batch_dot(x, x).tolist()
    ((3, 2), torch.Size([2, 6]), [[5.0], [50.0]])
"""

from __future__ import annotations

import builtins
from typing import Any

import torch
import torch.nn.functional as F

from arignote import config
from arignote.layers.op_layer import symbolic
from arignote.ops.arguments import _t
from arignote.ops.elementwise import _unary

__all__ = [
    "flatten", "batch_flatten", "dot", "batch_dot", "transpose", "reshape", "permute_dimensions",
    "expand_dims", "squeeze", "concatenate", "stack", "repeat", "repeat_elements", "tile", "gather",
    "one_hot", "slice", "identity", "to_dense", "reverse",
]


flatten = _unary(lambda x: x.reshape(-1), "flatten")
batch_flatten = _unary(lambda x: x.reshape(x.shape[0], -1), "batch_flatten")


@symbolic
def dot(x: Any, y: Any) -> torch.Tensor:
    """Keras ``K.dot``: matmul over x's last and y's second-to-last axis (y 2-D: the usual kernel)."""
    x, y = _t(x), _t(y)
    if x.is_sparse:  # K.variable(scipy_sparse_matrix) @ a dense matrix, as Keras 2's sparse dot
        return torch.sparse.mm(x, y) if y.dim() == 2 else dot(x.to_dense(), y)
    if y.dim() > 2:
        return torch.tensordot(x, y.transpose(0, -2) if y.dim() > 2 else y, dims=([x.dim() - 1], [0]))
    return x @ y


@symbolic
def batch_dot(x: Any, y: Any, axes: Any = None) -> torch.Tensor:
    """Keras 2 ``K.batch_dot``: per-sample dot over ``axes`` (default: x's last, y's second-to-last /
    last for 2-D); 2-D results are ``(batch, 1)`` as in Keras 2."""
    x, y = _t(x), _t(y)
    if isinstance(axes, int):
        axes = (axes, axes)
    if axes is None:
        axes = (x.dim() - 1, y.dim() - 1 if y.dim() == 2 else y.dim() - 2)
    ax, ay = (a % t.dim() for a, t in zip(axes, (x, y)))
    if x.dim() == 2 and y.dim() == 2:
        return (x * y).sum(dim=1, keepdim=True)
    # x's kept axes, then y's (batch first once): one batched matmul over the flattened rest.
    xm = x.movedim(ax, -1)
    ym = y.movedim(ay, 1)
    out = torch.matmul(xm.reshape(xm.shape[0], -1, xm.shape[-1]), ym.reshape(ym.shape[0], ym.shape[1], -1))
    out = out.reshape(*xm.shape[:-1], *ym.shape[2:])
    return out.unsqueeze(1) if out.dim() == 1 else out


@symbolic
def transpose(x: Any) -> torch.Tensor:
    x = _t(x)
    return x.permute(*reversed(range(x.dim())))


@symbolic
def reshape(x: Any, shape: Any) -> torch.Tensor:  # noqa: A002 - Keras's argument name
    return torch.reshape(_t(x), tuple(-1 if d is None else int(d) for d in shape))


@symbolic
def permute_dimensions(x: Any, pattern: Any) -> torch.Tensor:
    return _t(x).permute(*pattern)


@symbolic
def expand_dims(x: Any, axis: int = -1) -> torch.Tensor:
    return torch.unsqueeze(_t(x), axis)


@symbolic
def squeeze(x: Any, axis: int) -> torch.Tensor:
    return torch.squeeze(_t(x), axis)


@symbolic
def concatenate(tensors: Any, axis: int = -1) -> torch.Tensor:
    """Join along ``axis``; sparse tensors give a sparse result, a mix of sparse and dense a dense one
    (as Keras 2)."""
    tensors = [_t(t) for t in tensors]
    if not builtins.all(t.is_sparse for t in tensors):
        tensors = [t.to_dense() if t.is_sparse else t for t in tensors]
    return torch.cat(tensors, dim=axis)


@symbolic
def stack(x: Any, axis: int = 0) -> torch.Tensor:
    return torch.stack([_t(t) for t in x], dim=axis)


@symbolic
def repeat(x: Any, n: int) -> torch.Tensor:
    """``(batch, dim) -> (batch, n, dim)`` (Keras ``K.repeat``)."""
    return _t(x).unsqueeze(1).expand(-1, n, -1)


@symbolic
def repeat_elements(x: Any, rep: int, axis: int) -> torch.Tensor:
    return torch.repeat_interleave(_t(x), rep, dim=axis)


@symbolic
def tile(x: Any, n: Any) -> torch.Tensor:
    """``np.tile``: ``n`` (an int or one count per axis, the last axes first) repeats ``x`` along them."""
    return torch.tile(_t(x), tuple(int(k) for k in n) if isinstance(n, (list, tuple)) else (int(n),))


@symbolic
def gather(reference: Any, indices: Any) -> torch.Tensor:
    return _t(reference)[_t(indices).long()]


@symbolic
def one_hot(indices: Any, num_classes: int) -> torch.Tensor:
    return F.one_hot(_t(indices).long(), num_classes).to(getattr(torch, config.get("floatX")))


@symbolic
def slice(x: Any, start: Any, size: Any) -> torch.Tensor:  # noqa: A001
    x = _t(x)
    if not x.dim() == len(start) == len(size):  # Keras 2.3.1's check and message
        raise ValueError("The dimension and the size of indices should match.")
    idx = tuple(builtins.slice(int(b), int(b) + int(s)) for b, s in zip(start, size))
    return x[idx]


@symbolic
def identity(x: Any, name: str | None = None) -> torch.Tensor:  # noqa: ARG001 - Keras's signature
    """A tensor with the same content (a copy, as Keras's)."""
    return _t(x).clone()


@symbolic
def to_dense(x: Any) -> torch.Tensor:
    """``x`` as a dense tensor (itself unless it is a sparse one)."""
    t = _t(x)
    return t.to_dense() if t.is_sparse else t


@symbolic
def reverse(x: Any, axes: Any) -> torch.Tensor:
    """Reverse along ``axes`` (an int or a list of ints), as Keras ``K.reverse``."""
    t = _t(x)
    axes = [axes] if isinstance(axes, int) else list(axes)
    return torch.flip(t, dims=[a % t.dim() for a in axes])
