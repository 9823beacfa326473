"""Convolutions: ``Conv1D``, ``Conv2D``, ``Conv3D``, ``Conv2DTranspose``, ``Conv3DTranspose``.

Keras 2 arguments and defaults; ``data_format`` ``channels_last`` or ``channels_first`` (``None`` =
``backend.image_data_format()``; ``Conv1D`` defaults to ``channels_last`` as in Keras 2).
``padding='same'`` pads like TensorFlow (the odd pixel after), ``'causal'`` (Conv1D) pads on the left.
A layer whose weights come from a Theano-backend file pads as Keras 2's Theano backend did instead
(``layer.theano_same_padding``, set by the loader and written back to files: see
:func:`theano_same_pads`).

Weights (torch tensor -> Keras weight, in ``layer.weights`` order):

* ``ConvND.kernel`` ``(filters, in, *k)`` -> ``kernel`` ``(*k, in, filters)``; ``bias`` ``(filters,)``.
* ``ConvNDTranspose.kernel`` ``(in, filters, *k)`` -> ``kernel`` ``(*k, filters, in)``; ``bias``.

Example::

    >>> Conv2D(8, 3, padding="same").compute_output_shape((None, 32, 32, 3))
    (None, 32, 32, 8)
    >>> Conv2DTranspose(4, 3, strides=2, padding="same").compute_output_shape((None, 5, 5, 2))
    (None, 10, 10, 4)
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from arignote import activations
from arignote.layers._util import (
    KerasLayer,
    channels_of,
    check_rank,
    constraint_arg,
    conv_output_length,
    from_torch,
    initializer_arg,
    normalize_data_format,
    normalize_padding,
    normalize_tuple,
    pad_arg,
    regularizer_arg,
    same_pads,
    spatial_of,
    to_torch,
    with_spatial,
)
from arignote.layers.base import Layer, positive_int

__all__ = [
    "Conv1D",
    "Conv2D",
    "Conv3D",
    "Conv2DTranspose",
    "Conv3DTranspose",
    "Convolution1D",
    "Convolution2D",
    "Convolution3D",
    "Deconvolution2D",
    "Deconvolution3D",
]

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def theano_same_pads(n: int | None, k: int, s: int, d: int = 1) -> tuple[int, int]:
    """Keras 2's Theano ``'same'`` padding of one axis as ``(before, after)``: border mode ``'half'``
    (``ke // 2`` zeros each side, ``ke`` the dilated kernel), cropped to ``ceil(n / s)`` outputs. So the
    windows start at ``i * s - ke // 2``: an even kernel has its odd zero *before* the input, and with
    strides an odd kernel is anchored one step earlier than TensorFlow's (``n=4, k=3, s=2``).

    Example::

        >>> theano_same_pads(5, 2, 1), same_pads(5, 2, 1)
        ((1, 0), (0, 1))
        >>> theano_same_pads(4, 3, 2), same_pads(4, 3, 2)
        ((1, 0), (0, 1))
    """
    ke = (k - 1) * d + 1
    before = ke // 2
    if n is None:
        return before, ke - 1 - before
    out = -(-n // s)
    return before, max(0, (out - 1) * s + ke - n - before)  # a negative rest: input past the last window


def _pair1(pad: Any) -> tuple:
    """A 1-D convolution's padding argument as a one-element tuple."""
    return tuple(pad) if isinstance(pad, (tuple, list)) else (pad,)


class _Conv(KerasLayer, Layer):
    rank = 2
    _config_keys = (
        "filters",
        "kernel_size",
        "strides",
        "padding",
        "data_format",
        "dilation_rate",
        "activation",
        "use_bias",
        "kernel_initializer",
        "bias_initializer",
        "kernel_regularizer",
        "bias_regularizer",
        "activity_regularizer",
        "kernel_constraint",
        "bias_constraint",
    )
    _paddings: tuple[str, ...] = ("valid", "same")

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = 1,
        activation: Any = None,
        use_bias: bool = True,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        where = f"{type(self).__name__} '{self.name}'"
        n = self.rank
        self.filters = positive_int(filters, "filters", where) if filters is not None else None
        self.kernel_size = normalize_tuple(kernel_size, n, "kernel_size", where)
        self.strides = normalize_tuple(strides, n, "strides", where)
        self.padding = normalize_padding(padding, where, self._paddings)
        self.data_format = normalize_data_format(data_format, where)
        if self.padding == "causal" and self.data_format != "channels_last":
            raise ValueError(f"{where}: causal padding is only supported with data_format='channels_last'")
        # strides and dilation_rate together: Keras 2.3.1 builds such a layer (its TensorFlow backend
        # then refused to run it, its Theano backend ran it); torch runs it as Theano did
        self.dilation_rate = normalize_tuple(dilation_rate, n, "dilation_rate", where)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializer_arg(kernel_initializer)
        self.bias_initializer = initializer_arg(bias_initializer)
        self.kernel_regularizer = regularizer_arg(kernel_regularizer)
        self.bias_regularizer = regularizer_arg(bias_regularizer)
        self.activity_regularizer = regularizer_arg(activity_regularizer)
        self.kernel_constraint = constraint_arg(kernel_constraint)
        self.bias_constraint = constraint_arg(bias_constraint)
        self.bias = None
        self.theano_same_padding = False  # see pad_as_theano
        self._spatial: tuple | None = None

    def pad_as_theano(self, on: bool = True) -> None:
        """Pad ``'same'`` as Keras 2's Theano backend (:func:`theano_same_pads`) instead of as TensorFlow:
        what weights trained in a Theano-backend Keras expect. The loader sets it for a Theano file's
        layers, and ``save`` records it (the file's ``backend``), so predictions survive a round trip."""
        self.theano_same_padding = bool(on)
        if self._spatial is not None:
            self._plan(self._spatial)

    def _in_channels(self, input_shape: tuple) -> int:
        where = f"{type(self).__name__} '{self.name}'"
        check_rank(tuple(input_shape), self.rank + 2, where, f"{self.rank}-D inputs with channels")
        channels = channels_of(tuple(input_shape), self.data_format)
        if channels is None:
            raise ValueError(f"{where}: the channel dimension of the inputs should be defined. Found `None`.")
        return int(channels)

    def build_keras(self, input_shape: tuple) -> None:
        cin = self._in_channels(input_shape)
        n = self.rank
        # torch (filters, in, *k) is Keras (*k, in, filters) permuted
        perm = (*range(2, n + 2), 1, 0)
        self.new_weight(
            "kernel",
            (*self.kernel_size, cin, self.filters),
            self.kernel_initializer,
            perm,
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        if self.use_bias:
            self.new_weight(
                "bias",
                (self.filters,),
                self.bias_initializer,
                None,
                self.bias_regularizer,
                self.bias_constraint,
            )
        self._plan(spatial_of(tuple(input_shape), self.data_format))

    def _plan(self, spatial: tuple) -> None:
        # explicit pads when 'same'/'causal' are asymmetric; symmetric ones go to the kernel call
        self._spatial = tuple(spatial)
        pads = []
        for i, n in enumerate(spatial):
            k, s, d = self.kernel_size[i], self.strides[i], self.dilation_rate[i]
            if self.padding == "causal":
                pads.append(((k - 1) * d, 0))
            elif self.padding == "same":
                pads_of = theano_same_pads if self.theano_same_padding else same_pads
                if n is None and s != 1:
                    # the pads depend on the size only through n mod s: one answer for every residue
                    # (a 1x1 kernel with strides, as Xception's shortcuts) holds for any size
                    every = {pads_of(size, k, s, d) for size in range(s, 2 * s)}
                    if len(every) != 1:
                        raise ValueError(
                            f"{type(self).__name__} '{self.name}': padding='same' with strides needs known "
                            f"spatial sizes (kernel {k}, strides {s}: the pads follow the input's size); "
                            "give the model's input a spatial size (e.g. Input(shape=(224, 224, 3)))"
                        )
                    pads.append(every.pop())
                elif self.theano_same_padding:
                    pads.append(theano_same_pads(n, k, s, d))
                elif n is None:
                    total = (k - 1) * d
                    pads.append((total // 2, total - total // 2))
                else:
                    pads.append(same_pads(n, k, s, d))
            else:
                pads.append((0, 0))
        if all(a == b for a, b in pads):
            self._op_pad, self._pad = tuple(a for a, _ in pads), None
        else:
            self._op_pad, self._pad = 0, pad_arg(pads)

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        spatial = spatial_of(shape, self.data_format)
        out = tuple(
            conv_output_length(n, self.kernel_size[i], self.padding, self.strides[i], self.dilation_rate[i])
            for i, n in enumerate(spatial)
        )
        if any(o is not None and o < 1 for o in out):
            spans = tuple((k - 1) * d + 1 for k, d in zip(self.kernel_size, self.dilation_rate))
            raise ValueError(
                f"{type(self).__name__} '{self.name}': its kernel {self.kernel_size} (dilation "
                f"{self.dilation_rate}: it spans {spans}) is larger than the input {spatial} with "
                f"padding='{self.padding}', which leaves no output; use padding='same', a smaller kernel "
                "or dilation_rate, or a larger input")
        return with_spatial(shape[0], self.filters, out, self.data_format)

    def _conv(self, x: torch.Tensor) -> torch.Tensor:
        if self._pad is not None:
            x = F.pad(x, self._pad)
        return _CONV[self.rank](x, self.weight, self.bias, self.strides, self._op_pad, self.dilation_rate)

    def call(self, x: torch.Tensor) -> torch.Tensor:
        y = from_torch(self._conv(to_torch(x, self.data_format)), self.data_format)
        return self._activity(self.activation(y))


class Conv1D(_Conv):
    """Temporal convolution over ``(steps, channels)`` (Keras 2 ``Conv1D``; ``padding`` may be
    ``'causal'``; ``data_format='channels_last'`` by default)."""

    rank = 1
    _paddings = ("valid", "same", "causal")

    def _conv(self, x: torch.Tensor) -> torch.Tensor:
        # (steps, channels) memory is a channels-last image of one row: oneDNN's channels-last 2-D
        # convolution runs it without the transposed copies torch's conv1d makes of it (a third faster)
        if self._pad is not None or x.stride(1) != 1 or x.dim() != 3:
            return super()._conv(x)
        y = F.conv2d(x.unsqueeze(2), self.weight.unsqueeze(2), self.bias, (1, *self.strides),
                     (0, *_pair1(self._op_pad)), (1, *self.dilation_rate))
        return y.squeeze(2)

    def fused_with(self, following: Any) -> Any:
        """``following(self(x))`` as one callable when it is a ``GlobalMaxPooling1D`` this layer fuses
        with (:mod:`arignote.layers.convolutional.conv_maxpool`), else None (layer chains ask)."""
        if type(following).__name__ != "GlobalMaxPooling1D":  # no import of the pooling family otherwise
            return None
        # why: loaded when a chain pairs Conv1D with GlobalMaxPooling1D, not at first use
        from arignote.layers.convolutional.conv_maxpool import ConvMaxPool, fusable

        return ConvMaxPool(self, following) if fusable(self, following) else None

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = 1,
        padding: str = "valid",
        data_format: str | None = "channels_last",
        dilation_rate: Any = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs)


class Conv2D(_Conv):
    """2-D convolution (Keras 2 ``Conv2D``), e.g. ``Conv2D(32, (3, 3), activation='relu')``."""

    rank = 2

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        **kwargs: Any,
    ) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over volumes ``(D, H, W, C)`` (Keras 2 ``Conv3D``)."""

    rank = 3

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1, 1),
        padding: str = "valid",
        data_format: str | None = None,
        dilation_rate: Any = (1, 1, 1),
        **kwargs: Any,
    ) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs)

    def _conv(self, x: torch.Tensor) -> torch.Tensor:
        # why: imported on first call, the first-use module set stays as pinned
        from arignote.layers.convolutional import few_filters

        w, pad = self.weight, self._op_pad
        if self._pad is None and few_filters.eligible(x, w, self.strides, pad, self.dilation_rate):
            return few_filters.conv3d(x, w, self.bias, pad)  # one filter: matrix products
        return super()._conv(x)


def deconv_length(n: int | None, s: int, k: int, padding: str, output_padding: int | None, d: int = 1):
    """Keras 2 ``conv_utils.deconv_length``: the output length of a transposed convolution."""
    if n is None:
        return None
    k = (k - 1) * d + 1
    if output_padding is None:
        return n * s + max(k - s, 0) if padding == "valid" else n * s
    pad = k // 2 if padding == "same" else 0
    return (n - 1) * s + k - 2 * pad + output_padding


class _ConvTranspose(_Conv):
    _config_keys = (*_Conv._config_keys, "output_padding")

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any,
        padding: str,
        output_padding: Any,
        data_format: str | None,
        dilation_rate: Any,
        **kwargs: Any,
    ) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, **kwargs)
        where = f"{type(self).__name__} '{self.name}'"
        if output_padding is None:
            self.output_padding = None
        else:
            self.output_padding = normalize_tuple(output_padding, self.rank, "output_padding", where, True)
            for op, s in zip(self.output_padding, self.strides):
                if op >= s:
                    raise ValueError(
                        f"{where}: stride {self.strides} must be greater than output padding "
                        f"{self.output_padding}"
                    )

    def build_keras(self, input_shape: tuple) -> None:
        cin = self._in_channels(input_shape)
        n = self.rank
        # torch (in, filters, *k) is Keras (*k, filters, in) permuted
        perm = (*range(2, n + 2), 1, 0)
        self.new_weight(
            "kernel",
            (*self.kernel_size, self.filters, cin),
            self.kernel_initializer,
            perm,
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        if self.use_bias:
            self.new_weight(
                "bias",
                (self.filters,),
                self.bias_initializer,
                None,
                self.bias_regularizer,
                self.bias_constraint,
            )

    def output_shape_keras(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        spatial = spatial_of(shape, self.data_format)
        ops = self.output_padding or (None,) * self.rank
        out = tuple(
            deconv_length(
                n, self.strides[i], self.kernel_size[i], self.padding, ops[i], self.dilation_rate[i]
            )
            for i, n in enumerate(spatial)
        )
        return with_spatial(shape[0], self.filters, out, self.data_format)

    def _conv(self, x: torch.Tensor) -> torch.Tensor:
        # the full transposed convolution, then TensorFlow's crop (or zero fill) to the output size
        full = _CONV_T[self.rank](x, self.weight, None, self.strides, 0, 0, 1, self.dilation_rate)
        pads = []
        ops = self.output_padding or (None,) * self.rank
        for i, n in enumerate(x.shape[2:]):
            k, s, d = self.kernel_size[i], self.strides[i], self.dilation_rate[i]
            length = deconv_length(int(n), s, k, self.padding, ops[i], d)
            if self.padding != "same":
                start = 0
            elif self.theano_same_padding:  # the input gradient of Theano's 'half' convolution
                start = ((k - 1) * d + 1) // 2
            else:
                start = same_pads(length, k, s, d)[0]
            pads.append((-start, start + length - full.shape[2 + i]))
        y = F.pad(full, pad_arg(pads))
        if self.bias is not None:
            y = y + self.bias.view(1, -1, *([1] * self.rank))
        return y


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution (Keras 2 ``Conv2DTranspose``, alias ``Deconvolution2D``)."""

    rank = 2

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1),
        padding: str = "valid",
        output_padding: Any = None,
        data_format: str | None = None,
        dilation_rate: Any = (1, 1),
        **kwargs: Any,
    ) -> None:
        super().__init__(
            filters, kernel_size, strides, padding, output_padding, data_format, dilation_rate, **kwargs
        )


class Conv3DTranspose(_ConvTranspose):
    """Transposed 3-D convolution (Keras 2 ``Conv3DTranspose``, alias ``Deconvolution3D``)."""

    rank = 3
    _config_keys = tuple(k for k in _ConvTranspose._config_keys if k != "dilation_rate")

    def __init__(
        self,
        filters: int,
        kernel_size: Any,
        strides: Any = (1, 1, 1),
        padding: str = "valid",
        output_padding: Any = None,
        data_format: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(filters, kernel_size, strides, padding, output_padding, data_format, 1, **kwargs)


Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D
Deconvolution2D, Deconvolution3D = Conv2DTranspose, Conv3DTranspose
