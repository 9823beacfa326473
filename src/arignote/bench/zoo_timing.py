"""Timing the zoo (:mod:`arignote.bench.zoo`): one training step and ``predict`` at batch 1 and 64,
in a long-lived worker process per framework (arignote, or Keras 3 on its torch backend in another
Python), so ``arignote bench --zoo`` and ``benchmarks/vs_keras3.py`` time both sides the same way.

A worker (``python -m arignote.bench.zoo_timing arignote|keras3 [device]``) prints one JSON line
``{"ready": ..., "torch": ..., "device": ..., "device_name": ..., "threads": ...}``, then answers each
request line ``{"model", "warmup", "steps", "predict_reps", "batch"}`` with one line: per-step CPU
and wall seconds of ``train_on_batch`` and the median ``predict`` seconds (CPU and wall) at each
batch of :data:`PREDICT_BATCHES`. ``train_on_batch`` and ``predict`` return host values in both
frameworks, so on a GPU every timed call ends with the device's work done (wall time is the figure
there; CPU time is the figure on a loaded CPU machine).

Example::

    >>> w = Worker("arignote", sys.executable)               # doctest: +SKIP
    >>> w.run("mlp", warmup=1, steps=2, predict_reps=1)["wall"]   # doctest: +SKIP
    [0.0121, 0.0118]
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PREDICT_BATCHES = (1, 64)
FRAMEWORKS = ("arignote", "keras3")
SRC = Path(__file__).resolve().parents[2]  # the directory holding the arignote package


def keras3_api() -> Any:
    """Keras 3's namespace for the zoo's builders."""
    import keras

    from arignote.bench.zoo import make_api  # numpy, in the worker only

    return make_api(keras.layers, keras.models, keras.ops, lambda shape: keras.random.normal(shape))


def _rows(x: Any, n: int) -> Any:
    import numpy as np

    def one(a):  # the first n rows, repeated when the batch has fewer
        return np.concatenate([a] * (-(-n // len(a))))[:n]

    return [one(a) for a in x] if isinstance(x, list) else one(x)


def measure(model: Any, x: Any, y: Any, warmup: int, steps: int, predict_reps: int) -> dict:
    """Seconds of ``steps`` ``train_on_batch(x, y)`` calls after ``warmup`` ones (lists ``cpu`` and
    ``wall``; ``minflt``: the minor page faults of those steps), and of ``predict`` (median of
    ``predict_reps`` after one untimed call) at each batch of :data:`PREDICT_BATCHES`, keyed by the
    batch as a string (none when ``predict_reps`` is 0: rounds of training steps alone)."""
    for _ in range(warmup):
        model.train_on_batch(x, y)
    cpu, wall = [], []
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(steps):
        c, w = time.process_time(), time.perf_counter()
        model.train_on_batch(x, y)
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    predict = {}
    for b in PREDICT_BATCHES if predict_reps else ():
        xb = _rows(x, b)
        model.predict(xb, batch_size=b, verbose=0)
        pc, pw = [], []
        for _ in range(predict_reps):
            c, w = time.process_time(), time.perf_counter()
            model.predict(xb, batch_size=b, verbose=0)
            pc.append(time.process_time() - c)
            pw.append(time.perf_counter() - w)
        predict[str(b)] = {"cpu": statistics.median(pc), "wall": statistics.median(pw)}
    return {"cpu": cpu, "wall": wall, "predict": predict, "minflt": faults}


def _setup(framework: str, device: str | None) -> tuple[Any, dict]:
    """The framework's zoo namespace and what the worker says of itself."""
    import torch

    threads = os.environ.get("ARIGNOTE_ZOO_THREADS")
    if threads:
        torch.set_num_threads(int(threads))
    if framework == "keras3":
        import keras
        from keras.src.backend.torch.core import get_device  # Keras 3's own choice (torch backend)

        name = str(get_device())
        hello = {"ready": f"keras {keras.__version__}", "device": name}
        return keras3_api(), hello
    from arignote import config, devices  # torch and the device setup: in the arignote worker only
    from arignote._version import __version__  # (with the line above: the arignote worker only)
    from arignote.bench import zoo  # numpy, in the worker only
    from arignote.runtime import setup  # the device setup: in the arignote worker only

    config.configure(**({"device": device} if device else {}), print_active_device=False)
    inventory = devices.current_inventory()
    chosen = setup.configured_devices(inventory)[0]
    setup.prepare(chosen, inventory)
    if threads:  # the side-by-side's thread count wins over arignote's own setting
        torch.set_num_threads(int(threads))
    return zoo.arignote_api(), {"ready": f"arignote {__version__}", "device": str(chosen),
                                "device_name": chosen.name}


def worker_main(framework: str, device: str | None = None) -> int:
    """Serve timing requests on stdin, one JSON answer per line on stdout (see the module doc)."""
    import torch

    from arignote.bench import zoo  # numpy, in the worker only

    out = sys.stdout
    sys.stdout = sys.stderr  # banners and warnings must not break the protocol
    api, hello = _setup(framework, device)
    hello.setdefault("device_name", hello["device"])
    print(json.dumps({**hello, "torch": torch.__version__, "threads": torch.get_num_threads()}), file=out,
          flush=True)
    built: dict = {}
    for line in sys.stdin:
        req = json.loads(line)
        key = (req["model"], req.get("batch"))
        try:
            if key not in built:
                torch.manual_seed(0)
                built[key] = zoo.build(req["model"], api, batch=req.get("batch"))
            model, x, y = built[key]
            answer = measure(model, x, y, req["warmup"], req["steps"], req["predict_reps"])
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which names the model
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), file=out, flush=True)
    return 0


class Worker:
    """A worker process of ``framework`` run by ``python``; :meth:`run` times one zoo model."""

    def __init__(self, framework: str, python: str, device: str | None = None,
                 threads: int | None = None) -> None:
        env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        if threads:
            env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
                       ARIGNOTE_ZOO_THREADS=str(threads))
        if framework == "keras3":
            env["KERAS_BACKEND"] = "torch"
        args = [python, "-m", "arignote.bench.zoo_timing", framework, *([device] if device else [])]
        self.framework = framework
        self.log = tempfile.TemporaryFile(mode="w+")  # its chatter: a pipe nobody reads could fill up
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, env=env)
        self.hello = self._read()

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=60)
            self.log.seek(0)
            tail = self.log.read().strip().splitlines()[-3:]
            raise RuntimeError(f"the {self.framework} worker ({self.proc.args[0]}) stopped: "
                               + (" | ".join(tail) or f"exit code {self.proc.returncode}"))
        return json.loads(line)

    def run(self, model: str, warmup: int, steps: int, predict_reps: int, batch: int | None = None) -> dict:
        req = {"model": model, "warmup": warmup, "steps": steps, "predict_reps": predict_reps, "batch": batch}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        answer = self._read()
        if "error" in answer:
            raise RuntimeError(f"{self.framework} could not time zoo model {model!r}: {answer['error']}")
        return answer

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        self.log.close()


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1], *(sys.argv[2:3] or [None])))
