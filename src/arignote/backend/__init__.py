"""Keras ``backend`` functions that scripts call: data format, floatX, epsilon, clear_session,
``get_value``/``set_value`` (an optimizer's ``lr``, a tensor).

``floatx()`` reads the ``floatX`` flag of :mod:`arignote.config`; ``set_floatx`` sets it from code.

Example::

    >>> from arignote import backend as K
    >>> K.image_data_format(), K.floatx(), K.epsilon()
    ('channels_last', 'float32', 1e-07)
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from typing import Any

from arignote.backend.common import (
    cast_to_floatx,
    eager,
    epsilon,
    floatx,
    get_uid,
    image_data_format,
    image_dim_ordering,
    normalize_data_format,
    reset_uids,
    set_epsilon,
    set_floatx,
    set_image_data_format,
    set_image_dim_ordering,
    symbolic,
)
from arignote.backend.names import CONTROL_FUNCTIONS, GRAPH_FUNCTIONS, NN_FUNCTIONS, TENSOR_FUNCTIONS
from arignote.backend.variables import HyperParameter
from arignote.errors import KerasNameMissing, keras_names_missing

__all__ = [
    *TENSOR_FUNCTIONS,
    *GRAPH_FUNCTIONS,
    *NN_FUNCTIONS,
    *CONTROL_FUNCTIONS,
    "backend",
    "image_data_format",
    "set_image_data_format",
    "image_dim_ordering",  # Keras 2.0-2.2's legacy pair
    "set_image_dim_ordering",
    "floatx",
    "set_floatx",
    "epsilon",
    "set_epsilon",
    "clear_session",
    "get_uid",
    "reset_uids",
    "get_value",
    "set_value",
    "batch_get_value",
    "batch_set_value",
    "cast_to_floatx",
    "normalize_data_format",
    "name_scope",
    "symbolic",
    "eager",
]


def backend() -> str:
    """The engine's name, ``'torch'`` (Keras returns ``'tensorflow'``, ``'theano'``...)."""
    return "torch"


def clear_session() -> None:
    """Reset layer auto-names (the next ``Dense`` is ``dense_1`` again) and un-pin a phase
    ``set_learning_phase`` pinned, as Keras 2.3.1 (its TensorFlow backend's new graph) does."""
    from arignote.graph import state  # why: the graph package loads with the first model, not with K

    reset_uids()
    state.force_phase(None)


@contextlib.contextmanager
def name_scope(name: str) -> Iterator[None]:
    """Keras 2 ``K.name_scope``: the operations run inside show as one range named ``name`` in
    ``torch.profiler`` traces (arignote's tensors carry no names to prefix).

    >>> with name_scope("attention"):
    ...     pass
    """
    from torch.profiler import record_function  # torch loads on first use: `import backend` stays light

    with record_function(str(name)):
        yield


def get_value(x: Any) -> Any:
    """Keras 2 ``K.get_value``: an optimizer hyper-parameter (``model.optimizer.lr``) as a float,
    a tensor as a numpy array, a number or array as it is.

    >>> from arignote.optimizers import Adam
    >>> get_value(Adam(lr=0.001).lr)
    0.001
    """
    if isinstance(x, HyperParameter):
        return x.value()
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch tensor
        return x.detach().cpu().numpy()
    return x


def set_value(x: Any, value: Any) -> None:
    """Keras 2 ``K.set_value``: write ``value`` into an optimizer hyper-parameter
    (``K.set_value(model.optimizer.lr, 1e-4)``) or, in place, into a tensor of the same shape."""
    if isinstance(x, HyperParameter):
        x.assign(value)
        return
    if hasattr(x, "copy_") and hasattr(x, "shape"):  # a torch tensor (a weight, a buffer)
        import torch

        new = torch.as_tensor(value, dtype=x.dtype, device=x.device)
        if tuple(new.shape) != tuple(x.shape):
            raise ValueError(f"set_value: the value has shape {tuple(new.shape)}, the tensor "
                             f"{tuple(x.shape)}; pass an array of the tensor's shape")
        with torch.no_grad():
            write = getattr(x, "_keras_write", None)  # a Keras weight that is a reordered copy (GRU gates)
            write(new) if write is not None else x.copy_(new)
        return
    raise TypeError(f"set_value: a {type(x).__name__} is not a variable; pass model.optimizer.lr "
                    "(or learning_rate) or a tensor, or assign the attribute directly "
                    "(e.g. model.optimizer.decay = 1e-6)")


def batch_get_value(xs: Any) -> list:
    """``[get_value(x) for x in xs]``."""
    return [get_value(x) for x in xs]


def batch_set_value(pairs: Any) -> None:
    """``set_value(x, v)`` for each ``(x, v)`` pair."""
    for x, value in pairs:
        set_value(x, value)


# the tensor functions (K.sum, K.dot, K.function, ...) load torch: they arrive on first use, so that
# `import arignote.backend` (image_data_format, floatx) stays light
_LAZY = {**{name: "arignote.ops.tensor" for name in TENSOR_FUNCTIONS},
         **{name: "arignote.ops.function" for name in GRAPH_FUNCTIONS},
         **{name: "arignote.ops.nn" for name in NN_FUNCTIONS},
         **{name: "arignote.ops.control" for name in CONTROL_FUNCTIONS}}
_LAZY_TARGETS = _LAZY  # read by tests/test_import_graph.py as this face's edges


# Keras 2.3 backend functions arignote deliberately does not provide, with what to use instead (every
# other keras.backend function of Keras 2.3.1 is here); such a name raises NotProvidedError saying
# what to use. The TensorFlow backend's session pair: scripts set a tf.Session's GPU options with it
_SESSION = ("arignote's memory flags (there is no TensorFlow session): config.gpu_options.allow_growth "
            "is the default (the CUDA caching allocator grows on demand), per_process_gpu_memory_fraction"
            "=0.4 is memory.limit=40%, and memory.preallocate=0.8 takes 80% up front; e.g. "
            "arignote.configure(memory_limit='40%') or ARIGNOTE_FLAGS=memory.limit=40%")
NOT_PROVIDED: dict[str, str] = {"get_session": _SESSION, "set_session": _SESSION}

#: Keras 2's ``keras.backend.load_backend`` (the module that read ``keras.json`` and picked one of three
#: backends; published code and tests import it): here this module, the one backend there is
#: (``load_backend.backend() == 'torch'``). Settings come from arignote's flags, not ``keras.json``.
load_backend = sys.modules[__name__]


#: The error a left-out backend name raises (kept under its old name; it is :class:`KerasNameMissing`).
NotProvidedError = KerasNameMissing

_not_provided = keras_names_missing("arignote.backend", NOT_PROVIDED, deliberate=True)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    return _not_provided(name)
