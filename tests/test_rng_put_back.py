"""The measuring forwards of the memory plan and the trial steps of ``batch_size="auto"`` put the
random-number state back on the device they ran on, not only on the CPU (issue 28 W5, W6): a seeded
GPU run draws the same dropout masks at verbose=1 (which measures) as at verbose=0.

No GPU here: the device side is a fake pinned to what torch's ``torch/random.py`` ``fork_rng`` does
with it (``device_mod = torch.get_device_module(device_type)``, ``device_mod.get_rng_state(index)``
before, ``device_mod.set_rng_state(state, index)`` after, for each index of ``devices``; nothing
for ``devices=[]``).
"""

from __future__ import annotations

import torch

from arignote.diagnostics import batch_size, memory_plan


class FakeCudaRng:
    """torch.cuda's random-number API as fork_rng uses it, with a generator per device index."""

    def __init__(self) -> None:
        self.state = {0: torch.tensor([0], dtype=torch.uint8), 1: torch.tensor([10], dtype=torch.uint8)}
        self.calls = []

    def get_rng_state(self, index):
        self.calls.append(("get", index))
        return self.state[index].clone()

    def set_rng_state(self, state, index):
        self.calls.append(("set", index))
        self.state[index] = state.clone()

    def draw(self, index):  # what a dropout mask on cuda:index does to its generator
        self.state[index] += 1

    def current_device(self):
        return 0

    def device_count(self):
        return 2


def _fake_cuda(monkeypatch):
    fake = FakeCudaRng()
    real = torch.get_device_module
    monkeypatch.setattr(torch, "get_device_module", lambda kind=None: fake if kind == "cuda" else real(kind))
    return fake


def test_memory_plan_forks_the_gpu_generator_it_measures_on(monkeypatch):
    fake = _fake_cuda(monkeypatch)
    module = torch.nn.Linear(2, 2)

    def saved(m):  # the measuring forward: draws from cuda:1's generator, as its dropout would
        fake.draw(1)
        return 100 * m

    cpu_before = torch.random.get_rng_state()
    per_sample, fixed = memory_plan._activations(module, saved, 8, torch.device("cuda:1"))
    assert (per_sample, fixed) == (100.0, 0)
    assert fake.state[1].item() == 10 and fake.state[0].item() == 0  # cuda:1 put back, cuda:0 untouched
    assert ("set", 1) in fake.calls and ("get", 0) not in fake.calls
    assert torch.equal(torch.random.get_rng_state(), cpu_before)


def test_the_broken_fork_would_leave_the_gpu_generator_advanced(monkeypatch):
    """devices=[] (the code before the fix) forks the CPU's state only: the fake must see it."""
    fake = _fake_cuda(monkeypatch)
    with torch.random.fork_rng(devices=[], device_type="cuda"):
        fake.draw(1)
    assert fake.state[1].item() == 11


def test_rng_devices():
    assert memory_plan.rng_devices(torch.device("cpu")) == []
    assert memory_plan.rng_devices(torch.device("cuda:1")) == [1]


def test_batch_size_search_puts_the_gpu_generator_back(monkeypatch):
    fake = _fake_cuda(monkeypatch)
    module = torch.nn.Linear(2, 2)
    cpu_before = torch.random.get_rng_state()

    def step(batch):  # a trial step: dropout on the GPU and on the CPU
        fake.draw(0)
        torch.rand(3)
        if batch > 4:
            raise torch.OutOfMemoryError("CUDA out of memory (injected)")

    monkeypatch.setattr(batch_size, "free_memory", lambda device: None)
    result = batch_size.auto_batch_size(step, module=module, optimizer=None, n_samples=16,
                                        zero_grad=lambda: None, device="cuda:0")
    assert result.batch == 4
    assert fake.state[0].item() == 0 and ("set", 0) in fake.calls  # the trials' draws undone
    assert torch.equal(torch.random.get_rng_state(), cpu_before)


def test_snapshot_on_the_cpu_touches_no_device_generator(monkeypatch):
    fake = _fake_cuda(monkeypatch)
    snap = batch_size.TrainingSnapshot(torch.nn.Linear(2, 2), None, "cpu")
    snap.restore()
    assert fake.calls == []
