#!/usr/bin/env bash
# Build the side venv that runs real Keras 2.3.1 (Theano 1.0.5 backend) for
# scripts/make_keras2_fixtures.py and scripts/check_keras2_reads_ours.py.
# Not part of the project's own venv: the test suite never needs it.
#
#   bash scripts/setup-keras2-venv.sh [/work/k2venv]
#
# Pins: Keras 2.3.1 and Theano 1.0.5 predate numpy 1.24 (np.bool etc. removed) and
# scipy 1.12 (scipy.sparse API Theano uses); h5py 3 is fine for writing, and the
# scripts' shim hands string attributes back as bytes for Keras 2's readers.
# Theano compiles C with g++; THEANO_FLAGS is set by the scripts (no BLAS link,
# compiledir in /tmp).
set -euo pipefail
VENV="${1:-/work/k2venv}"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q "keras==2.3.1" "theano==1.0.5" "numpy<1.24" "scipy<1.12" "h5py" "pillow"
THEANO_FLAGS="blas.ldflags=,base_compiledir=${TMPDIR:-/tmp}/theano-keras2-check" \
    "$VENV/bin/python" -c "import keras_applications, theano, h5py, numpy; print('keras2 venv ready:', numpy.__version__)"
