"""preprocessing.image's single-image transforms (apply_affine_transform, the random_* functions,
channel and brightness shifts, flip_axis, transform_matrix_offset_center) against real
keras_preprocessing 1.1.2: tests/fixtures/keras2/image_transforms.npz from
scripts/make_keras2_image_transforms_fixture.py (every fill mode, spline orders 0/1/3, channels first
and last, np.random seeded as a Keras script would)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from arignote.preprocessing import image, transforms

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "keras2", "image_transforms.npz")
DATA = dict(np.load(FIXTURE))
CASES = sorted(k[:-5] for k in DATA if k.startswith("case_") and k.endswith("_spec"))


def _spec(case):
    return json.loads(str(DATA[case + "_spec"]))


def _run(spec):
    kwargs = dict(spec["kwargs"])
    for key in ("zoom_range", "brightness_range"):
        if key in kwargs:
            kwargs[key] = tuple(kwargs[key])
    if spec["seed"] is not None:
        np.random.seed(spec["seed"])
    out = getattr(image, spec["fn"])(DATA[spec["input"]].copy(), **kwargs)
    return np.asarray(out), np.random.random()


@pytest.mark.parametrize("case", CASES, ids=lambda c: "{}-{fn}-{input}".format(c[5:], **_spec(c)))
def test_same_result_as_keras2(case):
    spec = _spec(case)
    if spec["kwargs"].get("order", 1) > 1:
        pytest.importorskip("scipy.ndimage")
    out, after = _run(spec)
    want = DATA[case + "_out"]
    assert out.shape == want.shape and out.dtype == want.dtype, (out.shape, out.dtype, want.shape, want.dtype)
    if spec["kwargs"].get("order") == 0 or spec["fn"] in ("flip_axis", "apply_brightness_shift") or \
            spec["kwargs"].get("interpolation_order") == 0 or want.dtype == np.uint8:
        np.testing.assert_array_equal(out, want)
    else:
        np.testing.assert_allclose(out, want, rtol=0, atol=2e-5)
    # the call drew from np.random exactly what Keras's did: the next draw is the same
    if spec["seed"] is not None:
        assert after == DATA[case + "_next"]


def test_the_fixture_covers_every_fill_mode_and_order():
    specs = [_spec(c) for c in CASES]
    affine = [s["kwargs"] for s in specs if s["fn"] == "apply_affine_transform"]
    assert {k.get("fill_mode", "nearest") for k in affine} == {"nearest", "constant", "reflect", "wrap"}
    assert {k.get("order", 1) for k in affine} == {0, 1, 3}
    assert {s["fn"] for s in specs} >= {"random_rotation", "random_shift", "random_shear", "random_zoom",
                                        "random_channel_shift", "random_brightness", "apply_channel_shift",
                                        "apply_brightness_shift", "flip_axis"}


def test_transform_matrix_offset_center():
    m = np.array([[0.9, -0.2, 1.5], [0.3, 1.1, -2.0], [0, 0, 1]])
    np.testing.assert_array_equal(image.transform_matrix_offset_center(m, 7, 9), DATA["offset_center"])


def test_no_transform_returns_the_image_itself():
    x = DATA["x32"]
    assert image.apply_affine_transform(x) is x
    assert image.random_zoom(x, (1, 1), 0, 1, 2).shape == x.shape


def test_scipy_wrap_differs_from_tiling():
    # scipy's "wrap" (Keras's) has period size - 1: a shift by the full width is not the identity
    x = np.arange(5.0).reshape(1, 5, 1)
    out = image.apply_affine_transform(x, ty=5, fill_mode="wrap", order=0, row_axis=0, col_axis=1,
                                       channel_axis=2)
    assert out[0, :, 0].tolist() == [1.0, 2.0, 3.0, 0.0, 1.0]  # column 8 folds onto 0
    tiled = transforms.warp(x[None], np.array([[[1.0, 0, 0], [0, 1, 5], [0, 0, 1]]]), "grid-wrap", order=0)
    assert tiled[0, 0, :, 0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_order_zero_rounds_halves_up_as_scipy():
    x = np.arange(4.0).reshape(1, 4, 1)
    out = image.apply_affine_transform(x, ty=0.5, order=0, row_axis=0, col_axis=1, channel_axis=2)
    assert out[0, :, 0].tolist() == [1.0, 2.0, 3.0, 3.0]  # torch's nearest would round 0.5 -> 0


def test_negative_channel_axis_keeps_the_layout():
    x = DATA["x32"]
    out = image.apply_affine_transform(x, theta=10, channel_axis=-1)
    np.testing.assert_allclose(out, image.apply_affine_transform(x, theta=10, channel_axis=2), atol=0)
    assert image.apply_channel_shift(x, 0.1, channel_axis=-1).shape == x.shape


def test_bad_arguments_say_what_to_fix():
    x = DATA["x32"]
    with pytest.raises(ValueError, match="fill_mode='mirror'.*constant, nearest, reflect, wrap"):
        image.apply_affine_transform(x, theta=3, fill_mode="mirror")
    with pytest.raises(ValueError, match="order must be a spline order from 0 to 5"):
        image.apply_affine_transform(x, theta=3, order=7)
    with pytest.raises(ValueError, match="one image as a rank-3 array.*shape \\(2, 7, 9, 3\\)"):
        image.apply_affine_transform(np.stack([x, x]), theta=3)
    with pytest.raises(ValueError, match="`zoom_range` should be a tuple or list of two floats"):
        image.random_zoom(x, (0.5, 1, 2))
    with pytest.raises(ValueError, match="`brightness_range` should be a tuple or list of two floats"):
        image.random_brightness(x, (0.5,))
    with pytest.raises(ValueError, match="1, 3 or 4 channels"):
        image.apply_brightness_shift(np.zeros((4, 4, 2)), 1.2)


def test_spline_orders_above_one_name_the_scipy_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "scipy", None)
    with pytest.raises(ImportError, match=r"arignote\[scipy\]"):
        image.apply_affine_transform(DATA["x32"], theta=3, order=3)
    image.apply_affine_transform(DATA["x32"], theta=3, order=1)  # orders 0 and 1 need no scipy


@pytest.mark.parametrize("name", ["x32", "x_neg", "x1", "x4", "x_u8"])
def test_array_to_img_scales_as_keras_2_3(name):
    # keras_preprocessing 1.1.2 subtracts the minimum even when it is positive
    want = DATA["array_to_img_" + name]
    got = np.asarray(image.array_to_img(DATA[name]))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("i", sorted({int(k.split("_")[1]) for k in DATA if k.startswith("generator_")}))
def test_image_data_generator_interpolation_order_as_keras(i):
    from arignote.preprocessing.image import ImageDataGenerator

    settings, params = json.loads(str(DATA[f"generator_{i}_spec"]))
    if settings.get("interpolation_order", 1) > 1:
        pytest.importorskip("scipy.ndimage")
    out = ImageDataGenerator(**settings).apply_transform(DATA["x32"], params)
    want = DATA[f"generator_{i}_out"]
    assert out.dtype == want.dtype
    if settings.get("interpolation_order") == 0:
        np.testing.assert_array_equal(out, want)
    else:
        np.testing.assert_allclose(out, want, rtol=0, atol=2e-5)
    with pytest.raises(ValueError, match="interpolation_order must be a spline order from 0 to 5"):
        ImageDataGenerator(interpolation_order=6)
