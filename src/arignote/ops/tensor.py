"""Keras 2 ``keras.backend`` tensor functions on torch (re-exported by :mod:`arignote.backend`).

Each works on torch tensors (inside ``call``, ``Lambda``, custom losses and metrics) and on the
symbolic tensors of the functional API, where it records an operation node
(:func:`arignote.layers.op_layer.symbolic`). Axes, ``keepdims`` and argument names are Keras 2's
(``K.sum(x, axis=-1, keepdims=False)``; ``axis=None`` reduces everything).

The operations live by concern: :mod:`~arignote.ops.elementwise`, :mod:`~arignote.ops.reductions`,
:mod:`~arignote.ops.reshaping`, :mod:`~arignote.ops.queries`, :mod:`~arignote.ops.learning_phase`,
:mod:`~arignote.ops.crossentropy`, :mod:`~arignote.ops.variables` (their arguments:
:mod:`~arignote.ops.arguments`); this module is their one face, the one ``arignote.backend`` reads.

Example::

    >>> import torch
    >>> from arignote import backend as K
    >>> K.sum(K.square(torch.tensor([[1., 2.], [3., 4.]])), axis=-1)
    tensor([ 5., 25.])
"""

from __future__ import annotations

from arignote.backend.names import TENSOR_FUNCTIONS
from arignote.ops.arguments import (  # noqa: F401 - re-exported
    _t,
    _torch_dtype,
)
from arignote.ops.crossentropy import (  # noqa: F401 - re-exported
    binary_crossentropy,
    categorical_crossentropy,
    sparse_categorical_crossentropy,
)
from arignote.ops.elementwise import (  # noqa: F401 - re-exported
    abs,
    bias_add,
    cast,
    clip,
    cos,
    elu,
    equal,
    exp,
    greater,
    greater_equal,
    hard_sigmoid,
    less,
    less_equal,
    log,
    maximum,
    minimum,
    not_equal,
    ones_like,
    pow,
    relu,
    round,
    sigmoid,
    sign,
    sin,
    softmax,
    softplus,
    softsign,
    sqrt,
    square,
    stop_gradient,
    tanh,
    zeros_like,
)
from arignote.ops.learning_phase import (  # noqa: F401 - re-exported
    dropout,
    in_test_phase,
    in_train_phase,
    switch,
)
from arignote.ops.queries import (  # noqa: F401 - re-exported
    count_params,
    dtype,
    get_variable_shape,
    int_shape,
    is_keras_tensor,
    is_placeholder,
    is_sparse,
    is_tensor,
    is_variable,
    ndim,
    shape,
    size,
)
from arignote.ops.reductions import (  # noqa: F401 - re-exported
    all,
    any,
    argmax,
    argmin,
    cumprod,
    cumsum,
    l2_normalize,
    logsumexp,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)
from arignote.ops.reshaping import (  # noqa: F401 - re-exported
    batch_dot,
    batch_flatten,
    concatenate,
    dot,
    expand_dims,
    flatten,
    gather,
    identity,
    one_hot,
    permute_dimensions,
    repeat,
    repeat_elements,
    reshape,
    reverse,
    slice,
    squeeze,
    stack,
    tile,
    to_dense,
    transpose,
)
from arignote.ops.variables import (  # noqa: F401 - re-exported
    arange,
    constant,
    eval,
    eye,
    ones,
    placeholder,
    random_binomial,
    random_normal,
    random_uniform,
    truncated_normal,
    update,
    update_add,
    update_sub,
    variable,
    zeros,
)

__all__ = list(TENSOR_FUNCTIONS)
