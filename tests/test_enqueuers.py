"""Keras 2 enqueuers (``OrderedEnqueuer``, ``GeneratorEnqueuer``) and ``use_multiprocessing`` in fit:
the order of the batches (Keras 2's ``random.shuffle`` per epoch), ``on_epoch_end`` between epochs,
worker processes really computing the batches, a finite generator ending the stream, errors."""

from __future__ import annotations

import os
import random
import threading
import time

import numpy as np
import pytest
import torch

from arignote.layers import Dense
from arignote.models import Sequential
from arignote.training import data as training_data
from arignote.utils import (
    GeneratorEnqueuer,
    OrderedEnqueuer,
    Sequence,
    SequenceEnqueuer,
    data_utils,
    enqueuers,
)


class Numbers(Sequence):
    """Batch i is ``[i, pid]``; counts the epoch ends. Holds a lambda: not picklable."""

    def __init__(self, n=5):
        self.n, self.ends = n, 0
        self.unpicklable = lambda: None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.array([i, os.getpid()])

    def on_epoch_end(self):
        self.ends += 1


def _take(enqueuer, count):
    stream = enqueuer.get()
    out = [next(stream) for _ in range(count)]
    enqueuer.stop()
    return out


def test_the_names_are_keras_2s_and_in_data_utils_too():
    assert data_utils.OrderedEnqueuer is OrderedEnqueuer and data_utils.GeneratorEnqueuer is GeneratorEnqueuer
    assert issubclass(OrderedEnqueuer, SequenceEnqueuer) and issubclass(GeneratorEnqueuer, SequenceEnqueuer)
    # fit's queue is the enqueuers' queue: one implementation
    assert training_data.prefetched is enqueuers.prefetched


def test_ordered_enqueuer_runs_epoch_after_epoch_in_order_and_calls_on_epoch_end():
    seq = Numbers(5)
    enq = OrderedEnqueuer(seq)
    enq.start(workers=2, max_queue_size=3)
    assert enq.is_running()
    got = [int(b[0]) for b in _take(enq, 12)]
    assert got == [0, 1, 2, 3, 4] * 2 + [0, 1]
    assert seq.ends >= 2
    assert not enq.is_running()


def test_ordered_enqueuer_shuffles_each_epoch_with_pythons_random_as_keras_2():
    random.seed(7)
    expected = []
    for _ in range(3):
        order = list(range(6))
        random.shuffle(order)
        expected += order
    random.seed(7)
    enq = OrderedEnqueuer(Numbers(6), shuffle=True)
    enq.start(workers=1, max_queue_size=2)
    assert [int(b[0]) for b in _take(enq, 18)] == expected


def test_use_multiprocessing_computes_batches_in_worker_processes_without_pickling_the_sequence():
    enq = OrderedEnqueuer(Numbers(4), use_multiprocessing=True)
    enq.start(workers=2, max_queue_size=4)
    batches = _take(enq, 8)
    assert [int(b[0]) for b in batches] == [0, 1, 2, 3] * 2
    pids = {int(b[1]) for b in batches}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2 * 2  # a pool per epoch, 2 workers each


def test_a_worker_error_reaches_the_consumer_and_stops_the_enqueuer():
    class Broken(Numbers):
        def __getitem__(self, i):
            if i == 2:
                raise KeyError("batch 2 is corrupt")
            return super().__getitem__(i)

    enq = OrderedEnqueuer(Broken())
    enq.start(workers=2, max_queue_size=2)
    stream = enq.get()
    assert int(next(stream)[0]) == 0 and int(next(stream)[0]) == 1
    with pytest.raises(KeyError, match="batch 2 is corrupt"):
        next(stream)
    assert not enq.is_running()


def test_generator_enqueuer_ends_with_a_finite_generator_and_skips_none():
    def gen():
        yield from (1, None, 2, 3)

    enq = GeneratorEnqueuer(gen())
    enq.start(workers=3, max_queue_size=2)
    assert list(enq.get()) == [1, 2, 3]
    assert not enq.is_running()


def test_generator_enqueuer_draws_an_endless_generator_until_stopped():
    def gen():
        i = 0
        while True:
            yield i
            i += 1

    enq = GeneratorEnqueuer(gen(), wait_time=0.05)
    enq.start(max_queue_size=5)
    assert _take(enq, 7) == list(range(7))
    assert not enq.run_thread.is_alive()


def test_stop_unblocks_workers_waiting_on_a_full_queue():
    enq = OrderedEnqueuer(Numbers(50))
    enq.start(workers=1, max_queue_size=1)
    time.sleep(0.3)  # the queue is full, the producer waits
    t0 = time.perf_counter()
    enq.stop(timeout=5)
    assert not enq.run_thread.is_alive() and time.perf_counter() - t0 < 5


def test_bad_use_is_one_clear_error():
    with pytest.raises(ValueError, match="cannot be shared by processes.*OrderedEnqueuer"):
        GeneratorEnqueuer(iter([1]), use_multiprocessing=True)
    with pytest.raises(RuntimeError, match=r"before start\(\)"):
        next(OrderedEnqueuer(Numbers()).get())
    with pytest.raises(ValueError, match="workers must be a whole number >= 1"):
        OrderedEnqueuer(Numbers()).start(workers=0)


# ---------------------------------------------------------------------- fit with use_multiprocessing

RNG = np.random.default_rng(0)
X = RNG.normal(size=(48, 5)).astype("float32")
Y = (X @ RNG.normal(size=(5, 1))).astype("float32")


class PidBatches(Sequence):
    """6 batches of 8 samples; each fetch leaves a file named after the fetching process."""

    def __init__(self, folder):
        self.folder = folder

    def __len__(self):
        return 6

    def __getitem__(self, i):
        open(os.path.join(self.folder, f"{os.getpid()}-{threading.get_ident()}-{i}"), "w").close()
        return X[i * 8:(i + 1) * 8], Y[i * 8:(i + 1) * 8]


def _trained(seq, **kwargs):
    torch.manual_seed(0)
    m = Sequential([Dense(3, activation="tanh", input_shape=(5,)), Dense(1)])
    m.compile("sgd", "mse")
    m.fit_generator(seq, epochs=2, verbose=0, shuffle=False, **kwargs)
    return [w.copy() for w in m.get_weights()]


def test_fit_with_use_multiprocessing_fetches_in_processes_and_trains_the_same(tmp_path):
    procs, threads = tmp_path / "procs", tmp_path / "threads"
    procs.mkdir()
    threads.mkdir()
    in_processes = _trained(PidBatches(str(procs)), workers=2, use_multiprocessing=True)
    in_threads = _trained(PidBatches(str(threads)), workers=2)
    for a, b in zip(in_processes, in_threads):
        np.testing.assert_array_equal(a, b)
    fetches = [(int(name.split("-")[0]), int(name.split("-")[2])) for name in os.listdir(procs)]
    # fit reads batch 0 once in the main process to check it and trains on that read (the forked
    # workers inherit it), then the workers read the rest: 2 epochs x 6 batches in all, as Keras
    assert [i for pid, i in fetches if pid == os.getpid()] == [0]
    in_workers = [i for pid, i in fetches if pid != os.getpid()]
    assert sorted(in_workers) == sorted([*range(1, 6), *range(6)])
    assert {int(name.split("-")[0]) for name in os.listdir(threads)} == {os.getpid()}


def test_fit_with_a_generator_and_use_multiprocessing_warns_and_reads_it_once():
    seen = []

    def gen():
        for i in range(1000):
            seen.append(i)
            yield X[:8], Y[:8]

    torch.manual_seed(0)
    m = Sequential([Dense(1, input_shape=(5,))])
    m.compile("sgd", "mse")
    with pytest.warns(UserWarning, match="use_multiprocessing=True applies to a Sequence.*repeats its data"):
        m.fit_generator(gen(), steps_per_epoch=3, epochs=2, verbose=0, workers=2, use_multiprocessing=True)
    assert seen == list(range(len(seen))) and len(seen) <= 7  # each item once, in order
