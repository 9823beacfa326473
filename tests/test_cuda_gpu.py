"""devices/cuda.py against a real GPU (skipped without CUDA). Each test is small and cleans up.

Run on a GPU box with ``pytest -m gpu tests/test_cuda_gpu.py``. The memory policy, cuDNN, precision,
out-of-memory and multi-GPU checks are ``arignote selftest``'s items, run here through the same
runner (``bench.selfchecks.outcome_in_process``: a fresh process each, as the cap and the caching switch
are process-wide), so the command and the tests cannot drift apart.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from arignote.bench.selfchecks import CHECKS, outcome_in_process

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


def test_pci_bus_order_is_set_before_cuda_init():
    got = run_child("""
        import json, os
        import arignote.devices.cuda as c
        print(json.dumps({"order": os.environ.get("CUDA_DEVICE_ORDER"), "late": c.ORDER_SET_TOO_LATE}))
    """)
    assert got == {"order": "PCI_BUS_ID", "late": False}


def test_doctor_healthy_for_cuda(capsys):
    from arignote import cli

    assert cli.main(["doctor", "--device", "cuda"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "healthy for device=cuda"


@pytest.mark.parametrize("check", [c for c in CHECKS if c.gpus], ids=lambda c: c.name)
def test_selftest_item(check):
    import torch

    if torch.cuda.device_count() < check.gpus:
        pytest.skip(f"{check.name} needs {check.gpus} GPUs, this machine has {torch.cuda.device_count()}")
    out = outcome_in_process(check.name, timeout=600)  # what `arignote selftest --out` records
    assert out["ok"], (out["message"], out["record"])
    assert out["record"] and "raised" not in out["record"]
