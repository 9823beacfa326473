"""Run an exported file and compare it with arignote's own prediction: what ``arignote convert`` checks.

``.onnx`` runs in onnxruntime (CPU), ``.pt2`` through ``torch.export.load``, ``.keras`` in Keras 3 (torch
backend) in the Python interpreter given (a venv with Keras 3: Keras 3 is not a dependency of arignote).

Example::

    >>> import os, tempfile
    >>> from arignote.models import Sequential
    >>> from arignote.layers import Dense
    >>> from arignote.export import export_model
    >>> model = Sequential([Dense(3, input_shape=(4,))])
    >>> path = os.path.join(tempfile.mkdtemp(), "m.pt2")
    >>> export_model(model, path, "torch")
    >>> import contextlib, io
    >>> with contextlib.redirect_stdout(io.StringIO()):  # the device banner of a first predict
    ...     check = compare(model, path, "torch", batches=sample_batches(model))
    >>> check.max_diff < 1e-6
    True
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from arignote.export.onnx_file import require
from arignote.export.signature import ExportError, input_specs, output_names, sample_inputs

__all__ = ["DEFAULT_ATOL", "Check", "sample_batches", "reference", "run_exported", "compare", "run_keras3",
           "keras3_python"]

# float32 rounding differs between kernels (fused ONNX ops, another GEMM order): 1e-4 of absolute slack
DEFAULT_ATOL = {"float16": 1e-2, "bfloat16": 1e-2, "float32": 1e-4, "float64": 1e-8}


@dataclass
class Check:
    """The largest absolute difference per output over every batch, and the batches it was measured on."""

    outputs: list[str]
    diffs: list[float] = field(default_factory=list)
    batches: list[str] = field(default_factory=list)
    dtype: str = "float32"  # of the model's outputs: what the default tolerance follows

    @property
    def max_diff(self) -> float:
        return max(self.diffs) if self.diffs else float("nan")

    def default_atol(self) -> float:
        """The tolerance for the model's dtype (1e-4 for float32)."""
        return DEFAULT_ATOL.get(self.dtype, DEFAULT_ATOL["float32"])


def sample_batches(model: Any, input_shapes: list[tuple] | None = None, sample: list[np.ndarray] | None = None
                   ) -> list[tuple[str, list[np.ndarray]]]:
    """Generated inputs of batch 1 and 5 (so a fixed batch would show), plus the user's ``sample``."""
    specs = input_specs(model, input_shapes)
    batches = [(f"generated batch {b}", sample_inputs(specs, b, seed=b)) for b in (1, 5)]
    if sample is not None:
        if len(sample) != len(specs):
            raise ExportError(f"the sample has {len(sample)} arrays, the model {len(specs)} inputs")
        batches.append(("sample", [np.asarray(a, dtype=s.dtype) for a, s in zip(sample, specs)]))
    return batches


def reference(model: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """arignote's own prediction (``model.predict``, inference mode), one array per output."""
    out = model.predict(inputs if len(inputs) > 1 else inputs[0], batch_size=len(inputs[0]), verbose=0)
    return [np.asarray(o) for o in (out if isinstance(out, list) else [out])]


def _run_onnx(path: str, names: list[str], inputs: list[np.ndarray]) -> list[np.ndarray]:
    require("onnxruntime")
    import onnxruntime  # optional extra: loaded only to run an ONNX file

    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {i.name: a for i, a in zip(session.get_inputs(), inputs)}
    return session.run(None, feed)


def _run_program(path: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    program = torch.export.load(path)
    with torch.no_grad():
        out = program.module()(*(torch.as_tensor(a) for a in inputs))
    return [o.detach().cpu().numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


_KERAS3_RUNNER = """
import json, os, sys, traceback
os.environ["KERAS_BACKEND"] = "torch"
import numpy as np, keras
for job in json.loads(sys.argv[1]):
    try:
        model = keras.saving.load_model(job["model"])
        for xin, xout in job["batches"]:
            data = np.load(xin)
            xs = [data[f"x{i}"] for i in range(len(data.files))]
            out = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
            out = out if isinstance(out, (list, tuple)) else [out]
            np.savez(xout, *[np.asarray(o) for o in out])
    except Exception as exc:
        with open(job["error"], "w") as f:
            f.write(traceback.format_exception_only(type(exc), exc)[-1].strip())
"""


def keras3_python() -> str | None:
    """A Python with Keras 3: this one if it imports ``keras`` >= 3, else None."""
    import importlib.util  # only when a .keras file is verified

    if importlib.util.find_spec("keras") is None:
        return None
    from importlib import metadata

    return sys.executable if int(metadata.version("keras").split(".")[0]) >= 3 else None


def run_keras3(jobs: list[tuple[str, list[list[np.ndarray]]]], python: str) -> list:
    """Load each ``.keras`` file of ``jobs`` (``(path, [inputs per batch])``) in Keras 3 (torch backend) in
    ``python``, one process for all, and predict: per job, a list of outputs per batch, or the error text."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = []
        for j, (path, batches) in enumerate(jobs):
            pairs = []
            for b, inputs in enumerate(batches):
                xin, xout = os.path.join(tmp, f"in{j}_{b}.npz"), os.path.join(tmp, f"out{j}_{b}.npz")
                np.savez(xin, **{f"x{i}": a for i, a in enumerate(inputs)})
                pairs.append((xin, xout))
            spec.append({"model": os.path.abspath(path), "batches": pairs,
                         "error": os.path.join(tmp, f"error{j}.txt")})
        env = dict(os.environ, KERAS_BACKEND="torch")
        done = subprocess.run([python, "-c", _KERAS3_RUNNER, json.dumps(spec)], capture_output=True,
                              text=True, env=env, timeout=1200)
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-1:] or ["(no message)"]
            raise ExportError(f"Keras 3 ({python}) did not run: {tail[0]}")
        results = []
        for job in spec:
            if os.path.exists(job["error"]):
                with open(job["error"], encoding="utf-8") as f:
                    results.append(f.read())
                continue
            outs = []
            for _, xout in job["batches"]:
                data = np.load(xout)
                outs.append([data[f"arr_{i}"] for i in range(len(data.files))])
            results.append(outs)
        return results


def _keras_outputs(path: str, batches: list[list[np.ndarray]], python: str | None) -> list[list[np.ndarray]]:
    python = python or keras3_python()
    if python is None:
        raise ExportError("verifying a .keras file needs Keras 3: give a Python that has it "
                          "(--keras-python /path/to/venv/bin/python; scripts/setup-keras3-venv.sh builds "
                          "one)")
    result = run_keras3([(path, batches)], python)[0]
    if isinstance(result, str):
        raise ExportError(f"Keras 3 ({python}) could not load or run {path}: {result}")
    return result


def run_exported(path: str, fmt: str, inputs: list[np.ndarray], names: list[str] | None = None,
                 keras_python: str | None = None) -> list[np.ndarray]:
    """The outputs of the exported file at ``path`` for ``inputs`` (one array per input)."""
    if fmt == "onnx":
        return _run_onnx(path, names or [], inputs)
    if fmt == "torch":
        return _run_program(path, inputs)
    if fmt == "keras":
        return _keras_outputs(path, [inputs], keras_python)[0]
    raise ExportError(f"no runner for format {fmt!r}")


def compare(model: Any, path: str, fmt: str, batches: list[tuple[str, list[np.ndarray]]],
            keras_python: str | None = None) -> Check:
    """Run ``path`` and ``model`` on every batch; the largest absolute difference per output."""
    names = output_names(model)
    check = Check(outputs=names, diffs=[0.0] * len(names))
    if fmt == "keras":  # one Keras 3 process for every batch (it takes seconds to start)
        outputs = _keras_outputs(path, [inputs for _, inputs in batches], keras_python)
    else:
        outputs = [run_exported(path, fmt, inputs) for _, inputs in batches]
    for (label, inputs), got in zip(batches, outputs):
        want = reference(model, inputs)
        check.dtype = str(want[0].dtype)
        if len(got) != len(want):
            raise ExportError(f"{path} gives {len(got)} outputs, the model {len(want)} ({label})")
        for i, (g, w) in enumerate(zip(got, want)):
            g = np.asarray(g)
            if g.shape != w.shape:
                raise ExportError(f"output '{names[i]}' of {path} has shape {g.shape}, the model's {w.shape} "
                                  f"({label})")
            diff = float(np.max(np.abs(g.astype(np.float64) - w))) if w.size else 0.0
            check.diffs[i] = max(check.diffs[i], diff)
        check.batches.append(label)
    return check
