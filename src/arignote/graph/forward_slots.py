"""The values of one :class:`~arignote.graph.network.GraphModule` forward: the slot list (one that
makes autograd track chosen slots, for ``K.gradients`` against graph tensors in a custom loss), the
live view backend functions read while the graph runs, the input masks handed in, and the leaves of
nested outputs in slot order.

Example::

    >>> _leaves([1, (2, {"b": 4, "a": 3})])
    [1, 2, 3, 4]
"""

from __future__ import annotations

from typing import Any

import torch


def _tracked(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.detach().requires_grad_() if x.is_floating_point() else x
    if isinstance(x, (list, tuple)):
        return type(x)(_tracked(v) for v in x)
    if isinstance(x, dict):
        return {k: _tracked(v) for k, v in x.items()}
    return x


def _detached(out: Any) -> Any:
    if isinstance(out, torch.Tensor):
        return out.detach()
    if isinstance(out, (list, tuple)):
        return type(out)(_detached(o) for o in out)
    if isinstance(out, dict):
        return {k: _detached(v) for k, v in out.items()}
    return out



def _seed_masks(mask: Any, n_inputs: int) -> list | None:
    """The input masks handed to a graph (one, or a list per input) as a list, None without any."""
    if mask is None:
        return None
    seeds = list(mask) if isinstance(mask, (list, tuple)) else [mask]
    if len(seeds) != n_inputs:
        raise ValueError(f"a graph of {n_inputs} inputs got {len(seeds)} input masks")
    return seeds if any(m is not None for m in seeds) else None



class _Tracking(list):
    """The slot list of a forward whose ``tracked`` slots autograd must follow: a value stored there
    that autograd does not track yet (data, a parameter-free layer's output) becomes a leaf that
    requires a gradient."""

    def __init__(self, n: int, tracked: frozenset[int]) -> None:
        super().__init__([None] * n)
        self.tracked = tracked

    def __setitem__(self, index: Any, value: Any) -> None:
        if (isinstance(index, int) and index in self.tracked and isinstance(value, torch.Tensor)
                and value.is_floating_point() and not value.requires_grad and torch.is_grad_enabled()):
            value = value.detach().requires_grad_()
        super().__setitem__(index, value)


class _LiveSlots:
    """``{id(symbolic tensor): value}`` over a forward's slot list as it fills (what
    :func:`state.live_value` reads): no copy per layer, a slot not computed yet reads as None."""

    def __init__(self, values: list, slot_ids: dict[int, int]) -> None:
        self.values = values
        self.slots = {tid: slot for slot, tid in slot_ids.items()}

    def get(self, key: int, default: Any = None) -> Any:
        slot = self.slots.get(key)
        return default if slot is None else self.values[slot]


def _pairs(inputs: list, order: list, slots: dict) -> list:
    out = [(x, slots[id(x)]) for x in inputs]
    for node in order:
        out += [(t, slots[id(t)]) for t in node.output_tensors]
    return out


def _leaves(y: Any) -> list:
    if isinstance(y, (list, tuple)):
        return [leaf for v in y for leaf in _leaves(v)]
    if isinstance(y, dict):
        return [leaf for k in sorted(y) for leaf in _leaves(y[k])]
    return [y]
