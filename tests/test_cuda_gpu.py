"""devices/cuda.py against a real GPU (skipped without CUDA). Each test is small and cleans up.

Run on a GPU box with ``pytest -m gpu tests/test_cuda_gpu.py``. Memory policy tests start a fresh
Python process because the cap and the caching switch are process-wide.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

MiB = 1 << 20


def run_child(code: str, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON line as its result."""
    import os

    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=180, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_inventory_matches_torch():
    import torch

    from arignote.devices import cuda, current_inventory

    inv = current_inventory(refresh=True)
    assert len(inv.gpus) == torch.cuda.device_count() == cuda.device_count() > 0
    for g in inv.gpus:
        props = torch.cuda.get_device_properties(g.index)
        assert g.name == props.name and g.total_memory == props.total_memory
        assert 0 < g.free_memory <= g.total_memory
        assert g.capability == (props.major, props.minor)
        assert len(g.pci_bus_id) == 12 and g.pci_bus_id.count(":") == 2
    assert inv.cuda_reason is None
    assert cuda.cudnn_version() == torch.backends.cudnn.version()


def test_peak_memory_and_reset():
    import torch

    from arignote.devices import cuda

    cuda.reset_peak_memory(0)
    x = torch.empty(64 * MiB, dtype=torch.uint8, device="cuda:0")
    allocated, reserved = cuda.peak_memory(0)
    assert allocated >= 64 * MiB and reserved >= allocated
    del x
    cuda.empty_cache()
    cuda.reset_peak_memory(0)
    assert cuda.peak_memory(0)[0] < 64 * MiB
    assert "allocated_bytes.all.peak" in cuda.memory_stats(0)


def test_preallocation_is_reserved_by_the_caching_allocator():
    got = run_child("""
        import json, torch
        from arignote import config, memory
        from arignote.devices import resolve, current_inventory
        dev = resolve("cuda0", current_inventory())[0]
        p = memory.plan(256, 0, dev.total_memory, dev.free_memory, "cuda:0")
        memory.apply(p, dev)
        used = {"reserved": torch.cuda.memory_reserved(0), "allocated": torch.cuda.memory_allocated(0)}
        print(json.dumps(used))
    """)
    assert got["reserved"] >= 256 * MiB and got["allocated"] == 0


def test_limit_raises_oom_naming_the_flag():
    got = run_child("""
        import json, torch
        from arignote import config, memory
        from arignote.devices import prepare, resolve, current_inventory
        config.configure(memory_limit=512, print_active_device=False)
        dev = resolve("cuda0", current_inventory())[0]
        prepare(dev)
        try:
            with memory.oom_explained(dev):
                torch.empty(1024 * (1 << 20), dtype=torch.uint8, device="cuda:0")
            print(json.dumps({"raised": False}))
        except torch.OutOfMemoryError as exc:
            print(json.dumps({"raised": True, "text": str(exc)}))
    """)
    assert got["raised"] and "memory.limit=512 (from code)" in got["text"]


def test_disable_caching_returns_memory():
    got = run_child("""
        import json, torch
        from arignote.devices import cuda
        cuda.disable_caching()
        x = torch.empty(64 * (1 << 20), dtype=torch.uint8, device="cuda:0"); del x
        print(json.dumps({"reserved": torch.cuda.memory_reserved(0), "caching": cuda.caching_enabled()}))
    """)
    assert got["caching"] is False and got["reserved"] < 64 * MiB


def test_pci_bus_order_is_set_before_cuda_init():
    got = run_child("""
        import json, os
        import arignote.devices.cuda as c
        print(json.dumps({"order": os.environ.get("CUDA_DEVICE_ORDER"), "late": c.ORDER_SET_TOO_LATE}))
    """)
    assert got == {"order": "PCI_BUS_ID", "late": False}


def test_mixed_fp16_scaler_enabled_on_cuda():
    import torch

    from arignote.precision import Precision

    p = Precision("mixed-fp16", "cuda:0")
    assert p.scaler.is_enabled()
    with p.autocast():
        y = torch.nn.Linear(8, 8).cuda()(torch.randn(4, 8, device="cuda:0"))
    assert y.dtype == torch.float16


def test_doctor_healthy_for_cuda(capsys):
    from arignote import cli

    assert cli.main(["doctor", "--device", "cuda"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "healthy for device=cuda"
