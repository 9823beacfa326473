"""What atomic, checksummed checkpoints cost over a bare ``torch.save`` / ``torch.load``.

Sides, alternating each round (median of ``--rounds``):

* ``torch.save`` (no fsync: what a crash can leave half-written) and ``torch.save`` + fsync + rename;
* ``arignote.checkpoint.save`` (serialise, sha256, wrap, temp file, fsync, rename, fsync dir);
* ``torch.load(weights_only=True)`` and ``arignote.checkpoint.load`` (checks format and sha256 first).

Usage::

    .venv/bin/python benchmarks/checkpoint_overhead.py --mib 10 100 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import torch

from arignote import checkpoint


def _state(mib: int) -> dict[str, torch.Tensor]:
    n = max(1, mib // 4)  # 4 MiB float32 tensors
    return {f"layer{i}.weight": torch.randn(1024, 1024) for i in range(n)}


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _torch_save_fsync(path: str, obj) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        torch.save(obj, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def run(mib: int, rounds: int, directory: str) -> dict[str, float]:
    state = _state(mib)
    plain, synced, ours = (os.path.join(directory, n) for n in ("plain.pt", "synced.pt", "ours.ckpt"))
    cases = {
        "torch.save": lambda: torch.save(state, plain),
        "torch.save + fsync + rename": lambda: _torch_save_fsync(synced, state),
        "arignote checkpoint.save": lambda: checkpoint.save(ours, state),
        "torch.load(weights_only=True)": lambda: torch.load(plain, weights_only=True),
        "arignote checkpoint.load": lambda: checkpoint.load(ours),
    }
    for fn in cases.values():  # warm-up, and the files the loads read
        fn()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(rounds):
        order = list(cases) if r % 2 == 0 else list(reversed(cases))
        for name in order:
            times[name].append(_timed(cases[name]))
    return {name: statistics.median(v) for name, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, nargs="+", default=[10, 100], help="state sizes in MiB")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as directory:
        for mib in args.mib:
            results[mib] = run(mib, args.rounds, directory)
    print("| case (median seconds) | " + " | ".join(f"{m} MiB" for m in args.mib) + " |")
    print("| --- | " + " | ".join("---:" for _ in args.mib) + " |")
    for name in results[args.mib[0]]:
        print(f"| {name} | " + " | ".join(f"{results[m][name]:.3f}" for m in args.mib) + " |")
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
