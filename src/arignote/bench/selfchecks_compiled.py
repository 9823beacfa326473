"""``arignote selftest`` item for compiled steps: on a GPU, ``jit=on`` compiles the step in mode
``reduce-overhead`` and the steady-state step replays CUDA graphs.

:func:`probe` trains a small MLP with ``compile(jit_compile=...)`` for a few epochs (a partial last
batch included), then profiles one more training step (:func:`arignote.bench.launches.count_launches`)
and reports: the graphs compiled after the first epoch and after the last (must be equal: no
recompilation per epoch), the CUDA graph replays in the profiled step (``cudaGraphLaunch``), the
reasons inductor gave for not using CUDA graphs (``counters["inductor"]["cudagraph_skips"]``), and
the launches of the same step run eagerly. The probe runs on a CPU too (tests/test_compiled.py);
the item needs a GPU. Written without a GPU: never run where it was written.

:func:`optimizer_probe` is the compiled optimizer update (``training/compiled_update.py``): SGD with
momentum, Adam, RMSprop and Adagrad with torch's multi-tensor (``foreach``) update, as a GPU runs
them without the fused kernel, each trained eagerly and compiled with the learning rate halved every
other batch and a checkpoint reloaded; it reports the largest weight difference, the updates run
compiled and eagerly, the graphs before and after the last epoch, and (with ``sync_switch``) the
steps run under host-sync errors. The GPU item is :func:`compiled_optimizer_gpu`.

This module does not import torch at import time (``arignote selftest`` plans its items without it).

Example::

    >>> facts = probe("cpu", backend="aot_eager")            # doctest: +SKIP
    >>> facts["graphs_first_epoch"] == facts["graphs_last_epoch"], facts["graph_replays"]
    (True, 0)
"""

from __future__ import annotations

from typing import Any

__all__ = ["probe", "cuda_graphs_gpu", "optimizer_probe", "compiled_optimizer_gpu"]


class CheckFailed(AssertionError):
    """Compiled steps did not take effect as expected; the message says what was seen."""


def probe(device: str, backend: str = "inductor", jit: Any = True, epochs: int = 3) -> dict[str, Any]:
    """Train a small compiled MLP on ``device`` and measure one steady-state step (see the module doc)."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import numpy as np
    import torch
    from torch._dynamo.utils import counters

    from arignote import config
    from arignote.bench.launches import count_launches
    from arignote.callbacks import Callback
    from arignote.layers import Dense
    from arignote.models import Sequential

    config.configure(device=device, print_active_device=False, jit_backend=backend)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 32)).astype("float32")  # batch 32: 6 full batches and one of 8
    y = np.eye(4, dtype="float32")[rng.integers(0, 4, 200)]
    graphs: list[int] = []

    class Graphs(Callback):
        def on_epoch_end(self, epoch, logs=None):
            graphs.append(self.model._trainer.compiled.graphs)

    def build(jit_compile):
        torch.manual_seed(0)
        model = Sequential([Dense(64, activation="relu", input_shape=(32,)), Dense(4, activation="softmax")])
        model.compile("adam", "categorical_crossentropy", jit_compile=jit_compile)
        return model

    counters["inductor"].pop("cudagraph_skips", None)
    model = build(jit)
    model.fit(x, y, batch_size=32, epochs=epochs, verbose=0, callbacks=[Graphs()])
    eager = build(False)
    eager.fit(x, y, batch_size=32, epochs=1, verbose=0)
    on_gpu = model.device.type == "cuda"
    xb = torch.as_tensor(x[:32], device=model.device)
    yb = torch.as_tensor(y[:32], device=model.device)
    compiled = count_launches(lambda: model._trainer.train_step(xb, yb), cuda=on_gpu)
    plain = count_launches(lambda: eager._trainer.train_step(xb, yb), cuda=on_gpu)
    plan = model._trainer.compiled.plan
    return {"device": str(model.device), "mode": plan.mode, "backend": plan.backend,
            "cudagraphs": plan.cudagraphs, "graphs_first_epoch": graphs[0], "graphs_last_epoch": graphs[-1],
            "graph_replays": compiled.graph_replays, "cudagraph_skips": dict(counters["inductor"]).get(
                "cudagraph_skips", 0), "launches": compiled.launches, "eager_launches": plain.launches,
            "device_kernels": compiled.device_kernels, "eager_device_kernels": plain.device_kernels}


def cuda_graphs_gpu() -> str:
    """``jit=on`` on cuda:0: mode reduce-overhead, no recompilation per epoch, no CUDA-graph skip,
    and the steady-state step replays CUDA graphs with fewer kernel launches than eager."""
    facts = probe("cuda0", jit="on")
    problems = []
    if facts["mode"] != "reduce-overhead" or not facts["cudagraphs"]:
        problems.append(f"jit=on compiled in mode {facts['mode']} (expected reduce-overhead, CUDA graphs)")
    if facts["graphs_first_epoch"] != facts["graphs_last_epoch"]:
        problems.append(f"graphs grew after the first epoch: {facts['graphs_first_epoch']} -> "
                        f"{facts['graphs_last_epoch']}")
    if facts["cudagraph_skips"]:
        problems.append(f"inductor skipped CUDA graphs {facts['cudagraph_skips']} time(s) (see "
                        "TORCH_LOGS=perf_hints for the reason)")
    if facts["graph_replays"] < 1:
        problems.append("the profiled step replayed no CUDA graph (no cudaGraphLaunch)")
    if problems:
        raise CheckFailed("; ".join(problems) + f" [{facts}]")
    return (f"step replays {facts['graph_replays']} CUDA graph(s); launches per step "
            f"{facts['eager_launches']} eager -> {facts['launches']} compiled, "
            f"{facts['graphs_last_epoch']} graphs over 3 epochs")


def optimizer_probe(device: str, backend: str = "inductor", jit: Any = True, impl: str = "foreach",
                    sync_switch: Any = None) -> dict[str, dict[str, Any]]:
    """Per optimizer (``sgd-momentum``, ``adam``, ``rmsprop``, ``adagrad``): ``max_diff`` (eager vs
    compiled weights), ``compiled_calls``, ``eager_calls``, ``graphs_before_last``, ``graphs_after``
    ``guarded`` (the batches of the compiled model's epochs run with ``sync_switch(True)``, from
    the 4th batch of each epoch: the first ones compile and record CUDA graphs) and
    ``cudagraph_skips`` (inductor's count of graphs it kept from CUDA graphs). See the module doc."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import io

    import numpy as np
    import torch
    from torch._dynamo.utils import counters

    from arignote import backend as K
    from arignote import config
    from arignote.bench.fastprobes import SyncGuard
    from arignote.callbacks import Callback
    from arignote.callbacks.status import RunStatus
    from arignote.layers import Dense
    from arignote.models import Sequential
    from arignote.optimizers import SGD, Adagrad, Adam, RMSprop

    config.configure(device=device, print_active_device=False, jit_backend=backend, optimizer_impl=impl)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 16)).astype("float32")  # batch 16: 8 steps an epoch, no partial batch
    y = rng.normal(size=(128, 4)).astype("float32")
    makers = {"sgd-momentum": lambda: SGD(lr=0.05, momentum=0.9), "adam": lambda: Adam(lr=0.01),
              "rmsprop": lambda: RMSprop(lr=0.005), "adagrad": lambda: Adagrad(lr=0.05)}

    class HalveLR(Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch % 2 == 1:
                K.set_value(self.model.optimizer.lr, K.get_value(self.model.optimizer.lr) * 0.5)

    def train(make, jit_compile, guard):
        torch.manual_seed(0)
        model = Sequential([Dense(32, activation="relu", input_shape=(16,)), Dense(4)])
        model.compile(make(), "mse", jit_compile=jit_compile)
        callbacks = [HalveLR(), RunStatus(interval=3600.0)] + ([guard] if guard is not None else [])

        def fit(epochs):
            model.fit(x, y, batch_size=16, epochs=epochs, verbose=0, shuffle=False, callbacks=callbacks)

        fit(2)
        buf = io.BytesIO()
        torch.save(model.training_state(), buf)
        fit(1)
        model.load_training_state(torch.load(io.BytesIO(buf.getvalue()), weights_only=False))
        model.resume_epoch = None
        fit(1)
        before = model._trainer.compiled.graphs if model._trainer.compiled is not None else 0
        fit(1)
        return model, before

    facts = {}
    for name, make in makers.items():
        eager, _ = train(make, False, None)
        guard = SyncGuard(sync_switch, first=3) if sync_switch is not None else None
        counters["inductor"].pop("cudagraph_skips", None)
        compiled, before = train(make, jit, guard)
        update = compiled._trainer.compiled.update
        diff = max(float(np.abs(a - b).max()) for a, b in zip(eager.get_weights(), compiled.get_weights()))
        facts[name] = {"max_diff": diff, "compiled_calls": update.compiled_calls,
                       "eager_calls": update.eager_calls, "route": update.route.how,
                       "graphs_before_last": before, "graphs_after": compiled._trainer.compiled.graphs,
                       "guarded": list(guard.guarded) if guard is not None else [],
                       "cudagraph_skips": dict(counters["inductor"]).get("cudagraph_skips", 0)}
    return facts


def compiled_optimizer_gpu() -> str:
    """``jit=on`` on cuda:0 with ``optimizer.impl=foreach``: SGD (momentum), Adam, RMSprop and
    Adagrad give the eager weights (within 1e-5: inductor's kernels order sums their own way) under
    lr changes and a checkpoint reload, every update runs compiled, the last epoch compiles nothing,
    no graph is kept from CUDA graphs, and batches 4..8 of each epoch run under
    ``set_sync_debug_mode('error')``."""
    from arignote.devices import cuda  # torch: loaded in the check's own process

    try:
        facts = optimizer_probe("cuda0", jit="on", sync_switch=cuda.set_sync_errors)
    except RuntimeError as err:  # set_sync_debug_mode('error') raises at the syncing call
        raise CheckFailed(f"a compiled training step synchronized with the host: {err}") from err
    finally:
        cuda.set_sync_errors(False)
    problems = []
    for name, f in facts.items():
        if f["route"] != "compiled" or f["eager_calls"]:
            problems.append(f"{name}: {f['eager_calls']} update(s) ran eagerly (route {f['route']})")
        if f["max_diff"] > 1e-5:
            problems.append(f"{name}: weights differ from eager by {f['max_diff']:.2e}")
        if f["graphs_after"] != f["graphs_before_last"]:
            problems.append(f"{name}: graphs grew in the last epoch: {f['graphs_before_last']} -> "
                            f"{f['graphs_after']}")
        if not f["guarded"]:
            problems.append(f"{name}: no step ran under host-sync errors")
        if f["cudagraph_skips"]:  # e.g. a CPU input (lr, epsilon, step counters belong on the GPU)
            problems.append(f"{name}: inductor skipped CUDA graphs {f['cudagraph_skips']} time(s) "
                            "(TORCH_LOGS=perf_hints says why)")
    if problems:
        raise CheckFailed("; ".join(problems) + f" [{facts}]")
    worst = max(f["max_diff"] for f in facts.values())
    return (f"{', '.join(facts)}: every update compiled, eager weights within {worst:.1e}, no recompile "
            "in the last epoch, no host sync in steps 4..8")
