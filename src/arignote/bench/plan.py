"""``arignote bench --plan``: what one training step costs, counted here, and predicted on named GPUs.

For a benchmark model (the seeds' CNN by default) it counts one steady-state step of
``model.fit`` and of a hand-written PyTorch loop (:mod:`arignote.bench.opcount`), then predicts
the step and epoch time on the GPUs of :data:`arignote.bench.perfmodel.GPUS`. On a GPU the
optimizers run torch's multi-tensor (``foreach``) kernels while the CPU runs the per-tensor loop,
so the launch count on CUDA is estimated as: fit's count here, minus the per-tensor optimizer's
operators, plus the ``foreach`` optimizer's (both counted here on the same parameters).

Example::

    $ arignote bench --plan                 # the seeds' CNN at batch 32
    $ arignote bench --plan --model mlp --batch-size 128
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arignote import config
from arignote.bench import models, perfmodel
from arignote.bench.opcount import OpRecorder, StepCount, count_fit_step, count_torch_step
from arignote.bench.report import seconds_per_epoch
from arignote.optimizers import RMSprop

__all__ = ["StepPlan", "plan_model", "render"]


@dataclass(frozen=True)
class StepPlan:
    """The counts behind a plan and the per-GPU predictions."""

    model: str
    batch_size: int
    fit: StepCount
    loop: StepCount
    optimizer_loop_ops: int  # fit's per-tensor optimizer step (what the CPU runs)
    optimizer_foreach_ops: int  # fit's multi-tensor optimizer step (what CUDA runs)
    rows: list[dict]
    # the loop's (torch.optim.RMSprop: per-tensor, foreach) when not fit's (KerasRMSprop, no step counters)
    loop_optimizer_ops: tuple[int, int] | None = None

    @property
    def cuda_launches(self) -> int:
        return self.fit.launches - self.optimizer_loop_ops + self.optimizer_foreach_ops

    @property
    def loop_cuda_launches(self) -> int:
        per_tensor, foreach = self.loop_optimizer_ops or (self.optimizer_loop_ops, self.optimizer_foreach_ops)
        return self.loop.launches - per_tensor + foreach


def _data(name: str, batch_size: int, steps: int) -> tuple[Any, Any]:
    import numpy as np

    spec = models.spec(name)
    rng = np.random.default_rng(0)
    n = batch_size * steps
    x = rng.random((n, *spec.input_shape), dtype=np.float32)
    y = np.eye(spec.classes, dtype=np.float32)[rng.integers(0, spec.classes, n)]
    return x, y


def _optimizer_ops(params: list, foreach: bool, cls: Any = None) -> list:
    import torch

    cls = cls or torch.optim.RMSprop
    opt = cls(params, lr=models.LEARNING_RATE, alpha=models.RMSPROP_RHO, eps=models.RMSPROP_EPS,
              foreach=foreach)
    for p in params:
        p.grad = torch.ones_like(p)
    opt.step()  # state exists now
    with OpRecorder() as rec:
        opt.step()
    return rec.ops


def _without(ops: list, remove: list) -> list:
    """``ops`` less one occurrence, taken from the end, of each operator name in ``remove``."""
    todo: dict[str, int] = {}
    for op in remove:
        todo[op.name] = todo.get(op.name, 0) + 1
    kept = []
    for op in reversed(ops):
        if todo.get(op.name, 0):
            todo[op.name] -= 1
        else:
            kept.append(op)
    return kept[::-1]


def plan_model(name: str = "cnn", batch_size: int = 32,
               assume: perfmodel.Assumptions = perfmodel.Assumptions()) -> StepPlan:
    """Count one step of ``name`` (a :data:`arignote.bench.models.SPECS` key) and predict it per GPU."""
    import torch

    x, y = _data(name, batch_size, steps=4)
    with config.override(print_active_device=False):
        model = models.arignote_model(name)
        model.compile(loss="categorical_crossentropy", metrics=["accuracy"],
                      optimizer=RMSprop(lr=models.LEARNING_RATE, rho=models.RMSPROP_RHO))
        fit = count_fit_step(model, x, y, batch_size)
    net = models.torch_model(name)
    xt = torch.from_numpy(x[:batch_size])
    if xt.dim() == 4:
        xt = xt.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
    yt = torch.from_numpy(y[:batch_size].argmax(1))
    opt = torch.optim.RMSprop(net.parameters(), lr=models.LEARNING_RATE, alpha=models.RMSPROP_RHO,
                              eps=models.RMSPROP_EPS, foreach=False)
    loop = count_torch_step(net, opt, torch.nn.functional.cross_entropy, xt, yt)
    params = [p.detach().clone() for p in net.parameters()]
    kind = type(model.optimizer.torch)  # fit's torch optimizer (optim_kernels.KerasRMSprop)
    per_tensor, foreach = _optimizer_ops(params, False, kind), _optimizer_ops(params, True, kind)
    loop_ops = (len(_optimizer_ops(params, False)), len(_optimizer_ops(params, True)))
    # the CUDA step: fit's operators with the foreach optimizer's in place of the per-tensor ones
    # (foreach kernels read and write the same bytes in fewer launches)
    body = _without(list(fit.ops), per_tensor)
    cuda_ops = [(op.flops, op.bytes, op.matmul) for op in body + list(foreach)]
    rows = perfmodel.table(cuda_ops, fit.syncs, batch_size, assume=assume)
    return StepPlan(name, batch_size, fit, loop, len(per_tensor), len(foreach), rows, loop_ops)


def assumptions_from_flags(get: Any = None) -> perfmodel.Assumptions:
    """The model's assumptions with TF32 as the ``tf32`` flag sets it (``off``: full fp32;
    ``torch`` keeps TF32 convolutions, which carry nearly all of a CNN's FLOPs, so it counts as on).

    >>> assumptions_from_flags({"tf32": "off"}.get).tf32
    False
    """
    return perfmodel.Assumptions(tf32=(get or config.get)("tf32") != "off")


def render(plan: StepPlan, assume: perfmodel.Assumptions = perfmodel.Assumptions()) -> str:
    """The plan as text: counts, top operators, and one prediction row per GPU."""
    spec = models.spec(plan.model)
    b = plan.batch_size
    lines = [
        f"arignote bench --plan · {plan.model}: {spec.doc} · batch {b}",
        "",
        "Counted on this machine, one steady-state training step (forward, loss, backward, update):",
        f"  {'':34}{'arignote fit':>14}{'PyTorch loop':>14}",
        f"  {'operators (kernel launches)':34}{plan.fit.launches:>14}{plan.loop.launches:>14}",
        f"  {'  on CUDA (foreach optimizer)':34}{plan.cuda_launches:>14}"
        f"{plan.loop_cuda_launches:>14}",
        f"  {'host syncs':34}{plan.fit.syncs:>14}{plan.loop.syncs:>14}",
        f"  {'FLOPs per sample':34}{plan.fit.flops / b / 1e6:>12.1f} M{plan.loop.flops / b / 1e6:>12.1f} M",
        f"  {'bytes read+written per step':34}{plan.fit.bytes / 2**20:>10.1f} MiB"
        f"{plan.loop.bytes / 2**20:>10.1f} MiB",
        "  most frequent operators in fit: "
        + ", ".join(f"{name.removeprefix('aten.')} x{n}" for name, n in plan.fit.top(6)),
        "",
        f"Predicted on a GPU ({perfmodel.SEEDS_SAMPLES} samples per epoch; model and assumptions in "
        "arignote.bench.perfmodel:",
        f"  compute efficiency {assume.compute_efficiency:g}, "
        f"memory efficiency {assume.memory_efficiency:g}, shortest kernel {assume.min_kernel * 1e6:g} us,",
        f"  eager host cost {assume.host_per_op * 1e6:g} us per operator, CUDA-graph replay "
        f"{assume.graph_launch * 1e6:g} us, TF32 {'on' if assume.tf32 else 'off'}):",
        f"  {'gpu':14}{'device ms':>10}{'host ms':>9}{'eager ms':>10}{'epoch s':>9}{'graph ms':>10}"
        f"{'epoch s':>9}  under {perfmodel.TARGET_EPOCH_S:g} s?",
    ]
    for r in plan.rows:
        ok = "eager" if r["eager_epoch_s"] < perfmodel.TARGET_EPOCH_S else (
            "with CUDA graphs" if r["graph_epoch_s"] < perfmodel.TARGET_EPOCH_S else "no")
        lines.append(f"  {r['gpu']:14}{r['device_ms']:>10.3f}{r['host_ms']:>9.3f}{r['eager_ms']:>10.3f}"
                     f"{r['eager_epoch_s']:>9.2f}{r['graph_ms']:>10.3f}{r['graph_epoch_s']:>9.2f}  {ok}")
    seeds = perfmodel.SEEDS_EPOCH
    lines += ["",
              f"The seeds measured (Theano 0.9, GTX 1060): CPU {seeds['cpu']:g} s, GPU {seeds['gpu']:g} s, "
              f"GPU + cuDNN {seeds['gpu+cudnn']:g} s per epoch.",
              "These are predictions, not measurements: `arignote bench` on a GPU prints predicted next to "
              "measured."]
    return "\n".join(lines)


def predicted_vs_measured(plan: StepPlan, runs: list) -> list[str]:
    """Lines that set each GPU run's measured seconds per epoch beside the prediction for its GPU.

    ``runs`` are :class:`arignote.bench.report.Run` records; only successful runs on a GPU the
    table knows, at the plan's batch size, are compared. Measured epochs include validation
    (forward passes over a ninth more samples), which the prediction leaves out.
    """
    rows = {r["gpu"]: r for r in plan.rows}
    lines = []
    for run in runs:
        gpu = perfmodel.find_gpu(run.device_name) if run.device_name else None
        if not (run.ok and gpu and run.batch_size == plan.batch_size and gpu.name in rows):
            continue
        measured = seconds_per_epoch(run.epoch_seconds) * perfmodel.SEEDS_SAMPLES / max(1, run.samples)
        row = rows[gpu.name]
        lines.append(f"{run.config} on {run.device_name} (batch {run.batch_size}): measured "
                     f"{measured:.2f} s per {perfmodel.SEEDS_SAMPLES}-sample epoch; predicted eager "
                     f"{row['eager_epoch_s']:.2f} s, with CUDA graphs {row['graph_epoch_s']:.2f} s "
                     f"(measured / predicted eager: {measured / row['eager_epoch_s']:.2f}x)")
    return lines
