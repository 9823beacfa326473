"""scripts/setup-venv.sh picks the CPU build of torch without an NVIDIA driver, whatever the default
index serves, and says which build it installed. pip and python are stubbed: nothing is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "setup-venv.sh"

# A stand-in for the venv's python: `-c` checks read a marker file (which torch build is
# "installed"), `-m pip install torch...` writes it from what the fake indexes serve, and every
# call is logged.
FAKE_PYTHON = r"""#!/usr/bin/env bash
d="$FAKE_DIR"
echo "$*" >> "$d/log"
if [ "$1" = "-c" ]; then
    case "$2" in
        *"torch.version.cuda is None"*) [ "$(cat "$d/torch" 2>/dev/null)" = cpu ]; exit $? ;;
        *"print(torch.__version__"*)
            if [ "$(cat "$d/torch")" = cpu ]; then echo "2.13.0+cpu (CPU build)"
            else echo "2.13.0 (CUDA 12.8 build)"; fi
            exit 0 ;;
        "import torch") [ -e "$d/torch" ]; exit $? ;;
    esac
    exit 0
fi
if [ "$1 $2 $3" = "-m pip install" ]; then
    case "$*" in
        *torch==*)
            case "$*" in
                *--index-url*) [ "$FAKE_CPU_INDEX" = up ] || exit 1; echo cpu > "$d/torch" ;;
                *) echo "$FAKE_DEFAULT_SERVES" > "$d/torch" ;;
            esac ;;
    esac
    exit 0
fi
if [ "$1 $2 $3" = "-m pip uninstall" ]; then rm -f "$d/torch"; fi
exit 0
"""

pytestmark = pytest.mark.skipif(
    os.path.exists("/proc/driver/nvidia/version") or shutil.which("nvidia-smi") is not None,
    reason="this machine has an NVIDIA driver: the script would take its CUDA path")


def setup(tmp_path, cpu_index: str, default_serves: str, torch_present: bool = False, extras: str = "dev"):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    if torch_present:
        (tmp_path / "torch").write_text("cpu")
    env = dict(os.environ, FAKE_DIR=str(tmp_path), FAKE_CPU_INDEX=cpu_index,
               FAKE_DEFAULT_SERVES=default_serves)
    env.pop("ARIGNOTE_TORCH_CPU_INDEX", None)
    proc = subprocess.run(["bash", str(SCRIPT), str(venv), extras], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    log = (tmp_path / "log").read_text().splitlines()
    build = (tmp_path / "torch").read_text().strip() if (tmp_path / "torch").exists() else None
    return proc, log, build


def test_cpu_index_wins_over_a_default_index_serving_cuda(tmp_path):
    proc, log, build = setup(tmp_path, cpu_index="up", default_serves="cuda")
    assert proc.returncode == 0, proc.stderr
    assert build == "cpu"
    torch_installs = [line for line in log if "torch==2.13.0" in line]
    assert len(torch_installs) == 1
    assert "--index-url https://download.pytorch.org/whl/cpu" in torch_installs[0]
    assert "setup: installed torch 2.13.0+cpu (CPU build)" in proc.stdout


def test_unreachable_cpu_index_falls_back_to_a_default_serving_the_cpu_build(tmp_path):
    # this machine's case: the PyTorch index is unreachable, the local registry serves 2.13.0+cpu
    proc, log, build = setup(tmp_path, cpu_index="down", default_serves="cpu")
    assert proc.returncode == 0, proc.stderr
    assert build == "cpu" and "did not serve torch==2.13.0; trying the default index" in proc.stderr
    assert "setup: installed torch 2.13.0+cpu (CPU build)" in proc.stdout


def test_a_cuda_build_from_the_default_index_is_removed_with_an_error(tmp_path):
    proc, log, build = setup(tmp_path, cpu_index="down", default_serves="cuda")
    assert proc.returncode == 1
    assert build is None and any(line.startswith("-m pip uninstall") for line in log)
    assert "served a CUDA build of torch (2.13.0 (CUDA 12.8 build))" in proc.stderr
    assert "ARIGNOTE_TORCH_CPU_INDEX" in proc.stderr
    assert not any("-e ." in line for line in log)  # stopped before installing arignote


def test_torch_already_there_is_kept_and_named(tmp_path):
    proc, log, _ = setup(tmp_path, cpu_index="up", default_serves="cuda", torch_present=True)
    assert proc.returncode == 0
    assert "setup: keeping torch 2.13.0+cpu (CPU build)" in proc.stdout
    assert not any("torch==" in line for line in log)


def test_demo_installs_the_core_only(tmp_path):
    proc, log, _ = setup(tmp_path, cpu_index="up", default_serves="cpu", extras="")
    assert proc.returncode == 0
    assert log[-1] == "-m pip install --quiet -e ."
    proc, log, _ = setup(tmp_path / "dev", cpu_index="up", default_serves="cpu", extras="dev")
    assert log[-1] == "-m pip install --quiet -e .[dev]"


def test_makefile_demo_uses_the_core_install():
    text = (ROOT / "Makefile").read_text()
    assert 'demo: $(CORE)' in text and 'setup-venv.sh $(VENV) ""' in text
    assert "test: $(DEV)" in text
