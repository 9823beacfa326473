"""Device specs, resolution on explicit inventories, queries, banner, prepare() and ``arignote devices``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from arignote import cli, config
from arignote.devices import (
    Device,
    DeviceError,
    GPUInfo,
    Inventory,
    banner,
    current_inventory,
    gpu_device_name,
    is_gpu_available,
    list_devices,
    parse_spec,
    resolve,
)
from arignote.devices.spec import Spec, rank_by_free_memory
from arignote.runtime import setup
from arignote.runtime.setup import configured_devices, prepare

MiB = 1 << 20
A100 = "NVIDIA A100-SXM4-80GB"


def two_a100s(free1=40779):
    """Two 80 GB GPUs, the second half used."""
    return Inventory(gpus=(GPUInfo(0, A100, "0000:07:00.0", 81559 * MiB, 81000 * MiB, (8, 0), "uuid-0"),
                           GPUInfo(1, A100, "0000:0f:00.0", 81559 * MiB, free1 * MiB, (8, 0), "uuid-1")),
                     cpu_name="AMD EPYC 7763", cpu_threads=8, cuda_reason=None)


NO_GPU = Inventory(gpus=(), cpu_name="AMD EPYC", cpu_threads=2,
                   cuda_reason="this torch build (2.13.0+cpu) has no CUDA support")


@pytest.fixture(autouse=True)
def fresh_setup():
    setup.reset()
    yield
    setup.reset()


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize("text,spec", [
    ("cpu", Spec("cpu", text="cpu")),
    ("auto", Spec("auto", text="auto")),
    ("all", Spec("all", text="all")),
    ("cuda", Spec("cuda", (0,), text="cuda")),
    ("cuda1", Spec("cuda", (1,), text="cuda1")),
    ("cuda:3", Spec("cuda", (3,), text="cuda:3")),
    ("gpu", Spec("cuda", (0,), text="gpu")),
    ("gpu2", Spec("cuda", (2,), text="gpu2")),
    ("cuda0,cuda2", Spec("cuda", (0, 2), text="cuda0,cuda2")),
    (" CUDA0, cuda:2 ", Spec("cuda", (0, 2), text="CUDA0, cuda:2")),
    ("free:2", Spec("free", count=2, text="free:2")),
])
def test_parse_spec(text, spec):
    assert parse_spec(text) == spec
    assert parse_spec(spec) is spec


@pytest.mark.parametrize("text,why", [
    ("cdua", "'cdua' is not a device; use auto, cpu"),
    ("cuda-1", "'cuda-1' is not a device"),
    ("cuda:", "'cuda:' is not a device"),
    ("cpu,cuda0", "cpu cannot be mixed"),
    ("cuda1,cuda:1", "cuda1 is listed twice"),
    ("free:0", "free:N needs N >= 1"),
    ("free", "write free:N"),
    ("", "'' is not a device"),
])
def test_parse_spec_errors(text, why):
    with pytest.raises(DeviceError, match="device=.*" + why.replace("(", r"\(")):
        parse_spec(text)


def test_device_error_is_a_value_error_and_config_error():
    assert issubclass(DeviceError, ValueError) and issubclass(DeviceError, config.ConfigError)
    with pytest.raises(DeviceError, match="must be a string"):
        parse_spec(3)


# --------------------------------------------------------------------------- resolution


def names(devices):
    return [str(d) for d in devices]


@pytest.mark.parametrize("spec,want", [
    ("auto", ["cuda:0", "cuda:1"]), ("all", ["cuda:0", "cuda:1"]), ("cpu", ["cpu"]), ("cuda", ["cuda:0"]),
    ("cuda1", ["cuda:1"]), ("cuda:1,cuda0", ["cuda:1", "cuda:0"]), ("gpu1", ["cuda:1"]),
    ("free:1", ["cuda:0"]), ("free:2", ["cuda:0", "cuda:1"]),
])
def test_resolve_on_two_gpus(spec, want):
    devices = resolve(spec, two_a100s())
    assert names(devices) == want
    for d in devices:
        if d.is_cuda:
            assert d.info.index == d.index and d.name == A100 and d.total_memory == 81559 * MiB


def test_resolve_on_cpu_only_machine():
    assert names(resolve("auto", NO_GPU)) == ["cpu"]
    (cpu,) = resolve("cpu", NO_GPU)
    assert cpu.name == "AMD EPYC" and cpu.info.threads == 2 and cpu.pci_bus_id is None


@pytest.mark.parametrize("spec", ["cuda", "cuda0", "all", "free:1", "cuda0,cuda1"])
def test_gpu_request_without_gpu_names_reason_and_fix(spec):
    with pytest.raises(DeviceError) as info:
        resolve(spec, NO_GPU)
    msg = str(info.value)
    assert f"device={spec} needs a CUDA GPU" in msg
    assert "this torch build (2.13.0+cpu) has no CUDA support" in msg
    assert "device=auto" in msg and "device=cpu" in msg


def test_missing_gpu_names_the_gpus_that_exist():
    with pytest.raises(DeviceError) as info:
        resolve("cuda7", two_a100s())
    msg = str(info.value)
    assert "there is no cuda7" in msg
    assert f"this machine has 2 GPUs: cuda:0 ({A100}), cuda:1 ({A100})" in msg
    assert "cuda0..cuda1" in msg


def test_free_n_too_many_and_default_selector_ranks_by_free_memory():
    with pytest.raises(DeviceError, match="asks for 3 GPUs but this machine has 2"):
        resolve("free:3", two_a100s())
    inv = two_a100s(free1=81500)  # now the second GPU is the emptier one
    assert rank_by_free_memory(2, inv) == [1, 0]
    assert names(resolve("free:1", inv)) == ["cuda:1"]


def test_free_n_uses_the_given_selector_and_checks_its_answer():
    calls = []

    def select(n, inventory):
        calls.append((n, len(inventory.gpus)))
        return [inventory.gpus[1]]  # objects with .index are accepted too

    assert names(resolve("free:1", two_a100s(), select=select)) == ["cuda:1"]
    assert calls == [(1, 2)]
    with pytest.raises(DeviceError, match=r"selector returned \[5\]"):
        resolve("free:1", two_a100s(), select=lambda n, inv: [5])
    with pytest.raises(DeviceError, match=r"selector returned \[0, 0\]"):
        resolve("free:2", two_a100s(), select=lambda n, inv: [0, 0])


def test_device_identity_str_and_torch():
    inv = two_a100s()
    a, b = resolve("cuda1", inv)[0], resolve("cuda1", two_a100s(free1=1))[0]
    assert a == b and hash(a) == hash(b)  # info (a snapshot) does not take part
    assert str(a) == "cuda:1" and a.torch.type == "cuda" and a.torch.index == 1
    assert str(Device("cpu")) == "cpu" and Device("cpu").torch.type == "cpu"
    assert a.capability == (8, 0) and a.pci_bus_id == "0000:0f:00.0" and a.free_memory == 40779 * MiB
    d = a.as_dict()
    assert d["device"] == "cuda:1" and d["capability"] == "8.0" and d["total_memory"] == 81559 * MiB


# --------------------------------------------------------------------------- queries


def test_queries_on_explicit_inventories():
    inv = two_a100s()
    assert is_gpu_available(inv) and not is_gpu_available(NO_GPU)
    assert gpu_device_name(1, inv) == A100 and gpu_device_name(2, inv) is None
    assert names(list_devices(inventory=inv)) == ["cpu", "cuda:0", "cuda:1"]
    assert names(list_devices("cuda", inventory=inv)) == ["cuda:0", "cuda:1"]
    assert names(list_devices("gpu", inventory=inv)) == ["cuda:0", "cuda:1"]
    assert names(list_devices("cpu", inventory=inv)) == ["cpu"]
    with pytest.raises(DeviceError, match="kind must be"):
        list_devices("tpu", inventory=inv)


def test_live_inventory_on_this_machine_is_consistent():
    from arignote.devices import cuda

    inv = current_inventory()
    assert current_inventory() is inv  # cached
    assert len(current_inventory(refresh=True).gpus) == len(inv.gpus)  # re-read, same GPUs
    assert len(inv.gpus) == cuda.device_count()
    assert inv.cpu_threads >= 1 and inv.cpu_name
    assert (inv.cuda_reason is None) == bool(inv.gpus)
    assert is_gpu_available() == bool(inv.gpus)
    import arignote

    assert arignote.is_gpu_available() == bool(inv.gpus)
    assert names(arignote.list_devices("cpu")) == ["cpu"]


@pytest.mark.parametrize("user,want", [(None, "PCI_BUS_ID False"), ("FASTEST_FIRST", "FASTEST_FIRST True")])
def test_import_arignote_sets_pci_bus_order_unless_user_set(user, want):
    import os

    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_ORDER"}
    if user:
        env["CUDA_DEVICE_ORDER"] = user
    code = ("import os, sys, arignote; from arignote import devices; "
            "print(os.environ['CUDA_DEVICE_ORDER'], devices.ORDER_WAS_SET_BY_USER, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.stdout.split() == [*want.split(), "False"], out.stderr


class _FakeTorch:
    def __init__(self, initialised):
        self.cuda = type("cuda", (), {"is_initialized": staticmethod(lambda: initialised)})


class _FakeLibcuda:
    """cuDeviceGetCount as libcuda answers it: CUDA_ERROR_NOT_INITIALIZED (3) before cuInit, 0 after."""

    def __init__(self, status):
        self.status, self.calls = status, 0

    def cuDeviceGetCount(self, count_ref):
        self.calls += 1
        return self.status


def test_device_order_set_when_the_driver_is_not_up_yet():
    from arignote.devices import order

    env = {}
    found = order.set_pci_bus_order(env, _FakeTorch(False), _FakeLibcuda(3))
    assert env == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert found == order.DeviceOrder(set_by_user=False) and not found.too_late and found.note() is None
    # torch not imported and libcuda not loaded: nothing can have initialised the driver
    assert order.set_pci_bus_order({}, None, None).too_late is False


def test_device_order_too_late_after_is_available_though_torch_is_not_initialised():
    """torch.cuda.is_available() (or device_count() without NVML) runs cuInit but leaves
    torch.cuda.is_initialized() False: only the driver probe sees it."""
    from arignote.devices import order

    libcuda = _FakeLibcuda(0)
    env = {}
    found = order.set_pci_bus_order(env, _FakeTorch(False), libcuda)
    assert libcuda.calls == 1 and found.too_late and "CUDA driver is initialised" in found.too_late_reason
    # the order this process has (CUDA read the variable at cuInit): the processes it starts, data-
    # parallel ranks 1..N among them, number the GPUs as rank 0 does (issue 28 W8; with PCI_BUS_ID
    # here they numbered them by PCI bus and took rank 0's fastest-first indices for other GPUs)
    assert env["CUDA_DEVICE_ORDER"] == "FASTEST_FIRST"
    assert "may differ from nvidia-smi" in found.note() and "import arignote first" in found.note()


def test_device_order_too_late_after_torch_cuda_initialised_and_user_choice_wins():
    from arignote.devices import order

    libcuda = _FakeLibcuda(3)
    found = order.set_pci_bus_order({}, _FakeTorch(True), libcuda)
    assert found.too_late and "torch.cuda is initialised" in found.too_late_reason and libcuda.calls == 0
    env = {"CUDA_DEVICE_ORDER": "FASTEST_FIRST"}
    found = order.set_pci_bus_order(env, _FakeTorch(True), _FakeLibcuda(0))
    assert env == {"CUDA_DEVICE_ORDER": "FASTEST_FIRST"} and found == order.DeviceOrder(set_by_user=True)


def test_device_order_probe_never_loads_libcuda():
    code = ("import sys, arignote.devices as d; "
            "print(d.DEVICE_ORDER.too_late, any('libcuda' in l for l in open('/proc/self/maps')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_spec_module_and_devices_package_import_without_torch():
    code = ("import sys; import arignote.devices.spec, arignote.devices.info; "
            "from arignote import config; config.get('device'); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


# --------------------------------------------------------------------------- configured devices


def test_configured_devices_follows_flag_and_names_source(monkeypatch):
    inv = two_a100s()
    assert names(configured_devices(inv)) == ["cuda:0", "cuda:1"]
    with config.override(device="cuda1"):
        assert names(configured_devices(inv)) == ["cuda:1"]
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cuda")
    config.reload()
    # the fit-time resolution against a given inventory (the first read's check of this machine is
    # tests/test_config_device_check.py)
    with config.unchecked(), pytest.raises(DeviceError,
                                           match=r"needs a CUDA GPU.*\(device flag from ARIGNOTE_FLAGS\)"):
        configured_devices(NO_GPU)
    with config.override(device="free:1"):
        assert names(configured_devices(inv, select=lambda n, i: [1])) == ["cuda:1"]


def test_configured_devices_live_default_is_auto():
    devices = configured_devices()
    assert names(devices) == (["cpu"] if not current_inventory().gpus else
                              [f"cuda:{g.index}" for g in current_inventory().gpus])


def test_free_n_uses_share_leasing_only_when_asked(monkeypatch):
    import arignote.share as share
    from arignote.devices import nvml

    calls = []
    monkeypatch.setattr(share, "select_for_device_spec", lambda n, inv: calls.append(("lease", n)) or [1])
    monkeypatch.setattr(share, "select_gpus", lambda n: calls.append(("look", n)) or [0])
    monkeypatch.setattr(nvml, "snapshot", lambda **kw: nvml.Snapshot(hostname="h", time=0.0, gpus=()))
    with config.override(device="free:1"):
        assert names(configured_devices(two_a100s())) == ["cuda:1"]
        assert names(configured_devices(two_a100s(), lease=False)) == ["cuda:0"]
    assert calls == [("lease", 1), ("look", 1)]

    def no_gpu(n, inv):
        raise share.NoFreeGPUError("cuda:0 busy, cuda:1 busy")

    monkeypatch.setattr(share, "select_for_device_spec", no_gpu)
    with config.override(device="free:1"), pytest.raises(DeviceError, match="device=free:1: cuda:0 busy"):
        configured_devices(two_a100s())


def test_torch_index_maps_nvml_gpus_by_uuid_else_bus():
    from types import SimpleNamespace

    inv = two_a100s()
    assert setup._torch_index(SimpleNamespace(uuid="GPU-uuid-1", pci_bus_id="x"), inv) == 1
    assert setup._torch_index(SimpleNamespace(uuid="", pci_bus_id="00000000:0F:00.0"), inv) == 1  # no UUID
    assert setup._torch_index(SimpleNamespace(uuid="", pci_bus_id="00000000:99:00.0"), inv) == -1


# --------------------------------------------------------------------------- banner


VERSIONS = banner.Versions("0.1.0", "2.13.0", "12.8", 91000, "2.27.3")


def test_banner_two_gpus_with_memory_plan():
    from arignote.runtime import memory

    inv = two_a100s()
    devices = resolve("all", inv)
    plans = {"cuda:0": memory.plan(0.8, 0, 81559 * MiB, 81000 * MiB, "cuda:0"),
             "cuda:1": memory.plan(0, 0.5, 81559 * MiB, 40779 * MiB, "cuda:1")}
    text = banner.render(devices, VERSIONS, plans)
    assert text.splitlines() == [
        "arignote 0.1.0 on torch 2.13.0, CUDA 12.8, cuDNN 91000",
        f"Mapped cuda:0 to {A100} (0000:07:00.0), 81559 MiB, 81000 MiB free",
        "Preallocating 65247/81559 MiB (0.80) on cuda:0",
        f"Mapped cuda:1 to {A100} (0000:0f:00.0), 81559 MiB, 40779 MiB free",
        "Memory on cuda:1: grow on demand, cached for reuse (memory.preallocate=0)",
        "Capping cuda:1 at 40779/81559 MiB (0.50) by memory.limit",
    ]


def test_banner_cpu_line_and_variants():
    cpu = resolve("cpu", NO_GPU)
    cpu_build = banner.Versions("0.1.0", "2.13.0")
    assert banner.render(cpu, cpu_build) == \
        "arignote 0.1.0 on torch 2.13.0 (CPU build) · device cpu: AMD EPYC, 2 threads"
    assert banner.render(cpu, VERSIONS) == \
        "arignote 0.1.0 on torch 2.13.0, CUDA 12.8, cuDNN 91000 · device cpu: AMD EPYC, 2 threads"
    no_header = banner.render(cpu, cpu_build, with_header=False, extra=["x"])
    assert no_header == "device cpu: AMD EPYC, 2 threads\nx"
    gpu = resolve("cuda0", two_a100s())
    assert banner.render(gpu, VERSIONS, cudnn_enabled=False).splitlines()[0] == \
        "arignote 0.1.0 on torch 2.13.0, CUDA 12.8, cuDNN 91000 (disabled by dnn.enabled=false)"
    assert banner.header(banner.Versions("0.1.0", "2.13.0", "12.8", None)).endswith("CUDA 12.8, no cuDNN")


def test_versions_current_matches_torch():
    import torch

    import arignote

    v = banner.Versions.current()
    assert v.arignote == arignote.__version__ and v.torch == torch.__version__.split("+")[0]
    assert v.cuda == torch.version.cuda


# --------------------------------------------------------------------------- prepare (CPU)


def test_prepare_cpu_prints_banner_once(capsys):
    inv = NO_GPU
    assert prepare("cpu", inventory=inv) is None
    out = capsys.readouterr().out
    assert out.startswith("arignote 0.1.0 on torch ")
    n = current_threads()
    assert out.rstrip().endswith(f"device cpu: AMD EPYC, {n} thread{'' if n == 1 else 's'}")
    assert out.count("\n") == 1
    prepare(Device("cpu"), inventory=inv)
    assert capsys.readouterr().out == ""


def current_threads():
    import torch

    return torch.get_num_threads()


def test_prepare_silent_when_flag_off_or_not_rank_0(capsys, monkeypatch):
    with config.override(print_active_device=False):
        prepare("cpu", inventory=NO_GPU)
    assert capsys.readouterr().out == ""
    setup.reset()
    monkeypatch.setenv("RANK", "1")
    prepare("cpu", inventory=NO_GPU)
    assert capsys.readouterr().out == ""
    setup.reset()
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(config.ConfigError, match="RANK='x'"):
        prepare("cpu", inventory=NO_GPU)


def test_prepare_applies_cpu_threads_and_notes(capsys):
    import torch

    before = torch.get_num_threads()
    try:
        with config.override(cpu_threads=1, memory_preallocate=0.5, precision="mixed-bf16"):
            prepare("cpu", inventory=NO_GPU)
        assert torch.get_num_threads() == 1
        out = capsys.readouterr().out
        assert "device cpu: AMD EPYC, 1 thread" in out
        assert "Precision mixed-bf16: autocast to bfloat16 on cpu, no gradient scaling" in out
        assert "memory.preallocate and memory.limit apply to GPUs only" in out
    finally:
        torch.set_num_threads(before)


def test_prepare_rejects_multi_device_spec():
    with pytest.raises(DeviceError, match="names 2 devices"):
        prepare("all", inventory=two_a100s())


# --------------------------------------------------------------------------- arignote devices


def test_devices_table_rows_are_exact():
    from arignote.commands import devices_cmd

    inv = two_a100s()
    inv = Inventory(inv.gpus, inv.cpu_name, inv.cpu_threads, None, 64 * 1024 * MiB, 32 * 1024 * MiB)
    text = devices_cmd.render(devices_cmd.rows(list_devices(inventory=inv)))
    assert text.splitlines() == [
        "device  name                   pci bus       memory                           capability",
        "cpu     AMD EPYC 7763          -             65536 MiB, 32768 MiB free (RAM)  8 threads",
        "cuda:0  NVIDIA A100-SXM4-80GB  0000:07:00.0  81559 MiB, 81000 MiB free        8.0",
        "cuda:1  NVIDIA A100-SXM4-80GB  0000:0f:00.0  81559 MiB, 40779 MiB free        8.0",
    ]


def test_devices_command_on_this_machine(capsys):
    assert cli.main(["devices"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["device", "name", "pci", "bus", "memory", "capability"]
    assert "\ncpu " in out
    assert "device=auto (default) -> " in out
    if not current_inventory().gpus:
        assert f"no CUDA GPU: {current_inventory().cuda_reason}" in out


def test_devices_command_json_and_unusable_flag(capsys, monkeypatch):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "device=cuda9")
    config.reload()
    assert cli.main(["devices", "--json", "--kind", "cpu"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["device"] for d in data["devices"]] == ["cpu"]
    assert data["devices"][0]["threads"] >= 1
    flag = data["device_flag"]
    assert flag["spec"] == "cuda9" and flag["source"] == "ARIGNOTE_FLAGS" and flag["devices"] == []
    assert "cuda9" in flag["error"]
    assert cli.main(["devices"]) == 0
    assert "the device flag cannot be used here: device=cuda9" in capsys.readouterr().out


def test_devices_command_rejects_bad_kind(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["devices", "--kind", "tpu"])
    assert info.value.code == 2

