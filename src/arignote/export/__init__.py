"""Export a model's inference graph for serving: ONNX, a ``torch.export`` program, or a Keras 3 file.

One module per format (:mod:`.onnx_file`, :mod:`.torch_program`, :mod:`.keras3_file`); what the formats
share (names, shapes, the traced module, the layer to blame) is in :mod:`.signature`, and running an
exported file against arignote's own prediction in :mod:`.verify`. ``Model.export`` and
``arignote convert`` call :func:`export_model`.

Example::

    >>> import os, tempfile
    >>> from arignote.models import Sequential
    >>> from arignote.layers import Dense
    >>> model = Sequential([Dense(3, input_shape=(4,))])
    >>> d = tempfile.mkdtemp()
    >>> export_model(model, os.path.join(d, "m.pt2"))          # the format from the suffix
    >>> export_model(model, os.path.join(d, "m.bin"), "torch")  # or named
"""

from __future__ import annotations

import os
from typing import Any

from arignote.export.signature import ExportError

__all__ = ["FORMATS", "ExportError", "export_model", "format_for"]

# format -> the file suffix it writes
FORMATS = {"onnx": ".onnx", "torch": ".pt2", "keras": ".keras"}
# Keras 3's other export formats (written through TensorFlow or JAX) and Keras 2's file: what to use instead
_NOT_SUPPORTED = {"tf_saved_model": "format='onnx' (or 'torch')", "tflite": "format='onnx'",
                  "litert": "format='onnx'", "openvino": "format='onnx' (OpenVINO reads ONNX)",
                  "h5": "model.save('model.h5') (Keras 2's HDF5)"}


def format_for(path: str, fmt: str | None) -> str:
    """The format to write: ``fmt`` if given (checked), else the one of ``path``'s suffix."""
    if fmt is None:
        suffix = os.path.splitext(os.fspath(path))[1].lower()
        found = [f for f, s in FORMATS.items() if s == suffix]
        if not found:
            raise ExportError(f"cannot tell the export format from '{path}': name the file .onnx, .pt2 or "
                              ".keras, or pass format='onnx' / 'torch' / 'keras'")
        return found[0]
    if fmt in _NOT_SUPPORTED:
        raise ExportError(f"format={fmt!r} is not supported by arignote (Keras 3 writes it through "
                          f"TensorFlow or JAX): use {_NOT_SUPPORTED[fmt]}")
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; the formats are {', '.join(FORMATS)}")
    return fmt


def export_model(model: Any, path: str, format: str | None = None,
                 input_shapes: list[tuple] | None = None) -> None:
    """Write ``model``'s inference graph (dropout off, BatchNormalization on its moving statistics) to
    ``path`` as ``format`` (``"onnx"``, ``"torch"``, ``"keras"``; default: from the suffix).
    ``input_shapes``: one shape per input without the batch, where the model leaves dims open."""
    fmt = format_for(path, format)
    path = os.fspath(path)
    if fmt == "onnx":
        from arignote.export.onnx_file import export_onnx  # torch.onnx and onnx load only for this format

        export_onnx(model, path, input_shapes)
    elif fmt == "torch":
        from arignote.export.torch_program import export_program  # torch.export loads only for this format

        export_program(model, path, input_shapes)
    else:
        from arignote.export.keras3_file import export_keras3  # h5py/zipfile writer, only for this format

        export_keras3(model, path)
