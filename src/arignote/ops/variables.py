"""K's values that do not come from other tensors: variables (``K.variable``, read with ``K.eval``,
changed in place by ``K.update*``), constants (``K.constant``, ``K.zeros``, ``K.eye``, ``K.arange``),
random tensors (``K.random_normal``, ...: a ``seed`` uses its own generator and leaves torch's global
one alone) and placeholders (``K.placeholder``, a symbolic input for ``K.function``).

Example::

    >>> v = variable([1.0, 2.0]); _ = update_add(v, 1.0); eval(v).tolist()
    [2.0, 3.0]
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np
import torch

from arignote import config, random_state
from arignote.graph.tensor import KerasTensor
from arignote.layers.input_layer import Input
from arignote.layers.op_layer import symbolic
from arignote.ops.arguments import _shape_arg, _t
from arignote.ops.reshaping import to_dense

__all__ = [
    "random_normal", "truncated_normal", "random_uniform", "random_binomial", "variable", "constant",
    "zeros", "ones", "eye", "arange", "update", "update_add", "update_sub", "eval", "placeholder",
]


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
