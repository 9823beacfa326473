"""One benchmark run in its own process: ``python -m arignote.bench.worker '<json spec>'``.

A fresh process per run makes the peak-memory figure honest (the RSS high-water mark of this
process, or the GPU allocator's peak) and lets Keras start with ``KERAS_BACKEND=torch``.  The
worker sets the configuration's flags, loads the data, trains with the runner and reports on
stdout with lines ``@@bench {json}`` (``start``, ``epoch``, ``result``); anything else it prints is
the runner's own chatter.  Only rank 0 reports.

Example::

    $ python -m arignote.bench.worker '{"runner": "torch", "model": "mlp", "config": "cpu",
          "batch_size": 128, "epochs": 1, "n_train": 2048, "n_val": 256, "data": "synthetic"}'
    @@bench {"event": "start", "device": "cpu", "device_name": "AMD EPYC ...", ...}
"""

from __future__ import annotations

import json
import resource
import sys
import time
import warnings
from typing import Any

from arignote import config, devices
from arignote.bench import configs, models, runners
from arignote.devices import cpu

MARK = "@@bench "


def emit(event: str, **payload: Any) -> None:
    """Send one message to the parent (rank 0 only)."""
    from arignote.runtime import setup  # torch: suite.py imports MARK from here on the CLI's start path

    if setup.rank() == 0:
        print(MARK + json.dumps({"event": event, **payload}), flush=True)


def peak_rss_bytes() -> int:
    """The RSS high-water mark of this process and of its finished children (Linux: KiB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    scale = 1 if sys.platform == "darwin" else 1024
    return max(own, kids) * scale


def main(argv: list[str]) -> int:
    from arignote.bench import data  # numpy: suite.py imports MARK from here on the CLI's start path
    from arignote.runtime import setup  # torch (as the line above)

    spec = json.loads(argv[0])
    inventory = devices.current_inventory()
    cfg = configs.get(spec["config"], inventory)
    config.configure(**cfg.flags, print_active_device=False)
    chosen = setup.configured_devices(inventory)
    device = chosen[0]
    # the peers get the same process-wide settings (threads, cuDNN switches, memory policy)
    setup.prepare(device, inventory)
    if device.is_cuda and spec["runner"] != "arignote":
        # dnn.benchmark=auto is decided per fit; a peer gets the decision fit makes (arrays: fixed shapes)
        conv = len(models.spec(spec["model"]).input_shape) == 3
        setup.fast_paths(devices.FitFacts(device=str(device), has_conv=conv, fixed_shapes=True), inventory)
    if spec["runner"] != "arignote":
        warnings.filterwarnings("ignore")  # Lightning's and Keras's advice is noise in a benchmark log
    bench_data = data.load(spec["model"], spec["n_train"], spec["n_val"], source=spec["data"])
    gpu_index = device.index if device.is_cuda else None
    if gpu_index is not None:
        from arignote.devices import cuda  # torch, as data above

        cuda.reset_peak_memory(gpu_index)
    emit("start", device=str(device), device_name=device.name, data=bench_data.source,
         devices=len(chosen), threads=_threads())
    epochs: list[float] = []
    logs: dict[str, float] = {}
    t0 = time.perf_counter()

    def on_epoch(epoch: int, seconds: float, epoch_logs: dict) -> None:
        epochs.append(seconds)
        logs.clear()
        logs.update(epoch_logs)
        emit("epoch", epoch=epoch, seconds=seconds, logs=epoch_logs)

    runners.run(spec["runner"], spec["model"], bench_data, spec["batch_size"], spec["epochs"], str(device),
                config.get("precision"), on_epoch)
    total = time.perf_counter() - t0
    peak_gpu = None
    if gpu_index is not None:
        from arignote.devices import cuda  # torch, as data above

        peak_gpu = cuda.peak_memory(gpu_index)[0]
    emit("result", epoch_seconds=epochs, total_seconds=total, peak_rss=peak_rss_bytes(), peak_gpu=peak_gpu,
         logs=logs)
    return 0


def _threads() -> int:
    return cpu.threads()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
