"""Keras-2-style scripts (tests/keras2_scripts/) run unmodified apart from the import rename (``keras`` ->
``arignote``): siamese network, convolutional autoencoder, VAE with a custom loss over graph tensors,
sequence-to-sequence with RepeatVector + TimeDistributed, a custom layer saved and reloaded, callbacks
(checkpoints, early stopping, schedules, CSV), a stateful LSTM, the functional API guide, custom objects
saved and reloaded, a channels-first Theano-era script, the "very little data" image workflow
(flow_from_directory, bottleneck features, fine-tuning), scikit-learn wrappers, filter visualization by
gradient ascent; two Keras 1.2-era scripts in Keras 1 argument names (``Convolution2D(32, 3, 3,
border_mode=)``, ``nb_epoch``, ``samples_per_epoch``); and the most-copied 2016-2019 blog tutorials: a
first MLP on a CSV table, k-fold multi-class, LSTM look-back windows, IMDB-like CNN+LSTM, character-level
text generation, saving and loading, learning-rate schedules, class weights, generators, intermediate
outputs and per-batch losses, Bidirectional and GRU, a GAN trained with train_on_batch and
``discriminator.trainable = False`` before compiling the combined model, multi-label images with
hand-written F1 / precision / recall metrics, a triplet loss (K.maximum, a Lambda with K.l2_normalize,
dummy targets), transfer learning on MobileNet(include_top=False) with a frozen base, then fine-tuning
the top block after recompiling with a low learning rate, multi-step forecasting with an encoder-decoder
LSTM and MinMaxScaler, custom attention layers (the Kaggle masked one and the short one) on recurrent
layers with return_sequences=True, a hand-written grid search (a Sequence read by fit_generator with
workers=2, a generator for validation_data with validation_steps, CSVLogger and TensorBoard per run,
K.clear_session between models), an image-captioning merge model (photo features and an Embedding + LSTM
joined by add, two inputs, greedy decoding). Each script asserts on what it learned and prints ``OK
<name>``; scripts/run_keras2_scripts_on_keras.py runs them on real Keras 2.3.1 (each script's docstring
says whether it was checked there)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "keras2_scripts"
SRC = Path(__file__).resolve().parent.parent / "src"


NAMES = ["siamese", "autoencoder", "vae", "seq2seq", "custom_layer", "callbacks_tour", "stateful_lstm",
         "little_data", "sklearn_wrapper", "functional_guide", "filter_visualization", "custom_objects",
         "theano_habits", "keras1_cnn", "keras1_text", "pima_mlp", "kfold_multiclass", "lstm_window",
         "imdb_cnn_lstm", "char_textgen", "save_load", "lr_schedules", "class_weight", "generators",
         "introspection", "bidirectional_gru", "gan_1d", "multilabel_f1", "triplet_loss",
         "mobilenet_transfer", "multistep_forecast", "attention_lstm",
         "grid_search_loop", "caption_merge"]


@pytest.mark.parametrize("name", NAMES)
def test_keras2_script_runs_unmodified(name, tmp_path):
    if name == "sklearn_wrapper":
        pytest.importorskip("sklearn")
    text = (SCRIPTS / f"{name}.py").read_text()
    assert "import keras" not in text and "from keras" not in text  # only the rename was applied
    env = dict(os.environ, ARIGNOTE_FLAGS="device=cpu", ARIGNOTERC=str(tmp_path / "none"),
               PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, str(SCRIPTS / f"{name}.py")], capture_output=True, text=True,
                         env=env, timeout=600, check=False, cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert f"OK {name}" in out.stdout
