"""Global-batch arithmetic for data parallel training (pure, tested without processes).

``batch_size`` is the global batch: with ``W`` replicas each rank runs ``batch_size // W``
samples a step. Every rank sees the same permutation of the epoch and takes every ``W``-th
sample of it (a strided split), so step ``k`` of all ranks together is exactly samples
``k*B .. (k+1)*B - 1`` of the permutation: the same global batch a single process would run.
DDP averages the ranks' gradients, and with equal local batches the average of local means is
the mean over the global batch, so the update equals the single-process one.

Ragged epochs: when ``n`` is not a multiple of ``W`` the permutation is padded with its own first
``pad < W`` samples (as torch's ``DistributedSampler``) so every rank runs the same number of
steps (a rank that ran one step less would leave the others waiting in a collective). Nothing is
dropped; up to ``W - 1`` samples count twice in that epoch's last batch. With ``n`` a multiple of
``W`` (any global batch) the run matches a single process exactly.

Example::

    >>> import torch
    >>> perm = torch.tensor([4, 0, 3, 1, 2])
    >>> [shard_of(perm, r, 2).tolist() for r in range(2)]
    [[4, 3, 2], [0, 1, 4]]
    >>> local_batch_size(128, 2)
    64
"""

from __future__ import annotations

import torch

from arignote.config import ConfigError

__all__ = ["shard_of", "local_batch_size", "padded_length", "epoch_permutation"]


def padded_length(n: int, world_size: int) -> int:
    """Samples per rank in an epoch of ``n``: ``ceil(n / world_size)``."""
    return -(-int(n) // int(world_size))


def shard_of(perm: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """Rank ``rank``'s indices of the epoch order ``perm``: strided, padded to equal length."""
    if world_size == 1:
        return perm
    n = perm.numel()
    if n == 0:
        return perm
    total = padded_length(n, world_size) * world_size
    if total > n:
        reps = -(-total // n)
        perm = perm.repeat(reps)[:total]
    return perm[rank::world_size]


def local_batch_size(global_batch: int, world_size: int) -> int:
    """Each replica's share of the global batch; it must divide evenly (a clear error otherwise)."""
    global_batch = int(global_batch)
    if global_batch <= 0:
        raise ValueError(f"batch_size={global_batch}: the global batch must be a positive whole number")
    if global_batch % world_size:
        below = global_batch - global_batch % world_size
        above = below + world_size
        fix = f"batch_size={below} or {above}" if below else f"batch_size={above}"
        raise ConfigError(
            f"batch_size={global_batch} is the global batch, split over {world_size} replicas, so it "
            f"must be a multiple of {world_size}: use {fix}")
    return global_batch // world_size


def epoch_permutation(n: int, epoch: int, shuffle: bool, seed: int | None) -> torch.Tensor:
    """The order of one epoch on the host: identity, ``randperm`` of torch's global RNG (``seed``
    None, as a single process does), or a permutation fixed by ``seed + epoch``."""
    if not shuffle:
        return torch.arange(n)
    if seed is None:
        return torch.randperm(n)
    gen = torch.Generator().manual_seed(int(seed) + int(epoch))
    return torch.randperm(n, generator=gen)
