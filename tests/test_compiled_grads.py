"""Gradient accumulation under CUDA graphs (``jit=on`` = reduce-overhead on a GPU), tested on the CPU
with a fake of inductor's CUDA-graph trees (issue 28, C1/C2).

The fake keeps the contract of ``torch/_inductor/cudagraph_trees.py`` (torch 2.13) that matters here:

* a compiled call in a new Dynamo generation (``GenerationTracker.generation``, bumped by every
  ``torch.compile`` call: ``_dynamo/mutation_guard.py`` ``install_generation_tagging_init``) starts
  a new generation unless a forward waits for its backward (``CUDAGraphTreeManager.
  can_start_new_generation``, ``running_forwards_with_pending_backwards``: set by a FORWARD run,
  cleared by a BACKWARD run; INFERENCE leaves it);
* starting one frees the previous path's output storages that are still alive (``dealloc_current_
  path_weakrefs`` over ``path_live_weakrefs``: storage weak references, since ``AccumulateGrad``'s
  steal keeps the storage under a new tensor, ``new_grad.detach()``). On a GPU torch then poisons
  their storage ("accessing gradient tensor output of CUDAGraphs that has been overwritten by a
  subsequent run"); a CPU build has no such hook (``torch._C._set_storage_access_error_msg`` is
  CUDA-only), so the fake does what the memory reuse
  does: it overwrites them (NaN), and counts them.

The backward's outputs are the gradients; ``AccumulateGrad`` steals one when ``p.grad`` is None
(``autograd/functions/accumulate_grad.h`` case 1.1), so without stable buffers a second micro-batch,
or the compiled optimizer update, reads a freed gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.mutation_guard import GenerationTracker
from torch._functorch.aot_autograd import make_boxed_func
from torch.multiprocessing.reductions import StorageWeakRef

from arignote import config
from arignote.callbacks import Callback
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.optimizers import SGD, Adam, RMSprop
from arignote.training import compiled, compiled_update
from arignote.training.compiled_grads import StableGrads, is_static

RNG = np.random.default_rng(0)
X = RNG.normal(size=(64, 8)).astype("float32")  # batch 16: 4 full batches
Y = RNG.normal(size=(64, 3)).astype("float32")


class FakeTrees:
    """The part of ``CUDAGraphTreeManager`` described in the module doc."""

    def __init__(self) -> None:
        self.current_gen = None
        self.pending_backward = False
        self.path: list[tuple[StorageWeakRef, torch.dtype]] = []
        self.freed_alive = 0  # outputs still referenced when their generation ended
        self.generations = 0

    def run(self, mode: str, fn, args):
        if self.current_gen != GenerationTracker.generation and not self.pending_backward:
            for ref, dtype in self.path:  # dealloc_current_path_weakrefs: storages, not tensor objects
                if not ref.expired():
                    self.freed_alive += 1
                    storage = torch.UntypedStorage._new_with_weak_ptr(ref.cdata)
                    size = storage.nbytes() // dtype.itemsize
                    torch.empty(0, dtype=dtype).set_(storage, 0, (size,)).fill_(float("nan"))  # reused
            self.path = []
            self.generations += 1
        self.current_gen = GenerationTracker.generation
        given = {a.untyped_storage().data_ptr() for a in args if isinstance(a, torch.Tensor)}
        outs = fn(args)
        # the pool holds what the graph allocated: an output aliasing an input (a saved input) is not its
        self.path.extend((StorageWeakRef(o.untyped_storage()), o.dtype) for o in outs
                         if isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() not in given)
        if mode == "forward":
            self.pending_backward = True
        elif mode == "backward":
            self.pending_backward = False
        return outs

    def backend(self):
        def compiler(mode):
            def compile_graph(gm, example_inputs):
                inner = make_boxed_func(gm)

                def run(args):
                    return self.run(mode, inner, args)

                run._boxed_call = True
                return run
            return compile_graph

        return aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                            inference_compiler=compiler("inference"))


@pytest.fixture
def trees(monkeypatch):
    """jit=on with the fake trees as Dynamo's backend, the plan saying 'CUDA graphs'."""
    fake = FakeTrees()
    monkeypatch.setattr(compiled, "_Counting", lambda name: _Named(fake.backend()))
    monkeypatch.setattr(compiled.JitPlan, "cudagraphs", property(lambda self: True))
    # foreach: the traced update a GPU runs without fused kernels (Adam on a CPU is fused by default)
    with config.override(print_active_device=False, jit_backend="aot_eager", optimizer_impl="foreach"):
        yield fake


class _Named:
    def __init__(self, inner):
        self.inner, self.graphs = inner, 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return self.inner(gm, example_inputs)


def _mlp(optimizer, jit):
    torch.manual_seed(0)
    m = Sequential([Dense(16, activation="relu", input_dim=8), Dense(3)])
    m.compile(optimizer, "mse", jit_compile=jit)
    return m


def _fit_pair(make, trees, **fit):
    eager = make(False)
    eager.fit(X, Y, batch_size=16, epochs=2, verbose=0, shuffle=False, **fit)
    jit = make(True)
    jit.fit(X, Y, batch_size=16, epochs=2, verbose=0, shuffle=False, **fit)
    return eager, jit


def _same(a, b):
    for p, q in zip(a.get_weights(), b.get_weights()):
        assert np.isfinite(q).all()
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fit", [{"accumulate": 2}, {}], ids=["accumulate=2", "accumulate=1"])
def test_stable_grads_survive_new_generations(trees, fit):
    eager, jit = _fit_pair(lambda j: _mlp(Adam(lr=0.01), j), trees, **fit)
    _same(eager, jit)
    trainer = jit._trainer
    assert trees.generations > 8  # every micro-batch's forward and every update began one
    assert trainer.stable_grads.copied == 4  # 2 weights + 2 biases, copied out once
    assert trainer.compiled.update.compiled_calls == 8  # the update ran compiled, on stable grads
    seen = Buffers()
    jit.fit(X, Y, batch_size=16, epochs=1, verbose=0, shuffle=False, callbacks=[seen], **fit)
    assert len(set(seen.addresses)) == 1 and seen.static == [True] * 4  # the same buffers every step


class Buffers(Callback):
    """The gradients' addresses after each step, and whether they were static addresses."""

    def __init__(self):
        super().__init__()
        self.addresses, self.static = [], []

    def on_train_batch_end(self, batch, logs=None):
        grads = [p.grad for p in self.model.module.parameters()]
        self.addresses.append(tuple(g.data_ptr() for g in grads))
        self.static.append(all(is_static(g) for g in grads))


def test_oom_split_at_first_real_oom_keeps_the_buffers(trees):
    with config.override(memory_oom_inject_above=5):  # 16 -> 4 micro-batches of 4
        eager, jit = _fit_pair(lambda j: _mlp(SGD(lr=0.05, momentum=0.9), j), trees)
    _same(eager, jit)
    assert jit._trainer.oom.k == 4


def test_an_oom_raised_while_a_batch_size_is_recorded_splits_and_trains_as_eager(trees, monkeypatch):
    """A real out of memory during a CUDA-graph recording, arignote's side: the compiled forward itself
    raises ``torch.OutOfMemoryError`` the first time it meets the batch of 32 (while a capture is
    underway the caching allocator frees no cached block and raises that: CUDACachingAllocator.cpp,
    ``captures_underway``), not the injector before the call. The guard splits, the micro-batches run
    compiled in new generations, and training equals the eager full batches. What inductor's tree
    keeps of a recording that raised is torch's and only a GPU run can tell (compiled-accumulate)."""
    failed = []
    run = trees.run

    def run_or_oom(mode, fn, args):
        if mode == "forward" and not failed and any(
                isinstance(a, torch.Tensor) and tuple(a.shape) == (32, 8) for a in args):
            failed.append(mode)
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 MiB (recording)")
        return run(mode, fn, args)

    monkeypatch.setattr(trees, "run", run_or_oom)
    eager = _mlp(Adam(lr=0.01), False)
    eager.fit(X, Y, batch_size=32, epochs=2, verbose=0, shuffle=False)
    jit = _mlp(Adam(lr=0.01), True)
    jit.fit(X, Y, batch_size=32, epochs=2, verbose=0, shuffle=False)
    assert failed == ["forward"] and jit._trainer.oom.k == 2 and jit._trainer.oom.failures == 1
    _same(eager, jit)
    assert 16 in jit._trainer.sizes.recorded["train"]
    assert jit._trainer.compiled.update.compiled_calls == 4  # 2 epochs x 2 batches, updates compiled


@pytest.mark.parametrize("optimizer", [lambda: RMSprop(lr=0.005), "adagrad", "adadelta", "nadam"])
def test_compiled_update_of_other_optimizers_reads_live_grads(trees, optimizer):
    """C2: RMSprop, Adagrad, Adadelta, Nadam run a compiled update that is a second compiled call."""
    eager, jit = _fit_pair(lambda j: _mlp(optimizer() if callable(optimizer) else optimizer, j), trees)
    _same(eager, jit)


@pytest.mark.parametrize("stable", [True, False], ids=["fixed", "broken"])
def test_stolen_gradients_are_freed_by_the_next_generation_unless_copied_out(stable):
    """The broken outcome the fix exists for: ``AccumulateGrad`` steals the backward's output as
    ``p.grad`` (case 1.1), the next compiled call frees it; with StableGrads the second backward
    adds into a buffer of ours, which nothing frees."""
    trees = FakeTrees()
    holder = {}
    grads = StableGrads(lambda: list(holder["lin"].parameters())) if stable else None
    torch.manual_seed(0)
    lin = holder["lin"] = torch.nn.Linear(4, 2)
    step = torch.compile(lambda x: lin(x).sum(), backend=trees.backend())
    for x in (torch.ones(3, 4), 2 * torch.ones(3, 4)):
        step(x).backward()
        if grads is not None:
            grads.settle()
    step(torch.zeros(3, 4))  # the next compiled call (next forward, or the update): a new generation
    expected = [torch.full((2, 4), 9.0), torch.full((2,), 6.0)]  # 3 rows of 1, then 3 rows of 2
    if stable:
        assert trees.freed_alive == 0
        for p, e in zip(lin.parameters(), expected):
            torch.testing.assert_close(p.grad, e)
    else:
        assert trees.freed_alive > 0 and not torch.isfinite(lin.weight.grad).all()


def test_sgd_momentum_buffers_made_by_the_update_are_copied_out(trees, monkeypatch):
    """SGD's momentum buffers are outputs of the first compiled update (made from the gradient in
    ``_multi_tensor_sgd``): in the pool, freed by the next forward unless copied out."""
    eager, jit = _fit_pair(lambda j: _mlp(SGD(lr=0.05, momentum=0.9), j), trees)
    _same(eager, jit)
    assert jit._trainer.compiled.update.copied_out == 4
    monkeypatch.setattr(compiled_update, "settle_state", lambda opt: 0)
    broken = _mlp(SGD(lr=0.05, momentum=0.9), True)
    broken.fit(X, Y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    assert not all(np.isfinite(w).all() for w in broken.get_weights())


def test_plain_runs_release_grads_to_none():
    with config.override(print_active_device=False, jit_backend="aot_eager"):
        m = _mlp(Adam(lr=0.01), True)
        m.fit(X, Y, batch_size=16, epochs=1, verbose=0)
        assert m._trainer.stable_grads is None  # CPU: no CUDA graphs, gradients set to None as before
        assert all(p.grad is None for p in m.module.parameters())


# ------------------------------------------------------------------ one CUDA graph per batch size (S5)

X70 = RNG.normal(size=(70, 8)).astype("float32")  # batch 16: 56 train rows (16, 16, 16, 8), 14 validation
Y70 = RNG.normal(size=(70, 3)).astype("float32")


def test_partial_batches_run_eagerly_under_cuda_graphs(trees):
    """Issue 28 S5: inductor records a CUDA graph per distinct batch size (cudagraph_trees.
    cudagraphify_impl keys them on the graph's int inputs). The last, partial batch of a fit, an
    evaluation or a prediction runs the eager step; the sizes recorded are counted."""
    eager, jit = _mlp(Adam(lr=0.01), False), _mlp(Adam(lr=0.01), True)
    for m in (eager, jit):
        m.fit(X70, Y70, batch_size=16, epochs=2, verbose=0, shuffle=False, validation_split=0.2)
    _same(eager, jit)
    sizes = jit._trainer.sizes
    assert sizes.recorded == {"train": {16}, "evaluate": {14}}
    assert sizes.eager_batches == 2  # the 8-row batch of each epoch
    out = jit.predict(X70, batch_size=32)
    np.testing.assert_allclose(out, eager.predict(X70, batch_size=32), rtol=1e-4, atol=1e-5)
    assert sizes.recorded["predict"] == {32} and sizes.eager_batches == 3  # 70 = 32 + 32 + 6


def test_oom_micro_batches_are_recorded_the_partial_batch_is_not(trees):
    with config.override(memory_oom_inject_above=5):  # 16 -> 4 x 4; the partial 8 -> 4 x 2, eagerly
        eager, jit = _mlp(SGD(lr=0.05), False), _mlp(SGD(lr=0.05), True)
        for m in (eager, jit):
            m.fit(X70[:56], Y70[:56], batch_size=16, epochs=2, verbose=0, shuffle=False)
    _same(eager, jit)
    assert jit._trainer.sizes.recorded == {"train": {4}} and jit._trainer.sizes.eager_batches == 2


def test_batch_size_search_trials_run_eagerly_under_cuda_graphs(trees):
    jit = _mlp(Adam(lr=0.01), True)
    jit.fit(X70[:32], Y70[:32], batch_size=16, epochs=1, verbose=0)
    trainer = jit._trainer
    graphs = trainer.compiled.graphs
    for n in (2, 4, 8):  # the search's trial steps (diagnostics/batch_size.py calls this)
        xb, yb = torch.as_tensor(X70[:n]), torch.as_tensor(Y70[:n])
        trainer._forward_backward(xb, yb, 1.0)
        trainer._zero_grad()
    assert trainer.compiled.graphs == graphs and trainer.sizes.recorded == {"train": {16}}


def test_without_cuda_graphs_every_size_runs_compiled():
    with config.override(print_active_device=False, jit_backend="aot_eager"):
        m = _mlp(Adam(lr=0.01), True)
        m.fit(X70, Y70, batch_size=16, epochs=1, verbose=0)
    assert isinstance(m._trainer.sizes, compiled.AllSizes) and m._trainer.sizes.eager_batches == 0
    assert m._trainer.compiled.graphs == 2  # the full batch, then the symbolic graph for the 6 rows


# ------------------------------------------------------------------ under DDP's no_sync (C1), hooks (S1)

DDP_SCRIPT = r'''
import json, os, sys
sys.path.insert(0, sys.argv[4])
import numpy as np, torch
import torch.optim.optimizer as topt
import arignote
import arignote.callbacks
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.training import compiled
from test_compiled_grads import FakeTrees, _Named

out, mode = sys.argv[1], sys.argv[3]
if mode == "jit":  # every rank: the fake CUDA-graph trees, the plan saying "CUDA graphs"
    fake = FakeTrees()
    compiled._Counting = lambda name: _Named(fake.backend())
    compiled.JitPlan.cudagraphs = property(lambda self: True)
arignote.configure(device="cpu", cpu_processes=int(sys.argv[2]), print_active_device=False,
                   jit_backend="aot_eager", optimizer_impl="foreach")
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 6)).astype("float32")
y = rng.normal(size=(64, 2)).astype("float32")
torch.manual_seed(0)
m = Sequential([Dense(16, activation="tanh", input_dim=6), Dense(2)])
m.compile("adam", "mse", jit_compile=mode == "jit")


class Hooks(arignote.callbacks.Callback):
    seen = 0

    def on_train_batch_end(self, batch, logs=None):  # global step post-hooks while fit runs
        Hooks.seen = max(Hooks.seen, len(topt._global_optimizer_post_hooks))


hooks = Hooks()
m.fit(x, y, batch_size=16, epochs=2, shuffle=False, accumulate=2, verbose=0, callbacks=[hooks])
t = m._trainer
result = {"weights": [w.tolist() for w in m.get_weights()]}
if mode == "jit":
    result.update(compiled_calls=t.compiled.update.compiled_calls, eager_calls=t.compiled.update.eager_calls,
                  freed_alive=fake.freed_alive, generations=fake.generations, copied=t.stable_grads.copied,
                  global_hooks=hooks.seen)
rank = int(os.environ.get("RANK", "0"))
with open(os.path.join(out, f"{mode}{rank}.json"), "w") as fh:
    json.dump(result, fh)
'''


@pytest.mark.multiproc
@pytest.mark.slow
def test_ddp_no_sync_micro_batches_under_fake_cuda_graphs(tmp_path):
    """2 gloo ranks, accumulate=2 (the first micro-batch under DDP's no_sync, the second reduced),
    jit with the fake trees: the eager DDP weights on both ranks, every update compiled (the
    heartbeat's global step hook is registered in these processes: S1)."""
    import json
    from pathlib import Path

    from parallel_helpers import _run, _write

    script = _write(tmp_path, "train.py", DDP_SCRIPT)
    for mode in ("eager", "jit"):
        r = _run([str(script), str(tmp_path), "2", mode, str(Path(__file__).parent)], timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
    runs = {f"{m}{k}": json.loads((tmp_path / f"{m}{k}.json").read_text())
            for m in ("eager", "jit") for k in (0, 1)}
    for rank in (0, 1):
        jit = runs[f"jit{rank}"]
        for a, b in zip(runs["eager0"]["weights"], jit["weights"]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        assert (jit["compiled_calls"], jit["eager_calls"]) == (8, 0)  # 4 steps an epoch, 2 epochs
        assert jit["global_hooks"] >= 1  # the heartbeat's (parallel/heartbeat.py), registered here too
        assert jit["generations"] > 8 and jit["copied"] > 0
