"""Compiled steps (compile(jit_compile=...) / the jit flag): the same weights as eager after several
steps, graphs counted per epoch (a partial last batch must not recompile each epoch), LR changes seen
without recompiling, the flag and its precedence, and the errors.

Most tests use the aot_eager backend (Dynamo + AOTAutograd without generated kernels: the same
capture, seconds instead of a C++ build); one runs the default inductor backend.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote import config
from arignote.callbacks import Callback
from arignote.layers import Conv2D, Dense, Flatten, Input
from arignote.models import Model, Sequential
from arignote.optimizers import SGD, Adam, RMSprop
from arignote.training import compiled

RNG = np.random.default_rng(0)
X = RNG.normal(size=(70, 8)).astype("float32")  # batch 16: 4 full batches and one of 6
Y = RNG.normal(size=(70, 3)).astype("float32")


@pytest.fixture(autouse=True)
def _quiet_aot_eager():
    with config.override(print_active_device=False, jit_backend="aot_eager"):
        yield


class Graphs(Callback):
    """The compiled-graph count at each epoch's end."""

    def __init__(self):
        super().__init__()
        self.per_epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.per_epoch.append(self.model._trainer.compiled.graphs)


def _mlp(optimizer, jit, seed=0):
    torch.manual_seed(seed)
    m = Sequential([Dense(16, activation="relu", input_dim=8), Dense(3)])
    m.compile(optimizer, "mse", metrics=["mae"], jit_compile=jit)
    return m


def _weights(m):
    return [w.copy() for w in m.get_weights()]


def _assert_same(a, b, tol=1e-5):
    assert len(a) == len(b)
    for p, q in zip(a, b):
        np.testing.assert_allclose(p, q, rtol=tol, atol=tol)


def _fit_both(make, **fit):
    """(eager weights, compiled weights, compiled model, eager History, compiled History)."""
    eager, jit = make(False), make(True)
    h0 = eager.fit(X, Y, verbose=0, shuffle=False, **fit)
    h1 = jit.fit(X, Y, verbose=0, shuffle=False, **fit)
    return _weights(eager), _weights(jit), jit, h0, h1


@pytest.mark.parametrize("optimizer", [lambda: Adam(lr=0.01), lambda: SGD(lr=0.05, momentum=0.9)])
def test_same_weights_as_eager_and_graphs_fixed_over_epochs(optimizer):
    e, j, m, h0, h1 = _fit_both(lambda jit: _mlp(optimizer(), jit), batch_size=16, epochs=3,
                                validation_split=0.2)
    _assert_same(e, j)
    np.testing.assert_allclose(h0.history["loss"], h1.history["loss"], rtol=1e-5)
    np.testing.assert_allclose(h0.history["val_mae"], h1.history["val_mae"], rtol=1e-5)
    assert m._trainer.compiled.graphs == 3  # the steps did run compiled
    assert not np.allclose(e[0], _weights(_mlp(optimizer(), False))[0])  # and training moved them


def test_partial_last_batch_compiles_a_fixed_number_of_graphs():
    # 56 training rows at batch 16: 16, 16, 16, 8 each epoch; 14 validation rows: one batch of 14
    graphs = Graphs()
    m = _mlp(Adam(lr=0.01), True)
    m.fit(X, Y, batch_size=16, epochs=3, verbose=0, validation_split=0.2, callbacks=[graphs])
    # train: the full batch (static), then the first other size (batch dim symbolic); eval: one
    assert graphs.per_epoch == [3, 3, 3]
    m.fit(X, Y, batch_size=16, epochs=2, verbose=0, validation_split=0.2, callbacks=[graphs])
    assert graphs.per_epoch[-1] == 3  # a second fit reuses them


def test_graphs_are_counted_by_the_backend_not_per_call():
    m = _mlp(Adam(lr=0.01), True)
    m.fit(X[:32], Y[:32], batch_size=16, epochs=4, verbose=0)  # one size only
    assert m._trainer.compiled.graphs == 1


def test_accumulate_and_oom_split_match_eager_without_recompiling_each_epoch():
    graphs = Graphs()
    eager, jit = _mlp(Adam(lr=0.01), False), _mlp(Adam(lr=0.01), True)
    eager.fit(X, Y, batch_size=16, epochs=3, verbose=0, shuffle=False, accumulate=2)
    jit.fit(X, Y, batch_size=16, epochs=3, verbose=0, shuffle=False, accumulate=2, callbacks=[graphs])
    _assert_same(_weights(eager), _weights(jit))
    assert graphs.per_epoch[0] == graphs.per_epoch[-1] <= 3
    # an injected out of memory above 5 samples: micro-batches of 4 (16 = 4 x 4) and 3 (6 = 2 x 3)
    graphs = Graphs()
    eager, jit = _mlp(SGD(lr=0.05), False), _mlp(SGD(lr=0.05), True)
    with config.override(memory_oom_inject_above=5):
        eager.fit(X, Y, batch_size=16, epochs=3, verbose=0, shuffle=False)
        jit.fit(X, Y, batch_size=16, epochs=3, verbose=0, shuffle=False, callbacks=[graphs])
    _assert_same(_weights(eager), _weights(jit))
    assert graphs.per_epoch[0] == graphs.per_epoch[-1] <= 3


class HalveLR(Callback):
    """``K.set_value(model.optimizer.lr, ...)`` at every other batch (what LR callbacks do)."""

    def __init__(self):
        super().__init__()
        self.graphs = []

    def on_train_batch_begin(self, batch, logs=None):
        if batch % 2 == 1:
            lr = self.model.optimizer.lr
            K.set_value(lr, K.get_value(lr) * 0.5)

    def on_train_batch_end(self, batch, logs=None):
        if self.model._trainer.compiled is not None:
            self.graphs.append(self.model._trainer.compiled.graphs)


@pytest.mark.parametrize("optimizer", ["adam", "sgd", "rmsprop", "adadelta", "adagrad"])
def test_lr_changes_take_effect_without_recompiling(optimizer):
    cb_e, cb_j = HalveLR(), HalveLR()
    eager, jit = _mlp(optimizer, False), _mlp(optimizer, True)
    eager.fit(X[:64], Y[:64], batch_size=16, epochs=3, verbose=0, shuffle=False, callbacks=[cb_e])
    jit.fit(X[:64], Y[:64], batch_size=16, epochs=3, verbose=0, shuffle=False, callbacks=[cb_j])
    assert K.get_value(jit.optimizer.lr) == pytest.approx(K.get_value(eager.optimizer.lr))
    start = K.get_value(_mlp(optimizer, False).optimizer.lr)
    assert K.get_value(jit.optimizer.lr) == pytest.approx(start / 64)  # halved twice an epoch
    _assert_same(_weights(eager), _weights(jit))
    assert len(set(cb_j.graphs)) == 1, cb_j.graphs  # no graph after the first step
    # the forward/backward graph, plus the update's where torch has no fused CPU kernel
    assert cb_j.graphs[0] == (2 if optimizer in ("rmsprop", "adadelta") else 1)
    # between steps the param group holds a float, as an eager one (training/compiled_update.py)
    assert type(jit.optimizer.torch.param_groups[0]["lr"]) is float
    # and the change matters: without it the weights differ
    plain = _mlp(optimizer, True)
    plain.fit(X[:64], Y[:64], batch_size=16, epochs=3, verbose=0, shuffle=False)
    assert not np.allclose(_weights(plain)[0], _weights(jit)[0])


def test_decay_and_clipping_under_a_compiled_update():
    # decay writes a new lr before every step: into the tensor the compiled update reads
    def make(jit):
        return _mlp(RMSprop(lr=0.01, decay=0.5, clipnorm=0.1), jit)

    graphs = Graphs()
    eager, jit = make(False), make(True)
    eager.fit(X, Y, batch_size=16, epochs=3, verbose=0, shuffle=False)
    jit.fit(X, Y, batch_size=16, epochs=3, verbose=0, shuffle=False, callbacks=[graphs])
    _assert_same(_weights(eager), _weights(jit))
    assert graphs.per_epoch == [3, 3, 3]  # train: 2 sizes; the update: one
    assert float(jit.optimizer.torch.param_groups[0]["lr"]) == pytest.approx(0.01 / (1 + 0.5 * 14))


def test_functional_model_and_cnn_evaluate_predict_match_eager():
    def make(jit):
        torch.manual_seed(1)
        inp = Input((6, 6, 2))
        h = Conv2D(4, 3, activation="relu")(inp)
        out = Dense(3)(Flatten()(h))
        m = Model(inp, out)
        m.compile(Adam(lr=0.01), "mse", jit_compile=jit)
        return m

    x = RNG.normal(size=(20, 6, 6, 2)).astype("float32")
    y = RNG.normal(size=(20, 3)).astype("float32")
    eager, jit = make(False), make(True)
    for m in (eager, jit):
        m.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    _assert_same(_weights(eager), _weights(jit))
    np.testing.assert_allclose(eager.evaluate(x, y, batch_size=8, verbose=0),
                               jit.evaluate(x, y, batch_size=8, verbose=0), rtol=1e-5)
    np.testing.assert_allclose(eager.predict(x, batch_size=8), jit.predict(x, batch_size=8),
                               rtol=1e-5, atol=1e-6)
    before = jit._trainer.compiled.graphs
    jit.predict(x, batch_size=8)
    jit.evaluate(x, y, batch_size=8, verbose=0)
    assert jit._trainer.compiled.graphs == before


@pytest.mark.slow
def test_default_inductor_backend_matches_eager():
    # generated C++ kernels (g++): float sums may be ordered differently, hence the tolerance
    with config.override(jit_backend="inductor"):
        graphs = Graphs()
        eager, jit = _mlp(Adam(lr=0.01), False), _mlp(Adam(lr=0.01), True)
        eager.fit(X, Y, batch_size=16, epochs=3, verbose=0, shuffle=False)
        jit.fit(X, Y, batch_size=16, epochs=3, verbose=0, shuffle=False, callbacks=[graphs])
        assert isinstance(jit._trainer.compiled.backend, torch._TorchCompileInductorWrapper)
    _assert_same(_weights(eager), _weights(jit), tol=1e-4)
    assert graphs.per_epoch == [2, 2, 2]


def test_recompile_limit_is_a_notice_not_a_silent_fallback(capsys):
    names = ["tanh", "sigmoid", "relu", "abs", "neg", "exp", "sin", "cos"]

    class Shift(Callback):  # a Python string the forward reads, changed every batch: a guard fails
        def on_train_batch_begin(self, batch, logs=None):
            self.model.layers[0].shift = names[batch % len(names)]

    class Shifted(Dense):
        shift = "tanh"

        def call(self, inputs):
            return getattr(torch, self.shift)(super().call(inputs))

    torch.manual_seed(0)
    m = Sequential([Shifted(3, input_dim=8)])
    m.compile("sgd", "mse", jit_compile=True)
    with torch._dynamo.config.patch(recompile_limit=3):
        m.fit(X[:64], Y[:64], batch_size=8, epochs=2, verbose=0, callbacks=[Shift()])
    err = capsys.readouterr().err
    assert err.count("recompile limit (3 graphs)") == 1 and "arignote_train_step" in err
    assert m._trainer.compiled.graphs == 3


# --------------------------------------------------------------------------- the setting


def test_flag_turns_it_on_and_code_wins(capsys):
    with config.override(jit="on", print_active_device=True):
        m = _mlp("sgd", None)
        m.fit(X[:32], Y[:32], batch_size=16, verbose=0)
        assert m._trainer.compiled.plan == compiled.JitPlan("default", "aot_eager", "jit flag")
        assert "Step compiled: torch.compile(backend=aot_eager, mode=default) on cpu (jit flag)" in \
            capsys.readouterr().out
        off = _mlp("sgd", False)  # compile(jit_compile=False) beats jit=on
        off.fit(X[:32], Y[:32], batch_size=16, verbose=0)
        assert off._trainer.compiled is None
    m = _mlp("sgd", None)
    m.fit(X[:32], Y[:32], batch_size=16, verbose=0)
    assert m._trainer.compiled is None  # the flag's default is off


def test_modes_and_their_notes_on_cpu():
    cpu = torch.device("cpu")
    assert compiled.resolve("on", cpu)[0].mode == "default"
    assert compiled.resolve("on", torch.device("cuda", 0))[0].mode == "reduce-overhead"
    assert compiled.resolve("on", torch.device("cuda", 0))[0].cudagraphs is False  # aot_eager here
    with config.override(jit_backend="inductor"):
        plan, notes = compiled.resolve("reduce-overhead", cpu)
        assert plan.mode == "default" and "CUDA graphs, on GPUs only" in notes[0]
        assert compiled.resolve("max-autotune", cpu)[0].mode == "max-autotune-no-cudagraphs"
        assert compiled.resolve(True, torch.device("cuda", 0))[0].cudagraphs
    plan, notes = compiled.resolve("max-autotune", cpu)
    assert plan.mode == "max-autotune" and "inductor's" in notes[0]


def test_bad_values_name_the_choices():
    with pytest.raises(ValueError, match=r"jit_compile='fast'.*'reduce-overhead'"):
        _mlp("sgd", "fast")
    with pytest.raises(config.ConfigError, match="jit"):
        with config.override(jit="fast"):
            pass


# --------------------------------------------------------------------------- the selftest item


def test_selftest_probe_on_cpu_sees_no_replay_and_fewer_launches():
    from arignote.bench import selfchecks, selfchecks_compiled

    facts = selfchecks_compiled.probe("cpu", backend="aot_eager")
    assert facts["graphs_first_epoch"] == facts["graphs_last_epoch"] == 2
    assert facts["graph_replays"] == 0 and not facts["cudagraphs"]  # CPU: no CUDA graph
    assert 0 < facts["launches"] and 0 < facts["eager_launches"]
    names = [c.name for c in selfchecks.CHECKS]
    assert "compiled-cuda-graphs" in names
    assert next(c for c in selfchecks.CHECKS if c.name == "compiled-cuda-graphs").gpus == 1


@pytest.mark.gpu
def test_cuda_graphs_replayed_on_gpu():
    from arignote.bench import selfchecks

    ok, detail = selfchecks.run_in_process("compiled-cuda-graphs", timeout=900)
    assert ok and "CUDA graph" in detail, detail


def test_cuda_graphs_refused_with_the_caching_allocator_off():
    """Issue 28 C4: memory.preallocate<0 (no caching: cudaMalloc itself) cannot run under CUDA-graph
    capture; the pair is refused naming both flags and the ways out, by fit and `arignote config`."""
    from types import SimpleNamespace

    from arignote.commands import config_cmd
    from arignote.errors import ConfigError

    gpu = torch.device("cuda:0")
    with config.override(memory_preallocate=-1, jit="on", jit_backend="inductor"):
        with pytest.raises(ConfigError) as err:
            compiled.resolve(None, gpu)
        text = str(err.value)
        assert "memory.preallocate=-1" in text and "jit mode reduce-overhead (jit flag)" in text
        assert "memory.preallocate=0" in text and "max-autotune-no-cudagraphs" in text
        with pytest.raises(ConfigError, match=r"compile\(jit_compile=...\)"):
            compiled.resolve("max-autotune", gpu)
        with pytest.raises(ConfigError, match="memory.preallocate"):
            config_cmd.jit_plan([SimpleNamespace(is_cuda=True)])
        # no CUDA graphs, no refusal: the CPU, the default mode, jit off
        assert compiled.resolve(None, torch.device("cpu"))[0].mode == "default"
        assert compiled.resolve("default", gpu)[0].mode == "default"
        assert compiled.resolve("max-autotune-no-cudagraphs", gpu)[0].cudagraphs is False
        assert compiled.resolve("off", gpu) == (None, [])
        config_cmd.jit_plan([SimpleNamespace(is_cuda=False)])
    with config.override(memory_preallocate=0, jit="on", jit_backend="inductor"):
        assert compiled.resolve(None, gpu)[0].cudagraphs
        config_cmd.jit_plan([SimpleNamespace(is_cuda=True)])
