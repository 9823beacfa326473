"""Operators of one steady-state ``fit`` step (``arignote.bench.opcount``, dispatch mode; counted, not
timed) for the issue-18 workloads: the seeds' MLP at batch 32 and 128 and CNN at batch 32
(``categorical_crossentropy``, RMSprop, ``metrics=['accuracy']``), and ``benchmarks/ddp_overhead.py``'s
``Model(torch MLP 256-256-10)`` with SGD and ``mse`` at batch 64.

    .venv/bin/python benchmarks/step_operators.py [-v]

To count another source tree (e.g. main before a change): ``git archive <commit> src | tar -x -C
/tmp/old`` and run this script from ``/tmp/old`` with ``/tmp/old/src`` first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

import arignote
from arignote.bench import opcount
from arignote.bench.models import arignote_model

SHAPES = {"mlp": (784,), "cnn": (32, 32, 3)}


def seeds(name: str, batch: int) -> opcount.StepCount:
    torch.manual_seed(0)
    model = arignote_model(name)
    model.compile("rmsprop", "categorical_crossentropy", metrics=["accuracy"])
    rng = np.random.default_rng(0)
    x = rng.random((batch * 4, *SHAPES[name]), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch * 4)]
    return opcount.count_fit_step(model, x, y, batch)


def torch_mlp_mse(batch: int = 64, width: int = 256) -> opcount.StepCount:
    from arignote.models import Model
    from arignote.optimizers import SGD

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                              torch.nn.ReLU(), torch.nn.Linear(width, 10))
    model = Model(net)
    model.compile(SGD(lr=0.01), "mse")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(batch * 4, width)).astype("float32")
    y = rng.normal(size=(batch * 4, 10)).astype("float32")
    return opcount.count_fit_step(model, x, y, batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", action="store_true", help="list the operators")
    args = parser.parse_args()
    torch.set_num_threads(1)
    arignote.configure(print_active_device=False)
    rows = [("seeds' MLP, batch 32", seeds("mlp", 32)), ("seeds' MLP, batch 128", seeds("mlp", 128)),
            ("seeds' CNN, batch 32", seeds("cnn", 32)),
            ("Model(torch MLP) + SGD + mse, batch 64", torch_mlp_mse())]
    for label, step in rows:
        print(f"{label}: {len(step.ops)} operators, {step.syncs} host syncs")
        if args.v:
            print("   ", " ".join(op.name.replace("aten.", "") for op in step.ops))


if __name__ == "__main__":
    main()
