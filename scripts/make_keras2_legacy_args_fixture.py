"""Regenerate tests/fixtures/keras2/legacy_args.json: what real Keras 2.3.1 (Theano backend) made of
Keras 1 argument names (``keras/legacy/interfaces.py``), for tests/test_legacy_interfaces.py.

For each layer call in ``LAYER_CALLS`` (source text, evaluated with ``keras.layers`` names plus
``l1``, ``l2``, ``maxnorm``, ``nonneg``) it records the layer's ``get_config()`` without ``name``, the
warnings it raised (category and text) or the error (type and text). For each generator-method call
in ``METHOD_CALLS`` it records the arguments Keras's converter handed to the method (``gen`` is a
generator, ``bgen`` an iterator with ``batch_size = 4``), and for ``fit(..., nb_epoch=2)``,
``Model(input=, output=)`` and Keras 1's ``add_weight(shape, initializer, name=)`` what Keras did.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    THEANO_FLAGS=base_compiledir=/tmp/legacy_theano,blas.ldflags=,floatX=float32 \\
        /work/k2venv/bin/python scripts/make_keras2_legacy_args_fixture.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import json  # noqa: E402
import warnings  # noqa: E402

import keras  # noqa: E402
import keras.layers  # noqa: E402
import keras.layers.convolutional  # noqa: E402
import numpy as np  # noqa: E402
from keras.constraints import maxnorm, nonneg  # noqa: E402
from keras.legacy import interfaces  # noqa: E402
from keras.regularizers import l1, l2  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "keras2", "legacy_args.json")

_WEIGHTS = "W_regularizer=l2(0.01), b_regularizer=l1(0.01), W_constraint=maxnorm(2), b_constraint=nonneg()"
LAYER_CALLS = [
    # Dense
    "Dense(output_dim=10, init='uniform')",
    f"Dense(10, {_WEIGHTS}, bias=False)",
    "Dense(output_dim=4, input_dim=3, activation='relu')",
    "Dense(3, output_dim=3)",
    "Dense(3, units=3, output_dim=3)",
    "Dense(3, 'relu')",
    # dropout and noise
    "Dropout(p=0.5)",
    "Dropout(0.5, None, 1, 2)",
    "SpatialDropout1D(p=0.2)",
    "SpatialDropout2D(p=0.2, dim_ordering='th')",
    "SpatialDropout3D(p=0.2, dim_ordering='tf')",
    "GaussianNoise(sigma=0.1)",
    "GaussianDropout(p=0.3)",
    "PReLU(init='zero')",
    # embedding
    "Embedding(1000, 64, input_length=10, init='uniform', W_regularizer=l2(0.01), W_constraint=maxnorm(2))",
    "Embedding(1000, 64, input_length=10, dropout=0.2)",
    "Embedding(1000, 64, 10)",
    # pooling
    "MaxPooling1D(pool_length=2, stride=1, border_mode='same')",
    "AveragePooling1D(pool_length=3)",
    "MaxPooling2D(pool_size=(2, 2), border_mode='same', dim_ordering='th')",
    "MaxPooling2D((2, 2), (1, 1), 'valid', dim_ordering='tf')",
    "AveragePooling2D((3, 3), dim_ordering='default')",
    "MaxPooling3D(border_mode='same', dim_ordering='th')",
    "AveragePooling3D(dim_ordering='tf')",
    "GlobalMaxPooling2D(dim_ordering='th')",
    "GlobalAveragePooling2D(dim_ordering='tf')",
    "GlobalMaxPooling3D(dim_ordering='th')",
    "GlobalAveragePooling3D(dim_ordering='default')",
    # resampling, padding, cropping
    "UpSampling1D(length=3)",
    "UpSampling2D(size=(2, 2), dim_ordering='th')",
    "UpSampling3D(dim_ordering='tf')",
    "ZeroPadding2D(padding={'top_pad': 1, 'bottom_pad': 2, 'left_pad': 3, 'right_pad': 4})",
    "ZeroPadding2D({'top_pad': 1, 'left_pad': 2})",
    "ZeroPadding2D((1, 1), dim_ordering='th')",
    "ZeroPadding3D(dim_ordering='tf')",
    "Cropping2D(cropping=((1, 1), (2, 2)), dim_ordering='th')",
    "Cropping3D(dim_ordering='tf')",
    # convolutions
    "Convolution1D(nb_filter=16, filter_length=3, subsample_length=2, border_mode='same', init='he_normal', "
    f"{_WEIGHTS}, bias=False)",
    "Convolution1D(8, 3, input_dim=5, input_length=20)",
    "Convolution1D(8, 3, input_dim=5)",
    "Convolution2D(32, 3, 3, border_mode='same', init='he_normal', subsample=(2, 2), dim_ordering='th')",
    "Convolution2D(32, 3, 3, input_shape=(3, 32, 32), activation='relu')",
    "Convolution2D(32, 3, nb_col=5)",
    "Convolution2D(32, nb_row=3, nb_col=2)",
    "Convolution2D(nb_filter=8, nb_row=3, nb_col=3)",
    "Convolution2D(32, 3, 3, padding='same')",
    "Convolution2D(32, 3, 3, 3, 3)",
    f"Convolution2D(32, (3, 3), {_WEIGHTS}, bias=False)",
    "Conv2D(32, 3, border_mode='valid', padding='same')",
    "Conv2D(32, 3, 3, dim_ordering='default')",
    "Deconvolution2D(8, 3, 3, (None, 14, 14, 8), subsample=(2, 2), border_mode='same')",
    "Deconvolution2D(8, 3, 3, output_shape=(None, 14, 14, 8), init='he_normal')",
    "SeparableConv2D(8, 3, 3, init='he_normal', border_mode='same', depth_multiplier=2, "
    "b_regularizer=l1(0.01))",
    "Convolution3D(4, 3, 3, 3, border_mode='same', dim_ordering='th', init='he_normal')",
    "Convolution3D(4, 3, 3, kernel_dim3=2)",
    "Convolution3D(4, 3, kernel_dim2=2, kernel_dim3=1)",
    "Convolution3D(4, kernel_dim1=3, kernel_dim2=2, kernel_dim3=1)",
    "Convolution3D(nb_filter=4, kernel_dim1=3, kernel_dim2=2, kernel_dim3=1)",
    "Convolution3D(4, 3, 3, 3, 3)",
    "LocallyConnected1D(8, 3, subsample_length=1, init='uniform', input_dim=5, input_length=10)",
    "LocallyConnected2D(8, 3, 3, subsample=(1, 1), dim_ordering='tf', bias=False)",
    # normalization
    "BatchNormalization(mode=0, axis=1, beta_init='one', gamma_init='zero')",
    "BatchNormalization(mode=2)",
    "BatchNormalization(1)",
    # recurrent
    "SimpleRNN(output_dim=8, input_dim=5, input_length=10, init='uniform', inner_init='identity', "
    "W_regularizer=l2(0.01), U_regularizer=l2(0.01), b_regularizer=l1(0.01), dropout_W=0.1, dropout_U=0.2)",
    "SimpleRNN(8, consume_less='gpu')",
    "GRU(output_dim=8, inner_activation='sigmoid', consume_less='mem', input_dim=5)",
    "LSTM(output_dim=8, input_dim=5, input_length=10, consume_less='gpu', dropout_W=0.1, dropout_U=0.2, "
    "forget_bias_init='one')",
    "LSTM(8, forget_bias_init='zero', consume_less='cpu')",
    "LSTM(8, return_sequences=True, consume_less='mem', inner_activation='hard_sigmoid')",
    "ConvLSTM2D(nb_filter=4, nb_row=3, nb_col=3, border_mode='same', dim_ordering='tf', "
    "inner_init='orthogonal', inner_activation='hard_sigmoid', dropout_W=0.1, dropout_U=0.1, "
    "forget_bias_init='one')",
    "ConvLSTM2D(4, 3, 3, forget_bias_init='zero')",
    # others
    "Lambda(abs, (3,), None)",
    "InputLayer(input_shape=(3,), input_dtype='float32')",
]

METHOD_CALLS = [
    "fit_generator(gen, samples_per_epoch=8, nb_epoch=2, validation_data=gen, nb_val_samples=3, nb_worker=1, "
    "pickle_safe=False, max_q_size=5)",
    "fit_generator(bgen, samples_per_epoch=10, nb_epoch=3)",
    "fit_generator(generator=bgen, samples_per_epoch=10, nb_epoch=1)",
    "fit_generator(gen, 5, nb_epoch=2)",
    "fit_generator(gen, 10, 2, 1)",
    "evaluate_generator(gen, val_samples=4)",
    "evaluate_generator(gen, val_samples=4, nb_worker=2, max_q_size=3)",
    "evaluate_generator(gen, val_samples=4, steps=2)",
    "predict_generator(gen, val_samples=4, max_q_size=2, nb_worker=1, pickle_safe=False)",
]


class BatchGen:
    """An iterator of batches with a ``batch_size`` (Keras 1's ImageDataGenerator.flow had one)."""

    batch_size = 4

    def __iter__(self):
        return self

    def __next__(self):
        return np.zeros((4, 3), "float32"), np.zeros((4, 2), "float32")


def _gen():
    while True:
        yield np.zeros((4, 3), "float32"), np.zeros((4, 2), "float32")


def _jsonable(value):
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, BatchGen):
        return "<bgen>"
    if hasattr(value, "__next__"):
        return "<gen>"
    return repr(value)


def _outcome(thunk):
    """{'warnings': [[category, text], ...]} plus 'result' or 'error': [type, text]."""
    out = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out["result"] = thunk()
        except Exception as exc:  # noqa: BLE001 - the error is what we record
            out["error"] = [type(exc).__name__, str(exc)]
    out["warnings"] = [[w.category.__name__, str(w.message)] for w in caught if w.filename.find("theano") < 0]
    return out


def layer_cases():
    names = {
        **vars(keras.layers.convolutional),
        **vars(keras.layers),
        "l1": l1,
        "l2": l2,
        "maxnorm": maxnorm,
        "nonneg": nonneg,
    }
    cases = []
    for call in LAYER_CALLS:

        def build(call=call):
            cfg = eval(call, dict(names)).get_config()  # noqa: S307 - our own literal calls
            cfg.pop("name", None)
            return _jsonable(cfg)

        cases.append({"call": call, **_outcome(build)})
    return cases


def method_cases():
    def recorder(name):
        def method(self, *args, **kwargs):
            return {"args": _jsonable(list(args)), "kwargs": _jsonable(kwargs)}

        method.__name__ = name
        return interfaces.legacy_generator_methods_support(method)

    methods = {n: recorder(n) for n in ("fit_generator", "evaluate_generator", "predict_generator")}
    cases = []
    for call in METHOD_CALLS:
        name, rest = call.split("(", 1)
        thunk_src = f"m({rest}"
        scope = {"gen": _gen(), "bgen": BatchGen()}

        def run(thunk_src=thunk_src, scope=scope, name=name):
            scope["m"] = lambda *a, **k: methods[name](object(), *a, **k)
            return eval(thunk_src, scope)  # noqa: S307 - our own literal calls

        cases.append({"call": call, **_outcome(run)})
    return cases


def model_cases():
    from keras.layers import Dense, Input, Layer
    from keras.models import Model, Sequential

    def fit():
        model = Sequential([Dense(2, input_shape=(3,))])
        model.compile("sgd", "mse")
        history = model.fit(np.zeros((8, 3), "float32"), np.zeros((8, 2), "float32"), nb_epoch=2, verbose=0)
        return {"epochs_run": len(history.history["loss"])}

    def fit_unknown():
        model = Sequential([Dense(2, input_shape=(3,))])
        model.compile("sgd", "mse")
        return model.fit(np.zeros((8, 3), "float32"), np.zeros((8, 2), "float32"), nb_epochs=2, verbose=0)

    def constructor():
        a = Input(shape=(3,))
        return {"layers": len(Model(input=a, output=Dense(2)(a)).layers)}

    def constructor_both():
        a = Input(shape=(3,))
        return Model(input=a, inputs=a, output=Dense(2)(a))

    class Scale(Layer):
        def build(self, input_shape):
            self.w = self.add_weight((input_shape[-1],), "ones", name="w")
            super().build(input_shape)

    def add_weight():
        layer = Scale()
        layer.build((None, 3))
        return {"names": [w.name for w in layer.weights]}

    return {
        "fit_nb_epoch": _outcome(fit),
        "fit_unknown_kwarg": _outcome(fit_unknown),
        "model_input_output": _outcome(constructor),
        "model_input_and_inputs": _outcome(constructor_both),
        "add_weight_keras1_order": _outcome(add_weight),
    }


def main():
    out = {
        "keras_version": keras.__version__,
        "layers": layer_cases(),
        "methods": method_cases(),
        "models": model_cases(),
    }
    with open(OUT, "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"wrote {OUT}: {len(out['layers'])} layer calls, {len(out['methods'])} method calls")


if __name__ == "__main__":
    main()
