"""Pooling 1D/2D/3D and global, zero-padding, cropping and up-sampling 1D/2D/3D against numpy,
in both data formats."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from arignote import backend
from arignote.layers import (
    AveragePooling1D,
    AveragePooling2D,
    AveragePooling3D,
    Cropping1D,
    Cropping2D,
    Cropping3D,
    GlobalAveragePooling1D,
    GlobalAveragePooling3D,
    GlobalAvgPool2D,
    GlobalMaxPool3D,
    GlobalMaxPooling2D,
    MaxPool3D,
    MaxPooling1D,
    MaxPooling2D,
    MaxPooling3D,
    UpSampling1D,
    UpSampling2D,
    UpSampling3D,
    ZeroPadding1D,
    ZeroPadding2D,
    ZeroPadding3D,
)

RNG = np.random.default_rng(2)


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def run(layer, x: np.ndarray) -> np.ndarray:
    if not layer.built:
        layer.build((None, *x.shape[1:]))
    with torch.no_grad():
        y = layer(torch.tensor(x))
    assert tuple(layer.compute_output_shape((None, *x.shape[1:]))) == (None, *y.shape[1:])
    return y.numpy()


def np_pool(x, pool, strides, op, padding="valid"):
    """Channels-last pooling; 'same' windows are clipped to the real elements (TensorFlow)."""
    rank = len(pool)
    spatial = x.shape[1 : 1 + rank]
    if padding == "same":
        outs = [-(-n // s) for n, s in zip(spatial, strides)]
        befores = [max((o - 1) * s + k - n, 0) // 2 for o, s, k, n in zip(outs, strides, pool, spatial)]
    else:
        outs = [(n - k) // s + 1 for n, k, s in zip(spatial, pool, strides)]
        befores = [0] * rank
    y = np.zeros((x.shape[0], *outs, x.shape[-1]), dtype=np.float64)
    for pos in itertools.product(*(range(o) for o in outs)):
        index = [slice(None)]
        for i, p in enumerate(pos):
            start = p * strides[i] - befores[i]
            index.append(slice(max(start, 0), min(start + pool[i], spatial[i])))
        window = x[tuple(index)].reshape(x.shape[0], -1, x.shape[-1])
        y[(slice(None), *pos)] = window.max(1) if op == "max" else window.mean(1)
    return y


@pytest.mark.parametrize(
    "cls,shape,kwargs,op",
    [
        (MaxPooling1D, (7, 3), {"pool_size": 3, "strides": 2}, "max"),
        (AveragePooling1D, (7, 3), {"pool_size": 2, "padding": "same"}, "avg"),
        (MaxPooling2D, (5, 7, 2), {"pool_size": (2, 3), "padding": "same"}, "max"),
        (AveragePooling2D, (5, 7, 2), {"pool_size": 3, "strides": 2, "padding": "same"}, "avg"),
        (AveragePooling2D, (6, 6, 2), {}, "avg"),
        (MaxPooling3D, (4, 5, 3, 2), {"padding": "same"}, "max"),
        (AveragePooling3D, (5, 5, 4, 2), {"pool_size": (3, 2, 2), "strides": 1}, "avg"),
    ],
)
def test_pooling_matches_numpy(cls, shape, kwargs, op):
    x = RNG.standard_normal((2, *shape)).astype(np.float32)
    layer = cls(**kwargs)
    ref = np_pool(x, layer.pool_size, layer.strides, op, layer.padding)
    np.testing.assert_allclose(run(layer, x), ref, rtol=1e-5, atol=1e-6)
    if len(shape) > 2:  # the same numbers in channels_first
        first = (0, x.ndim - 1, *range(1, x.ndim - 1))
        cf = cls(data_format="channels_first", **kwargs)
        y = run(cf, np.ascontiguousarray(x.transpose(first)))
        np.testing.assert_allclose(np.moveaxis(y, 1, -1), ref, rtol=1e-5, atol=1e-6)


def test_global_pooling_all_ranks_and_formats():
    x1 = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    x2 = RNG.standard_normal((2, 4, 5, 3)).astype(np.float32)
    x3 = RNG.standard_normal((2, 2, 3, 4, 3)).astype(np.float32)
    np.testing.assert_allclose(run(GlobalAveragePooling1D(), x1), x1.mean(1), rtol=1e-6)
    np.testing.assert_allclose(run(GlobalMaxPooling2D(), x2), x2.max((1, 2)))
    np.testing.assert_allclose(
        run(GlobalAvgPool2D(data_format="channels_first"), x2), x2.mean((2, 3)), rtol=1e-6
    )
    np.testing.assert_allclose(run(GlobalMaxPool3D(), x3), x3.max((1, 2, 3)))
    np.testing.assert_allclose(run(GlobalAveragePooling3D(), x3), x3.mean((1, 2, 3)), rtol=1e-6)
    # a mask excludes padded steps from the 1-D average (Keras 2)
    mask = torch.tensor([[True, True, False, False, False], [True] * 5])
    y = GlobalAveragePooling1D()(torch.tensor(x1), mask=mask).numpy()
    np.testing.assert_allclose(y[0], x1[0, :2].mean(0), rtol=1e-6)
    with pytest.raises(ValueError, match="expects 2-D inputs with channels"):
        GlobalMaxPooling2D().build((None, 4, 3))


def test_zero_padding_all_ranks():
    x1 = RNG.standard_normal((2, 3, 2)).astype(np.float32)
    np.testing.assert_array_equal(run(ZeroPadding1D((1, 2)), x1), np.pad(x1, ((0, 0), (1, 2), (0, 0))))
    x2 = RNG.standard_normal((2, 3, 4, 2)).astype(np.float32)
    np.testing.assert_array_equal(
        run(ZeroPadding2D(((1, 0), (2, 3))), x2), np.pad(x2, ((0, 0), (1, 0), (2, 3), (0, 0)))
    )
    np.testing.assert_array_equal(
        run(ZeroPadding2D(1, data_format="channels_first"), x2), np.pad(x2, ((0, 0), (0, 0), (1, 1), (1, 1)))
    )
    x3 = RNG.standard_normal((1, 2, 2, 2, 1)).astype(np.float32)
    np.testing.assert_array_equal(
        run(ZeroPadding3D((1, 0, 2)), x3), np.pad(x3, ((0, 0), (1, 1), (0, 0), (2, 2), (0, 0)))
    )
    assert ZeroPadding2D(((1, 0), (2, 3))).get_config()["padding"] == [[1, 0], [2, 3]]
    with pytest.raises(ValueError, match="padding"):
        ZeroPadding2D("x")
    with pytest.raises(ValueError, match="padding"):
        ZeroPadding2D((1, 2, 3))


def test_cropping_all_ranks():
    x1 = RNG.standard_normal((2, 6, 2)).astype(np.float32)
    np.testing.assert_array_equal(run(Cropping1D((1, 2)), x1), x1[:, 1:4])
    x2 = RNG.standard_normal((2, 5, 6, 4)).astype(np.float32)
    np.testing.assert_array_equal(run(Cropping2D(((1, 0), (2, 1))), x2), x2[:, 1:, 2:5])
    np.testing.assert_array_equal(run(Cropping2D(1, data_format="channels_first"), x2), x2[:, :, 1:5, 1:3])
    x3 = RNG.standard_normal((1, 4, 4, 5, 1)).astype(np.float32)
    np.testing.assert_array_equal(run(Cropping3D(), x3), x3[:, 1:3, 1:3, 1:4])
    # Keras 2.3.1 crops to nothing (its test_cropping_1d: (2, 2) of 4 steps); more is refused
    empty = run(Cropping1D((3, 3)), x1)
    assert empty.shape == (2, 0, 2)
    assert Cropping1D((3, 3)).compute_output_shape((None, 6, 2)) == (None, 0, 2)
    with pytest.raises(ValueError, match=r"cropping \(\(4, 3\),\) is more than"):
        Cropping1D((4, 3)).build((None, 6, 2))


def test_upsampling_nearest_and_bilinear():
    x1 = RNG.standard_normal((2, 3, 2)).astype(np.float32)
    np.testing.assert_array_equal(run(UpSampling1D(3), x1), np.repeat(x1, 3, axis=1))
    x2 = RNG.standard_normal((2, 2, 3, 2)).astype(np.float32)
    np.testing.assert_array_equal(run(UpSampling2D((2, 3)), x2), np.repeat(np.repeat(x2, 2, 1), 3, 2))
    np.testing.assert_array_equal(
        run(UpSampling2D(2, data_format="channels_first"), x2), np.repeat(np.repeat(x2, 2, 2), 2, 3)
    )
    x3 = RNG.standard_normal((1, 2, 2, 2, 1)).astype(np.float32)
    np.testing.assert_array_equal(run(UpSampling3D((1, 2, 2)), x3), np.repeat(np.repeat(x3, 2, 2), 2, 3))
    # TF1 resize_bilinear: row i of the output samples input row i / 2, the last one clamped
    row = np.array([[[[0.0], [2.0], [6.0]]]], dtype=np.float32)  # (1, 1, 3, 1)
    y = run(UpSampling2D((1, 2), interpolation="bilinear"), row)
    np.testing.assert_allclose(y[0, 0, :, 0], [0.0, 1.0, 2.0, 4.0, 6.0, 6.0])
    with pytest.raises(ValueError, match="interpolation"):
        UpSampling2D(interpolation="cubic")


def test_pool_aliases_are_the_same_classes():
    assert MaxPool3D is MaxPooling3D and GlobalAvgPool2D.__name__ == "GlobalAveragePooling2D"
