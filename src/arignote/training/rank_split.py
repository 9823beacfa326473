"""Each data-parallel rank's share of an iterable of batches (arrays and Sequences are split by
index in the loop; see :mod:`arignote.parallel.sharding`).

* a torch ``DataLoader`` over a map-style dataset is rebuilt with a ``DistributedSampler``
  (this rank's samples, shuffled when the original shuffled, seed 0 + epoch: the same order on
  every rank; equal lengths, padded as ``DistributedSampler`` pads). Its ``batch_size`` stays
  per process, as in PyTorch Lightning: the global batch is ``world_size`` times it;
* a DataLoader that already has a ``DistributedSampler``, or reads an ``IterableDataset`` (whose
  code decides what each rank reads), is used as it is; a DataLoader subclass without one is an
  error (rebuilding it as a plain DataLoader would drop its own state);
* a list or tuple of batches: every ``world_size``-th batch from ``rank`` on, padded to equal counts;
* anything else (a generator, a custom iterable) cannot be split: a clear error names what to pass.

Example::

    >>> split_for_rank([10, 11, 12, 13, 14], rank=1, world_size=2)
    [11, 13, 10]
"""

from __future__ import annotations

from typing import Any

__all__ = ["split_for_rank", "set_epoch"]

_FIX = "pass a Sequence (arignote.utils.Sequence), a torch DataLoader, a list of batches, or arrays"


def split_for_rank(data: Any, rank: int, world_size: int, name: str = "x") -> Any:
    """``data`` as rank ``rank`` of ``world_size`` should read it (``data`` itself when world_size is 1)."""
    if world_size == 1:
        return data
    if isinstance(data, (list, tuple)):
        import torch

        from arignote.parallel.sharding import shard_of

        return [data[i] for i in shard_of(torch.arange(len(data)), rank, world_size).tolist()]
    from torch.utils.data import DataLoader

    if isinstance(data, DataLoader):
        return _loader_for_rank(data, rank, world_size, name)
    kind = "a generator" if iter(data) is data else f"a {type(data).__name__}"
    raise ValueError(f"{name} is {kind}, which cannot be split over the {world_size} data-parallel ranks "
                     f"(every rank would train on the same batches): {_FIX}")


def _loader_for_rank(loader: Any, rank: int, world_size: int, name: str) -> Any:
    from torch.utils.data import (
        BatchSampler,
        DataLoader,
        DistributedSampler,
        IterableDataset,
        RandomSampler,
        SequentialSampler,
    )

    if isinstance(loader.dataset, IterableDataset) or isinstance(loader.sampler, DistributedSampler):
        return loader
    inner = getattr(loader.batch_sampler, "sampler", None)
    if isinstance(inner, DistributedSampler):
        return loader
    if type(loader) is not DataLoader:  # rebuilding it as a plain DataLoader would drop its own state
        raise ValueError(f"{name} is a {type(loader).__name__} (a DataLoader subclass), which cannot be "
                         "rebuilt for each rank automatically: give it a DistributedSampler "
                         "(num_replicas=world size, rank) yourself")
    if loader.batch_sampler is not None and type(loader.batch_sampler) is not BatchSampler:
        raise ValueError(f"{name} is a DataLoader with a custom batch_sampler "
                         f"({type(loader.batch_sampler).__name__}), which cannot be split over the ranks "
                         "automatically: give it a DistributedSampler (num_replicas=world size, rank) "
                         "yourself")
    if type(loader.sampler) not in (RandomSampler, SequentialSampler):
        raise ValueError(f"{name} is a DataLoader with a custom sampler ({type(loader.sampler).__name__}), "
                         "which cannot be split over the ranks automatically: use a DistributedSampler "
                         "(num_replicas=world size, rank) in its place")
    sampler = DistributedSampler(loader.dataset, num_replicas=world_size, rank=rank,
                                 shuffle=isinstance(loader.sampler, RandomSampler), seed=0)
    kwargs = dict(batch_size=loader.batch_size, sampler=sampler, num_workers=loader.num_workers,
                  collate_fn=loader.collate_fn, pin_memory=loader.pin_memory, drop_last=loader.drop_last,
                  timeout=loader.timeout, worker_init_fn=loader.worker_init_fn,
                  multiprocessing_context=loader.multiprocessing_context, generator=loader.generator,
                  persistent_workers=loader.persistent_workers, pin_memory_device=loader.pin_memory_device)
    if loader.num_workers > 0:
        kwargs["prefetch_factor"] = loader.prefetch_factor
    return DataLoader(loader.dataset, **kwargs)


def set_epoch(data: Any, epoch: int) -> None:
    """Tell a DataLoader's ``DistributedSampler`` the epoch (its shuffle is seed + epoch)."""
    batch_sampler = getattr(data, "batch_sampler", None)
    for sampler in (getattr(data, "sampler", None), getattr(batch_sampler, "sampler", None)):
        if sampler is not None and hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
            return
