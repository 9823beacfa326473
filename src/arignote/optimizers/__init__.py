"""Keras 2 optimizers (``SGD``, ``RMSprop``, ``Adam``, ``Adadelta``, ``Adagrad``, ``Adamax``, ``Nadam``)
on ``torch.optim``.

Each update is numerically Keras 2's rule, run by torch's multi-tensor (``foreach``) or fused
kernels:

* ``decay``: ``lr_t = lr / (1 + decay * iterations)`` (iterations = steps done before this one),
  written into the torch param groups before each step. Nothing happens per step when decay is 0.
* SGD momentum: Keras keeps ``v = momentum * v - lr_t * g``; torch keeps ``b = momentum * b + g``
  and applies ``lr_t * b``. They agree when ``v = -lr * b``; when ``lr`` changes (decay, LR
  callbacks) the buffer must be scaled by ``lr_prev / lr``: folded into that step's momentum
  (free), or with nesterov or a compiled update (whose graph holds momentum as a constant) a
  multi-tensor multiply, so the two stay identical.
  Nesterov: Keras ``p += momentum * v - lr_t * g`` = torch's nesterov step.
* RMSprop: both compute ``p -= lr * g / (sqrt(a) + eps)`` (``rho`` is torch's ``alpha``).
* Adam: Keras uses ``lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)`` ("epsilon hat"),
  torch ``lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``; setting torch's eps to
  ``eps / sqrt(1 - b2^t)`` each step makes them identical (also with ``amsgrad``).
* Adagrad / Adadelta: same formulas as torch (Keras epsilon defaults, ``initial_accumulator_value=0``).

Keras 2 spellings ``lr`` and ``decay`` are accepted, as are ``learning_rate``, ``clipnorm`` and
``clipvalue``. Lowercase aliases (``optimizers.rmsprop``) exist as in Keras 2.

Example::

    >>> import torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = SGD(lr=0.5).build([w])
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

from arignote import backend, config
from arignote.backend.variables import HyperParameter
from arignote.devices import fastpaths
from arignote.errors import keras_names_missing
from arignote.optimizers.kernels import KerasAdamax, KerasRMSprop, run_step

__all__ = ["Optimizer", "HyperParameter", "SGD", "RMSprop", "Adam", "Adadelta", "Adagrad", "Adamax", "Nadam",
           "get", "serialize", "deserialize", "sgd", "rmsprop", "adam", "adadelta", "adagrad", "adamax",
           "nadam"]  # fmt: skip


def _number(value: Any, what: str, cls: str, low: float = 0.0, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{cls}: {what} must be a number, got {value!r}")
    if value < low or (high is not None and value >= high):
        rng = f"in [{low}, {high})" if high is not None else f">= {low}"
        raise ValueError(f"{cls}: {what} must be {rng}, got {value!r}")
    return float(value)


def _impl_kwargs(torch_cls: type, params: list[torch.Tensor]) -> dict:
    """torch's implementation the ``optimizer.impl`` flag and the params allow
    (:func:`arignote.devices.fastpaths.optimizer_impl`): fused where torch has a kernel; else
    foreach on accelerators and the per-tensor loop on CPU (measured on the MLP 784-512-512-10 at
    batch 128 on 2 CPU cores: foreach RMSprop was 5-40 % slower a step than the per-tensor loop)."""
    devices = {p.device.type for p in params}
    all_float = all(p.is_floating_point() for p in params)
    name = torch_cls.__name__.removeprefix("Keras")  # optim_kernels' KerasRMSprop runs the RMSprop rule
    impl = fastpaths.optimizer_impl(config.get, name, devices, all_float).value
    if impl == "fused":
        return {"fused": True}
    return {"foreach": impl == "foreach"}


# how torch runs the update: chosen for this run's devices when built (optimizer.impl), not by a file
_IMPL_KEYS = ("foreach", "fused", "capturable", "differentiable")
# per-parameter scalars torch keeps on the CPU unless the group is capturable or fused
_HOST_SCALARS = ("step", "mu_product")


def _keep_implementation(opt: torch.optim.Optimizer, impl: list[dict]) -> None:
    """After ``opt.load_state_dict``: the groups' implementation flags back to ``impl`` (torch takes a
    file's: a GPU run's ``capturable`` fails a CPU run's eager step, and a fused run's ``fused=True``
    would override a run set to ``optimizer.impl=foreach``), and the step counters where that
    implementation keeps them: on the CPU unless capturable or fused (a compiled GPU run leaves them
    on the GPU; torch's eager update would read each with ``.item()``, a host sync per parameter and
    step)."""
    for group, flags in zip(opt.param_groups, impl):
        group.update(flags)
        on_device = bool(group.get("capturable") or group.get("fused"))
        for param in group["params"]:
            slots = opt.state.get(param, {})
            for key in _HOST_SCALARS:
                value = slots.get(key)
                if torch.is_tensor(value):
                    where = param.device if on_device else torch.device("cpu")
                    dtype = torch.float32 if group.get("fused") else value.dtype
                    if value.device != where or value.dtype != dtype:
                        slots[key] = value.to(device=where, dtype=dtype)


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


class SGD(Optimizer):
    """Stochastic gradient descent: ``SGD(lr=0.01, momentum=0.0, decay=0.0, nesterov=False)``."""

    _torch_cls = torch.optim.SGD
    _keras_keys = ("momentum", "nesterov")
    _variable_keys = ("momentum",)
    _default_lr = 0.01

    def __init__(
        self,
        lr: float | None = None,
        momentum: float = 0.0,
        decay: float = 0.0,
        nesterov: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(lr=lr, decay=decay, **kwargs)
        self.momentum = _number(momentum, "momentum", "SGD")
        self.nesterov = bool(nesterov)
        if self.nesterov and not self.momentum:
            raise ValueError("SGD: nesterov=True needs momentum > 0")

    def _torch_kwargs(self) -> dict:
        return {"momentum": self.momentum, "nesterov": self.nesterov}

    def _before_step(self) -> None:
        # Keras's velocity v = -lr * buffer must survive lr changes (decay, LR callbacks): scale the
        # buffer by lr_prev / lr. Without nesterov that is free: fold it into this step's momentum.
        if not self.momentum:
            return
        lr, prev = self._applied_lr, self._last_step_lr
        ratio = prev / lr if prev is not None and lr > 0 else 1.0
        if self.nesterov or self.fixed_group_floats:
            if ratio != 1.0:
                bufs = [s["momentum_buffer"] for s in self.torch.state.values()
                        if s.get("momentum_buffer") is not None]  # fmt: skip
                if bufs:
                    torch._foreach_mul_(bufs, ratio)
            for group in self.torch.param_groups:  # a folded value may come from a checkpoint
                group["momentum"] = self.momentum
        else:
            for group in self.torch.param_groups:
                group["momentum"] = self.momentum * ratio
        self._last_step_lr = lr

class RMSprop(Optimizer):
    """``RMSprop(lr=0.001, rho=0.9, epsilon=1e-7, decay=0.0)`` (Keras 2; torch's ``alpha`` is ``rho``),
    run by :class:`arignote.optimizers.kernels.KerasRMSprop`: torch's arithmetic without its step counter
    tensors (its ``state_dict`` is torch's, ``step`` included), on the CPU in one pass over each
    tensor (``one_pass``: a weight may differ from torch's loop in its last bit)."""

    _torch_cls = KerasRMSprop
    _keras_keys = ("rho", "epsilon")
    _variable_keys = ("rho",)
    _default_lr = 0.001

    def __init__(
        self,
        lr: float | None = None,
        rho: float = 0.9,
        epsilon: float | None = None,
        decay: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(lr=lr, decay=decay, **kwargs)
        self.rho = _number(rho, "rho", "RMSprop", 0.0, 1.0)
        self.epsilon = _default_eps(epsilon, "RMSprop")

    def _torch_kwargs(self) -> dict:
        return {"alpha": self.rho, "eps": self.epsilon, "one_pass": True}


class Adam(Optimizer):
    """``Adam(lr=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, decay=0.0, amsgrad=False)`` (Keras 2)."""

    _torch_cls = torch.optim.Adam
    _keras_keys = ("beta_1", "beta_2", "epsilon", "amsgrad")
    _variable_keys = ("beta_1", "beta_2")
    _default_lr = 0.001

    def __init__(
        self,
        lr: float | None = None,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float | None = None,
        decay: float = 0.0,
        amsgrad: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(lr=lr, decay=decay, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = _moments(beta_1, beta_2, epsilon, type(self).__name__)
        self.amsgrad = bool(amsgrad)

    def _torch_kwargs(self) -> dict:
        return {"betas": (self.beta_1, self.beta_2), "eps": self.epsilon, "amsgrad": self.amsgrad}

    def _before_step(self) -> None:
        # Keras's epsilon is "epsilon hat": torch's eps = eps / sqrt(1 - beta_2^t) gives the same update
        t = self.iterations + 1
        eps = self.epsilon / math.sqrt(1.0 - self.beta_2**t)
        for group in self.torch.param_groups:
            group["eps"] = eps


class Adagrad(Optimizer):
    """``Adagrad(lr=0.01, epsilon=1e-7, decay=0.0)`` (Keras 2)."""

    _torch_cls = torch.optim.Adagrad
    _keras_keys = ("epsilon",)
    _default_lr = 0.01

    def __init__(
        self, lr: float | None = None, epsilon: float | None = None, decay: float = 0.0, **kwargs: Any
    ) -> None:
        super().__init__(lr=lr, decay=decay, **kwargs)
        self.epsilon = _default_eps(epsilon, "Adagrad")

    def _torch_kwargs(self) -> dict:
        return {"eps": self.epsilon, "initial_accumulator_value": 0.0}


class Adadelta(Optimizer):
    """``Adadelta(lr=1.0, rho=0.95, epsilon=1e-7, decay=0.0)`` (Keras 2)."""

    _torch_cls = torch.optim.Adadelta
    _keras_keys = ("rho", "epsilon")
    _default_lr = 1.0

    def __init__(
        self,
        lr: float | None = None,
        rho: float = 0.95,
        epsilon: float | None = None,
        decay: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(lr=lr, decay=decay, **kwargs)
        self.rho = _number(rho, "rho", "Adadelta", 0.0, 1.0)
        self.epsilon = _default_eps(epsilon, "Adadelta")

    def _torch_kwargs(self) -> dict:
        return {"rho": self.rho, "eps": self.epsilon}


class Adamax(Optimizer):
    """``Adamax(lr=0.002, beta_1=0.9, beta_2=0.999, epsilon=1e-7, decay=0.0)`` (Keras 2.3.1's rule:
    ``u = max(beta_2 * u, |g|)``, ``p -= lr / (1 - beta_1^t) * m / (u + epsilon)``; torch's own
    Adamax puts epsilon inside the max, so :class:`arignote.optimizers.kernels.KerasAdamax` runs it)."""

    _torch_cls = KerasAdamax
    _keras_keys = ("beta_1", "beta_2", "epsilon")
    _variable_keys = ("beta_1", "beta_2")
    _default_lr = 0.002

    def __init__(
        self,
        lr: float | None = None,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float | None = None,
        decay: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(lr=lr, decay=decay, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = _moments(beta_1, beta_2, epsilon, type(self).__name__)

    def _torch_kwargs(self) -> dict:
        return {"betas": (self.beta_1, self.beta_2), "eps": self.epsilon}


class Nadam(Optimizer):
    """``Nadam(lr=0.002, beta_1=0.9, beta_2=0.999, epsilon=1e-7, schedule_decay=0.004)`` (Keras 2.3.1:
    Adam with Nesterov momentum and the momentum schedule ``beta_1 * (1 - 0.5 * 0.96^(t *
    schedule_decay))``). torch's NAdam computes exactly this rule (its ``momentum_decay`` is
    ``schedule_decay``; its ``mu_product`` is Keras's ``m_schedule``). Keras 2.3.1's Nadam has no
    ``decay`` argument; neither has this one."""

    _torch_cls = torch.optim.NAdam
    _keras_keys = ("beta_1", "beta_2", "epsilon", "schedule_decay")
    _variable_keys = ("beta_1", "beta_2")
    _default_lr = 0.002

    def __init__(
        self,
        lr: float | None = None,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float | None = None,
        schedule_decay: float = 0.004,
        **kwargs: Any,
    ) -> None:
        if kwargs.get("decay"):
            raise TypeError("Nadam got an unexpected keyword argument 'decay' (Keras 2.3.1's Nadam has none; "
                            "schedule_decay= sets its momentum schedule, LearningRateScheduler its lr)")
        kwargs.pop("decay", None)
        super().__init__(lr=lr, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = _moments(beta_1, beta_2, epsilon, type(self).__name__)
        self.schedule_decay = _number(schedule_decay, "schedule_decay", "Nadam")

    def _torch_kwargs(self) -> dict:
        return {"betas": (self.beta_1, self.beta_2), "eps": self.epsilon,
                "momentum_decay": self.schedule_decay}

    def _exact_config(self) -> dict:
        cfg = super()._exact_config()
        cfg.pop("decay", None)  # Keras 2.3.1's Nadam has no decay
        return cfg


def _moments(beta_1: float, beta_2: float, epsilon: float | None, cls: str) -> tuple[float, float, float]:
    """The Adam family's checked ``beta_1``, ``beta_2`` (each in [0, 1)) and ``epsilon``."""
    return (_number(beta_1, "beta_1", cls, 0.0, 1.0), _number(beta_2, "beta_2", cls, 0.0, 1.0),
            _default_eps(epsilon, cls))


def _default_eps(epsilon: float | None, cls: str) -> float:
    if epsilon is None:
        return backend.epsilon()
    return _number(epsilon, "epsilon", cls)


# Keras 2 lowercase aliases
sgd, rmsprop, adam, adadelta, adagrad, adamax, nadam = SGD, RMSprop, Adam, Adadelta, Adagrad, Adamax, Nadam

_CLASSES = {"sgd": SGD, "rmsprop": RMSprop, "adam": Adam, "adadelta": Adadelta, "adagrad": Adagrad,
            "adamax": Adamax, "nadam": Nadam}


def get(identifier: str | Optimizer | dict) -> Optimizer:
    """An :class:`Optimizer` from a name (``'rmsprop'``, defaults), an instance, or a serialized dict.

    Example::

        >>> get("adam").lr
        0.001
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        cls = _CLASSES.get(str(identifier.get("class_name", "")).lower())
        if cls is None:
            raise ValueError(f"unknown optimizer class in {identifier!r}; valid: {', '.join(_CLASSES)}")
        return cls.from_config(identifier.get("config", {}))
    if isinstance(identifier, str):
        cls = _CLASSES.get(identifier.lower())
        if cls is None:
            close = difflib.get_close_matches(identifier.lower(), list(_CLASSES), n=1, cutoff=0.5)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ValueError(
                f"unknown optimizer '{identifier}'.{hint} Valid optimizers: {', '.join(_CLASSES)}"
            )
        return cls()
    if isinstance(identifier, torch.optim.Optimizer):
        raise ValueError(
            "a torch.optim optimizer is already bound to parameters; pass an arignote optimizer "
            "(e.g. optimizers.Adam(lr=1e-3)) or its name"
        )
    raise ValueError(f"an optimizer is a name such as 'rmsprop' or an Optimizer, got {identifier!r}")


def serialize(optimizer: Optimizer) -> dict:
    """``{"class_name": "Adam", "config": {...}}`` (Keras format)."""
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config: dict, custom_objects: dict | None = None) -> Optimizer:
    """An optimizer from :func:`serialize`'s ``{"class_name", "config"}`` (``custom_objects`` first).
    As Keras 2.3.1's, it lowercases a built-in optimizer's ``class_name`` in the dict it is given
    (``'SGD'`` -> ``'sgd'``, the name of its lowercase alias): code comparing configs after a
    round trip relies on that."""
    name = config.get("class_name") if isinstance(config, dict) else None
    if custom_objects and name in custom_objects:
        return custom_objects[name].from_config(config.get("config", {}))
    if isinstance(name, str) and name.lower() in _CLASSES:
        config["class_name"] = name.lower()
    return get(config)


# Keras 2.3.1 names not provided yet: a clear error instead of a bare AttributeError
__getattr__ = keras_names_missing('arignote.optimizers', {
    'TFOptimizer': 'an arignote optimizer (SGD, RMSprop, Adam, Adadelta, Adagrad, Adamax, Nadam): '
                   'TensorFlow optimizers do not run on PyTorch',
    'clip_norm': "the optimizer's clipnorm= argument",
})
