"""K's choices between tensors, and the one operation that depends on the learning phase:
``K.switch`` (elementwise ``where``), ``K.in_train_phase`` / ``K.in_test_phase`` (a branch by the
phase, :func:`arignote.graph.state.phase` when not given) and ``K.dropout``.

Example::

    >>> import torch
    >>> in_train_phase(torch.ones(1), torch.zeros(1), training=False)
    tensor([0.])
    >>> switch(torch.tensor([True, False]), 1.0, 0.0)
    tensor([1., 0.])
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote.graph import state
from arignote.layers.op_layer import symbolic
from arignote.ops.arguments import _t

__all__ = ["switch", "in_train_phase", "in_test_phase", "dropout"]


@symbolic
def switch(condition: Any, then_expression: Any, else_expression: Any) -> torch.Tensor:
    """Elementwise ``where`` (a scalar condition picks one branch), callables allowed as Keras 2."""
    a = then_expression() if callable(then_expression) else then_expression
    b = else_expression() if callable(else_expression) else else_expression
    cond = _t(condition)
    if cond.dim() == 0:
        return _t(a) if bool(cond) else _t(b)
    a, b = _t(a), _t(b)
    while cond.dim() < a.dim():
        cond = cond.unsqueeze(-1)
    return torch.where(cond.bool(), a, b)


def in_train_phase(x: Any, alt: Any, training: Any = None) -> Any:
    """``x`` while training, ``alt`` otherwise (``training=None``: the current learning phase)."""
    if training is None:
        training = state.phase()
    if isinstance(training, (bool, int)) or (isinstance(training, torch.Tensor) and training.dim() == 0):
        chosen = x if bool(training) else alt
        return chosen() if callable(chosen) else chosen
    return switch(training, x, alt)


def in_test_phase(x: Any, alt: Any, training: Any = None) -> Any:
    return in_train_phase(alt, x, training=training)


@symbolic
def dropout(x: Any, level: float, noise_shape: Any = None, seed: Any = None) -> torch.Tensor:
    """Inverted dropout (always on, as Keras's ``K.dropout``; wrap it in ``in_train_phase``).

    ``noise_shape``: the shape of the keep/drop mask, broadcast over ``x`` (``None`` entries take
    ``x``'s size). ``seed``: the mask comes from a ``torch.Generator`` seeded with it on ``x``'s device,
    so a seed gives the same mask every call and leaves torch's global RNG alone (Keras 2.3.1 seeds a
    random stream per ``K.dropout`` call; its compiled graph then moves that stream on per run, while
    arignote runs the call again, so a seeded mask inside a model repeats every batch).

    Example::

        >>> x = torch.ones(2, 6)
        >>> bool((dropout(x, 0.5, seed=1) == dropout(x, 0.5, seed=1)).all())
        True
        >>> dropout(x, 0.5, noise_shape=(2, 1), seed=1).unique(dim=1).shape  # one decision per row
        torch.Size([2, 1])
    """
    x = _t(x)
    level = float(level)
    if not 0.0 <= level < 1.0:
        raise ValueError(f"Dropout level must be in interval [0, 1[ (K.dropout got level={level}: the "
                         "fraction of entries set to 0)")
    if noise_shape is None and seed is None:
        return F.dropout(x, level, True)
    shape = tuple(x.shape) if noise_shape is None else tuple(
        int(d) if d is not None else s for d, s in zip(noise_shape, x.shape))
    generator = None
    if seed is not None:
        generator = torch.Generator(device=x.device)
        generator.manual_seed(int(seed))
    keep = (torch.rand(shape, generator=generator, device=x.device) >= level).to(x.dtype)
    return x * keep / (1.0 - level)
