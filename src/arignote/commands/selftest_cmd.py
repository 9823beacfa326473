"""``arignote selftest``: exercise every device path this machine has and print pass/fail per item.

On a GPU machine: banner, each memory policy (checked with the driver), cuDNN off/on/benchmark,
mixed precision, training on every GPU, data parallel over all GPUs with NCCL, placement across
two GPUs and a real out-of-memory.  The CPU items run everywhere (banner, training steps, data
parallel over 2 gloo processes, bf16 mixed precision, recovery from an injected out-of-memory,
placement contexts); without GPUs it lists the GPU items it could not test and why, and exits 0.
Exit status 1 means an item that ran failed.

Example::

    $ arignote selftest --out selftest.json   # also a JSON record to compare a later run with
    PASS  banner-cpu          arignote 0.1.0 on torch 2.13.0 (CPU build) · device cpu: ...
    SKIP  banner-gpu          not tested: needs a CUDA GPU (no NVIDIA driver)
"""

from __future__ import annotations

import json
import os
import sys
import time

from arignote import devices

HELP = "exercise every GPU (and CPU) path on this machine and print pass/fail per item"


def add_arguments(parser) -> None:
    parser.add_argument("--only", default=None, help="comma-separated items to run (default: all)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per item (default 300)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--out", default=None, metavar="PATH",
                        help="also write the JSON record (every item's verdict and measured numbers, the "
                             "torch/CUDA/cuDNN/NCCL versions and GPU names) to PATH")
    parser.add_argument("--judge", default=None, metavar="PATH",
                        help="run nothing: judge the records of a selftest.json written by --out again with "
                             "today's judges (exit 1 when a verdict differs from the stored one)")


def _rejudge(path: str) -> int:
    """``--judge PATH``: every recorded item's stored verdict next to today's judge's."""
    from arignote.bench import selfchecks  # imports numpy: kept off `arignote --help`
    from arignote.bench.selftest_protocol import replay  # with selfchecks: kept off `arignote --help`

    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as exc:
        print(f"arignote selftest: --judge {path}: cannot read it as a selftest.json ({exc}); write one "
              "with 'arignote selftest --out selftest.json'", file=sys.stderr)
        return 2
    changed = 0
    for name, then, now in replay(doc, selfchecks.CHECKS):
        same = then == now.ok
        changed += not same
        print(f"{'same   ' if same else 'CHANGED'}  {name}: {'PASS' if then else 'FAIL'} then, "
              f"{'PASS' if now.ok else 'FAIL'} now: {now.message}")
    return 1 if changed else 0


def run(args) -> int:
    from arignote.bench import selfchecks  # imports numpy: kept off `arignote --help`

    if args.judge:
        return _rejudge(args.judge)
    if args.timeout <= 0:
        print(f"arignote selftest: --timeout must be positive (got {args.timeout})", file=sys.stderr)
        return 2
    if args.out and not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        print(f"arignote selftest: --out {args.out}: its folder does not exist; create it or pick another "
              "path", file=sys.stderr)
        return 2
    inventory = devices.current_inventory()
    items = selfchecks.plan(inventory)
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        known = {c.name for c, _ in items}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            print(f"arignote selftest: unknown item '{unknown[0]}'; items: {', '.join(sorted(known))}",
                  file=sys.stderr)
            return 2
        items = [(c, why) for c, why in items if c.name in wanted]
    gpus = ", ".join(f"cuda:{g.index} {g.name}" for g in inventory.gpus) or f"none ({inventory.cuda_reason})"
    if not args.json:
        print(f"arignote selftest · CPU: {inventory.cpu_name}, {inventory.cpu_threads} threads · "
              f"GPUs: {gpus}")
    width = max(len(c.name) for c, _ in items) if items else 0
    results = []
    for check, why in items:
        if why:
            status, detail, seconds = "SKIP", f"not tested: {why}", 0.0
        else:
            t0 = time.monotonic()
            outcome = selfchecks.outcome_in_process(check.name, args.timeout)
            detail, seconds = outcome["message"], time.monotonic() - t0
            status = "PASS" if outcome["ok"] else "FAIL"
        results.append({"item": check.name, "status": status, "detail": detail, "what": check.doc,
                        "seconds": round(seconds, 1), "gpus_needed": check.gpus,
                        "numbers": {} if why else outcome.get("numbers", {}),
                        "record": {} if why else outcome.get("record", {})})
        if not args.json:
            print(f"{status}  {check.name:<{width}}  {detail}", flush=True)
    counts = {s: sum(r["status"] == s for r in results) for s in ("PASS", "FAIL", "SKIP")}
    doc = {"schema": 1, "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "gpus": gpus,
           "environment": selfchecks.environment(inventory), "results": results, **counts}
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2)
            fh.write("\n")
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(f"\n{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} not tested")
        if counts["SKIP"] and not inventory.gpus:
            print("not tested here: every GPU path (no CUDA GPU on this machine); "
                  "run 'arignote selftest' on a GPU machine to check them (docs/benchmark-and-selftest.md "
                  "lists what was checked without one)")
    return 1 if counts["FAIL"] else 0
