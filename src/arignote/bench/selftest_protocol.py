"""The protocol of an ``arignote selftest`` item: a *run* that records numbers, a *judge* that decides.

An item (:class:`Check`) is two functions:

* ``run() -> dict``: does the work on the device (a fit, an allocation, a 2-GPU job) and returns a
  plain JSON-able record of what it measured (numbers, strings, lists, dicts). It decides nothing:
  an outcome it exists to catch (an out-of-memory that did not happen, a warning cuDNN gave) is
  *recorded*, not raised. It runs in its own process (``python -m arignote.bench.selfchecks NAME``).
* ``judge(record) -> Verdict``: pure (no torch, no device, no clock), so the tests judge recorded
  outcomes on a CPU: the record of a correct run must pass, the record of each broken run the item
  exists to catch must fail (tests/test_selftest_judges.py collects them from
  ``tests/selftest_records*.py``; an item without a failing record fails that test).

The item's process records, round-trips the record through JSON (the judge sees exactly what is
written to ``selftest.json``), judges it and prints one line ``@@selftest {...}`` with ``ok``,
``message``, ``numbers`` and ``record``. A run that raises is recorded as ``{"raised": "Type:
message"}`` and fails without a judge. :func:`replay` judges a stored ``selftest.json`` again.

Example::

    >>> def judge(record):
    ...     problems = [] if record["reserved"] >= 0.45 * record["total"] else ["too little reserved"]
    ...     return verdict(problems, f"reserved {record['reserved']} of {record['total']}",
    ...                    reserved=record["reserved"])
    >>> judge({"reserved": 50, "total": 100})
    Verdict(ok=True, message='reserved 50 of 100', numbers={'reserved': 50})
    >>> judge({"reserved": 5, "total": 100}).ok
    False
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Check", "Verdict", "verdict", "raised", "judge_record", "run_item", "run_in_process",
           "outcome_in_process", "MARK"]

MARK = "@@selftest "
ENV_ITEM = "--environment"  # `python -m arignote.bench.selfchecks --environment`: versions and GPUs


@dataclass(frozen=True)
class Verdict:
    """A judge's answer: ``ok``, a one-line ``message`` (what was seen, or every problem found) and
    the ``numbers`` worth comparing between two machines or two runs."""

    ok: bool
    message: str
    numbers: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    """One item: ``run`` (on the device, returns a JSON-able record) and ``judge`` (pure)."""

    name: str
    gpus: int  # GPUs needed (0: runs anywhere)
    doc: str
    run: Callable[[], dict[str, Any]]
    judge: Callable[[dict[str, Any]], Verdict]


def verdict(problems: list[str], message: str, **numbers: Any) -> Verdict:
    """Passed when ``problems`` is empty (then ``message`` says what was seen); else the problems,
    joined, are the message."""
    return Verdict(not problems, "; ".join(problems) if problems else message, numbers)


def raised(exc: BaseException) -> str:
    """``Type: first line`` of an exception, as records and messages carry it."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def judge_record(check: Check, record: dict[str, Any]) -> Verdict:
    """The verdict on ``record`` (a run that raised fails with what it raised; a judge that raises
    on a malformed record fails too, naming the judge)."""
    if "raised" in record:
        return Verdict(False, f"the run raised {record['raised']}", {})
    try:
        return check.judge(record)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        return Verdict(False, f"the record does not have what {check.name}'s judge reads: {raised(exc)}", {})


def run_item(check: Check) -> dict[str, Any]:
    """Run ``check`` here and judge it: ``{"ok", "message", "numbers", "record"}`` (JSON-able)."""
    try:
        record = check.run()
        record = json.loads(json.dumps(record))  # the judge sees what selftest.json will hold
    except Exception as exc:  # an item's failure of any kind is its result  # noqa: BLE001
        record = {"raised": raised(exc)}
    result = judge_record(check, record)
    return {**asdict(result), "record": record}


def outcome_in_process(name: str, timeout: float) -> dict[str, Any]:
    """Run item ``name`` in a fresh interpreter (``python -m arignote.bench.selfchecks NAME``) and
    return its line: ``{"ok", "message", "numbers", "record"}``. A process that ends without the line
    (a crash, a timeout, a usage error) fails with what it left: the last line of its output."""
    cmd = [sys.executable, "-m", "arignote.bench.selfchecks", name]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "message": f"timed out after {timeout:.0f} s", "numbers": {}, "record": {}}
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    tail = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
    message = f"exit code {proc.returncode}: {tail[-1] if tail else 'no output'}"
    return {"ok": False, "message": message, "numbers": {}, "record": {}}


def run_in_process(name: str, timeout: float) -> tuple[bool, str]:
    """``(passed, message)`` of item ``name`` run in its own process (:func:`outcome_in_process`);
    the ``gpu``-marked tests run the items through it."""
    out = outcome_in_process(name, timeout)
    return bool(out["ok"]), out["message"]


def replay(doc: dict[str, Any], checks: list[Check]) -> list[tuple[str, bool, Verdict]]:
    """Judge the records of a stored ``selftest.json`` again with today's judges: ``(item, then
    ok, verdict now)`` for each item that ran (skipped ones have no record)."""
    by_name = {c.name: c for c in checks}
    out = []
    for entry in doc.get("results", []):
        check = by_name.get(entry["item"])
        if check is None or entry.get("status") == "SKIP" or not entry.get("record"):
            continue
        out.append((check.name, entry["status"] == "PASS", judge_record(check, entry["record"])))
    return out
