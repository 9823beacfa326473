"""Every ``arignote selftest`` item proven able to fail (issue 28): its judge passes the recorded
outcome of a correct run and fails the recorded outcome of each broken run it exists to catch.

The records live in ``tests/selftest_records*.py`` (``RECORDS``); an item with no broken record
fails :func:`test_every_item_has_a_correct_and_a_broken_record`.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from arignote.bench import selfchecks
from arignote.bench.selftest_protocol import Check, Verdict, judge_record, replay, run_item

HERE = Path(__file__).parent


def _records() -> dict:
    out: dict = {}
    for path in sorted(HERE.glob("selftest_records*.py")):
        module = importlib.import_module(path.stem)
        overlap = set(out) & set(module.RECORDS)
        assert not overlap, f"{path.name} records {sorted(overlap)} again"
        out.update(module.RECORDS)
    return out


RECORDS = _records()
BY_NAME = {c.name: c for c in selfchecks.CHECKS}


def test_every_item_has_a_correct_and_a_broken_record():
    missing = [c.name for c in selfchecks.CHECKS
               if not (RECORDS.get(c.name, {}).get("good") and RECORDS.get(c.name, {}).get("broken"))]
    assert missing == []
    assert set(RECORDS) <= set(BY_NAME), sorted(set(RECORDS) - set(BY_NAME))


CASES = [(name, "good", i, rec) for name, recs in RECORDS.items() for i, rec in enumerate(recs["good"])]
CASES += [(name, "broken", why, rec) for name, recs in RECORDS.items() for why, rec in recs["broken"].items()]


@pytest.mark.parametrize(("name", "kind", "why", "record"), CASES,
                         ids=[f"{n}-{k}-{w}" for n, k, w, _ in CASES])
def test_the_judge_passes_a_correct_run_and_fails_a_broken_one(name, kind, why, record):
    check = BY_NAME[name]
    record = json.loads(json.dumps(record))  # as the item's process hands it over
    result = judge_record(check, record)
    assert isinstance(result, Verdict)
    if kind == "good":
        assert result.ok, (why, result.message)
        assert result.message
        json.dumps(result.numbers)  # JSON-able for selftest.json
    else:
        assert not result.ok, f"{name}'s judge passed a broken run ({why}): {result.message}"
        assert result.message


def test_a_run_that_raises_fails_without_its_judge_and_says_what_it_raised():
    def run():
        raise RuntimeError("Expected all tensors to be on the same device, but found cuda:0 and cuda:1\nmore")

    check = Check("x", 0, "doc", run, lambda record: Verdict(True, "never", {}))
    out = run_item(check)
    assert out == {"ok": False, "message": "the run raised RuntimeError: Expected all tensors to be on the "
                   "same device, but found cuda:0 and cuda:1", "numbers": {},
                   "record": {"raised": "RuntimeError: Expected all tensors to be on the same device, but "
                              "found cuda:0 and cuda:1"}}


def test_the_judge_sees_the_record_as_json_and_a_malformed_record_fails_naming_the_item():
    seen = []
    check = Check("x", 0, "doc", lambda: {"pair": (1, 2)},
                  lambda r: seen.append(r) or Verdict(True, "ok", {}))
    assert run_item(check)["ok"] and seen == [{"pair": [1, 2]}]
    train = BY_NAME["train-cpu"]
    result = judge_record(train, {"device": "cpu"})
    assert not result.ok
    assert result.message.startswith("the record does not have what train-cpu's judge reads")


def test_replay_judges_a_stored_selftest_json_again():
    doc = {"results": [{"item": "train-cpu", "status": "PASS", "record": RECORDS["train-cpu"]["good"][0]},
                       {"item": "memory-limit", "status": "PASS",
                        "record": RECORDS["memory-limit"]["broken"]["no cap"]},
                       {"item": "banner-gpu", "status": "SKIP", "record": {}}]}
    got = [(name, then, now.ok) for name, then, now in replay(doc, selfchecks.CHECKS)]
    assert got == [("train-cpu", True, True), ("memory-limit", True, False)]
