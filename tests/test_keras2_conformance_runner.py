"""scripts/keras2_conformance.py, the parts that run without Keras's repository: the classification
table (the committed one parses, rules match ids and messages), how outcomes become results (a module
that does not import counts once per test Keras collects in it), the totals and the page. Running
Keras's tests needs the Keras mirror, so that part does not run here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "keras2_conformance.py"


@pytest.fixture(scope="module")
def runner():
    spec = importlib.util.spec_from_file_location("keras2_conformance", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def _row(test_id, outcome="passed", message="", when="call"):
    return {"id": test_id, "when": when, "outcome": outcome, "message": message, "frame": ""}


def test_committed_table_parses_and_classifies_known_cases(runner):
    rules = runner.read_table()
    results = runner.collect_results([
        _row("tests/keras/layers/cudnn_recurrent_test.py::test_cudnn", "skipped", "Skipped: needs GPU"),
        _row("tests/keras/x_test.py::test_a", "skipped", "Skipped: Requires TensorFlow backend"),
        _row("tests/keras/x_test.py::test_b", "failed", "ValueError: boom"),
        _row("tests/keras/x_test.py::test_c"),
    ], [], ["tests"])
    runner.classify(results, rules)
    got = {r.id.split("::")[1]: (r.outcome, r.category) for r in results}
    assert got == {"test_cudnn": ("skip", "tensorflow-only"), "test_a": ("skip", "tensorflow-only"),
                   "test_b": ("fail", "not-yet"), "test_c": ("pass", "")}
    assert [r.reason for r in results if r.id.endswith("test_b")] == ["ValueError: boom"]


def test_a_bad_table_line_names_the_line(runner, tmp_path):
    table = tmp_path / "t.txt"
    table.write_text("# comment\ntests/x.py::* | maybe | why\n")
    with pytest.raises(SystemExit, match=r"t\.txt:2: .*maybe"):
        runner.read_table(table)


def test_a_module_that_does_not_import_counts_each_reference_test(runner):
    reference = ["tests/m_test.py::test_1", "tests/m_test.py::test_2[a]", "tests/other_test.py::test_1"]
    rows = [_row("tests/m_test.py", "failed", "E   ImportError: no saving", when="collect"),
            _row("tests/other_test.py::test_1"),
            _row("tests/broken_test.py", "failed", "E   ImportError: x", when="collect")]
    results = runner.collect_results(rows, reference, ["tests"])
    assert [(r.id, r.outcome) for r in results] == [
        ("tests/broken_test.py", "fail"),  # no reference ids: the module counts once
        ("tests/m_test.py::test_1", "fail"), ("tests/m_test.py::test_2[a]", "fail"),
        ("tests/other_test.py::test_1", "pass")]
    assert results[1].message == "module does not load: E   ImportError: no saving"


def test_a_teardown_error_after_a_pass_is_a_failure_and_first_failure_is_kept(runner):
    rows = [_row("tests/a.py::t"), _row("tests/a.py::t", "failed", "teardown boom", when="teardown"),
            _row("tests/a.py::u", "failed", "first"), _row("tests/a.py::u", "failed", "second", "teardown")]
    results = runner.collect_results(rows, [], ["tests"])
    assert [(r.outcome, r.message) for r in results] == [("fail", "teardown boom"), ("fail", "first")]


def test_totals_leave_out_of_scope_tests_out_of_the_public_count(runner):
    rules = [runner.Rule("tests/tf_test.py::*", "tensorflow-only", "TF"),
             runner.Rule("msg~lambda bytecode", "deliberate", "safe_mode")]
    rows = [_row("tests/tf_test.py::t1"), _row("tests/tf_test.py::t2", "failed", "x"),
            _row("tests/a_test.py::t1"), _row("tests/a_test.py::t2", "failed", "no lambda bytecode"),
            _row("tests/a_test.py::t3", "failed", "AttributeError: y")]
    results = runner.collect_results(rows, [], ["tests"])
    runner.classify(results, rules)
    totals = runner.totals(results)
    assert (totals["public_passed"], totals["public"], totals["percent"]) == (1, 3, 33.3)
    assert totals["categories"] == {"tensorflow-only": 2, "deliberate": 1, "not-yet": 1}
    page = runner.render(results, "python scripts/keras2_conformance.py", "2.3.1")
    assert "**Public-behaviour tests passed: 1 / 3 (33.3%).**" in page
    assert "| tests/a_test.py | 3 | 1 | 2 | 0 | 0 | 1 / 3 |" in page
    assert "| `tests/a_test.py::t2` | fail | safe_mode |  |" in page
    assert "| `tests/a_test.py::t3` | fail | AttributeError: y |  |" in page


def test_patch_targets_are_renamed_with_the_imports(runner):
    text = "with patch('keras.engine.saving.ask') as a, tf_file_io_proxy(\"keras.x.io\"):\n"
    assert runner._PATCH_TARGET.sub(r"\1(\2\3arignote.", text) == (
        "with patch('arignote.engine.saving.ask') as a, tf_file_io_proxy(\"arignote.x.io\"):\n")
