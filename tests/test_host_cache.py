"""memory.host_cache: glibc keeps freed host memory for reuse, so tensors do not page-fault it back in."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from arignote import config
from arignote.config import ConfigError
from arignote.devices import cpu

glibc = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                           reason="memory.host_cache acts on glibc's malloc only")

# Allocates and frees 96 MiB of float tensors 20 times; prints the minor page faults of the loop.
CHURN = """
import json, resource, sys
import torch
from arignote import config
from arignote.devices import setup
config.configure(device="cpu", print_active_device=False, **{"memory.host_cache": int(sys.argv[1])})
setup.prepare("cpu")
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    parts = [torch.ones(4 << 20) for _ in range(6)]  # 6 x 16 MiB, written to
    del parts
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(json.dumps({"faults": after - before, "applied": setup._state["host_cache"]}))
"""


def _churn(mib: int) -> dict:
    # glibc's own default adapts to the heap's layout (it sometimes keeps freed memory, sometimes
    # not); a fixed 128 KiB mmap threshold makes the baseline return every block, every time,
    # so the test sees whether arignote's settings take over from it
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"}
    out = subprocess.run([sys.executable, "-c", CHURN, str(mib)], capture_output=True, text=True, check=True,
                         env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_settings_arithmetic():
    assert cpu.host_cache_settings(0) == {}
    assert cpu.host_cache_settings(256) == {"M_MMAP_THRESHOLD": 32 << 20, "M_TRIM_THRESHOLD": 256 << 20}
    with pytest.raises(ValueError, match="memory.host_cache must be >= 0"):
        cpu.host_cache_settings(-1)


def test_flag_default_and_bad_value():
    assert config.get("memory.host_cache") == 1024
    with pytest.raises(ConfigError, match="memory.host_cache"):
        config.configure(**{"memory.host_cache": -5})
    with pytest.raises(ConfigError, match="memory.host_cache"):
        config.configure(**{"memory.host_cache": "lots"})


def test_zero_leaves_malloc_alone():
    assert cpu.keep_freed_memory(0) is False


@glibc
def test_cache_removes_the_page_faults_of_freed_tensors():
    kept, returned = _churn(1024), _churn(0)
    assert kept["applied"] is True and returned["applied"] is False
    # without the cache each round maps its 96 MiB afresh (~24 600 faults a round, ~490 000 in all);
    # with it only the first round does
    assert returned["faults"] > 200_000, returned
    assert kept["faults"] < 3 * 24_600 and kept["faults"] * 5 < returned["faults"], (kept, returned)
