"""Keras 2 ``keras.utils.conv_utils``: argument normalization and output lengths of convolutions.

Example::

    >>> normalize_tuple(3, 2, "kernel_size"), conv_output_length(32, 3, "valid", 1)
    ((3, 3), 30)
"""

from __future__ import annotations

from typing import Any

from arignote.layers._util import (
    check_padding,
    conv_output_length,
    normalize_data_format,
    normalize_padding,
    normalize_tuple,
)
from arignote.utils.layer_utils import convert_kernel  # noqa: F401 - Keras 2 defines it here (kept torch-free there)

__all__ = ["normalize_tuple", "normalize_padding", "normalize_data_format", "conv_output_length",
           "conv_input_length", "deconv_length", "convert_kernel"]

_normalize_padding = normalize_padding


def normalize_padding(value: Any) -> str:  # noqa: F811 - Keras 2's one-argument signature
    """``'valid'``, ``'same'`` or ``'causal'`` (case-insensitive), as Keras 2."""
    return _normalize_padding(value, "padding", ("valid", "same", "causal", "full"))


def conv_input_length(output_length: int | None, filter_size: int, padding: str, stride: int) -> int | None:
    """The input length a convolution needs to give ``output_length`` (Keras 2)."""
    check_padding(padding, ("same", "valid", "full"))
    if output_length is None:
        return None
    pad = {"same": filter_size // 2, "valid": 0, "full": filter_size - 1}[padding]
    return (output_length - 1) * stride - 2 * pad + filter_size


def deconv_length(dim_size: int | None, stride_size: int, kernel_size: int, padding: str,
                  output_padding: int | None = None, dilation: int = 1) -> int | None:
    """Output length of a transposed convolution (Keras 2.3 ``deconv_length``)."""
    if dim_size is None:
        return None
    kernel_size = kernel_size + (kernel_size - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return dim_size * stride_size + max(kernel_size - stride_size, 0)
        if padding == "full":
            return dim_size * stride_size - (stride_size + kernel_size - 2)
        return dim_size * stride_size
    pad = {"same": kernel_size // 2, "valid": 0, "full": kernel_size - 1}[padding]
    return (dim_size - 1) * stride_size + kernel_size - 2 * pad + output_padding
