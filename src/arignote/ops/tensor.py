"""Keras 2 ``keras.backend`` tensor functions on torch (re-exported by :mod:`arignote.backend`).

Each works on torch tensors (inside ``call``, ``Lambda``, custom losses and metrics) and on the
symbolic tensors of the functional API, where it records an operation node
(:func:`arignote.layers.op_layer.symbolic`). Axes, ``keepdims`` and argument names are Keras 2's
(``K.sum(x, axis=-1, keepdims=False)``; ``axis=None`` reduces everything).

Example::

    >>> import torch
    >>> from arignote import backend as K
    >>> K.sum(K.square(torch.tensor([[1., 2.], [3., 4.]])), axis=-1)
    tensor([ 5., 25.])
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from arignote import activations, backend, config, random_state
from arignote.backend.names import TENSOR_FUNCTIONS
from arignote.graph import state
from arignote.graph.tensor import KerasTensor
from arignote.layers.input_layer import Input
from arignote.layers.op_layer import symbolic

__all__ = list(TENSOR_FUNCTIONS)

def _t(x: Any) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x
    t = torch.as_tensor(np.asarray(x))
    return t.to(getattr(torch, config.get("floatX"))) if t.is_floating_point() else t


def _dims(x: torch.Tensor, axis: Any) -> Any:
    if axis is None:
        return None
    if isinstance(axis, np.ndarray):  # WGAN-GP's K.sum(..., axis=np.arange(1, ndim))
        axis = axis.tolist()
    if isinstance(axis, (list, tuple)):
        return tuple(int(a) % x.dim() for a in axis)
    return int(axis)


def _reduce(fn: Any, x: Any, axis: Any, keepdims: bool) -> torch.Tensor:
    x = _t(x)
    dims = _dims(x, axis)
    if dims is None:
        out = fn(x)
        return out.reshape([1] * x.dim()) if keepdims else out
    return fn(x, dim=dims, keepdim=keepdims)


# ---------------------------------------------------------------------- shapes (no graph node)


def int_shape(x: Any) -> tuple:
    """The shape as a tuple of ints (``None`` for unknown dims of a symbolic tensor)."""
    if isinstance(x, KerasTensor):
        return x.shape
    return tuple(int(d) for d in _t(x).shape)


def ndim(x: Any) -> int:
    return len(int_shape(x))


def dtype(x: Any) -> str:
    return x.dtype if isinstance(x, KerasTensor) else str(_t(x).dtype).replace("torch.", "")


def get_variable_shape(x: Any) -> tuple:
    return int_shape(x)


def count_params(x: Any) -> int:
    return int(np.prod(int_shape(x)))


def is_keras_tensor(x: Any) -> bool:
    """True for the symbolic tensors of the functional API (``Input``, a layer's output); False for a
    variable and, as in Keras 2, for a bare :func:`placeholder`; Keras 2 raises for non-tensors."""
    if not isinstance(x, (KerasTensor, torch.Tensor)):  # a numpy array too, as Keras 2
        raise ValueError(f"Unexpectedly found an instance of type `{type(x)}`. Expected a symbolic tensor "
                         "instance.")
    return isinstance(x, KerasTensor) and not getattr(x, "_bare_placeholder", False)


def is_tensor(x: Any) -> bool:
    return isinstance(x, (KerasTensor, torch.Tensor))


@symbolic
def shape(x: Any) -> torch.Tensor:
    """The shape as a tensor (Keras ``K.shape``); use :func:`int_shape` for a tuple."""
    return torch.tensor(tuple(_t(x).shape))


# ---------------------------------------------------------------------- elementwise


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


flatten = _unary(lambda x: x.reshape(-1), "flatten")
batch_flatten = _unary(lambda x: x.reshape(x.shape[0], -1), "batch_flatten")


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


def _torch_dtype(dtype: Any) -> torch.dtype:
    """A torch dtype from a Keras dtype name (``'float32'``), a numpy dtype or a torch dtype (what
    ``y_true.dtype`` is inside a loss)."""
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    found = getattr(torch, name, None) if name else None
    if not isinstance(found, torch.dtype):
        raise ValueError(f"K.cast: {dtype!r} is not a dtype (use a name such as 'float32', 'int64', 'bool')")
    return found


@symbolic
def cast(x: Any, dtype: Any) -> torch.Tensor:  # noqa: A002
    """Keras ``K.cast(x, dtype)``; ``dtype`` a name (``'float32'``), numpy dtype or torch dtype."""
    return _t(x).to(_torch_dtype(dtype))


# ---------------------------------------------------------------------- reductions


@symbolic
def sum(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:  # noqa: A001
    return _reduce(torch.sum, x, axis, keepdims)


@symbolic
def mean(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    x = _t(x)
    return _reduce(torch.mean, x if x.is_floating_point() else x.float(), axis, keepdims)


@symbolic
def prod(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    x = _t(x)
    dims = _dims(x, axis)
    if dims is None:
        out = torch.prod(x)
        return out.reshape([1] * x.dim()) if keepdims else out
    for d in sorted(dims if isinstance(dims, tuple) else (dims,), reverse=True):
        x = torch.prod(x, dim=d, keepdim=keepdims)
    return x


@symbolic
def max(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:  # noqa: A001
    return _reduce(torch.amax if axis is not None else torch.max, x, axis, keepdims)


@symbolic
def min(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:  # noqa: A001
    return _reduce(torch.amin if axis is not None else torch.min, x, axis, keepdims)


@symbolic
def var(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    x = _t(x)
    dims = _dims(x, axis)
    return torch.var(x, dim=dims, unbiased=False, keepdim=keepdims) if dims is not None else \
        torch.var(x, unbiased=False)


@symbolic
def std(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    return torch.sqrt(var.__wrapped_op__(x, axis, keepdims))


@symbolic
def any(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:  # noqa: A001
    x = _t(x).bool()
    return torch.any(x) if axis is None else torch.any(x, dim=_dims(x, axis), keepdim=keepdims)


@symbolic
def all(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:  # noqa: A001
    x = _t(x).bool()
    return torch.all(x) if axis is None else torch.all(x, dim=_dims(x, axis), keepdim=keepdims)


@symbolic
def argmax(x: Any, axis: int = -1) -> torch.Tensor:
    return torch.argmax(_t(x), dim=axis)


@symbolic
def argmin(x: Any, axis: int = -1) -> torch.Tensor:
    return torch.argmin(_t(x), dim=axis)


@symbolic
def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    x = _t(x)
    dims = _dims(x, axis)
    return torch.logsumexp(x, dim=dims if dims is not None else tuple(range(x.dim())), keepdim=keepdims)


@symbolic
def cumsum(x: Any, axis: int = 0) -> torch.Tensor:
    return torch.cumsum(_t(x), dim=axis)


@symbolic
def cumprod(x: Any, axis: int = 0) -> torch.Tensor:
    return torch.cumprod(_t(x), dim=axis)


# ---------------------------------------------------------------------- linear algebra, shapes


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
def l2_normalize(x: Any, axis: Any = None) -> torch.Tensor:
    """``x / sqrt(max(sum(x**2, axis), epsilon))`` (Keras 2 uses 1e-12 inside)."""
    x = _t(x)
    dims = _dims(x, axis)
    sq = torch.sum(x * x, dim=dims, keepdim=True) if dims is not None else torch.sum(x * x)
    return x * torch.rsqrt(torch.clamp(sq, min=1e-12))


@symbolic
def slice(x: Any, start: Any, size: Any) -> torch.Tensor:  # noqa: A001
    x = _t(x)
    if not x.dim() == len(start) == len(size):  # Keras 2.3.1's check and message
        raise ValueError("The dimension and the size of indices should match.")
    idx = tuple(builtins.slice(int(b), int(b) + int(s)) for b, s in zip(start, size))
    return x[idx]


@symbolic
def switch(condition: Any, then_expression: Any, else_expression: Any) -> torch.Tensor:
    """Elementwise ``where`` (a scalar condition picks one branch), callables allowed as Keras 2."""
    a = then_expression() if callable(then_expression) else then_expression
    b = else_expression() if callable(else_expression) else else_expression
    cond = _t(condition)
    if cond.dim() == 0:
        return _t(a) if bool(cond) else _t(b)
    a, b = _t(a), _t(b)
    while cond.dim() < a.dim():
        cond = cond.unsqueeze(-1)
    return torch.where(cond.bool(), a, b)


def in_train_phase(x: Any, alt: Any, training: Any = None) -> Any:
    """``x`` while training, ``alt`` otherwise (``training=None``: the current learning phase)."""
    if training is None:
        training = state.phase()
    if isinstance(training, (bool, int)) or (isinstance(training, torch.Tensor) and training.dim() == 0):
        chosen = x if bool(training) else alt
        return chosen() if callable(chosen) else chosen
    return switch(training, x, alt)


def in_test_phase(x: Any, alt: Any, training: Any = None) -> Any:
    return in_train_phase(alt, x, training=training)


@symbolic
def dropout(x: Any, level: float, noise_shape: Any = None, seed: Any = None) -> torch.Tensor:
    """Inverted dropout (always on, as Keras's ``K.dropout``; wrap it in ``in_train_phase``).

    ``noise_shape``: the shape of the keep/drop mask, broadcast over ``x`` (``None`` entries take
    ``x``'s size). ``seed``: the mask comes from a ``torch.Generator`` seeded with it on ``x``'s device,
    so a seed gives the same mask every call and leaves torch's global RNG alone (Keras 2.3.1 seeds a
    random stream per ``K.dropout`` call; its compiled graph then moves that stream on per run, while
    arignote runs the call again, so a seeded mask inside a model repeats every batch).

    Example::

        >>> x = torch.ones(2, 6)
        >>> bool((dropout(x, 0.5, seed=1) == dropout(x, 0.5, seed=1)).all())
        True
        >>> dropout(x, 0.5, noise_shape=(2, 1), seed=1).unique(dim=1).shape  # one decision per row
        torch.Size([2, 1])
    """
    x = _t(x)
    level = float(level)
    if not 0.0 <= level < 1.0:
        raise ValueError(f"Dropout level must be in interval [0, 1[ (K.dropout got level={level}: the "
                         "fraction of entries set to 0)")
    if noise_shape is None and seed is None:
        return F.dropout(x, level, True)
    shape = tuple(x.shape) if noise_shape is None else tuple(
        int(d) if d is not None else s for d, s in zip(noise_shape, x.shape))
    generator = None
    if seed is not None:
        generator = torch.Generator(device=x.device)
        generator.manual_seed(int(seed))
    keep = (torch.rand(shape, generator=generator, device=x.device) >= level).to(x.dtype)
    return x * keep / (1.0 - level)


# ---------------------------------------------------------------------- losses (Keras 2 backend form)


@symbolic
def categorical_crossentropy(target: Any, output: Any, from_logits: bool = False,
                             axis: int = -1) -> torch.Tensor:
    output, target = _t(output), _t(target)
    if from_logits:
        return -(target * torch.log_softmax(output, dim=axis)).sum(dim=axis)
    output = output / output.sum(dim=axis, keepdim=True)
    eps = _epsilon()
    return -(target * torch.log(torch.clamp(output, eps, 1.0 - eps))).sum(dim=axis)


@symbolic
def sparse_categorical_crossentropy(target: Any, output: Any, from_logits: bool = False,
                                    axis: int = -1) -> torch.Tensor:
    output, target = _t(output), _t(target)
    if axis % output.dim() != output.dim() - 1:
        # Keras 2.3.1: channels on another axis (channels_first maps) move last, the target's too
        output, target = output.movedim(axis, -1), target.movedim(axis, -1)
    if not from_logits:  # Keras 2.3.1 (Theano) goes through categorical_crossentropy: sums to 1 first
        output = output / output.sum(dim=-1, keepdim=True)
    logp = torch.log_softmax(output, dim=-1) if from_logits else torch.log(
        torch.clamp(output, _epsilon(), 1.0 - _epsilon()))
    idx = target.long().reshape(*logp.shape[:-1], 1)
    return -logp.gather(-1, idx).squeeze(-1)


@symbolic
def binary_crossentropy(target: Any, output: Any, from_logits: bool = False) -> torch.Tensor:
    output, target = _t(output), _t(target)
    if from_logits:
        return F.binary_cross_entropy_with_logits(output, target.to(output), reduction="none")
    eps = _epsilon()
    output = torch.clamp(output, eps, 1.0 - eps)
    return -(target * torch.log(output) + (1.0 - target) * torch.log(1.0 - output))


def _epsilon() -> float:
    return backend.epsilon()


# ---------------------------------------------------------------------- random, variables


def _shape_arg(shape: Any) -> tuple:
    if isinstance(shape, KerasTensor):
        raise ValueError("a random tensor's shape must be known ints; for a per-batch shape pass the "
                         "symbolic tensor to K.random_normal_like-style code: K.random_normal(K.shape(x)) is "
                         "recorded when x is symbolic")
    if isinstance(shape, torch.Tensor):
        return tuple(int(d) for d in shape.tolist())
    return tuple(int(d) for d in shape)


def _seeded(seed: Any) -> Any:
    if seed is None:
        random_state.follow_numpy()  # Keras 2 drew np.random.randint here (theano_backend random_*)
        return None
    g = torch.Generator()
    g.manual_seed(int(seed))
    return g


@symbolic
def random_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None,  # noqa: A002
                  seed: Any = None) -> torch.Tensor:
    dt = getattr(torch, dtype or config.get("floatX"))
    return torch.randn(_shape_arg(shape), generator=_seeded(seed), dtype=dt) * stddev + mean


@symbolic
def truncated_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None,  # noqa: A002
                     seed: Any = None) -> torch.Tensor:
    dt = getattr(torch, dtype or config.get("floatX"))
    t = torch.empty(_shape_arg(shape), dtype=dt)
    return torch.nn.init.trunc_normal_(t, mean, stddev, mean - 2 * stddev, mean + 2 * stddev,
                                       generator=_seeded(seed))


@symbolic
def random_uniform(shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = None,  # noqa: A002
                   seed: Any = None) -> torch.Tensor:
    dt = getattr(torch, dtype or config.get("floatX"))
    return torch.rand(_shape_arg(shape), generator=_seeded(seed), dtype=dt) * (maxval - minval) + minval


@symbolic
def random_binomial(shape: Any, p: float = 0.0, dtype: Any = None, seed: Any = None) -> torch.Tensor:  # noqa: A002
    dt = getattr(torch, dtype or config.get("floatX"))
    return (torch.rand(_shape_arg(shape), generator=_seeded(seed)) < p).to(dt)


def variable(value: Any, dtype: Any = None, name: str | None = None, constraint: Any = None) -> torch.Tensor:  # noqa: A002
    """A torch tensor holding ``value`` (Keras ``K.variable``), trainable when it is a float one; read it
    with ``K.get_value``. An integer variable (a custom optimizer's ``iterations``) is a counter::

        >>> v = variable(0, dtype="int64"); _ = update_add(v, 1); (int(v), v.requires_grad)
        (1, False)
    """
    try:
        dt = getattr(torch, np.dtype(dtype or config.get("floatX")).name, None)
    except TypeError:
        dt = None
    if not isinstance(dt, torch.dtype):
        raise TypeError(f"K.variable: {dtype!r} is not a dtype (use a name such as 'float32', 'int64', "
                        "'bool')")
    if callable(getattr(value, "tocoo", None)):  # a scipy.sparse matrix: a torch sparse (COO) tensor
        coo = value.tocoo()
        return torch.sparse_coo_tensor(np.vstack([coo.row, coo.col]), coo.data, coo.shape, dtype=dt,
                                       check_invariants=True).coalesce()
    # np.array copies: a reversed view (img[..., ::-1], RGB to BGR) has negative strides torch refuses
    t = torch.as_tensor(np.array(value), dtype=dt)
    return torch.nn.Parameter(t, requires_grad=t.is_floating_point() or t.is_complex())


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str | None = None) -> torch.Tensor:  # noqa: A002
    t = torch.as_tensor(np.array(value), dtype=getattr(torch, dtype or config.get("floatX")))  # see variable
    return t.expand(*shape).clone() if shape is not None else t


def zeros(shape: Any, dtype: Any = None, name: str | None = None) -> torch.Tensor:  # noqa: A002
    return torch.zeros(_shape_arg(shape), dtype=getattr(torch, dtype or config.get("floatX")))


def ones(shape: Any, dtype: Any = None, name: str | None = None) -> torch.Tensor:  # noqa: A002
    return torch.ones(_shape_arg(shape), dtype=getattr(torch, dtype or config.get("floatX")))


def eye(size: Any, dtype: Any = None, name: str | None = None) -> torch.Tensor:  # noqa: A002
    """The identity matrix: ``size`` rows and columns, or ``(rows, cols)`` as in Keras 2
    (``np.eye(n, m)``)."""
    n, m = (int(d) for d in size) if isinstance(size, (list, tuple)) else (int(size), int(size))
    return torch.eye(n, m, dtype=getattr(torch, dtype or config.get("floatX")))


def arange(start: Any, stop: Any = None, step: int = 1, dtype: str = "int32") -> torch.Tensor:  # noqa: A002
    if stop is None:  # Keras 2: arange(-20) is empty, as np.arange(-20)
        start, stop = 0, builtins.max(start, 0)  # (this module defines K.max)
    return torch.arange(start, stop, step, dtype=getattr(torch, dtype))


def update(x: torch.Tensor, new_x: Any) -> torch.Tensor:
    """In place ``x <- new_x`` (Keras ``K.update``: torch runs it at once)."""
    with torch.no_grad():
        x.copy_(_t(new_x))
    return x


def update_add(x: torch.Tensor, increment: Any) -> torch.Tensor:
    with torch.no_grad():
        x.add_(_t(increment))
    return x


def update_sub(x: torch.Tensor, decrement: Any) -> torch.Tensor:
    with torch.no_grad():
        x.sub_(_t(decrement))
    return x


def eval(x: Any) -> np.ndarray:  # noqa: A001
    """A tensor's value as numpy (Keras ``K.eval``)."""
    if isinstance(x, KerasTensor):
        raise ValueError("K.eval needs a value; a symbolic tensor has none until a model runs: use "
                         "K.function([inputs], [x])([data])")
    return to_dense(x).detach().cpu().numpy()



# ---------------------------------------------------------------------- placeholders and small helpers


def placeholder(shape: Any = None, ndim: int | None = None, dtype: Any = None, sparse: bool = False,
                name: str | None = None) -> KerasTensor:
    """Keras ``K.placeholder``: a symbolic input of full ``shape`` (batch dim included; or ``ndim``
    unknown dims), fed through ``K.function([placeholder, ...], outputs)``.

    Example::

        >>> from arignote import backend as K
        >>> x = K.placeholder(shape=(1, 3)); f = K.function([x], [K.sum(K.square(x))])
        >>> f([np.array([[1.0, 2.0, 3.0]])])[0].tolist()
        14.0
    """
    if sparse:
        raise ValueError("K.placeholder(sparse=True) is not supported: arignote's graphs have no sparse "
                         "inputs; feed dense arrays (K.variable of a scipy.sparse matrix is a sparse tensor)")
    if shape is None:
        if ndim is None:
            raise ValueError("K.placeholder needs shape=(...) (batch dim included) or ndim=N")
        shape = (None,) * int(ndim)
    tensor = Input(batch_shape=tuple(shape), dtype=dtype or config.get("floatX"), name=name)
    tensor._bare_placeholder = True  # not a Keras tensor (K.is_keras_tensor), as in Keras 2
    return tensor


def is_placeholder(x: Any) -> bool:
    """True for what :func:`placeholder` (or ``Input``) returns."""
    history = getattr(x, "_keras_history", None)
    return isinstance(x, KerasTensor) and history is not None and type(history[0]).__name__ == "InputLayer"


def is_variable(x: Any) -> bool:
    """True for what :func:`variable` returns (a torch ``Parameter``)."""
    return isinstance(x, torch.nn.Parameter)


def is_sparse(x: Any) -> bool:
    """True only for a torch sparse tensor (``K.variable`` of a scipy.sparse matrix, what
    ``K.ctc_label_dense_to_sparse`` returns); arignote's layers and placeholders are dense."""
    return isinstance(x, torch.Tensor) and x.is_sparse


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


@symbolic
def size(x: Any, name: str | None = None) -> torch.Tensor:  # noqa: ARG001 - Keras's signature
    """The number of elements, as a scalar int tensor."""
    return torch.tensor(_t(x).numel())


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
