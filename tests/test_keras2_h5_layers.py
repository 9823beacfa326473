"""A Keras 2 HDF5 round trip for every layer type a Sequential can hold: save (model.h5), load, same
config, same weights, same predictions; weights also through save_weights/load_weights."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from arignote import layers as L
from arignote.devices import cuda
from arignote.models import Sequential, load_model

RNG = np.random.RandomState(11)

IMG, SEQ, VOL = (6, 5, 2), (7, 3), (4, 4, 4, 2)

CASES = {
    "Dense": (lambda: L.Dense(3, activation="tanh"), (4,)),
    "Activation": (lambda: L.Activation("relu"), (4,)),
    "ActivityRegularization": (lambda: L.ActivityRegularization(l1=0.01), (4,)),
    "Dropout": (lambda: L.Dropout(0.3), (4,)),
    "AlphaDropout": (lambda: L.AlphaDropout(0.3), (4,)),
    "GaussianDropout": (lambda: L.GaussianDropout(0.3), (4,)),
    "GaussianNoise": (lambda: L.GaussianNoise(0.3), (4,)),
    "Flatten": (lambda: L.Flatten(), IMG),
    "Reshape": (lambda: L.Reshape((2, 2)), (4,)),
    "Permute": (lambda: L.Permute((2, 1)), SEQ),
    "RepeatVector": (lambda: L.RepeatVector(3), (4,)),
    "Masking": (lambda: L.Masking(0.0), SEQ),
    "Embedding": (lambda: L.Embedding(9, 3, input_length=5), "int"),
    "BatchNormalization": (lambda: L.BatchNormalization(), IMG),
    "LeakyReLU": (lambda: L.LeakyReLU(0.2), (4,)),
    "ELU": (lambda: L.ELU(0.5), (4,)),
    "ReLU": (lambda: L.ReLU(max_value=0.5), (4,)),
    "PReLU": (lambda: L.PReLU(), (4,)),
    "Softmax": (lambda: L.Softmax(), (4,)),
    "ThresholdedReLU": (lambda: L.ThresholdedReLU(0.1), (4,)),
    "Conv1D": (lambda: L.Conv1D(2, 3, padding="same"), SEQ),
    "Conv2D": (lambda: L.Conv2D(2, (3, 2), strides=2), IMG),
    "Conv3D": (lambda: L.Conv3D(2, 2), VOL),
    "Conv2DTranspose": (lambda: L.Conv2DTranspose(2, 3, strides=2), IMG),
    "Conv3DTranspose": (lambda: L.Conv3DTranspose(2, 2), VOL),
    "SeparableConv1D": (lambda: L.SeparableConv1D(2, 3, depth_multiplier=2), SEQ),
    "SeparableConv2D": (lambda: L.SeparableConv2D(2, 3, depth_multiplier=2), IMG),
    "DepthwiseConv2D": (lambda: L.DepthwiseConv2D(2, depth_multiplier=2), IMG),
    "LocallyConnected1D": (lambda: L.LocallyConnected1D(2, 3), SEQ),
    "LocallyConnected2D": (lambda: L.LocallyConnected2D(2, 2), IMG),
    "MaxPooling1D": (lambda: L.MaxPooling1D(2), SEQ),
    "AveragePooling1D": (lambda: L.AveragePooling1D(2), SEQ),
    "MaxPooling2D": (lambda: L.MaxPooling2D(2), IMG),
    "AveragePooling2D": (lambda: L.AveragePooling2D(2, padding="same"), IMG),
    "MaxPooling3D": (lambda: L.MaxPooling3D(2), VOL),
    "AveragePooling3D": (lambda: L.AveragePooling3D(2), VOL),
    "GlobalMaxPooling1D": (lambda: L.GlobalMaxPooling1D(), SEQ),
    "GlobalAveragePooling1D": (lambda: L.GlobalAveragePooling1D(), SEQ),
    "GlobalMaxPooling2D": (lambda: L.GlobalMaxPooling2D(), IMG),
    "GlobalAveragePooling2D": (lambda: L.GlobalAveragePooling2D(), IMG),
    "GlobalMaxPooling3D": (lambda: L.GlobalMaxPooling3D(), VOL),
    "GlobalAveragePooling3D": (lambda: L.GlobalAveragePooling3D(), VOL),
    "ZeroPadding1D": (lambda: L.ZeroPadding1D(1), SEQ),
    "ZeroPadding2D": (lambda: L.ZeroPadding2D(((1, 0), (0, 2))), IMG),
    "ZeroPadding3D": (lambda: L.ZeroPadding3D(1), VOL),
    "Cropping1D": (lambda: L.Cropping1D((1, 2)), SEQ),
    "Cropping2D": (lambda: L.Cropping2D(((1, 0), (0, 1))), IMG),
    "Cropping3D": (lambda: L.Cropping3D(1), VOL),
    "UpSampling1D": (lambda: L.UpSampling1D(2), SEQ),
    "UpSampling2D": (lambda: L.UpSampling2D(2), IMG),
    "UpSampling3D": (lambda: L.UpSampling3D(2), VOL),
    "SpatialDropout1D": (lambda: L.SpatialDropout1D(0.2), SEQ),
    "SpatialDropout2D": (lambda: L.SpatialDropout2D(0.2), IMG),
    "SpatialDropout3D": (lambda: L.SpatialDropout3D(0.2), VOL),
    "LSTM": (lambda: L.LSTM(3, return_sequences=True), SEQ),
    "GRU": (lambda: L.GRU(3), SEQ),
    "GRU_reset_after": (lambda: L.GRU(3, reset_after=True), SEQ),
}
OPTIONAL = {
    "SimpleRNN": (lambda: L.SimpleRNN(3), SEQ),
    "Bidirectional": (lambda: L.Bidirectional(L.LSTM(2, return_sequences=True)), SEQ),
    "TimeDistributed": (lambda: L.TimeDistributed(L.Dense(2)), SEQ),
    "ConvLSTM2D": (lambda: L.ConvLSTM2D(2, 2), (3, 5, 5, 2)),
    "CuDNNLSTM": (lambda: L.CuDNNLSTM(2), SEQ),
    "CuDNNGRU": (lambda: L.CuDNNGRU(2), SEQ),
}


def _case(name):
    if name in CASES:
        return CASES[name]
    factory, shape = OPTIONAL[name]
    try:
        factory()
    except AttributeError:
        pytest.skip(f"arignote.layers has no {name} yet")
    return factory, shape


def _build(name):
    factory, shape = _case(name)
    layer = factory()
    if shape == "int":
        model = Sequential([layer])
        model.build((None, 5)) if hasattr(model, "build") else None
        return model, RNG.randint(0, 9, size=(3, 5)).astype("int64")
    model = Sequential([L.InputLayer(input_shape=shape), layer])
    return model, RNG.uniform(-1, 1, size=(3, *shape)).astype("float32")


@pytest.mark.parametrize("name", sorted(CASES) + sorted(OPTIONAL))
def test_every_layer_type_round_trips_through_keras2_hdf5(name, tmp_path):
    model, x = _build(name)
    weights = model.get_weights()
    model.set_weights([RNG.uniform(0.5, 1.5, w.shape).astype(w.dtype) for w in weights])
    path = str(tmp_path / "m.h5")
    model.save(path)
    with h5py.File(path, "r") as f:
        names = [n.decode() for n in f["model_weights"].attrs["layer_names"]]
        stored = [
            np.asarray(f["model_weights"][n][w.decode()])
            for n in names
            for w in f["model_weights"][n].attrs["weight_names"]
        ]
    assert sum(a.size for a in stored) == sum(w.size for w in weights)  # every weight is in the file
    loaded = load_model(path)
    assert [type(a).__name__ for a in loaded.layers][-1] == type(model.layers[-1]).__name__
    # the loaded layer also reports the batch_input_shape it was built from (as in Keras 2)
    got = {k: v for k, v in loaded.layers[-1].get_config().items() if k != "batch_input_shape"}
    assert got == {k: v for k, v in model.layers[-1].get_config().items() if k != "batch_input_shape"}
    for a, b in zip(loaded.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    wpath = str(tmp_path / "w.h5")
    model.save_weights(wpath)
    fresh, _ = _build(name)
    fresh.load_weights(wpath)
    for a, b in zip(fresh.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    if name.startswith("CuDNN") and not cuda.is_available():
        return  # the weights went through the file; running a CuDNN layer needs a GPU (as in Keras 2)
    expected = model.predict(x, verbose=0)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fresh.predict(x, verbose=0), expected, rtol=1e-6, atol=1e-6)
