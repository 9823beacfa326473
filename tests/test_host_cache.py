"""memory.host_cache: glibc keeps freed host memory for reuse, so tensors do not page-fault it back in."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest
import torch

from arignote import config, devices
from arignote.config import ConfigError
from arignote.devices import cpu
from arignote.layers import Dense
from arignote.models import Model, Sequential
from arignote.runtime import setup

glibc = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                           reason="memory.host_cache acts on glibc's malloc only")

# One train_on_batch (the process's first training call applies memory.host_cache), then allocates
# and frees 96 MiB of float tensors 20 times; prints the minor page faults of that loop, the resident
# memory (RSS) held after it and after devices.release_host_memory(), and the faults of 20 more
# rounds after the release (the settings stay in force)
CHURN = """
import json, resource, sys
import numpy as np
import torch
from arignote import config, devices
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.runtime import setup
config.configure(device="cpu", print_active_device=False, **{"memory.host_cache": int(sys.argv[1])})
PAGE = resource.getpagesize()

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE

def churn(n=6):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        parts = [torch.ones((24 // n) << 20) for _ in range(n)]  # n x 96/n MiB, written to
        del parts
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

model = Sequential([Dense(1, input_dim=2)])
model.compile("sgd", "mse")
model.train_on_batch(np.zeros((4, 2), "float32"), np.zeros((4, 1), "float32"))
inside = churn()
big = churn(2)  # 2 x 48 MiB: above the largest mmap threshold glibc accepts (32 MiB)
held = rss()
trimmed = devices.release_host_memory()
released = rss()
print(json.dumps({"faults": inside, "big": big, "after": churn(), "applied": setup.HOST_MEMORY.applied,
                  "held": held, "released": released, "trimmed": trimmed}))
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
    assert cpu.host_cache_settings(256) == {"M_MMAP_THRESHOLD": 32 << 20, "M_TRIM_THRESHOLD": 256 << 20,
                                            "M_MMAP_MAX": 0}
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
def test_cache_removes_the_page_faults_of_freed_tensors_and_release_returns_them():
    kept, returned = _churn(1024), _churn(0)
    assert kept["applied"] is True and returned["applied"] is False
    # without the cache each round maps its 96 MiB afresh (~24 600 faults a round, ~490 000 in all);
    # with it (applied by the first train_on_batch) only the first round does
    assert returned["faults"] > 200_000, returned
    assert kept["faults"] < 3 * 24_600 and kept["faults"] * 5 < returned["faults"], (kept, returned)
    # tensors above 32 MiB too (mmap is off, not only its threshold raised): conv_lstm's sequences
    assert returned["big"] > 200_000 and kept["big"] < 3 * 24_600, (kept, returned)
    # release_host_memory (malloc_trim) gives the kept memory back to the OS: the ~96 MiB held is no
    # longer resident; without the cache there was nothing to give back
    assert kept["trimmed"] is True and returned["trimmed"] is True
    assert kept["held"] - kept["released"] > 64 * 2**20, (kept, returned)
    assert returned["held"] - returned["released"] < 16 * 2**20, (kept, returned)
    # the settings outlive the release: the next 20 rounds fault their memory in once, not 20 times
    assert kept["after"] < 3 * 24_600 and returned["after"] > 200_000, (kept, returned)


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
    """A fake glibc, and a process that has not decided memory.host_cache yet."""
    libc = FakeLibc()
    monkeypatch.setattr(cpu, "_glibc", lambda: libc)
    monkeypatch.setattr(setup.HOST_MEMORY, "applied", None)
    return libc


APPLY_64 = [("mallopt", -3, 32 << 20), ("mallopt", -1, 64 << 20), ("mallopt", -4, 0)]
X, Y = np.zeros((8, 2), "float32"), np.zeros((8, 1), "float32")


def _model():
    model = Sequential([Dense(1, input_dim=2)])
    model.compile("sgd", "mse")
    return model


@pytest.fixture
def ensure_calls(monkeypatch):
    """How often HostMemory.ensure runs (prepare's once-check), not only how often it applies."""
    calls = []
    real = setup.HOST_MEMORY.ensure

    def counting():
        calls.append(1)
        return real()

    monkeypatch.setattr(setup.HOST_MEMORY, "ensure", counting)
    return calls


def test_first_train_on_batch_applies_the_cache_once_for_the_process(fake_libc, ensure_calls):
    with config.override(device="cpu", print_active_device=False, memory_host_cache=64):
        model = _model()
        model.train_on_batch(X, Y)
        assert fake_libc.calls == APPLY_64 and setup.HOST_MEMORY.applied is True
        for _ in range(3):
            model.train_on_batch(X, Y)
        model.test_on_batch(X, Y)
        model.predict_on_batch(X)
        model.evaluate(X, Y, verbose=0)
        model.fit(X, Y, epochs=2, batch_size=2, verbose=0)
        model.predict(X)
        # the steps after the first do not even check (the check is in the device's preparation)
        assert len(ensure_calls) == 1
        other = _model()  # another model: checks once, applies nothing more
        other.train_on_batch(X, Y)
        assert len(ensure_calls) == 2
    # nothing undone or trimmed behind the user's back: the settings stay in force
    assert fake_libc.calls == APPLY_64


@pytest.mark.parametrize("first", ["predict", "predict_on_batch", "evaluate", "test_on_batch", "fit"])
def test_any_first_call_applies_it(fake_libc, first):
    model = _model()
    with config.override(device="cpu", print_active_device=False, memory_host_cache=64):
        if first == "predict":
            model.predict(X)
        elif first == "predict_on_batch":
            model.predict_on_batch(X)
        elif first == "evaluate":
            model.evaluate(X, Y, verbose=0)
        elif first == "test_on_batch":
            model.test_on_batch(X, Y)
        else:
            model.fit(X, Y, epochs=1, verbose=0)
    assert fake_libc.calls == APPLY_64


def test_a_torch_module_model_applies_it(fake_libc):
    wrapped = Model(torch.nn.Linear(2, 1))
    wrapped.compile("sgd", "mse")
    with config.override(device="cpu", print_active_device=False, memory_host_cache=64):
        wrapped.train_on_batch(X, Y)
    assert fake_libc.calls == APPLY_64


def test_zero_keeps_glibcs_own_behaviour_for_the_process(fake_libc):
    with config.override(device="cpu", print_active_device=False, memory_host_cache=0):
        _model().train_on_batch(X, Y)
    assert fake_libc.calls == [] and setup.HOST_MEMORY.applied is False
    # decided at the first call: a later flag change does not switch the cache on halfway
    with config.override(device="cpu", print_active_device=False, memory_host_cache=64):
        _model().train_on_batch(X, Y)
    assert fake_libc.calls == []


def test_no_glibc_applies_nothing_without_error(monkeypatch):
    monkeypatch.setattr(cpu, "_glibc", lambda: None)
    monkeypatch.setattr(setup.HOST_MEMORY, "applied", None)
    with config.override(device="cpu", print_active_device=False, memory_host_cache=64):
        _model().train_on_batch(X, Y)
    assert setup.HOST_MEMORY.applied is False
    assert devices.release_host_memory() is False


def test_release_calls_malloc_trim_and_keeps_the_settings(fake_libc):
    with config.override(device="cpu", print_active_device=False, memory_host_cache=64):
        model = _model()
        model.train_on_batch(X, Y)
        assert devices.release_host_memory() is True
        model.train_on_batch(X, Y)
    assert fake_libc.calls == [*APPLY_64, ("malloc_trim", 0)]
    assert setup.HOST_MEMORY.applied is True


def test_policy_reads_the_flag_at_its_first_call_only():
    seen = []
    policy = setup.HostMemory(keep=lambda mib: seen.append(mib) or mib > 0)
    with config.override(memory_host_cache=128):
        assert policy.ensure() is True
    with config.override(memory_host_cache=0):
        assert policy.ensure() is True
    assert seen == [128]
