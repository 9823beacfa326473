"""Keras 2 layers on PyTorch (``from arignote.layers import Dense, Conv2D, ...``).

See :mod:`arignote.layers.base` for the Keras 2 contract every layer follows (``build`` with the
batch dim, ``call``, ``compute_output_shape``, masks, names, config; Keras-layout tensors).

What matches Keras 2: class names, argument names and defaults, auto names (``conv2d_1``),
output shapes, glorot_uniform kernels / zero biases (``Embedding`` U(-0.05, 0.05), LSTM
orthogonal recurrent kernels and forget bias 1), TF-style ``'same'`` padding, ``get_weights()``
layouts, ``get_config()``. Known differences: images are channels_last only (``data_format``
must be ``channels_last``); ``BatchNormalization`` updates its moving variance with the unbiased
batch variance (as Keras >= 2.1.3); recurrent layers use sigmoid gates (Keras >= 2.3 default),
``GRU`` is the ``reset_after=True`` (CuDNNGRU) variant, and RNN ``dropout``/``return_state``/
``go_backwards``/``stateful`` are refused with an error;
regularizers and constraints are not supported.

Example::

    >>> from arignote.layers import Conv2D, Flatten, Dense
    >>> [type(l).__name__ for l in (Conv2D(8, 3), Flatten(), Dense(10))]
    ['Conv2D', 'Flatten', 'Dense']
"""

from arignote.layers.base import (
    InputSpec,
    Layer,
    deserialize,
    reset_name_counters,
    serialize,
)
from arignote.layers.conv import (
    AveragePooling2D,
    AvgPool2D,
    Conv2D,
    Convolution2D,
    GlobalAveragePooling2D,
    GlobalMaxPooling2D,
    MaxPool2D,
    MaxPooling2D,
    ZeroPadding2D,
)
from arignote.layers.conv1d import (
    AveragePooling1D,
    AvgPool1D,
    Conv1D,
    Convolution1D,
    GlobalAveragePooling1D,
    GlobalMaxPooling1D,
    MaxPool1D,
    MaxPooling1D,
)
from arignote.layers.core import (
    Activation,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    Input,
    InputLayer,
    LeakyReLU,
    Reshape,
)
from arignote.layers.normalization import BatchNormalization
from arignote.layers.recurrent import GRU, LSTM

__all__ = [
    "Layer", "InputSpec", "serialize", "deserialize", "reset_name_counters",
    "Input", "InputLayer", "Dense", "Activation", "LeakyReLU", "Dropout", "Flatten", "Reshape", "Embedding",
    "Conv2D", "Convolution2D", "MaxPooling2D", "MaxPool2D", "AveragePooling2D", "AvgPool2D",
    "GlobalAveragePooling2D", "GlobalMaxPooling2D", "ZeroPadding2D",
    "Conv1D", "Convolution1D", "MaxPooling1D", "MaxPool1D", "AveragePooling1D", "AvgPool1D",
    "GlobalAveragePooling1D", "GlobalMaxPooling1D",
    "BatchNormalization", "LSTM", "GRU",
]  # fmt: skip
