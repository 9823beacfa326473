"""The GPU fast paths (issue 18 item 2): each decision as a pure function of flags, device and
model facts, the banner text, and what applying them changes (TF32 and cuDNN switches are
process-wide torch flags, readable and settable on a CPU build)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest
import torch

from arignote import config, optimizers
from arignote.bench import configs, opcount, perfmodel, plan, selfchecks, selfchecks_fast
from arignote.bench.fastprobes import HostSyncCounter, SyncGuard, observe_fit
from arignote.bench.report import Run
from arignote.bench.selfchecks_fast import expected, mismatches
from arignote.commands import bench_cmd
from arignote.config import theanorc
from arignote.devices import cuda, fastpaths
from arignote.devices.banner import setting_notes
from arignote.devices.fastpaths import Choice, FitFacts
from arignote.devices.info import Device, GPUInfo, Inventory
from arignote.errors import ConfigError
from arignote.layers import Conv2D, Dense, Flatten
from arignote.models import Model, Sequential
from arignote.runtime import setup

DEFAULTS = {"dnn.benchmark": "auto", "tf32": "on", "memory_format": "auto", "optimizer.impl": "auto"}
H100 = GPUInfo(0, "NVIDIA H100 80GB HBM3", "0000:18:00.0", 81559 << 20, 80000 << 20, (9, 0), "u0")
V100 = GPUInfo(1, "Tesla V100-SXM2-16GB", "0000:19:00.0", 16160 << 20, 16000 << 20, (7, 0), "u1")
INVENTORY = Inventory(gpus=(H100, V100), cpu_name="EPYC", cpu_threads=2)


def flags(**kw):
    values = dict(DEFAULTS)
    values.update({k.replace("__", "."): v for k, v in kw.items()})
    return values.get


# --------------------------------------------------------------------------- decisions


@pytest.mark.parametrize("flag, kind, cudnn, conv, fixed, want", [
    ("auto", "cuda", True, True, True, (True, "fixed input shapes")),
    ("auto", "cuda", True, True, False, (False, "input shapes may vary (an iterable)")),
    ("auto", "cuda", True, True, None, (False, "input shapes may vary (an iterable)")),
    ("auto", "cuda", True, False, True, (False, "no convolutions")),
    ("auto", "cuda", False, True, True, (False, "no cuDNN")),
    ("auto", "cpu", False, True, True, (False, "no cuDNN on cpu")),
    (True, "cuda", True, False, False, (True, "dnn.benchmark=true")),  # the flag beats the facts
    (False, "cuda", True, True, True, (False, "dnn.benchmark=false")),
    (True, "cpu", False, True, True, (False, "no cuDNN on cpu")),
])
def test_autotune_follows_the_flag_then_the_facts(flag, kind, cudnn, conv, fixed, want):
    got = fastpaths.autotune(flags(dnn__benchmark=flag), kind, cudnn, conv, fixed)
    assert (got.value, got.why) == want


@pytest.mark.parametrize("flag, capability, value, line_start", [
    ("on", (9, 0), (True, True), "TF32 on: float32 matmuls and convolutions"),
    ("off", (8, 0), (False, False), "TF32 off: float32 matmuls and convolutions in full precision"),
    ("torch", (8, 6), (False, True), "TF32 on for convolutions only, PyTorch's default"),
    ("on", (7, 0), (True, True), "TF32 n/a (compute capability 7.0 < 8.0)"),
])
def test_tf32_policy_and_its_banner_line(flag, capability, value, line_start):
    choice = fastpaths.tf32(flags(tf32=flag), capability)
    assert choice.value == value
    assert fastpaths.tf32_line(choice).startswith(line_start)


def test_tf32_flag_default_is_on_and_refuses_other_values():
    assert config.get("tf32") == "on"
    with pytest.raises(ConfigError, match="tf32"):
        config.configure(tf32="tf16")


@pytest.mark.parametrize("flag, conv, want", [
    ("auto", True, "channels_last"), ("auto", False, "contiguous"), ("contiguous", True, "contiguous"),
    ("channels_last", False, "channels_last"),
])
def test_memory_format_decision(flag, conv, want):
    """The same on every device (cuDNN and oneDNN both have NHWC kernels)."""
    assert fastpaths.memory_format(flags(memory_format=flag), conv).value == want


@pytest.mark.parametrize("flag, cls, devices, floats, want", [
    ("auto", "Adam", {"cuda"}, True, "fused"), ("auto", "SGD", {"cuda"}, True, "fused"),
    ("auto", "AdamW", {"cuda"}, True, "fused"), ("auto", "Adam", {"cpu"}, True, "fused"),
    ("auto", "Adagrad", {"cuda"}, True, "fused"), ("auto", "Adagrad", {"cpu"}, True, "fused"),
    ("fused", "Adagrad", {"cuda"}, True, "fused"),  # torch 2.13 has _fused_adagrad_ on CUDA (issue 28 S2)
    ("auto", "RMSprop", {"cuda"}, True, "foreach"), ("auto", "RMSprop", {"cpu"}, True, "loop"),
    ("auto", "Adam", {"cuda", "cpu"}, True, "fused"), ("auto", "Adam", {"cuda"}, False, "foreach"),
    ("auto", "Adam", {"cuda", "meta"}, True, "foreach"),
    ("foreach", "Adam", {"cuda"}, True, "foreach"), ("loop", "Adam", {"cuda"}, True, "loop"),
    ("fused", "SGD", {"cuda"}, True, "fused"),
])
def test_optimizer_impl_decision(flag, cls, devices, floats, want):
    assert fastpaths.optimizer_impl(flags(optimizer__impl=flag), cls, devices, floats).value == want


def test_fused_where_torch_has_no_kernel_is_an_error_naming_the_fix():
    with pytest.raises(ConfigError, match=r"optimizer.impl=fused but torch has no fused RMSprop .*"
                                          r"set optimizer.impl=auto or foreach"):
        fastpaths.optimizer_impl(flags(optimizer__impl="fused"), "RMSprop", {"cuda"}, True)
    with pytest.raises(ConfigError, match="fused Adagrad only on cpu, cuda"):
        fastpaths.optimizer_impl(flags(optimizer__impl="fused"), "Adagrad", {"cuda", "meta"}, True)


def test_batches_are_pinned_for_a_gpu_only():
    assert fastpaths.pin_batches("cuda") and not fastpaths.pin_batches("cpu")


# --------------------------------------------------------------------------- the banner line


def test_fit_line_on_a_gpu_with_arrays_and_a_conv_model():
    facts = FitFacts(device="cuda:0", capability=(9, 0), has_conv=True, fixed_shapes=True, optimizer="Adam",
                     optimizer_impl="fused", arrays_on_device=True)
    assert fastpaths.fit_line(flags(), facts) == (
        "fast paths: cuDNN autotune on (fixed input shapes), channels-last (conv model), Adam fused, "
        "arrays on cuda:0 (index-gather batches)")


def test_fit_line_with_every_fast_path_switched_off():
    facts = FitFacts(device="cuda:1", capability=(8, 0), has_conv=True, fixed_shapes=False, optimizer="Adam",
                     optimizer_impl="foreach", arrays_on_device=None)
    line = fastpaths.fit_line(flags(dnn__benchmark=False, memory_format="contiguous"), facts)
    assert line == ("fast paths: cuDNN autotune off (dnn.benchmark=false), "
                    "contiguous (memory_format=contiguous), "
                    "Adam foreach, batches pinned + non_blocking to cuda:1")


def test_fit_line_for_a_dataloader_without_pinned_memory():
    facts = FitFacts(device="cuda:0", has_conv=True, fixed_shapes=False, loader_pins=False)
    assert fastpaths.fit_line(flags(), facts).endswith(
        "batches pinned by the loop + non_blocking to cuda:0 (DataLoader(pin_memory=True) pins in the "
        "loader's thread instead)")
    pinned = FitFacts(device="cuda:0", has_conv=True, fixed_shapes=False, loader_pins=True)
    assert fastpaths.fit_line(flags(), pinned).endswith("batches pinned + non_blocking to cuda:0")


def test_fit_line_for_arrays_too_big_for_the_gpu():
    facts = FitFacts(device="cuda:0", has_conv=False, fixed_shapes=True, arrays_on_device=False)
    assert fastpaths.fit_line(flags(), facts).endswith(
        "arrays on the host (too big for cuda:0), batches pinned + non_blocking to it")


# --------------------------------------------------------------------------- applying them


@pytest.fixture
def restore_switches():
    before_cudnn, before_tf32 = cuda.cudnn_flags(), cuda.tf32_state()
    yield
    cuda.set_cudnn(*before_cudnn)
    cuda.set_tf32(*before_tf32)
    setup.reset()


@pytest.mark.parametrize("matmul, conv", [(True, True), (False, False), (False, True)])
def test_tf32_switches_round_trip(restore_switches, matmul, conv):
    cuda.set_tf32(matmul, conv)
    assert cuda.tf32_state() == (matmul, conv)


def test_fast_paths_on_a_gpu_switch_autotuning_and_print_each_new_line(monkeypatch, restore_switches):
    monkeypatch.setattr(cuda, "cudnn_available", lambda: True)  # a GPU inventory, on a CPU build
    setup.reset()
    arrays = FitFacts(device="cuda:0", has_conv=True, fixed_shapes=True, optimizer="Adam",
                      optimizer_impl="fused", arrays_on_device=True)
    loader = FitFacts(device="cuda:0", has_conv=True, fixed_shapes=False)
    out = io.StringIO()
    with config.override(print_active_device=True), contextlib.redirect_stdout(out):
        first = setup.fast_paths(arrays, INVENTORY)
        assert cuda.cudnn_flags()[1] is True
        setup.fast_paths(arrays, INVENTORY)  # the same line again: not printed twice
        second = setup.fast_paths(loader, INVENTORY)
        assert cuda.cudnn_flags()[1] is False
        with config.override(dnn_benchmark=True):
            setup.fast_paths(loader, INVENTORY)
            assert cuda.cudnn_flags()[1] is True
    printed = out.getvalue().splitlines()
    assert printed[:2] == [first, second] and len(printed) == 3
    assert "autotune on (fixed input shapes)" in first and "autotune off (input shapes may vary" in second


def test_fast_paths_on_the_cpu_print_nothing_and_leave_cudnn_alone(restore_switches):
    setup.reset()
    cuda.set_benchmark(False)
    out = io.StringIO()
    with config.override(print_active_device=True), contextlib.redirect_stdout(out):
        line = setup.fast_paths(FitFacts(device="cpu", has_conv=True, fixed_shapes=True))
    assert out.getvalue() == "" and cuda.cudnn_flags()[1] is False
    assert line == "fast paths: cuDNN autotune off (no cuDNN on cpu), channels-last (conv model)"


def test_setting_notes_on_cpu_for_tf32_and_an_explicit_benchmark():
    base = {**DEFAULTS, "precision": "fp32", "memory.preallocate": 0, "memory.limit": 0,
            "dnn.deterministic": False, "dnn.enabled": "auto"}
    cpu = [Device("cpu")]
    assert setting_notes(cpu, base.get) == []  # dnn.benchmark=auto and tf32=on say nothing on a CPU
    notes = setting_notes(cpu, {**base, "tf32": "off", "dnn.benchmark": True}.get)
    assert notes == ["note: the dnn.* flags switch cuDNN on GPUs; nothing to do on cpu",
                     "note: tf32=off switches TensorFloat-32 on GPUs; nothing to do on cpu"]


def test_dnn_benchmark_flag_is_auto_or_a_bool():
    assert config.get("dnn.benchmark") == "auto"
    for raw, want in (("true", True), ("off", False), ("AUTO", "auto"), (True, True)):
        with config.override(dnn_benchmark=raw):
            assert config.get("dnn.benchmark") == want
    with pytest.raises(ConfigError, match="expected auto, true or false"):
        config.configure(dnn_benchmark="sometimes")


def test_theano_algo_settings_map_to_dnn_benchmark():
    conv = theanorc.convert([("dnn.conv.algo_fwd", "time_once", "t"),
                             ("dnn.conv.algo_bwd_data", "guess_once", "t")])
    assert conv.flags["dnn.benchmark"][0] == "false"  # the later setting wins, as in Theano
    conv = theanorc.convert([("dnn.conv.algo_fwd", "time_on_shape_change", "t")])
    assert conv.flags["dnn.benchmark"][0] == "true"


# --------------------------------------------------------------------------- optimizers and models


def test_optimizer_impl_flag_reaches_the_torch_optimizer():
    params = [torch.nn.Parameter(torch.ones(3))]
    assert optimizers.Adam().build(params).torch.defaults["fused"] is True
    with config.override(optimizer_impl="foreach"):
        opt = optimizers.Adam().build(params).torch
        assert opt.defaults["foreach"] is True and not opt.defaults["fused"]
    with config.override(optimizer_impl="loop"):
        opt = optimizers.SGD(momentum=0.9).build(params).torch
        assert opt.defaults["foreach"] is False and not opt.defaults["fused"]
    with config.override(optimizer_impl="fused"), pytest.raises(ConfigError, match="no fused RMSprop"):
        optimizers.RMSprop().build(params)


def _cnn():
    model = Sequential()
    model.add(Conv2D(4, (3, 3), input_shape=(8, 8, 3)))
    model.add(Flatten())
    model.add(Dense(2, activation="softmax"))
    model.compile(loss="categorical_crossentropy", optimizer="adam")
    return model


@pytest.mark.parametrize("flag, channels_last",
                         [("auto", True), ("channels_last", True), ("contiguous", False)])
def test_memory_format_flag_sets_the_conv_kernels_layout(flag, channels_last):
    x = np.random.default_rng(0).random((8, 8, 8, 3), dtype=np.float32)
    y = np.eye(2, dtype=np.float32)[np.arange(8) % 2]
    with config.override(device="cpu", print_active_device=False, memory_format=flag):
        model = _cnn()
        model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    kernel = model.layers[0].weight
    assert kernel.is_contiguous(memory_format=torch.channels_last) is channels_last
    assert kernel.is_contiguous() is not channels_last


def test_wrapped_module_image_arrays_follow_the_memory_format():
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 2, 3), torch.nn.Flatten(), torch.nn.LazyLinear(2))
    net(torch.zeros(1, 3, 8, 8))
    for flag, want in (("auto", True), ("contiguous", False)):
        with config.override(device="cpu", print_active_device=False, memory_format=flag):
            model = Model(net)
            model.compile(loss="mse", optimizer="sgd")
            model._get_trainer()
            assert model._image_input is want


def test_fit_facts_describe_arrays_and_iterables(monkeypatch):
    x = np.random.default_rng(0).random((8, 8, 8, 3), dtype=np.float32)
    y = np.eye(2, dtype=np.float32)[np.arange(8) % 2]
    seen = []
    original = setup.fast_paths
    monkeypatch.setattr(setup, "fast_paths",
                        lambda facts, inventory=None: seen.append(facts) or original(facts))
    with config.override(device="cpu", print_active_device=False):
        model = _cnn()
        model.fit(x, y, batch_size=4, epochs=1, verbose=0)
        model.fit([(x[:4], y[:4]), (x[4:], y[4:])], epochs=1, verbose=0)
    arrays, loader = seen
    assert arrays == FitFacts(device="cpu", has_conv=True, fixed_shapes=True, optimizer="Adam",
                              optimizer_impl="fused", arrays_on_device=True)
    assert loader.fixed_shapes is False and loader.arrays_on_device is None and loader.loader_pins is None
    seen.clear()
    with config.override(device="cpu", print_active_device=False):
        dataset = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
        model.fit(torch.utils.data.DataLoader(dataset, batch_size=4), epochs=1, verbose=0)
    assert seen[0].loader_pins is False


def test_choice_is_plain_data():
    assert Choice(True, "x") == Choice(True, "x")


# --------------------------------------------------------------------------- selftest probes (item 3)


def test_expected_follows_the_decisions_and_mismatches_name_the_culprit():
    facts = FitFacts("cuda:0", (8, 0), has_conv=True, fixed_shapes=True, optimizer="Adam")
    want = expected(flags(), facts)
    assert want == {"benchmark": True, "tf32": (True, True), "channels_last": True, "fused": True}
    want = expected(flags(tf32="off", memory_format="contiguous", optimizer__impl="foreach"),
                    FitFacts("cuda:0", (8, 0), has_conv=True, fixed_shapes=False, optimizer="Adam"))
    assert want == {"benchmark": False, "tf32": (False, False), "channels_last": False, "fused": False}
    assert expected(flags(), FitFacts("cuda:0", (9, 0), optimizer="RMSprop"))["fused"] is False
    assert mismatches(want, {**want, "tf32": (True, True), "fused": None}) == [
        "tf32: expected (False, False), saw (True, True)", "fused: expected False, saw None"]
    assert mismatches(want, {**want, "tf32": (True, True)}, ["benchmark"]) == []


def test_sync_guard_covers_steps_2_to_n_of_each_epoch():
    calls = []
    guard = SyncGuard(calls.append)
    guard.set_params({"steps": 4})
    for epoch in range(2):
        for batch in range(4):
            guard.on_train_batch_begin(batch)
            calls.append(f"step {batch}")
            guard.on_train_batch_end(batch)
        guard.on_epoch_end(epoch)
    guard.on_train_end()
    assert calls == ["step 0", True, "step 1", "step 2", "step 3", False] * 2
    assert guard.guarded == [1, 2, 3, 1, 2, 3]


def test_probed_cpu_fit_keeps_channels_last_uses_fused_adam_and_reads_nothing_back_in_steps_2_to_n():
    """The probes behind `arignote selftest`'s fast-path items, on a real fit on the CPU: every
    conv2d output channels-last, fused Adam, and no `.item()`-style read in steps 2..N (on a GPU
    the same guard is torch.cuda.set_sync_debug_mode('error'))."""
    counter = HostSyncCounter()
    facts, seen = observe_fit({}, "cpu", sync_guard=True, sync_switch=counter.switch)
    assert facts.device == "cpu" and facts.fixed_shapes is True and facts.optimizer == "Adam"
    assert seen["guarded"] == list(range(1, 8))  # 256 samples at batch 32: steps 2..8
    assert counter.ops > 7 * 20 and counter.syncs == 0
    assert len(seen["conv_outputs"]) >= 2 * 8 and seen["channels_last"] is True
    assert seen["fused"] is True
    with config.override(memory_format="contiguous"):
        _, plain = observe_fit({}, "cpu")
    # Keras-layout NHWC batches are channels-last in memory once viewed as NCHW: oneDNN keeps that
    # layout even with contiguous kernels (seen here), so the flag changes the kernels only (its doc)
    assert plain["conv_outputs"] and plain["channels_last"] is True


def test_the_sync_guard_is_not_tripped_by_the_run_status_record_on_a_slow_machine(monkeypatch):
    """The run-status record reads the batch logs every `status.INTERVAL` seconds: on a loaded machine
    (or a first cuDNN step) that fell inside the guarded steps, 2 reads (seen in a full run at load 6).
    With the interval at 0 (a record at every batch) the guarded steps still read nothing back."""
    from arignote.share import status

    monkeypatch.setattr(status, "INTERVAL", 0.0)
    counter = HostSyncCounter()
    _, seen = observe_fit({}, "cpu", sync_guard=True, sync_switch=counter.switch)
    assert seen["guarded"] == list(range(1, 8)) and counter.syncs == 0


def test_host_sync_counter_sees_item_calls():
    counter = HostSyncCounter()
    counter.switch(True)
    t = torch.ones(3)
    float(t.sum())
    bool(t.max() > 0)
    counter.switch(False)
    t.sum().item()  # after the switch: not counted
    assert counter.syncs == 2


def test_host_sync_counter_sees_the_data_dependent_shapes_that_sync_a_gpu():
    """On a GPU, set_sync_debug_mode('error') also raises on operators whose output size depends on
    the values (nonzero: boolean-mask indexing, masked_select, unique); on a CPU they are free, so a
    CPU run of the guarded steps only sees them through this counter."""
    counter = HostSyncCounter()
    t = torch.arange(6.0)
    counter.switch(True)
    t[t > 2]
    t.masked_select(t > 1)
    torch.unique(t)
    t.nonzero()
    t[t > 4] = 0.0
    t[torch.tensor([1, 2])]  # integer indices: the output size is known, no sync
    t[1:3]
    torch.where(t > 1, t, 0.0)  # the three-argument form keeps its shape
    counter.switch(False)
    assert counter.seen == ["index", "masked_select", "_unique2", "nonzero", "index_put_"]
    assert counter.syncs == 5


def test_fast_path_items_are_selftest_checks_run_by_the_gpu_tests():
    """Each fast-path item is an `arignote selftest` check needing one GPU, so tests/test_cuda_gpu.py's
    `test_selftest_item` (gpu-marked: skipped here with the reason) runs it through the same runner."""
    fast = {c.name: c for c in selfchecks.CHECKS if c.run.__module__ == selfchecks_fast.__name__}
    assert sorted(fast) == ["fast-autotune", "fast-channels-last", "fast-fused-optimizer", "fast-tf32",
                            "no-host-sync"]
    assert all(c.gpus == 1 for c in fast.values())

    why = dict((c.name, reason) for c, reason in selfchecks.plan(NS(gpus=[], cuda_reason="no driver")))
    assert {why[name] for name in fast} == {"needs a CUDA GPU (no driver)"}


def test_docs_banner_example_is_what_fit_prints():
    page = (Path(__file__).resolve().parents[1] / "docs" / "devices.md").read_text()
    block = page.split("## Fast paths on a GPU", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    facts = FitFacts(device="cuda:0", capability=(9, 0), has_conv=True, fixed_shapes=True, optimizer="Adam",
                     optimizer_impl="fused", arrays_on_device=True)
    assert block.splitlines() == [fastpaths.tf32_line(fastpaths.tf32(flags(), (9, 0))),
                                  fastpaths.fit_line(flags(), facts)]


def test_bench_predictions_use_each_rows_tf32(monkeypatch):
    """`arignote bench` on a GPU sets each measured row beside the prediction with its own TF32:
    the seeds' rows run with tf32=off, cuda-fast with it on."""
    seen = []

    def fake_plan(model, batch, assume=perfmodel.Assumptions()):
        seen.append((batch, assume.tf32))
        step = opcount.StepCount((), batch)
        rows = perfmodel.table([(2e9, 1e3, True)] * 50, 0, batch, assume=assume)  # matmul-bound
        return plan.StepPlan(model, batch, step, step, 0, 0, rows)

    monkeypatch.setattr(plan, "plan_model", fake_plan)
    h100 = "NVIDIA H100 80GB HBM3"
    runs = [Run("cuda", "arignote", 32, epoch_seconds=[3.0], samples=45000, device_name=h100),
            Run("cuda-fast", "arignote", 32, epoch_seconds=[1.0], samples=45000, device_name=h100)]
    lines = bench_cmd._predictions("cnn", runs).strip().splitlines()[1:]
    assert seen == [(32, False), (32, True)]
    assert [line.split()[0] for line in lines] == ["cuda", "cuda-fast"]
    eager = [float(line.split("predicted eager ")[1].split()[0]) for line in lines]
    assert eager[0] > eager[1]  # fp32 matmuls predicted slower than TF32
    names = ("cuda-nodnn", "cuda", "cuda-benchmark", "cuda-fast", "all-gpus", "cpu")
    assert [configs.tf32_of(n) for n in names] == [False, False, False, True, True, True]


def test_plan_assumptions_follow_the_tf32_flag():
    assert plan.assumptions_from_flags().tf32 is True
    with config.override(tf32="off"):
        assert plan.assumptions_from_flags().tf32 is False
    with config.override(tf32="torch"):
        assert plan.assumptions_from_flags().tf32 is True


@pytest.mark.parametrize("matmul, conv", [(True, True), (False, False), (False, True), (True, False)])
def test_tf32_switches_leave_torchs_legacy_readers_working(restore_switches, matmul, conv):
    """Setting TF32 only through torch's ``fp32_precision`` leaves its legacy state behind, and
    then ``torch.get_float32_matmul_precision()`` and ``torch.backends.cudnn.allow_tf32`` (read by
    inductor's autotune cache and GPU conv templates, and by user code) raise RuntimeError ("mix of
    the legacy and new APIs").
    Both readers must agree with what was set (the switches are host state: checkable on a CPU)."""
    cuda.set_tf32(matmul, conv)
    assert torch.backends.cuda.matmul.allow_tf32 is matmul
    assert torch.backends.cudnn.allow_tf32 is conv
    assert torch.get_float32_matmul_precision() == ("high" if matmul else "highest")
    assert cuda.tf32_state() == (matmul, conv)
    if cuda._new_tf32_api():
        assert torch.backends.cuda.matmul.fp32_precision == ("tf32" if matmul else "ieee")


def test_switches_follow_the_flags_at_each_device_and_fit_and_banners_say_so(monkeypatch, restore_switches):
    """Issue 28 W7: dnn.enabled, dnn.deterministic and tf32 were applied at the first GPU's prepare
    only while each banner rendered from the flags as they are then: a second GPU's banner could say
    "TF32 on" while TF32 stayed off. Each prepare of a new device and each fit applies them now."""
    from arignote.runtime import memory

    monkeypatch.setattr(cuda, "cudnn_available", lambda: True)  # a GPU inventory, on a CPU build
    monkeypatch.setattr(memory, "plan_for", lambda dev: None)
    monkeypatch.setattr(memory, "apply", lambda plan, dev: None)
    setup.reset()
    a100 = GPUInfo(1, "NVIDIA A100-SXM4-40GB", "0000:19:00.0", 40960 << 20, 40000 << 20, (8, 0), "u1")
    inventory = Inventory(gpus=(H100, a100), cpu_name="EPYC", cpu_threads=2)
    out = io.StringIO()
    with config.override(print_active_device=True), contextlib.redirect_stdout(out):
        with config.override(tf32="off", dnn_deterministic=True):
            setup.prepare("cuda0", inventory)
            assert cuda.tf32_state() == (False, False) and cuda.cudnn_flags()[2] is True
        with config.override(tf32="on", dnn_enabled="false"):
            setup.prepare("cuda1", inventory)
            assert cuda.tf32_state() == (True, True)  # the banner printed for cuda1 says so: true
            assert cuda.cudnn_flags()[0] is False and cuda.cudnn_flags()[2] is False
            with config.override(tf32="off"):  # changed between fits, on a prepared device
                setup.fast_paths(FitFacts(device="cuda:0", has_conv=True, fixed_shapes=True), inventory)
                assert cuda.tf32_state() == (False, False) and cuda.cudnn_flags()[1] is False
    text = out.getvalue()
    assert text.index("TF32 off") < text.index("TF32 on: float32 matmuls and convolutions")
