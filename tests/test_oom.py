"""Out-of-memory resilience on the CPU, with the fault injector (issue 7).

The pieces (injector, slicing, the split policy, the batch-size search, the memory plan) are tested
with a hand-written step on a small MLP; the same behaviour through ``Model.fit`` is in
``test_oom_fit.py`` and across 2 gloo processes in ``test_oom_parallel.py``.
"""

from __future__ import annotations

import threading

import pytest
import torch

from arignote import config
from arignote.diagnostics import oom_selftest
from arignote.diagnostics.batch_size import SearchResult, TrainingSnapshot, auto_batch_size, search_batch_size
from arignote.diagnostics.memory_plan import (
    MemoryPlan,
    measure_saved_bytes,
    optimizer_state_bytes,
    parameter_bytes,
    plan_memory,
)
from arignote.sizes import format_mib
from arignote.training import oom
from arignote.training.oom import (
    CANNOT_SPLIT,
    OOMGuard,
    OOMInjector,
    UnsplittableOOMError,
    batch_len,
    make_injector,
    micro_slices,
    next_k,
    take,
)

# --------------------------------------------------------------------------- helpers


def _mlp(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).double()


def _data(n: int = 64, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 6, generator=g, dtype=torch.float64), torch.randint(0, 3, (n,), generator=g)


class _Steps:
    """A plain step split the way the loop splits it: forward_backward(xb, yb, weight) + optimizer step."""

    def __init__(self, model, opt):
        self.model, self.opt = model, opt
        self.calls: list[int] = []

    def forward_backward(self, xb, yb, weight):
        self.calls.append(len(xb))
        loss = torch.nn.functional.cross_entropy(self.model(xb), yb)
        (loss * weight).backward()
        return loss.detach()

    def optimizer_step(self):
        self.opt.step()
        self.opt.zero_grad()

    def zero_grad(self):
        self.opt.zero_grad()


def _train(guard: OOMGuard | None, *, batch=32, epochs=2, optim="adam", stream=None):
    model = _mlp()
    opt = (torch.optim.Adam(model.parameters(), lr=0.01) if optim == "adam"
           else torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    steps = _Steps(model, opt)
    x, y = _data()
    for _ in range(epochs):
        for start in range(0, len(x), batch):
            xb, yb = x[start:start + batch], y[start:start + batch]
            if guard is None:
                steps.forward_backward(xb, yb, 1.0)
                steps.optimizer_step()
            else:
                guard.step(xb, yb, steps.forward_backward, steps.optimizer_step, steps.zero_grad)
    return model, steps


def _assert_same_weights(a: torch.nn.Module, b: torch.nn.Module, tol: float = 1e-10) -> None:
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.allclose(pa, pb, atol=tol, rtol=0), (pa - pb).abs().max()


# --------------------------------------------------------------------------- slicing and injector


def test_micro_slices_cover_every_sample_once_and_evenly():
    for n in (1, 7, 10, 32, 33):
        for k in (1, 2, 3, 4, 8, 64):
            parts = micro_slices(n, k)
            assert [i for a, b in parts for i in range(a, b)] == list(range(n))
            sizes = [b - a for a, b in parts]
            assert len(parts) == min(n, k) and max(sizes) - min(sizes) <= 1
    assert micro_slices(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    with pytest.raises(ValueError, match="n > 0"):
        micro_slices(0, 2)


def test_take_and_batch_len_walk_nested_batches():
    x = torch.arange(10)
    batch = {"a": x, "b": (x * 2, None), "c": [x + 1]}
    part = take(batch, 2, 5)
    assert part["a"].tolist() == [2, 3, 4] and part["b"][0].tolist() == [4, 6, 8] and part["b"][1] is None
    assert part["c"][0].tolist() == [3, 4, 5] and isinstance(part["c"], list)
    assert batch_len(batch) == 10 and batch_len((x[:3], x)) == 3 and take(None, 0, 1) is None


def test_next_k_doubles_caps_at_n_then_gives_up():
    assert [next_k(k, 32) for k in (1, 2, 16)] == [2, 4, 32]
    assert next_k(16, 30) == 30 and next_k(30, 30) == CANNOT_SPLIT and next_k(1, 1) == CANNOT_SPLIT


def test_injector_is_a_noop_object_when_off_and_raises_a_real_oom_when_on():
    off = make_injector(0)
    assert not isinstance(off, OOMInjector) and off(10**9) is None and off.count == 0
    with config.override(memory_oom_inject_above=8):
        on = make_injector()
    assert isinstance(on, OOMInjector) and on.limit == 8
    on(8)
    with pytest.raises(torch.OutOfMemoryError, match="oom_inject_above=8"):
        on(9)
    assert on.count == 1
    with pytest.raises(ValueError, match="make_injector"):
        OOMInjector(0)


# --------------------------------------------------------------------------- the split policy


@pytest.mark.parametrize("optim", ["adam", "sgd"])
def test_recovery_gives_the_same_weights_as_the_unsplit_run(optim):
    plain, _ = _train(None, optim=optim)
    guard = OOMGuard(inject_above=8, on_oom="split", stream=None)
    split, steps = _train(guard, optim=optim)
    assert guard.k == 4
    _assert_same_weights(plain, split)
    # every sample of every batch went through exactly one successful micro-batch of <= 8
    assert all(c <= 8 for c in steps.calls[2:])


def test_k_is_remembered_for_the_rest_of_the_run():
    guard = OOMGuard(inject_above=8, on_oom="split")
    _, steps = _train(guard, epochs=3)  # 2 batches of 32 per epoch -> 6 steps
    # first step: batch 32 fails, then the first half (16) fails, then 4 x 8 works; nothing after
    # (the injector fails at the start of the forward pass, so failed tries never reach it)
    assert guard.inject.count == 2 and guard.failures == 2
    assert steps.calls == [8] * 4 * 6
    assert [(e.batch, e.k_before, e.k_after) for e in guard.events] == [(32, 1, 4)]


def test_the_notice_is_printed_once_with_batch_k_memory_and_batchnorm(capsys):
    guard = OOMGuard(inject_above=8, on_oom="split")
    _train(guard, epochs=2)
    err = capsys.readouterr().err
    assert err.count("arignote: out of memory") == 1
    assert "batch 32" in err and "4 micro-batches of 8" in err and "BatchNorm" in err
    assert "RAM" in err and "memory.on_oom=raise" in err


def test_uneven_last_batch_keeps_k_and_sees_every_sample():
    model = _mlp()
    steps = _Steps(model, torch.optim.SGD(model.parameters(), lr=0.1))
    guard = OOMGuard(inject_above=8, on_oom="split")
    x, y = _data(30)
    guard.step(x, y, steps.forward_backward, steps.optimizer_step, steps.zero_grad)
    assert guard.k == 4 and steps.calls[-4:] == [8, 8, 7, 7]
    guard.step(x[:3], y[:3], steps.forward_backward, steps.optimizer_step, steps.zero_grad)
    assert steps.calls[-3:] == [1, 1, 1] and guard.k == 4


def test_raise_mode_raises_the_torch_error():
    with config.override(memory_on_oom="raise", memory_oom_inject_above=8):
        guard = OOMGuard()
    with pytest.raises(torch.OutOfMemoryError) as info:
        _train(guard)
    assert type(info.value) is torch.OutOfMemoryError and guard.k == 1


def test_one_sample_per_micro_batch_is_a_clear_error():
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tried = []

    def always_oom(xb, yb, w):
        tried.append(len(xb))
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    x, y = _data(4)
    with pytest.raises(UnsplittableOOMError) as info:
        OOMGuard(on_oom="split").step(x, y, always_oom, opt.step, opt.zero_grad)
    text = str(info.value)
    assert tried == [4, 2, 1]
    assert "1 sample per micro-batch" in text and "batch of 4" in text
    assert "Tried to allocate 2.00 GiB" in text
    # memory.explain_oom for the CPU: no memory.limit there
    assert text.endswith("cpu ran out of memory; try: precision=mixed-bf16 (halves activations), or a "
                         "smaller model.")
    assert "RAM" in text  # the memory numbers
    assert isinstance(info.value, torch.OutOfMemoryError)


def test_oom_in_the_optimizer_step_is_a_clear_error_not_a_split():
    model = _mlp()
    steps = _Steps(model, torch.optim.SGD(model.parameters(), lr=0.1))

    def hungry_update():
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")

    x, y = _data(8)
    guard = OOMGuard(on_oom="split")
    with pytest.raises(UnsplittableOOMError, match="optimizer step .*cannot help.*SGD keeps 0-1 values"):
        guard.step(x, y, steps.forward_backward, hungry_update, steps.zero_grad)
    assert guard.k == 1 and steps.calls == [8]
    with pytest.raises(torch.OutOfMemoryError) as info:
        OOMGuard(on_oom="raise").step(x, y, steps.forward_backward, hungry_update, steps.zero_grad)
    assert type(info.value) is torch.OutOfMemoryError


def test_explicit_accumulate_gives_the_same_weights_as_the_plain_run():
    plain, _ = _train(None)
    guard = OOMGuard(accumulate=4, on_oom="raise")
    accumulated, steps = _train(guard)
    _assert_same_weights(plain, accumulated)
    assert set(steps.calls) == {8} and guard.k == 4


def test_guard_rejects_bad_arguments():
    with pytest.raises(ValueError, match="accumulate"):
        OOMGuard(accumulate=0)
    with pytest.raises(ValueError, match="memory.on_oom"):
        OOMGuard(on_oom="shrink")


class _Now:
    def __init__(self, flags):
        self.flags = flags

    def wait(self):
        return self.flags


class _ThreadStrategy:
    """agree across threads (a stand-in for two ranks; the gloo version is in test_oom_parallel)."""

    def __init__(self, rank, shared):
        self.rank, self.world_size, self.is_main, self.device = rank, 2, rank == 0, torch.device("cpu")
        self.shared = shared
        self.calls = 0

    def agree_later(self, flags):
        return _Now(self.agree(flags))

    def agree(self, flags):
        self.calls += 1
        slot = self.shared
        slot["values"][self.rank] = list(flags)
        slot["barrier"].wait()
        out = [max(v) for v in zip(*slot["values"])]
        slot["barrier"].wait()
        return out


def test_ranks_agree_on_k_when_only_one_runs_out():
    shared = {"values": [0, 0], "barrier": threading.Barrier(2, timeout=20)}
    results, errors = {}, []

    def rank(r):
        try:
            strategy = _ThreadStrategy(r, shared)
            guard = OOMGuard(inject_above=8 if r == 1 else 0, on_oom="split", strategy=strategy)
            _, steps = _train(guard)
            results[r] = (guard.k, steps.calls, strategy.calls, guard.failures)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and results[0][0] == results[1][0] == 4
    # rank 0 never ran out, but redid the first batch with every rank (k=2, then 4): ranks stay in step
    assert results[0][1] == [32, 16, 16] + [8] * 4 * 4 and results[0][3] == 0
    assert results[1][1] == [8] * 4 * 4 and results[1][3] == 2
    # one agreement per step (flags and k together); one more per retry round (2 rounds)
    assert results[0][2] == results[1][2] == 4 + 2


def test_ranks_all_raise_when_one_cannot_split():
    shared = {"values": [0, 0], "barrier": threading.Barrier(2, timeout=20)}
    errors = {}

    def rank(r):
        model = _mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        steps = _Steps(model, opt)

        def fb(xb, yb, w):
            if r == 1:
                raise torch.OutOfMemoryError("out of memory")
            return steps.forward_backward(xb, yb, w)

        x, y = _data(4)
        try:
            guard = OOMGuard(on_oom="split", strategy=_ThreadStrategy(r, shared))
            guard.step(x, y, fb, opt.step, opt.zero_grad)
        except UnsplittableOOMError as exc:
            errors[r] = str(exc)

    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert set(errors) == {0, 1} and "another rank" in errors[0]


# --------------------------------------------------------------------------- batch-size search


def _fake_step(limit):
    def step(batch):
        if batch > limit:
            raise torch.OutOfMemoryError("out of memory")
    return step


@pytest.mark.parametrize("limit", [1, 2, 3, 48, 64, 100, 777])
def test_search_finds_the_exact_limit(limit):
    result = search_batch_size(_fake_step(limit), limit=10_000)
    assert result.batch == limit and not result.capped
    assert len(result.tries) <= 2 * 14


def test_search_tries_doubling_then_bisection_and_clears_between_tries():
    cleared = []
    result = search_batch_size(_fake_step(48), limit=1000, clear=lambda: cleared.append(1))
    assert [b for b, _ in result.tries] == [2, 4, 8, 16, 32, 64, 48, 56, 52, 50, 49]
    assert len(cleared) == len(result.tries)
    assert "48" in result.describe() and "49 did not fit" in result.describe()


def test_search_is_capped_by_the_data_and_tolerance_shortens_it():
    capped = search_batch_size(_fake_step(10**6), limit=300)
    assert capped.batch == 300 and capped.capped and "all the training data" in capped.describe()
    rough = search_batch_size(_fake_step(1000), limit=10**6, tolerance=0.05)
    assert 1000 * 0.95 <= rough.batch <= 1000 and len(rough.tries) < 16


def test_search_at_batch_one_is_a_clear_error():
    with pytest.raises(UnsplittableOOMError, match="precision=mixed-bf16"):
        search_batch_size(_fake_step(0), limit=100)
    with pytest.raises(ValueError, match="at least one training sample"):
        search_batch_size(_fake_step(10), limit=0)


def test_auto_batch_size_uses_real_steps_with_the_injector_and_leaves_the_model_as_it_was():
    model = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    steps = _Steps(model, opt)
    x, y = _data(64)
    before = [p.detach().clone() for p in model.parameters()]
    inject = OOMInjector(24)

    def step(b):
        inject(b)
        steps.forward_backward(x[:b], y[:b], 1.0)
        steps.optimizer_step()

    result = auto_batch_size(step, module=model, optimizer=opt, n_samples=64, zero_grad=opt.zero_grad)
    assert result.batch == 24 and inject.count >= 1
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert not opt.state  # Adam moments from the trial steps are gone


def test_training_snapshot_restores_module_optimizer_and_rng():
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    _Steps(model, opt).forward_backward(*_data(8), 1.0)
    opt.step()
    snap = TrainingSnapshot(model, opt)
    draw = torch.rand(2)
    torch.nn.init.zeros_(model[0].weight)
    opt.state[model[0].weight]["momentum_buffer"].zero_()
    snap.restore()
    assert model[0].weight.abs().sum() > 0 and opt.state[model[0].weight]["momentum_buffer"].abs().sum() > 0
    assert torch.equal(torch.rand(2), draw)


def test_search_result_describe_without_failures():
    assert SearchResult(batch=8, tries=[(8, True)], capped=True).describe().startswith('batch_size="auto": 8')


# --------------------------------------------------------------------------- the memory plan


def _plan(**kw):
    base = dict(device="cuda:0", batch=256, parameters=100, gradients=100, optimizer=200, optimizer_note="x",
                activations_per_sample=10.0, available=3000, available_note="memory.limit=0.5 cap")
    base.update(kw)
    return MemoryPlan(**base)


def test_plan_arithmetic_and_verdict():
    p = _plan()
    assert p.activations == 2560 and p.total == 2960 and p.fits
    assert "fits" in p.render() and p.warning() is None
    big = _plan(batch=1024)
    assert not big.fits and big.micro_batches_needed() == 4 and big.largest_batch() == 260
    warn = big.warning()
    assert "batch 1024" in warn and "about 4 micro-batches" in warn and "260" in warn
    assert "DOES NOT FIT" in big.render() and "memory.limit=0.5 cap" in big.render()
    hopeless = _plan(parameters=5000)
    assert hopeless.micro_batches_needed() is None and "even 1 sample" in hopeless.warning()
    split = _plan(micro_batches=4, batch=1024)
    assert split.micro_batch == 256 and split.fits and "in 4 micro-batches of 256" in split.render()
    assert _plan(available=None).fits is None and "unknown" in _plan(available=None).render()


def test_plan_sizes_in_mib():
    # one formatter (arignote.sizes.format_mib): MiB as nvidia-smi, decimals only for small sizes
    shown = [format_mib(n) for n in (512, 1536, 3 << 20, 5 << 30)]
    assert shown == ["0.000488 MiB", "0.00146 MiB", "3.00 MiB", "5120 MiB"]


def test_parameter_and_optimizer_bytes():
    model = torch.nn.Linear(10, 10)  # 110 float32 = 440 bytes
    assert parameter_bytes(model) == 440
    assert optimizer_state_bytes(torch.optim.Adam(model.parameters()))[0] == 880
    assert optimizer_state_bytes(torch.optim.SGD(model.parameters(), lr=0.1))[0] == 0
    assert optimizer_state_bytes(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))[0] == 440
    assert optimizer_state_bytes(torch.optim.RMSprop(model.parameters(), centered=True))[0] == 880
    assert optimizer_state_bytes(None) == (0, "no optimizer")
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(2, 10)).sum().backward()
    opt.step()
    assert optimizer_state_bytes(opt) == (880, "Adam: counted")


def test_measure_saved_bytes_counts_activations_not_parameters():
    lin = torch.nn.Linear(100, 50)
    x = torch.randn(8, 100)
    # linear saves its input (8x100 floats); relu saves its output (8x50); the weight is excluded
    saved = measure_saved_bytes(lambda: torch.relu(lin(x)), exclude=lin.parameters())
    assert saved == (8 * 100 + 8 * 50) * 4


def test_plan_memory_measures_per_sample_and_changes_nothing():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.BatchNorm1d(64), torch.nn.ReLU(),
                                torch.nn.Dropout(0.5), torch.nn.Linear(64, 4))
    opt = torch.optim.Adam(model.parameters())
    x, y = torch.randn(8, 20), torch.randint(0, 4, (8,))
    stats = model[1].running_mean.clone()
    torch.manual_seed(5)
    plan = plan_memory(model, x, y, loss_fn=torch.nn.functional.cross_entropy, optimizer=opt, batch=512,
                       available=(10 << 20, "test"))
    draw = torch.rand(3)
    torch.manual_seed(5)
    assert torch.equal(torch.rand(3), draw) and torch.equal(model[1].running_mean, stats)
    # per sample: input 20, linear out 64 (BatchNorm input), BN out / ReLU out 64, dropout mask, logits 4
    assert 150 * 4 <= plan.activations_per_sample <= 400 * 4
    assert plan.parameters == parameter_bytes(model) and plan.optimizer == 2 * plan.gradients
    assert plan.fits and "Memory plan for batch 512 on cpu" in plan.render()


def test_plan_memory_on_cpu_offers_available_ram():
    model = torch.nn.Linear(4, 2)
    plan = plan_memory(model, torch.randn(4, 4), batch=32)
    assert plan.available and plan.available > 0 and plan.available_note == "free RAM"


def test_memory_figures_on_cpu_and_free_memory_runs():
    assert oom.memory_figures("cpu").startswith("cpu: RAM")
    oom.free_memory("cpu")


def test_the_real_oom_record_refuses_a_device_that_is_no_gpu():
    with pytest.raises(ValueError, match="cpu is not a usable CUDA GPU: the real out-of-memory test"):
        oom_selftest.real_oom_record("cpu")


@pytest.mark.gpu
def test_real_oom_on_the_gpu_recovers_with_the_full_batch_gradient():
    from arignote.bench.selfchecks_gpu import judge_real_oom

    verdict = judge_real_oom(oom_selftest.real_oom_record("cuda:0"))
    assert verdict.ok, verdict.message
    assert "recovered as" in verdict.message
    assert "allocated" in oom.memory_figures("cuda:0")


def test_cublas_cudnn_and_nccl_allocation_failures_count_as_out_of_memory():
    from torch.distributed import DistBackendError

    assert oom.is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert oom.is_out_of_memory(UnsplittableOOMError("nothing left to split"))
    for text in ("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
                 "cuDNN error: CUDNN_STATUS_ALLOC_FAILED",
                 "cuDNN error: CUDNN_STATUS_NOT_ENOUGH_WORKSPACE",
                 "CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported"):
        assert oom.is_out_of_memory(RuntimeError(text)), text
    nccl = DistBackendError("NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error, NCCL version "
                            "2.21.5\nLast error:\nCuda failure 'out of memory'")
    assert oom.is_out_of_memory(nccl)
    for other in (RuntimeError("mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)"),
                  RuntimeError("CUDA error: device-side assert triggered"), ValueError("out of memory"),
                  DistBackendError("NCCL error: remote process exited or there was a network error")):
        assert not oom.is_out_of_memory(other), other


def test_a_cublas_allocation_failure_is_split_like_an_oom():
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = _Steps(model, opt)
    calls = []

    def fb(xb, yb, w):
        calls.append(len(xb))
        if len(xb) > 16:
            raise RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
        return steps.forward_backward(xb, yb, w)

    x, y = _data(32)
    guard = OOMGuard(on_oom="split", stream=None)
    guard.step(x, y, fb, opt.step, opt.zero_grad)
    assert guard.k == 2 and calls == [32, 16, 16] and guard.failures == 1
    with pytest.raises(RuntimeError, match="shapes"):
        guard.step(x, y, lambda *a: (_ for _ in ()).throw(RuntimeError("shapes differ")), opt.step,
                   opt.zero_grad)


def test_recovery_keeps_a_preallocation(monkeypatch):
    """free_memory must not hand memory.preallocate's block back to the driver (CPU-side logic)."""
    from arignote.devices import cuda as cuda_dev
    from arignote.runtime import memory

    emptied = []
    monkeypatch.setattr(cuda_dev, "empty_cache", lambda: emptied.append(1))
    held = memory.MemoryPolicy("cuda:0", 8 << 30, 8 << 30, preallocate=0.5, preallocate_bytes=4 << 30)
    monkeypatch.setitem(memory._applied, "cuda:0", held)
    oom.free_memory("cuda:0")
    assert emptied == []
    monkeypatch.setitem(memory._applied, "cuda:0", memory.MemoryPolicy("cuda:0", 8 << 30, 8 << 30))
    oom.free_memory("cuda:0")
    assert emptied == [1]
