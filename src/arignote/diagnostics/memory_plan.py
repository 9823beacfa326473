"""The memory plan shown before the first step: will this batch fit on this device?

Parameters, gradients and optimizer state are counted from the model and optimizer; activations
are measured from two small forward passes on the device (the bytes autograd saves for backward,
at 2 sizes, so the per-sample cost is separated from the fixed part); the sum for the chosen batch
is compared with what the device offers under the memory policy (on the CPU: available RAM).

``fit`` runs those two forward passes only when the plan is shown (``verbose`` on rank 0, or a later
``model.summary()``): :class:`FitPlan` keeps the few samples and measures on first use. A silent
``fit`` still warns when the counted part alone (no forward pass) does not fit.

Example (the free RAM varies: ``...``)::

    >>> import torch
    >>> from torch.nn import Linear, ReLU
    >>> mlp = torch.nn.Sequential(Linear(784, 512), ReLU(), Linear(512, 512), ReLU(), Linear(512, 10))
    >>> x, y = torch.randn(8, 784), torch.randint(0, 10, (8,))
    >>> adam = torch.optim.Adam(mlp.parameters())
    >>> plan = plan_memory(mlp, x, y, loss_fn=torch.nn.functional.cross_entropy, optimizer=adam, batch=256)
    >>> print(plan.render())
    Memory plan for batch 256 on cpu:
      parameters      2.55 MiB
      gradients       2.55 MiB
      optimizer       5.11 MiB  (Adam: 2 values per parameter)
      activations     1.78 MiB  (0.00694 MiB per sample x 256, measured)
      total             12 MiB  of ... MiB available (free RAM): fits
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import torch

from arignote import config
from arignote.devices import cuda as cuda_dev
from arignote.layers.recurrent.stateful_probe import states_set_aside
from arignote.runtime import memory
from arignote.sizes import format_mib
from arignote.training.oom import batch_len, free_memory, take

__all__ = [
    "FitPlan",
    "MemoryPlan",
    "plan_memory",
    "counted_plan",
    "with_activations",
    "measure_saved_bytes",
    "optimizer_state_bytes",
    "parameter_bytes",
    "available_memory",
]


@dataclass(frozen=True)
class MemoryPlan:
    """The estimate for one batch size. All sizes in bytes; ``available`` None when unknown."""

    device: str
    batch: int
    parameters: int
    gradients: int
    optimizer: int
    optimizer_note: str
    activations_per_sample: float
    activations_fixed: int = 0
    micro_batches: int = 1
    data: int = 0
    available: int | None = None
    available_note: str = ""
    measured: bool = True  # False: activations not measured (no forward pass), counted as 0

    @property
    def micro_batch(self) -> int:
        return math.ceil(self.batch / self.micro_batches)

    @property
    def activations(self) -> int:
        return int(self.activations_fixed + self.activations_per_sample * self.micro_batch)

    @property
    def fixed(self) -> int:
        """What does not depend on the batch size."""
        return self.parameters + self.gradients + self.optimizer + self.data + self.activations_fixed

    @property
    def total(self) -> int:
        return self.parameters + self.gradients + self.optimizer + self.data + self.activations

    @property
    def fits(self) -> bool | None:
        return None if self.available is None else self.total <= self.available

    def micro_batches_needed(self) -> int | None:
        """The smallest k = 1, 2, 4, ... whose micro-batches fit; None when even 1 sample does not."""
        if self.available is None:
            return 1
        k = 1
        while True:
            micro = math.ceil(self.batch / k)
            if self.fixed + self.activations_per_sample * micro <= self.available:
                return k
            if micro == 1:
                return None
            k *= 2

    def largest_batch(self) -> int | None:
        """The largest batch whose activations fit next to the fixed part (None when unknown)."""
        if self.available is None or self.activations_per_sample <= 0:
            return None
        return max(0, int((self.available - self.fixed) // self.activations_per_sample))

    def render(self) -> str:
        """The lines shown by ``model.summary()`` and before training."""
        k = self.micro_batches
        split = f" in {k} micro-batches of {self.micro_batch}" if k > 1 else ""
        rows = [
            ("parameters", self.parameters, ""),
            ("gradients", self.gradients, ""),
            ("optimizer", self.optimizer, self.optimizer_note),
            ("activations", self.activations,
             f"{format_mib(self.activations_per_sample)} per sample x {self.micro_batch}, measured"
             if self.measured else "not measured: no forward pass was run"),
        ]
        if self.data:
            rows.append(("data", self.data, "training arrays kept on the device"))
        lines = [f"Memory plan for batch {self.batch}{split} on {self.device}:"]
        for name, size, note in rows:
            lines.append(f"  {name:<12}{format_mib(size):>12}" + (f"  ({note})" if note else ""))
        if self.available is None:
            verdict = "available memory unknown"
        else:
            verdict = f"of {format_mib(self.available)} available ({self.available_note}): " + (
                "fits" if self.fits else "DOES NOT FIT"
            )
        lines.append(f"  {'total':<12}{format_mib(self.total):>12}  {verdict}")
        return "\n".join(lines)

    def warning(self) -> str | None:
        """A warning line when the plan does not fit, saying what will happen and what to try."""
        if self.fits is not False:
            return None
        k = self.micro_batches_needed()
        about = "about" if self.measured else "at least (activations not measured)"
        head = (
            f"warning: batch {self.batch} needs {about} {format_mib(self.total)} on {self.device} but "
            f"{format_mib(self.available or 0)} is available ({self.available_note}); "
        )
        if not self.measured:
            return head + "even without activations. Try a smaller model or more memory (memory.limit)."
        if k is None:
            return head + (
                "even 1 sample per micro-batch will not fit. Try precision=mixed-bf16, a smaller model, "
                "or more memory (memory.limit)."
            )
        largest = self.largest_batch()
        return head + (
            f"steps will be split into about {k} micro-batches (memory.on_oom=split keeps the batch); "
            f"a batch of about {largest} fits whole. precision=mixed-bf16 also halves activations."
        )


# --------------------------------------------------------------------------- counting


def parameter_bytes(module: torch.nn.Module, trainable_only: bool = False) -> int:
    """Bytes held by ``module``'s parameters (each shared parameter once)."""
    seen: dict[int, int] = {}
    for p in module.parameters():
        if trainable_only and not p.requires_grad:
            continue
        seen[id(p)] = p.numel() * p.element_size()
    return sum(seen.values())


# optimizer class name -> (values kept per parameter, how it is derived from the param group)
def _states_per_param(optimizer: torch.optim.Optimizer) -> tuple[float, str]:
    group = optimizer.param_groups[0] if optimizer.param_groups else {}
    name = type(optimizer).__name__
    if isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW, torch.optim.NAdam, torch.optim.RAdam,
                              torch.optim.Adamax)):
        n = 2 + (1 if group.get("amsgrad") else 0)
    elif isinstance(optimizer, torch.optim.RMSprop):
        n = 1 + (1 if group.get("momentum", 0) else 0) + (1 if group.get("centered") else 0)
    elif isinstance(optimizer, torch.optim.SGD):
        n = 1 if group.get("momentum", 0) else 0
    elif isinstance(optimizer, torch.optim.Adagrad):
        n = 1
    elif isinstance(optimizer, torch.optim.Adadelta):
        n = 2
    else:
        return 2.0, f"{name}: assumed 2 values per parameter"
    return float(n), f"{name}: {n} value{'s' if n != 1 else ''} per parameter"


def optimizer_state_bytes(optimizer: torch.optim.Optimizer | None) -> tuple[int, str]:
    """Bytes of optimizer state: counted when the optimizer has state, else from its kind."""
    if optimizer is None:
        return 0, "no optimizer"
    counted = 0
    for state in optimizer.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor) and value.numel() > 1:
                counted += value.numel() * value.element_size()
    if counted:
        return counted, f"{type(optimizer).__name__}: counted"
    per_param, note = _states_per_param(optimizer)
    trainable = sum(p.numel() * p.element_size() for g in optimizer.param_groups for p in g["params"]
                    if p.requires_grad)
    return int(per_param * trainable), note


def measure_saved_bytes(forward: Callable[[], Any], exclude: Iterable[torch.Tensor] = ()) -> int:
    """Bytes of the tensors autograd saves for backward while ``forward()`` runs (each once),
    leaving out tensors that share memory with ``exclude`` (the parameters)."""
    excluded = set()
    for t in exclude:
        excluded.add(t.untyped_storage().data_ptr())
    seen: dict[tuple[int, int], int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        try:
            if t.untyped_storage().data_ptr() not in excluded:
                nbytes = t.numel() * t.element_size()
                seen[(t.data_ptr(), nbytes)] = nbytes
        except (RuntimeError, NotImplementedError):  # tensors without storage (sparse, meta)
            pass
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = forward()
    del out
    return sum(seen.values())


def available_memory(device: torch.device | str) -> tuple[int | None, str]:
    """What ``device`` offers under the memory policy: ``(bytes, how it was found)``."""
    dev = torch.device(device)
    if dev.type == "cpu":
        import psutil

        return int(psutil.virtual_memory().available), "free RAM"
    index = dev.index if dev.index is not None else 0
    free, total = cuda_dev.mem_get_info(index)
    _, reserved = cuda_dev.memory_in_use(index)
    offer, note = free + reserved, f"free on {dev} plus what this process holds, of {format_mib(total)}"
    applied = memory.applied(f"cuda:{index}")
    if applied is not None and applied.limit_bytes and applied.limit_bytes < offer:
        offer, note = applied.limit_bytes, f"memory.limit={applied.limit:g} cap"
    return int(offer), note


# --------------------------------------------------------------------------- the plan


def plan_memory(
    module: torch.nn.Module,
    x: Any,
    y: Any = None,
    *,
    loss_fn: Callable[[Any, Any], torch.Tensor] | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    batch: int,
    micro_batches: int = 1,
    data_bytes: int = 0,
    device: torch.device | str | None = None,
    available: tuple[int | None, str] | None = None,
    context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
) -> MemoryPlan:
    """Estimate training memory for ``batch`` samples from a small sample batch ``x`` (and ``y``),
    already on the device. The sample forward passes change nothing: buffers (BatchNorm
    statistics), the random-number state and the states stateful RNNs carry are put back.
    ``context`` is the autocast context."""
    plan = counted_plan(module, optimizer=optimizer, batch=batch, micro_batches=micro_batches,
                        data_bytes=data_bytes, device=device, available=available)
    return with_activations(plan, module, x, y, loss_fn=loss_fn, context=context)


def counted_plan(module: torch.nn.Module, *, optimizer: torch.optim.Optimizer | None = None, batch: int,
                 micro_batches: int = 1, data_bytes: int = 0, device: torch.device | str | None = None,
                 available: tuple[int | None, str] | None = None) -> MemoryPlan:
    """The plan without a forward pass: parameters, gradients, optimizer state, data and what the
    device offers; activations count 0 (``measured`` is False) until :func:`with_activations`."""
    device = torch.device(device) if device is not None else next(module.parameters()).device
    opt_bytes, opt_note = optimizer_state_bytes(optimizer)
    avail = available if available is not None else available_memory(device)
    if available is None and device.type == "cpu":  # free RAM does not include what is already held
        avail = (avail[0] + parameter_bytes(module) + data_bytes, avail[1]) if avail[0] is not None else avail
    return MemoryPlan(
        device=str(device), batch=batch, parameters=parameter_bytes(module),
        gradients=parameter_bytes(module, trainable_only=True), optimizer=opt_bytes, optimizer_note=opt_note,
        activations_per_sample=0.0, micro_batches=micro_batches, data=data_bytes, available=avail[0],
        available_note=avail[1], measured=False,
    )


def with_activations(plan: MemoryPlan, module: torch.nn.Module, x: Any, y: Any = None, *,
                     loss_fn: Callable[[Any, Any], torch.Tensor] | None = None,
                     context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
                     ) -> MemoryPlan:
    """``plan`` with its activations measured: two forward passes of ``x`` (and the loss on ``y``)."""
    params = list(module.parameters())

    def saved(m: int) -> int:
        xs, ys = take(x, 0, m), take(y, 0, m)

        def forward() -> Any:
            with context():
                out = module(xs)
                return loss_fn(out, ys) if loss_fn is not None else out

        return measure_saved_bytes(forward, exclude=params)

    per_sample, fixed = _activations(module, saved, batch_len(x), torch.device(plan.device))
    return replace(plan, activations_per_sample=per_sample, activations_fixed=fixed, measured=True)


def rng_devices(device: torch.device) -> list[int]:
    """The device indices whose random-number state ``torch.random.fork_rng(devices=...)`` must fork
    besides the CPU's, for work on ``device``: none on the CPU, the device's own on a GPU (a measuring
    forward's dropout draws from it: forking the CPU state only, ``devices=[]``, left a seeded GPU
    run with other masks at verbose=1, which measures, than at verbose=0).

    >>> rng_devices(torch.device("cpu")), rng_devices(torch.device("cuda:1"))
    ([], [1])
    """
    if device.type == "cpu":
        return []
    if device.index is not None:
        return [device.index]
    return [torch.get_device_module(device.type).current_device()]


def _activations(module: torch.nn.Module, saved: Callable[[int], int], n: int,
                 device: torch.device) -> tuple[float, int]:
    """(bytes per sample, fixed bytes) saved for backward, from ``saved(m)`` at two sizes; buffers,
    the random-number state and stateful RNNs' states are put back afterwards."""
    buffers = [b.detach().clone() for b in module.buffers()]
    try:
        forked = torch.random.fork_rng(devices=rng_devices(device), device_type=device.type)
        with forked, torch.enable_grad(), states_set_aside(module) as clear_states:

            def fresh(m: int) -> int:  # each probe starts from zero RNN states at its own batch size
                clear_states()
                return saved(m)

            if n < 2:
                return float(fresh(n)), 0
            half = n // 2
            small, large = fresh(half), fresh(2 * half)
            per_sample = max(0.0, (large - small) / half)
            return per_sample, max(0, int(small - per_sample * half))
    finally:
        with torch.no_grad():
            for b, old in zip(module.buffers(), buffers):
                b.copy_(old)


# --------------------------------------------------------------------------- for the training loop

SAMPLE = 8  # samples in the measuring forward passes


class FitPlan:
    """``fit``'s memory plan: what is counted (parameters, gradients, optimizer state, data, what the
    device offers) is taken when ``fit`` starts; the activations are measured on first use of
    :meth:`measure` (two forward passes, once), so a ``fit`` that does not show the plan runs none.
    ``model.summary()`` after ``fit`` shows :meth:`measure` (``model._memory_plan``).

    Example (a sketch, skipped by the doctest run: ``trainer`` is the one ``fit`` builds)::

        >>> plan = FitPlan.of(trainer, train_data, batch_size=64)   # doctest: +SKIP
        >>> plan.counted.total, plan.measure().total                # doctest: +SKIP
    """

    def __init__(self, trainer: Any, sample: Callable[[], tuple[Any, Any]], counted: MemoryPlan,
                 batch_size: int) -> None:
        self._trainer, self._sample, self.counted = trainer, sample, counted
        self.batch_size = batch_size  # the fit's global batch this plan is for (``counted.batch`` per rank)
        self._measured: MemoryPlan | None = None
        self._tried = False

    @classmethod
    def of(cls, trainer: Any, data: Any, batch_size: int) -> FitPlan | None:
        """The plan of a ``fit`` on ``data``; None when the data cannot be looked at without consuming
        it (a one-shot iterable). Array data: its first samples are copied now (the arrays need not
        stay alive); other data is looked at (``first()``) when the plan is measured."""
        if hasattr(data, "n"):
            x, y = next(iter(data.batches(None, min(SAMPLE, data.n))))
            x, y = _copy(x), _copy(y)
            held = data.x.numel() * data.x.element_size() if data.on_device else 0
            if data.on_device and data.y is not None:
                held += data.y.numel() * data.y.element_size()
            sample = lambda: (x, y)  # noqa: E731
        elif not getattr(data, "one_shot", True):
            sample, held = data.first, 0
        else:
            return None
        model = trainer.model
        world = getattr(trainer.strategy, "world_size", 1)
        counted = counted_plan(model.module, optimizer=_torch_optimizer(model.optimizer),
                               batch=-(-batch_size // world), micro_batches=trainer.oom.k, data_bytes=held,
                               device=trainer.device)
        return cls(trainer, sample, counted, batch_size)

    def measure(self) -> MemoryPlan | None:
        """The full plan (two forward passes, the first time); None when even the few measuring
        samples run out of memory (the first step's guard then says what to do)."""
        if not self._tried:
            self._tried = True
            trainer = self._trainer
            model = trainer.model
            x, y = self._sample()
            try:
                self._measured = with_activations(self.counted, model.module, x, y,
                                                  loss_fn=lambda out, target: model.loss_fn(target, out),
                                                  context=trainer.precision.autocast)
            except torch.OutOfMemoryError:
                free_memory(trainer.device)
            except RuntimeError:
                # a model that runs at its own batch size only (an RNN's initial_state variables of
                # a fixed batch, as Keras 2.3.1 allows) fails the probes at other sizes: the plan
                # stays the counted one (activations not measured); a broken model fails its first step
                self._measured = self.counted
        return self._measured


def _copy(batch: Any) -> Any:
    """A copy of a few rows (a tensor, or a tuple/list/dict of them), so the arrays they come from
    can be freed."""
    if isinstance(batch, torch.Tensor):
        return batch.clone()
    if isinstance(batch, (tuple, list)):
        return type(batch)(_copy(b) for b in batch)
    if isinstance(batch, dict):
        return {k: _copy(v) for k, v in batch.items()}
    return batch


def _input_dtype(module: torch.nn.Module) -> torch.dtype:
    """The dtype of the stand-in input: the weights' one; floatX for a model without weights (a
    positional-encoding layer alone, as keras-pos-embd's tests build)."""
    weight = next(module.parameters(), None)
    return weight.dtype if weight is not None else getattr(torch, config.get("floatX"))


def _torch_optimizer(optimizer: Any) -> Any:
    """The torch optimizer inside an :mod:`arignote.optimizers` one (its ``torch`` attribute)."""
    inner = getattr(optimizer, "torch", None)
    return inner if isinstance(inner, torch.optim.Optimizer) else optimizer


def announce(fit_plan: FitPlan | None, *, verbose: int, is_main: bool,
             print_fn: Callable[[str], Any] = print) -> None:
    """Before training, on rank 0: one line with the plan when ``verbose`` (the only case that runs
    the plan's forward passes), and a warning whenever the plan does not fit (silent: the counted
    part alone)."""
    if fit_plan is None or not is_main:
        return
    plan = fit_plan.measure() if verbose else fit_plan.counted
    if plan is None:
        return
    if verbose:
        verdict = "" if plan.fits is None else (" (fits)" if plan.fits else " (DOES NOT FIT)")
        print_fn(f"Memory plan: batch {plan.batch} needs about {format_mib(plan.total)} on {plan.device} "
                 f"of {format_mib(plan.available or 0)} available ({plan.available_note}){verdict}")
    warning = plan.warning()
    if warning:
        print(f"arignote: {warning}", file=sys.stderr)


def summary_lines(model: Any, batch_size: int | None = None) -> str:
    """The memory-plan block of ``model.summary()``: for the batch of the last ``fit`` (Keras's 32
    before any), measured with zeros of the model's input shape on its training device."""
    fit_plan = getattr(model, "_memory_plan", None)
    last = fit_plan.measure() if fit_plan is not None else None
    if last is not None and batch_size in (None, last.batch):  # measured on the data of the last fit
        warning = last.warning()
        return last.render() + (f"\n{warning}" if warning else "")
    shape = model.expected_input_shape()
    if not model.compiled or shape is None or None in shape:
        return "Memory plan: shown once the model is compiled and its input shape is known (or after fit)"
    trainer = model._get_trainer(tuple(shape))
    batch = batch_size or (fit_plan.batch_size if fit_plan is not None else None) or 32
    x = torch.zeros((SAMPLE, *shape), device=trainer.device, dtype=_input_dtype(model.module))
    y = _stand_in_targets(model, x, trainer)
    loss = (lambda out, target: model.loss_fn(target, out)) if y is not None else None
    plan = plan_memory(model.module, x, y, loss_fn=loss, optimizer=_torch_optimizer(model.optimizer),
                       batch=batch, micro_batches=getattr(getattr(trainer, "oom", None), "k", 1),
                       device=trainer.device, context=trainer.precision.autocast)
    warning = plan.warning()
    # the plan fit prints is this one plus the training arrays it keeps on the device
    lines = plan.render().splitlines()
    lines.insert(-1, f"  {'data':<12}{'at fit':>12}  (the training arrays fit keeps on the device)")
    return "\n".join(lines) + (f"\n{warning}" if warning else "")


def _stand_in_targets(model: Any, x: torch.Tensor, trainer: Any) -> torch.Tensor | None:
    """Zeros shaped like the model's output, so the measured forward pass includes the loss as
    fit's does; None when the loss takes another kind of target (class indices)."""
    with torch.no_grad(), trainer.precision.autocast():
        out = model.module(x)
        if not isinstance(out, torch.Tensor):
            return None
        target = torch.zeros_like(out)
        try:
            model.loss_fn(target, out)
        except (RuntimeError, ValueError, TypeError, IndexError):
            return None
    return target
