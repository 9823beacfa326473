"""How often ``fit`` reads a ``Sequence``, as Keras 2.3.1's test_fit_generator counts it: each batch
once per epoch (the up-front checks and the memory plan look at batch 0 without an extra read), and
a Sequence whose length changes after an epoch gets its new number of steps (callbacks' params)."""

import numpy as np
import pytest

from arignote.callbacks import Callback
from arignote.layers import Dense, Input
from arignote.models import Model
from arignote.utils import Sequence


class Counted(Sequence):
    def __init__(self, batch_size, length=12, grow=None):
        self.batch_size, self.length, self.grow, self.logs = batch_size, length, grow, []

    def __len__(self):
        return self.length if self.grow is None else int(np.ceil(self.length / self.batch_size))

    def __getitem__(self, idx):
        self.logs.append(idx)
        rng = np.random.default_rng(idx)
        return ([rng.random((self.batch_size, 3)), rng.random((self.batch_size, 3))],
                [rng.random((self.batch_size, 4)), rng.random((self.batch_size, 3))])

    def on_epoch_end(self):
        if self.grow is not None:
            self.batch_size = self.grow(self.batch_size)


class Tracker(Callback):
    def __init__(self):
        super().__init__()
        self.batches, self.steps = [], []

    def set_params(self, params):
        super().set_params(params)
        self.steps.append(params.get("steps"))

    def on_batch_begin(self, batch, logs=None):
        self.batches.append(batch)


def _model():
    a, b = Input((3,)), Input((3,))
    model = Model([a, b], [Dense(4)(a), Dense(3)(b)])
    model.compile("rmsprop", "mse")
    return model


@pytest.mark.parametrize("workers, verbose", [(0, 0), (0, 1), (1, 1)])
def test_every_batch_is_read_once_per_epoch(workers, verbose):
    train, val = Counted(3), Counted(4)
    tracker = Tracker()
    _model().fit_generator(train, epochs=5, validation_data=val, workers=workers, verbose=verbose,
                           callbacks=[tracker])
    assert tracker.batches == list(range(12)) * 5
    assert len(train.logs) == 12 * 5 and sorted(train.logs) == sorted(list(range(12)) * 5)
    assert len(val.logs) == 12 * 5


def test_a_sequence_changing_its_length_gets_its_new_steps_each_epoch():
    train = Counted(3, 20, grow=lambda n: n + 2)
    tracker = Tracker()
    _model().fit_generator(train, epochs=5, validation_data=Counted(4), validation_steps=3,
                           max_queue_size=1, verbose=0, callbacks=[tracker])
    assert tracker.batches == [*range(7), *range(4), *range(3), *range(3), *range(2)]
    assert tracker.steps[:5] == [7, 4, 3, 3, 2]
