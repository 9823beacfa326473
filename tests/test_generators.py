"""Keras 2 data feeding: ``Sequence``, ``fit_generator``/``evaluate_generator``/``predict_generator``,
``validation_steps``, ``validation_freq``, ``workers`` (threads) and their bad-input errors."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
import torch

from arignote.layers import Dense
from arignote.models import Sequential
from arignote.utils import Sequence
from parallel_helpers import _run, _write

RNG = np.random.default_rng(0)
X = RNG.normal(size=(64, 5)).astype("float32")
Y = (X @ RNG.normal(size=(5, 1))).astype("float32")


class Batches(Sequence):
    """8 batches of 8 samples; records the order of the fetches and the epoch ends."""

    def __init__(self, x=X, y=Y, size=8, with_y=True):
        self.x, self.y, self.size, self.with_y = x, y, size, with_y
        self.fetched, self.ends, self.threads = [], 0, set()

    def __len__(self):
        return -(-len(self.x) // self.size)

    def __getitem__(self, i):
        self.fetched.append(i)
        self.threads.add(threading.current_thread().name)
        sl = slice(i * self.size, (i + 1) * self.size)
        return (self.x[sl], self.y[sl]) if self.with_y else self.x[sl]

    def on_epoch_end(self):
        self.ends += 1


def _model(seed=0):
    torch.manual_seed(seed)
    m = Sequential([Dense(4, activation="tanh", input_shape=(5,)), Dense(1)])
    m.compile("sgd", "mse")
    return m


def test_sequence_epochs_visit_every_batch_once_shuffled_and_call_on_epoch_end():
    seq = Batches()
    torch.manual_seed(1)
    h = _model().fit(seq, epochs=3, verbose=0, workers=0)
    assert len(h.history["loss"]) == 3 and seq.ends == 3
    # fit looks at batch 0 before training (the checks; the memory plan when shown) and trains on
    # that read: 3 epochs of 8 batches, each read once per epoch, as Keras 2.3.1 reads them
    assert seq.fetched[:1] == [0] and len(seq.fetched) == 24
    epochs = [seq.fetched[8 * e: 8 * (e + 1)] for e in range(3)]
    assert all(sorted(e) == list(range(8)) for e in epochs)
    assert any(e != list(range(8)) for e in epochs)  # shuffled
    seq2 = Batches()
    _model().fit(seq2, epochs=2, verbose=0, shuffle=False, workers=0)
    assert seq2.fetched == list(range(8)) * 2


def test_sequence_training_equals_array_training_in_order():
    a, b = _model(), _model()
    a.fit(Batches(), epochs=2, verbose=0, shuffle=False, workers=0)
    b.fit(X, Y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-6, atol=1e-7)


def test_worker_threads_fetch_ahead_in_the_same_order():
    a, b = _model(), _model()
    seq_a, seq_b = Batches(), Batches()
    a.fit(seq_a, epochs=2, verbose=0, shuffle=False, workers=0)
    b.fit(seq_b, epochs=2, verbose=0, shuffle=False, workers=2, max_queue_size=3)
    # two threads may finish fetches out of order; the batches still reach the loop in order
    assert sorted(seq_b.fetched[:8]) == sorted(seq_b.fetched[8:]) == list(range(8))
    assert any(t.startswith("arignote-sequence") for t in seq_b.threads)
    assert not any(t.startswith("arignote-sequence") for t in seq_a.threads)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-6, atol=1e-7)  # batches used in order
    assert not [t for t in threading.enumerate() if t.name.startswith("arignote-sequence")]  # pools closed


def test_steps_per_epoch_shorter_and_longer_than_a_sequence():
    seq = Batches()
    h = _model().fit(seq, epochs=2, steps_per_epoch=3, verbose=0, shuffle=False, workers=0)
    assert seq.fetched == [0, 1, 2, 0, 1, 2] and len(h.history["loss"]) == 2
    seq = Batches()
    _model().fit(seq, epochs=1, steps_per_epoch=10, verbose=0, shuffle=False, workers=0)
    assert seq.fetched == list(range(8)) + [0, 1]  # a second pass over the sequence


def test_fit_generator_with_generators_and_validation_steps():
    def gen(x, y, size=16):
        while True:
            for i in range(0, len(x), size):
                yield x[i:i + size], y[i:i + size]

    m = _model()
    h = m.fit_generator(gen(X, Y), steps_per_epoch=4, epochs=2, verbose=0,
                        validation_data=gen(X[:32], Y[:32]), validation_steps=2)
    assert len(h.history["val_loss"]) == 2
    assert h.history["val_loss"][-1] == pytest.approx(m.evaluate(X[:32], Y[:32], verbose=0), rel=1e-5)
    with pytest.raises(ValueError, match="validation_data is a generator.*validation_steps=N"):
        m.fit_generator(gen(X, Y), steps_per_epoch=4, validation_data=gen(X, Y), verbose=0)
    with pytest.raises(ValueError, match="x is a generator.*steps_per_epoch=N"):
        m.fit_generator(gen(X, Y), verbose=0)


def test_float_step_counts_run_ceil_steps_as_keras():
    # Keras 2.3.1 loops `while steps_done < steps`: steps_per_epoch=len(x_train) / 32 (the keras.io
    # ImageDataGenerator example) is a float, and 2.5 runs 3 batches
    seq = Batches()
    h = _model().fit_generator(seq, steps_per_epoch=2.5, epochs=2, verbose=0, shuffle=False, workers=0,
                               validation_data=Batches(), validation_steps=64 / 16)
    assert seq.fetched == [0, 1, 2, 0, 1, 2] and h.params["steps"] == 3
    assert len(h.history["val_loss"]) == 2
    m = _model()
    seq = Batches()
    m.evaluate_generator(seq, steps=1.5)
    assert seq.fetched == [0, 1]  # the look at batch 0 before the loop is the loop's read of it
    assert m.predict_generator(Batches(), steps=len(X) / 8).shape == (64, 1)
    assert m.predict_generator(Batches(), steps=np.float64(1.2)).shape == (16, 1)
    for bad in (0.0, -2.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="steps_per_epoch must be a positive whole number"):
            _model().fit_generator(Batches(), steps_per_epoch=bad, verbose=0)


def test_validation_freq():
    h = _model().fit(X, Y, epochs=4, verbose=0, validation_data=(X, Y), validation_freq=2)
    assert len(h.history["loss"]) == 4 and len(h.history["val_loss"]) == 2
    h = _model().fit(X, Y, epochs=4, verbose=0, validation_data=(X, Y), validation_freq=[1, 4])
    assert len(h.history["val_loss"]) == 2


def test_evaluate_and_predict_generator_on_a_sequence():
    m = _model()
    m.fit(X, Y, epochs=1, verbose=0)
    assert m.evaluate_generator(Batches()) == pytest.approx(m.evaluate(X, Y, verbose=0), rel=1e-5)
    out = m.predict_generator(Batches(with_y=False), workers=2)
    np.testing.assert_allclose(out, m.predict(X), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.predict_generator(Batches()), m.predict(X), rtol=1e-5, atol=1e-6)
    assert m.predict_generator(Batches(), steps=2).shape == (16, 1)


@pytest.mark.parametrize("kwargs, match", [
    ({"class_weight": "balanced"}, "class_weight must be a dict"),
    ({"workers": -1}, "workers must be a whole number >= 0"),
    ({"max_queue_size": 0}, "max_queue_size"),
    ({"validation_freq": 0}, "validation_freq must be"),
    ({"validation_steps": 0}, "validation_steps"),
])
def test_bad_feeding_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _model().fit_generator(Batches(), epochs=1, verbose=0, **kwargs)


def test_training_batches_without_targets_are_an_error():
    with pytest.raises(ValueError, match="batch 0 of x has no targets"):
        _model().fit(Batches(with_y=False), epochs=1, verbose=0)


SEQ_DDP = """
import json, os, sys
import numpy as np, torch
import arignote
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.utils import Sequence

out = sys.argv[1]
arignote.configure(device="cpu", cpu_processes=2)
torch.manual_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 5)).astype("float32")
y = (x @ rng.normal(size=(5, 1))).astype("float32")


class Batches(Sequence):
    def __init__(self):
        self.fetched, self.ends = [], 0
    def __len__(self):
        return 8
    def __getitem__(self, i):
        self.fetched.append(i)
        return x[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8]
    def on_epoch_end(self):
        self.ends += 1


seq = Batches()
model = Sequential([Dense(4, activation="tanh", input_shape=(5,)), Dense(1)])
model.compile("sgd", "mse")
h = model.fit(seq, epochs=2, verbose=0, workers=0)
rank = model._trainer.strategy.rank
with open(os.path.join(out, f"rank{rank}.json"), "w") as fh:
    json.dump({"fetched": seq.fetched, "ends": seq.ends, "loss": h.history["loss"]}, fh)
"""


def test_a_sequence_is_split_over_data_parallel_ranks(tmp_path):
    script = _write(tmp_path, "train_seq.py", SEQ_DDP)
    r = _run([str(script), str(tmp_path)])
    assert r.returncode == 0, r.stderr
    ranks = [json.loads((tmp_path / f"rank{i}.json").read_text()) for i in range(2)]
    orders = []
    for epoch in range(2):
        # every rank fetches the 8 global batches in the same shuffled order (batch 0 read first, by
        # the look before training, and trained on in its place) and trains on its rows of each
        # (the batch is the global batch: 8 steps, as one process)
        assert all(len(rk["fetched"]) == 16 for rk in ranks), ranks
        shares = [rk["fetched"][8 * epoch: 8 * (epoch + 1)] for rk in ranks]
        assert shares[0] == shares[1] and sorted(shares[0]) == list(range(8)), shares
        orders.append(shares[0])
    assert orders[0] != orders[1]
    assert [rk["ends"] for rk in ranks] == [2, 2]
    assert ranks[0]["loss"] == ranks[1]["loss"]  # averaged over the ranks
