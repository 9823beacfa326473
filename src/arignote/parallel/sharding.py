"""Global-batch arithmetic for data parallel training (pure, tested without processes).

The batch the user writes is the global batch, for every kind of input. Every rank sees the same
sequence of global batches (the same epoch order) and takes its own rows of each one:
:func:`row_range` splits ``b`` rows into ``W`` contiguous, as-even-as-possible parts, rank ``r``
taking part ``r`` (Accelerate's ``split_batches=True``). So the ranks together run exactly the
global batch a single process would run, step for step, and steps per epoch do not depend on the
number of processes.

A rank's share of a batch can differ by one row from another's (``b`` not a multiple of ``W``), and
the epoch's last batch can have fewer rows than ranks. The loop weights each rank's loss by
``rows * W / b`` (DDP averages the ranks' gradients), so the update is the mean over the global
batch whatever the split; a rank with no row of a training batch runs one padding row with
weight 0 (every rank must take part in the gradient reduction) that is never counted in a metric.

Example::

    >>> [row_range(5, 2, r) for r in range(2)]
    [(0, 3), (3, 5)]
    >>> row_range(1, 2, 1)          # the last batch of an epoch of 9 with batch 4 on 2 ranks
    (1, 1)
    >>> rank_weight(3, 5, 2)        # 3 rows of a global batch of 5 on 2 ranks
    1.2
"""

from __future__ import annotations

__all__ = ["row_range", "rank_weight", "reassemble_order"]


def row_range(rows: int, world_size: int, rank: int) -> tuple[int, int]:
    """Rank ``rank``'s ``(start, stop)`` rows of a global batch of ``rows`` (``torch.tensor_split``
    sizes: the first ``rows % world_size`` ranks take one row more)."""
    base, extra = divmod(int(rows), int(world_size))
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def rank_weight(rows: int, global_rows: int, world_size: int) -> float:
    """The factor on a rank's mean loss so that DDP's average of the ranks' gradients is the mean
    gradient over the global batch: ``rows * W / global_rows`` (1.0 for an even split)."""
    return rows * world_size / global_rows


def reassemble_order(global_rows: list[int], world_size: int) -> list[tuple[int, int, int]]:
    """How to put predictions back in input order: for every batch and rank, ``(rank, start, stop)``
    in the rank's concatenated outputs, in the order the rows appear in the input.

    >>> reassemble_order([3, 1], 2)
    [(0, 0, 2), (1, 0, 1), (0, 2, 3)]
    """
    cursor = [0] * world_size
    out = []
    for rows in global_rows:
        for rank in range(world_size):
            a, b = row_range(rows, world_size, rank)
            if b > a:
                out.append((rank, cursor[rank], cursor[rank] + b - a))
                cursor[rank] += b - a
    return out
