"""Regenerate tests/fixtures/keras2/theano_same/*.h5 + theano_same.npz: small Keras 2.3.1 models on the
Theano backend whose ``padding='same'`` layers pad differently from TensorFlow (even kernels: the odd
row of zeros before the image; strides > 1: windows anchored at ``-kernel // 2``; pooling: Theano's
own pads, cropped), for tests/test_theano_same_padding.py. The .npz keeps each model's input and
Keras's prediction.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    /work/k2venv/bin/python scripts/make_keras2_theano_same_fixture.py

``check DIR`` is the other way: Keras loads the files arignote saved again from these (``NAME.h5`` in
DIR, e.g. ``load_model(fixture).save(DIR/NAME.h5)``, what tests/test_theano_same_padding.py does) and
must predict what it predicted from its own (exit status 1 otherwise)::

    .venv/bin/python -c "from arignote.models import load_model as l; import sys; d='tests/fixtures/keras2/\
theano_same/'; [l(d + n + '.h5').save('/tmp/ts_' + n + '.h5') for n in sys.argv[1:]]" conv1d conv2d ...
    /work/k2venv/bin/python scripts/make_keras2_theano_same_fixture.py check /tmp/ts_
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import numpy as np  # noqa: E402
from keras import layers as L  # noqa: E402
from keras.models import Model, Sequential  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "tests", "fixtures", "keras2", "theano_same")


def conv1d():
    return Sequential([L.Conv1D(3, 2, padding="same", input_shape=(7, 2), name="k2"),
                       L.Conv1D(2, 4, strides=2, padding="same", name="k4s2"),
                       L.Conv1D(2, 3, strides=2, padding="same", name="k3s2")])


def conv2d():
    return Sequential([L.Conv2D(3, (2, 3), padding="same", input_shape=(5, 6, 2), name="k23"),
                       L.Conv2D(2, 2, padding="same", dilation_rate=2, name="k2d2"),
                       L.Conv2D(2, 3, strides=2, padding="same", name="k3s2")])


def conv3d():
    return Sequential([L.Conv3D(2, 2, padding="same", input_shape=(3, 4, 4, 1), name="k2"),
                       L.Conv3D(2, (1, 2, 3), padding="same", data_format="channels_last", name="k123")])


def conv2d_cf():
    return Sequential([L.Conv2D(2, 2, padding="same", data_format="channels_first", input_shape=(2, 5, 4),
                                name="k2")])


def separable():
    # (an even-kernel 'same' SeparableConv on Theano outputs one row/column more than its shape says)
    return Sequential([L.SeparableConv2D(2, 3, strides=2, padding="same", input_shape=(6, 5, 2), name="sep"),
                       L.DepthwiseConv2D(2, padding="same", name="dw")])


def separable1d():
    return Sequential([L.SeparableConv1D(2, 3, strides=2, padding="same", input_shape=(6, 2), name="sep")])


def pooling2d():
    x = L.Input((5, 6, 2))
    outs = [L.Flatten()(L.MaxPooling2D(2, padding="same", name="max2")(x)),
            L.Flatten()(L.AveragePooling2D(2, padding="same", name="avg2")(x)),
            L.Flatten()(L.MaxPooling2D(3, strides=2, padding="same", name="max3s2")(x)),
            L.Flatten()(L.AveragePooling2D(3, strides=1, padding="same", name="avg3")(x)),
            L.Flatten()(L.AveragePooling2D(4, strides=1, padding="same", name="avg4")(x))]
    return Model(x, L.Concatenate()(outs))


def pooling1d():
    x = L.Input((7, 2))
    outs = [L.MaxPooling1D(2, padding="same", name="max2")(x),
            L.AveragePooling1D(3, strides=2, padding="same", name="avg3s2")(x)]
    return Model(x, L.Concatenate(axis=1)(outs))


def pooling3d():
    x = L.Input((3, 4, 5, 1))
    outs = [L.Flatten()(L.MaxPooling3D(2, padding="same", name="max2")(x)),
            L.Flatten()(L.AveragePooling3D(3, strides=1, padding="same", name="avg3")(x))]
    return Model(x, L.Concatenate()(outs))


def conv_transpose():
    # (Keras 2.3.1 on Theano refuses even kernels with padding='same' in its transposed convolutions)
    x = L.Input((3, 4, 2))
    outs = [L.Conv2DTranspose(2, 3, strides=2, padding="same", name="k3s2")(x),
            L.Conv2DTranspose(2, (3, 5), padding="same", name="k35")(x),
            L.Conv2DTranspose(2, 5, strides=3, padding="same", name="k5s3")(x)]
    return Model(x, L.Concatenate()([L.Flatten()(o) for o in outs]))


def conv3d_transpose():
    return Sequential([L.Conv3DTranspose(2, 3, strides=2, padding="same", input_shape=(2, 3, 2, 1),
                                         name="k3s2"),
                       L.Conv3DTranspose(1, 3, padding="same", name="k3")])


MODELS = [conv1d, conv2d, conv3d, conv2d_cf, separable, separable1d, pooling1d, pooling2d, pooling3d,
          conv_transpose, conv3d_transpose]


def main():
    os.makedirs(HERE, exist_ok=True)
    rng = np.random.RandomState(7)
    arrays = {}
    for make in MODELS:
        model = make()
        for w in model.weights:  # biases too, so a border shift cannot hide behind zeros
            w.set_value(rng.uniform(-1, 1, w.get_value().shape).astype("float32"))
        x = rng.uniform(-1, 1, (2, *model.input_shape[1:])).astype("float32")
        model.save(os.path.join(HERE, make.__name__ + ".h5"))
        arrays[make.__name__ + "_x"] = x
        arrays[make.__name__ + "_y"] = model.predict(x)
    np.savez_compressed(os.path.join(HERE, "theano_same.npz"), **arrays)


def check(prefix):
    from keras.models import load_model

    arrays = np.load(os.path.join(HERE, "theano_same.npz"))
    worst = 0.0
    for make in MODELS:
        path = prefix + make.__name__ + ".h5"
        if not os.path.exists(path):
            continue
        x, y = arrays[make.__name__ + "_x"], arrays[make.__name__ + "_y"]
        if make.__name__.endswith("_cf"):  # arignote rebuilt it channels-last
            x, y = x.transpose(0, 2, 3, 1), y.transpose(0, 2, 3, 1)
        diff = float(np.abs(load_model(path, compile=False).predict(x) - y).max())
        worst = max(worst, diff)
        print(make.__name__, "max |difference|", diff)
    sys.exit(1 if worst > 1e-5 else 0)


if __name__ == "__main__":
    if sys.argv[1:2] == ["check"]:
        check(sys.argv[2])
    else:
        main()
