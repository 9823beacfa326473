"""Keras 2.3.1's smaller public names: generic_utils helpers, backend settings helpers, the
convolution aliases of ``keras.layers.convolutional``, and the left-out legacy names there (issue 13
items 2 and 7). Behaviour follows Keras 2.3.1's source (keras/utils/generic_utils.py,
keras/backend/common.py, keras/layers/convolutional.py)."""

import json

import numpy as np
import pytest
import torch

from arignote import backend as K
from arignote import config
from arignote.errors import KerasNameMissing
from arignote.layers import Dense, Input, Lambda, convolutional_recurrent, recurrent
from arignote.layers import convolutional as conv
from arignote.models import Model, model_from_json
from arignote.utils import generic_utils as gu


def test_func_dump_load_keeps_defaults_and_closure():
    scale = 3.0

    def scaled(x, shift=1.0):
        return x * scale + shift

    code, defaults, closure = gu.func_dump(scaled)
    assert isinstance(code, str) and defaults == (1.0,) and closure == (3.0,)
    # as a JSON round trip turns tuples into lists (a Keras 2 Lambda config)
    back = gu.func_load(json.loads(json.dumps([code, defaults, closure])))
    assert back(2.0) == 7.0 and back(2.0, shift=0.0) == 6.0
    with pytest.raises(ValueError, match="custom_objects"):
        gu.func_load("not base64 bytecode!")


def test_lambda_with_a_closure_survives_model_json():
    """A Lambda whose lambda reads an enclosing variable loads back (Keras 2 stores the closure)."""
    factor = 2.5
    x = Input((3,))
    y = Lambda(lambda t: t * factor)(Dense(3, kernel_initializer="ones", use_bias=False)(x))
    model = Model(x, y)
    clone = model_from_json(model.to_json(), safe_mode=False)  # our own lambda: trusted (as Keras 3)
    clone.set_weights(model.get_weights())
    data = np.ones((2, 3), "float32")
    np.testing.assert_allclose(clone.predict(data), model.predict(data))
    np.testing.assert_allclose(clone.predict(data), np.full((2, 3), 7.5))


def test_slice_arrays_as_keras():
    a, b = np.arange(5), np.arange(5) * 10
    assert [x.tolist() for x in gu.slice_arrays([a, None, b], 1, 3)[::2]] == [[1, 2], [10, 20]]
    assert gu.slice_arrays([a, None], 1, 3)[1] is None
    assert gu.slice_arrays(a, np.array([4, 0])).tolist() == [4, 0]
    assert gu.slice_arrays(None) == [None]


def test_transpose_shape_and_small_helpers():
    assert gu.transpose_shape((128, 128, 32), "channels_first", spatial_axes=(0, 1)) == (32, 128, 128)
    assert gu.transpose_shape([16, 8, 8, 3], "channels_first", (1, 2)) == [16, 3, 8, 8]
    assert gu.transpose_shape((1, 2), "channels_last", (0,)) == (1, 2)
    with pytest.raises(ValueError, match="Received: nchw"):
        gu.transpose_shape((1, 2), "nchw", (0,))
    assert gu.is_all_none([None, None]) and not gu.is_all_none((None, 0))
    a, b = object(), object()
    assert gu.object_list_uid([a, b]) == f"{id(a)}, {id(b)}"
    spec = gu.getargspec(lambda x, y=1, *rest, **kw: None)
    assert (spec.args, spec.varargs, spec.keywords, spec.defaults) == (["x", "y"], "rest", "kw", (1,))
    with pytest.raises(ValueError, match=r"Unknown entries in loss dictionary: \['out2'\]"):
        gu.check_for_unexpected_keys("loss", {"out1": 1, "out2": 2}, ["out1"])


def test_backend_setting_helpers():
    assert K.cast_to_floatx(np.array([1.0, 2.0], "float64")).dtype == np.float32
    config.configure(floatX="float64")
    assert K.cast_to_floatx([1]).dtype == np.float64
    assert K.normalize_data_format("Channels_Last") == "channels_last"
    config.configure(image_data_format="channels_first")
    assert K.normalize_data_format(None) == "channels_first"
    with pytest.raises(ValueError, match="'nhwc'"):
        K.normalize_data_format("nhwc")

    def f(x):
        return x

    assert K.symbolic(f) is f and K.eager(f) is f


def test_name_scope_labels_a_profiler_range():
    with torch.profiler.profile() as prof:
        with K.name_scope("my_block"):
            torch.ones(2) + 1
    assert "my_block" in {event.name for event in prof.events()}


def test_convolutional_module_aliases_and_legacy_names():
    assert conv.Deconv2D is conv.Conv2DTranspose is conv.Convolution2DTranspose
    assert conv.Deconv3D is conv.Conv3DTranspose
    assert conv.SeparableConvolution1D is conv.SeparableConv1D
    assert conv.SeparableConvolution2D is conv.SeparableConv2D
    assert conv.AtrousConv2D is conv.AtrousConvolution2D  # Keras 1's, provided (tests/test_layers_legacy.py)
    with pytest.raises(KerasNameMissing, match="RNN\\(cell\\)"):
        recurrent.Recurrent  # noqa: B018
    assert issubclass(convolutional_recurrent.ConvLSTM2D, convolutional_recurrent.ConvRNN2D)
    assert convolutional_recurrent.RNN is recurrent.RNN


def test_keras_2_3_1_file_with_lambdas_loads_and_predicts_as_keras():
    """lambda_closure.h5 was written by real Keras 2.3.1 (scripts/make_keras2_lambda_fixture.py): a
    lambda with a closure and a default, one with ``arguments`` that calls ``K.pow`` (Keras resolves
    ``K`` from its layer module's globals), one with a lambda ``output_shape``."""
    import os

    from arignote.models import load_model

    here = os.path.join(os.path.dirname(__file__), "fixtures", "keras2")
    model = load_model(os.path.join(here, "lambda_closure.h5"), safe_mode=False)  # the repo's own file
    expected = np.load(os.path.join(here, "lambda_closure.npz"))
    assert [layer.name for layer in model.layers][-3:] == ["scaled", "squared", "total"]
    assert model.output_shape == (None, 1)
    np.testing.assert_allclose(model.predict(expected["x"]), expected["y"], rtol=1e-5)


def test_the_global_registry_serves_activation_and_loss_names(tmp_path):
    """The Keras 2 idiom ``get_custom_objects().update({'swish': Activation(swish)})`` and then
    ``activation='swish'`` by name: Keras 2.3.1 looks names up in custom_objects, then the global
    registry, then the module."""
    from arignote import activations, losses
    from arignote.layers import Activation
    from arignote.models import Sequential, load_model
    from arignote.utils import CustomObjectScope, get_custom_objects

    def swish(x):
        return x * torch.sigmoid(x)

    def half_mae(y_true, y_pred):
        return 0.5 * K.mean(K.abs(y_true - y_pred), axis=-1)

    with CustomObjectScope({}):  # restores the registry afterwards
        get_custom_objects().update({"swish": Activation(swish), "half_mae": half_mae})
        assert activations.get("swish")(torch.zeros(1)).tolist() == [0.0]
        assert losses.get("half_mae") is half_mae
        model = Sequential([Dense(3, activation="swish", input_shape=(2,)), Dense(1)])
        model.compile("sgd", "half_mae")
        x = np.ones((4, 2), "float32")
        model.fit(x, np.zeros((4, 1), "float32"), epochs=1, verbose=0)
        path = str(tmp_path / "m.h5")
        model.save(path)
        again = load_model(path)  # the names resolve through the registry, no custom_objects
        np.testing.assert_allclose(again.predict(x), model.predict(x), rtol=1e-6)
    with pytest.raises(ValueError, match="Unknown activation function: 'swish'"):
        activations.get("swish")


def test_deserialize_keras_object_as_keras_2_3_1():
    class Thing:
        def __init__(self, size=1):
            self.size = size

        @classmethod
        def from_config(cls, config, custom_objects=None):
            obj = cls(**config)
            obj.seen = sorted(custom_objects)
            return obj

    made = gu.deserialize_keras_object({"class_name": "Thing", "config": {"size": 3}},
                                       custom_objects={"Thing": Thing})
    assert made.size == 3 and made.seen == ["Thing"]
    assert gu.deserialize_keras_object("Thing", custom_objects={"Thing": Thing}) is Thing  # not instantiated
    with pytest.raises(ValueError, match="needs 'class_name' and 'config'"):
        gu.deserialize_keras_object({"class_name": "Thing"}, custom_objects={"Thing": Thing})
    with pytest.raises(ValueError, match="Unknown layer: 'Thin'.*Did you mean 'Thing'"):
        gu.deserialize_keras_object("Thin", {"Thing": Thing}, printable_module_name="layer")


def test_registered_functions_serve_initializer_regularizer_constraint_names():
    from arignote import constraints, initializers, regularizers
    from arignote.utils import CustomObjectScope

    def my_init(shape, dtype=None):
        return np.ones(shape)

    def my_reg(weight):
        return 0.0

    def my_con(weight):
        return weight

    with CustomObjectScope({"my_init": my_init, "my_reg": my_reg, "my_con": my_con}):
        assert initializers.get("my_init") is my_init
        assert regularizers.get("my_reg") is my_reg and constraints.get("my_con") is my_con
        assert Dense(2, kernel_initializer="my_init")(torch.ones(1, 3)).tolist() == [[3.0, 3.0]]
