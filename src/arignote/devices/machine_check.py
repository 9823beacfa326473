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

from arignote.devices import spec

__all__ = ["device_on_this_machine"]


def device_on_this_machine(text: str) -> tuple[str, str] | None:
    """``(problem, fix)`` when this machine cannot honour the device spec ``text``, else None."""
    parsed = spec.parse_spec(text)
    if parsed.kind in ("cpu", "auto"):
        return None
    from arignote.devices import inventory  # why: imports torch, which only a GPU spec needs here

    count, reason = inventory.gpu_count()
    return spec.count_problem(parsed, count, reason)
