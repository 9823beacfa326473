"""Keras 2.3 layers on PyTorch (``from arignote.layers import Dense, Conv2D, ...``).

Every public name of Keras 2.3's ``keras.layers`` is here with Keras 2 argument names and defaults,
and Keras 2's module paths import (``arignote.layers.core``, ``.convolutional``, ``.pooling``,
``.recurrent``, ``.merge``, ``.embeddings``, ``.normalization``, ``.noise``,
``.advanced_activations``, ``.local``, ``.wrappers``, ``.convolutional_recurrent``,
``.cudnn_recurrent``). Tensors between layers are in Keras layout; image layers take
``data_format`` (``None`` = ``backend.image_data_format()``). Keras 2's legacy layers
(``MaxoutDense``, ``Highway``, ``AtrousConvolution1D/2D``, ``Recurrent``, ``ConvRecurrent2D``) raise
an error naming their replacement.

Each layer documents how its torch tensors map to Keras's weights (names, order, layout);
``layer.weight_names()`` lists them and ``get_weights()`` returns them in Keras layout.

Example::

    >>> from arignote.layers import Conv2D, Flatten, Dense
    >>> [type(l).__name__ for l in (Conv2D(8, 3), Flatten(), Dense(10))]
    ['Conv2D', 'Flatten', 'Dense']
"""

from arignote._keras_objects import deserialize_keras_object
from arignote.errors import KerasNameMissing
from arignote.layers._left_out import legacy_getattr
from arignote.layers.advanced_activations import ELU, LeakyReLU, PReLU, ReLU, Softmax, ThresholdedReLU
from arignote.layers.base import (
    InputSpec,
    Layer,
    deserialize,
    reset_name_counters,
    serialize,
)
from arignote.layers.convolutional import (
    Conv1D,
    Conv2D,
    Conv2DTranspose,
    Conv3D,
    Conv3DTranspose,
    Convolution1D,
    Convolution2D,
    Convolution3D,
    Cropping1D,
    Cropping2D,
    Cropping3D,
    Deconvolution2D,
    Deconvolution3D,
    DepthwiseConv2D,
    SeparableConv1D,
    SeparableConv2D,
    UpSampling1D,
    UpSampling2D,
    UpSampling3D,
    ZeroPadding1D,
    ZeroPadding2D,
    ZeroPadding3D,
)
from arignote.layers.convolutional_recurrent import ConvLSTM2D, ConvLSTM2DCell
from arignote.layers.core import (
    Activation,
    ActivityRegularization,
    Dense,
    Dropout,
    Flatten,
    Input,
    InputLayer,
    Lambda,
    Masking,
    Permute,
    RepeatVector,
    Reshape,
    SpatialDropout1D,
    SpatialDropout2D,
    SpatialDropout3D,
)
from arignote.layers.cudnn_recurrent import CuDNNGRU, CuDNNLSTM
from arignote.layers.embeddings import Embedding
from arignote.layers.legacy import AtrousConvolution1D, AtrousConvolution2D, Highway, MaxoutDense
from arignote.layers.local import LocallyConnected1D, LocallyConnected2D
from arignote.layers.merge import (
    Add,
    Average,
    Concatenate,
    Dot,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
    add,
    average,
    concatenate,
    dot,
    maximum,
    minimum,
    multiply,
    subtract,
)
from arignote.layers.noise import AlphaDropout, GaussianDropout, GaussianNoise
from arignote.layers.normalization import BatchNormalization
from arignote.layers.pooling import (
    AveragePooling1D,
    AveragePooling2D,
    AveragePooling3D,
    AvgPool1D,
    AvgPool2D,
    AvgPool3D,
    GlobalAveragePooling1D,
    GlobalAveragePooling2D,
    GlobalAveragePooling3D,
    GlobalAvgPool1D,
    GlobalAvgPool2D,
    GlobalAvgPool3D,
    GlobalMaxPool1D,
    GlobalMaxPool2D,
    GlobalMaxPool3D,
    GlobalMaxPooling1D,
    GlobalMaxPooling2D,
    GlobalMaxPooling3D,
    MaxPool1D,
    MaxPool2D,
    MaxPool3D,
    MaxPooling1D,
    MaxPooling2D,
    MaxPooling3D,
)
from arignote.layers.recurrent import (
    GRU,
    LSTM,
    RNN,
    GRUCell,
    LSTMCell,
    SimpleRNN,
    SimpleRNNCell,
    StackedRNNCells,
)
from arignote.layers.wrappers import Bidirectional, TimeDistributed, Wrapper

#: The error a left-out name raises (kept under its old name; it is :class:`KerasNameMissing`).
UnsupportedLayerError = KerasNameMissing

__getattr__ = legacy_getattr("arignote.layers", ["Recurrent", "ConvRecurrent2D"])


__all__ = [
    "AtrousConvolution1D", "AtrousConvolution2D", "Highway", "MaxoutDense",
    "Activation", "ActivityRegularization", "Bidirectional", "ConvLSTM2D", "ConvLSTM2DCell", "CuDNNGRU",
    "CuDNNLSTM", "GRUCell", "LSTMCell", "RNN", "SimpleRNN", "SimpleRNNCell", "StackedRNNCells",
    "TimeDistributed", "Wrapper", "Add", "AlphaDropout", "Average", "AveragePooling1D",
    "AveragePooling2D", "AveragePooling3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "BatchNormalization",
    "Concatenate", "Conv1D", "Conv2D", "Conv2DTranspose", "Conv3D", "Conv3DTranspose", "Convolution1D",
    "Convolution2D", "Convolution3D", "Cropping1D", "Cropping2D", "Cropping3D", "Deconvolution2D",
    "Deconvolution3D", "Dense", "DepthwiseConv2D", "Dot", "Dropout", "ELU", "Embedding", "Flatten", "GRU",
    "GaussianDropout", "GaussianNoise", "GlobalAveragePooling1D", "GlobalAveragePooling2D",
    "GlobalAveragePooling3D", "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "GlobalMaxPool1D",
    "GlobalMaxPool2D", "GlobalMaxPool3D", "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D",
    "Input", "InputLayer", "InputSpec", "LSTM", "Lambda", "Layer", "LeakyReLU", "LocallyConnected1D",
    "LocallyConnected2D", "Masking", "MaxPool1D", "MaxPool2D", "MaxPool3D", "MaxPooling1D", "MaxPooling2D",
    "MaxPooling3D", "Maximum", "Minimum", "Multiply", "PReLU", "Permute", "ReLU", "RepeatVector",
    "Reshape", "SeparableConv1D", "SeparableConv2D", "Softmax", "SpatialDropout1D", "SpatialDropout2D",
    "SpatialDropout3D", "Subtract", "ThresholdedReLU", "UnsupportedLayerError", "UpSampling1D",
    "UpSampling2D", "UpSampling3D", "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", "add", "average",
    "concatenate", "deserialize", "deserialize_keras_object", "dot", "maximum", "minimum", "multiply",
    "reset_name_counters", "serialize", "subtract",
]
