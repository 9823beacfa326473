"""Record what Keras 2.3.1's applications look like, for tests/test_applications.py.

For every network (weights=None, the default input, the classifier top, channels_last) it writes
the parameter count and, in ``model.layers`` order, each layer that has weights: its class and
the shapes of its weights in Keras's order. Loading a Keras 2 weight file without ``by_name``
pairs layers in exactly this order, so arignote's networks must list the same sequence.

A network is named as ``keras.applications`` exports it (``ResNet101``) or by module and name
where the module's network differs from the package's (``resnet.ResNet50`` is keras_applications'
resnet_common ResNet50, not ``keras.applications.ResNet50`` from the old ``resnet50`` module).

Run in the Keras 2.3.1 + Theano side venv (scripts/setup-keras2-venv.sh builds it):

    /work/k2venv/bin/python scripts/make_applications_fixture.py tests/fixtures/keras2/applications.json

With network names after the file, only those are (re)recorded and merged into the existing file:

    /work/k2venv/bin/python scripts/make_applications_fixture.py tests/fixtures/keras2/applications.json \\
        resnet.ResNet50 ResNet101
"""

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401  (Python 3.11 and h5py 3 fixes for Keras 2.3.1; must come first)
from keras import applications  # noqa: E402

NETWORKS = ["VGG16", "VGG19", "ResNet50", "InceptionV3", "Xception", "MobileNet", "MobileNetV2",
            "DenseNet121", "DenseNet169", "DenseNet201", "NASNetMobile", "InceptionResNetV2",
            "resnet.ResNet50", "ResNet101", "ResNet152", "ResNet50V2", "ResNet101V2", "ResNet152V2"]


def network(name):
    """``ResNet101`` from ``keras.applications``; ``resnet.ResNet50`` from ``keras.applications.resnet``."""
    owner = applications
    for part in name.split(".")[:-1]:
        owner = getattr(owner, part)
    return getattr(owner, name.split(".")[-1])


# networks whose weighted layers' names are stored in full (the others, deeper versions of the same
# builders, by MD5 of the names joined by newlines: the file stays small)
NAMED = {"resnet.ResNet50", "ResNet50V2"}
DIGESTED = {"ResNet101", "ResNet152", "ResNet101V2", "ResNet152V2"}


def describe(name):
    model = network(name)(weights=None)
    from keras import backend as K

    layers = [[layer.__class__.__name__, [list(K.int_shape(w)) for w in layer.weights]]
              for layer in model.layers if layer.weights]
    doc = {"params": int(model.count_params()), "name": model.name, "layers": layers,
           "output_shape": list(model.output_shape)}
    names = [layer.name for layer in model.layers if layer.weights]
    if name in NAMED:
        doc["names"] = names
    if name in NAMED | DIGESTED:
        doc["names_md5"] = hashlib.md5("\n".join(names).encode()).hexdigest()
    return doc


def main(out):
    import keras

    doc = {"keras": keras.__version__, "backend": keras.backend.backend(), "networks": {}}
    names = sys.argv[2:]
    if names and os.path.exists(out):  # a few networks again: keep every other one recorded
        with open(out) as f:
            old = json.load(f)
        if (old["keras"], old["backend"]) != (doc["keras"], doc["backend"]):
            raise SystemExit(f"{out} was written by Keras {old['keras']} ({old['backend']}), not "
                             f"{doc['keras']} ({doc['backend']}): regenerate it whole (no network names)")
        doc["networks"] = old["networks"]
    for name in names or NETWORKS:
        doc["networks"][name] = describe(name)
        if hasattr(keras.backend, "clear_session"):  # TensorFlow only: Theano has no session
            keras.backend.clear_session()
        print(name, doc["networks"][name]["params"], len(doc["networks"][name]["layers"]), flush=True)
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))


if __name__ == "__main__":
    main(sys.argv[1])
