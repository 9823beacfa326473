"""Deterministic, learnable synthetic data for offline benchmarks and examples.

Each class has a fixed random prototype image; a sample is its class prototype blended with
uniform noise, so a model can learn it (accuracy well above chance after an epoch) while the
data never leaves the machine. Same arguments, same arrays, on every machine.

Example::

    >>> from arignote.datasets import synthetic
    >>> x, y = synthetic(shape=(32, 32, 3), classes=10, samples=100, seed=0)
    >>> x.shape, x.dtype, y.shape, y.dtype, float(x.min()) >= 0.0, float(x.max()) <= 1.0
    ((100, 32, 32, 3), dtype('float32'), (100,), dtype('int64'), True, True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["synthetic"]


def synthetic(shape: Sequence[int] = (32, 32, 3), classes: int = 10, samples: int = 1000,
              seed: int = 0, noise: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)``: ``samples`` float32 arrays of ``shape`` in [0, 1] and int64 labels in [0, classes).

    ``noise`` in [0, 1] is the share of each sample that is random (0: every sample of a class is
    identical; 1: nothing to learn). Labels cycle through the classes, then are shuffled, so every
    class is equally represented.
    """
    shape = tuple(int(s) for s in shape)
    if not shape or any(s <= 0 for s in shape):
        raise ValueError(f"synthetic: shape={shape!r} must be a non-empty tuple of positive sizes")
    if classes < 2 or samples < 1:
        raise ValueError(f"synthetic: need classes >= 2 and samples >= 1 "
                         f"(got classes={classes}, samples={samples})")
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"synthetic: noise={noise!r} must be in [0, 1]")
    rng = np.random.default_rng(seed)
    prototypes = rng.random((classes, *shape), dtype=np.float32)
    y = rng.permutation(np.arange(samples) % classes).astype(np.int64)
    x = (1.0 - noise) * prototypes[y] + noise * rng.random((samples, *shape), dtype=np.float32)
    return x.astype(np.float32, copy=False), y
