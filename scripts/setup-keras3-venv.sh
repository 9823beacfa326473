#!/usr/bin/env bash
# Build the side venv that runs Keras 3 (torch backend) for
#   KERAS_BACKEND=torch /work/k3venv/bin/python scripts/check_keras2_reads_ours.py check3 DIR
# which checks Keras 3's legacy HDF5 loader on the files arignote writes. Not part of the
# project's venv: the test suite never needs Keras.
#
#   bash scripts/setup-keras3-venv.sh [/work/k3venv] [PROJECT_VENV]
#
# Keras 3 does not depend on torch; torch comes from the project's venv (PROJECT_VENV, default
# ./.venv) through a .pth file, so pip never pulls a (CUDA) torch build here.
set -euo pipefail
VENV="${1:-/work/k3venv}"
PROJECT_VENV="$(cd "${2:-.venv}" && pwd)"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q keras numpy h5py
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
OTHER="$("$PROJECT_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$OTHER" > "$SITE/zz_project_torch.pth"   # appended after the venv's own packages: its numpy wins
KERAS_BACKEND=torch "$VENV/bin/python" -c "import keras, torch; print('keras3 venv ready: keras', keras.__version__, 'torch', torch.__version__)"
