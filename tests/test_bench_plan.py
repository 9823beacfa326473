"""The step counter (operators, FLOPs, bytes, host syncs) and the GPU performance model.

The counter is a mechanism check too: fit's training step must not read anything back to the
host (issue 18: one sync per log point), and a callback that reads the batch logs must show up
as host syncs, so the check can fail.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from arignote.bench import opcount, perfmodel, plan
from arignote.bench.report import Run
from arignote.callbacks import Callback
from arignote.layers import Dense
from arignote.models import Sequential


def test_recorder_counts_matmul_flops_bytes_and_syncs():
    a, b = torch.ones(4, 8), torch.ones(8, 2)
    with opcount.OpRecorder() as rec:
        c = a @ b
        c.sum().item()
    names = [op.name for op in rec.ops]
    assert names == ["aten.mm.default", "aten.sum.default", "aten._local_scalar_dense.default"]
    mm = rec.ops[0]
    assert mm.flops == 2 * 4 * 8 * 2 and mm.matmul
    assert mm.bytes == (4 * 8 + 8 * 2 + 4 * 2) * 4
    assert [op.sync for op in rec.ops] == [False, False, True]


def test_recorder_skips_views():
    x = torch.ones(4, 6)
    with opcount.OpRecorder() as rec:
        x.view(6, 4).reshape(24).unsqueeze(0).t()
    assert rec.ops == []


def _mlp():
    m = Sequential([Dense(16, activation="relu", input_shape=(8,)), Dense(3, activation="softmax")])
    m.compile("rmsprop", "categorical_crossentropy", metrics=["accuracy"])
    rng = np.random.default_rng(0)
    x = rng.random((64, 8), dtype=np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 64)]
    return m, x, y


def test_fit_step_has_no_host_sync():
    m, x, y = _mlp()
    step = opcount.count_fit_step(m, x, y, batch_size=8)
    assert step.syncs == 0, step.top(20)
    assert step.launches > 10
    # two Dense layers at batch 8: forward 2*b*(8*16 + 16*3); backward the same again for the weight
    # gradients, plus the input gradient of the second layer only (the data needs no gradient)
    forward = 2 * 8 * (8 * 16 + 16 * 3)
    assert step.flops == 2 * forward + 2 * 8 * 16 * 3


class _ReadsLogs(Callback):
    def on_train_batch_end(self, batch, logs=None):
        float(logs["loss"])


def test_counter_sees_a_per_batch_sync():
    """A callback that reads the loss every batch forces a sync: the counter must see it."""
    m, x, y = _mlp()
    rec = opcount.OpRecorder()
    marks = opcount._Marks(rec)
    with rec:
        m.fit(x[:32], y[:32], batch_size=8, epochs=1, shuffle=False, verbose=0,
              callbacks=[marks, _ReadsLogs()])
    step = rec.ops[marks.starts[2]:marks.starts[3]]
    assert sum(op.sync for op in step) >= 1


def test_torch_step_counts_forward_backward_update():
    net = torch.nn.Linear(8, 3)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, foreach=False)
    step = opcount.count_torch_step(net, opt, torch.nn.functional.cross_entropy, torch.ones(4, 8),
                                    torch.zeros(4, dtype=torch.long))
    names = {op.name for op in step.ops}
    assert "aten.addmm.default" in names and "aten.mm.default" in names  # forward and weight gradient
    assert step.syncs == 0


def test_prediction_arithmetic_by_hand():
    gpu = perfmodel.GPU("toy", "toy", fp32=1e12, tf32=4e12, bf16=8e12, bandwidth=1e11, source="test")
    assume = perfmodel.Assumptions(compute_efficiency=0.5, memory_efficiency=0.5, min_kernel=1e-6,
                                   host_per_op=10e-6, graph_launch=5e-6, tf32=True)
    ops = [(4e9, 1e6, True),  # matmul: 4e9 / (4e12 * .5) = 2 ms; memory 1e6 / 5e10 = 0.02 ms
           (0.0, 1e8, False),  # elementwise: 1e8 / 5e10 = 2 ms
           (0.0, 8.0, False)]  # tiny: the shortest kernel, 1 us
    p = perfmodel.Prediction.of(ops, syncs=0, gpu=gpu, assume=assume)
    assert p.device_ms == pytest.approx(2 + 2 + 0.001)
    assert p.host_ms == pytest.approx(0.03)
    assert p.eager_ms == pytest.approx(p.device_ms)  # host runs ahead: max(host, device)
    assert p.graph_ms == pytest.approx(p.device_ms)
    synced = perfmodel.Prediction.of(ops, syncs=1, gpu=gpu, assume=assume)
    assert synced.eager_ms == pytest.approx(p.device_ms + 0.03)  # a sync serialises host and device
    no_tf32 = perfmodel.Prediction.of(ops, 0, gpu, perfmodel.Assumptions(
        compute_efficiency=0.5, memory_efficiency=0.5, min_kernel=1e-6, tf32=False))
    assert no_tf32.device_ms == pytest.approx(8 + 2 + 0.001)  # float32 matmul at the FP32 rate


def test_launch_bound_step_gains_from_cuda_graphs():
    ops = [(0.0, 1024.0, False)] * 100
    p = perfmodel.Prediction.of(ops, 0, perfmodel.GPUS["H100 SXM"])
    assert p.host_ms == pytest.approx(100 * 8e-3)
    assert p.eager_ms == pytest.approx(p.host_ms) and p.graph_ms < p.eager_ms / 2


@pytest.mark.parametrize("name, entry", [
    ("NVIDIA H100 80GB HBM3", "H100 SXM"), ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"), ("Tesla V100-SXM2-16GB", "V100 SXM2"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"), ("GeForce GTX 1060 6GB", "GTX 1060 6GB"),
    ("NVIDIA T4", None)])
def test_find_gpu_by_torch_device_name(name, entry):
    found = perfmodel.find_gpu(name)
    assert (found.name if found else None) == entry


def test_epoch_seconds_counts_the_last_partial_batch():
    assert perfmodel.epoch_seconds(1.0, 32) == pytest.approx(1407 / 1000)  # ceil(45000 / 32) steps


def test_predicted_vs_measured_on_a_fake_gpu_run():
    from arignote.bench import plan

    step = opcount.StepCount((), 32)
    rows = perfmodel.table([(0.0, 1e3, False)] * 50, 0, 32)
    p = plan.StepPlan("cnn", 32, step, step, 0, 0, rows)
    h100 = "NVIDIA H100 80GB HBM3"
    runs = [Run("cuda", "arignote", 32, epoch_seconds=[3.0], samples=45000, device_name=h100),
            Run("cpu", "arignote", 32, epoch_seconds=[30.0], samples=45000, device_name="EPYC"),
            Run("cuda", "arignote", 128, epoch_seconds=[1.0], samples=45000, device_name=h100)]
    lines = plan.predicted_vs_measured(p, runs)
    assert len(lines) == 1
    assert "measured 3.00 s" in lines[0] and "H100" in lines[0]


@pytest.mark.slow
def test_bench_plan_cli_prints_counts_and_every_gpu():
    proc = subprocess.run([sys.executable, "-m", "arignote", "bench", "--plan", "--model", "mlp"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "operators (kernel launches)" in out and "host syncs" in out
    for name in perfmodel.GPUS:
        assert f"\n  {name}" in out
    # the MLP: 669,706 parameters, 6 FLOPs per weight per sample (forward, weight and input
    # gradients) less the first layer's input gradient (784 x 512 weights: the data needs none)
    flops_line = next(line for line in out.splitlines() if "FLOPs per sample" in line)
    assert float(flops_line.split()[3]) == pytest.approx((6 * 669_706 - 2 * 784 * 512) / 1e6, abs=0.05)


def test_the_plan_swaps_fit_s_own_optimizer_operators_for_the_cuda_estimate():
    """fit's RMSprop (optim_kernels.KerasRMSprop) runs 5 operators per parameter and 5 foreach ones;
    the loop's torch.optim.RMSprop 6 per parameter plus its profiler range, and 6 foreach ones plus
    the range: each side's CUDA launches take out its own."""
    p = plan.plan_model("mlp", 32)
    assert (p.optimizer_loop_ops, p.optimizer_foreach_ops) == (5 * 6, 5)
    assert p.loop_optimizer_ops == (6 * 6 + 2, 6 + 2)
    assert p.cuda_launches == p.fit.launches - 30 + 5
    assert p.loop_cuda_launches == p.loop.launches - 38 + 8
