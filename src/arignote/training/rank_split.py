"""Each data-parallel rank's share of an iterable of batches, under the one batch rule: the batch
the user wrote is the global batch, and every rank takes its rows of each one
(:func:`arignote.parallel.sharding.row_range`), like Accelerate's ``split_batches=True``.

* a torch ``DataLoader`` over a map-style dataset with automatic batching is rebuilt around a
  :class:`RankBatchSampler`: the original batch sampler still makes the global batches (same
  ``batch_size``, ``drop_last``, custom batch samplers too), and each rank loads only its rows of
  each. A shuffling ``RandomSampler`` without a generator draws its seed from rank 0's torch RNG
  at each epoch, exactly as a single process would draw it, and every rank uses that seed; with
  the loader's own ``generator`` (the same in every rank's copy of the script) nothing needs to
  be shared;
* a DataLoader that already has a ``DistributedSampler`` was split by its author: each rank's
  batch is its own and the global batch is ``world_size`` times it;
* everything else (an ``IterableDataset`` loader, a list of batches, a generator, a ``Sequence``)
  is read in full on every rank, which keeps its rows of each batch: the source must yield the
  same batches on every rank (a seeded script does).

Example::

    >>> sampler = RankBatchSampler([[0, 1, 2], [3, 4, 5], [6]], rank=1, world_size=2)
    >>> list(sampler), list(sampler.shares)
    ([[2], [5], [6]], [(1, 3), (1, 3), (0, 1)])
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch

from arignote.devices import fastpaths
from arignote.parallel.sharding import row_range

__all__ = ["RankBatchSampler", "for_rank", "set_epoch"]


class RankBatchSampler:
    """This rank's indices of each global batch of ``batch_sampler`` (a padding index, the batch's
    first, when the rank has none) and, in ``shares``, ``(rows, global rows)`` per batch yielded.

    ``reseed()``, when given, runs as each pass begins (it seeds the shuffle on every rank alike).
    """

    def __init__(self, batch_sampler: Iterable[list[int]], rank: int, world_size: int,
                 reseed: Callable[[], Any] | None = None) -> None:
        self.inner = batch_sampler
        self.rank, self.world_size = rank, world_size
        self.reseed = reseed
        self.shares: deque[tuple[int, int]] = deque()

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[list[int]]:
        # a generator: this runs at the loader's first fetch of a pass, on every rank alike
        self.shares.clear()  # a pass cut short (steps_per_epoch, stop) leaves nothing behind
        if self.reseed is not None:
            self.reseed()
        for batch in self.inner:
            batch = list(batch)
            a, b = row_range(len(batch), self.world_size, self.rank)
            self.shares.append((b - a, len(batch)))
            yield batch[a:b] if b > a else batch[:1]


def for_rank(data: Any, strategy: Any) -> tuple[Any, deque | None, bool]:
    """``(source, shares, user_sharded)`` for this rank: a DataLoader rebuilt to load only this
    rank's rows (``shares`` then gives each batch's ``(rows, global rows)``), or ``data`` itself,
    read in full (``shares`` None; ``user_sharded`` when its DistributedSampler already split it)."""
    if strategy.world_size == 1:
        return data, None, False
    from torch.utils.data import DataLoader

    if not isinstance(data, DataLoader):
        return data, None, False
    return _loader_for_rank(data, strategy)


def _loader_for_rank(loader: Any, strategy: Any) -> tuple[Any, deque | None, bool]:
    from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, IterableDataset, RandomSampler

    inner = getattr(loader.batch_sampler, "sampler", None)
    if isinstance(loader.sampler, DistributedSampler) or isinstance(inner, DistributedSampler):
        return loader, None, True
    if isinstance(loader.dataset, IterableDataset) or loader.batch_sampler is None:
        return loader, None, False  # no indices to split: read in full, rows taken per batch
    if type(loader) is not DataLoader:  # rebuilding it as a plain DataLoader would drop its own state
        raise ValueError(f"the data is a {type(loader).__name__} (a DataLoader subclass), which cannot be "
                         "rebuilt for each rank automatically: give it a DistributedSampler "
                         "(num_replicas=world size, rank) yourself, or pass a plain DataLoader")
    batches, reseed = loader.batch_sampler, None
    sampler = loader.sampler
    if type(batches) is BatchSampler and type(sampler) is RandomSampler and sampler.generator is None:
        generator = torch.Generator()
        sampler = RandomSampler(sampler.data_source, replacement=sampler.replacement,
                                num_samples=sampler._num_samples, generator=generator)
        batches = BatchSampler(sampler, loader.batch_size, loader.drop_last)

        def reseed() -> None:
            # what RandomSampler draws in one process, drawn by rank 0 and used by every rank
            generator.manual_seed(strategy.broadcast_seed(
                lambda: torch.empty((), dtype=torch.int64).random_().item()))

    split = RankBatchSampler(batches, strategy.rank, strategy.world_size, reseed)
    # bound for a GPU, the rebuilt loader pins its batches in its own thread (the loop would pin them)
    pin = loader.pin_memory or fastpaths.pin_batches(strategy.device.type)
    kwargs = dict(batch_sampler=split, num_workers=loader.num_workers, collate_fn=loader.collate_fn,
                  pin_memory=pin, timeout=loader.timeout, worker_init_fn=loader.worker_init_fn,
                  multiprocessing_context=loader.multiprocessing_context, generator=loader.generator,
                  persistent_workers=loader.persistent_workers, pin_memory_device=loader.pin_memory_device)
    if loader.num_workers > 0:
        kwargs["prefetch_factor"] = loader.prefetch_factor
    return DataLoader(loader.dataset, **kwargs), split.shares, False


def set_epoch(data: Any, epoch: int) -> None:
    """Tell a DataLoader's ``DistributedSampler`` the epoch (its shuffle is seed + epoch)."""
    batch_sampler = getattr(data, "batch_sampler", None)
    for sampler in (getattr(data, "sampler", None), getattr(batch_sampler, "sampler", None)):
        if sampler is not None and hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
            return
