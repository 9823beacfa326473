"""Keras 2 layers on PyTorch (``from arignote.layers import Dense, Conv2D, ...``).

See :mod:`arignote.layers.base` for the contract the models rely on (``build``,
``compute_output_shape``, names, config, internal NCHW image tensors).

Example::

    >>> from arignote.layers import Conv2D, Flatten, Dense
    >>> [type(l).__name__ for l in (Conv2D(8, 3), Flatten(), Dense(10))]
    ['Conv2D', 'Flatten', 'Dense']
"""

from arignote.layers.base import (
    Layer,
    deserialize,
    from_internal,
    reset_name_counters,
    serialize,
    to_internal,
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
    "Layer", "serialize", "deserialize", "to_internal", "from_internal", "reset_name_counters",
    "Input", "InputLayer", "Dense", "Activation", "LeakyReLU", "Dropout", "Flatten", "Reshape", "Embedding",
    "Conv2D", "Convolution2D", "MaxPooling2D", "MaxPool2D", "AveragePooling2D", "AvgPool2D",
    "GlobalAveragePooling2D", "GlobalMaxPooling2D", "ZeroPadding2D",
    "Conv1D", "Convolution1D", "MaxPooling1D", "MaxPool1D", "AveragePooling1D", "AvgPool1D",
    "GlobalAveragePooling1D", "GlobalMaxPooling1D",
    "BatchNormalization", "LSTM", "GRU",
]  # fmt: skip
