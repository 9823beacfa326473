#!/usr/bin/env bash
# Create or reuse the project's virtual environment and install arignote into it.
#
# PyTorch policy (see README "Setup"):
#   * torch already importable by the venv        -> kept as it is.
#   * torch importable by the system python3      -> venv created with --system-site-packages, torch reused.
#   * no NVIDIA driver on this machine            -> CPU build: torch==$ARIGNOTE_TORCH_CPU (default 2.13.0),
#                                                    extra pip arguments from $ARIGNOTE_TORCH_PIP_ARGS
#                                                    (e.g. "--index-url <your CPU wheel index>").
#   * an NVIDIA driver is present                 -> the default CUDA build of torch.
# Usage: scripts/setup-venv.sh [VENV_DIR]
set -euo pipefail
VENV="${1:-.venv}"
PYTHON="${PYTHON:-python3}"
TORCH_CPU="${ARIGNOTE_TORCH_CPU:-2.13.0}"

if [ ! -x "$VENV/bin/python" ]; then
    if "$PYTHON" -c "import torch" >/dev/null 2>&1; then
        echo "setup: torch is importable by $PYTHON; reusing it (--system-site-packages)"
        "$PYTHON" -m venv --system-site-packages "$VENV"
    else
        "$PYTHON" -m venv "$VENV"
    fi
fi
PY="$VENV/bin/python"

if "$PY" -c "import torch" >/dev/null 2>&1; then
    echo "setup: keeping torch $("$PY" -c 'import torch; print(torch.__version__)')"
elif [ -e /proc/driver/nvidia/version ] || command -v nvidia-smi >/dev/null 2>&1; then
    echo "setup: NVIDIA driver found; installing the CUDA build of torch"
    "$PY" -m pip install --quiet torch
else
    echo "setup: no NVIDIA driver; installing the CPU build torch==$TORCH_CPU (no CUDA wheels)"
    # shellcheck disable=SC2086
    "$PY" -m pip install --quiet "torch==$TORCH_CPU" numpy ${ARIGNOTE_TORCH_PIP_ARGS:-}
    if "$PY" -c "import torch,sys; sys.exit(0 if torch.version.cuda is None else 1)"; then :; else
        echo "setup: warning: the torch installed is a CUDA build; set ARIGNOTE_TORCH_PIP_ARGS to a CPU wheel index" >&2
    fi
fi

"$PY" -m pip install --quiet -e ".[dev]"
echo "setup: ready ($VENV)"
