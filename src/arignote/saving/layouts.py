"""The per-layer-type table between Keras 2 HDF5 weights and arignote layers.

A layer's ``get_weights()`` already speaks Keras 2's layout (Dense kernel ``(in, units)``, conv
kernels ``(*spatial, in, filters)``, LSTM gates i, f, c, o, GRU ``reset_after`` biases
``(2, 3 * units)``): the torch layout stays inside the layer. This module knows what a *file*
may hold beyond that and converts it on the way in:

* the names Keras gives each weight (``dense_1/kernel:0``), written into ``weight_names``;
* kernels of files written by the Theano backend, which convolves (flips the kernel) where
  TensorFlow and torch correlate: ``CONV_FLIP`` lists which weights are spatially flipped (and a
  ``ConvRNN2D`` around a user's cell has its rank-4 ``kernel``/``recurrent_kernel`` flipped);
* ``CuDNNLSTM``/``CuDNNGRU`` weights loaded into ``LSTM``/``GRU(reset_after=True)`` and back
  (input kernels stored column-major per gate, recurrent kernels transposed, LSTM biases split
  into input and recurrent halves);
* wrappers and nested models, whose weights are their inner layers' weights in order.

Example::

    >>> import numpy as np
    >>> k = np.arange(4.0).reshape(2, 2, 1, 1)
    >>> flip_kernel(k)[..., 0, 0].tolist()
    [[3.0, 2.0], [1.0, 0.0]]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Origin", "weight_names", "from_file", "to_file", "flip_kernel", "CONV_FLIP", "WEIGHT_NAMES",
           "reorder_dense_after_flatten", "keras_order", "cudnn_to_plain", "plain_to_cudnn"]  # fmt: skip


# Keras 2 weight names, in get_weights() order, for layers whose set is fixed (None: optional bias)
WEIGHT_NAMES: dict[str, tuple[str, ...]] = {
    "Dense": ("kernel", "bias"),
    "Conv1D": ("kernel", "bias"),
    "Conv2D": ("kernel", "bias"),
    "Conv3D": ("kernel", "bias"),
    "Conv2DTranspose": ("kernel", "bias"),
    "Conv3DTranspose": ("kernel", "bias"),
    "SeparableConv1D": ("depthwise_kernel", "pointwise_kernel", "bias"),
    "SeparableConv2D": ("depthwise_kernel", "pointwise_kernel", "bias"),
    "DepthwiseConv2D": ("depthwise_kernel", "bias"),
    "LocallyConnected1D": ("kernel", "bias"),
    "LocallyConnected2D": ("kernel", "bias"),
    "Embedding": ("embeddings",),
    "SimpleRNN": ("kernel", "recurrent_kernel", "bias"),
    "GRU": ("kernel", "recurrent_kernel", "bias"),
    "LSTM": ("kernel", "recurrent_kernel", "bias"),
    "CuDNNGRU": ("kernel", "recurrent_kernel", "bias"),
    "CuDNNLSTM": ("kernel", "recurrent_kernel", "bias"),
    "ConvLSTM2D": ("kernel", "recurrent_kernel", "bias"),
    "PReLU": ("alpha",),
}

# Which weights (by position) a Theano-backend file stores flipped in every spatial axis.
# Keras 2's Theano backend convolves (filter_flip) in conv1d/2d/3d and the transposed ones; its
# depthwise and separable ops pre-flip their depthwise kernels themselves, so those are stored
# as correlations already (and a 1x1 pointwise kernel has nothing to flip).
CONV_FLIP: dict[str, tuple[int, ...]] = {
    "Conv1D": (0,),
    "Conv2D": (0,),
    "Conv3D": (0,),
    "Conv2DTranspose": (0,),
    "Conv3DTranspose": (0,),
    "ConvLSTM2D": (0, 1),
}

_CONVOLVING_BACKENDS = {"theano"}
_CORRELATING_BACKENDS = {"tensorflow", "cntk", "torch", "jax", "numpy"}


@dataclass
class Origin:
    """Where a file's weights come from: Keras version and backend (its HDF5 attributes)."""

    keras_version: str | None = None
    backend: str | None = None
    notes: list[str] = field(default_factory=list)  # conversions applied, for the one-line message

    @property
    def flips_kernels(self) -> bool:
        """True for a Theano file: its conv kernels are stored for true convolution."""
        return self.backend in _CONVOLVING_BACKENDS

    def note(self, what: str) -> None:
        if what not in self.notes:
            self.notes.append(what)


def class_name(layer: Any) -> str:
    """The Keras class name of ``layer`` (aliases such as Convolution2D resolve to Conv2D)."""
    return type(layer).__name__


def flip_kernel(kernel: np.ndarray) -> np.ndarray:
    """Reverse every spatial axis of a Keras kernel ``(*spatial, in, out)``: convolution <-> correlation."""
    kernel = np.asarray(kernel)
    spatial = tuple(range(kernel.ndim - 2))
    # copy(), not ascontiguousarray(): a flipped (1, 1, ...) view counts as contiguous in numpy but
    # keeps negative strides, which torch.as_tensor refuses
    return np.flip(kernel, axis=spatial).copy() if spatial else kernel


def _wrapped(layer: Any) -> list[Any] | None:
    """The inner layers of a wrapper (Bidirectional: forward then backward; TimeDistributed)."""
    name = class_name(layer)
    if name == "Bidirectional":
        return [layer.forward_layer, layer.backward_layer]
    if name == "TimeDistributed":
        return [layer.layer]
    return None


def _nested(layer: Any) -> list[Any] | None:
    """The layers of a model used as a layer (a nested Sequential or functional Model)."""
    sub = getattr(layer, "layers", None)
    return list(sub) if sub is not None and not hasattr(layer, "_keras_weights") else None


def _created_trainable(layer: Any) -> list[bool]:
    """Per weight of a layer with weights of its own (``get_weights()`` order): created trainable
    (a parameter not added with ``add_weight(trainable=False)``; buffers such as moving statistics
    are not), whatever the layer's ``trainable`` is now. A weight computed from the parameters (not a
    view of one: CuDNN layouts) counts as trainable."""
    frozen = {i for m in layer.modules() for i in getattr(m, "_frozen", ())}
    params = {p.untyped_storage().data_ptr(): id(p) for p in layer.parameters()}
    buffers = {b.untyped_storage().data_ptr() for b in layer.buffers()}
    out = []
    for view in layer._keras_weights():
        ptr = view.untyped_storage().data_ptr()
        out.append(ptr not in buffers and params.get(ptr) not in frozen)
    return out


def weight_names(layer: Any, count: int) -> list[str]:
    """Keras-style names (``<layer>/<weight>:0``) for ``count`` weights of ``layer``."""
    prefix = layer.name
    nested = _nested(layer)
    if nested is not None:  # a model inside a wrapper (TimeDistributed(vision_model)): its layers' names
        return [name for sub in nested for name in weight_names(sub, len(sub.get_weights()))]
    wrapped = _wrapped(layer)
    if wrapped is not None:
        names: list[str] = []
        for sub in wrapped:
            n = len(sub.get_weights())
            names += [f"{prefix}/{name}" for name in weight_names(sub, n)]
        return names
    own = getattr(layer, "weight_names", None)
    base = list(own()) if callable(own) else []
    cls = class_name(layer)
    if len(base) == count:
        pass
    elif cls == "BatchNormalization":
        base = [
            n
            for n, on in (("gamma", getattr(layer, "scale", True)), ("beta", getattr(layer, "center", True)))
            if on
        ]
        base += ["moving_mean", "moving_variance"]
    elif cls in WEIGHT_NAMES:
        base = list(WEIGHT_NAMES[cls])
    else:  # a custom layer: its parameter / buffer names (add_weight's names), as Keras would write
        base = [n.replace(".", "/") for n, _ in (*layer.named_parameters(), *layer.named_buffers())]
    if len(base) < count:
        base += [f"param_{i}" for i in range(len(base), count)]
    return [f"{prefix}/{name}:0" for name in base[:count]]


# ---------------------------------------------------------------------------------------- CuDNN RNNs


def _per_gate(kernel: np.ndarray, fn: Any, gates: int) -> np.ndarray:
    return np.hstack([fn(k) for k in np.hsplit(kernel, gates)])


def cudnn_to_plain(weights: list[np.ndarray], gates: int) -> list[np.ndarray]:
    """CuDNNLSTM/CuDNNGRU weights -> LSTM/GRU(reset_after=True) weights (Keras 2 layouts).

    CuDNN keeps each gate's input kernel column-major and its recurrent kernel transposed; its
    bias is ``(2 * gates * units,)`` (input half then recurrent half). LSTM adds the halves, GRU
    keeps them as its ``(2, gates * units)`` bias.
    """
    kernel, recurrent, bias = (np.asarray(w) for w in weights)
    kernel = _per_gate(kernel, lambda k: k.T.reshape(k.shape, order="F"), gates)
    recurrent = _per_gate(recurrent, lambda k: k.T, gates)
    halves = bias.reshape(2, -1)
    bias = halves.sum(axis=0) if gates == 4 else halves
    return [kernel, recurrent, bias]


def plain_to_cudnn(weights: list[np.ndarray], gates: int) -> list[np.ndarray]:
    """The inverse of :func:`cudnn_to_plain` (an LSTM bias is split into two equal halves)."""
    kernel, recurrent, bias = (np.asarray(w) for w in weights)
    kernel = _per_gate(kernel, lambda k: k.T.reshape(k.shape, order="C"), gates)
    recurrent = _per_gate(recurrent, lambda k: k.T, gates)
    bias = np.tile(0.5 * bias, 2) if gates == 4 else bias.reshape(-1)
    return [kernel, recurrent, bias]


def _rnn_from_file(layer: Any, weights: list[np.ndarray], origin: Origin) -> list[np.ndarray]:
    cls = class_name(layer)
    if len(weights) != 3:
        return weights
    units = weights[1].shape[0]
    bias_shape = tuple(weights[2].shape)
    if cls in ("LSTM", "CuDNNLSTM"):
        if bias_shape == (8 * units,) and cls == "LSTM":
            origin.note("CuDNNLSTM weights converted to LSTM")
            return cudnn_to_plain(weights, 4)
        if bias_shape == (4 * units,) and cls == "CuDNNLSTM":
            origin.note("LSTM weights converted to CuDNNLSTM")
            return plain_to_cudnn(weights, 4)
        return weights
    # GRU family: the bias shape tells the source
    if bias_shape == (6 * units,):
        source = "CuDNNGRU"
    elif bias_shape == (2, 3 * units):
        source = "GRU(reset_after=True)"
    elif bias_shape == (3 * units,):
        source = "GRU(reset_after=False)"
    else:
        raise ValueError(
            f"layer '{layer.name}': a GRU bias of shape {bias_shape} fits no GRU variant (units={units})"
        )
    if cls == "CuDNNGRU":
        target = "CuDNNGRU"
    else:
        target = "GRU(reset_after=True)" if getattr(layer, "reset_after", True) else "GRU(reset_after=False)"
    if source == target:
        return weights
    if "GRU(reset_after=False)" in (source, target):
        raise ValueError(
            f"layer '{layer.name}': weights of a {source} cannot be loaded into a {target} "
            "(the reset gate is applied at another place; build the layer as in the file)"
        )
    origin.note(f"{source} weights converted to {target}")
    return cudnn_to_plain(weights, 3) if source == "CuDNNGRU" else plain_to_cudnn(weights, 3)


# ---------------------------------------------------------------------------------------- in and out


def _parts(layer: Any) -> list[Any] | None:
    """The layers a composite layer's weights come from, in its ``get_weights()`` order (a nested
    model's layers, a wrapper's inner layer(s)), or None for a layer with weights of its own."""
    nested = _nested(layer)
    return nested if nested is not None else _wrapped(layer)


def _trainable_first(rows: list[tuple[int, bool]]) -> list[tuple[int, bool]]:
    return [r for r in rows if r[1]] + [r for r in rows if not r[1]]


def keras_order(layer: Any, frozen: bool = False) -> list[tuple[int, bool]]:
    """Where each weight of ``layer``'s group in a Keras 2 file comes from: ``(index into
    layer.get_weights(), trainable)`` in the file's order.

    Keras 2.3.1 writes ``layer.weights``, which is ``trainable_weights + non_trainable_weights`` at
    every level: a layer's own weights (a user's cell with ``add_weight(trainable=False)`` before its
    kernel: kernel first), a model's (every sublayer's trainable weights, then every other one: the
    moving statistics of a BatchNormalization after the next Dense's kernel), ``TimeDistributed``'s
    (its inner layer's) and ``Bidirectional``'s (forward then backward trainable weights, then the
    others). Freezing moves weights to the non-trainable part: a frozen layer keeps its own order;
    a frozen wrapper freezes its inner layers (Keras's ``Wrapper.trainable`` setter), a frozen model
    does not (its ``non_trainable_weights`` still lists its layers' trainable weights first).

    Example::

        >>> from arignote.layers import Dense, BatchNormalization, TimeDistributed
        >>> from arignote.models import Sequential
        >>> inner = Sequential([Dense(2, input_shape=(3,)), BatchNormalization(), Dense(1)])
        >>> [i for i, _ in keras_order(TimeDistributed(inner))]  # kernel, bias, gamma, beta, ...
        [0, 1, 2, 3, 6, 7, 4, 5]
    """
    parts = _parts(layer)
    if parts is None:
        created = _created_trainable(layer)
        live = not frozen and bool(getattr(layer, "trainable", True))
        return [(i, live and created[i]) for i, _ in _trainable_first(list(enumerate(created)))]
    own_frozen = frozen or not bool(getattr(layer, "trainable", True))
    inner_frozen = own_frozen if _nested(layer) is None else False  # wrappers pass it on, models do not
    rows: list[tuple[int, bool]] = []
    for sub in parts:
        rows += [(len(rows) + i, flag) for i, flag in keras_order(sub, inner_frozen)]
    rows = _trainable_first(rows)
    return [(i, False) for i, _ in rows] if own_frozen else rows


def from_file(layer: Any, weights: list[np.ndarray], origin: Origin) -> list[np.ndarray]:
    """Arrays read from a file's layer group -> what ``layer.set_weights`` takes."""
    weights = [np.asarray(w) for w in weights]
    order = keras_order(layer)
    if len(order) == len(weights):  # (a count that does not fit: the caller reports the mismatch)
        unsorted: list[Any] = [None] * len(weights)
        for position, (i, _) in enumerate(order):
            unsorted[i] = weights[position]
        weights = unsorted
    return _convert(layer, weights, origin)


def _convert(layer: Any, weights: list[np.ndarray], origin: Origin) -> list[np.ndarray]:
    """A file's arrays for ``layer`` in its ``get_weights()`` order -> what ``set_weights`` takes
    (kernel flips, CuDNN RNN weights), layer by layer inside wrappers and models."""
    parts = _parts(layer)
    if parts is not None:
        out: list[np.ndarray] = []
        for sub in parts:
            n = len(sub.get_weights())
            out += _convert(sub, weights[:n], origin)
            weights = weights[n:]
        return out + weights
    cls = class_name(layer)
    flips = CONV_FLIP.get(cls, ()) or _cell_kernels(layer, weights)
    if origin.flips_kernels and flips:
        for i in flips:
            if i < len(weights):
                weights[i] = flip_kernel(weights[i])
        origin.note("convolution kernels flipped (Theano convolves, arignote correlates)")
    if cls in ("LSTM", "GRU", "CuDNNLSTM", "CuDNNGRU"):
        weights = _rnn_from_file(layer, weights, origin)
    return weights


def convolved(layer: Any) -> list[int]:
    """Positions, in ``layer.get_weights()``, of the kernels a Theano file stores for convolution
    (what :func:`from_file` flips), inside wrappers and nested models too: their optimizer slots
    are flipped alike (:mod:`arignote.saving.optimizer_state`)."""
    parts = _parts(layer)
    if parts is not None:
        out: list[int] = []
        offset = 0
        for sub in parts:
            out += [offset + i for i in convolved(sub)]
            offset += len(sub.get_weights())
        return out
    return list(CONV_FLIP.get(class_name(layer), ()) or _cell_kernels(layer, layer.get_weights()))


# the weights of a convolutional cell (a user's cell in ConvRNN2D) that its K.conv2d calls convolve with
_CELL_CONV_KERNELS = ("kernel", "recurrent_kernel")


def _cell_kernels(layer: Any, weights: list[np.ndarray]) -> tuple[int, ...]:
    """Positions of a ConvRNN2D cell's rank-4 ``kernel`` / ``recurrent_kernel`` among ``weights`` (the
    cell's weights in ``get_weights`` order): what a Theano file stores for true convolution, as it
    does ConvLSTM2D's (Keras 2's Theano ``K.conv2d`` convolves whichever layer calls it)."""
    cell = getattr(layer, "cell", None)
    if cell is None or not any(k.__name__ == "ConvRNN2D" for k in type(layer).__mro__):
        return ()
    names = {p.untyped_storage().data_ptr(): n.rsplit(".", 1)[-1] for n, p in cell.named_parameters()}
    views = list(layer._keras_weights())
    return tuple(
        i for i, view in enumerate(views)
        if i < len(weights) and np.ndim(weights[i]) == 4
        and names.get(view.untyped_storage().data_ptr()) in _CELL_CONV_KERNELS
    )


def to_file(layer: Any, convolving: bool = False) -> tuple[list[str], list[np.ndarray]]:
    """``(weight_names, arrays)`` to write for ``layer`` (Keras 2 layout and order): correlation
    kernels, or with ``convolving`` (a file whose ``backend`` is Theano) kernels flipped for convolution."""
    arrays = [np.asarray(w) for w in layer.get_weights()]
    if convolving:
        arrays = _convert(layer, arrays, Origin(backend="theano"))  # a flip is its own inverse
    names = _unique(weight_names(layer, len(arrays)))
    order = [i for i, _ in keras_order(layer)]
    return [names[i] for i in order], [arrays[i] for i in order]


def _unique(names: list[str]) -> list[str]:
    """Names as TensorFlow makes variable names unique (``rnn_1/kernel:0``, ``rnn_1/kernel_1:0``): the
    cells of a stacked ``RNN`` name their weights alike, and each is a dataset of the layer's group.

    Example::

        >>> _unique(["r/kernel:0", "r/bias:0", "r/kernel:0"])
        ['r/kernel:0', 'r/bias:0', 'r/kernel_1:0']
    """
    seen: dict[str, int] = {}
    out = []
    for name in names:
        base, colon, index = name.rpartition(":")
        stem = base if colon else name
        count = seen.get(stem, 0)
        seen[stem] = count + 1
        out.append(name if count == 0 else f"{stem}_{count}{colon}{index}")
    return out


def reorder_dense_after_flatten(kernel: np.ndarray, feature_map: tuple[int, ...]) -> np.ndarray:
    """A Dense kernel trained on channels-first flattened features ``(C, *spatial)`` -> the same
    kernel for channels-last flattening ``(*spatial, C)`` (Keras 2's
    ``convert_dense_weights_data_format``). ``feature_map`` is the channels-last shape ``(*spatial, C)``.

    Example::

        >>> k = np.arange(6.0).reshape(6, 1)        # C=2, H=3 flattened as (C, H)
        >>> reorder_dense_after_flatten(k, (3, 2))[:, 0].tolist()
        [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    """
    kernel = np.asarray(kernel)
    spatial, channels = tuple(feature_map[:-1]), feature_map[-1]
    units = kernel.shape[-1]
    if int(np.prod(feature_map)) != kernel.shape[0]:
        raise ValueError(
            f"a Dense kernel with {kernel.shape[0]} inputs does not follow a feature map of "
            f"shape {feature_map}"
        )
    k = kernel.reshape((channels, *spatial, units))
    order = (*range(1, len(spatial) + 1), 0, len(spatial) + 1)
    return np.ascontiguousarray(k.transpose(order).reshape(kernel.shape))
