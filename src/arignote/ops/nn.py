"""Keras 2 ``keras.backend`` neural-network operations on torch: convolutions, pooling, padding,
resizing and batch normalization (re-exported by :mod:`arignote.backend`).

Arguments, defaults and layouts are Keras 2.3.1's: images are ``channels_last`` ``(N, H, W, C)`` or
``channels_first`` ``(N, C, H, W)`` (``data_format=None`` is :func:`~arignote.backend.image_data_format`),
kernels are Keras's ``(*kernel_size, in, out)`` whatever the data format (depthwise kernels
``(*kernel_size, in, multiplier)``, transposed ones ``(*kernel_size, out, in)``). Results are those of
Keras's TensorFlow backend: cross-correlation (Theano's backend flips kernels), and ``padding='same'``
pads as TensorFlow does, the odd pixel after (Theano's differs for even kernels and strides).
Each function also takes the functional API's symbolic tensors (it records an operation node).

The operations live by concern: :mod:`~arignote.ops.convolutions`, :mod:`~arignote.ops.pooling`,
:mod:`~arignote.ops.resizing`, :mod:`~arignote.ops.padding`, :mod:`~arignote.ops.normalization`
(their shared checks: :mod:`~arignote.ops.image_arguments`); this module is their one face, the one
``arignote.backend`` reads.

Example::

    >>> import torch
    >>> from arignote import backend as K
    >>> x = torch.ones(1, 4, 4, 1); kernel = torch.ones(3, 3, 1, 2)
    >>> K.conv2d(x, kernel, padding="same").shape
    torch.Size([1, 4, 4, 2])
    >>> K.pool2d(x, (2, 2), strides=(2, 2), pool_mode="avg").shape
    torch.Size([1, 2, 2, 1])
"""

from __future__ import annotations

from arignote.backend.names import NN_FUNCTIONS
from arignote.ops.convolutions import (  # noqa: F401 - re-exported
    conv1d,
    conv2d,
    conv2d_transpose,
    conv3d,
    conv3d_transpose,
    depthwise_conv2d,
    local_conv1d,
    local_conv2d,
    separable_conv1d,
    separable_conv2d,
)
from arignote.ops.normalization import (  # noqa: F401 - re-exported
    batch_normalization,
    moving_average_update,
    normalize_batch_in_training,
)
from arignote.ops.padding import (  # noqa: F401 - re-exported
    spatial_2d_padding,
    spatial_3d_padding,
    temporal_padding,
)
from arignote.ops.pooling import pool2d, pool3d  # noqa: F401 - re-exported
from arignote.ops.resizing import resize_images, resize_volumes  # noqa: F401 - re-exported

__all__ = list(NN_FUNCTIONS)
