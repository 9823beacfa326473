"""Regenerate tests/fixtures/keras2/td_model.h5 / .npz: a Keras 2.3.1 (Theano backend) model that
applies a small vision model to every frame of a video with ``TimeDistributed(vision_model)`` (the
Keras functional API guide's video example, shrunk), trained a little and saved by Keras's own
``model.save``; the .npz keeps an input (``x``) and Keras's prediction (``y``), for
tests/test_time_distributed_model.py and tests/test_keras2_h5_files.py.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/td_theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_td_model_fixture.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import numpy as np  # noqa: E402
from keras.layers import Conv2D, Dense, Flatten, Input, MaxPooling2D, TimeDistributed  # noqa: E402
from keras.models import Model, Sequential  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2")


def main():
    rng = np.random.RandomState(0)
    vision = Sequential([Conv2D(3, (3, 3), activation="relu", input_shape=(8, 8, 2), name="frame_conv"),
                         MaxPooling2D(name="frame_pool"), Flatten(name="frame_flat")], name="vision")
    video = Input(shape=(4, 8, 8, 2), name="video")
    frames = TimeDistributed(vision, name="per_frame")(video)
    # (an LSTM needs scan, which Theano cannot compile here)
    out = Dense(2, name="out")(Flatten(name="flat")(frames))
    model = Model(video, out)
    model.compile("adam", "mse")
    x = rng.normal(size=(12, 4, 8, 8, 2)).astype("float32")
    model.fit(x, rng.normal(size=(12, 2)).astype("float32"), epochs=2, batch_size=4, verbose=0)
    model.save(os.path.join(HERE, "td_model.h5"))
    np.savez(os.path.join(HERE, "td_model.npz"), x=x[:3], y=model.predict(x[:3]))
    print([w.name for w in model.weights])


if __name__ == "__main__":
    main()
