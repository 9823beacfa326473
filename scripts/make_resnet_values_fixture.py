"""Record what Keras 2.3.1's ResNet and ResNetV2 blocks compute, for tests/test_applications_resnet.py.

Two small networks from keras_applications 1.0.8's own ``resnet_common.ResNet`` builder (the
stem, then two stacks of ``stack1`` or ``stack2`` blocks with 4 and 8 filters: every kind of
block, shortcut and stride the full networks use), weights set by a formula the test repeats
(``fill`` below), on a 32x32 input made by a formula too: only the outputs are stored.

Run in the Keras 2.3.1 + Theano side venv (scripts/setup-keras2-venv.sh builds it):

    /work/k2venv/bin/python scripts/make_resnet_values_fixture.py tests/fixtures/keras2/resnet_values.json
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401  (Python 3.11 and h5py 3 fixes for Keras 2.3.1; must come first)
import numpy as np  # noqa: E402
from keras.applications import keras_modules_injection  # noqa: E402
from keras_applications import resnet_common  # noqa: E402


def fill(model):
    """Weights by formula, layer by layer in ``model.layers`` order (tests/test_applications_resnet.py
    has the same): kernels ~ sin / sqrt(fan_in), BN moving variances in 0.05..0.1 (epsilon shows)."""
    for k, layer in enumerate(layer for layer in model.layers if layer.get_weights()):
        values = []
        for j, w in enumerate(layer.get_weights()):
            wave = np.sin(0.37 * np.arange(w.size) + k + 0.5 * j).reshape(w.shape)
            if layer.__class__.__name__ == "BatchNormalization":
                wave = [1 + 0.2 * wave, 0.1 * wave, 0.1 * wave, 0.05 + 0.05 * np.abs(wave)][j]
            elif w.ndim > 1:
                wave = wave / np.sqrt(np.prod(w.shape[:-1]))
            else:
                wave = 0.1 * wave
            values.append(wave.astype("float32"))
        layer.set_weights(values)


def image():
    return (np.arange(32 * 32 * 3).reshape(1, 32, 32, 3) * 0.731 % 255 / 127.5 - 1).astype("float32")


def stacks(v2):
    c = resnet_common
    if v2:  # conv2: its last block strides (1x1 max-pooled shortcut); conv3 keeps the size
        return lambda x: c.stack2(c.stack2(x, 4, 2, name="conv2"), 8, 2, stride1=1, name="conv3")
    return lambda x: c.stack1(c.stack1(x, 4, 2, stride1=1, name="conv2"), 8, 2, name="conv3")


def main(out):
    import keras

    doc = {"keras": keras.__version__, "backend": keras.backend.backend(), "outputs": {}}
    for name, v2 in (("resnet", False), ("resnet_v2", True)):
        model = keras_modules_injection(resnet_common.ResNet)(
            stacks(v2), v2, True, "tiny_" + name, include_top=False, weights=None, input_shape=(32, 32, 3))
        fill(model)
        y = model.predict(image())
        doc["outputs"][name] = {"shape": list(y.shape), "values": [float(f"{v:.6g}") for v in y.ravel()]}
        print(name, y.shape, float(np.abs(y).mean()), flush=True)
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))


if __name__ == "__main__":
    main(sys.argv[1])
