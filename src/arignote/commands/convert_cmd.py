"""``arignote convert``: a Keras 2 model file to ONNX, a ``torch.export`` program or a Keras 3 file, verified.

Reads what ``load_model`` reads (Keras 2 ``.h5`` from the Theano or TensorFlow backend, arignote
checkpoints) or a ``.json`` architecture with ``--weights``; writes DST; then runs DST (onnxruntime,
``torch.export.load``, or Keras 3 through ``--keras-python``) on generated inputs of batch 1 and 5 and on
``--sample``, and prints the largest difference from arignote's own prediction. Exit 1 above ``--atol``
(default 1e-4 for float32), or when a layer has no equivalent in the format (the message names it).

Example::

    $ arignote convert old_theano_model.h5 model.onnx
    wrote model.onnx (onnx, opset 18) from old_theano_model.h5 (Sequential, input dense_1_input (None, 784))
    verified with onnxruntime (CPU) on generated batch 1, generated batch 5: largest difference 5.96e-08
    (atol 1e-04)
"""

from __future__ import annotations

import os

from arignote.errors import ArignoteError, UnsafeDeserializationError

HELP = "convert a Keras 2 model file (.h5, .json + weights, checkpoint) to ONNX, .pt2 or Keras 3; verify it"

FORMATS = ("onnx", "torch", "keras")  # arignote.export.FORMATS; named here: `arignote --help` loads no torch
_RUNNERS = {"onnx": "onnxruntime (CPU)", "torch": "torch.export.load", "keras": "Keras 3 (torch backend)"}


def add_arguments(parser) -> None:
    parser.add_argument("src", metavar="SRC",
                        help="a Keras 2 .h5, a .json architecture (with --weights) or an arignote checkpoint")
    parser.add_argument("dst", metavar="DST", help="the file to write (.onnx, .pt2, .keras)")
    parser.add_argument("--format", choices=tuple(FORMATS),
                        help="the format of DST (default: from its suffix)")
    parser.add_argument("--weights", metavar="FILE", help="the weights of a .json SRC (Keras 2 HDF5)")
    parser.add_argument("--input-shape", action="append", metavar="D1,D2,...", dest="input_shapes",
                        help="an input's shape without the batch (28,28,1), where the model leaves it open; "
                             "once per input, in order")
    parser.add_argument("--sample", metavar="FILE", help="real inputs to verify on: .npy (one input) or .npz "
                                                         "(one array per input, by input name or in order)")
    parser.add_argument("--atol", type=float, help="largest accepted difference (default 1e-4 for float32)")
    parser.add_argument("--unsafe", action="store_true",
                        help="trust SRC: load a Lambda's stored Python bytecode (safe_mode=False; off by "
                             "default, as a file's code runs as you)")
    parser.add_argument("--keras-python", metavar="PYTHON",
                        help="a Python with Keras 3 to verify a .keras DST (default: this one, if it has it)")


def _shape(text: str) -> tuple:
    try:
        return tuple(int(d) for d in text.split(","))
    except ValueError:
        raise ArignoteError(f"--input-shape {text!r}: give the dimensions as integers without the batch, "
                          "like 28,28,1") from None


def _load(args):
    from arignote.export import ExportError  # torch and the model classes load only when the command runs
    from arignote.models.loading import load_model, model_from_json  # (so does this)

    safe_mode = not args.unsafe
    try:
        if args.src.lower().endswith(".json"):
            if not args.weights:
                raise ExportError(f"{args.src} holds only the architecture: give its weights with "
                                  "--weights FILE.h5")
            with open(args.src, encoding="utf-8") as f:
                model = model_from_json(f.read(), safe_mode=safe_mode)
            model.load_weights(args.weights)
            return model
        if args.weights:
            raise ExportError(f"--weights is for a .json SRC; {args.src} holds its own weights")
        return load_model(args.src, compile=False, safe_mode=safe_mode)
    except UnsafeDeserializationError as err:
        raise ArignoteError(f"{err} On the command line: add --unsafe to trust {args.src}.") from None


def _sample(path: str, names: list[str]) -> list:
    import numpy as np  # not at import: `arignote --help` loads every command module

    data = np.load(path, allow_pickle=False)
    if isinstance(data, np.ndarray):
        return [data]
    keys = list(data.files)
    if set(names) <= set(keys):
        return [data[n] for n in names]
    if len(keys) != len(names):
        raise ArignoteError(f"{path} has arrays {keys}; the model's inputs are {names}")
    return [data[k] for k in keys]


def _describe(model, specs) -> str:
    inputs = ", ".join(f"{s.name} {s.shape}" for s in specs)
    return f"{type(model).__name__}, input{'s' if len(specs) > 1 else ''} {inputs}"


def run(args) -> int:
    # torch, the exporters and the model classes load only when the command runs
    from arignote.export import export_model, format_for
    from arignote.export.onnx_file import OPSET
    from arignote.export.signature import input_specs, output_names
    from arignote.export.verify import compare, keras3_python, sample_batches

    if not os.path.exists(args.src):
        raise ArignoteError(f"{args.src}: no such file")
    fmt = format_for(args.dst, args.format)
    shapes = [_shape(s) for s in args.input_shapes] if args.input_shapes else None
    model = _load(args)
    specs = input_specs(model, shapes)
    sample = _sample(args.sample, [s.name for s in specs]) if args.sample else None
    batches = sample_batches(model, shapes, sample)  # checks the sample before anything is written
    export_model(model, args.dst, fmt, shapes)
    detail = f"{fmt}, opset {OPSET}" if fmt == "onnx" else fmt
    print(f"wrote {args.dst} ({detail}) from {args.src} ({_describe(model, specs)})")
    python = args.keras_python or (keras3_python() if fmt == "keras" else None)
    if fmt == "keras" and python is None:
        print(f"not verified: no Keras 3 here (give --keras-python, a Python with Keras 3, to check "
              f"{args.dst})")
        return 0
    check = compare(model, args.dst, fmt, batches, keras_python=python)
    atol = args.atol if args.atol is not None else check.default_atol()
    labels = ", ".join(check.batches)
    print(f"verified with {_RUNNERS[fmt]} on {labels}: largest difference {check.max_diff:.3g} "
          f"(atol {atol:.0e})")
    bad = [(n, d) for n, d in zip(output_names(model), check.diffs) if not d <= atol]
    for name, diff in bad:
        print(f"arignote convert: output '{name}' differs by {diff:.3g} from arignote's prediction, above "
              f"--atol {atol:g}")
    return 1 if bad else 0
