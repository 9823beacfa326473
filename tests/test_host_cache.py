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

# Allocates and frees 96 MiB of float tensors 20 times inside the host_cache block fit runs in, then
# 20 times after it; prints the minor page faults of each loop and the resident memory (RSS) held at
# the end of the block's churn and just after the block
CHURN = """
import json, resource, sys
import torch
from arignote import config
from arignote.runtime import setup
config.configure(device="cpu", print_active_device=False, **{"memory.host_cache": int(sys.argv[1])})
PAGE = resource.getpagesize()

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE

def churn():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        parts = [torch.ones(4 << 20) for _ in range(6)]  # 6 x 16 MiB, written to
        del parts
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

with setup.host_cache() as applied:
    inside = churn()
    held = rss()
released = rss()
print(json.dumps({"faults": inside, "after": churn(), "applied": applied, "held": held,
                  "released": released}))
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
    # leaving the block gives the kept memory back to the OS (malloc_trim): the ~96 MiB the block held
    # is no longer resident. (Counting the page faults of a churn after the block does not show the
    # restored settings reliably: glibc serves the next requests from free chunks that malloc_trim
    # could only madvise, so whether they fault depends on the heap's layout, ~29 000 to ~490 000.)
    assert kept["held"] - kept["released"] > 64 * 2**20, (kept, returned)
    assert returned["held"] - returned["released"] < 16 * 2**20, (kept, returned)


class FakeLibc:
    """Records mallopt / malloc_trim calls instead of changing this process's allocator."""

    def __init__(self):
        self.calls: list[tuple] = []

    def mallopt(self, code, value):
        self.calls.append(("mallopt", code, value))
        return 1

    def malloc_trim(self, pad):
        self.calls.append(("malloc_trim", pad))
        return 1


@pytest.fixture
def fake_libc(monkeypatch):
    libc = FakeLibc()
    monkeypatch.setattr(cpu, "_glibc", lambda: libc)
    return libc


APPLY_256 = [("mallopt", -3, 32 << 20), ("mallopt", -1, 256 << 20)]


def test_block_applies_then_restores_the_start_settings_and_trims(fake_libc):
    start = {"M_MMAP_THRESHOLD": 131072, "M_TRIM_THRESHOLD": 262144}
    with cpu.keeping_freed_memory(256, start) as applied:
        assert applied is True and fake_libc.calls == APPLY_256
    restore = [("mallopt", -3, 131072), ("mallopt", -1, 262144), ("malloc_trim", 0)]
    assert fake_libc.calls == APPLY_256 + restore


def test_block_restores_when_the_body_raises_and_nested_blocks_apply_once(fake_libc):
    with pytest.raises(RuntimeError, match="boom"):
        with cpu.keeping_freed_memory(256, cpu.GLIBC_DEFAULTS):
            with cpu.keeping_freed_memory(512, cpu.GLIBC_DEFAULTS) as inner:
                assert inner is True and fake_libc.calls == APPLY_256  # the outer block's settings hold
            assert fake_libc.calls == APPLY_256  # leaving the inner block restores nothing
            raise RuntimeError("boom")
    assert fake_libc.calls[2:] == [("mallopt", -3, 128 << 10), ("mallopt", -1, 128 << 10), ("malloc_trim", 0)]
    assert cpu._KEEPING == [0]


def test_zero_or_no_glibc_touches_nothing(fake_libc, monkeypatch):
    with cpu.keeping_freed_memory(0, cpu.GLIBC_DEFAULTS) as applied:
        assert applied is False
    monkeypatch.setattr(cpu, "_glibc", lambda: None)
    with cpu.keeping_freed_memory(256, cpu.GLIBC_DEFAULTS) as applied:
        assert applied is False
    assert fake_libc.calls == []


def test_start_settings_follow_glibcs_variables():
    assert cpu.malloc_start_settings({}.get) == {"M_MMAP_THRESHOLD": 131072, "M_TRIM_THRESHOLD": 131072}
    env = {"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": " nonsense"}
    assert cpu.malloc_start_settings(env.get) == {"M_MMAP_THRESHOLD": 65536, "M_TRIM_THRESHOLD": 131072}


def test_fit_keeps_freed_memory_only_while_it_runs(fake_libc):
    import numpy as np

    from arignote.callbacks import Callback
    from arignote.layers import Dense
    from arignote.models import Sequential

    seen = []

    class Watch(Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seen.append((cpu._KEEPING[0], len(fake_libc.calls)))

    model = Sequential([Dense(1, input_dim=2)])
    model.compile("sgd", "mse")
    with config.override(device="cpu", print_active_device=False, memory_host_cache=64):
        model.fit(np.zeros((8, 2), "float32"), np.zeros((8, 1), "float32"), epochs=2, verbose=0,
                  callbacks=[Watch()])
        assert seen == [(1, 2), (1, 2)]  # applied before the first epoch, not undone between epochs
        assert fake_libc.calls[:2] == [("mallopt", -3, 32 << 20), ("mallopt", -1, 64 << 20)]
        assert fake_libc.calls[-1] == ("malloc_trim", 0) and cpu._KEEPING == [0]
        model.predict(np.zeros((4, 2), "float32"))
        assert len(fake_libc.calls) == 5  # predict leaves malloc alone
