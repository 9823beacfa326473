"""``arignote bench --zoo``: the Keras 2 zoo (:mod:`arignote.bench.zoo`: MLP, CNNs, Conv1D text,
LSTM, GRU, Bidirectional, ConvLSTM2D, a two-input functional model, a VAE) timed on this machine's
device: per-model training step and ``predict`` latency at batch 1 and 64, the device's name on
top, written to ``zoo.txt`` and ``zoo.json`` in ``--out``. ``--vs-keras3 PYTHON`` times the same
models with Keras 3 (torch backend) in that Python, rounds alternating, and adds the ratio.

Example::

    $ arignote bench --zoo --quick --zoo-models mlp,vae --out zoo-out
    $ arignote bench --zoo --device cuda0 --rounds 5
    $ arignote bench --zoo --vs-keras3 /work/k3venv/bin/python --device cpu
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import shutil
import statistics
import sys
from pathlib import Path

from arignote import config, devices
from arignote.bench.zoo_timing import PREDICT_BATCHES, Worker

QUICK = {"warmup": 1, "steps": 2, "rounds": 1, "predict_reps": 1, "batch": 8}


def add_arguments(parser) -> None:
    parser.add_argument("--zoo", action="store_true",
                        help="time the Keras 2 zoo (11 models of Keras 2's examples) instead of the seeds' "
                             "table: step time, predict at batch 1/64, on --device")
    parser.add_argument("--zoo-models", default="", help="with --zoo: comma-separated subset (default: all)")
    parser.add_argument("--device", default=None,
                        help="with --zoo: device spec (cpu, cuda0, ...; default: the configured device)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="with --zoo: timing rounds per model (default 3)")
    parser.add_argument("--steps", type=int, default=5, help="with --zoo: timed steps per round (default 5)")
    parser.add_argument("--vs-keras3", default=None, metavar="PYTHON",
                        help="with --zoo: a Python with Keras 3 (scripts/setup-keras3-venv.sh) to time "
                             "the same models beside arignote, rounds alternating")


def _fail(message: str) -> int:
    print(f"arignote bench --zoo: {message}", file=sys.stderr)
    return 2


def _problem(args, names: list[str], known: dict) -> str | None:
    """The first thing wrong with the arguments (before any slow start), or None."""
    unknown = [n for n in names if n not in known]
    if unknown:
        return f"unknown --zoo-models {', '.join(unknown)}; choose from: {', '.join(known)}"
    if args.plan or args.vs:
        return "--plan and --vs belong to the seeds' table; with --zoo use --vs-keras3 PYTHON"
    for flag, value in (("--rounds", args.rounds), ("--steps", args.steps)):
        if value <= 0:
            return f"{flag} must be a positive whole number (got {value})"
    if args.vs_keras3 and not (shutil.which(args.vs_keras3) or os.access(args.vs_keras3, os.X_OK)):
        return f"--vs-keras3 {args.vs_keras3} is not an executable Python; build one with " \
               "scripts/setup-keras3-venv.sh and give its bin/python"
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        return f"--out {out} is a file; give a directory (it is created if missing)"
    return None


def _device_problem(device: str | None) -> str | None:
    if device is None:
        return None
    try:
        with config.override(device=device):
            from arignote.runtime import setup  # torch loads with the device query, not with --help
            setup.configured_devices(lease=False)
    except (ValueError, devices.DeviceError) as exc:
        return f"--device {device}: {exc}"
    return None


def run(args) -> int:
    from arignote.bench import zoo  # numpy: kept off `arignote --help`

    names = [n.strip() for n in args.zoo_models.split(",") if n.strip()] or list(zoo.MODELS)
    problem = _problem(args, names, zoo.MODELS) or _device_problem(args.device)
    if problem:
        return _fail(problem)
    plan = dict(QUICK) if args.quick else {"warmup": 2, "steps": args.steps, "rounds": args.rounds,
                                          "predict_reps": 5, "batch": None}
    if args.quick:  # --rounds/--steps given with --quick still count
        plan.update(rounds=min(args.rounds, plan["rounds"]), steps=min(args.steps, plan["steps"]))
    try:
        rows, meta = _measure(names, plan, args.device, args.vs_keras3)
    except RuntimeError as exc:
        return _fail(str(exc))
    text = render(rows, meta)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "zoo.txt").write_text(text + "\n", encoding="utf-8")
    (out / "zoo.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    print(text)
    print(f"\nwrote {out / 'zoo.txt'}, {out / 'zoo.json'}")
    return 0


def _measure(names: list[str], plan: dict, device: str | None, k3_python: str | None) -> tuple[list, dict]:
    ours = Worker("arignote", sys.executable, device)
    workers = [ours]
    try:
        if k3_python:
            workers.append(Worker("keras3", k3_python, threads=ours.hello["threads"]))
        clock = "cpu" if ours.hello["device"] == "cpu" else "wall"  # on a GPU only wall time means anything
        rows = []
        for name in names:
            got: dict = {w.framework: [] for w in workers}
            for r in range(plan["rounds"]):
                for w in workers if r % 2 == 0 else workers[::-1]:
                    got[w.framework].append(w.run(name, plan["warmup"] if r < 2 else 0, plan["steps"],
                                                  plan["predict_reps"], plan["batch"]))
            rows.append(_row(name, got, clock, PREDICT_BATCHES, plan["batch"]))
        meta = {"device": ours.hello["device"], "device_name": ours.hello["device_name"],
                "torch": ours.hello["torch"], "threads": ours.hello["threads"],
                "arignote": ours.hello["ready"],
                "keras3": workers[1].hello["ready"] if k3_python else None, "clock": clock,
                "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "load_average": _load(), **{k: plan[k] for k in ("rounds", "steps", "warmup")}}
        return rows, meta
    finally:
        for w in workers:
            w.close()


def _ms(seconds) -> float:
    return 1000 * statistics.median(seconds)


def _row(name: str, got: dict, clock: str, batches: tuple, batch: int | None) -> dict:
    from arignote.bench import zoo  # numpy: kept off `arignote --help`

    ours = got["arignote"]
    row = {"model": name, "batch": batch or zoo.MODELS[name][1],
           "step_ms": _ms([_ms(r[clock]) / 1000 for r in ours]),
           "step_cpu_ms": _ms([_ms(r["cpu"]) / 1000 for r in ours]),
           "step_wall_ms": _ms([_ms(r["wall"]) / 1000 for r in ours])}
    for b in batches:
        row[f"predict{b}_ms"] = _ms([r["predict"][str(b)][clock] for r in ours])
    theirs = got.get("keras3")
    if theirs:
        ratios = [statistics.median(k[clock]) / statistics.median(a[clock]) for a, k in zip(ours, theirs)]
        row.update(keras3_step_ms=_ms([_ms(r[clock]) / 1000 for r in theirs]),
                   ratio=statistics.median(ratios), ratio_min=min(ratios), ratio_max=max(ratios))
        for b in batches:
            row[f"keras3_predict{b}_ms"] = _ms([r["predict"][str(b)][clock] for r in theirs])
    return row


def render(rows: list, meta: dict) -> str:
    """The zoo table as text: one row per model (figures in ms; ``clock`` says CPU or wall time)."""
    vs = meta.get("keras3")
    head = (f"arignote bench --zoo · {meta['device']} ({meta['device_name']}) · torch {meta['torch']} · "
            f"{meta['threads']} thread(s) · {meta['rounds']} round(s) of {meta['steps']} step(s) after "
            f"{meta['warmup']} warm-up · {meta['clock']} time, medians · load average {meta['load_average']}")
    cols = ["model", "batch", "ms/step", "predict b1 ms", "predict b64 ms"]
    if vs:
        head += f"\nKeras 3: {vs}; ratio = Keras 3 / arignote per round (> 1: arignote faster), min-max"
        cols += ["Keras 3 ms/step", "ratio (min-max)", "Keras 3 predict b1 / b64 ms"]
    lines = [head, "", " | ".join(cols)]
    for r in rows:
        cells = [r["model"], str(r["batch"]), f"{r['step_ms']:.2f}", f"{r['predict1_ms']:.2f}",
                 f"{r['predict64_ms']:.2f}"]
        if vs:
            spread = f"{r['ratio']:.2f}x ({r['ratio_min']:.2f}-{r['ratio_max']:.2f})"
            cells += [f"{r['keras3_step_ms']:.2f}", spread,
                      f"{r['keras3_predict1_ms']:.2f} / {r['keras3_predict64_ms']:.2f}"]
        lines.append(" | ".join(cells))
    bad = [r["model"] for r in rows if not all(math.isfinite(v) and v > 0 for k, v in r.items()
                                                if k.endswith("_ms"))]
    if bad:
        lines.append(f"\nnote: no positive finite time for {', '.join(bad)}")
    return "\n".join(lines)


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None
