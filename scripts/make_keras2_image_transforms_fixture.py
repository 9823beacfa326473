"""Regenerate tests/fixtures/keras2/image_transforms.npz: keras.preprocessing.image's single-image
transforms (keras_preprocessing 1.1.2: apply_affine_transform, the random_* functions seeded through
np.random, channel and brightness shifts, flip_axis, transform_matrix_offset_center) on small fixed
images, channels last and first, every fill mode and spline orders 0, 1, 3; ``array_to_img``'s
pixels (``array_to_img_<input>``); ``ImageDataGenerator.apply_transform`` with ``interpolation_order``
(``generator_<i>``); and the batch order of a
Keras 2 ``Iterator`` subclass (``it[i]``, ``on_epoch_end``, ``next``, ``reset``), for
tests/test_image_affine_keras2.py and tests/test_image_iterator.py.

Each case ``case_NNN`` stores its call as JSON (``_spec``: function, input name, keyword arguments,
the np.random seed set before it or null), Keras's result (``_out``) and the next ``np.random.random()``
after it (``_next``: the call drew as many numbers as Keras's).

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    /work/k2venv/bin/python scripts/make_keras2_image_transforms_fixture.py
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import numpy as np  # noqa: E402
import keras_preprocessing.image as kp_image  # noqa: E402  (flip_axis, transform_matrix_offset_center)
from keras.preprocessing import image  # noqa: E402

try:  # keras_preprocessing's brightness shift goes through Pillow
    import PIL  # noqa: F401
except ImportError:  # a side venv built before setup-keras2-venv.sh installed it: the project's (same Python)
    import glob

    sys.path += glob.glob(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                       ".venv", "lib", "python3*", "site-packages"))[:1]
    import keras_preprocessing.image.affine_transformations as _at
    import keras_preprocessing.image.utils as _utils
    from PIL import Image, ImageEnhance

    _at.ImageEnhance, _at.pil_image, _utils.pil_image = ImageEnhance, Image, Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "keras2", "image_transforms.npz")

CL = {"row_axis": 0, "col_axis": 1, "channel_axis": 2}
CF = {"row_axis": 1, "col_axis": 2, "channel_axis": 0}


def inputs():
    rng = np.random.RandomState(5)
    x = rng.uniform(0, 1, (7, 9, 3)).astype("float32")
    return {
        "x32": x, "x64": x.astype("float64"), "x_cf": np.ascontiguousarray(x.transpose(2, 0, 1)),
        "x_u8": rng.randint(0, 256, (7, 9, 3)).astype("uint8"), "x1": x[..., :1].copy(),
        "x4": rng.uniform(0, 1, (7, 9, 4)).astype("float32"),
        "x_mid": np.ascontiguousarray(x.transpose(0, 2, 1)),
        "x_neg": (x * 4 - 2).astype("float32"),
    }


def cases():
    out = []

    def add(fn, name, seed=None, **kwargs):
        out.append({"fn": fn, "input": name, "seed": seed, "kwargs": kwargs})

    for mode in ("nearest", "constant", "reflect", "wrap"):
        for order in (0, 1):
            add("apply_affine_transform", "x64", theta=33.0, tx=1.5, ty=-2.25, shear=12.0, zx=0.8, zy=1.3,
                fill_mode=mode, cval=0.25, order=order, **CL)
            add("apply_affine_transform", "x32", tx=10.6, ty=-13.3, fill_mode=mode, order=order, **CL)
            add("apply_affine_transform", "x_cf", theta=-71.0, zx=1.5, zy=0.6, fill_mode=mode, order=order,
                **CF)
    for kwargs in ({"theta": 90}, {"theta": 180}, {"zx": 1.5, "zy": 0.5}, {"tx": 0.5, "ty": -0.5},
                   {"shear": 45}, {"theta": 45, "zx": 2, "zy": 2}):
        add("apply_affine_transform", "x32", order=0, **kwargs)
        add("apply_affine_transform", "x32", order=1, fill_mode="constant", **kwargs)
    add("apply_affine_transform", "x32", theta=20, order=3, fill_mode="reflect")
    add("apply_affine_transform", "x_u8", theta=25, tx=0.5, zx=1.1)
    add("apply_affine_transform", "x_mid", theta=25, ty=1.5, row_axis=0, col_axis=2, channel_axis=1)
    add("apply_affine_transform", "x32")
    add("apply_channel_shift", "x32", intensity=0.2, channel_axis=2)
    add("apply_channel_shift", "x_cf", intensity=-0.3, channel_axis=0)
    add("apply_channel_shift", "x_u8", intensity=40.0, channel_axis=2)
    for name in ("x32", "x1", "x4", "x_neg"):
        for b in (0.37, 1.0, 1.6):
            add("apply_brightness_shift", name, brightness=b)
    add("random_rotation", "x_cf", seed=1, rg=40)
    add("random_rotation", "x32", seed=2, rg=40, fill_mode="reflect", **CL)
    add("random_rotation", "x32", seed=3, rg=90, interpolation_order=0, fill_mode="constant", cval=-1.0, **CL)
    add("random_shift", "x_cf", seed=4, wrg=0.2, hrg=0.3)
    add("random_shift", "x32", seed=5, wrg=0.2, hrg=0.3, fill_mode="wrap", **CL)
    add("random_shear", "x32", seed=6, intensity=25, fill_mode="constant", cval=-1.0, **CL)
    add("random_shear", "x_cf", seed=7, intensity=25)
    add("random_zoom", "x32", seed=8, zoom_range=(0.7, 1.2), **CL)
    add("random_zoom", "x_cf", seed=9, zoom_range=[0.5, 1.5], fill_mode="nearest")
    add("random_zoom", "x32", seed=10, zoom_range=(1, 1), **CL)
    add("random_channel_shift", "x32", seed=11, intensity_range=0.3, channel_axis=2)
    add("random_channel_shift", "x_cf", seed=12, intensity_range=0.3)
    add("random_brightness", "x32", seed=13, brightness_range=(0.5, 1.5))
    for axis in (0, 1, 2):
        add("flip_axis", "x32", axis=axis)
    return out


# Order 0 picks the nearest pixel, so a point exactly half-way between two (theta=60 on a 7 x 9 image,
# where cos is 0.5) goes by the last bit of sin/cos, which differs between numpy builds (numpy 1.22+
# on AVX-512 has its own sin; arignote uses libm's, as numpy before it): the cases avoid such ties.
GENERATOR_CASES = [  # ImageDataGenerator(**settings).apply_transform(x32, params)
    ({"interpolation_order": 0, "fill_mode": "reflect"},
     {"theta": 30, "tx": 1.5, "ty": -2, "shear": 10, "zx": 0.9, "zy": 1.2}),
    ({"interpolation_order": 0, "fill_mode": "constant", "cval": 0.5}, {"theta": -50}),
    ({"interpolation_order": 3, "fill_mode": "nearest"}, {"theta": 20, "zx": 1.2, "zy": 1.2}),
    ({"fill_mode": "nearest"},
     {"theta": 20, "channel_shift_intensity": 0.1, "flip_horizontal": True, "brightness": 1.3}),
]


class Numbered(image.Iterator):
    """A Keras 2 Iterator subclass: batches of sample indices, with one random draw per sample as an
    augmentation would."""

    def __init__(self, n, batch_size, shuffle, seed):
        super().__init__(n, batch_size, shuffle, seed)

    def _get_batches_of_transformed_samples(self, index_array):
        return index_array.copy(), np.random.random(len(index_array))


def iterator_orders():
    out = {}

    def record(key, batches):
        out["it_" + key + "_idx"] = np.concatenate([b[0] for b in batches])
        out["it_" + key + "_draw"] = np.concatenate([b[1] for b in batches])
        out["it_" + key + "_sizes"] = np.array([len(b[0]) for b in batches])

    for shuffle, seed in ((True, 7), (False, 7), (True, None)):
        key = f"{'shuffled' if shuffle else 'ordered'}_{seed}"
        np.random.seed(3)
        it = Numbered(10, 4, shuffle, seed)
        batches = [it[i] for i in range(len(it))]
        it.on_epoch_end()
        batches += [it[i] for i in (2, 0, 1)]
        record(key + "_getitem", batches)
        out["it_" + key + "_seen"] = np.array(it.total_batches_seen)
        np.random.seed(3)
        it = Numbered(10, 4, shuffle, seed)
        batches = [next(it) for _ in range(5)]
        it.reset()
        batches += [next(it) for _ in range(4)]
        record(key + "_next", batches)
        out["it_" + key + "_next_state"] = np.array([it.batch_index, it.total_batches_seen])
    return out


def main():
    data = inputs()
    arrays = dict(data)
    for i, case in enumerate(cases()):
        if case["seed"] is not None:
            np.random.seed(case["seed"])
        fn = getattr(image, case["fn"], None) or getattr(kp_image, case["fn"])
        result = fn(data[case["input"]], **case["kwargs"])
        arrays[f"case_{i:03d}_spec"] = np.array(json.dumps(case))
        arrays[f"case_{i:03d}_out"] = np.asarray(result)
        arrays[f"case_{i:03d}_next"] = np.array(np.random.random())
    arrays["offset_center"] = kp_image.transform_matrix_offset_center(
        np.array([[0.9, -0.2, 1.5], [0.3, 1.1, -2.0], [0, 0, 1]]), 7, 9)
    for i, (settings, params) in enumerate(GENERATOR_CASES):
        arrays[f"generator_{i}_spec"] = np.array(json.dumps([settings, params]))
        generator = image.ImageDataGenerator(**settings)
        arrays[f"generator_{i}_out"] = generator.apply_transform(data["x32"], params)
    for name in ("x32", "x_neg", "x1", "x4", "x_u8"):
        arrays["array_to_img_" + name] = np.asarray(kp_image.array_to_img(data[name]))
    arrays.update(iterator_orders())
    np.savez_compressed(OUT, **arrays)
    print("wrote", OUT, os.path.getsize(OUT), "bytes,", len(cases()), "cases")


if __name__ == "__main__":
    main()
