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
with ``foreach``. Its checkpoints are torch's: ``state_dict()`` holds per parameter torch's ``step``
(a 0-d tensor, the steps taken, counted in Python outside the arithmetic) and ``square_avg``, so
either optimizer loads the other's and training continues identically; a param group with torch's
``momentum`` (``momentum_buffer``), ``centered``, ``weight_decay`` or ``maximize`` runs torch's own
RMSprop arithmetic and counters. ``one_pass=True`` (what arignote's ``RMSprop`` builds) runs the
per-tensor groups on the CPU as one fused kernel a step (:func:`_fused_rmsprop`: torch's fused Adam
with ``beta1 = 0`` at a saturated step count), the accumulators bit for bit, the weights within
float32 rounding of torch's loop, in a third of its time.

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
from torch.optim import rmsprop as _torch_rmsprop

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


def _step_tensor(steps: float) -> torch.Tensor:
    """A step counter as torch's RMSprop keeps it (a 0-d CPU tensor of the default scalar type)."""
    return torch.tensor(float(steps), dtype=_torch_optimizer._get_scalar_dtype())


def _torch_rule(group: dict) -> bool:
    """A param group that needs torch's RMSprop arithmetic (options Keras 2's rule does not have)."""
    return bool(group.get("momentum") or group.get("centered") or group.get("weight_decay")
                or group.get("maximize"))


class KerasRMSprop(torch.optim.RMSprop):
    """Keras 2.3.1's RMSprop: ``a = rho a + (1 - rho) g^2``, ``p -= lr g / (sqrt(a) + eps)`` (``lr``
    already decayed by the caller; ``alpha`` is ``rho``, as torch spells it). The operators of
    torch's ``RMSprop`` without its step counter tensors and profiler range (see the module
    docstring); step hooks (``register_step_pre_hook``, the global ones) still run, through torch's
    wrapper. A ``torch.optim.RMSprop`` (its param groups, ``isinstance`` and ``state_dict``):
    ``momentum``/``centered`` (torch's options, which Keras 2 lacks) run torch's arithmetic.

    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = KerasRMSprop([w], lr=0.1, alpha=0.9, eps=0.0)
    >>> w.grad = torch.tensor([2.0, -2.0]); opt.step()
    >>> [round(v, 5) for v in w.tolist()]   # 1 -+ 0.1 * 2 / sqrt(0.1 * 4)
    [0.68377, 1.31623]
    >>> sorted(opt.state_dict()["state"][0]), float(opt.state_dict()["state"][0]["step"])
    (['square_avg', 'step'], 1.0)
    """

    def __init__(self, params: Iterable[Any], lr: float = 0.001, alpha: float = 0.9, eps: float = 1e-7,
                 foreach: bool = False, momentum: float = 0.0, centered: bool = False,
                 one_pass: bool = False) -> None:
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, foreach=foreach, momentum=momentum,
                         centered=centered)
        # the per-tensor groups in one pass over each tensor (_fused_rmsprop: weights within a last
        # bit of torch's loop) where it can run; False: torch's operators, bit for bit
        self.one_pass = one_pass
        self._taken: dict[torch.Tensor, int] = {}  # steps per parameter run by the Keras rule
        self._counted = False  # the last step() counted its steps (not a compiled one)

    def __setstate__(self, state: dict) -> None:
        # torch's RMSprop insists on a step counter in each parameter's state; the Keras rule counts
        # its steps in ``_taken`` instead (see state_dict / load_state_dict)
        torch.optim.Optimizer.__setstate__(self, state)
        self.__dict__.setdefault("_taken", {})
        self.__dict__.setdefault("_counted", False)
        self.__dict__.setdefault("one_pass", False)
        for group in self.param_groups:
            for key, value in self.defaults.items():
                group.setdefault(key, value)

    def state_dict(self) -> dict:
        """torch's ``RMSprop`` state: per parameter ``step`` (a 0-d tensor) and ``square_avg`` (and
        ``momentum_buffer`` / ``grad_avg`` for a group with torch's momentum / centering)."""
        out = super().state_dict()
        index = 0
        for group in self.param_groups:
            for p in group["params"]:
                slots = out["state"].get(index)
                if slots is not None and "step" not in slots:
                    out["state"][index] = {"step": _step_tensor(self._taken.get(p, 0)), **slots}
                index += 1
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a ``state_dict`` of this class or of ``torch.optim.RMSprop`` (with or without ``step``)."""
        super().load_state_dict(state_dict)
        self._taken = {}
        for group in self.param_groups:
            if _torch_rule(group):  # torch's arithmetic keeps its own step tensors
                for p in group["params"]:
                    slots = self.state.get(p)
                    if slots and "step" not in slots:
                        slots["step"] = _step_tensor(0)
                continue
            for p in group["params"]:
                slots = self.state.get(p)
                if slots and "step" in slots:
                    self._taken[p] = int(float(slots.pop("step")))

    @torch.no_grad()
    def _update(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            if _torch_rule(group):
                self._torch_group(group)
                continue
            params, grads, avgs = [], [], []
            self._init_group(group, params, grads, avgs)
            if not params:
                continue
            rho, eps, lr = group["alpha"], group["eps"], group["lr"]
            if group["foreach"]:
                _foreach_rmsprop(params, grads, avgs, lr, rho, eps)
            elif self.one_pass and 0.0 <= rho < 1.0 and _one_pass(params, grads, avgs, lr):
                _fused_rmsprop(params, grads, avgs, lr, rho, eps)
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

    def _torch_group(self, group: dict) -> None:
        """One group on torch's RMSprop arithmetic (momentum, centered, weight decay, maximize)."""
        for p in group["params"]:  # a parameter the Keras rule stepped: its count becomes torch's counter
            slots = self.state.get(p)
            if slots and "step" not in slots:
                slots["step"] = _step_tensor(self._taken.pop(p, 0))
        params: list = []
        grads: list = []
        avgs: list = []
        grad_avgs: list = []
        buffers: list = []
        steps: list = []
        has_complex = torch.optim.RMSprop._init_group(
            self, group, params, grads, avgs, buffers, grad_avgs, steps)
        if not params:
            return
        options = {key: group[key] for key in ("foreach", "maximize", "differentiable", "capturable", "lr",
                                               "alpha", "eps", "weight_decay", "momentum", "centered")}
        _torch_rmsprop.rmsprop(params, grads, avgs, grad_avgs, buffers, steps, has_complex=has_complex,
                               **options)

    def _count(self) -> None:
        """One step more for each parameter the Keras rule just stepped (Python only: no operator)."""
        taken = self._taken
        for group in self.param_groups:
            if _torch_rule(group):
                continue
            for p in group["params"]:
                if p.grad is not None:
                    taken[p] = taken.get(p, 0) + 1

    def count_compiled_step(self) -> None:
        """Called after each ``step()``: counts the steps of one that ran compiled (Dynamo leaves the
        counting out of the graph, so it does not specialize on Python ints); an eager one counted."""
        if not self._counted:
            self._count()
        self._counted = False

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = self._hooked_update(closure) if _has_step_hooks(self) else self._update(closure)
        if not torch.compiler.is_compiling():
            self._count()
            self._counted = True
        return loss

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


# Adam's step counter for _fused_rmsprop: beta ** _SATURATED is 0.0 for every beta in [0, 1) (in
# float32 and float64), so both of Adam's bias corrections are exactly 1 (rho = 1 would make the
# second 0: such a group runs the loop)
_SATURATED = 3e38
_ONE_PASS_DTYPES = (torch.float32, torch.float64)


def _dense(t: torch.Tensor) -> bool:
    return (t.is_contiguous() or (t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last))
            or (t.dim() == 5 and t.is_contiguous(memory_format=torch.channels_last_3d)))


def _one_pass(params: list, grads: list, avgs: list, lr: Any) -> bool:
    """Whether :func:`_fused_rmsprop` runs this group: eager (Dynamo traces the loop), a float ``lr``,
    float32/float64 CPU tensors, each parameter dense with its gradient and accumulator laid out
    alike (the kernel walks the three memories in step: other strides would pair wrong elements)."""
    if isinstance(lr, torch.Tensor) or torch.compiler.is_compiling():
        return False
    return all(p.device.type == "cpu" and p.dtype in _ONE_PASS_DTYPES and g.dtype == p.dtype
               and not g.is_sparse and _dense(p) and p.stride() == g.stride() == a.stride()
               for p, g, a in zip(params, grads, avgs))


def _fused_rmsprop(params: list, grads: list, avgs: list, lr: float, rho: float, eps: float) -> None:
    """Keras 2's RMSprop in one pass over each tensor (torch's fused Adam CPU kernel): the per-tensor
    loop reads and writes each parameter-sized tensor five times (2 ms a step for the 669k weights
    of the 784-512-512-10 MLP on one core; 0.7 ms here). With ``beta1 = 0`` Adam's first moment is
    the gradient (the gradient's own buffer serves as it: rewritten with its own values), its second
    moment is ``a = rho a + (1 - rho) g^2``, and at a saturated step count both bias corrections are
    exactly 1: ``p -= lr g / (sqrt(a) + eps)``. ``square_avg`` comes out bit for bit the loop's; a
    weight can differ from the loop's in its last bit (the kernel rounds ``lr g / denom`` in another
    order: ~1 element in 10^4 a step)."""
    steps = [torch.tensor(_SATURATED, dtype=torch.float32)] * len(params)
    torch._fused_adam_(params, grads, grads, avgs, [], steps, lr=float(lr), beta1=0.0, beta2=rho,
                       weight_decay=0.0, eps=eps, amsgrad=False, maximize=False)


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
