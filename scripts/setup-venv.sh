#!/usr/bin/env bash
# Create or reuse the project's virtual environment and install arignote into it.
#
# PyTorch policy (see README "The two commands"):
#   * torch already importable by the venv        -> kept as it is.
#   * torch importable by the system python3      -> venv created with --system-site-packages, torch reused.
#   * no NVIDIA driver on this machine            -> the CPU build torch==$ARIGNOTE_TORCH_CPU (default 2.13.0)
#       from the CPU wheel index $ARIGNOTE_TORCH_CPU_INDEX (default https://download.pytorch.org/whl/cpu;
#       empty: the default index only), which replaces the default index for this one install, so an
#       index serving CUDA builds by default is never asked; pip's own configuration (find-links,
#       extra indexes of a local mirror) still applies. If that fails, the default index is tried, and
#       a CUDA build it serves is removed again with an error saying what to set. Extra pip arguments:
#       $ARIGNOTE_TORCH_PIP_ARGS.
#   * an NVIDIA driver is present                 -> the default (CUDA) build of torch.
# It prints which build it installed or kept.
#
# Usage: scripts/setup-venv.sh [VENV_DIR] [EXTRAS]
#   EXTRAS: the pip extras of arignote, e.g. "dev" (make test) or "" (make demo: the core only).
set -euo pipefail
VENV="${1:-.venv}"
EXTRAS="${2-dev}"
PYTHON="${PYTHON:-python3}"
TORCH_CPU="${ARIGNOTE_TORCH_CPU:-2.13.0}"
CPU_INDEX="${ARIGNOTE_TORCH_CPU_INDEX-https://download.pytorch.org/whl/cpu}"

if [ ! -x "$VENV/bin/python" ]; then
    if "$PYTHON" -c "import torch" >/dev/null 2>&1; then
        echo "setup: torch is importable by $PYTHON; reusing it (--system-site-packages)"
        "$PYTHON" -m venv --system-site-packages "$VENV"
    else
        "$PYTHON" -m venv "$VENV"
    fi
fi
PY="$VENV/bin/python"
BUILD='import torch; v = torch.version.cuda; print(torch.__version__, "(CPU build)" if v is None else f"(CUDA {v} build)")'

if "$PY" -c "import torch" >/dev/null 2>&1; then
    echo "setup: keeping torch $("$PY" -c "$BUILD")"
elif [ -e /proc/driver/nvidia/version ] || command -v nvidia-smi >/dev/null 2>&1; then
    echo "setup: NVIDIA driver found; installing the default (CUDA) build of torch"
    "$PY" -m pip install --quiet torch
    echo "setup: installed torch $("$PY" -c "$BUILD")"
else
    echo "setup: no NVIDIA driver; installing the CPU build torch==$TORCH_CPU"
    installed=no
    if [ -n "$CPU_INDEX" ]; then
        # shellcheck disable=SC2086
        if "$PY" -m pip install --quiet --retries 1 --timeout 30 --index-url "$CPU_INDEX" \
                "torch==$TORCH_CPU" ${ARIGNOTE_TORCH_PIP_ARGS:-}; then
            installed=yes
        else
            echo "setup: the CPU wheel index $CPU_INDEX did not serve torch==$TORCH_CPU; trying the default index" >&2
        fi
    fi
    if [ "$installed" = no ]; then
        # shellcheck disable=SC2086
        "$PY" -m pip install --quiet "torch==$TORCH_CPU" ${ARIGNOTE_TORCH_PIP_ARGS:-}
    fi
    if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.version.cuda is None else 1)"; then
        echo "setup: error: the index served a CUDA build of torch ($("$PY" -c "$BUILD")) on a machine" \
             "without an NVIDIA driver; removing it. Set ARIGNOTE_TORCH_CPU_INDEX to a reachable CPU wheel" \
             "index (or ARIGNOTE_TORCH_PIP_ARGS to pip arguments that reach one) and run again." >&2
        "$PY" -m pip uninstall --quiet --yes torch
        exit 1
    fi
    echo "setup: installed torch $("$PY" -c "$BUILD")"
fi

if [ -n "$EXTRAS" ]; then
    "$PY" -m pip install --quiet -e ".[$EXTRAS]"
else
    "$PY" -m pip install --quiet -e .
fi
echo "setup: ready ($VENV, arignote${EXTRAS:+[$EXTRAS]})"
