"""Regenerate tests/fixtures/keras2/backend_nn.npz: real Keras 2.3.1 (Theano backend) results of the
``keras.backend`` convolution, pooling, padding, resizing, normalization, rnn and map/fold functions
on small fixed random inputs, for tests/test_backend_nn_keras2.py and tests/test_backend_control.py.

Each case ``name`` stores its inputs as ``name/<arg>``, its keyword arguments as JSON in ``name/args``
and Keras's result as ``name/y`` (``name/y0``, ``name/y1``... for several results).

Keras 2's TensorFlow backend is the reference arignote follows; where Keras's Theano backend differs
from it, this script still runs Keras's Theano operations but feeds them so that they compute what
TensorFlow's do, and says how in ``name/how``:

* ``flipped``: Theano's ``conv1d/2d/3d`` and transposed convolutions are true convolutions (Keras's
  ``convert_kernel`` story); they get the spatially flipped kernel, which makes them TensorFlow's
  cross-correlation. (Theano's depthwise/separable already flip the kernel themselves.)
* ``tf_padded``: for ``padding='same'`` with an even kernel or a stride > 1, Theano pads k // 2 on
  both sides, TensorFlow ``(total // 2, total - total // 2)``; the case pads the input with
  ``K.spatial_*_padding`` by TensorFlow's rule and runs Keras's ``'valid'`` operation.
* ``tf_cropped``: a ``'same'`` transposed convolution with a stride runs Keras's ``'valid'`` one and
  crops it by TensorFlow's rule (Theano crops k // 2 at the start).

Cases Theano's Keras cannot give at all (TF-'same' pooling with even windows or strides, bilinear
resizing, CTC) are checked in the tests against hand-computed or plain-torch references.

Run in the side venv (scripts/setup-keras2-venv.sh), from the repository root::

    /work/k2venv/bin/python scripts/make_keras2_backend_fixture.py
"""

import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras2_shim  # noqa: E402,F401,I001  (before keras)
import numpy as np  # noqa: E402
import theano  # noqa: E402
from keras import backend as K  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "keras2", "backend_nn.npz")
RNG = np.random.RandomState(2024)
STORE = {}


def rand(*shape):
    return RNG.uniform(-1, 1, shape).astype("float32")


def tf_pads(n, k, s, d=1):
    """TensorFlow's 'same' padding of one axis, (before, after)."""
    total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


def flip(kernel, rank):
    return kernel[(slice(None, None, -1),) * rank]


# Theano's BLAS-backed ops (K.dot, K.batch_dot) do not link without a BLAS library here and its scan
# (K.rnn, K.map_fn, K.foldl) has no C extension on Python 3.11: those run with Theano's Python linker
PY_MODE = theano.compile.Mode(linker="py", optimizer="fast_compile")


def evaluate(r, python=False):
    return theano.function([], r, mode=PY_MODE)() if python else K.eval(r)


def save(name, how, args, inputs, result, python=False):
    for key, value in inputs.items():
        STORE[f"{name}/{key}"] = np.asarray(value)
    STORE[f"{name}/args"] = np.array(json.dumps(args))
    STORE[f"{name}/how"] = np.array(how)
    results = result if isinstance(result, (list, tuple)) else [result]
    for i, r in enumerate(results):
        STORE[f"{name}/y" if len(results) == 1 else f"{name}/y{i}"] = np.asarray(evaluate(r, python))


def spatial(x, data_format):
    return x.shape[2:] if data_format == "channels_first" else x.shape[1:-1]


def tf_pad_input(x, rank, ks, strides, dilation, data_format):
    pads = tuple(tf_pads(n, k, s, d) for n, k, s, d in zip(spatial(x, data_format), ks, strides, dilation))
    v = K.variable(x)
    if rank == 1:
        return K.temporal_padding(v, pads[0]) if data_format == "channels_last" else None
    if rank == 2:
        return K.spatial_2d_padding(v, pads, data_format=data_format)
    return K.spatial_3d_padding(v, pads, data_format=data_format)


def conv_case(name, fn, rank, x, kernel, strides, padding, data_format, dilation):
    args = {"strides": strides, "padding": padding, "data_format": data_format, "dilation_rate": dilation}
    ks = kernel.shape[:rank]
    st = (strides,) * rank if isinstance(strides, int) else strides
    dl = (dilation,) * rank if isinstance(dilation, int) else dilation
    same_differs = padding == "same" and (any(k % 2 == 0 for k in ks) or any(s > 1 for s in st))
    kflip = K.variable(flip(kernel, rank))
    if same_differs:
        y = fn(
            tf_pad_input(x, rank, ks, st, dl, data_format),
            kflip,
            strides=strides,
            padding="valid",
            data_format=data_format,
            dilation_rate=dilation,
        )
        how = "flipped, tf_padded"
    else:
        y = fn(
            K.variable(x),
            kflip,
            strides=strides,
            padding=padding,
            data_format=data_format,
            dilation_rate=dilation,
        )
        how = "flipped"
    save(name, how, args, {"x": x, "kernel": kernel}, y)


def convolutions():
    conv_case(
        "conv2d_valid_cl",
        K.conv2d,
        2,
        rand(2, 5, 6, 3),
        rand(3, 3, 3, 4),
        (1, 1),
        "valid",
        "channels_last",
        (1, 1),
    )
    conv_case(
        "conv2d_same_odd_cl",
        K.conv2d,
        2,
        rand(2, 5, 6, 3),
        rand(3, 3, 3, 4),
        (1, 1),
        "same",
        "channels_last",
        (1, 1),
    )
    conv_case(
        "conv2d_same_even_strided_cf",
        K.conv2d,
        2,
        rand(2, 3, 7, 6),
        rand(2, 4, 3, 2),
        (2, 2),
        "same",
        "channels_first",
        (1, 1),
    )
    conv_case(
        "conv2d_same_odd_strided_cl",
        K.conv2d,
        2,
        rand(1, 6, 6, 2),
        rand(3, 3, 2, 2),
        (2, 2),
        "same",
        "channels_last",
        (1, 1),
    )
    conv_case(
        "conv2d_dilated_cf",
        K.conv2d,
        2,
        rand(1, 2, 7, 7),
        rand(3, 3, 2, 3),
        (1, 1),
        "valid",
        "channels_first",
        (2, 2),
    )
    conv_case(
        "conv1d_same_strided_cl", K.conv1d, 1, rand(1, 7, 2), rand(3, 2, 2), 2, "same", "channels_last", 1
    )
    conv_case("conv1d_valid_cf", K.conv1d, 1, rand(2, 3, 6), rand(2, 3, 2), 1, "valid", "channels_first", 1)
    conv_case(
        "conv3d_valid_cl",
        K.conv3d,
        3,
        rand(1, 4, 4, 4, 2),
        rand(2, 2, 2, 2, 3),
        (1, 2, 1),
        "valid",
        "channels_last",
        (1, 1, 1),
    )
    conv_case(
        "conv3d_same_even_cf",
        K.conv3d,
        3,
        rand(1, 2, 4, 5, 3),
        rand(2, 3, 2, 2, 2),
        (1, 1, 1),
        "same",
        "channels_first",
        (1, 1, 1),
    )
    # causal: Keras pads (k - 1) * d before, in both backends
    x, kernel = rand(2, 6, 3), rand(2, 3, 2)
    y = K.conv1d(
        K.variable(x),
        K.variable(flip(kernel, 1)),
        strides=1,
        padding="causal",
        data_format="channels_last",
        dilation_rate=2,
    )
    save(
        "conv1d_causal_dilated",
        "flipped",
        {"strides": 1, "padding": "causal", "dilation_rate": 2},
        {"x": x, "kernel": kernel},
        y,
    )


def transposed():
    def case(name, fn, rank, x, kernel, output_shape, strides, padding, data_format):
        args = {
            "output_shape": output_shape,
            "strides": strides,
            "padding": padding,
            "data_format": data_format,
        }
        kflip = K.variable(flip(kernel, rank))
        if padding == "same" and any(s > 1 for s in strides):
            full = [(n - 1) * s + k for n, s, k in zip(spatial(x, data_format), strides, kernel.shape[:rank])]
            out = list(output_shape)
            sp = slice(2, None) if data_format == "channels_first" else slice(1, -1)
            wanted = out[sp]
            out[sp] = full
            y = K.eval(
                fn(
                    K.variable(x),
                    kflip,
                    tuple(out),
                    strides=strides,
                    padding="valid",
                    data_format=data_format,
                )
            )
            index = [slice(None)] * (rank + 2)
            for i, (n, k, s) in enumerate(zip(wanted, kernel.shape[:rank], strides)):
                start = tf_pads(n, k, s)[0]
                index[(2 if data_format == "channels_first" else 1) + i] = slice(start, start + n)
            save(name, "flipped, tf_cropped", args, {"x": x, "kernel": kernel}, K.constant(y[tuple(index)]))
        else:
            save(
                name,
                "flipped",
                args,
                {"x": x, "kernel": kernel},
                fn(
                    K.variable(x),
                    kflip,
                    output_shape,
                    strides=strides,
                    padding=padding,
                    data_format=data_format,
                ),
            )

    case(
        "conv2d_transpose_valid_cl",
        K.conv2d_transpose,
        2,
        rand(1, 3, 3, 2),
        rand(3, 3, 4, 2),
        (1, 7, 7, 4),
        (2, 2),
        "valid",
        "channels_last",
    )
    case(
        "conv2d_transpose_same_strided_cf",
        K.conv2d_transpose,
        2,
        rand(2, 2, 3, 3),
        rand(3, 3, 2, 2),
        (2, 2, 6, 6),
        (2, 2),
        "same",
        "channels_first",
    )
    case(
        "conv2d_transpose_same_cl",
        K.conv2d_transpose,
        2,
        rand(1, 4, 4, 2),
        rand(3, 3, 3, 2),
        (1, 4, 4, 3),
        (1, 1),
        "same",
        "channels_last",
    )
    case(
        "conv3d_transpose_valid_cl",
        K.conv3d_transpose,
        3,
        rand(1, 2, 2, 2, 1),
        rand(2, 2, 2, 2, 1),
        (1, 3, 3, 3, 2),
        (1, 1, 1),
        "valid",
        "channels_last",
    )


def separable():
    x, dk, pk = rand(2, 5, 5, 3), rand(3, 3, 3, 2), rand(1, 1, 6, 4)
    save(
        "separable_conv2d_same_cl",
        "as is",
        {"padding": "same", "data_format": "channels_last"},
        {"x": x, "depthwise_kernel": dk, "pointwise_kernel": pk},
        K.separable_conv2d(
            K.variable(x), K.variable(dk), K.variable(pk), padding="same", data_format="channels_last"
        ),
    )
    x, dk, pk = rand(2, 3, 6, 6), rand(3, 3, 3, 1), rand(1, 1, 3, 2)
    save(
        "separable_conv2d_strided_cf",
        "as is",
        {"strides": [2, 2], "data_format": "channels_first"},
        {"x": x, "depthwise_kernel": dk, "pointwise_kernel": pk},
        K.separable_conv2d(
            K.variable(x), K.variable(dk), K.variable(pk), strides=(2, 2), data_format="channels_first"
        ),
    )
    x, dk, pk = rand(2, 8, 2), rand(3, 2, 2), rand(1, 4, 3)
    save(
        "separable_conv1d_dilated",
        "as is",
        {"dilation_rate": 2, "data_format": "channels_last"},
        {"x": x, "depthwise_kernel": dk, "pointwise_kernel": pk},
        K.separable_conv1d(
            K.variable(x), K.variable(dk), K.variable(pk), dilation_rate=2, data_format="channels_last"
        ),
    )
    x, dk = rand(1, 2, 6, 6), rand(3, 3, 2, 2)
    save(
        "depthwise_conv2d_strided_cf",
        "as is",
        {"strides": [2, 2], "data_format": "channels_first"},
        {"x": x, "depthwise_kernel": dk},
        K.depthwise_conv2d(K.variable(x), K.variable(dk), strides=(2, 2), data_format="channels_first"),
    )
    x, dk = rand(1, 5, 5, 2), rand(2, 2, 2, 1)
    padded = K.spatial_2d_padding(K.variable(x), (tf_pads(5, 2, 1), tf_pads(5, 2, 1)), "channels_last")
    save(
        "depthwise_conv2d_same_even_cl",
        "tf_padded",
        {"padding": "same", "data_format": "channels_last"},
        {"x": x, "depthwise_kernel": dk},
        K.depthwise_conv2d(padded, K.variable(dk), padding="valid", data_format="channels_last"),
    )


def local():
    x, kernel = rand(2, 7, 3), rand(3, 9, 4)
    save(
        "local_conv1d",
        "as is",
        {"kernel_size": [3], "strides": [2]},
        {"inputs": x, "kernel": kernel},
        K.local_conv1d(K.variable(x), K.variable(kernel), (3,), (2,)),
        python=True,
    )
    for fmt, x in (("channels_last", rand(2, 5, 5, 2)), ("channels_first", rand(2, 2, 5, 5))):
        kernel = rand(8, 8, 3)
        save(
            f"local_conv2d_{fmt}",
            "as is",
            {"kernel_size": [2, 2], "strides": [1, 2], "output_shape": [4, 2], "data_format": fmt},
            {"inputs": x, "kernel": kernel},
            K.local_conv2d(K.variable(x), K.variable(kernel), (2, 2), (1, 2), (4, 2), data_format=fmt),
            python=True,
        )


def pooling():
    def case(name, fn, x, pool_size, strides, padding, data_format, pool_mode):
        args = {
            "pool_size": pool_size,
            "strides": strides,
            "padding": padding,
            "data_format": data_format,
            "pool_mode": pool_mode,
        }
        save(
            name,
            "as is",
            args,
            {"x": x},
            fn(K.variable(x), tuple(pool_size), tuple(strides), padding, data_format, pool_mode),
        )

    case("pool2d_max_valid_cl", K.pool2d, rand(2, 5, 6, 3), [2, 2], [2, 2], "valid", "channels_last", "max")
    case("pool2d_avg_valid_cf", K.pool2d, rand(2, 3, 5, 6), [3, 2], [1, 2], "valid", "channels_first", "avg")
    # odd windows, stride 1: Theano's 'same' pads as TensorFlow's
    case("pool2d_max_same_odd_cl", K.pool2d, rand(1, 5, 4, 2), [3, 3], [1, 1], "same", "channels_last", "max")
    case("pool2d_avg_same_odd_cl", K.pool2d, rand(1, 5, 4, 2), [3, 3], [1, 1], "same", "channels_last", "avg")
    case(
        "pool3d_max_valid_cl",
        K.pool3d,
        rand(1, 4, 4, 4, 2),
        [2, 2, 2],
        [2, 2, 2],
        "valid",
        "channels_last",
        "max",
    )
    case(
        "pool3d_avg_same_odd_cf",
        K.pool3d,
        rand(1, 2, 4, 3, 4),
        [3, 3, 3],
        [1, 1, 1],
        "same",
        "channels_first",
        "avg",
    )


def reshaping():
    x = rand(1, 2, 3, 2)
    save(
        "resize_images_nearest",
        "as is",
        {"height_factor": 2, "width_factor": 3, "data_format": "channels_last"},
        {"x": x},
        K.resize_images(K.variable(x), 2, 3, "channels_last"),
    )
    x = rand(1, 2, 2, 2, 3)
    save(
        "resize_volumes_cf",
        "as is",
        {"depth_factor": 2, "height_factor": 1, "width_factor": 2, "data_format": "channels_first"},
        {"x": x},
        K.resize_volumes(K.variable(x), 2, 1, 2, "channels_first"),
    )
    x = rand(2, 3, 2)
    save(
        "temporal_padding", "as is", {"padding": [1, 2]}, {"x": x}, K.temporal_padding(K.variable(x), (1, 2))
    )
    for fmt, x in (("channels_last", rand(1, 3, 2, 2)), ("channels_first", rand(1, 2, 3, 2))):
        save(
            f"spatial_2d_padding_{fmt}",
            "as is",
            {"padding": [[1, 0], [2, 1]], "data_format": fmt},
            {"x": x},
            K.spatial_2d_padding(K.variable(x), ((1, 0), (2, 1)), fmt),
        )
    x = rand(1, 2, 2, 2, 1)
    save(
        "spatial_3d_padding",
        "as is",
        {"padding": [[1, 0], [0, 2], [1, 1]], "data_format": "channels_last"},
        {"x": x},
        K.spatial_3d_padding(K.variable(x), ((1, 0), (0, 2), (1, 1)), "channels_last"),
    )


def normalization():
    x, mean, var, beta, gamma = rand(3, 4, 5), rand(5), np.abs(rand(5)) + 0.1, rand(5), rand(5)
    save(
        "batch_normalization",
        "as is",
        {"axis": -1, "epsilon": 1e-3},
        {"x": x, "mean": mean, "var": var, "beta": beta, "gamma": gamma},
        K.batch_normalization(
            K.variable(x),
            K.variable(mean),
            K.variable(var),
            K.variable(beta),
            K.variable(gamma),
            axis=-1,
            epsilon=1e-3,
        ),
    )
    x, beta, gamma = rand(4, 3, 5), rand(5), rand(5)
    normed, m, v = K.normalize_batch_in_training(
        K.variable(x), K.variable(gamma), K.variable(beta), [0, 1], epsilon=1e-3
    )
    save(
        "normalize_batch_in_training",
        "as is",
        {"reduction_axes": [0, 1], "epsilon": 1e-3},
        {"x": x, "gamma": gamma, "beta": beta},
        [normed, m, v],
    )
    x, value = rand(3, 2), rand(3, 2)
    _, new = K.moving_average_update(K.variable(x), K.variable(value), 0.9)
    save("moving_average_update", "as is", {"momentum": 0.9}, {"x": x, "value": value}, new)


def loops():
    x, w, u, h0, c = rand(2, 4, 3), rand(3, 2), rand(2, 2), rand(2, 2), rand(2)
    mask = np.array([[1, 1, 0, 1], [0, 1, 1, 0]], dtype="float32")

    def step(inp, states):
        h = K.tanh(K.dot(inp, K.variable(w)) + K.dot(states[0], K.variable(u)))
        if len(states) > 1:
            h = h + states[1]
        return h, [h]

    inputs = {"x": x, "w": w, "u": u, "h0": h0, "c": c, "mask": mask}
    for name, kwargs in (
        ("rnn_plain", {}),
        ("rnn_backwards", {"go_backwards": True}),
        ("rnn_masked", {"mask": K.variable(mask)}),
        (
            "rnn_masked_backwards_constants",
            {"mask": K.variable(mask), "go_backwards": True, "constants": [K.variable(c)]},
        ),
    ):
        last, outs, states = K.rnn(step, K.variable(x), [K.variable(h0)], **kwargs)
        args = {k: True for k in kwargs if k != "go_backwards"}
        args["go_backwards"] = kwargs.get("go_backwards", False)
        save(name, "as is", args, inputs, [last, outs, states[0]], python=True)
    elems = rand(4, 3)
    save(
        "map_fn",
        "as is",
        {},
        {"elems": elems},
        K.map_fn(lambda r: K.sum(r * r) + r[0], K.variable(elems)),
        python=True,
    )
    save(
        "foldl",
        "as is",
        {},
        {"elems": elems},
        K.foldl(lambda acc, r: acc * 0.5 + r, K.variable(elems)),
        python=True,
    )
    save(
        "foldr_init",
        "as is",
        {},
        {"elems": elems},
        K.foldr(
            lambda acc, r: acc * 0.5 + r, K.variable(elems), initializer=K.variable(np.ones(3, "float32"))
        ),
        python=True,
    )
    predictions = np.array([[0.1, 0.5, 0.5, 0.2], [0.9, 0.05, 0.03, 0.02], [0.3, 0.3, 0.3, 0.1]], "float32")
    targets = np.array([2, 3, 1], "int32")
    results = [
        K.in_top_k(K.variable(predictions), K.constant(targets, dtype="int32"), k) for k in (0, 1, 2, 4)
    ]
    save(
        "in_top_k",
        "as is",
        {"k": [0, 1, 2, 4]},
        {"predictions": predictions, "targets": targets},
        [K.cast(r, "int32") for r in results],
        python=True,
    )


def extras():
    # a dilated transposed convolution (TensorFlow's atrous_conv2d_transpose), 'valid'
    x, kernel = rand(1, 3, 3, 2), rand(2, 2, 3, 2)
    y = K.conv2d_transpose(
        K.variable(x),
        K.variable(flip(kernel, 2)),
        (1, 5, 5, 3),
        padding="valid",
        data_format="channels_last",
        dilation_rate=(2, 2),
    )
    args = {
        "output_shape": [1, 5, 5, 3],
        "padding": "valid",
        "data_format": "channels_last",
        "dilation_rate": [2, 2],
    }
    save("conv2d_transpose_dilated_cl", "flipped", args, {"x": x, "kernel": kernel}, y)
    # separable 'same' with a stride: TensorFlow's padding, then Keras's 'valid' separable convolution
    x, dk, pk = rand(1, 6, 7, 2), rand(3, 3, 2, 2), rand(1, 1, 4, 3)
    padded = K.spatial_2d_padding(K.variable(x), (tf_pads(6, 3, 2), tf_pads(7, 3, 2)), "channels_last")
    save(
        "separable_conv2d_same_strided_cl",
        "tf_padded",
        {"strides": [2, 2], "padding": "same", "data_format": "channels_last"},
        {"x": x, "depthwise_kernel": dk, "pointwise_kernel": pk},
        K.separable_conv2d(
            padded, K.variable(dk), K.variable(pk), strides=(2, 2), data_format="channels_last"
        ),
    )


def main():
    for part in (
        convolutions,
        transposed,
        separable,
        local,
        pooling,
        reshaping,
        normalization,
        loops,
        extras,
    ):
        part()
    np.savez_compressed(OUT, **STORE)
    print("wrote", OUT, os.path.getsize(OUT), "bytes,", len({k.split("/")[0] for k in STORE}), "cases")


if __name__ == "__main__":
    main()
