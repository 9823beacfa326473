"""Record what Keras 2.3.1's applications look like, for tests/test_applications.py.

For every network (weights=None, the default input, the classifier top, channels_last) it writes
the parameter count and, in ``model.layers`` order, each layer that has weights: its class and
the shapes of its weights in Keras's order. Loading a Keras 2 weight file without ``by_name``
pairs layers in exactly this order, so arignote's networks must list the same sequence.

Run in the Keras 2.3.1 + Theano side venv (scripts/setup-keras2-venv.sh builds it):

    /work/k2venv/bin/python scripts/make_applications_fixture.py tests/fixtures/keras2/applications.json
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401  (Python 3.11 and h5py 3 fixes for Keras 2.3.1; must come first)

from keras import applications  # noqa: E402

NETWORKS = ["VGG16", "VGG19", "ResNet50", "InceptionV3", "Xception", "MobileNet", "MobileNetV2", "DenseNet121",
            "DenseNet169", "DenseNet201", "NASNetMobile", "InceptionResNetV2"]


def describe(name):
    model = getattr(applications, name)(weights=None)
    from keras import backend as K

    layers = [[layer.__class__.__name__, [list(K.int_shape(w)) for w in layer.weights]]
              for layer in model.layers if layer.weights]
    return {"params": int(model.count_params()), "name": model.name, "layers": layers,
            "output_shape": list(model.output_shape)}


def main(out):
    import keras

    doc = {"keras": keras.__version__, "backend": keras.backend.backend(), "networks": {}}
    for name in sys.argv[2:] or NETWORKS:
        doc["networks"][name] = describe(name)
        if hasattr(keras.backend, "clear_session"):  # TensorFlow only: Theano has no session
            keras.backend.clear_session()
        print(name, doc["networks"][name]["params"], len(doc["networks"][name]["layers"]), flush=True)
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))


if __name__ == "__main__":
    main(sys.argv[1])
