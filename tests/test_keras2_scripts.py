"""Keras-2-style scripts (tests/keras2_scripts/) run unmodified apart from the import rename
(``keras`` -> ``arignote``): siamese network, convolutional autoencoder, VAE with a custom loss over
graph tensors, sequence-to-sequence with RepeatVector + TimeDistributed, a custom layer saved and
reloaded. Each script asserts on what it learned and prints ``OK <name>``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "keras2_scripts"
SRC = Path(__file__).resolve().parent.parent / "src"


@pytest.mark.parametrize("name", ["siamese", "autoencoder", "vae", "seq2seq", "custom_layer"])
def test_keras2_script_runs_unmodified(name, tmp_path):
    text = (SCRIPTS / f"{name}.py").read_text()
    assert "import keras" not in text and "from keras" not in text  # only the rename was applied
    env = dict(os.environ, ARIGNOTE_FLAGS="device=cpu", ARIGNOTERC=str(tmp_path / "none"),
               PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, str(SCRIPTS / f"{name}.py")], capture_output=True, text=True,
                         env=env, timeout=600, check=False, cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert f"OK {name}" in out.stdout
