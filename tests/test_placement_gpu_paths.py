"""Placement contexts on several GPUs, the logic checked on a CPU (issue 28 C3, W4): fakes of two
devices are a CPU and a ``meta`` tensor, which torch's same-device rule treats as two devices
(``torch/_refs/__init__.py``: ``stack`` is ``cat`` of unsqueezed tensors, ``cat`` runs
``utils.check_same_device(*tensors, allow_cpu_scalar_tensors=False)``; the eager kernels raise the
same way, as the first test shows)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
import torch

from arignote import config, devices
from arignote.devices import GPUInfo, Inventory, cuda, inventory
from arignote.parallel import ddp, placement
from arignote.runtime import memory, setup


def test_one_stack_over_two_devices_raises_a_device_error_not_an_out_of_memory():
    """What the OOM stand-in backward did under placement + data parallel (C3)."""
    on0, on1 = torch.zeros(3, requires_grad=True), torch.zeros(4, device="meta", requires_grad=True)
    with pytest.raises(RuntimeError, match="is not on the expected device") as err:
        torch.stack([p.reshape(-1)[:1].sum() for p in (on0, on1)]).sum().mul(0)
    assert not isinstance(err.value, torch.OutOfMemoryError)


def test_the_stand_in_zero_stacks_per_device_and_lands_on_the_first_parameters_device():
    params = [torch.zeros(2, 3, device="meta", requires_grad=True), torch.zeros(3, requires_grad=True),
              torch.zeros(5, device="meta", requires_grad=True), torch.zeros(1, requires_grad=True)]
    zero = ddp.stand_in_zero(params)
    assert zero.device.type == "meta" and zero.shape == () and zero.requires_grad


def test_the_stand_in_zero_gives_every_parameter_a_zero_gradient():
    params = [torch.randn(3, 2, requires_grad=True), torch.randn(4, requires_grad=True)]
    ddp.stand_in_zero(params).backward()
    assert [p.grad.tolist() for p in params] == [[[0.0, 0.0]] * 3, [0.0] * 4]


def test_placed_gpus_are_the_other_gpus_the_layers_sit_on_relative_to_the_replica():
    layers = [NS(device_context=c) for c in ("dev0", "dev1", "host", None)]
    with config.override(contexts="dev0->cuda0;dev1->cuda1;host->cpu;spare->cuda2"):
        assert placement.placed_gpus(layers, "cuda:0") == ["cuda:1"]  # spare: no layer, no memory policy
    with config.override(contexts="dev0->cuda0;dev1->cuda1;host->cpu"):
        placement.set_replica_gpus([2, 3])  # replica 1 of device=all on 4 GPUs
        try:
            assert placement.placed_gpus(layers, "cuda:2") == ["cuda:3"]
        finally:
            placement.set_replica_gpus(None)


def _fake_two_gpu_box(monkeypatch):
    gpus = tuple(GPUInfo(i, "NVIDIA A100-SXM4-80GB", f"0000:0{7 + i}:00.0", 81559 << 20, 81000 << 20, (8, 0),
                         f"u{i}") for i in range(2))
    box = Inventory(gpus=gpus, cpu_name="AMD EPYC", cpu_threads=2, cuda_reason=None)
    monkeypatch.setattr(inventory, "gpu_count", lambda: (2, None))
    monkeypatch.setattr(devices, "current_inventory", lambda refresh=False: box)
    monkeypatch.setattr(setup, "current_inventory", lambda refresh=False: box)
    for name in ("set_cudnn", "set_tf32"):
        monkeypatch.setattr(cuda, name, lambda *a: None)
    monkeypatch.setattr(cuda, "cudnn_available", lambda: True)
    fractions = {}
    monkeypatch.setattr(cuda, "set_memory_fraction", lambda f, i: fractions.__setitem__(i, f))
    monkeypatch.setattr(cuda, "mem_get_info", lambda i: (81000 << 20, 81559 << 20))
    monkeypatch.setattr(cuda, "memory_in_use", lambda i: (0, 0))
    return fractions


def test_memory_limit_reaches_every_gpu_the_layers_are_placed_on(monkeypatch, capsys):
    """W4: prepare() ran for the replica's first GPU only; the trainer now prepares each placed GPU:
    the cap on both, a banner line for each, and the OOM explanation names the GPU that ran out."""

    fractions = _fake_two_gpu_box(monkeypatch)
    with config.override(device="cuda0", contexts="dev0->cuda0;dev1->cuda1", memory_limit=0.25,
                         print_active_device=True):
        layers = [NS(device_context="dev0"), NS(device_context="dev1")]
        setup.prepare("cuda:0")
        for gpu in placement.placed_gpus(layers, "cuda:0"):
            setup.prepare(gpu)
        out = capsys.readouterr().out
        assert set(fractions) == {0, 1} and all(abs(f - 0.25) < 0.01 for f in fractions.values())
        assert "Mapped cuda:0" in out and "Mapped cuda:1" in out
        assert out.count("by memory.limit") == 2
        oom = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 30.00 GiB. GPU 1 has a total "
                                     "capacity of 79.65 GiB of which 50.00 GiB is free.")
        text = memory.explain_oom(oom, "cuda:0")
        assert text.startswith("cuda:1 hit the caching allocator's cap of 20389/81559 MiB")
        from arignote.training.oom_memory import memory_figures

        monkeypatch.setattr(cuda, "peak_memory", lambda i: (0, 0))
        figures = memory_figures("cuda:0").split(" | ")
        assert [f.split(":")[0] + ":" + f.split(":")[1] for f in figures] == ["cuda:0", "cuda:1"]
        assert all(f.endswith("capped at 20389 MiB by memory.limit=0.25") for f in figures)


def test_the_trainer_prepares_each_gpu_its_layers_are_placed_on(monkeypatch):
    """The model's trainer set-up calls prepare() for the strategy's GPU and then for each placed one
    (the strategy, the moves and the trainer replaced: this CPU build cannot hold CUDA tensors)."""
    from arignote.layers import Dense
    from arignote.models import Sequential, trainer_setup

    prepared = []
    monkeypatch.setattr(setup, "configured_devices", lambda: [NS(torch="cuda:0")])
    monkeypatch.setattr(setup, "prepare",
                        lambda d, layout=None: prepared.append(str(getattr(d, "torch", d))))
    # (the strategies and the trainer are imported where the trainer is built: replaced in their modules)
    monkeypatch.setattr("arignote.parallel.strategy_for", lambda chosen: NS(device="cuda:0"))
    monkeypatch.setattr(trainer_setup.Precision, "from_config", staticmethod(lambda d: None))
    monkeypatch.setattr("arignote.training.loop.Trainer", lambda model, strategy, precision: "trainer")
    with config.override(contexts="dev0->cuda0;dev1->cuda1"):
        model = Sequential()
        with placement.device("dev0"):
            model.add(Dense(4, input_shape=(3,)))
        with placement.device("dev1"):
            model.add(Dense(2))
        model.compile("sgd", "mse")
        monkeypatch.setattr(type(model), "_place", lambda self, device: None)
        assert model._get_trainer() == "trainer"
    assert prepared == ["cuda:0", "cuda:1"]


# --------------------------------------------------------------------------- S4: batches of an iterable


def test_a_uint8_batch_crosses_as_uint8_is_pinned_once_and_widens_on_the_device(monkeypatch):
    """``training.data._move`` for a GPU, with ``meta`` standing in for the GPU and pinning recorded
    (a CPU build cannot pin): the loader's pinned uint8 batch is copied as it is (1 byte a value, not
    the 8 of as_tensor's int64) and converted after the copy; float64 is narrowed before it; the
    values are as_tensor's."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from arignote.devices import fastpaths
    from arignote.training import data

    pinned: set[int] = set()
    pins: list[torch.dtype] = []

    def pin_memory(self):
        pins.append(self.dtype)
        pinned.add(self.data_ptr())
        return self

    monkeypatch.setattr(torch.Tensor, "pin_memory", pin_memory)
    monkeypatch.setattr(torch.Tensor, "is_pinned", lambda self: self.data_ptr() in pinned)
    monkeypatch.setattr(fastpaths, "pin_batches", lambda kind: True)

    class Copies(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func is torch.ops.aten._to_copy.default:
                self.seen.append((args[0].device.type, args[0].dtype, out.device.type, out.dtype))
            return out

    images = torch.randint(0, 255, (4, 3), dtype=torch.uint8)
    images.pin_memory()  # what a DataLoader(pin_memory=True) hands over
    pins.clear()
    with Copies() as copies:
        out = data._move(images, torch.device("meta"), torch.float32, "x")
    assert (out.device.type, out.dtype) == ("meta", torch.int64)
    assert copies.seen == [("cpu", torch.uint8, "meta", torch.uint8),
                           ("meta", torch.uint8, "meta", torch.int64)]
    assert pins == []  # pinned by its loader: not pinned again
    with Copies() as copies:
        data._move(torch.zeros(2, dtype=torch.float64), torch.device("meta"), torch.float32, "x")
    assert copies.seen[0][:2] == ("cpu", torch.float64) and copies.seen[0][3] == torch.float32
    assert copies.seen[-1][2:] == ("meta", torch.float32) and pins == [torch.float32]
    host = data._move(images.numpy(), torch.device("cpu"), torch.float32, "x")  # the CPU path: as before
    assert torch.equal(host, data.as_tensor(images, torch.float32)) and host.dtype == torch.int64
    with Copies() as copies:
        out = data._move(images > 100, torch.device("meta"), torch.float32, "y")  # bools: 1 byte -> float
    assert copies.seen[0][1] == torch.bool and out.dtype == torch.float32


# --------------------------------------------------------------------------- NCCL: the stall notice


def test_under_nccl_rank_0s_stall_notice_says_it_is_the_diagnosis(capfd):
    """An NCCL collective that times out never raises in Python (torch's watchdog tears the process
    down: TORCH_NCCL_ASYNC_ERROR_HANDLING, ProcessGroupNCCL.hpp), so the data-parallel strategy's
    missing-rank diagnosis cannot run there: the heartbeat's notice is the answer, and says so."""
    import time

    import torch.distributed as dist

    from arignote.parallel.heartbeat import Heartbeat

    store = dist.TCPStore("127.0.0.1", 0, 1, is_master=True, wait_for_workers=False)
    main = Heartbeat(store.host, store.port, 0, 2, interval=30.0, notice_after=0.5)
    try:
        main.note = ddp.NCCL_STALL_NOTE
        store.set("arignote/0/hb/1", f"{time.time() - 20:.3f} 4 424242 elsewhere")
        main._watch()
        err = capfd.readouterr().err
        assert err.startswith("arignote: rank 1 (pid 424242 on elsewhere) did not arrive")
        assert err.rstrip().endswith("then its watchdog ends the job without naming a rank: this notice is "
                                     "the diagnosis")
    finally:
        main.close()
