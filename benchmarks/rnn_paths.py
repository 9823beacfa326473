"""Recurrent layers off torch's fused kernel against the fused kernel on the same shapes (issue 32 item 3).

The fused path (``torch.lstm`` / ``torch.gru``) takes LSTM with tanh/sigmoid, GRU with
``reset_after=True``; any other Keras activation, ``recurrent_dropout`` in training, Keras 2's default
``GRU(reset_after=False)`` run the loop path (the input projection of all steps at once, then one
step per time step; an LSTM's loop as one hand-differentiated function, ``lstm_sequence``: the
"graph loop" rows run the per-operator loop it replaced, in the same process); a mask runs the
fused kernel (or the LSTM function) over each row's valid steps gathered to the front (the graph
loop's masked steps in the "before" row). One training step (forward + backward + RMSprop)
of ``Embedding -> RNN(128) -> Dense(1)`` on imdb_lstm.py's shapes, cases alternating round by round;
ratio = median step CPU time of the case / of its fused reference.

Example::

    $ OMP_NUM_THREADS=1 .venv/bin/python benchmarks/rnn_paths.py --rounds 5
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import time
from collections.abc import Iterator

import numpy as np
import torch

from arignote.layers import GRU, LSTM, Dense, Embedding
from arignote.layers.recurrent import lstm_sequence
from arignote.models import Sequential

STEPS, UNITS, BATCH, VOCAB = 80, 128, 32, 20000
CASES = {  # name -> (layer factory, the fused case it is compared with)
    "LSTM (fused)": (lambda: LSTM(UNITS), None),
    "LSTM recurrent_dropout=0.2": (lambda: LSTM(UNITS, recurrent_dropout=0.2), "LSTM (fused)"),
    "LSTM recurrent_activation=hard_sigmoid": (
        lambda: LSTM(UNITS, recurrent_activation="hard_sigmoid"),
        "LSTM (fused)",
    ),
    "LSTM recurrent_dropout=0.2, graph loop (before)": (
        lambda: LSTM(UNITS, recurrent_dropout=0.2),
        "LSTM (fused)",
    ),
    "LSTM recurrent_activation=hard_sigmoid, graph loop (before)": (
        lambda: LSTM(UNITS, recurrent_activation="hard_sigmoid"),
        "LSTM (fused)",
    ),
    "LSTM recurrent_dropout=0.2 implementation=1 (Keras <= 2.2)": (
        lambda: LSTM(UNITS, recurrent_dropout=0.2, implementation=1),
        "LSTM (fused)",
    ),
    "LSTM recurrent_dropout=0.2 implementation=1, graph loop (before)": (
        lambda: LSTM(UNITS, recurrent_dropout=0.2, implementation=1),
        "LSTM (fused)",
    ),
    "LSTM with a mask (zeros inside)": (lambda: LSTM(UNITS), "LSTM (fused)"),
    "LSTM hard_sigmoid with a mask": (
        lambda: LSTM(UNITS, recurrent_activation="hard_sigmoid"),
        "LSTM (fused)",
    ),
    "LSTM hard_sigmoid with a mask, graph loop (before)": (
        lambda: LSTM(UNITS, recurrent_activation="hard_sigmoid"),
        "LSTM (fused)",
    ),
    "GRU reset_after=True (fused)": (lambda: GRU(UNITS, reset_after=True), None),
    "GRU reset_after=False (Keras 2 default)": (
        lambda: GRU(UNITS, reset_after=False),
        "GRU reset_after=True (fused)",
    ),
}


@contextlib.contextmanager
def path_of(name: str) -> Iterator[None]:
    """The "graph loop" cases run the per-operator loop the hand-differentiated LSTM recurrence
    (``lstm_sequence``) replaced: its decision says no while they run, in the same process."""
    if "graph loop" not in name:
        yield
        return
    takes = lstm_sequence.takes
    lstm_sequence.takes = lambda **_: False
    try:
        yield
    finally:
        lstm_sequence.takes = takes


def build(name: str) -> tuple:
    torch.manual_seed(0)
    rng = np.random.RandomState(0)
    masked = "mask" in name
    model = Sequential(
        [
            Embedding(VOCAB, 128, input_shape=(STEPS,), mask_zero=masked),
            CASES[name][0](),
            Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(loss="binary_crossentropy", optimizer="rmsprop")
    x = rng.randint(1, VOCAB, size=(BATCH, STEPS))
    if masked:  # zeros inside the sequences: not a padding pattern (each row's valid steps are gathered)
        x[:, 10::7] = 0
    return model, x, (rng.rand(BATCH, 1) > 0.5).astype("float32")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    built = {name: build(name) for name in CASES}
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for name, (model, x, y) in built.items():
        with path_of(name):
            for _ in range(2):
                model.train_on_batch(x, y)
    names = list(CASES)
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            model, x, y = built[name]
            per = []
            with path_of(name):
                for _ in range(args.steps):
                    c = time.process_time()
                    model.train_on_batch(x, y)
                    per.append(time.process_time() - c)
            times[name].append(statistics.median(per))
    print(
        f"{platform.node()} · torch {torch.__version__} · 1 thread · {args.rounds} rounds of {args.steps} "
        "steps · "
        f"batch {BATCH}, {STEPS} steps, {UNITS} units · load average {os.getloadavg()[0]:.1f}\n"
    )
    print("| layer | ms/step (CPU, median) | / fused (min-max over rounds) |\n| --- | ---: | ---: |")
    for name, (_, ref) in CASES.items():
        med = 1000 * statistics.median(times[name])
        if ref is None:
            print(f"| {name} | {med:.1f} | 1 |")
            continue
        ratios = [a / b for a, b in zip(times[name], times[ref])]
        print(
            f"| {name} | {med:.1f} | {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
