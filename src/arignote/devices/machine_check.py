"""The ``device`` flag checked against this machine at the first config read (torch only for GPU specs).

``arignote/__init__.py`` registers :func:`device_on_this_machine` with
:func:`arignote.config.set_machine_check`, so ``ARIGNOTE_FLAGS=device=cuda7`` on a 2-GPU box fails at
the script's first arignote call that reads a flag (``model.add(Dense(...))``), not at ``fit``. The
check counts the visible GPUs (``torch.cuda.device_count()`` through :mod:`arignote.devices.cuda`, no
CUDA context); the GPU names and free memory are read later, when ``fit`` resolves the spec.

Example::

    >>> device_on_this_machine("cpu") is None      # cpu and auto never ask the hardware
    True
"""

from __future__ import annotations

import re

from arignote.devices import spec

__all__ = ["device_on_this_machine", "contexts_on_this_machine"]

# a context's device in the contexts flag: "dev0->cuda1", "dev1 -> gpu0", "x->cuda:2" (the rest of the
# syntax is checked where the contexts are parsed, parallel/placement.py)
_CONTEXT_GPU = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*->\s*(?:cuda|gpu):?(\d*)\s*(?:;|$)", re.IGNORECASE)


def device_on_this_machine(text: str) -> tuple[str, str] | None:
    """``(problem, fix)`` when this machine cannot honour the device spec ``text``, else None."""
    parsed = spec.parse_spec(text)
    if parsed.kind in ("cpu", "auto"):
        return None
    from arignote.devices import inventory  # why: imports torch, which only a GPU spec needs here

    count, reason = inventory.gpu_count()
    return spec.count_problem(parsed, count, reason)


def contexts_on_this_machine(text: str) -> tuple[str, str] | None:
    """``(problem, fix)`` when the ``contexts`` flag maps a context to a GPU this machine lacks.

    >>> contexts_on_this_machine("dev0->cpu;dev1->cpu") is None   # CPU contexts never ask the hardware
    True
    """
    gpus = [(name, int(index or 0)) for name, index in _CONTEXT_GPU.findall(str(text))]
    if not gpus:
        return None
    from arignote.devices import inventory  # why: imports torch, which only a GPU context needs here

    count, reason = inventory.gpu_count()
    name, index = max(gpus, key=lambda item: item[1])
    found = spec.count_problem(f"cuda{index}", count, reason)
    if found is None:
        return None
    gpus_here = "" if count == 0 else ("cuda0 or " if count == 1 else f"cuda0..cuda{count - 1} or ")
    return f"context {name} maps to cuda{index}: {found[0]}", f"map the contexts to {gpus_here}cpu"
