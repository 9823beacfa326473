"""``format="onnx"``: the inference graph as an ONNX file (opset :data:`OPSET`), through
``torch.onnx.export`` (torch's dynamo exporter) from the ``torch.export`` program.

Inputs and outputs carry the Keras layer names; the batch (and every other ``None`` dimension of the
Keras inputs) is dynamic. Needs the ``export`` extra (``pip install 'arignote[export]'``: onnx,
onnxscript, and onnxruntime to run and verify the file).

Example::

    >>> import os, tempfile
    >>> from arignote.models import Sequential
    >>> from arignote.layers import Dense
    >>> model = Sequential([Dense(3, input_shape=(4,), name="head")])
    >>> path = os.path.join(tempfile.mkdtemp(), "m.onnx")
    >>> export_onnx(model, path)
    >>> import onnx; [i.name for i in onnx.load(path).graph.input]
    ['head_input']
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import warnings
from typing import Any

import torch

from arignote.export.signature import ExportError, input_specs, output_names
from arignote.export.torch_program import trace_program

__all__ = ["OPSET", "EXTRA_HINT", "require", "export_onnx"]

OPSET = 18  # the opset torch 2.13's ONNX exporter implements natively (no version conversion)
EXTRA_HINT = "pip install 'arignote[export]'"


def require(*packages: str) -> None:
    """Raise :class:`ExportError` naming the extra to install when a package is missing."""
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    if missing:
        raise ExportError(f"ONNX export and verification need {', '.join(missing)}, which is not installed: "
                          f"{EXTRA_HINT}")


@contextlib.contextmanager
def _quiet_exporter():
    """The exporter's notes (torchvision ops it skips, constant folding it skips) are not the user's news."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def export_onnx(model: Any, path: str, input_shapes: list[tuple] | None = None) -> None:
    """Write the ONNX file of ``model``'s inference graph to ``path``."""
    require("onnx", "onnxscript")
    program = trace_program(model, input_shapes)
    names = [s.name for s in input_specs(model, input_shapes)]
    outputs = output_names(model)
    try:
        with contextlib.redirect_stdout(io.StringIO()), _quiet_exporter():  # its progress lines and notes
            torch.onnx.export(program, (), path, input_names=names, output_names=outputs,
                              opset_version=OPSET, dynamo=True, verbose=False, external_data=False)
    except Exception as exc:  # the exporter's own types (ConversionError...) for an op with no ONNX form
        raise ExportError(f"the model cannot be written as ONNX (opset {OPSET}): {type(exc).__name__}: "
                          f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}") from exc
