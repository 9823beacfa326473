"""``arignote demo`` trains the digits CNN to >= 95% validation accuracy and says so (exit 0)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest


def _demo(tmp_path, *args):
    env = dict(os.environ, ARIGNOTE_FLAGS="device=cpu", ARIGNOTERC="")
    return subprocess.run([sys.executable, "-m", "arignote", "demo", *args], capture_output=True, text=True,
                          env=env, timeout=280, check=False)


@pytest.mark.slow
def test_demo_reaches_the_target(tmp_path):
    out = _demo(tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert re.search(r"^arignote .* device cpu", text, re.M)  # the banner, before the first epoch
    assert text.index("device cpu") < text.index("Epoch 1/12")
    assert re.search(r"^Train on 1438 samples, validate on 359 samples$", text, re.M)
    line = (r"^\d+s - loss: [\d.]+ - acc: [\d.]+ - val_loss: [\d.]+ - val_acc: [\d.]+ - \d+ samples/s"
            r" - cpu peak RSS \d+ MiB$")
    assert re.search(line, text, re.M)
    acc = float(re.search(r"^validation accuracy: ([\d.]+) \(target 0\.95\) on cpu", text, re.M).group(1))
    assert acc >= 0.95


@pytest.mark.slow
def test_demo_exits_1_under_the_target_and_2_on_bad_arguments(tmp_path):
    out = _demo(tmp_path, "--epochs", "1", "--target", "1.0", "--verbose", "0")
    assert out.returncode == 1
    assert "under the target 1.00" in out.stdout
    assert _demo(tmp_path, "--epochs", "0").returncode == 2
