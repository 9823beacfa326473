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

Each item is a run (:func:`fit_record`: what to look for and what was seen) and a pure judge. The
probes and the comparison run on a CPU too (tests/test_fastpaths.py); the items need a GPU.
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

from arignote.bench.selftest_protocol import Verdict, verdict
from arignote.devices import fastpaths

__all__ = ["expected", "mismatches", "observed", "fit_record", "run_autotune", "judge_autotune",
           "run_channels_last", "judge_channels_last", "run_fused_optimizer", "judge_fused_optimizer",
           "run_tf32", "judge_tf32", "run_no_host_sync", "judge_no_host_sync"]


# --------------------------------------------------------------------------- what to look for


def expected(get: Callable[[str], Any], facts: fastpaths.FitFacts) -> dict[str, Any]:
    """What a fit with ``facts`` under flags ``get`` should show on its device."""
    kind = facts.device_kind
    return {
        "benchmark": fastpaths.autotune(get, kind, facts.cudnn_enabled, facts.has_conv,
                                        facts.fixed_shapes).value,
        "tf32": fastpaths.tf32(get, facts.capability).value,
        "channels_last": fastpaths.memory_format(get, facts.has_conv).value == "channels_last",
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


def fit_record(keys: list[str], optimizer: str = "adam", device: str = "cuda0", **kw: Any) -> dict[str, Any]:
    """One probed fit: ``{"want": {key: ...}, "seen": {key: ..., "conv_outputs", "guarded"}}``."""
    want, seen = observed({}, device, optimizer=optimizer, **kw)
    return {"want": {k: want[k] for k in keys},
            "seen": {**{k: seen[k] for k in keys}, "conv_outputs": seen["conv_outputs"],
                     "guarded": seen["guarded"]}}


def judge_keys(record: dict[str, Any], message: str) -> Verdict:
    """Passed when every key of ``want`` was seen with its value (``message`` may name ``seen``'s)."""
    seen = record["seen"]
    text = message.format(**seen, n_convs=len(seen["conv_outputs"]))
    return verdict(mismatches(record["want"], seen), text, **{k: seen[k] for k in record["want"]})


# --------------------------------------------------------------------------- the selftest items


def run_autotune() -> dict[str, Any]:
    return {"arrays": fit_record(["benchmark"]), "iterable": fit_record(["benchmark"], iterable=True)}


def judge_autotune(record: dict[str, Any]) -> Verdict:
    arrays, iterable = judge_keys(record["arrays"], ""), judge_keys(record["iterable"], "")
    problems = ([f"arrays: {arrays.message}"] * (not arrays.ok)
                + [f"iterable: {iterable.message}"] * (not iterable.ok))
    arrays_on = record["arrays"]["seen"]["benchmark"]
    return verdict(problems, f"cudnn.benchmark {arrays_on} during a fit on arrays, "
                   f"{record['iterable']['seen']['benchmark']} on an iterable (dnn.benchmark=auto)")


def run_channels_last() -> dict[str, Any]:
    return fit_record(["channels_last"])


def judge_channels_last(record: dict[str, Any]) -> Verdict:
    return judge_keys(record, "{n_convs} conv2d outputs during fit, all channels-last")


def run_fused_optimizer() -> dict[str, Any]:
    """Adam and Adagrad (torch 2.13 has both fused on CUDA: issue 28 S2) on cuda:0."""
    return {name: fit_record(["fused"], optimizer=name) for name in ("adam", "adagrad")}


def judge_fused_optimizer(record: dict[str, Any]) -> Verdict:
    """Both fused, whatever the decision expected: torch 2.13 has both kernels on CUDA, so a decision
    that expects foreach there (issue 28 S2) is itself the failure."""
    problems = [f"{name}: {v.message}" for name, v in ((n, judge_keys(r, "")) for n, r in record.items())
                if not v.ok]
    problems += [f"{name}: not fused on cuda:0 (torch has the kernel)" for name, r in record.items()
                 if r["seen"]["fused"] is not True and r["want"]["fused"] is not True]
    if sorted(record) != ["adagrad", "adam"]:
        problems.append(f"expected the fits of adam and adagrad, the record has {sorted(record)}")
    return verdict(problems, "Adam and Adagrad built with fused=True on cuda:0")


def run_tf32() -> dict[str, Any]:
    return fit_record(["tf32"])


def judge_tf32(record: dict[str, Any]) -> Verdict:
    return judge_keys(record, "TF32 (matmul, conv) = {tf32} as the tf32 flag asks")


def run_no_host_sync() -> dict[str, Any]:
    """A fit with ``set_sync_debug_mode('error')`` from step 2: a sync raises, and is recorded."""
    try:
        return {**fit_record([], sync_guard=True), "sync_error": ""}
    except RuntimeError as err:  # set_sync_debug_mode('error') raises at the syncing call
        return {"want": {}, "seen": {"conv_outputs": [], "guarded": []}, "sync_error": str(err)[:300]}


def judge_no_host_sync(record: dict[str, Any]) -> Verdict:
    guarded = record["seen"]["guarded"]
    error = record["sync_error"]
    problems = [f"a training step synchronized with the host: {error}"] if error else []
    if not guarded and not problems:
        problems.append("no training step ran under torch.cuda.set_sync_debug_mode('error')")
    return verdict(problems, f"steps 2..{len(guarded) + 1} ran under set_sync_debug_mode('error') without a "
                   "host sync", guarded_steps=len(guarded))
