"""Keras 2 enqueuers: ``OrderedEnqueuer`` (a ``Sequence``'s batches in order, epoch after epoch) and
``GeneratorEnqueuer`` (a generator's batches), fetched ahead by worker threads or processes into a
bounded queue; ``SequenceEnqueuer`` is their base. ``fit``/``evaluate``/``predict`` (and the
``*_generator`` methods) read a Sequence through the same queue, :func:`prefetched`.

``use_multiprocessing=True`` runs ``sequence[i]`` in worker processes (forked where the platform
can, so the Sequence need not be picklable; the batches come back pickled). A generator cannot be
shared by processes: Keras 2 gave each process its own copy, which repeats the data, so
``GeneratorEnqueuer(use_multiprocessing=True)`` is refused with what to use instead.

Example::

    >>> import numpy as np
    >>> from arignote.utils import Sequence, OrderedEnqueuer
    >>> class Tens(Sequence):
    ...     def __len__(self): return 3
    ...     def __getitem__(self, i): return np.full(2, 10 * i)
    >>> enqueuer = OrderedEnqueuer(Tens())
    >>> enqueuer.start(workers=2, max_queue_size=4)
    >>> stream = enqueuer.get()
    >>> [int(next(stream)[0]) for _ in range(4)]  # endless: epoch after epoch
    [0, 10, 20, 0]
    >>> enqueuer.stop()
"""

from __future__ import annotations

import multiprocessing
import queue
import random
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["SequenceEnqueuer", "OrderedEnqueuer", "GeneratorEnqueuer", "prefetched"]

_WORKER_SEQUENCE: Any = None  # the Sequence of a worker process (set by _init_worker)


def _init_worker(sequence: Any) -> None:
    global _WORKER_SEQUENCE
    _WORKER_SEQUENCE = sequence


def _worker_item(index: int) -> Any:
    return _WORKER_SEQUENCE[index]


class _ProcessPool:
    """``submit(i)`` -> a future of ``sequence[i]`` computed in one of ``workers`` processes."""

    def __init__(self, sequence: Any, workers: int) -> None:
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else None)
        self._pool = context.Pool(workers, initializer=_init_worker, initargs=(sequence,))

    def submit(self, index: int) -> Any:
        return _AsyncResult(self._pool.apply_async(_worker_item, (index,)))

    def shutdown(self) -> None:
        self._pool.terminate()
        self._pool.join()


class _AsyncResult:
    __slots__ = ("_result",)

    def __init__(self, result: Any) -> None:
        self._result = result

    def result(self) -> Any:
        return self._result.get()  # re-raises the worker's exception


class _ThreadPool:
    def __init__(self, sequence: Any, workers: int) -> None:
        self._getitem = sequence.__getitem__
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="arignote-sequence")

    def submit(self, index: int) -> Any:
        return self._pool.submit(self._getitem, index)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def prefetched(sequence: Any, indices: Iterable[int], workers: int, max_queue_size: int,
               use_multiprocessing: bool = False) -> Iterator[Any]:
    """``sequence[i]`` for each index, in order, computed by ``workers`` threads (or processes)
    up to ``max_queue_size`` batches ahead. The workers stop when the iteration ends or is closed.

    >>> list(prefetched([5, 6, 7], [2, 0], workers=2, max_queue_size=1))
    [7, 5]
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1 to fetch ahead, got {workers}")
    pool: Any = (_ProcessPool if use_multiprocessing else _ThreadPool)(sequence, workers)
    pending: deque = deque()
    it = iter(indices)
    depth = max(1, int(max_queue_size))
    try:
        for i in it:
            pending.append(pool.submit(i))
            if len(pending) >= depth:
                break
        while pending:
            ready = pending.popleft().result()
            nxt = next(it, None)
            if nxt is not None:
                pending.append(pool.submit(nxt))
            yield ready
    finally:
        pool.shutdown()


class SequenceEnqueuer:
    """Base of the enqueuers (Keras 2 ``SequenceEnqueuer``): ``start(workers, max_queue_size)``,
    ``get()`` (a generator of batches), ``is_running()``, ``stop(timeout)``. A subclass defines
    :meth:`_batches`, the endless stream its workers produce.
    """

    def __init__(self, sequence: Any, use_multiprocessing: bool = False) -> None:
        self.sequence = sequence
        self.use_multiprocessing = bool(use_multiprocessing)
        self.workers = 0
        self.queue: queue.Queue | None = None
        self.run_thread: threading.Thread | None = None
        self.stop_signal: threading.Event | None = None

    def is_running(self) -> bool:
        return self.stop_signal is not None and not self.stop_signal.is_set()

    def start(self, workers: int = 1, max_queue_size: int = 10) -> None:
        """Start ``workers`` workers filling a queue of at most ``max_queue_size`` batches."""
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
        self.workers = workers
        self.queue = queue.Queue(max(1, int(max_queue_size)))
        self.stop_signal = threading.Event()
        self.run_thread = threading.Thread(target=self._run, name="arignote-enqueuer", daemon=True)
        self.run_thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the workers and wait up to ``timeout`` seconds for them (Keras 2 signature)."""
        if self.stop_signal is None:
            return
        self.stop_signal.set()
        if self.queue is not None:
            with self.queue.mutex:  # unblock a worker waiting on a full queue
                self.queue.queue.clear()
                self.queue.not_full.notify_all()
        if self.run_thread is not None:
            self.run_thread.join(timeout)

    def get(self) -> Iterator[Any]:
        """The batches, as the workers produce them; ends when stopped (or, for a finite generator,
        when it is exhausted). A worker's exception is raised here, and stops the enqueuer."""
        if self.queue is None:
            raise RuntimeError(f"{type(self).__name__}.get() before start(): call "
                               "enqueuer.start(workers=1, max_queue_size=10) first")
        while self.is_running():
            try:
                kind, value = self.queue.get(timeout=0.1)
            except queue.Empty:
                continue
            if kind == "batch":
                if value is not None:  # Keras skips None batches
                    yield value
            elif kind == "error":
                self.stop()
                raise value
            else:  # "end": a finite generator is exhausted
                self.stop()
                return

    def _run(self) -> None:
        assert self.queue is not None and self.stop_signal is not None
        try:
            for batch in self._batches():
                if not self._put(("batch", batch)):
                    return
            self._put(("end", None))
        except Exception as exc:  # handed to the consumer, who raises it
            self._put(("error", exc))

    def _put(self, item: tuple) -> bool:
        assert self.queue is not None and self.stop_signal is not None
        while not self.stop_signal.is_set():
            try:
                self.queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _batches(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define _batches()")


class OrderedEnqueuer(SequenceEnqueuer):
    """A ``Sequence``'s batches in order (shuffled per epoch with ``shuffle=True``, by Python's
    ``random`` as Keras 2), epoch after epoch, calling ``sequence.on_epoch_end()`` between epochs."""

    def __init__(self, sequence: Any, use_multiprocessing: bool = False, shuffle: bool = False) -> None:
        super().__init__(sequence, use_multiprocessing)
        self.shuffle = bool(shuffle)
        self.end_of_epoch_signal = threading.Event()

    def join_end_of_epoch(self) -> None:
        """Keras 2.3.1's: wait (up to 30 s) until the workers have called ``sequence.on_epoch_end()``
        after the epoch whose batches were just taken, so the sequence's new state (a new length)
        is what the next ``get()`` items come from."""
        self.end_of_epoch_signal.wait(timeout=30)
        self.end_of_epoch_signal.clear()

    def _batches(self) -> Iterator[Any]:
        assert self.stop_signal is not None
        while not self.stop_signal.is_set():
            order = list(range(len(self.sequence)))
            if self.shuffle:
                random.shuffle(order)
            # the workers keep busy `workers` batches ahead of the queue, as Keras 2's queue of futures
            batches = prefetched(self.sequence, order, self.workers, self.workers, self.use_multiprocessing)
            try:
                for batch in batches:
                    yield batch
                    if self.stop_signal.is_set():
                        return
            finally:
                batches.close()
            self.sequence.on_epoch_end()
            self.end_of_epoch_signal.set()


class GeneratorEnqueuer(SequenceEnqueuer):
    """A generator's batches, drawn by a background thread into the queue (a Python generator runs
    in one thread at a time, so ``workers`` threads would take turns; one does the same work).
    A finite generator ends ``get()``.
    ``wait_time`` is accepted and unused, as in Keras 2.3.1; ``random_seed`` seeds numpy's
    generator of each worker process in Keras, and has no use with threads."""

    def __init__(self, sequence: Any, use_multiprocessing: bool = False, wait_time: Any = None,
                 random_seed: Any = None) -> None:
        if use_multiprocessing:
            raise ValueError(
                "GeneratorEnqueuer(use_multiprocessing=True): a generator cannot be shared by processes "
                "(Keras 2 gave each process a copy, which repeats the data); use threads "
                "(use_multiprocessing=False), or a Sequence with "
                "OrderedEnqueuer(seq, use_multiprocessing=True)")
        super().__init__(sequence, use_multiprocessing)
        self.random_seed = random_seed
        self._lock = threading.Lock()

    def _batches(self) -> Iterator[Any]:
        assert self.stop_signal is not None
        it = iter(self.sequence)
        while not self.stop_signal.is_set():
            with self._lock:
                try:
                    batch = next(it)
                except StopIteration:
                    return
            yield batch
