"""Keras 2's value semantics for augmented assignments in user code (``a *= mask``, ``y_pred /= s``).

Keras 2 tensors (Theano variables, TensorFlow tensors) are immutable: ``a *= b`` in a custom layer's
``call`` or a Lambda's function makes a new tensor and rebinds ``a``. arignote hands user code torch
tensors, where ``a *= b`` writes into ``a``: into a tensor autograd saved for the backward pass (the
widely copied Kaggle ``Attention`` layer's ``a = K.exp(eij); a *= K.cast(mask, K.floatx())`` then
fails with "modified by an inplace operation"), or into the layer's input (the caller's batch).

:func:`keras_value_semantics` is a context that, while user code runs, turns the in-place arithmetic
an augmented assignment makes (``+= -= *= /= //= **=``, detected from the caller's bytecode) into the
out-of-place operation, so Python rebinds the name as with Keras. It is active in custom layers'
``call``, Lambda functions and custom loss functions. Explicit in-place calls
(``x.add_(y)``, ``K.update``, ``K.moving_average_update``) keep their meaning, and so do augmented
assignments on a weight (an ``nn.Parameter``, e.g. a ``K.variable``) and any code inside arignote or
torch.

    >>> import torch
    >>> script = {"__name__": "a_users_script", "x": torch.ones(2)}  # user code: not arignote's
    >>> with keras_value_semantics():
    ...     exec("y = x; y *= 3", script)
    >>> script["x"].tolist(), script["y"].tolist()
    ([1.0, 1.0], [3.0, 3.0])
"""

from __future__ import annotations

import dis
import functools
import sys
import types
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

__all__ = ["keras_value_semantics", "is_user_layer", "is_user_function", "with_value_semantics", "augments",
           "layer_augments"]

_T = torch.Tensor
_OUT_OF_PLACE = {
    _T.add_: torch.add, _T.sub_: torch.sub, _T.mul_: torch.mul, _T.div_: torch.div,
    _T.floor_divide_: torch.floor_divide, _T.pow_: torch.pow, _T.true_divide_: torch.true_divide,
}
_BINARY_OP = dis.opmap.get("BINARY_OP")
_NB_INPLACE_FIRST = 13  # CPython's NB_INPLACE_ADD: BINARY_OP arguments from here on are augmented


def _augmented_assignment(frame: Any) -> bool:
    """Whether ``frame`` is user code executing an augmented assignment (``a op= b``) right now."""
    module = frame.f_globals.get("__name__", "")
    if module.split(".", 1)[0] in ("arignote", "torch"):
        return False
    code, at = frame.f_code.co_code, frame.f_lasti
    if _BINARY_OP is not None:
        return code[at] == _BINARY_OP and code[at + 1] >= _NB_INPLACE_FIRST
    return dis.opname[code[at]].startswith("INPLACE_")  # Python 3.10


class _ValueSemantics(TorchFunctionMode):
    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out_of_place = _OUT_OF_PLACE.get(func)
        if (out_of_place is not None and args and not isinstance(args[0], torch.nn.Parameter)
                and _augmented_assignment(sys._getframe(1))):
            return out_of_place(*args, **kwargs)
        return func(*args, **kwargs)


@functools.cache
def _code_augments(code: types.CodeType) -> bool:
    for ins in dis.get_instructions(code):
        if ins.opname.startswith("INPLACE_") or (
                ins.opname == "BINARY_OP" and ins.arg is not None and ins.arg >= _NB_INPLACE_FIRST):
            return True
    return any(_code_augments(c) for c in code.co_consts if isinstance(c, types.CodeType))


def augments(fn: Any) -> bool:
    """Whether ``fn``'s code (nested functions and lambdas included) has an augmented assignment,
    read once per code object: the mode (a Python call for every torch operation, about 2 us) runs
    only around the user code that needs it. A callable whose code cannot be read counts as one.

    >>> augments(lambda x: x * 2), augments(_scale_in_place)
    (False, True)
    """
    target = getattr(fn, "__func__", fn)
    code = getattr(target, "__code__", None)
    if code is None:  # a callable object: its class's __call__
        code = getattr(getattr(type(fn), "__call__", None), "__code__", None)  # noqa: B004
    return True if code is None else _code_augments(code)


def _scale_in_place(x: Any) -> Any:  # the doctest's example of user code that needs the mode
    x *= 2
    return x


@functools.cache
def layer_augments(cls: type) -> bool:
    """Whether a custom layer class has an augmented assignment in any method written outside
    arignote and torch (``call`` and the helpers it may call), read once per class."""
    for klass in cls.__mro__:
        module = getattr(klass, "__module__", "") or ""
        if module.split(".", 1)[0] in ("arignote", "torch", "builtins"):
            continue
        for value in vars(klass).values():
            value = getattr(value, "__func__", value)  # staticmethod / classmethod
            parts = [value.fget, value.fset] if isinstance(value, property) else [value]
            if any(isinstance(p, types.FunctionType) and augments(p) for p in parts):
                return True
    return False


def keras_value_semantics() -> TorchFunctionMode:
    """A context under which augmented assignments in Python code make new tensors (see the module)."""
    return _ValueSemantics()


def is_user_layer(layer: Any) -> bool:
    """Whether ``layer``'s class (its ``call``; ``layer`` may be the class) was written outside
    arignote: a custom layer."""
    cls = layer if isinstance(layer, type) else type(layer)
    module = getattr(cls.call, "__module__", "") or ""
    return not (module == "arignote" or module.startswith("arignote."))


def is_user_function(fn: Any) -> bool:
    """Whether ``fn`` (a loss function) was written outside arignote and torch."""
    module = getattr(fn, "__module__", None) or ""
    return module.split(".", 1)[0] not in ("arignote", "torch")


def with_value_semantics(fn: Any) -> Any:
    """``fn`` run under :func:`keras_value_semantics` (a user's loss: ``y_pred /= K.sum(y_pred, ...)``
    in the widely copied weighted categorical cross-entropy must not write into the model's output)."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with _ValueSemantics():
            return fn(*args, **kwargs)

    return run
