"""``TimeDistributed(model)``: a model applied to every frame (the Keras 2 functional API guide's video
question answering example): it trains the wrapped model's own weights, equals the model run frame
by frame, keeps its weights through get/set_weights and save/load, and a real Keras 2.3.1 file with
one loads and predicts as Keras did (fixture: scripts/make_keras2_td_model_fixture.py)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from arignote.layers import (
    LSTM,
    Conv2D,
    Dense,
    Embedding,
    Flatten,
    Input,
    MaxPooling2D,
    TimeDistributed,
    concatenate,
)
from arignote.models import Model, Sequential, load_model

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "keras2")
RNG = np.random.default_rng(0)
VIDEO = RNG.random((16, 5, 12, 12, 3), dtype=np.float32)
QUESTION = RNG.integers(0, 20, (16, 6))
ANSWER = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 16)]


def _vision():
    torch.manual_seed(0)
    return Sequential([Conv2D(4, (3, 3), activation="relu", input_shape=(12, 12, 3)), MaxPooling2D(),
                       Flatten()])


def _video_qa(vision):
    video = Input(shape=(5, 12, 12, 3))
    encoded_video = LSTM(8)(TimeDistributed(vision)(video))
    question = Input(shape=(6,), dtype="int32")
    encoded_question = LSTM(8)(Embedding(20, 4, input_length=6)(question))
    answer = Dense(3, activation="softmax")(concatenate([encoded_video, encoded_question]))
    model = Model([video, question], answer)
    model.compile("adam", "categorical_crossentropy")
    return model


def test_the_video_example_trains_the_wrapped_model_s_own_weights():
    vision = _vision()
    model = _video_qa(vision)
    before = [w.copy() for w in vision.get_weights()]
    history = model.fit([VIDEO, QUESTION], ANSWER, epochs=3, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert all(not np.array_equal(a, b) for a, b in zip(before, vision.get_weights()))


def test_it_is_the_model_run_on_every_frame():
    vision = _vision()
    video = Input(shape=(5, 12, 12, 3))
    per_frame = Model(video, TimeDistributed(vision)(video))
    out = per_frame.predict(VIDEO[:4])
    assert out.shape == (4, 5, 100)
    for t in range(5):
        np.testing.assert_allclose(out[:, t], vision.predict(VIDEO[:4, t]), rtol=1e-5, atol=1e-6)


def test_its_weights_are_the_model_s_and_survive_save_and_load(tmp_path):
    vision = _vision()
    model = _video_qa(vision)
    wrapper = next(layer for layer in model.layers if isinstance(layer, TimeDistributed))
    assert [w.shape for w in wrapper.get_weights()] == [w.shape for w in vision.get_weights()]
    wrapper.set_weights([w * 0 + 0.01 for w in wrapper.get_weights()])
    assert all(np.allclose(w, 0.01) for w in vision.get_weights())
    model.fit([VIDEO, QUESTION], ANSWER, epochs=1, batch_size=8, verbose=0)
    path = str(tmp_path / "video_qa.h5")
    model.save(path)
    again = load_model(path)
    np.testing.assert_allclose(again.predict([VIDEO, QUESTION]), model.predict([VIDEO, QUESTION]),
                               rtol=1e-5, atol=1e-6)


def test_a_keras_2_file_with_a_model_inside_time_distributed_loads():
    model = load_model(os.path.join(FIXTURES, "td_model.h5"))
    data = np.load(os.path.join(FIXTURES, "td_model.npz"))
    np.testing.assert_allclose(model.predict(data["x"]), data["y"], rtol=1e-5, atol=1e-5)
    assert type(model.layers[1]).__name__ == "TimeDistributed"


def test_only_layers_and_models_can_be_wrapped():
    with pytest.raises(ValueError, match="wraps an arignote layer .* or model"):
        TimeDistributed(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="wraps an arignote layer"):
        TimeDistributed(Dense)
