"""ProgbarLogger: Keras-format lines (verbose 2), the bar (verbose 1, terminal only), rank 0 only."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from arignote import config
from arignote.callbacks import progbar as progbar_mod
from arignote.callbacks.base import CallbackList, LazyLogs
from arignote.callbacks.progbar import ProgbarLogger, format_bar, format_duration, format_values
from arignote.layers import Dense
from arignote.models import Sequential
from arignote.parallel.single import SingleDevice


@pytest.fixture(autouse=True)
def _cpu():
    with config.override(device="cpu", print_active_device=False):
        yield


class Tty(io.StringIO):
    def isatty(self):
        return True


def _model():
    m = Sequential([Dense(3, activation="softmax", input_dim=2)])
    m.compile("sgd", "sparse_categorical_crossentropy", metrics=["acc"])
    return m


def _data(n=100):
    rng = np.random.default_rng(0)
    return rng.random((n, 2), dtype=np.float32), rng.integers(0, 3, n)


LINE2 = re.compile(r"^\d+s - loss: \d+\.\d{4} - acc: \d\.\d{4} - val_loss: \d+\.\d{4} - val_acc: \d\.\d{4}"
                   r" - \d+ samples/s - cpu peak RSS \d+ MiB$")


def _lines(out: str) -> list[str]:
    # the out-of-memory planner (issue 7) announces its memory plan before training: not ours
    return [line for line in out.splitlines() if not line.startswith("Memory plan")]


def test_format_helpers():
    assert format_duration(7.9) == "7s" and format_duration(3725) == "1:02:05"
    assert format_bar(1024, 45000) == " 1024/45000 [>.............................]"
    assert format_bar(22500, 45000) == "22500/45000 [==============>...............]"
    assert format_bar(45000, 45000) == "45000/45000 [" + "=" * 30 + "]"
    values = format_values({"loss": 1.83444, "acc": 0.00001}, ["loss", "acc"])
    assert values == " - loss: 1.8344 - acc: 1.0000e-05"


def test_verbose2_keras_format(capsys):
    x, y = _data()
    _model().fit(x, y, epochs=2, batch_size=10, verbose=2, validation_split=0.2)
    out = _lines(capsys.readouterr().out)
    assert out[0] == "Train on 80 samples, validate on 20 samples"
    assert out[1] == "Epoch 1/2" and out[3] == "Epoch 2/2"
    assert LINE2.match(out[2]), out[2]
    assert LINE2.match(out[4]), out[4]
    assert len(out) == 5


def test_verbose1_without_terminal_prints_one_final_line(capsys):
    x, y = _data()
    _model().fit(x, y, epochs=1, batch_size=10, verbose=1)
    out = capsys.readouterr().out
    assert "\r" not in out
    lines = _lines(out)
    assert lines[0] == "Train on 100 samples"
    assert lines[1] == "Epoch 1/1"
    final = (r"^100/100 \[={30}\] - \d+s - loss: \d\.\d{4} - acc: \d\.\d{4} - \d+ samples/s"
             r" - cpu peak RSS \d+ MiB$")
    assert re.match(final, lines[2])
    assert len(lines) == 3


def test_verbose1_on_terminal_redraws_at_most_ten_times_a_second(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(progbar_mod.time, "perf_counter", lambda: clock[0])
    stream = Tty()
    bar = ProgbarLogger(verbose=1, stream=stream)
    reads = []
    cbs = CallbackList([bar])
    cbs.set_params({"epochs": 1, "samples": 1000, "metrics": ["loss"]})
    cbs.on_epoch_begin(0)
    for step in range(100):  # 100 batches in 0.5 s of fake time
        clock[0] += 0.005
        logs = LazyLogs({"batch": step, "size": 10}, lambda: reads.append(1) or {"loss": 0.5}, ["loss"])
        cbs.on_train_batch_end(step, logs)
    redraws = stream.getvalue().count("\r")
    assert 1 <= redraws <= 6
    assert len(reads) == redraws  # batch logs (a device sync) are read only to redraw
    assert "ETA: " in stream.getvalue()
    cbs.on_epoch_end(0, {"loss": 0.25})
    final = stream.getvalue().split("\r")[-1]
    assert final.startswith("1000/1000 [" + "=" * 30 + "] - 0s - loss: 0.2500")
    assert final.endswith("\n")


def test_verbose0_prints_nothing(capsys):
    x, y = _data()
    _model().fit(x, y, epochs=1, verbose=0)
    assert capsys.readouterr().out == ""


def test_only_rank0_prints(monkeypatch, capsys):
    monkeypatch.setattr(SingleDevice, "is_main", False)
    x, y = _data()
    _model().fit(x, y, epochs=1, verbose=2)
    assert "Epoch" not in capsys.readouterr().out


def test_steps_count_mode_for_iterables(capsys):
    x, y = _data(40)
    batches = [(x[i:i + 10], y[i:i + 10]) for i in range(0, 40, 10)]
    _model().fit(batches, epochs=1, verbose=1)
    lines = _lines(capsys.readouterr().out)
    assert lines[0] == "Epoch 1/1"
    assert lines[1].startswith("4/4 [" + "=" * 30 + "]")


def test_bad_count_mode():
    with pytest.raises(ValueError, match="count_mode"):
        ProgbarLogger("batches")
