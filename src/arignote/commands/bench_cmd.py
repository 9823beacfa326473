"""``arignote bench``: the seeds' table (CPU vs CUDA vs cuDNN ...) for this machine, against peers.

Every configuration this machine has runs in its own process; the table (configuration, device,
seconds per epoch, samples/s, speedup over CPU, peak memory), ``bench.json`` and a bar chart
``bench.png`` go to ``--out``.  ``--vs torch,keras,lightning`` trains the same model on the same
data, batch size and device with each peer, alternating runs, and reports time ratios.

Example::

    $ arignote bench --quick --out bench-out
    $ arignote bench --batch-size 32,128 --configs cpu --vs torch,keras,lightning --out seeds
    $ arignote bench --plan      # counts of one step and its predicted time on named GPUs
    $ arignote bench --zoo       # the Keras 2 zoo: step and predict times per model (commands/bench_zoo.py)
"""

from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import os
import platform
import shlex
import sys
from importlib import metadata as md
from pathlib import Path

import arignote
from arignote import devices
from arignote.bench import configs as configs_mod
from arignote.bench import models, perfmodel, report, runners, suite
from arignote.commands import bench_zoo

HELP = "benchmark the seeds' CIFAR-10 CNN (or an MLP/LSTM) on every configuration, vs PyTorch/Keras/Lightning"

QUICK_SAMPLES = 1024  # --quick: a smoke test that finishes in well under a minute on 2 CPU cores


def add_arguments(parser) -> None:
    parser.add_argument("--model", default="cnn", help="cnn (the seeds' network, default), mlp or lstm")
    parser.add_argument("--samples", type=int, default=None,
                        help="training samples (default 45000, as the seeds; validation is 1/9 of it: 5000)")
    parser.add_argument("--epochs", type=int, default=1, help="epochs per run (default 1; with more, the "
                        "first is treated as warm-up)")
    parser.add_argument("--batch-size", default="32", help="batch size, or several: 32,128 (default 32)")
    parser.add_argument("--configs", default=None,
                        help="comma-separated subset: cpu, cuda-nodnn, cuda, cuda-benchmark, cuda-fast, "
                             "cuda-compiled, cuda-mixed, all-gpus, cpu-PxT (default: all; those this machine "
                             "lacks are skipped); cpu-compiled on request only (compiling takes minutes)")
    parser.add_argument("--vs", default="", help="peers to compare with: torch,keras,lightning")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke test: {QUICK_SAMPLES} samples, 1 epoch (under a minute on 2 cores)")
    parser.add_argument("--data", default="auto", choices=("auto", "cifar10", "synthetic"),
                        help="auto: CIFAR-10 (MNIST for mlp) if found locally, else synthetic; "
                             "cifar10: the real data (MNIST for mlp), downloaded if absent; synthetic")
    parser.add_argument("--repeats", type=int, default=1, help="runs per runner and configuration, "
                        "alternating the order (default 1); the median is reported")
    parser.add_argument("--out", default="bench-out", help="directory for bench.txt, bench.json, bench.png")
    parser.add_argument("--plan", action="store_true",
                        help="no timing: count one training step (operators, FLOPs, bytes, host syncs) and "
                             "predict its time on named GPUs (arignote.bench.perfmodel)")
    bench_zoo.add_arguments(parser)


def _fail(message: str) -> int:
    print(f"arignote bench: {message}", file=sys.stderr)
    return 2


def _positive(name: str, value: int) -> str | None:
    return None if value > 0 else f"{name} must be a positive whole number (got {value})"


def run(args) -> int:
    from arignote.bench.data import default_val  # imports numpy: kept off `arignote --help`

    if args.zoo:
        return bench_zoo.run(args)
    zoo_only = [flag for flag, given in (("--zoo-models", args.zoo_models), ("--device", args.device),
                                         ("--vs-keras3", args.vs_keras3)) if given]
    if zoo_only:
        return _fail(f"{zoo_only[0]} goes with --zoo (the seeds' table takes --configs)")

    # ---- validate everything before the first (slow) run
    if args.model not in models.SPECS:
        return _fail(f"unknown --model '{args.model}'; choose one of: {', '.join(models.SPECS)}")
    try:
        batches = [int(b) for b in str(args.batch_size).split(",") if b.strip()]
    except ValueError:
        return _fail(f"--batch-size '{args.batch_size}' is not a whole number or a list like 32,128")
    n_train = args.samples if args.samples is not None else (QUICK_SAMPLES if args.quick else 45000)
    epochs = args.epochs
    problems = [p for p in (_positive("--samples", n_train), _positive("--epochs", epochs),
                            _positive("--repeats", args.repeats),
                            *(_positive("--batch-size", b) for b in batches)) if p]
    if not batches:
        problems.append("--batch-size is empty; give e.g. 32 or 32,128")
    if problems:
        return _fail(problems[0])
    if args.plan:
        return _plan(args.model, batches)
    peers = [p.strip() for p in args.vs.split(",") if p.strip()]
    for p in peers:
        if p not in runners.PEERS:
            return _fail(f"unknown peer '{p}' in --vs; choose from: {', '.join(runners.PEERS)}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        return _fail(f"--out {out} is a file; give a directory (it is created if missing)")

    inventory = devices.current_inventory()
    config_names = [c.strip() for c in args.configs.split(",")] if args.configs else None
    try:
        configs_mod.parse(args.configs, inventory)
    except ValueError as exc:
        return _fail(str(exc))
    plan = suite.SuitePlan(model=args.model, n_train=n_train, n_val=default_val(n_train), epochs=epochs,
                      batch_sizes=batches, configs=config_names, runners=["arignote", *dict.fromkeys(peers)],
                      data=args.data, repeats=args.repeats)
    missing = {p: runners.missing(p) for p in peers}
    runs = suite.schedule(plan, inventory, missing, devices.cudnn_version(), _strategies())
    out.mkdir(parents=True, exist_ok=True)
    spec = models.spec(args.model)
    todo = sum(r.status == "ok" for r in runs)
    print(f"arignote bench: {spec.doc}, {n_train} train + {plan.n_val} val samples, {epochs} epoch(s), "
          f"batch {args.batch_size}; {todo} run(s), each in its own process", file=sys.stderr)
    for p, why in missing.items():
        if why:
            print(f"note: peer {p} skipped: {why}", file=sys.stderr)
    load_before = _load_average()
    suite.execute(plan, runs, out, suite.Progress())
    load = [load_before, _load_average()]

    data_source = next((r.data for r in runs if r.ok and r.data), "n/a (nothing ran)")
    title = (f"arignote bench · {args.model}: {spec.doc} · data: {data_source} · "
             f"{n_train} train + {plan.n_val} val · {epochs} epoch(s)")
    text = report.render_table(runs, title)
    seeds = configs_mod.seeds_reference(args.model, batches)
    text += "\n\n" + "\n".join(seeds) if seeds else ""
    text += _predictions(args.model, runs)
    busy = max((x for x in load if x is not None), default=0.0)
    if busy > inventory.cpu_threads + 1:  # the bench itself accounts for about cpu_threads
        text += (f"\n\nnote: 1-minute load average {load[0]} before and {load[1]} after the runs on "
                 f"{inventory.cpu_threads} CPU threads: other processes competed with these runs, so "
                 "absolute figures are pessimistic; ratios of alternated runs are the comparable figures")
    (out / "bench.txt").write_text(text + "\n", encoding="utf-8")
    meta = _meta(args, plan, spec, inventory, data_source, missing)
    meta["load_average"] = {"before": load[0], "after": load[1]}
    (out / "bench.json").write_text(json.dumps(report.to_json(runs, meta), indent=2) + "\n", encoding="utf-8")
    print(text)
    try:
        chart_title = f"arignote bench · {args.model} · {data_source}"
        size = report.write_chart(runs, str(out / "bench.png"), chart_title)
        print(f"\nwrote {out / 'bench.txt'}, {out / 'bench.json'}, {out / 'bench.png'} ({size[0]}x{size[1]})")
    except report.ChartUnavailable as exc:
        print(f"\nwrote {out / 'bench.txt'}, {out / 'bench.json'}; no chart: {exc}")
    return 1 if any(r.status == "failed" for r in runs) else 0


def _plan(model: str, batches: list[int]) -> int:
    from arignote.bench import plan  # imports torch: kept off `arignote --help` and a plain `bench` start

    assume = plan.assumptions_from_flags()
    for i, b in enumerate(batches):
        print(("\n" if i else "") + plan.render(plan.plan_model(model, b, assume), assume))
    return 0


def _predictions(model: str, runs) -> str:
    """On a GPU the table knows, the performance model's prediction beside each measured row."""
    from arignote.bench import plan  # imports torch: kept off `arignote --help`

    gpu_runs = [r for r in runs if r.ok and r.device_name and perfmodel.find_gpu(r.device_name)]
    lines = []
    for b in sorted({r.batch_size for r in gpu_runs}):
        for tf32 in (False, True):  # the seeds' rows run with tf32=off, the fast rows with it on
            same = [r for r in gpu_runs if configs_mod.tf32_of(r.config) == tf32 and r.batch_size == b]
            if same:
                step = plan.plan_model(model, b, perfmodel.Assumptions(tf32=tf32))
                lines += plan.predicted_vs_measured(step, same)
    return "\n\npredicted vs measured (arignote bench --plan):\n" + "\n".join(lines) if lines else ""


def _strategies() -> frozenset[str]:
    """Data-parallel training is there when the parallel package ships its DDP strategy."""
    return frozenset({"ddp"}) if importlib.util.find_spec("arignote.parallel.ddp") else frozenset()


def _load_average() -> float | None:
    """The 1-minute load average (None where the OS has none): a busy machine skews timings."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _meta(args, plan, spec, inventory, data_source, missing) -> dict:
    import torch  # kept off `arignote --help`: only a finished bench run reads its version

    def version(pkg: str) -> str | None:
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return None

    return {
        "command": "arignote bench " + " ".join(shlex.quote(a) for a in sys.argv[2:])
        if len(sys.argv) > 1 and sys.argv[1] == "bench" else "arignote bench",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpu": inventory.cpu_name, "cpu_threads": inventory.cpu_threads,
                    "gpus": [g.name for g in inventory.gpus], "cuda": inventory.cuda_reason or "available",
                    "python": platform.python_version(), "platform": platform.platform()},
        "versions": {"arignote": arignote.__version__, "torch": torch.__version__, "keras": version("keras"),
                     "pytorch-lightning": version("pytorch-lightning")},
        "model": {"name": spec.name, "doc": spec.doc, "params": spec.params},
        "data": data_source, "n_train": plan.n_train, "n_val": plan.n_val, "epochs": plan.epochs,
        "batch_sizes": list(plan.batch_sizes), "repeats": plan.repeats,
        "peers": {p: ("ok" if not why else why) for p, why in missing.items()},
        "timing": "seconds per epoch = median of epochs after the first (the only one when epochs=1); "
                  "epoch time includes validation; peak memory: RSS high-water mark of the run's process "
                  "on CPU, allocator peak on GPU",
    }
