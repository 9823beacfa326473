"""``arignote selftest`` items that run anywhere (a CPU is enough): each a run and a pure judge.

Example::

    >>> judge_train_cpu({"device": "cpu", "losses": [1.39, 1.37]}).ok
    True
    >>> judge_train_cpu({"device": "cuda:0", "losses": [1.39, 1.37]}).message
    'model on cuda:0, expected cpu'
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

from arignote.bench.selftest_fits import banner, fit, line_naming, loss_problems, strategy_probe
from arignote.bench.selftest_protocol import Verdict, verdict

__all__ = ["run_banner_cpu", "judge_banner_cpu", "run_train_cpu", "judge_train_cpu",
           "run_data_parallel_cpu", "judge_data_parallel_cpu", "run_mixed_precision_cpu",
           "judge_mixed_precision_cpu", "run_oom_split_cpu", "judge_oom_split_cpu", "run_placement_cpu",
           "judge_placement_cpu", "train_placed"]


def run_banner_cpu() -> dict[str, Any]:
    return {"lines": banner("cpu")}


def judge_banner_cpu(record: dict[str, Any]) -> Verdict:
    line = line_naming(record["lines"], "device cpu")
    return verdict([] if line else [f"the banner does not name device cpu: {record['lines']!r}"], line or "")


def run_train_cpu() -> dict[str, Any]:
    model, losses = fit({"device": "cpu"}, kind="cnn")
    return {"device": str(model.device), "losses": losses}


def judge_train_cpu(record: dict[str, Any]) -> Verdict:
    losses = record["losses"]
    problems = ([] if record["device"] == "cpu" else [f"model on {record['device']}, expected cpu"])
    problems += loss_problems(losses)
    return verdict(problems, f"CNN, loss {losses[0]:.3f} -> {losses[-1]:.3f} on cpu",
                   first_loss=losses[0], last_loss=losses[-1])


def run_data_parallel_cpu() -> dict[str, Any]:
    seen: list[list[Any]] = []
    _, losses = fit({"device": "cpu", "cpu.processes": 2, "cpu.threads": 1}, callbacks=[strategy_probe(seen)])
    return {"strategies": seen, "losses": losses}


def judge_data_parallel_cpu(record: dict[str, Any]) -> Verdict:
    seen = record["strategies"]
    problems = [] if seen == [[2, "gloo"]] else [f"expected 2 gloo processes, the strategy reported {seen}"]
    return verdict(problems + loss_problems(record["losses"]), "2 CPU processes (gloo), loss went down",
                   losses=record["losses"])


def run_mixed_precision_cpu() -> dict[str, Any]:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.bench.selftest_probes import AutocastProbe

    probe = AutocastProbe()
    model, losses = fit({"device": "cpu", "precision": "mixed-bf16"}, kind="cnn", callbacks=[probe])
    return {"losses": losses, **probe.record(model)}


def judge_mixed_precision_cpu(record: dict[str, Any]) -> Verdict:
    problems = loss_problems(record["losses"])
    if "bfloat16" not in record["policy"]:
        problems.append(f"precision policy is {record['policy']!r}")
    if record["forward_dtypes"] != ["torch.bfloat16"]:
        problems.append(f"the training forward passes ran in {record['forward_dtypes']}, expected bfloat16 "
                        "under autocast")
    if record["scaler_enabled"]:
        problems.append("the trainer's grad scaler is enabled under bf16 (bf16 needs no scaling)")
    return verdict(problems, record["policy"], losses=record["losses"])


def run_oom_split_cpu() -> dict[str, Any]:
    """The out-of-memory recovery path, with an injected OOM (a CPU has no allocator cap)."""
    out = io.StringIO()
    with contextlib.redirect_stderr(out):  # the split notice goes to stderr
        model, losses = fit({"device": "cpu", "memory.oom_inject_above": 8, "memory.on_oom": "split"})
    return {"stderr": out.getvalue().splitlines(), "k": model._trainer.oom.k, "losses": losses}


def judge_oom_split_cpu(record: dict[str, Any]) -> Verdict:
    notice = next((ln for ln in record["stderr"] if "out of memory at batch 32" in ln), "")
    tail = record["stderr"][-3:]
    problems = [] if notice else [f"no split notice after an injected OOM; printed: {tail!r}"]
    if record["k"] < 4:
        problems.append(f"the guard ended at k={record['k']}, expected 4 micro-batches (32 over a cap of 8)")
    problems += loss_problems(record["losses"])
    told = notice.split(";", 1)[1].strip().split(" with ")[0] if ";" in notice else notice
    return verdict(problems, "injected OOM at batch 32 -> " + told, k=record["k"])


def train_placed(device: str, contexts: str, hidden: int,
                 flags: dict[str, Any] | None = None) -> tuple[Any, list]:
    """Two Dense layers under placement contexts dev0/dev1, trained for 2 epochs: ``(model, losses)``."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.datasets import synthetic
    from arignote.layers import Dense
    from arignote.models import Sequential
    from arignote.parallel.placement import device as placed
    from arignote.utils import to_categorical

    config.configure(device=device, print_active_device=False, contexts=contexts, **(flags or {}))
    model = Sequential()
    with placed("dev0"):
        model.add(Dense(hidden, activation="relu", input_shape=(32,)))
    with placed("dev1"):
        model.add(Dense(4, activation="softmax"))
    model.compile(loss="categorical_crossentropy", optimizer="adam")
    x, y = synthetic(shape=(32,), classes=4, samples=256, noise=0.3)
    loss = model.fit(x, to_categorical(y, 4), batch_size=32, epochs=2, verbose=0).history["loss"]
    return model, [float(v) for v in loss]


def run_placement_cpu() -> dict[str, Any]:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.parallel.placement import layer_device

    model, losses = train_placed("cpu", "dev0->cpu;dev1->cpu", hidden=32)
    return {"placed": [layer_device(layer) for layer in model.layers], "losses": losses}


def judge_placement_cpu(record: dict[str, Any]) -> Verdict:
    problems = [] if record["placed"] == ["cpu", "cpu"] else [f"layers placed on {record['placed']}"]
    return verdict(problems + loss_problems(record["losses"]),
                   "contexts dev0/dev1 -> cpu: layers placed, trained")
