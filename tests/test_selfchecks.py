"""The one self-test runner: ``arignote selftest`` and the ``gpu``-marked tests (tests/test_cuda_gpu.py)
both run a check through ``bench.selfchecks.run_in_process``; here on the CPU items."""

from __future__ import annotations

from arignote.bench import selfchecks


def test_a_cpu_item_passes_in_its_own_process():
    ok, detail = selfchecks.run_in_process("banner-cpu", timeout=300)
    assert ok, detail
    assert "cpu" in detail


def test_an_unknown_item_fails_with_the_usage_line():
    ok, detail = selfchecks.run_in_process("no-such-item", timeout=300)
    assert not ok
    assert detail.startswith("exit code 2: usage: python -m arignote.bench.selfchecks {banner-cpu,")

