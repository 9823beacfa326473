"""torch optimizers for Keras 2 update rules: ``Adamax`` (torch has another rule) and ``RMSprop``
(torch's rule, in fewer operators a step).

torch's own ``Adamax`` adds epsilon inside the infinity norm (``u = max(b2 * u, |g| + eps)``) and
divides by ``u``; Keras 2.3.1 keeps ``u = max(b2 * u, |g|)`` and divides by ``u + eps``, so the
two part ways where gradients are near or below epsilon (measured: over 200 steps of gradients
spread from 1e-10 to 1e-3, weights differed by 0.2 % at the median and by up to 11x).
:class:`KerasAdamax` is Keras's rule, with torch's state names (``exp_avg``, ``exp_inf``,
``step``) and its multi-tensor (``foreach``) kernels or a per-tensor loop.

torch's ``RMSprop`` computes Keras 2.3.1's rule (``rho`` is its ``alpha``) but counts the steps in a
tensor per parameter (one operator per parameter and step, which the rule never reads) and runs inside
the profiler range every ``torch.optim.Optimizer.step`` opens (two more operators a step).
:class:`KerasRMSprop` is the same arithmetic, operator for operator (the weights are bit for bit
torch's), without either: 5 operators per parameter on the per-tensor loop, 5 multi-tensor kernels
with ``foreach``. Its state is torch's ``square_avg``, so checkpoints of either load into the other
(a ``step`` entry from torch's is kept and ignored).

Example::

    >>> import torch
    >>> w = torch.nn.Parameter(torch.zeros(2))
    >>> opt = KerasAdamax([w], lr=0.002)
    >>> w.grad = torch.tensor([1.0, -1.0]); opt.step()
    >>> [round(v, 6) for v in w.tolist()]   # lr / (1 - b1) * (1 - b1) * g / (|g| + eps)
    [-0.002, 0.002]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.optim import optimizer as _torch_optimizer

__all__ = ["KerasAdamax", "KerasRMSprop", "run_step"]


class KerasAdamax(torch.optim.Optimizer):
    """Keras 2.3.1's Adamax: ``m = b1 m + (1 - b1) g``, ``u = max(b2 u, |g|)``,
    ``p -= lr / (1 - b1^t) * m / (u + eps)`` (``lr`` already decayed by the caller)."""

    def __init__(self, params: Iterable[Any], lr: float = 0.002, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-7, foreach: bool = False) -> None:
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "foreach": foreach})

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            beta_1, beta_2 = group["betas"]
            states = []
            for p in params:
                state = self.state[p]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_inf"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                states.append(state)
            t = float(states[0]["step"])
            step_size = float(group["lr"]) / (1.0 - beta_1**t)
            grads = [p.grad for p in params]
            ms, us = [s["exp_avg"] for s in states], [s["exp_inf"] for s in states]
            if group["foreach"]:
                torch._foreach_lerp_(ms, grads, 1.0 - beta_1)
                torch._foreach_mul_(us, beta_2)
                torch._foreach_maximum_(us, torch._foreach_abs(grads))
                torch._foreach_addcdiv_(params, ms, torch._foreach_add(us, group["eps"]), -step_size)
            else:
                for p, g, m, u in zip(params, grads, ms, us):
                    m.lerp_(g, 1.0 - beta_1)
                    torch.maximum(u.mul_(beta_2), g.abs(), out=u)
                    p.addcdiv_(m, u + group["eps"], value=-step_size)
        return loss


def _has_step_hooks(opt: torch.optim.Optimizer) -> bool:
    return bool(opt._optimizer_step_pre_hooks or opt._optimizer_step_post_hooks
                or _torch_optimizer._global_optimizer_pre_hooks
                or _torch_optimizer._global_optimizer_post_hooks)


def run_step(opt: torch.optim.Optimizer) -> Any:
    """``opt.step()`` without the profiler range torch's ``Optimizer`` wraps around every step (two
    operators a step on the dispatcher, and a Python context) when nothing listens: no step hooks
    and no ``step`` patched on the instance (a torch ``LRScheduler`` counting the calls).

    >>> w = torch.nn.Parameter(torch.ones(1)); opt = torch.optim.SGD([w], lr=0.5)
    >>> w.grad = torch.ones(1); run_step(opt); w.tolist()
    [0.5]
    """
    raw = getattr(type(opt).step, "__wrapped__", None)
    if raw is None or "step" in vars(opt) or _has_step_hooks(opt):
        return opt.step()
    return raw(opt)


class KerasRMSprop(torch.optim.RMSprop):
    """Keras 2.3.1's RMSprop: ``a = rho a + (1 - rho) g^2``, ``p -= lr g / (sqrt(a) + eps)`` (``lr``
    already decayed by the caller; ``alpha`` is ``rho``, as torch spells it). The operators of
    torch's ``RMSprop`` without its step counters and profiler range (see the module docstring);
    step hooks (``register_step_pre_hook``, the global ones) still run, through torch's wrapper.
    A ``torch.optim.RMSprop`` (its param groups and ``isinstance``) without momentum or centering.

    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = KerasRMSprop([w], lr=0.1, alpha=0.9, eps=0.0)
    >>> w.grad = torch.tensor([2.0, -2.0]); opt.step()
    >>> [round(v, 5) for v in w.tolist()]   # 1 -+ 0.1 * 2 / sqrt(0.1 * 4)
    [0.68377, 1.31623]
    """

    def __init__(self, params: Iterable[Any], lr: float = 0.001, alpha: float = 0.9, eps: float = 1e-7,
                 foreach: bool = False) -> None:
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, foreach=foreach)

    def __setstate__(self, state: dict) -> None:
        # torch's RMSprop insists on a step counter in each parameter's state; this one keeps none
        torch.optim.Optimizer.__setstate__(self, state)
        for group in self.param_groups:
            for key, value in self.defaults.items():
                group.setdefault(key, value)

    @torch.no_grad()
    def _update(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params, grads, avgs = [], [], []
            self._init_group(group, params, grads, avgs)
            if not params:
                continue
            rho, eps, lr = group["alpha"], group["eps"], group["lr"]
            if group["foreach"]:
                _foreach_rmsprop(params, grads, avgs, lr, rho, eps)
            else:
                _loop_rmsprop(params, grads, avgs, lr, rho, eps)
        return loss

    def _init_group(self, group: dict, params: list, grads: list, square_avgs: list) -> None:  # type: ignore[override]
        """The parameters with a gradient, their gradients and accumulators (created at the first
        step). Named as torch's: under ``torch.compile`` Dynamo runs it eagerly, not in the graph."""
        for p in group["params"]:
            if p.grad is None:
                continue
            slots = self.state[p]
            avg = slots.get("square_avg")
            if avg is None:
                avg = slots["square_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            params.append(p)
            grads.append(p.grad)
            square_avgs.append(avg)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        if _has_step_hooks(self):
            return self._hooked_update(closure)
        return self._update(closure)

    # torch's Optimizer wraps ``step`` in its profiler range (and hook calls) unless it is marked
    step.hooked = True  # type: ignore[attr-defined]
    _hooked_update = torch.optim.Optimizer.profile_hook_step(_update)


def _loop_rmsprop(params: list, grads: list, avgs: list, lr: Any, rho: float, eps: float) -> None:
    """torch's per-tensor RMSprop arithmetic (``_single_tensor_rmsprop``): the same operators in the
    same order, so the weights are bit for bit torch's."""
    for p, g, a in zip(params, grads, avgs):
        a.mul_(rho).addcmul_(g, g, value=1 - rho)
        denom = a.sqrt().add_(eps)
        if isinstance(lr, torch.Tensor):  # a compiled step holds lr in a 0-d tensor
            p.addcdiv_(g, denom.div_(-lr))
        else:
            p.addcdiv_(g, denom, value=-lr)


def _foreach_rmsprop(params: list, grads: list, avgs: list, lr: Any, rho: float, eps: float) -> None:
    """torch's multi-tensor RMSprop arithmetic (``_multi_tensor_rmsprop``)."""
    torch._foreach_mul_(avgs, rho)
    torch._foreach_addcmul_(avgs, grads, grads, value=1 - rho)
    denom = torch._foreach_sqrt(avgs)
    torch._foreach_add_(denom, eps)
    if isinstance(lr, torch.Tensor):
        torch._foreach_div_(denom, -lr)
        torch._foreach_addcdiv_(params, grads, denom)
    else:
        torch._foreach_addcdiv_(params, grads, denom, value=-lr)
