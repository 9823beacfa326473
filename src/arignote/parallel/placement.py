"""Model placement: Theano's ``contexts`` flag and TensorFlow's ``tf.device``, on PyTorch.

The ``contexts`` flag names devices (``dev0->cuda0;dev1->cuda1``; a context may map to ``cpu``),
``with arignote.device("dev1"):`` around ``model.add(...)`` marks the layers added there, and
:func:`apply_placement` (called by the model when it moves to its device) puts each marked
layer on its context's device and makes every layer move its input to its own device first,
so activations cross devices in the forward pass and autograd carries the gradients back.
The model's output comes back to the model's device, where the targets and the loss live.

Example::

    >>> from arignote import config
    >>> with config.override(contexts="dev0->cpu;dev1->cpu"):
    ...     with device("dev1"):
    ...         current_context()
    'dev1'
    >>> parse_contexts("a->cuda0; b->cpu")
    {'a': 'cuda:0', 'b': 'cpu'}
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterable, Iterator
from typing import Any

from arignote import config
from arignote.config import ConfigError

__all__ = ["device", "current_context", "parse_contexts", "layer_device", "apply_placement",
           "mark", "gpus_per_replica", "replica_gpus", "relative_contexts", "set_replica_gpus", "placed_gpus"]

_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("arignote_context", default=None)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_DEVICE = re.compile(r"^(cpu|(?:cuda|gpu):?(\d+)|cuda)$")
_EXAMPLE = "e.g. contexts=dev0->cuda0;dev1->cuda1"


def parse_contexts(text: str) -> dict[str, str]:
    """``"dev0->cuda0;dev1->cpu"`` -> ``{"dev0": "cuda:0", "dev1": "cpu"}`` (torch device strings).

    Theano's ``gpuN`` spelling is accepted; anything else is an error naming the item.
    """
    out: dict[str, str] = {}
    for item in (p.strip() for p in str(text).split(";")):
        if not item:
            continue
        if "->" not in item:
            raise ConfigError(f"contexts item {item!r} is not name->device ({_EXAMPLE})")
        name, dev = (s.strip() for s in item.split("->", 1))
        if not _NAME.match(name):
            raise ConfigError(f"contexts item {item!r}: {name!r} is not a context name (letters, digits, _)")
        m = _DEVICE.match(dev.lower())
        if not m:
            raise ConfigError(f"contexts item {item!r}: {dev!r} is not a device (cpu, cuda0, cuda:1, gpu0)")
        if name in out:
            raise ConfigError(f"contexts: {name!r} is defined twice")
        out[name] = "cpu" if m.group(1) == "cpu" else f"cuda:{int(m.group(2) or 0)}"
    return out


def configured_contexts() -> dict[str, str]:
    """The ``contexts`` flag, parsed; under data parallel relative to this replica's own GPUs."""
    contexts = parse_contexts(config.get("contexts"))
    return contexts if _replica["gpus"] is None else relative_contexts(contexts, _replica["gpus"])


# ----------------------------------------------------------------------------- with data parallel
#
# Placement and data parallel combine: each replica (process) owns `gpus_per_replica` GPUs, and a
# context's `cuda<i>` means the replica's i-th GPU. With device=all on 4 GPUs and
# contexts=dev0->cuda0;dev1->cuda1, replica 0 runs on GPUs 0 and 1 and replica 1 on GPUs 2 and 3.

_replica: dict[str, list[int] | None] = {"gpus": None}


def gpus_per_replica(contexts: dict[str, str]) -> int:
    """GPUs one replica needs for ``contexts``: one more than the highest ``cuda<i>`` named (1 when
    the contexts name no GPU, or none are configured).

    >>> gpus_per_replica({"a": "cuda:0", "b": "cuda:1", "c": "cpu"}), gpus_per_replica({})
    (2, 1)
    """
    indices = [int(dev.split(":")[1]) for dev in contexts.values() if dev.startswith("cuda:")]
    return max(indices) + 1 if indices else 1


def replica_gpus(gpus: list[int], per_replica: int, replica: int) -> list[int]:
    """The GPU indices replica ``replica`` owns among ``gpus`` (the job's, in order); the count must
    divide evenly (a clear error otherwise).

    >>> replica_gpus([0, 1, 2, 3], 2, 1)
    [2, 3]
    """
    if per_replica < 1 or len(gpus) % per_replica:
        raise ConfigError(f"the contexts flag places layers on {per_replica} GPUs per replica, but the "
                          f"device flag names {len(gpus)} GPU(s) ({', '.join(map(str, gpus))}): name a "
                          f"multiple of {per_replica} GPUs for data parallel with placement")
    start = replica * per_replica
    if start + per_replica > len(gpus):
        raise ConfigError(f"replica {replica} needs GPUs {start}..{start + per_replica - 1} of the job's "
                          f"{len(gpus)}: start {len(gpus) // per_replica} processes, not more")
    return list(gpus[start:start + per_replica])


def relative_contexts(contexts: dict[str, str], own: list[int]) -> dict[str, str]:
    """``contexts`` with ``cuda<i>`` read as this replica's ``i``-th GPU (``own``); ``cpu`` stays.

    >>> relative_contexts({"dev0": "cuda:0", "dev1": "cuda:1", "host": "cpu"}, [2, 3])
    {'dev0': 'cuda:2', 'dev1': 'cuda:3', 'host': 'cpu'}
    """
    out = {}
    for name, dev in contexts.items():
        if dev.startswith("cuda:"):
            i = int(dev.split(":")[1])
            if i >= len(own):
                raise ConfigError(f"context {name!r} -> {dev}: this replica owns {len(own)} GPU(s) "
                                  f"({', '.join(f'cuda:{g}' for g in own)})")
            dev = f"cuda:{own[i]}"
        out[name] = dev
    return out


def set_replica_gpus(gpus: list[int] | None) -> None:
    """Make contexts relative to these GPUs (called by data parallel; None: absolute again)."""
    _replica["gpus"] = None if gpus is None else list(gpus)


def _check(name: str) -> str:
    contexts = configured_contexts()
    if name not in contexts:
        known = ", ".join(f"{k} ({v})" for k, v in contexts.items())
        src = config.source("contexts")
        if not contexts:
            raise ConfigError(f"device({name!r}): no placement contexts are configured; set the contexts "
                              f"flag, {_EXAMPLE}")
        raise ConfigError(f"device({name!r}): unknown context; contexts ({src}) are: {known}")
    return contexts[name]


@contextlib.contextmanager
def device(name: str) -> Iterator[str]:
    """Place the layers added (or created) inside the block on context ``name``'s device.

    Yields the torch device string. An unknown name is an error listing the contexts.
    """
    dev = _check(name)
    token = _current.set(name)
    try:
        yield dev
    finally:
        _current.reset(token)


def current_context() -> str | None:
    """The context of the innermost ``with device(...)`` block, or None outside any."""
    return _current.get()


def mark(layer: Any) -> Any:
    """Give ``layer`` the current context unless it already has one (called by ``add``)."""
    ctx = _current.get()
    if ctx is not None and getattr(layer, "device_context", None) is None:
        layer.device_context = ctx
    return layer


def layer_device(layer: Any) -> str | None:
    """The torch device string of a placed layer (``"cuda:1"``), None when it is not placed."""
    ctx = getattr(layer, "device_context", None)
    if ctx is None:
        return None
    return _check(ctx)


def placed_gpus(layers: Iterable[Any], default: Any) -> list[str]:
    """The GPUs ``layers`` are placed on besides ``default`` (the strategy's device), in index order:
    each gets the memory policy and a banner line too (issue 28 W4: memory.limit and
    memory.preallocate reached only a replica's first GPU).

    >>> from types import SimpleNamespace as NS
    >>> with config.override(contexts="a->cuda0;b->cuda1;c->cpu;d->cuda3"):
    ...     placed_gpus([NS(device_context=n) for n in ("a", "b", "c", "b", None)], "cuda:0")
    ['cuda:1']
    """
    seen = {layer_device(layer) for layer in layers}
    home = str(getattr(default, "torch", default))
    gpus = {d for d in seen if d is not None and d.startswith("cuda") and d != home}
    return sorted(gpus, key=lambda d: int(d.partition(":")[2] or 0))


def _move_inputs(dev: Any):
    def hook(module: Any, args: tuple) -> tuple:  # noqa: ARG001 - forward pre-hook signature
        return tuple(a.to(dev) if hasattr(a, "to") and hasattr(a, "device") else a for a in args)

    return hook


def _move_output(dev: Any):
    def hook(module: Any, args: tuple, output: Any) -> Any:  # noqa: ARG001 - forward hook signature
        return output.to(dev) if hasattr(output, "to") and hasattr(output, "device") else output

    return hook


def apply_placement(model: Any, layers: Iterable[Any], default: Any) -> bool:
    """Put each placed layer of ``layers`` on its context's device (after ``model.to(default)``).

    Every layer gets a forward pre-hook moving its input to its own device, and ``model`` a hook
    bringing the output back to ``default``. Idempotent; returns False (and does nothing) when no
    layer is placed.
    """
    import torch

    layers = list(layers)
    placed = [layer_device(layer) for layer in layers]
    if not any(placed):
        return False
    default = torch.device(str(getattr(default, "torch", default)))
    for layer, dev in zip(layers, placed):
        target = torch.device(dev) if dev else default
        layer.to(target)
        old = getattr(layer, "_arignote_placement_hook", None)
        if old is not None:
            old.remove()
        layer._arignote_placement_hook = layer.register_forward_pre_hook(_move_inputs(target))
    old = getattr(model, "_arignote_output_hook", None)
    if old is not None:
        old.remove()
    model._arignote_output_hook = model.register_forward_hook(_move_output(default))
    return True
