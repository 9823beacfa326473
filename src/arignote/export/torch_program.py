"""``format="torch"``: the inference graph as a ``torch.export`` ExportedProgram in a ``.pt2`` file.

Every ``None`` dimension of the Keras inputs (the batch, open timesteps) stays dynamic; the program's
positional inputs are the Keras inputs in order, its outputs a tuple of the Keras outputs.

Example::

    >>> import os, tempfile, torch
    >>> from arignote.models import Sequential
    >>> from arignote.layers import Dense
    >>> model = Sequential([Dense(3, input_shape=(4,))])
    >>> path = os.path.join(tempfile.mkdtemp(), "m.pt2")
    >>> _ = export_program(model, path)
    >>> torch.export.load(path).module()(torch.ones(5, 4))[0].shape
    torch.Size([5, 3])
"""

from __future__ import annotations

from typing import Any

import torch

from arignote.export.signature import (
    ExportError,
    InferenceModule,
    blame_message,
    dynamic_shapes,
    example_batch,
    inference_mode,
    input_specs,
    refuse_stateful,
)

__all__ = ["trace_program", "export_program"]


def _device(module: torch.nn.Module) -> torch.device:
    p = next(iter(module.parameters()), None)
    return p.device if p is not None else torch.device("cpu")


def trace_program(model: Any, input_shapes: list[tuple] | None = None) -> torch.export.ExportedProgram:
    """The model's inference graph, traced by ``torch.export`` (non-strict) with dynamic ``None`` dims.
    A layer that cannot be traced raises :class:`ExportError` naming it."""
    specs = input_specs(model, input_shapes)
    refuse_stateful(model)
    with inference_mode(model) as module:
        device = _device(module)
        args = tuple(torch.as_tensor(a, device=device) for a in example_batch(specs))
        try:
            return torch.export.export(InferenceModule(model), args, dynamic_shapes=dynamic_shapes(specs),
                                       strict=False)
        except Exception as exc:  # torch.export raises many types (UserError, GuardOnDataDependent...)
            open_dims = [f"'{s.name}' {s.shape}" for s in specs if None in s.shape[1:]]
            if open_dims and isinstance(exc, torch._dynamo.exc.UserError):
                raise ExportError(f"the input {', '.join(open_dims)} leaves dimensions besides the batch "
                                  "open, and the traced graph cannot keep them open (an RNN unrolls over its "
                                  "steps): fix them with input_shapes=[(7, 2)] / --input-shape 7,2") from exc
            raise ExportError(blame_message(exc, "torch.export")) from exc


def export_program(model: Any, path: str,
                   input_shapes: list[tuple] | None = None) -> torch.export.ExportedProgram:
    """Trace ``model`` and save the program with ``torch.export.save`` (``torch.export.load`` reads it)."""
    program = trace_program(model, input_shapes)
    torch.export.save(program, path)
    return program
