"""A/B of Conv1D(relu) + GlobalMaxPooling1D fused vs the two layers, forward + backward, alternating
in one process, CPU time per call (issue 32 item 2; results in RESULTS.md).

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/conv_maxpool_ab.py --calls 40
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from arignote.layers import Conv1D, GlobalMaxPooling1D
from arignote.layers.convolutional.conv_maxpool import ConvMaxPool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--shape", default="32,400,50", help="batch,steps,channels of the input")
    parser.add_argument("--filters", type=int, default=250)
    args = parser.parse_args()
    n, steps, cin = (int(v) for v in args.shape.split(","))
    torch.manual_seed(0)
    conv, pool = Conv1D(args.filters, 3, activation="relu"), GlobalMaxPooling1D()
    conv.build((None, steps, cin))
    fused = ConvMaxPool(conv, pool)
    x = torch.randn(n, steps, cin, requires_grad=True)
    g = torch.randn(n, args.filters)
    runs = {"unfused": lambda t: pool(conv(t)), "fused": fused}
    times: dict[str, list[float]] = {k: [] for k in runs}
    for i in range(args.calls + 4):
        for name, f in (runs.items() if i % 2 else reversed(runs.items())):
            start = time.process_time()
            (f(x) * g).sum().backward()
            if i >= 4:
                times[name].append(1e3 * (time.process_time() - start))
    for name, ts in times.items():
        print(f"{name}: median {statistics.median(ts):.2f} ms (min {min(ts):.2f}, max {max(ts):.2f}), "
              f"{len(ts)} calls")
    print(f"unfused / fused: {statistics.median(times['unfused']) / statistics.median(times['fused']):.2f}x")


if __name__ == "__main__":
    main()
