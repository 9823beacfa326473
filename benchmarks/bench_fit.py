"""``fit`` against a hand-written PyTorch loop: samples/s and peak memory (issue 3's speed goal).

Sides, each run in a fresh subprocess (so the RSS high-water mark is its own):

* ``fit``       arignote ``Sequential`` + ``compile`` + ``fit(verbose=0)`` on channels-last numpy data
* ``torch``     the plain loop a PyTorch user writes: NCHW tensors, logits + ``F.cross_entropy``,
                ``torch.optim.RMSprop``, ``randperm`` + indexing, ``zero_grad(set_to_none=True)``
* ``torch_cl``  the same loop with the model and data in channels-last memory format
* ``torch_k``   the plain loop computing what ``fit`` computes: a softmax output, Keras 2's
                cross-entropy on probabilities (``p / sum(p)``, clip, log), accuracy and the loss
                summed on the device; it separates the cost of Keras's formulas from the loop's
* ``fit_other`` ``fit`` again, importing arignote from ``--other-src DIR`` (e.g. main's old sources:
                ``git archive main src | tar -x -C /tmp/old``, then ``--other-src /tmp/old/src``)

``fit`` runs with arignote's defaults, including ``memory.host_cache`` (malloc keeps freed memory:
see RESULTS.md); ``ARIGNOTE_FLAGS=memory.host_cache=0`` measures it without, and the environment
``MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 MALLOC_MMAP_MAX_=0`` gives every
side the same allocator settings (``--same-allocator`` sets it for every worker). Each worker reports
its minor page faults.

Workloads: the seeds' CNN (Keras 2 ``cifar10_cnn.py``, RMSprop lr=1e-4) on CIFAR-shaped synthetic
data at batch 32 and 128, and the MLP 784-512-512-10 at batch 32 and 128. The sides alternate
(fit, torch, torch_cl, then torch_cl, torch, fit, ...) for ``--rounds`` rounds. A run's speed is its
best epoch after the first (warm-up) one, by wall time and by the process's CPU time (which other
load disturbs far less); each side's figure is the median of its rounds, and the ratio fit / side
of every round is printed too (a round's sides ran back to back, so its ratio is the least
disturbed by other load). The ``fit`` side imports arignote from this checkout's ``src``
(printed in the header), whatever the venv has installed.

Usage::

    .venv/bin/python benchmarks/bench_fit.py                 # full run (about 8 minutes on 2 cores)
    .venv/bin/python benchmarks/bench_fit.py --quick         # smoke run
    .venv/bin/python benchmarks/bench_fit.py --json out.json
    .venv/bin/python benchmarks/bench_fit.py --threads 1 --workloads mlp-b32,mlp-b128 \
        --sides fit,fit_other,torch,torch_k --other-src /tmp/old/src   # before/after in the same rounds
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

WORKLOADS = {
    # name: (model, batch, samples per measured epoch)
    "cnn-b32": ("cnn", 32, 512),
    "cnn-b128": ("cnn", 128, 512),
    "mlp-b32": ("mlp", 32, 4096),
    "mlp-b128": ("mlp", 128, 8192),
}
SIDES = ("fit", "torch", "torch_cl")
ALL_SIDES = ("fit", "fit_other", "torch", "torch_cl", "torch_k")
TARGETS = {"torch": {"cnn": 1.0, "mlp": 0.90}, "torch_cl": {"cnn": 0.97, "mlp": 0.90}}
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


# ----------------------------------------------------------------------------- the worker


def _clock() -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process): an epoch is timed both ways."""
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def _data(model: str, n: int, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    shape = (n, 32, 32, 3) if model == "cnn" else (n, 784)
    x = rng.random(shape, dtype=np.float32)
    labels = rng.integers(0, 10, n)
    return x, labels


def _torch_net(model: str):
    from arignote.bench.models import torch_model  # the same networks `arignote bench` runs

    return torch_model(model)


def _arignote_net(model: str):
    from arignote.bench.models import arignote_model

    return arignote_model(model)


def _run_fit(model: str, batch: int, x, labels, epochs: int) -> list[float]:
    from arignote import config
    from arignote.optimizers import RMSprop
    from arignote.utils import to_categorical

    config.configure(device="cpu", print_active_device=False)
    y = to_categorical(labels, 10)
    net = _arignote_net(model)
    net.compile(optimizer=RMSprop(lr=1e-4, decay=1e-6), loss="categorical_crossentropy", metrics=["accuracy"])
    times = []

    from arignote.callbacks.base import Callback

    class Timer(Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = _clock()

        def on_epoch_end(self, epoch, logs=None):
            times.append(_since(self.t0))

    net.fit(x, y, batch_size=batch, epochs=epochs, verbose=0, callbacks=[Timer()])
    return times


def _run_torch_keras(model: str, batch: int, x, labels, epochs: int) -> list[float]:
    """The plain loop with fit's arithmetic: softmax probabilities, Keras 2's cross-entropy on them,
    accuracy and the loss summed on the device (one sync an epoch), RMSprop as ``torch``'s."""
    import torch

    net = _torch_net(model)
    xt = torch.from_numpy(x)
    if model == "cnn":  # channels-last, as fit keeps it
        net = net.to(memory_format=torch.channels_last)
        xt = xt.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
    yt = torch.nn.functional.one_hot(torch.from_numpy(labels).long(), 10).float()
    opt = torch.optim.RMSprop(net.parameters(), lr=1e-4, alpha=0.9, eps=1e-7)
    n, eps = len(xt), 1e-7
    times = []
    for _ in range(epochs):
        t0 = _clock()
        net.train()
        perm = torch.randperm(n)
        total = torch.zeros((), dtype=torch.float64)
        hits = torch.zeros((), dtype=torch.float64)
        for i in range(0, n, batch):
            idx = perm[i:i + batch]
            xb, yb = xt[idx], yt[idx]
            p = torch.softmax(net(xb), dim=-1)
            q = (p / p.sum(dim=-1, keepdim=True)).clamp(eps, 1.0 - eps)
            loss = -(yb * q.log()).sum(dim=-1).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total.add_(loss.detach(), alpha=len(idx))
            hits.add_((p.detach().argmax(-1) == yb.argmax(-1)).sum())
        float(total), float(hits)  # the epoch's one sync
        times.append(_since(t0))
    return times


def _run_torch(model: str, batch: int, x, labels, epochs: int, channels_last: bool) -> list[float]:
    import torch
    import torch.nn.functional as F

    net = _torch_net(model)
    xt = torch.from_numpy(x)
    if model == "cnn":
        xt = xt.permute(0, 3, 1, 2).contiguous()  # NCHW, as a PyTorch user stores images
    if channels_last and model == "cnn":  # (an MLP has no 4-D tensors: the same loop as "torch")
        net = net.to(memory_format=torch.channels_last)
        xt = xt.contiguous(memory_format=torch.channels_last)
    yt = torch.from_numpy(labels).long()
    opt = torch.optim.RMSprop(net.parameters(), lr=1e-4, alpha=0.9, eps=1e-7)
    n = len(xt)
    times = []
    for _ in range(epochs):
        t0 = _clock()
        net.train()
        perm = torch.randperm(n)
        total = torch.zeros(())
        for i in range(0, n, batch):
            idx = perm[i:i + batch]
            xb, yb = xt[idx], yt[idx]
            loss = F.cross_entropy(net(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
        float(total)  # the epoch's one sync, as fit's log does
        times.append(_since(t0))
    return times


def worker(side: str, workload: str, epochs: int, samples: int | None, threads: int = 0) -> dict:
    import torch

    if threads:
        torch.set_num_threads(threads)
    model, batch, n = WORKLOADS[workload]
    n = samples or n
    torch.manual_seed(0)
    x, labels = _data(model, n)
    if side in ("fit", "fit_other"):
        times = _run_fit(model, batch, x, labels, epochs)
    elif side == "torch_k":
        times = _run_torch_keras(model, batch, x, labels, epochs)
    else:
        times = _run_torch(model, batch, x, labels, epochs, channels_last=side == "torch_cl")
    measured = times[1:] if len(times) > 1 else times  # the first epoch warms up allocators and kernels
    usage = resource.getrusage(resource.RUSAGE_SELF)
    # the best epoch: on a shared machine other processes only ever slow an epoch down
    import arignote

    return {"side": side, "workload": workload, "samples_per_s": n / min(w for w, _ in measured),
            # samples per second of the process's CPU time: what other load disturbs least
            "samples_per_cpu_s": n / min(c for _, c in measured),
            "arignote": os.path.dirname(os.path.dirname(os.path.abspath(arignote.__file__))),
            "peak_rss_mib": usage.ru_maxrss / 1024, "threads": torch.get_num_threads(),
            "page_faults": usage.ru_minflt}


# ----------------------------------------------------------------------------- the driver


# glibc settings equal to what memory.host_cache gives (1024 MiB), for every side (--same-allocator)
SAME_ALLOCATOR = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "1073741824",
                  "MALLOC_MMAP_MAX_": "0"}
_EXTRA_ENV: dict[str, str] = {}


def _spawn(side: str, workload: str, epochs: int, samples: int | None, threads: int,
           other_src: str | None = None) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", side, workload, "--epochs", str(epochs),
           "--threads", str(threads)]
    if samples:
        cmd += ["--samples", str(samples)]
    src = other_src if side == "fit_other" else SRC  # which arignote this worker imports
    path = os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, **_EXTRA_ENV, "PYTHONPATH": path}
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        raise SystemExit(f"worker {side} {workload} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(workloads: list[str], rounds: int, epochs: int, samples: int | None, threads: int = 0,
        sides: tuple[str, ...] = SIDES, other_src: str | None = None) -> dict:
    results: dict = {}
    for workload in workloads:
        per_side: dict[str, list[dict]] = {s: [] for s in sides}
        for r in range(rounds):
            order = sides if r % 2 == 0 else tuple(reversed(sides))  # alternate who goes first
            for side in order:
                per_side[side].append(_spawn(side, workload, epochs, samples, threads, other_src))
        summary = {}
        for side, runs in per_side.items():
            summary[side] = {"samples_per_s": statistics.median(r["samples_per_s"] for r in runs),
                             "peak_rss_mib": statistics.median(r["peak_rss_mib"] for r in runs),
                             "page_faults": statistics.median(r["page_faults"] for r in runs),
                             "all": [round(r["samples_per_s"], 1) for r in runs],
                             "arignote": runs[0]["arignote"]}
        model = WORKLOADS[workload][0]
        ratios = {}
        for base in ("torch", "torch_cl"):
            if base not in summary:
                continue
            speed = summary["fit"]["samples_per_s"] / summary[base]["samples_per_s"]
            mem = summary["fit"]["peak_rss_mib"] / summary[base]["peak_rss_mib"]
            ratios[base] = {"speed": speed, "memory": mem, "target": TARGETS[base][model],
                            "ok": speed >= TARGETS[base][model] and mem <= 1.10}
        # fit / each other side, round by round (the sides of a round ran back to back), by wall time
        # and by CPU time (a busy machine stretches wall time far more than CPU time)
        per_round = {other: [a["samples_per_s"] / b["samples_per_s"]
                             for a, b in zip(per_side["fit"], per_side[other])]
                     for other in sides if other != "fit"}
        per_round_cpu = {other: [a["samples_per_cpu_s"] / b["samples_per_cpu_s"]
                                 for a, b in zip(per_side["fit"], per_side[other])]
                         for other in sides if other != "fit"}
        for side, runs in per_side.items():
            summary[side]["samples_per_cpu_s"] = statistics.median(r["samples_per_cpu_s"] for r in runs)
        results[workload] = {"sides": summary, "ratios": ratios, "per_round": per_round,
                             "per_round_cpu": per_round_cpu}
        if sides == SIDES:
            print(_line(workload, summary, ratios), flush=True)
        else:
            print(_short_line(workload, summary), flush=True)
        for other in per_round:
            for clock, table in (("wall", per_round), ("cpu", per_round_cpu)):
                values = table[other]
                print(f"  fit/{other} per round ({clock}): " + " ".join(f"{v:.3f}" for v in values)
                      + f"  (median {statistics.median(values):.3f}, min {min(values):.3f})", flush=True)
    return results


def _short_line(workload: str, summary: dict) -> str:
    return f"{workload:9s} " + " | ".join(
        f"{side} {s['samples_per_s']:6.0f}/s ({s['samples_per_cpu_s']:6.0f}/cpu-s) "
        f"{s['peak_rss_mib']:4.0f} MiB"
        for side, s in summary.items())


def _line(workload: str, summary: dict, ratios: dict) -> str:
    s = summary
    return (f"{workload:9s} fit {s['fit']['samples_per_s']:7.0f}/s {s['fit']['peak_rss_mib']:5.0f} MiB | "
            f"torch {s['torch']['samples_per_s']:7.0f}/s {s['torch']['peak_rss_mib']:5.0f} MiB | "
            f"torch_cl {s['torch_cl']['samples_per_s']:7.0f}/s {s['torch_cl']['peak_rss_mib']:5.0f} MiB | "
            f"fit/torch {ratios['torch']['speed']:.3f}x mem {ratios['torch']['memory']:.3f} | "
            f"fit/torch_cl {ratios['torch_cl']['speed']:.3f}x mem {ratios['torch_cl']['memory']:.3f} | "
            "page faults fit/torch/cl " + "/".join(f"{s[k]['page_faults'] / 1e3:.0f}k" for k in SIDES))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", nargs=2, metavar=("SIDE", "WORKLOAD"), help=argparse.SUPPRESS)
    p.add_argument("--epochs", type=int, default=10,
                   help="short epochs per run; the first is warm-up, the best of the others counts")
    p.add_argument("--samples", type=int, default=None, help="samples per epoch (default per workload)")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds per workload")
    p.add_argument("--workloads", default=",".join(WORKLOADS),
                   help="comma-separated: " + ", ".join(WORKLOADS))
    p.add_argument("--threads", type=int, default=0, help="torch threads per worker (0: torch's default)")
    p.add_argument("--quick", action="store_true", help="1 round, 3 epochs of 256 samples (smoke test)")
    p.add_argument("--sides", default=",".join(SIDES),
                   help="comma-separated, 'fit' first: " + ", ".join(ALL_SIDES))
    p.add_argument("--other-src", default=None,
                   help="the fit_other side imports arignote from this directory (a copy of another src)")
    p.add_argument("--same-allocator", action="store_true",
                   help="give every worker fit's malloc settings (MALLOC_MMAP_THRESHOLD_, "
                        "MALLOC_TRIM_THRESHOLD_) so that the loops, not the allocators, are compared")
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.epochs, args.samples, args.threads)))
        return 0
    if args.quick:
        args.rounds, args.epochs, args.samples = 1, 3, 256
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        print(f"unknown workload(s) {unknown}; choose from {', '.join(WORKLOADS)}", file=sys.stderr)
        return 2
    sides = tuple(s.strip() for s in args.sides.split(",") if s.strip())
    bad = [s for s in sides if s not in ALL_SIDES]
    if bad or not sides or sides[0] != "fit" or len(set(sides)) != len(sides):
        print(f"--sides: give distinct sides among {', '.join(ALL_SIDES)}, 'fit' first (got {args.sides!r})",
              file=sys.stderr)
        return 2
    if ("fit_other" in sides) != (args.other_src is not None):
        print("the fit_other side and --other-src DIR go together", file=sys.stderr)
        return 2
    if args.other_src is not None and not os.path.isdir(os.path.join(args.other_src, "arignote")):
        print(f"--other-src {args.other_src}: no arignote package in it", file=sys.stderr)
        return 2
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"threads {args.threads or 'default'}, load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.same_allocator:
        _EXTRA_ENV.update(SAME_ALLOCATOR)
    print(f"# sides {', '.join(sides)}; fit imports {SRC}"
          + (f", fit_other imports {os.path.abspath(args.other_src)}" if args.other_src else "")
          + ("; every side with " + " ".join(f"{k}={v}" for k, v in SAME_ALLOCATOR.items())
             if args.same_allocator else "; allocator: each side's own"), flush=True)
    results = run(workloads, args.rounds, args.epochs, args.samples, args.threads, sides, args.other_src)
    print(f"# load average at the end {os.getloadavg()[0]:.1f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2)
    ok = all(r["ok"] for w in results.values() for r in w["ratios"].values())
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
