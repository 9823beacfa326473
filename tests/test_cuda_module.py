"""devices/cuda.py's GPU-only logic on a CPU: torch's CUDA functions replaced by fakes that behave
as torch 2.13's do on a GPU machine (each fake says which torch behaviour it stands for, and a pin
checks that behaviour in the installed torch's source where it can be read)."""

from __future__ import annotations

import inspect

import pytest
import torch

from arignote.devices import cuda


@pytest.fixture
def gpu_box(monkeypatch):
    """A GPU machine as devices/cuda.py sees it, CUDA not yet initialised (NVML answered the inventory)."""
    state = {"initialized": False, "resets": []}
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: state["initialized"])

    def reset_peak_memory_stats(device=None):
        # torch's C++ allocator before init: assertValidDevice fails
        if not state["initialized"]:
            raise RuntimeError(f"Invalid device argument {device}: did you call init?")
        state["resets"].append(device)

    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", reset_peak_memory_stats)
    return state


def test_torch_reset_peak_memory_stats_does_not_check_initialisation():
    """The pin behind the fake: torch guards memory_stats with is_initialized(), not the reset."""
    assert "is_initialized()" in inspect.getsource(torch.cuda.memory.memory_stats_as_nested_dict)
    assert "is_initialized" not in inspect.getsource(torch.cuda.memory.reset_peak_memory_stats)


def test_reset_peak_memory_before_cuda_is_initialised_is_a_no_op(gpu_box):
    cuda.reset_peak_memory(0)  # bench/worker.py and DeviceStats call it before any tensor is on the GPU
    assert gpu_box["resets"] == []
    gpu_box["initialized"] = True
    cuda.reset_peak_memory(1)
    assert gpu_box["resets"] == [1]


@pytest.mark.parametrize("version, shown", [((2, 27, 3), "2.27.3"),
                                            ((2, 27, 3, "+cuda12.9"), "2.27.3+cuda12.9")])
def test_nccl_version_with_and_without_torchs_suffix(monkeypatch, version, shown):
    """torch.cuda.nccl.version() is (major, minor, patch), plus NCCL's suffix string when it has one."""
    import torch.cuda.nccl

    assert "suffix" in inspect.getsource(torch.cuda.nccl.version)  # the pin behind the fake
    monkeypatch.setattr(cuda, "is_built", lambda: True)
    monkeypatch.setattr(torch.cuda.nccl, "version", lambda: version)
    assert cuda.nccl_version() == shown
