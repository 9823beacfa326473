"""The Keras 2 optimizer facade over a ``torch.optim`` optimizer: the arguments every optimizer takes
(``lr``/``learning_rate``, ``decay``, ``clipnorm``, ``clipvalue``), the decay schedule, the step,
the state dict and Keras 2.3.1's ``get_config``. The update rules are in
:mod:`arignote.optimizers.keras_rules`.

Example::

    >>> import torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = Optimizer(lr=0.5).build([w])  # torch's SGD without momentum
    >>> w.sum().backward(); opt.step(); w.tolist(), opt.iterations
    ([0.5, 0.5], 1)
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np
import torch

from arignote.backend.variables import HyperParameter
from arignote.optimizers.implementation import _IMPL_KEYS, _impl_kwargs, _keep_implementation
from arignote.optimizers.kernels import run_step


def _number(value: Any, what: str, cls: str, low: float = 0.0, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{cls}: {what} must be a number, got {value!r}")
    if value < low or (high is not None and value >= high):
        rng = f"in [{low}, {high})" if high is not None else f">= {low}"
        raise ValueError(f"{cls}: {what} must be {rng}, got {value!r}")
    return float(value)



class Optimizer:
    """Keras 2 optimizer facade over a ``torch.optim`` optimizer (``.torch`` once built).

    Contract used by the training loop: ``build(params)``, ``step()``, ``zero_grad()``, ``lr``
    (get/set, what LR callbacks change; ``decay`` applies on top), ``iterations``,
    ``state_dict()``/``load_state_dict()``, ``get_config()``.
    """

    _torch_cls: type = torch.optim.SGD
    _keras_keys: tuple[str, ...] = ()
    _variable_keys: tuple[str, ...] = ()  # of _keras_keys, those Keras 2.3.1 holds in float32 variables

    def __init__(
        self,
        lr: float | None = None,
        decay: float = 0.0,
        learning_rate: float | None = None,
        clipnorm: float | None = None,
        clipvalue: float | None = None,
        **hyper: Any,
    ) -> None:
        name = type(self).__name__
        if lr is not None and learning_rate is not None and lr != learning_rate:
            raise ValueError(f"{name}: got both lr={lr} and learning_rate={learning_rate}; pass one")
        chosen = lr if lr is not None else learning_rate
        self._lr = _number(self._default_lr if chosen is None else chosen, "lr", name)
        self.decay = _number(decay, "decay", name)
        self.clipnorm = None if clipnorm is None else _number(clipnorm, "clipnorm", name)
        self.clipvalue = None if clipvalue is None else _number(clipvalue, "clipvalue", name)
        for key in hyper:  # Keras 2 kwargs we do not know: name the culprit
            valid = ["lr", "learning_rate", "decay", "clipnorm", "clipvalue", *self._keras_keys]
            close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
            hint = f" Did you mean '{close[0]}'?" if close else f" Valid arguments: {', '.join(valid)}."
            raise TypeError(f"{name} got an unexpected keyword argument '{key}'.{hint}")
        self.iterations = 0
        self.torch: torch.optim.Optimizer | None = None
        self._params: list[torch.Tensor] = []
        self._applied_lr = self._lr  # the lr currently written in the torch param groups
        self._last_step_lr: float | None = None  # the lr of the previous step (SGD momentum)
        # set by a compiled update (training/compiled_update.py): keep the param groups' floats other
        # than lr fixed, since a graph holds them as constants (torch's SGD branches on momentum)
        self.fixed_group_floats = False

    _default_lr = 0.01

    # ---------------------------------------------------------------- torch mapping

    def _torch_kwargs(self) -> dict:
        return {}

    def build(self, params: Iterable[torch.Tensor]) -> Optimizer:
        """Create the torch optimizer over ``params`` (tensors or param-group dicts); returns self.
        A model without weights passes one empty group (``[{"params": []}]``): Keras 2 trains such a
        model (a Dropout or noise layer alone), updating nothing."""
        params = list(params)
        flat = [p for g in params for p in (g["params"] if isinstance(g, dict) else [g])]
        if not params:  # Keras 2.3.1 compiles and fits a model without weights: one empty group
            params = [{"params": []}]
        self._params = [p for p in flat if p.requires_grad]
        kwargs = {**self._torch_kwargs(), **_impl_kwargs(self._torch_cls, flat)}
        self.torch = self._torch_cls(params, lr=self._current_lr(), **kwargs)
        self._applied_lr = self._current_lr()
        return self

    def _current_lr(self) -> float:
        return self._lr / (1.0 + self.decay * self.iterations) if self.decay else self._lr

    def _set_group_lr(self, lr: float) -> None:
        for group in self.torch.param_groups:
            # a float, also over a tensor from a checkpoint: torch's eager foreach Adam rejects a tensor
            # lr and its other eager paths read one on the host (a compiled update puts its own tensor
            # in only while it runs: training/compiled_update.py)
            group["lr"] = lr
        self._applied_lr = lr

    def _before_step(self) -> None:
        """Per-step hook (Adam's epsilon hat, SGD's momentum rescale)."""

    def step(self, torch_step: Any = None) -> None:
        """Apply clipping and the decay schedule, then one torch step (``torch_step()`` when given:
        a compiled one); ``iterations += 1``."""
        if self.torch is None:
            raise RuntimeError(f"{type(self).__name__}.build(params) must be called before step()")
        if self.clipnorm is not None:
            torch.nn.utils.clip_grad_norm_(self._params, self.clipnorm, foreach=True)
        if self.clipvalue is not None:
            torch.nn.utils.clip_grad_value_(self._params, self.clipvalue, foreach=True)
        if self.decay:
            self._set_group_lr(self._current_lr())
        self._before_step()
        if torch_step is not None:
            torch_step()
            counted = getattr(self.torch, "count_compiled_step", None)
            if counted is not None:  # KerasRMSprop counts the steps of a compiled step() here
                counted()
        else:
            run_step(self.torch)
        self.iterations += 1

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients of the optimized parameters."""
        if self.torch is not None:
            self.torch.zero_grad(set_to_none=set_to_none)

    @property
    def lr(self) -> HyperParameter:
        """Base learning rate (Keras ``optimizer.lr``; a float that ``K.set_value`` can write);
        ``decay`` divides it per iteration."""
        return HyperParameter(self._lr, self, "lr")

    @lr.setter
    def lr(self, value: float) -> None:
        self._lr = _number(value, "lr", type(self).__name__)
        if self.torch is not None:
            self._set_group_lr(self._current_lr())

    learning_rate = lr

    # ---------------------------------------------------------------- state

    def state_dict(self) -> dict:
        """Torch-serializable state: the torch optimizer's, ``iterations`` and the base ``lr``."""
        if self.torch is None:
            raise RuntimeError(f"{type(self).__name__}.build(params) must be called before state_dict()")
        return {
            "torch": self.torch.state_dict(),
            "iterations": self.iterations,
            "lr": self._lr,
            "applied_lr": self._applied_lr,
            "last_step_lr": self._last_step_lr,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` output (after :meth:`build` on the same parameters)."""
        if self.torch is None:
            raise RuntimeError(f"{type(self).__name__}.build(params) must be called before load_state_dict()")
        impl = [{key: group[key] for key in _IMPL_KEYS if key in group} for group in self.torch.param_groups]
        self.torch.load_state_dict(state["torch"])
        _keep_implementation(self.torch, impl)
        # a slot in its parameter's memory layout: torch's fused kernels read both as raw memory, so a
        # contiguous momentum buffer (from a file) beside a channels-last kernel was applied scrambled
        for param, slots in self.torch.state.items():
            for key, value in slots.items():
                if torch.is_tensor(value) and value.shape == param.shape and value.stride() != param.stride():
                    slots[key] = torch.empty_like(param, dtype=value.dtype).copy_(value)
        self.iterations = int(state["iterations"])
        self._lr = float(state["lr"])
        self._applied_lr = float(state.get("applied_lr", self._current_lr()))
        self._last_step_lr = state.get("last_step_lr")
        self._set_group_lr(self._applied_lr)

    def get_config(self) -> dict:
        """Keras 2.3.1's ``get_config``: the constructor arguments, ``learning_rate`` spelled as 2.3.1
        does, and the values Keras keeps in backend variables (``learning_rate``, ``decay`` and the
        :attr:`_variable_keys`) read back as float32 numbers, e.g. ``lr=0.01`` gives
        ``0.009999999776482582``, as in Keras 2.3.1 (``from_config`` takes either spelling)."""
        cfg = self._exact_config()
        for key in ("learning_rate", "decay", *self._variable_keys):
            if key in cfg:
                cfg[key] = _f32(cfg[key])
        return cfg

    def _exact_config(self) -> dict:
        """:meth:`get_config` with the numbers as given (what arignote's files record: Keras 2.3.1
        reads them either way)."""
        cfg = {"learning_rate": self._lr, "decay": self.decay,
               **{k: getattr(self, k) for k in self._keras_keys}}
        if self.clipnorm is not None:
            cfg["clipnorm"] = self.clipnorm
        if self.clipvalue is not None:
            cfg["clipvalue"] = self.clipvalue
        return cfg

    @classmethod
    def from_config(cls, config: dict) -> Optimizer:
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _f32(value: float) -> float:
    """A number as Keras 2.3.1's ``K.get_value`` of a float32 variable returns it."""
    return float(np.float32(value))

