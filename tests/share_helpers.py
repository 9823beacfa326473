"""Snapshot fixtures and lease-holding subprocesses for the share / run / smi tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from arignote.devices import nvml
from arignote.devices.nvml import NA, GPUSnapshot, HostSnapshot, Snapshot

GIB = 1024**3
FIXTURES = Path(__file__).parent / "fixtures"
FOUR_GPUS = FIXTURES / "smi_4gpus.json"


def gpu(index: int, used_gib: float = 0.0, total_gib: float = 40.0, util=0, **kw) -> GPUSnapshot:
    """A GPU reading with ``used_gib`` of ``total_gib`` in use and ``util`` % busy (NA allowed)."""
    return GPUSnapshot(index=index, uuid=f"GPU-test-{index:04d}", name="Test GPU",
                       pci_bus_id=f"00000000:{index + 1:02X}:00.0", temperature=40, power_draw=50.0,
                       power_limit=300.0, memory_used=int(used_gib * GIB) if used_gib is not NA else NA,
                       memory_total=int(total_gib * GIB), utilization_gpu=util, utilization_memory=0, **kw)


def snap(*gpus: GPUSnapshot, hostname: str = "testbox") -> Snapshot:
    return Snapshot(hostname=hostname, time=1_700_000_000.0, driver_version="550.54.15",
                    cuda_driver_version="12.4", host=HostSnapshot(8, 12.5, 1.0, 4 * GIB, 32 * GIB),
                    gpus=tuple(gpus))


def write(path: Path, snapshot: Snapshot) -> Path:
    path.write_text(nvml.to_json(snapshot))
    return path


def child_env(lease_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ARIGNOTE_LEASE_DIR"] = str(lease_dir)
    env["ARIGNOTERC"] = ""  # read no rc file
    env.pop("ARIGNOTE_FLAGS", None)
    return env


# Holds a lease until its stdin closes (or it is killed). Prints the leased indices as JSON,
# or {"busy": reason} when nothing was free. With a go-file argument, waits for it to appear
# first so that many holders acquire at the same instant.
HOLDER = r"""
import json, os, sys, time
from arignote import share
inventory, n, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print("ready", flush=True)
while go != "-" and not os.path.exists(go):
    time.sleep(0.001)
try:
    lease = share.acquire(n, snapshot=inventory)
except share.NoFreeGPUError as exc:
    print(json.dumps({"busy": str(exc)}), flush=True)
    sys.exit(0)
print(json.dumps({"indices": list(lease.indices)}), flush=True)
sys.stdin.read()
"""


def start_holder(lease_dir: Path, inventory: Path, n: int = 1, go: str = "-") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(inventory), str(n), go],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=child_env(lease_dir))


def holder_result(proc: subprocess.Popen) -> dict:
    """The holder's JSON line after its "ready" line (blocks until it has acquired or failed)."""
    line = proc.stdout.readline()
    if line.strip() == "ready":
        line = proc.stdout.readline()
    return json.loads(line)
