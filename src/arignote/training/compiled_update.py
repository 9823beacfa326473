"""The compiled optimizer update (``jit_compile``): torch's ``step()`` of the built optimizer traced
into graphs of this trainer's own, with each param group's learning rate read from a 0-d tensor.

What goes wrong otherwise (torch 2.13; measured on a CPU, reasoned for a GPU from torch's source):

* **The graph breaks in torch's step.** ``Optimizer.step`` is wrapped in a profiler/hook wrapper and
  in ``_use_grad_for_differentiable``, which calls ``torch._dynamo.graph_break()`` before and after
  the update. The frames after a break are torch's own code objects, shared by every optimizer of
  the process, and Dynamo's cache (``recompile_limit``, 8) is per code object, guarded on the
  optimizer object: from the 9th model a process trains (a test suite, a hyper-parameter search),
  every update silently ran eagerly. Here the undecorated step (``inspect.unwrap``) is called under
  ``no_grad`` inside this trainer's own code object: one graph, no shared frame, no break.
* **A float lr is a constant of the graph.** Each new value (``decay``, ``K.set_value``, LR
  callbacks) recompiled. A 0-d tensor on the parameters' device is an input instead: a new value is
  one ``fill_`` (no host sync), read by the same graph.
* **A tensor lr outside the graph.** torch's eager paths do not all take one: foreach Adam/AdamW
  raise unless the group is ``capturable`` (``_init_group``: "lr as a Tensor is not supported for
  capturable=False and foreach=True"), and SGD, per-tensor Adagrad, Adadelta, NAdam and torch's
  RMSprop pass it as a Python scalar (``alpha=-lr``), an ``.item()`` per step: a host sync on a GPU
  (tests/test_compiled_update.py counts them). So the tensor is in the
  param group only while the compiled update runs; between steps the group holds the float, as an
  eager optimizer does, for whatever else reads it: an eager fallback, ``state_dict`` (checkpoints
  load into eager runs), GradScaler's host path, user code.
* **capturable.** Dynamo traces every group as ``capturable=True`` but runs the real ``_init_group``
  eagerly while tracing, where Adam checks the *real* flag. Dynamo sets that flag itself only for
  GPU parameters whose state is still empty: never on a CPU, and not when the state came from a
  checkpoint (or earlier eager steps) before the first compiled step, where foreach Adam on a GPU
  raised. The real flag says True while the compiled update runs and goes back after (torch's eager
  capturable path runs on GPUs only).
* **Other floats that change.** arignote's SGD folds an lr change into that step's momentum; torch's
  SGD branches on momentum (``if momentum != 0``), so Dynamo specializes it: a recompile per new
  value (every step under ``decay``). Under a compiled update the optimizer scales the momentum
  buffers instead (``Optimizer.fixed_group_floats``). Adam's epsilon hat (a new value every step)
  is passed to ``_foreach_add_`` as a Python scalar by torch's multi-tensor Adam (specialized, and
  a 0-d tensor there breaks the graph); its per-tensor Adam is traced instead (inductor fuses it
  anyway), with epsilon read from a 0-d tensor like the lr: one graph for the update.
* **Eager fallback.** Should Dynamo still run this trainer's update eagerly (its recompile limit,
  after many checkpoint reloads: each brings new state tensors), the function sees
  ``torch.compiler.is_compiling()`` False and puts the floats and flags back before torch's step.

torch's fused kernels (Adam, AdamW, SGD, Adagrad) run as they are: one kernel already, and
Dynamo does not trace them; Adamax (``optim_kernels.KerasAdamax``, which reads ``float()`` of its
step and lr) runs eagerly with a float lr. :func:`plan_update` is the decision, per device, as a pure
function.

Example::

    >>> p = plan_update("Adam", "cuda:0", torch.float16, fused=False, hooked=False, cudagraphs=True)
    >>> p.how, p.lr_device, p.lr_dtype, p.static_lr, p.during
    ('compiled', 'cuda:0', torch.float32, True, (('capturable', True), ('foreach', False)))
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from typing import Any

import torch
import torch.optim.optimizer as _torch_optimizer

from arignote.optimizers.kernels import _has_step_hooks, run_step
from arignote.training.compiled_grads import is_static, mark_static

__all__ = ["UpdatePlan", "plan_update", "CompiledUpdate", "settle_state"]

# torch optimizer classes whose step reads Python numbers out of tensors each step (``float(t)``):
# a graph break under Dynamo and, with a tensor lr, a host sync per step on a GPU
_HOST_SCALAR_STEPS = frozenset({"KerasAdamax"})
# group settings while the compiled update runs, per torch class (besides capturable): Adam's epsilon
# hat is a new float every step (optimizers.py); torch's multi-tensor Adam passes it to
# _foreach_add_ as a Python scalar, which Dynamo specializes (a recompile per step: measured), and a
# 0-d tensor there breaks the graph (a data-dependent .item()); its per-tensor Adam takes a tensor
_DURING = {"Adam": (("foreach", False),), "AdamW": (("foreach", False),)}
# the group floats read from 0-d tensors while the compiled update runs: lr, and Adam's epsilon hat
# (as a float it would turn symbolic after its first change: a CPU scalar input, which keeps inductor
# from CUDA graphs, "skipping cudagraphs due to cpu device")
_TENSORS = {"Adam": ("lr", "eps"), "AdamW": ("lr", "eps")}


@dataclass(frozen=True)
class UpdatePlan:
    """How a torch optimizer's step runs under ``jit_compile``: ``how`` is ``fused`` (torch's fused
    kernel, as it is), ``compiled`` or ``eager`` (with a float lr), ``why`` a few words; for
    ``compiled``, where the lr tensor lives (``lr_device``, ``lr_dtype``) and whether its address is
    static (``static_lr``: a CUDA graph then reads it in place instead of copying it in each replay),
    the group settings while it runs (``during``) and the group floats read from such tensors
    (``tensors``)."""

    how: str
    why: str
    lr_device: str | None = None
    lr_dtype: torch.dtype | None = None
    static_lr: bool = False
    during: tuple[tuple[str, Any], ...] = ()
    tensors: tuple[str, ...] = ("lr",)


def plan_update(optimizer: str, device: str, param_dtype: torch.dtype, fused: bool, hooked: bool,
                cudagraphs: bool) -> UpdatePlan:
    """The plan for torch optimizer class ``optimizer`` over parameters on ``device`` (``'cpu'``,
    ``'cuda:1'``, ...) of ``param_dtype``; ``fused``: its groups run torch's fused kernel;
    ``hooked``: ``step`` is patched on the instance (as torch's LR schedulers did); step hooks
    (``register_step_pre/post_hook``, torch's global ones: the data-parallel heartbeat's) do not count:
    :class:`CompiledUpdate` runs them around the compiled step, eagerly, as torch's wrapper
    does; ``cudagraphs``: the steps replay CUDA graphs (``reduce-overhead``).

    The lr tensor goes on the parameters' device (on a GPU: no copy to the device each step, and no
    CPU input that would keep inductor from CUDA graphs), float64 for float64 parameters and float32
    otherwise (half parameters too: torch's update math runs in float32).

    >>> plan_update("Adam", "cpu", torch.float32, fused=True, hooked=False, cudagraphs=False).how
    'fused'
    """
    if fused:
        return UpdatePlan("fused", "torch's fused kernel: one kernel already, which Dynamo does not trace")
    if hooked:
        return UpdatePlan("eager", "step() is patched on the optimizer (a torch LR scheduler's hook): "
                          "it runs eagerly")
    if optimizer in _HOST_SCALAR_STEPS:
        return UpdatePlan("eager", f"{optimizer}.step reads its step count and lr as Python floats "
                          "(a graph break)")
    where = torch.device(device)
    dtype = torch.float64 if param_dtype == torch.float64 else torch.float32
    return UpdatePlan("compiled", "traced into this trainer's graph", str(where), dtype,
                      static_lr=cudagraphs and where.type == "cuda",
                      during=(("capturable", True), *_DURING.get(optimizer, ())),
                      tensors=_TENSORS.get(optimizer, ("lr",)))


def settle_state(opt: torch.optim.Optimizer) -> int:
    """Under CUDA graphs, after a compiled update: copy every optimizer state tensor that is not a
    static address yet out of the graph's memory, mark it static, and mark the gradients static
    (DDP's bucket views replace the trainer's buffers at the first reduction); returns the copies.

    Why: a state tensor the update created (SGD's momentum buffer, made from the first gradient
    inside ``_single/_multi_tensor_sgd``, not in ``_init_group``) is an output of the update's graph,
    allocated in the CUDA-graph pool; the next compiled call (the next forward) starts a new
    generation and frees it (``cudagraph_trees.py``, ``dealloc_current_path_weakrefs``), and the
    next update would read freed memory. A non-static gradient is copied into the graph's memory
    at every replay (``_dynamo/variables/optimizer.py``). Once every tensor is static this is a scan.

    >>> w = torch.nn.Parameter(torch.ones(1)); opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> w.grad = torch.ones(1); opt.step(); settle_state(opt), settle_state(opt)
    (1, 0)
    """
    copied = 0
    for p, state in opt.state.items():
        grad = getattr(p, "grad", None)
        if grad is not None and not is_static(grad):
            mark_static(grad)
        for key, value in state.items():
            if isinstance(value, torch.Tensor) and not is_static(value):
                state[key] = value.clone()
                mark_static(state[key])
                copied += 1
    return copied


def _hooked(opt: torch.optim.Optimizer) -> bool:
    return "step" in vars(opt)


def _pre_hooks(opt: torch.optim.Optimizer) -> None:
    """The step pre-hooks, global first, as ``Optimizer.profile_hook_step`` (torch/optim/optimizer.py)
    calls them; ``step`` takes no argument here (no closure), so a hook's new arguments have nowhere
    to go: one is refused with torch's error."""
    torch_hooks = _torch_optimizer._global_optimizer_pre_hooks
    hooks = chain(torch_hooks.values(), opt._optimizer_step_pre_hooks.values())
    for hook in hooks:
        result = hook(opt, (opt,), {})
        if result is not None:
            raise RuntimeError(f"{hook} returned {result!r}: a step pre-hook of a compiled update "
                               "(jit_compile) must return None (its step() takes no arguments)")


def _post_hooks(opt: torch.optim.Optimizer) -> None:
    """The step post-hooks, the optimizer's first, as ``profile_hook_step`` calls them."""
    torch_hooks = _torch_optimizer._global_optimizer_post_hooks
    hooks = chain(opt._optimizer_step_post_hooks.values(), torch_hooks.values())
    for hook in hooks:
        hook(opt, (opt,), {})


class CompiledUpdate:
    """The torch step of ``optimizer`` (an :class:`arignote.optimizers.Optimizer`, built) as
    :func:`plan_update` says; ``compile(function, name)`` compiles a function under its own code
    object (:class:`arignote.training.compiled.CompiledSteps` does). Calling it runs one update.

    ``route`` is the plan of the first group; ``compiled_calls`` and ``eager_calls`` count the
    updates run each way (an eager one: fused, hooked, or Dynamo's fallback).
    """

    def __init__(self, optimizer: Any, compile: Callable[[Callable, str], Callable],
                 cudagraphs: bool) -> None:
        self.optimizer = optimizer
        self.cudagraphs = cudagraphs
        self._run = compile(self._traced, "arignote_optimizer_step")
        self._for: torch.optim.Optimizer | None = None  # the torch optimizer the lr tensors are for
        self._raw: Callable | None = None  # its class's step, undecorated
        self._slots: list[dict[str, torch.Tensor]] = []  # per param group: lr (eps) -> its 0-d tensor
        self._written: list[dict[str, float]] = []  # the float each holds
        self._during: list[tuple[tuple[str, Any], ...]] = []  # per group: settings while compiled
        self._saved: list[dict[str, Any]] = []  # each group's own values of those, around a call
        self._fell_back = False
        self.route: UpdatePlan | None = None
        self.compiled_calls = 0
        self.eager_calls = 0

    def _plan(self, group: dict, opt: torch.optim.Optimizer) -> UpdatePlan:
        param = group["params"][0] if group["params"] else torch.empty(0)
        return plan_update(type(opt).__name__, str(param.device), param.dtype, bool(group.get("fused")),
                           _hooked(opt), self.cudagraphs)

    def plan(self) -> UpdatePlan:
        """The plan for the optimizer as it is now (its first group's; a fused group's if any: one
        fused group runs torch's step for all, as it is)."""
        opt = self.optimizer.torch
        plans = [self._plan(group, opt) for group in opt.param_groups]
        return next((p for p in plans if p.how == "fused"), plans[0])

    def _prepare(self, opt: torch.optim.Optimizer) -> None:
        plans = [self._plan(group, opt) for group in opt.param_groups]
        self.route = self.plan()
        self._slots, self._written, self._during = [], [], []
        for plan, group in zip(plans, opt.param_groups):
            dtype, where = plan.lr_dtype or torch.float32, plan.lr_device or "cpu"
            slots = {key: torch.zeros((), dtype=dtype, device=where) for key in plan.tensors if key in group}
            for slot in slots.values() if plan.static_lr else ():
                torch._dynamo.mark_static_address(slot)
            self._slots.append(slots)
            self._written.append(dict.fromkeys(slots, float("nan")))
            self._during.append(plan.during)
        self._raw = inspect.unwrap(type(opt).step)
        self._for = opt
        if self.route.how == "compiled":
            self.optimizer.fixed_group_floats = True  # SGD: rescale momentum buffers, not momentum

    def __call__(self) -> None:
        opt = self.optimizer.torch
        if opt is not self._for or len(opt.param_groups) != len(self._slots):
            self._prepare(opt)
        if self.route.how != "compiled" or _hooked(opt):
            self.eager_calls += 1
            run_step(opt)
            return
        groups = opt.param_groups
        self._saved = [{key: group[key] for key in (*slots, *dict(during)) if key in group}
                       for group, slots, during in zip(groups, self._slots, self._during)]
        for i, group in enumerate(groups):
            for key, slot in self._slots[i].items():
                value = group[key]
                if isinstance(value, torch.Tensor):  # a tensor someone put there is read as it is
                    continue
                if value != self._written[i][key]:
                    slot.fill_(value)
                    self._written[i][key] = value
                group[key] = slot
            for key, value in self._during[i]:
                if key in group:
                    group[key] = value
        self._fell_back = False
        hooks = _has_step_hooks(opt)
        if hooks:
            _pre_hooks(opt)
        try:
            with torch.no_grad():
                self._run(opt, self._raw)
        finally:
            self._put_back(groups)
        if hooks:
            _post_hooks(opt)
        if self._fell_back:
            self.eager_calls += 1
        else:
            self.compiled_calls += 1
            if self.cudagraphs:
                self.copied_out += settle_state(opt)

    copied_out = 0  # state tensors copied out of a CUDA graph's memory (settle_state)

    def _put_back(self, groups: list[dict]) -> None:
        for group, saved in zip(groups, self._saved):
            group.update(saved)

    def _traced(self, opt: torch.optim.Optimizer, raw: Callable) -> None:
        if not torch.compiler.is_compiling():
            # Dynamo runs this frame eagerly: torch's eager rules, so the groups as an eager step has them
            self._fell_back = True
            self._put_back(opt.param_groups)
        raw(opt)
