"""``arignote selftest`` items for compiled steps (``jit=on``: mode ``reduce-overhead``, CUDA graphs,
on a GPU). Each item is a *run* (on the GPU, returns a plain record of numbers) and a pure *judge*
(``judge(record) -> Verdict``, bench/selftest_protocol.py), so the judges are tested on a CPU with
recorded correct and broken outcomes (tests/selftest_records_compiled.py). Written without a GPU:
never run where it was written.

* ``compiled-cuda-graphs`` (:func:`probe`): a small MLP trained compiled and eagerly for 3 epochs (a
  partial last batch included); the graphs after the first and the last epoch, the CUDA-graph replays
  and launches of one profiled step against eager's, inductor's CUDA-graph skips, the largest weight
  and epoch-loss differences from the eager run, the batch sizes recorded as CUDA graphs.
* ``compiled-optimizer`` (:func:`optimizer_probe`): SGD with momentum, Adam, RMSprop, Adagrad,
  Adadelta and Nadam with torch's multi-tensor (``foreach``) update, trained eagerly and compiled
  under lr changes and a checkpoint reload, batches 4..8 of each epoch under host-sync errors; only
  torch's own sync error (:func:`is_host_sync_error`) is recorded as a host sync.
* ``compiled-accumulate`` (:func:`accumulate_probe`): ``fit(accumulate=2)`` and an injected
  out-of-memory split, against eager (each micro-batch a new CUDA-graph generation: the gradients
  must survive it, training/compiled_grads.py).
* ``compiled-data-parallel`` (:func:`run_data_parallel`, 2 GPUs): jit under NCCL data parallel with
  ``accumulate=2``; every rank's updates ran compiled (not the eager fallback).

This module does not import torch at import time (``arignote selftest`` plans its items without it).

Example (skipped by the doctest run: the probe compiles and trains for epochs, a GPU item)::

    >>> facts = probe("cpu", backend="aot_eager")            # doctest: +SKIP
    >>> facts["graphs_first_epoch"] == facts["graphs_last_epoch"], facts["graph_replays"]  # doctest: +SKIP
    (True, 0)
"""

from __future__ import annotations

from typing import Any

from arignote.bench.selftest_protocol import Verdict, raised, verdict

__all__ = ["probe", "optimizer_probe", "accumulate_probe", "is_host_sync_error", "run_cuda_graphs",
           "judge_cuda_graphs", "run_optimizer", "judge_optimizer", "run_accumulate", "judge_accumulate",
           "run_data_parallel", "judge_data_parallel"]


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
    jit_losses = model.fit(x, y, batch_size=32, epochs=epochs, verbose=0, shuffle=False,
                           callbacks=[Graphs()]).history["loss"]
    eager = build(False)
    eager_losses = eager.fit(x, y, batch_size=32, epochs=epochs, verbose=0, shuffle=False).history["loss"]
    weight_diff = max(float(np.abs(a - b).max()) for a, b in zip(eager.get_weights(), model.get_weights()))
    loss_diff = max(abs(a - b) for a, b in zip(eager_losses, jit_losses))
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
            "device_kernels": compiled.device_kernels, "eager_device_kernels": plain.device_kernels,
            "weight_diff": weight_diff, "loss_diff": loss_diff, "losses": jit_losses,
            "eager_losses": eager_losses, "recorded_sizes": _sizes(model), "eager_batches":
            model._trainer.sizes.eager_batches}


def _sizes(model: Any) -> dict[str, list[int]]:
    """The batch sizes each step kind gave its compiled (CUDA-graph recorded) function."""
    return {kind: sorted(sizes) for kind, sizes in model._trainer.sizes.recorded.items()}


def run_cuda_graphs() -> dict[str, Any]:
    """``compiled-cuda-graphs``'s run: :func:`probe` on cuda:0 with ``jit=on``."""
    return probe("cuda0", jit="on")


def judge_cuda_graphs(record: dict[str, Any]) -> Verdict:
    """Mode reduce-overhead with CUDA graphs; no recompilation after the first epoch; no CUDA-graph
    skip; the steady step replays a graph with fewer launches than eager; the weights and the
    per-epoch losses are eager's (within 1e-4: inductor's kernels sum in their own order, over 3
    epochs); one CUDA graph size for training (the 8-row last batch runs eagerly)."""
    r = record
    problems = []
    if r["mode"] != "reduce-overhead" or not r["cudagraphs"]:
        problems.append(f"jit=on compiled in mode {r['mode']} (expected reduce-overhead, CUDA graphs)")
    if r["graphs_first_epoch"] != r["graphs_last_epoch"]:
        problems.append(f"graphs grew after the first epoch: {r['graphs_first_epoch']} -> "
                        f"{r['graphs_last_epoch']}")
    if r["cudagraph_skips"]:
        problems.append(f"inductor skipped CUDA graphs {r['cudagraph_skips']} time(s) (TORCH_LOGS=perf_hints "
                        "says why)")
    if r["graph_replays"] < 1:
        problems.append("the profiled step replayed no CUDA graph (no cudaGraphLaunch)")
    elif r["launches"] >= r["eager_launches"]:
        problems.append(f"{r['launches']} launches per compiled step, not fewer than eager's "
                        f"{r['eager_launches']}")
    if not r["weight_diff"] <= 1e-4:  # NaN fails too
        problems.append(f"weights differ from the eager run's by {r['weight_diff']:.2e}")
    if not r["loss_diff"] <= 1e-4:
        problems.append(f"epoch losses differ from the eager run's by {r['loss_diff']:.2e} "
                        f"({r['losses']} vs {r['eager_losses']})")
    if r["recorded_sizes"].get("train") != [32]:
        problems.append(f"training batch sizes recorded as CUDA graphs: {r['recorded_sizes'].get('train')} "
                        "(expected [32]: the partial batch runs eagerly)")
    return verdict(problems, f"step replays {r['graph_replays']} CUDA graph(s); launches per step "
                   f"{r['eager_launches']} eager -> {r['launches']} compiled; eager weights within "
                   f"{r['weight_diff']:.1e}", replays=r["graph_replays"], launches=r["launches"],
                   eager_launches=r["eager_launches"], weight_diff=r["weight_diff"])


def optimizer_probe(device: str, backend: str = "inductor", jit: Any = True, impl: str = "foreach",
                    sync_switch: Any = None, names: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """Per optimizer (``sgd-momentum``, ``adam``, ``rmsprop``, ``adagrad``, ``adadelta``, ``nadam``;
    ``names``: only those): ``max_diff`` (eager vs
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
    from arignote.optimizers import SGD, Adadelta, Adagrad, Adam, Nadam, RMSprop

    config.configure(device=device, print_active_device=False, jit_backend=backend, optimizer_impl=impl)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 16)).astype("float32")  # batch 16: 8 steps an epoch, no partial batch
    y = rng.normal(size=(128, 4)).astype("float32")
    makers = {"sgd-momentum": lambda: SGD(lr=0.05, momentum=0.9), "adam": lambda: Adam(lr=0.01),
              "rmsprop": lambda: RMSprop(lr=0.005), "adagrad": lambda: Adagrad(lr=0.05),
              "adadelta": lambda: Adadelta(lr=1.0), "nadam": lambda: Nadam(lr=0.002)}
    makers = {name: makers[name] for name in names or makers}

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
                       "cudagraph_skips": dict(counters["inductor"]).get("cudagraph_skips", 0),
                       "state_copied": update.copied_out}
    return facts




# torch's text for a synchronizing call under set_sync_debug_mode("error"): c10/cuda/CUDAFunctions.cpp,
# warn_or_error_on_sync: TORCH_CHECK(false, "called a synchronizing CUDA operation"), a plain RuntimeError
HOST_SYNC = "called a synchronizing CUDA operation"


def is_host_sync_error(exc: BaseException) -> bool:
    """Whether ``exc`` is torch's sync-debug error (any other RuntimeError is not a host sync).

    >>> (is_host_sync_error(RuntimeError("called a synchronizing CUDA operation")),
    ...  is_host_sync_error(RuntimeError("CUDA error: an illegal memory access was encountered")))
    (True, False)
    """
    lines = str(exc).strip().splitlines()
    return isinstance(exc, RuntimeError) and bool(lines) and lines[0].startswith(HOST_SYNC)


def run_optimizer() -> dict[str, Any]:
    """``compiled-optimizer``'s run: :func:`optimizer_probe` on cuda:0 (``jit=on``, foreach), batches
    4..8 of each epoch under ``set_sync_debug_mode('error')``. torch's host-sync error is recorded
    (``host_sync``); any other error is the run's own failure and propagates."""
    from arignote.devices import cuda  # torch: loaded in the check's own process

    try:
        return {"optimizers": optimizer_probe("cuda0", jit="on", sync_switch=cuda.set_sync_errors)}
    except RuntimeError as err:
        if not is_host_sync_error(err):
            raise
        return {"host_sync": raised(err), "optimizers": {}}
    finally:
        cuda.set_sync_errors(False)


def judge_optimizer(record: dict[str, Any]) -> Verdict:
    """No host sync in steps 4..8; per optimizer: every update compiled, the eager weights within 1e-5
    (inductor's kernels order sums their own way), no recompile in the last epoch, steps run under
    host-sync errors, no graph kept from CUDA graphs."""
    if record.get("host_sync"):
        return verdict([f"a compiled training step synchronized with the host: {record['host_sync']}"], "")
    facts = record["optimizers"]
    problems = [] if facts else ["no optimizer was run"]
    for name, f in facts.items():
        if f["route"] != "compiled" or f["eager_calls"]:
            problems.append(f"{name}: {f['eager_calls']} update(s) ran eagerly (route {f['route']})")
        if not f["max_diff"] <= 1e-5:
            problems.append(f"{name}: weights differ from eager by {f['max_diff']:.2e}")
        if f["graphs_after"] != f["graphs_before_last"]:
            problems.append(f"{name}: graphs grew in the last epoch: {f['graphs_before_last']} -> "
                            f"{f['graphs_after']}")
        if not f["guarded"]:
            problems.append(f"{name}: no step ran under host-sync errors")
        if f["cudagraph_skips"]:  # e.g. a CPU input (lr, epsilon, step counters belong on the GPU)
            problems.append(f"{name}: inductor skipped CUDA graphs {f['cudagraph_skips']} time(s) "
                            "(TORCH_LOGS=perf_hints says why)")
    worst = max((f["max_diff"] for f in facts.values()), default=float("nan"))
    return verdict(problems, f"{', '.join(facts)}: every update compiled, eager weights within {worst:.1e}, "
                   "no recompile in the last epoch, no host sync in steps 4..8", max_diff=worst)


def accumulate_probe(device: str, backend: str = "inductor", jit: Any = True) -> dict[str, dict[str, Any]]:
    """``jit_compile`` with gradient accumulation: ``fit(accumulate=2)`` and an injected out of memory
    above 8 samples (``memory.oom_inject_above``: the batch of 32 runs as 4 micro-batches), each with
    Adam and SGD with momentum (``optimizer.impl=foreach``: the compiled update), against the same run
    eagerly. Per case: ``max_diff``, ``finite``, the update's ``compiled_calls``/``eager_calls``, the
    OOM guard's ``k``, ``grads_copied`` (gradients copied out of the CUDA-graph pool: 0 off CUDA
    graphs), ``recorded_sizes`` and ``error`` (the text of a RuntimeError the compiled run raised:
    torch's "accessing gradient tensor output of CUDAGraphs" is what this item exists to catch)."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import numpy as np
    import torch

    from arignote import config
    from arignote.layers import Dense
    from arignote.models import Sequential
    from arignote.optimizers import SGD, Adam

    config.configure(device=device, print_active_device=False, jit_backend=backend, optimizer_impl="foreach")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 16)).astype("float32")  # batch 32: 4 steps an epoch, no partial batch
    y = rng.normal(size=(128, 4)).astype("float32")
    cases = {"accumulate-2": ({"accumulate": 2}, {}), "oom-split": ({}, {"memory_oom_inject_above": 8})}
    makers = {"adam": lambda: Adam(lr=0.01), "sgd-momentum": lambda: SGD(lr=0.05, momentum=0.9)}

    def train(make, jit_compile, fit_kw, flags):
        torch.manual_seed(0)
        model = Sequential([Dense(32, activation="relu", input_shape=(16,)), Dense(4)])
        model.compile(make(), "mse", jit_compile=jit_compile)
        with config.override(**flags):
            model.fit(x, y, batch_size=32, epochs=2, verbose=0, shuffle=False, **fit_kw)
        return model

    facts: dict[str, dict[str, Any]] = {}
    for case, (fit_kw, flags) in cases.items():
        for name, make in makers.items():
            eager = train(make, False, fit_kw, flags)
            key = f"{case}/{name}"
            try:
                model = train(make, jit, fit_kw, flags)
            except RuntimeError as err:
                facts[key] = {"error": raised(err)}
                continue
            weights = model.get_weights()
            trainer = model._trainer
            update = trainer.compiled.update
            facts[key] = {
                "max_diff": max(float(np.abs(a - b).max()) for a, b in zip(eager.get_weights(), weights)),
                "finite": all(bool(np.isfinite(w).all()) for w in weights),
                "compiled_calls": update.compiled_calls, "eager_calls": update.eager_calls,
                "k": trainer.oom.k, "cudagraphs": trainer.compiled.plan.cudagraphs,
                "grads_copied": trainer.stable_grads.copied if trainer.stable_grads is not None else 0,
                "recorded_sizes": _sizes(model), "error": None}
    return facts


def run_accumulate() -> dict[str, Any]:
    """``compiled-accumulate``'s run: :func:`accumulate_probe` on cuda:0 with ``jit=on``."""
    return {"cases": accumulate_probe("cuda0", jit="on")}


def judge_accumulate(record: dict[str, Any]) -> Verdict:
    """Each case trained under CUDA graphs without an error, to finite weights within 1e-4 of eager's,
    every update compiled, the gradients in stable buffers (copied out of the graph pool), the
    out-of-memory case split into 4 micro-batches of 8 (the size recorded)."""
    cases = record["cases"]
    problems = [] if cases else ["no case was run"]
    for key, f in cases.items():
        if f.get("error"):
            problems.append(f"{key}: the compiled run raised {f['error']}")
            continue
        if not f["cudagraphs"]:
            problems.append(f"{key}: the steps did not run under CUDA graphs")
        if not f["finite"] or not f["max_diff"] <= 1e-4:
            problems.append(f"{key}: weights differ from eager by {f['max_diff']:.2e} "
                            f"(finite: {f['finite']})")
        if f["eager_calls"] or not f["compiled_calls"]:
            problems.append(f"{key}: {f['eager_calls']} update(s) eager, {f['compiled_calls']} compiled")
        if not f["grads_copied"]:
            problems.append(f"{key}: no gradient was kept out of the CUDA-graph pool")
        if key.startswith("oom-split") and (f["k"] != 4 or f["recorded_sizes"].get("train") != [8]):
            problems.append(f"{key}: split into k={f['k']}, sizes recorded {f['recorded_sizes']} "
                            "(expected 4 x 8)")
    worst = max((f.get("max_diff", float("nan")) for f in cases.values()), default=float("nan"))
    return verdict(problems, f"{', '.join(cases)}: eager weights within {worst:.1e}, every update compiled",
                   max_diff=worst)


def run_data_parallel() -> dict[str, Any]:
    """``compiled-data-parallel``'s run, on every rank (2 GPUs, NCCL): ``jit=on``, foreach Adam,
    ``fit(accumulate=2)`` (DDP's ``no_sync`` micro-batch, then the synced one); rank 0 records each
    rank's compiled and eager updates (gathered), the strategy and the weights' finiteness."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import numpy as np
    import torch

    from arignote import config
    from arignote.layers import Dense
    from arignote.models import Sequential
    from arignote.optimizers import Adam

    config.configure(device="cuda0,cuda1", jit="on", print_active_device=False, optimizer_impl="foreach")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 16)).astype("float32")
    y = rng.normal(size=(256, 4)).astype("float32")
    torch.manual_seed(0)
    model = Sequential([Dense(32, activation="relu", input_shape=(16,)), Dense(4)])
    model.compile(Adam(lr=0.01), "mse", jit_compile=None)
    model.fit(x, y, batch_size=64, epochs=2, verbose=0, shuffle=False, accumulate=2)
    trainer = model._trainer
    update = trainer.compiled.update
    mine = torch.tensor([update.compiled_calls, update.eager_calls], device=trainer.device)
    calls = [[int(v) for v in part.cpu()] for part in trainer.strategy.gather(mine)]
    return {"world": trainer.strategy.world_size, "backend": trainer.strategy.backend,
            "mode": trainer.compiled.plan.mode, "route": update.route.how, "calls": calls,
            "steps": 2 * 256 // 64, "finite": all(bool(np.isfinite(w).all()) for w in model.get_weights())}


def judge_data_parallel(record: dict[str, Any]) -> Verdict:
    """Two NCCL ranks under reduce-overhead; on each rank every one of the steps ran the compiled
    update (none fell back to eager: the heartbeat's global step hook made every update eager)."""
    r = record
    problems = []
    if r["world"] != 2 or r["backend"] != "nccl":
        problems.append(f"strategy: {r['world']} process(es), {r['backend']} (expected 2, nccl)")
    if r["mode"] != "reduce-overhead":
        problems.append(f"jit=on compiled in mode {r['mode']} (expected reduce-overhead)")
    if r["route"] != "compiled":
        problems.append(f"the update's route is {r['route']}, not compiled")
    for rank, (compiled, eager) in enumerate(r["calls"]):
        if eager or compiled != r["steps"]:
            problems.append(f"rank {rank}: {compiled} compiled and {eager} eager update(s) of {r['steps']}")
    if not r["finite"]:
        problems.append("the weights are not finite")
    return verdict(problems, f"{r['world']} ranks: all {r['steps']} updates compiled on each",
                   steps=r["steps"], calls=r["calls"])

