"""The compiled optimizer update (training/compiled_update.py): the same weights as the eager update
under learning-rate changes and checkpoint reloads, for the torch implementations a GPU picks
(foreach) and a CPU picks (the per-tensor loop); each model keeps its own compiled update however
many models a process trains; no host read in a steady-state step; the decision per device as a
pure function; and torch's eager rules for a tensor lr that make the lr a float between steps.

The aot_eager backend (Dynamo + AOTAutograd, no generated kernels): the same capture as inductor
without a C++ build, and its graphs run aten operators, so the host-read counter sees inside them.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

from arignote import backend as K
from arignote import config
from arignote.bench.opcount import OpRecorder
from arignote.callbacks import Callback
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.optimizers import SGD, Adagrad, Adam, RMSprop
from arignote.training import compiled_update

RNG = np.random.default_rng(0)
X = RNG.normal(size=(64, 8)).astype("float32")  # batch 16: 4 steps an epoch
Y = RNG.normal(size=(64, 3)).astype("float32")

OPTIMIZERS = {
    "sgd-momentum": lambda: SGD(lr=0.05, momentum=0.9),
    "adam": lambda: Adam(lr=0.01),
    "rmsprop": lambda: RMSprop(lr=0.005),
    "adagrad": lambda: Adagrad(lr=0.05),
}


@pytest.fixture(autouse=True)
def _quiet_aot_eager():
    with config.override(print_active_device=False, jit_backend="aot_eager"):
        yield


class HalveLR(Callback):
    """``K.set_value(model.optimizer.lr, lr / 2)`` before every other batch (an LR callback)."""

    def on_train_batch_begin(self, batch, logs=None):
        if batch % 2 == 1:
            lr = self.model.optimizer.lr
            K.set_value(lr, K.get_value(lr) * 0.5)


def _mlp(optimizer, jit, seed=0):
    torch.manual_seed(seed)
    m = Sequential([Dense(16, activation="relu", input_dim=8), Dense(3)])
    m.compile(optimizer, "mse", jit_compile=jit)
    return m


def _fit(m, epochs, **kw):
    m.fit(X, Y, batch_size=16, epochs=epochs, verbose=0, shuffle=False, callbacks=[HalveLR()], **kw)


def _snapshot(m):
    """``training_state()`` as a file's bytes (what BackupAndRestore writes)."""
    buf = io.BytesIO()
    torch.save(m.training_state(), buf)
    return buf.getvalue()


def _restore(m, snapshot):
    """Read a snapshot into ``m`` (a fresh copy each time: torch's ``load_state_dict`` keeps the
    loaded tensors themselves as the optimizer's state, so a dict loaded twice would be shared)."""
    m.load_training_state(torch.load(io.BytesIO(snapshot), weights_only=False))
    m.resume_epoch = None


def _train_reload_train(jit, optimizer):
    """2 epochs, a checkpoint, 1 more epoch, back to the checkpoint, 2 epochs; lr halved throughout."""
    m = _mlp(OPTIMIZERS[optimizer](), jit)
    _fit(m, 2)
    state = _snapshot(m)
    _fit(m, 1)
    _restore(m, state)
    _fit(m, 2)
    return m


def _assert_same(a, b, tol=1e-6):
    for p, q in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(p, q, rtol=0, atol=tol)


@pytest.mark.parametrize("impl", ["foreach", "loop"])
@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_same_weights_as_eager_under_lr_changes_and_a_checkpoint_reload(optimizer, impl):
    with config.override(optimizer_impl=impl):
        eager = _train_reload_train(False, optimizer)
        jit = _train_reload_train(True, optimizer)
    _assert_same(eager, jit)
    assert K.get_value(jit.optimizer.lr) == pytest.approx(K.get_value(eager.optimizer.lr))
    steps = jit._trainer.compiled.update
    assert steps.route.how == "compiled" and steps.compiled_calls == 5 * 4  # every step compiled
    assert steps.eager_calls == 0 and not jit._trainer.compiled.update_is_fused
    # between steps the param groups are what an eager optimizer holds: a float lr, capturable off
    for group in jit.optimizer.torch.param_groups:
        assert type(group["lr"]) is float and not group.get("capturable", False)
    assert type(jit.optimizer.state_dict()["torch"]["param_groups"][0]["lr"]) is float


@pytest.mark.parametrize("optimizer", ["adam", "sgd-momentum"])
def test_a_checkpoint_loaded_before_the_first_compiled_step(optimizer):
    # optimizer state that exists before the first trace: Dynamo leaves capturable as it finds it
    # (it sets it only for GPU parameters with empty state), so Adam's check sees the real flag
    with config.override(optimizer_impl="foreach"):
        source = _mlp(OPTIMIZERS[optimizer](), False)
        _fit(source, 2)
        state = _snapshot(source)
        runs = []
        for jit in (False, True):
            m = _mlp(OPTIMIZERS[optimizer](), jit, seed=1)
            m.fit(X[:16], Y[:16], batch_size=16, epochs=1, verbose=0)  # built, placed (one step)
            _restore(m, state)
            _fit(m, 2)
            runs.append(m)
    _assert_same(*runs)


class AotRecorder:
    """A Dynamo backend: AOTAutograd with every aten graph kept (forward, backward, inference), run
    as traced. A host read compiled into a graph is an ``aten._local_scalar_dense`` node there."""

    def __init__(self):
        self.graphs = []
        self.backend = aot_autograd(fw_compiler=self._keep, bw_compiler=self._keep)

    def _keep(self, gm, example_inputs):
        self.graphs.append(gm)
        return make_boxed_func(gm.forward)

    def __call__(self, gm, example_inputs):
        return self.backend(gm, example_inputs)

    def reads(self):
        targets = [str(n.target) for g in self.graphs for n in g.graph.nodes]
        return [t for t in targets if "_local_scalar_dense" in t]


def test_each_model_keeps_its_compiled_update_however_many_a_process_trains(monkeypatch):
    # torch's Optimizer.step breaks the graph twice (torch/optim/optimizer.py, _use_grad); the frames
    # after a break are torch's code objects, shared by every optimizer in the process, so Dynamo's
    # recompile limit (8; 3 here) ran the 4th and later models' updates eagerly, with the tensor lr.
    # (A host-read counter cannot watch a compiled step: Dynamo runs frames eagerly under a
    # TorchDispatchMode. The graphs are read instead, and the graph breaks counted.)
    recorder = AotRecorder()
    monkeypatch.setattr(torch._dynamo, "lookup_backend", lambda name: recorder)
    counters = torch._dynamo.utils.counters
    with config.override(optimizer_impl="loop"), torch._dynamo.config.patch(recompile_limit=3):
        models = [_mlp(SGD(lr=0.05, momentum=0.9, decay=0.01), True, seed=s) for s in range(4)]
        for m in models[:-1]:
            m.fit(X, Y, batch_size=16, epochs=1, verbose=0, shuffle=False)
        counters.clear()
        last = models[-1]
        last.fit(X, Y, batch_size=16, epochs=2, verbose=0, shuffle=False)
    update = last._trainer.compiled.update
    assert update.compiled_calls == 8 and update.eager_calls == 0
    # the train step; the update: its first step (no momentum buffers yet), then one graph for
    # every later step (decay's new lr is an input, its rescaled momentum symbolic)
    assert last._trainer.compiled.graphs == 3
    assert not counters["graph_break"], dict(counters["graph_break"])
    assert recorder.graphs and recorder.reads() == []  # no host read inside the graphs


def test_an_update_dynamo_runs_eagerly_puts_the_floats_back(capsys):
    # at its recompile limit Dynamo runs the update's frame eagerly: with the tensor lr and the
    # capturable flag left in, torch's eager foreach Adam raised (capturable=True is GPU-only). A
    # checkpoint reload brings new state tensors, so a second graph, here over the limit of one
    with config.override(optimizer_impl="foreach"), torch._dynamo.config.patch(recompile_limit=1):
        runs = []
        for jit in (False, True):
            m = _mlp(Adam(lr=0.01), jit)
            _fit(m, 1)
            state = _snapshot(m)
            _fit(m, 1)
            _restore(m, state)
            _fit(m, 1)
            runs.append(m)
    eager, jit = runs
    _assert_same(eager, jit)
    update = jit._trainer.compiled.update
    assert update.compiled_calls == 8 and update.eager_calls == 4
    err = capsys.readouterr().err
    assert "arignote_optimizer_step reached torch._dynamo's recompile limit (1 graphs)" in err
    assert type(jit.optimizer.torch.param_groups[0]["lr"]) is float


def test_lr_changes_and_decay_do_not_recompile_the_update():
    with config.override(optimizer_impl="foreach"):
        m = _mlp(Adam(lr=0.01, decay=0.1), True)
        _fit(m, 1)
        graphs = m._trainer.compiled.graphs
        _fit(m, 3)
    # Adam's epsilon hat changes each step too: read from a tensor as the lr is
    assert m._trainer.compiled.graphs == graphs == 2  # the train step, the update


# --------------------------------------------------------------------------- the decision, per device


def test_plan_per_device_description():
    plan = compiled_update.plan_update
    cpu = plan("Adam", "cpu", torch.float32, fused=False, hooked=False, cudagraphs=False)
    assert (cpu.how, cpu.lr_device, cpu.lr_dtype, cpu.static_lr) == ("compiled", "cpu", torch.float32, False)
    gpu = plan("Adam", "cuda:1", torch.float16, fused=False, hooked=False, cudagraphs=True)
    # the lr on the parameters' GPU (no copy per step, no CPU input to keep CUDA graphs off), float32
    # for half parameters, and at a static address: a CUDA graph reads it in place
    assert (gpu.lr_device, gpu.lr_dtype, gpu.static_lr) == ("cuda:1", torch.float32, True)
    assert plan("SGD", "cpu", torch.float64, False, False, False).lr_dtype == torch.float64
    # while the compiled update runs: capturable (Dynamo traces that), Adam per-tensor with its
    # epsilon hat from a tensor (multi-tensor Adam takes epsilon as a Python scalar only)
    assert (cpu.during, cpu.tensors) == ((("capturable", True), ("foreach", False)), ("lr", "eps"))
    sgd = plan("SGD", "cuda:0", torch.float32, False, False, False)
    assert (sgd.during, sgd.tensors) == ((("capturable", True),), ("lr",))
    assert not plan("SGD", "cuda:0", torch.float32, False, False, cudagraphs=False).static_lr
    assert not plan("SGD", "cpu", torch.float32, False, False, cudagraphs=True).static_lr
    fused = plan("Adam", "cuda:0", torch.float32, fused=True, hooked=False, cudagraphs=True)
    assert fused.how == "fused" and "one kernel" in fused.why
    hooked = plan("RMSprop", "xpu:0", torch.float32, fused=False, hooked=True, cudagraphs=False)
    assert hooked.how == "eager" and "hook" in hooked.why
    adamax = plan("KerasAdamax", "cuda:0", torch.float32, fused=False, hooked=False, cudagraphs=True)
    assert adamax.how == "eager" and "float" in adamax.why


def test_fused_update_runs_as_it_is_and_keeps_a_float_lr():
    m = _mlp(Adam(lr=0.01), True)  # optimizer.impl=auto: torch's fused Adam on the CPU
    _fit(m, 1)
    update = m._trainer.compiled.update
    assert update.route.how == "fused" and update.compiled_calls == 0
    assert m._trainer.compiled.update_is_fused  # what GradScaler's device-side skip could ask
    assert type(m.optimizer.torch.param_groups[0]["lr"]) is float


# --------------------------------------------------------------------------- torch's eager rules


def _eager_torch_step(cls, lr, **kw):
    """Host reads in torch's second eager step with ``lr`` written into the param group."""
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(4, 3))
    opt = cls([w], lr=0.01, **kw)
    opt.param_groups[0]["lr"] = lr
    for _ in range(2):
        w.grad = torch.ones_like(w)
        with OpRecorder() as rec:
            opt.step()
    return sum(op.sync for op in rec.ops)


@pytest.mark.parametrize("cls, kw", [
    (torch.optim.SGD, {"foreach": True}), (torch.optim.SGD, {"foreach": False}),
    (torch.optim.Adagrad, {"foreach": False}),
    (torch.optim.Adadelta, {"foreach": True}), (torch.optim.RMSprop, {"foreach": True}),
    (torch.optim.NAdam, {"foreach": True}),
])
def test_torch_eager_steps_read_a_tensor_lr_on_the_host(cls, kw):
    # why the param groups hold a float between compiled steps: torch's eager non-capturable paths
    # pass the lr as a Python scalar (alpha=-lr, value=-clr), a .item() of the tensor: on a GPU a
    # host sync per step (torch PR 122252: "If LR is a tensor, the else branch will internally call
    # item()"); foreach Adagrad multiplies by a list of 0-d tensors instead (no read)
    # (a float lr reads nothing more; the others read the CPU step counters torch keeps off the GPU)
    assert _eager_torch_step(cls, torch.tensor(0.01), **kw) > _eager_torch_step(cls, 0.01, **kw)


def test_torch_eager_foreach_adam_rejects_a_tensor_lr_without_capturable():
    with pytest.raises(RuntimeError, match="lr as a Tensor is not supported for capturable=False"):
        _eager_torch_step(torch.optim.Adam, torch.tensor(0.01), foreach=True)


# --------------------------------------------------------------------------- checkpoints


def test_a_checkpoint_keeps_this_run_s_implementation():
    # a file from a compiled GPU run could say capturable=True (Dynamo sets it on the real group for
    # GPU parameters with empty state): loaded on a CPU, torch's eager foreach Adam then refused to
    # step ("If capturable=True, params and state_steps must be on supported devices")
    with config.override(optimizer_impl="foreach"):
        m = _mlp(Adam(lr=0.01), False)
        m.fit(X, Y, batch_size=16, epochs=1, verbose=0)
        state = m.optimizer.state_dict()
        state["torch"]["param_groups"][0]["capturable"] = True
        state["torch"]["param_groups"][0]["lr"] = torch.tensor(0.01)  # as old compiled runs saved it
        m.optimizer.load_state_dict(state)
        group = m.optimizer.torch.param_groups[0]
        assert group["capturable"] is False and group["foreach"] is True and type(group["lr"]) is float
        m.fit(X, Y, batch_size=16, epochs=1, verbose=0)
    fused = _mlp(Adagrad(lr=0.05), False)  # optimizer.impl=auto: torch's fused Adagrad on a CPU
    fused.fit(X, Y, batch_size=16, epochs=1, verbose=0)
    state = fused.optimizer.state_dict()
    state["torch"]["param_groups"][0].update(fused=None, foreach=True)  # a GPU run's Adagrad
    fused.optimizer.load_state_dict(state)
    assert fused.optimizer.torch.param_groups[0]["fused"] is True
    step = next(iter(fused.optimizer.torch.state.values()))["step"]
    assert step.dtype == torch.float32


# --------------------------------------------------------------------------- inductor, the GPU item


@pytest.mark.slow
def test_inductor_on_the_cpu_gives_the_eager_weights():
    # generated C++ kernels (measured: within 3e-7 of eager, every update compiled)
    from arignote.bench import selfchecks_compiled

    facts = selfchecks_compiled.optimizer_probe("cpu", backend="inductor")
    for name, f in facts.items():
        assert f["route"] == "compiled" and f["eager_calls"] == 0, (name, f)
        assert f["compiled_calls"] == 5 * 8 and f["max_diff"] < 1e-6, (name, f)
        assert f["graphs_after"] == f["graphs_before_last"], (name, f)


def test_selftest_probe_on_cpu_and_its_item():
    from arignote.bench import selfchecks, selfchecks_compiled

    facts = selfchecks_compiled.optimizer_probe("cpu", backend="aot_eager")
    assert sorted(facts) == ["adagrad", "adam", "rmsprop", "sgd-momentum"]
    for name, f in facts.items():
        assert f["route"] == "compiled" and (f["compiled_calls"], f["eager_calls"]) == (40, 0), (name, f)
        assert f["max_diff"] < 1e-6 and f["graphs_after"] == f["graphs_before_last"], (name, f)
        assert f["guarded"] == []  # no switch given
    item = next(c for c in selfchecks.CHECKS if c.name == "compiled-optimizer")
    assert item.gpus == 1  # its run and judge: gpucomp-10 splits them (selftest_protocol)


@pytest.mark.gpu
def test_compiled_optimizer_on_a_gpu():
    # written without a GPU (never run where it was written): inductor, CUDA graphs, foreach updates,
    # host-sync errors on from the 4th step of each epoch
    from arignote.bench import selfchecks_compiled

    detail = selfchecks_compiled.compiled_optimizer_gpu()
    assert "every update compiled" in detail


@pytest.mark.gpu
def test_a_gpu_checkpoint_s_step_counters_load_where_eager_torch_keeps_them():
    # a compiled GPU run leaves Adam's step counters on the GPU (created under capturable while
    # tracing); an eager run would read each with .item() per step: loaded onto the CPU instead
    with config.override(device="cuda0", optimizer_impl="foreach"):
        m = _mlp(Adam(lr=0.01), True)
        _fit(m, 1)
        state = m.optimizer.state_dict()
        assert any(s["step"].is_cuda for s in state["torch"]["state"].values())
        eager = _mlp(Adam(lr=0.01), False)
        _fit(eager, 1)
        eager.optimizer.load_state_dict(state)
        assert all(not s["step"].is_cuda for s in eager.optimizer.torch.state.values())
