"""``arignote selftest`` items for the GPU fast paths: each one took effect during a real fit.

What a fit should show is computed by the same decisions fit makes (:mod:`arignote.devices.fastpaths`),
so a check never hard-codes a policy: :func:`expected` (pure) says what to look for, the probes of
:mod:`arignote.bench.fastprobes` record what happened during a fit, :func:`mismatches` compares them:

* cuDNN autotuning: ``torch.backends.cudnn.benchmark`` read at each training batch;
* channels-last: every ``conv2d`` output of the fit, seen by a ``TorchFunctionMode``;
* fused optimizer: the torch optimizer's ``defaults['fused']``;
* TF32: the switches ``devices/cuda.py`` reads back;
* no host sync in a step: ``torch.cuda.set_sync_debug_mode("error")`` from the second step to the
  last, so any ``.item()``, ``nonzero`` or blocking copy in the step raises.

The probes and the comparison run on a CPU too (tests/test_fastpaths.py); the items need a GPU.
This module does not import torch (``arignote selftest`` plans its items without it).

Example::

    >>> from arignote.devices.fastpaths import FitFacts
    >>> flags = {"dnn.benchmark": "auto", "tf32": "on", "memory_format": "auto", "optimizer.impl": "auto"}
    >>> facts = FitFacts("cuda:0", (9, 0), has_conv=True, fixed_shapes=True, optimizer="Adam")
    >>> want = expected(flags.get, facts)
    >>> want
    {'benchmark': True, 'tf32': (True, True), 'channels_last': True, 'fused': True}
    >>> mismatches(want, {**want, "benchmark": False})
    ['benchmark: expected True, saw False']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arignote.devices import fastpaths

__all__ = ["expected", "mismatches", "observed", "autotune_gpu", "channels_last_gpu", "fused_optimizer_gpu",
           "tf32_gpu", "no_host_sync_gpu"]


class CheckFailed(AssertionError):
    """A fast path did not take effect; the message says which and what was seen."""


# --------------------------------------------------------------------------- what to look for


def expected(get: Callable[[str], Any], facts: fastpaths.FitFacts) -> dict[str, Any]:
    """What a fit with ``facts`` under flags ``get`` should show on its device."""
    kind = facts.device_kind
    return {
        "benchmark": fastpaths.autotune(get, kind, facts.cudnn_enabled, facts.has_conv,
                                        facts.fixed_shapes).value,
        "tf32": fastpaths.tf32(get, facts.capability).value,
        "channels_last": fastpaths.memory_format(get, kind, facts.has_conv).value == "channels_last",
        "fused": (fastpaths.optimizer_impl(get, facts.optimizer, {kind}, True).value == "fused"
                  if facts.optimizer else False),
    }


def mismatches(want: dict[str, Any], seen: dict[str, Any], keys: Any = None) -> list[str]:
    """``key: expected X, saw Y`` for each of ``keys`` (default: all of ``want``) that differs."""
    return [f"{k}: expected {want[k]!r}, saw {seen.get(k)!r}" for k in (keys or want)
            if seen.get(k) != want[k]]


def observed(flags: dict[str, Any], device: str = "cuda0", **kw: Any) -> tuple[dict, dict]:
    """``(expected, seen)`` of one probed fit (:func:`arignote.bench.fastprobes.observe_fit`)."""
    # runs in the check's own process (selfchecks.run_in_process), as the torch import below
    from arignote import config
    from arignote.bench import fastprobes  # why: torch at import; selftest plans its items without it

    facts, seen = fastprobes.observe_fit(flags, device, **kw)
    return expected(config.get, facts), seen


def _check(want: dict[str, Any], seen: dict[str, Any], keys: list[str]) -> None:
    problems = mismatches(want, seen, keys)
    if problems:
        raise CheckFailed("; ".join(problems))


# --------------------------------------------------------------------------- the selftest items


def autotune_gpu() -> str:
    want, seen = observed({}, "cuda0")
    _check(want, seen, ["benchmark"])
    want_it, seen_it = observed({}, "cuda0", iterable=True)
    _check(want_it, seen_it, ["benchmark"])
    return (f"cudnn.benchmark {seen['benchmark']} during a fit on arrays, {seen_it['benchmark']} on an "
            "iterable (dnn.benchmark=auto)")


def channels_last_gpu() -> str:
    want, seen = observed({}, "cuda0")
    _check(want, seen, ["channels_last"])
    return f"{len(seen['conv_outputs'])} conv2d outputs during fit, all channels-last"


def fused_optimizer_gpu() -> str:
    want, seen = observed({}, "cuda0")
    _check(want, seen, ["fused"])
    return "Adam built with fused=True on cuda:0"


def tf32_gpu() -> str:
    want, seen = observed({}, "cuda0")
    _check(want, seen, ["tf32"])
    return f"TF32 (matmul, conv) = {seen['tf32']} as tf32=on asks"


def no_host_sync_gpu() -> str:
    _, seen = observed({}, "cuda0", sync_guard=True)
    if not seen["guarded"]:
        raise CheckFailed("no training step ran under torch.cuda.set_sync_debug_mode('error')")
    return f"steps 2..{len(seen['guarded']) + 1} ran under set_sync_debug_mode('error') without a host sync"
