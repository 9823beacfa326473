"""``arignote selftest`` item for compiled steps: on a GPU, ``jit=on`` compiles the step in mode
``reduce-overhead`` and the steady-state step replays CUDA graphs.

:func:`probe` trains a small MLP with ``compile(jit_compile=...)`` for a few epochs (a partial last
batch included), then profiles one more training step (:func:`arignote.bench.launches.count_launches`)
and reports: the graphs compiled after the first epoch and after the last (must be equal: no
recompilation per epoch), the CUDA graph replays in the profiled step (``cudaGraphLaunch``), the
reasons inductor gave for not using CUDA graphs (``counters["inductor"]["cudagraph_skips"]``), and
the launches of the same step run eagerly. The probe runs on a CPU too (tests/test_compiled.py);
the item needs a GPU. Written without a GPU: never run where it was written.

This module does not import torch at import time (``arignote selftest`` plans its items without it).

Example::

    >>> facts = probe("cpu", backend="aot_eager")            # doctest: +SKIP
    >>> facts["graphs_first_epoch"] == facts["graphs_last_epoch"], facts["graph_replays"]
    (True, 0)
"""

from __future__ import annotations

from typing import Any

__all__ = ["probe", "cuda_graphs_gpu"]


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
