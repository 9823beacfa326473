"""The memory policy: arithmetic, errors naming flags and sources, apply() wiring, OOM explanations."""

from __future__ import annotations

import pytest
import torch

from arignote import config
from arignote.devices import GPUInfo, Inventory, resolve
from arignote.runtime import memory, setup
from arignote.runtime.memory import MemoryPlanError
from arignote.runtime.setup import prepare

MiB = 1 << 20
TOTAL = 81559 * MiB
A100 = "NVIDIA A100-SXM4-80GB"


def two_a100s():
    return Inventory(gpus=(GPUInfo(0, A100, "0000:07:00.0", TOTAL, 81000 * MiB, (8, 0), "u0"),
                           GPUInfo(1, A100, "0000:0f:00.0", TOTAL, 40779 * MiB, (8, 0), "u1")),
                     cpu_name="AMD EPYC", cpu_threads=2, cuda_reason=None)


@pytest.fixture(autouse=True)
def clean_state():
    setup.reset()
    memory._applied.clear()
    yield
    setup.reset()
    memory._applied.clear()


# --------------------------------------------------------------------------- arithmetic


def test_fraction_preallocation_matches_issue_example():
    p = memory.plan(0.8, 0, TOTAL, 81000 * MiB, "cuda:0")
    assert p.preallocate_bytes == 65247 * MiB
    assert p.caching and p.limit_fraction is None and p.limit_bytes == 0
    assert p.text == ("Preallocating 65247/81559 MiB (0.80) on cuda:0",)


def test_mib_preallocation_and_full_fraction():
    p = memory.plan(4096, 0, TOTAL, 81000 * MiB, "cuda:1")
    assert p.preallocate_bytes == 4096 * MiB
    assert p.text[0] == "Preallocating 4096/81559 MiB (0.05) on cuda:1"
    # exactly 1 means the whole GPU: only possible when it is entirely free
    assert memory.plan(1, 0, 1024 * MiB, 1024 * MiB).preallocate_bytes == 1024 * MiB
    # just above 1 is MiB, not a fraction (Theano's rule)
    assert memory.plan(1.5, 0, TOTAL, TOTAL).preallocate_bytes == int(1.5 * MiB)


def test_zero_grows_on_demand():
    p = memory.plan(0, 0, TOTAL, TOTAL, "cuda:0")
    assert (p.preallocate_bytes, p.caching, p.limit_fraction) == (0, True, None)
    assert p.text == ("Memory on cuda:0: grow on demand, cached for reuse (memory.preallocate=0)",)


def test_negative_disables_caching():
    p = memory.plan(-1, 0, TOTAL, TOTAL, "cuda:0")
    assert (p.preallocate_bytes, p.caching) == (0, False)
    assert p.text[0].startswith("Caching disabled on cuda:0: every free returns memory to the driver")


@pytest.mark.parametrize("limit,cap_mib,fraction", [(0.5, 40779, 0.5), (4096, 4096, 4096 / 81559),
                                                    (1, 81559, 1.0)])
def test_limit_fraction_or_mib(limit, cap_mib, fraction):
    p = memory.plan(0, limit, TOTAL, TOTAL, "cuda:0")
    assert p.limit_bytes == cap_mib * MiB
    assert p.limit_fraction == pytest.approx(fraction, abs=1e-4)
    assert p.text[-1] == f"Capping cuda:0 at {cap_mib}/81559 MiB ({p.limit_fraction:.2f}) by memory.limit"


def test_preallocate_within_limit_shows_both_lines():
    p = memory.plan(0.25, 0.5, TOTAL, TOTAL, "cuda:0")
    assert p.text == ("Preallocating 20389/81559 MiB (0.25) on cuda:0",
                      "Capping cuda:0 at 40779/81559 MiB (0.50) by memory.limit")


def test_no_caching_with_a_cap_is_an_error_naming_both_flags():
    """torch's per-process fraction is checked inside the caching allocator's malloc; with the
    allocator disabled (``caching_allocator_enable(False)``) every allocation is an uncached
    cudaMalloc, so memory.limit would silently not hold."""
    with pytest.raises(MemoryPlanError) as info:
        memory.plan(-1, 0.5, TOTAL, TOTAL, "cuda:0", sources={"memory.limit": "~/.arignoterc:2"})
    msg = str(info.value)
    assert "memory.preallocate=-1" in msg and "memory.limit=0.5 (from ~/.arignoterc:2)" in msg
    assert "memory.limit=0 or memory.preallocate>=0" in msg
    assert not memory.plan(-1, 0, TOTAL, TOTAL, "cuda:0").caching  # alone, each is fine


# --------------------------------------------------------------------------- errors


def test_preallocation_larger_than_free_memory_is_an_error_naming_source():
    with pytest.raises(MemoryPlanError) as info:
        memory.plan(0.8, 0, TOTAL, 40779 * MiB, "cuda:1", sources={"memory.preallocate": "~/.arignoterc:3"})
    msg = str(info.value)
    assert "memory.preallocate=0.8 (from ~/.arignoterc:3) asks for 65247 MiB on cuda:1" in msg
    assert "only 40779 of 81559 MiB are free" in msg
    assert "at most 0.50 or 40779 MiB" in msg and "device=free:1" in msg


def test_preallocation_above_limit_and_limit_above_total_are_errors():
    with pytest.raises(MemoryPlanError, match=r"memory.preallocate=0.6 reserves 48935 MiB .* 40779 MiB cap"):
        memory.plan(0.6, 0.5, TOTAL, TOTAL, "cuda:0")
    too_big = r"memory.limit=100000 asks for a 100000 MiB cap but cuda:0 has 81559"
    with pytest.raises(MemoryPlanError, match=too_big):
        memory.plan(0, 100000, TOTAL, TOTAL, "cuda:0")
    with pytest.raises(MemoryPlanError, match="must be >= 0"):
        memory.plan(0, -1, TOTAL, TOTAL)
    assert issubclass(MemoryPlanError, config.ConfigError)  # the CLI exits 2


def test_plan_for_reads_flags_and_sources(monkeypatch):
    gpu1 = resolve("cuda1", two_a100s())[0]
    assert memory.plan_for(resolve("cpu", two_a100s())[0]) is None
    monkeypatch.setenv("ARIGNOTE_FLAGS", "memory.preallocate=0.9")
    config.reload()
    with pytest.raises(MemoryPlanError, match=r"memory.preallocate=0.9 \(from ARIGNOTE_FLAGS\)"):
        memory.plan_for(gpu1)
    with config.override(memory_preallocate=2048, memory_limit=0.5):
        p = memory.plan_for(gpu1)
    assert (p.device, p.preallocate_bytes, p.limit_bytes) == ("cuda:1", 2048 * MiB, 40779 * MiB)


# --------------------------------------------------------------------------- apply / prepare (fake cuda)


@pytest.fixture
def fake_cuda(monkeypatch):
    """Record the calls devices/cuda.py would make, so the wiring is tested without a GPU."""
    from arignote.devices import cuda

    calls = []
    monkeypatch.setattr(cuda, "disable_caching", lambda: calls.append(("disable_caching",)))
    monkeypatch.setattr(cuda, "set_memory_fraction", lambda f, i: calls.append(("fraction", round(f, 4), i)))
    monkeypatch.setattr(cuda, "preallocate", lambda n, i: calls.append(("preallocate", n // MiB, i)))
    monkeypatch.setattr(cuda, "set_cudnn", lambda *a: calls.append(("cudnn", *a)))
    monkeypatch.setattr(cuda, "set_tf32", lambda *a: calls.append(("tf32", *a)))
    monkeypatch.setattr(cuda, "cudnn_available", lambda: True)
    return calls


def test_apply_order_cap_then_reserve(fake_cuda):
    gpu0 = resolve("cuda0", two_a100s())[0]
    p = memory.plan(0.25, 0.5, TOTAL, TOTAL, "cuda:0")
    memory.apply(p, gpu0)
    assert fake_cuda == [("fraction", 0.5, 0), ("preallocate", 20389, 0)]
    assert memory.applied(gpu0) is p and memory.applied("cuda:1") is None
    fake_cuda.clear()
    memory.apply(memory.plan(-1, 0, TOTAL, TOTAL, "cuda:1"), "cuda:1")
    assert fake_cuda == [("disable_caching",)]


def test_prepare_gpu_applies_flags_and_prints_plan(fake_cuda, capsys):
    inv = two_a100s()
    with config.override(memory_preallocate=0.8, dnn_benchmark=True):
        plan = prepare("cuda0", inventory=inv)
        assert prepare("cuda0", inventory=inv) is plan  # idempotent
    assert plan.preallocate_bytes == 65247 * MiB
    assert fake_cuda == [("cudnn", True, True, False), ("tf32", True, True), ("preallocate", 65247, 0)]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("arignote 0.1.0 on torch ")
    tf32 = ("TF32 on: float32 matmuls and convolutions (tf32=off for full fp32; PyTorch alone: "
            "convolutions only)")
    assert lines[1:] == [f"Mapped cuda:0 to {A100} (0000:07:00.0), 81559 MiB, 81000 MiB free",
                         "Preallocating 65247/81559 MiB (0.80) on cuda:0", tf32]
    prepare("cuda1", inventory=inv)  # the second device: its lines only, no second header
    assert capsys.readouterr().out.splitlines() == [
        f"Mapped cuda:1 to {A100} (0000:0f:00.0), 81559 MiB, 40779 MiB free",
        "Memory on cuda:1: grow on demand, cached for reuse (memory.preallocate=0)", tf32]


def test_prepare_dnn_flags(fake_cuda, monkeypatch):
    from arignote.devices import cuda

    with config.override(dnn_enabled="false", dnn_deterministic=True, print_active_device=False):
        prepare("cuda0", inventory=two_a100s())
    assert fake_cuda[0] == ("cudnn", False, False, True)
    setup.reset()
    monkeypatch.setattr(cuda, "cudnn_available", lambda: False)
    with config.override(dnn_enabled="true"), pytest.raises(config.ConfigError, match="dnn.enabled=true"):
        prepare("cuda0", inventory=two_a100s())


def test_prepare_refuses_a_plan_the_gpu_cannot_honour(fake_cuda):
    with config.override(memory_preallocate=0.9), pytest.raises(MemoryPlanError, match="only 40779"):
        prepare("cuda1", inventory=two_a100s())
    assert not any(c[0] == "preallocate" for c in fake_cuda)


# --------------------------------------------------------------------------- out of memory


def test_explain_oom_names_limit_flag_and_source(fake_cuda, monkeypatch):
    monkeypatch.setenv("ARIGNOTE_FLAGS", "memory.limit=0.5")
    config.reload()
    prepare("cuda0", inventory=two_a100s())  # plans from the flags and applies on cuda:0
    text = memory.explain_oom(torch.OutOfMemoryError("CUDA out of memory"), "cuda:0")
    assert "cuda:0 hit the caching allocator's cap of 40779/81559 MiB" in text
    assert "memory.limit=0.5 (from ARIGNOTE_FLAGS)" in text
    other = memory.explain_oom(torch.OutOfMemoryError("x"), "cuda:1")
    assert other.startswith("cuda:1 ran out of memory with no memory.limit set; try: lower the batch size")


# the applied policy, what filled the memory -> the whole explanation
_CAP = ("cuda:0 hit the caching allocator's cap of 20389/81559 MiB set by memory.limit=0.25 "
        "(from ~/.arignoterc:4)")
_BATCH = ("lower the batch size, precision=mixed-bf16 (halves activations), or keep memory.on_oom=split "
          "(the default)")
_EXPLAINED = {
    ("cap", "batch"): f"{_CAP}; try: raise memory.limit (0 removes the cap), {_BATCH}",
    ("cap", "optimizer"): f"{_CAP}; try: raise memory.limit (0 removes the cap), an optimizer with less "
                          "state (SGD keeps 0-1 values per parameter, Adam/Adadelta 2), or a smaller model",
    ("no cap", "activations"): "cuda:0 ran out of memory (81559 MiB total) with no memory.limit set; try: "
                               "precision=mixed-bf16 (halves activations), or a smaller model",
    ("none applied", "batch"): f"cuda:0 ran out of memory with no memory.limit set; try: {_BATCH}",
}


@pytest.mark.parametrize("policy, filled_by", sorted(_EXPLAINED))
def test_explain_oom_message_for_each_applied_policy(fake_cuda, policy, filled_by):
    limit = {"cap": 0.25, "no cap": 0.0}.get(policy)
    if limit is not None:
        applied = memory.plan(0, limit, TOTAL, TOTAL, "cuda:0", {"memory.limit": "~/.arignoterc:4"})
        memory.apply(applied, "cuda:0")
    assert memory.explain_oom(None, "cuda:0", filled_by) == _EXPLAINED[policy, filled_by]
    # a torch.device without index is the first GPU; the device an error names wins over the argument
    assert memory.explain_oom(None, torch.device("cuda"), filled_by) == _EXPLAINED[policy, filled_by]
    named = torch.OutOfMemoryError("CUDA out of memory. GPU 0 has a total capacity of 79.65 GiB")
    assert memory.explain_oom(named, "cuda:1", filled_by) == _EXPLAINED[policy, filled_by]


def test_explain_oom_reads_the_applied_policy_not_the_flags(fake_cuda):
    with config.override(memory_limit=0.25):
        prepare("cuda0", inventory=two_a100s())
    before = memory.explain_oom(None, "cuda:0")
    with config.override(memory_limit=0.75):  # the flag changed after the cap was set: the cap holds
        assert memory.explain_oom(None, "cuda:0") == before
    assert "cap of 20389/81559 MiB set by memory.limit=0.25" in before


def test_explain_oom_on_the_cpu_and_a_bad_kind():
    assert memory.explain_oom(None, None, "activations") == (
        "cpu ran out of memory; try: precision=mixed-bf16 (halves activations), or a smaller model")
    with pytest.raises(ValueError, match="filled_by must be one of batch, activations, optimizer"):
        memory.explain_oom(None, "cpu", "weights")


def test_oom_explained_reraises_same_type_with_text(fake_cuda):
    memory.apply(memory.plan(0, 4096, TOTAL, TOTAL, "cuda:0"), "cuda:0")
    with pytest.raises(torch.OutOfMemoryError) as info, memory.oom_explained("cuda:0"):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    msg = str(info.value)
    assert msg.startswith("CUDA out of memory. Tried to allocate 2.00 GiB\n"
                          "arignote: cuda:0 hit the caching allocator's cap")
    assert "memory.limit=4096" in msg
    assert isinstance(info.value.__cause__, torch.OutOfMemoryError)
    with pytest.raises(ValueError, match="unrelated"), memory.oom_explained("cuda:0"):
        raise ValueError("unrelated")


# --------------------------------------------------------------------------- what a fit may still take


@pytest.fixture
def gpu_memory(monkeypatch):
    """The driver's (free, total) and the allocator's (allocated, reserved) for GPU 0, as
    devices/cuda.py would read them on an A100 (bytes)."""
    from arignote.devices import cuda

    state = {"free": 79000 * MiB, "allocated": 0, "reserved": 0}
    monkeypatch.setattr(cuda, "mem_get_info", lambda i: (state["free"], TOTAL))
    monkeypatch.setattr(cuda, "memory_in_use", lambda i: (state["allocated"], state["reserved"]))
    return state


def test_offer_counts_the_cap_the_driver_does_not_know(gpu_memory, fake_cuda):
    """Arrays go to the GPU when they fit in half of what the process can take: under memory.limit
    the driver's free memory (79 GB here) is not that; the 4 GiB cap minus what is allocated is."""
    from types import SimpleNamespace as NS

    from arignote.training.data import fits_on_device
    from arignote.training.inputs import _free_bytes

    assert memory.offer_bytes(0) == 79000 * MiB  # no policy applied: the driver's free memory
    memory.apply(memory.plan(0, 4096, TOTAL, TOTAL, "cuda:0"), "cuda:0")
    gpu_memory.update(allocated=1024 * MiB, reserved=1536 * MiB)
    assert memory.offer_bytes(0) == 3072 * MiB
    free = _free_bytes(NS(device=torch.device("cuda", 0)))
    assert free == 3072 * MiB and not fits_on_device(2048 * MiB, torch.device("cuda", 0), free)


def test_offer_counts_the_preallocated_reservation_as_this_processs(gpu_memory, fake_cuda):
    memory.apply(memory.plan(0.8, 0, TOTAL, TOTAL, "cuda:0"), "cuda:0")
    gpu_memory.update(free=14000 * MiB, allocated=100 * MiB, reserved=65247 * MiB)
    assert memory.offer_bytes(0) == (14000 + 65247 - 100) * MiB
