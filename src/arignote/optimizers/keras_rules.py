"""The Keras 2 optimizers (``SGD``, ``RMSprop``, ``Adam``, ``Adadelta``, ``Adagrad``, ``Adamax``,
``Nadam``): each Keras 2 update rule on ``torch.optim``.

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

Example::

    >>> import torch
    >>> w = torch.nn.Parameter(torch.zeros(1))
    >>> opt = SGD(lr=0.1, momentum=0.9).build([w])
    >>> for _ in range(2):
    ...     opt.zero_grad(); w.sum().backward(); opt.step()
    >>> round(w.item(), 6)  # Keras: v = -0.1, then 0.9 * v - 0.1 = -0.19; w = -0.1 - 0.19
    -0.29
"""

from __future__ import annotations

import math
from typing import Any

import torch

from arignote import backend
from arignote.optimizers.base import Optimizer, _number
from arignote.optimizers.kernels import KerasAdamax, KerasRMSprop


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

