"""``arignote selftest`` items for one or two GPUs: banner, memory policies (checked with the driver),
cuDNN switches, fp16 mixed precision, training on each GPU, NCCL data parallel, placement, a real
out-of-memory. Each is a run (records numbers on the GPU) and a pure judge; the judges are tested on
a CPU with recorded outcomes (tests/selftest_records.py). Written without a GPU.

Example::

    >>> judge_memory_no_cache({"caching": False, "reserved_after": 0, "free_before": 10 << 30,
    ...                        "free_after": 10 << 30}).ok
    True
"""

from __future__ import annotations

from typing import Any

from arignote.bench.selfchecks_cpu import train_placed
from arignote.bench.selftest_fits import banner, fit, line_naming, loss_problems, strategy_probe
from arignote.bench.selftest_protocol import Verdict, raised, verdict

MiB = 1 << 20


def _mib(n: float) -> str:
    return f"{n / MiB:.0f} MiB"


# --------------------------------------------------------------------------- banner


def run_banner_gpu() -> dict[str, Any]:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.devices import current_inventory

    return {"lines": banner("cuda0"), "gpu_name": current_inventory().gpus[0].name}


def judge_banner_gpu(record: dict[str, Any]) -> Verdict:
    line = line_naming(record["lines"], record["gpu_name"])
    return verdict([] if line else [f"the banner does not name {record['gpu_name']}: {record['lines']!r}"],
                   line or "")


# --------------------------------------------------------------------------- memory policies


def run_memory_preallocate() -> dict[str, Any]:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.devices import cuda
    from arignote.runtime import setup

    free0, total = cuda.mem_get_info(0)  # creates the CUDA context before measuring
    config.configure(device="cuda0", print_active_device=False, memory_preallocate=0.5)
    setup.prepare("cuda:0")
    free1, _ = cuda.mem_get_info(0)
    return {"total": total, "free_before": free0, "free_after": free1, "reserved": cuda.memory_in_use(0)[1]}


def judge_memory_preallocate(record: dict[str, Any]) -> Verdict:
    total, reserved = record["total"], record["reserved"]
    taken, want = record["free_before"] - record["free_after"], 0.5 * record["total"]
    problems = [] if reserved >= 0.95 * want else [f"reserved {_mib(reserved)}, expected about {_mib(want)}"]
    if taken < 0.9 * want:
        problems.append(f"the driver sees only {_mib(taken)} taken, expected about {_mib(want)}")
    return verdict(problems, f"reserved {_mib(reserved)} of {_mib(total)}; driver free "
                   f"{_mib(record['free_before'])} -> {_mib(record['free_after'])}",
                   reserved=reserved, total=total, driver_taken=taken)


def limit_probe(index: int, total: int) -> dict[str, Any]:
    """Under a cap of 0.25 on cuda:``index``: ask for 35% of the GPU (must be refused, with the
    error naming the flag), then 10% (must fit). Shared with the placement + memory.limit item."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import torch

    from arignote.devices import cuda
    from arignote.runtime import memory

    dev = f"cuda:{index}"
    out: dict[str, Any] = {"fraction": cuda.memory_fraction(index), "oom_raised": False, "oom_message": "",
                           "small_allocated": False}
    try:
        with memory.oom_explained(dev):
            block = torch.empty(int(0.35 * total), dtype=torch.uint8, device=dev)
        del block
    except torch.OutOfMemoryError as exc:
        out["oom_raised"], out["oom_message"] = True, str(exc)[-400:]
    cuda.empty_cache()
    try:
        ok = torch.empty(int(0.1 * total), dtype=torch.uint8, device=dev)
        del ok
        out["small_allocated"] = True
    except torch.OutOfMemoryError as exc:
        out["small_error"] = raised(exc)
    cuda.empty_cache()
    return out


def limit_problems(probe: dict[str, Any], where: str) -> list[str]:
    """What :func:`limit_probe` on ``where`` shows wrong under memory.limit=0.25."""
    problems = []
    if abs(probe["fraction"] - 0.25) >= 0.01:
        problems.append(f"{where}: the allocator's cap is {probe['fraction']}, expected 0.25")
    if not probe["oom_raised"]:
        problems.append(f"{where}: allocating 35% of the GPU succeeded under memory.limit=0.25")
    elif "memory.limit=0.25" not in probe["oom_message"]:
        problems.append(f"{where}: the out-of-memory error does not name the flag: "
                        f"{probe['oom_message'][-160:]!r}")
    if not probe["small_allocated"]:
        problems.append(f"{where}: 10% of the GPU was refused under a 25% cap "
                        f"({probe.get('small_error', '')})")
    return problems


def run_memory_limit() -> dict[str, Any]:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.devices import cuda
    from arignote.runtime import setup

    _, total = cuda.mem_get_info(0)
    config.configure(device="cuda0", print_active_device=False, memory_limit=0.25)
    setup.prepare("cuda:0")
    return {"total": total, **limit_probe(0, total)}


def judge_memory_limit(record: dict[str, Any]) -> Verdict:
    return verdict(limit_problems(record, "cuda:0"),
                   f"cap {record['fraction']:.2f} of {_mib(record['total'])}: 35% refused with "
                   "OutOfMemoryError, 10% then allocated", fraction=record["fraction"])


def run_memory_no_cache() -> dict[str, Any]:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import torch

    from arignote import config
    from arignote.devices import cuda
    from arignote.runtime import setup

    cuda.mem_get_info(0)
    config.configure(device="cuda0", print_active_device=False, memory_preallocate=-1)
    setup.prepare("cuda:0")
    free0, _ = cuda.mem_get_info(0)
    block = torch.empty(512 * MiB, dtype=torch.uint8, device="cuda:0")
    del block
    free1, _ = cuda.mem_get_info(0)
    return {"caching": cuda.caching_enabled(), "reserved_after": cuda.memory_in_use(0)[1],
            "free_before": free0, "free_after": free1}


def judge_memory_no_cache(record: dict[str, Any]) -> Verdict:
    free0, free1, reserved = record["free_before"], record["free_after"], record["reserved_after"]
    problems = ["the caching allocator is still on under memory.preallocate<0"] if record["caching"] else []
    if reserved:
        problems.append(f"{_mib(reserved)} still reserved after the free (caching should be off)")
    if abs(free0 - free1) >= 64 * MiB:
        problems.append(f"driver free {_mib(free0)} -> {_mib(free1)} after alloc/free")
    return verdict(problems, f"512 MiB allocated and freed: back to the driver (free {_mib(free0)} -> "
                   f"{_mib(free1)})", reserved_after=reserved)


# --------------------------------------------------------------------------- cuDNN, precision


def _run_cudnn(enabled: bool, benchmark: bool) -> dict[str, Any]:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.devices import cuda

    _, losses = fit({"device": "cuda0", "dnn.enabled": "true" if enabled else "false",
                     "dnn.benchmark": benchmark}, kind="cnn")
    return {"want": [enabled, benchmark], "flags": list(cuda.cudnn_flags()[:2]), "losses": losses}


def run_cudnn_off() -> dict[str, Any]:
    return _run_cudnn(False, False)


def run_cudnn_on() -> dict[str, Any]:
    return _run_cudnn(True, False)


def run_cudnn_benchmark() -> dict[str, Any]:
    return _run_cudnn(True, True)


def judge_cudnn(record: dict[str, Any]) -> Verdict:
    flags, want = record["flags"], record["want"]
    problems = [] if flags == want else [f"cuDNN switches (enabled, benchmark) are {flags}, expected {want}"]
    return verdict(problems + loss_problems(record["losses"]),
                   f"CNN trained with cudnn.enabled={flags[0]}, benchmark={flags[1]}",
                   losses=record["losses"])


def run_mixed_precision() -> dict[str, Any]:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.bench.selftest_probes import AutocastProbe

    probe = AutocastProbe()
    model, losses = fit({"device": "cuda0", "precision": "mixed-fp16"}, kind="cnn", callbacks=[probe])
    return {"losses": losses, **probe.record(model)}


def judge_mixed_precision(record: dict[str, Any]) -> Verdict:
    """The trainer's own scaler is enabled and the training forward passes ran under fp16 autocast
    (issue 28 W2: a freshly built GradScaler is enabled on any CUDA box and proves nothing)."""
    problems = loss_problems(record["losses"])
    if not record["scaler_enabled"]:
        problems.append("the trainer's grad scaler is disabled under mixed-fp16")
    if record["forward_dtypes"] != ["torch.float16"] or record["autocast_on"] != [True]:
        problems.append(f"the training forward passes ran in {record['forward_dtypes']} (autocast "
                        f"{record['autocast_on']}), expected float16 under autocast")
    return verdict(problems, f"{record['policy']}; scale {record['scale']}", scale=record["scale"])


# --------------------------------------------------------------------------- every GPU, NCCL, placement


def run_train_each_gpu() -> dict[str, Any]:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.devices import current_inventory

    runs = []
    for gpu in current_inventory().gpus:
        model, losses = fit({"device": f"cuda{gpu.index}"})
        runs.append({"index": gpu.index, "device": str(model.device), "losses": losses})
    return {"runs": runs}


def judge_train_each_gpu(record: dict[str, Any]) -> Verdict:
    problems = []
    for run in record["runs"]:
        if run["device"] != f"cuda:{run['index']}":
            problems.append(f"the fit for cuda:{run['index']} ran on {run['device']}")
        problems += [f"cuda:{run['index']}: {p}" for p in loss_problems(run["losses"])]
    if not record["runs"]:
        problems.append("no GPU was trained on")
    return verdict(problems, "trained on " + ", ".join(r["device"] for r in record["runs"]))


def run_data_parallel_gpu() -> dict[str, Any]:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote.devices import cuda, current_inventory

    seen: list[list[Any]] = []
    _, losses = fit({"device": "all"}, callbacks=[strategy_probe(seen)])
    return {"strategies": seen, "gpus": len(current_inventory().gpus), "nccl": cuda.nccl_version(),
            "losses": losses}


def judge_data_parallel_gpu(record: dict[str, Any]) -> Verdict:
    n, seen = record["gpus"], record["strategies"]
    problems = [] if seen == [[n, "nccl"]] else [f"expected {n} NCCL processes, the strategy reported {seen}"]
    return verdict(problems + loss_problems(record["losses"]),
                   f"DDP over {n} GPUs with NCCL {record['nccl']}")


def run_placement() -> dict[str, Any]:
    model, losses = train_placed("cuda0", "dev0->cuda0;dev1->cuda1", hidden=64)
    return {"where": sorted({str(p.device) for p in model.module.parameters()}), "losses": losses}


def judge_placement(record: dict[str, Any]) -> Verdict:
    where = record["where"]
    problems = [] if where == ["cuda:0", "cuda:1"] else [f"parameters on {where}, expected cuda:0 and cuda:1"]
    return verdict(problems + loss_problems(record["losses"]),
                   "layers on cuda:0 and cuda:1, gradients flowed across")


def run_out_of_memory() -> dict[str, Any]:
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    from arignote import config
    from arignote.diagnostics.oom_selftest import real_oom_record

    config.configure(device="cuda0", print_active_device=False)
    return real_oom_record("cuda:0")


def judge_real_oom(record: dict[str, Any]) -> Verdict:
    """The verdict on :func:`real_oom_record`'s record (pure)."""
    dev, cap = record["device"], record["cap"] // MiB
    problems = []
    if not record["plain_oom"]:
        problems.append(f"{dev}: batch {record['batch']} fitted under a {cap} MiB cap, so no out-of-memory "
                        "was provoked; the cap did not take effect")
    if record["error"]:
        problems.append(f"{dev}: recovery failed under a {cap} MiB cap: {record['error']}")
    elif record["k"] < 2 or record["failures"] < 1:
        problems.append(f"{dev}: no out-of-memory reached the guard (k={record['k']})")
    worst = record["max_rel_diff"]
    if worst is None or worst > 1e-3:
        problems.append(f"{dev}: recovered as {record['k']} micro-batches but the gradients differ from the "
                        f"full batch's (max rel diff {worst})")
    return verdict(problems, f"{dev}: real out-of-memory at batch {record['batch']} under a {cap} MiB cap; "
                   f"recovered as {record['k']} micro-batches with the full-batch gradient (max rel diff "
                   f"{worst:.1e})" if worst is not None else "", k=record["k"], max_rel_diff=worst)


# --------------------------------------------------------------------------- RNNs on cuDNN


def run_rnn_cudnn() -> dict[str, Any]:
    """LSTM, SimpleRNN and GRU(reset_after=True) (the GRU cuDNN runs) fitted on cuda:0 (torch's fused
    kernels, cuDNN) with every warning recorded (the judge fails any: warnings as errors, all of them
    reported): cuDNN warns "RNN module weights are not part of single contiguous chunk of memory"
    when it has to copy the weights at each forward (issue 28 S3). Also recorded: whether the
    trained cell's parameters are views of one storage (cuDNN's flat buffer), and the GRU's Keras
    weights read back after ``set_weights`` (its torch tensors are in cuDNN's gate order)."""
    # loads torch in the check's own process, not when `arignote selftest` lists checks
    import warnings

    import numpy as np

    from arignote import config
    from arignote.layers import GRU, LSTM, Dense, SimpleRNN
    from arignote.models import Sequential

    config.configure(device="cuda0", print_active_device=False)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 12, 8)).astype("float32")
    y = rng.normal(size=(128, 1)).astype("float32")
    runs = []
    layers = {"LSTM": lambda: LSTM(16, input_shape=(12, 8)),
              "SimpleRNN": lambda: SimpleRNN(16, input_shape=(12, 8)),
              "GRU(reset_after=True)": lambda: GRU(16, reset_after=True, input_shape=(12, 8))}
    for name, make in layers.items():
        model = Sequential([make(), Dense(1)])
        model.compile("adam", "mse")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            losses = model.fit(x, y, batch_size=32, epochs=2, verbose=0).history["loss"]
            rnn = model.layers[0]
            keras = rnn.get_weights()
            rnn.set_weights(keras)  # into the flat buffer, through the gate reorder
            model.predict(x[:8], verbose=0)
        params = list(rnn.cell.parameters())
        back = rnn.get_weights()
        runs.append({"layer": name, "device": str(model.device),
                     "losses": [float(v) for v in losses],
                     "one_chunk": len({p.untyped_storage().data_ptr() for p in params}) == 1,
                     "weights_round_trip": all(np.array_equal(a, b) for a, b in zip(keras, back)),
                     "warnings": [f"{w.category.__name__}: {w.message}"[:300] for w in caught]})
    return {"runs": runs}


RNN_CUDNN_LAYERS = ("LSTM", "SimpleRNN", "GRU(reset_after=True)")


def judge_rnn_cudnn(record: dict[str, Any]) -> Verdict:
    problems = []
    for run in record["runs"]:
        if run["device"] != "cuda:0":
            problems.append(f"{run['layer']} ran on {run['device']}")
        problems += [f"{run['layer']} warned: {w}" for w in run["warnings"]]
        problems += [f"{run['layer']}: {p}" for p in loss_problems(run["losses"])]
        if not run["one_chunk"]:
            problems.append(f"{run['layer']}: its parameters are not views of one flat buffer after training")
        if not run["weights_round_trip"]:
            problems.append(f"{run['layer']}: get_weights after set_weights(get_weights()) differs")
    if sorted(r["layer"] for r in record["runs"]) != sorted(RNN_CUDNN_LAYERS):
        names = [r["layer"] for r in record["runs"]]
        problems.append(f"expected fits of {', '.join(RNN_CUDNN_LAYERS)}, the record has {names}")
    return verdict(problems, "LSTM, SimpleRNN and GRU(reset_after=True) trained on cuDNN without a warning, "
                   "each with its weights in one flat buffer")
