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

from arignote._lazy import freeze_torch_import, lazy_namespace

# torch first and its objects frozen out of the collector's way before the layers load (see _lazy)
freeze_torch_import()

from arignote._keras_objects import deserialize_keras_object  # noqa: E402 - after the freeze above
from arignote.errors import KerasNameMissing  # noqa: E402
from arignote.layers._left_out import legacy_getattr  # noqa: E402
from arignote.layers.base import InputSpec, Layer, deserialize, reset_name_counters, serialize  # noqa: E402
from arignote.layers.serialization import defer_builtin_modules  # noqa: E402

#: The error a left-out name raises (kept under its old name; it is :class:`KerasNameMissing`).
UnsupportedLayerError = KerasNameMissing

# public name -> module defining it, imported on first use: `from arignote.layers import Dense, Conv2D`
# loads those two families, not the recurrent, merge, pooling... modules (issue 32, import time);
# a layer class met by name in a config (deserialize) loads the rest first (layers/serialization.py)
_NAMES = {
    "ELU": "arignote.layers.advanced_activations", "LeakyReLU": "arignote.layers.advanced_activations",
    "PReLU": "arignote.layers.advanced_activations", "ReLU": "arignote.layers.advanced_activations",
    "Softmax": "arignote.layers.advanced_activations",
    "ThresholdedReLU": "arignote.layers.advanced_activations",
    "Conv1D": "arignote.layers.convolutional", "Conv2D": "arignote.layers.convolutional",
    "Conv2DTranspose": "arignote.layers.convolutional", "Conv3D": "arignote.layers.convolutional",
    "Conv3DTranspose": "arignote.layers.convolutional", "Convolution1D": "arignote.layers.convolutional",
    "Convolution2D": "arignote.layers.convolutional", "Convolution3D": "arignote.layers.convolutional",
    "Deconvolution2D": "arignote.layers.convolutional", "Deconvolution3D": "arignote.layers.convolutional",
    "DepthwiseConv2D": "arignote.layers.convolutional", "SeparableConv1D": "arignote.layers.convolutional",
    "SeparableConv2D": "arignote.layers.convolutional",
    # padding, cropping, up-sampling, dropout and Lambda: their own modules, so Conv2D and Dense load
    # without them (the families' faces load them on first use too)
    **dict.fromkeys([f"{kind}{n}D" for kind in ("Cropping", "UpSampling", "ZeroPadding") for n in (1, 2, 3)],
                    "arignote.layers.convolutional.reshaping"),
    "ConvLSTM2D": "arignote.layers.convolutional_recurrent",
    "ConvLSTM2DCell": "arignote.layers.convolutional_recurrent",
    "Activation": "arignote.layers.core", "Dense": "arignote.layers.core", "Flatten": "arignote.layers.core",
    "Input": "arignote.layers.core", "InputLayer": "arignote.layers.core", "Permute": "arignote.layers.core",
    "RepeatVector": "arignote.layers.core", "Reshape": "arignote.layers.core",
    **dict.fromkeys(["Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D"],
                    "arignote.layers.core.dropout"),
    **dict.fromkeys(["ActivityRegularization", "Lambda", "Masking"], "arignote.layers.core.lambda_layer"),
    "CuDNNGRU": "arignote.layers.cudnn_recurrent", "CuDNNLSTM": "arignote.layers.cudnn_recurrent",
    "Embedding": "arignote.layers.embeddings",
    "AtrousConvolution1D": "arignote.layers.legacy", "AtrousConvolution2D": "arignote.layers.legacy",
    "Highway": "arignote.layers.legacy", "MaxoutDense": "arignote.layers.legacy",
    "LocallyConnected1D": "arignote.layers.local", "LocallyConnected2D": "arignote.layers.local",
    "Add": "arignote.layers.merge", "Average": "arignote.layers.merge",
    "Concatenate": "arignote.layers.merge", "Dot": "arignote.layers.merge",
    "Maximum": "arignote.layers.merge", "Minimum": "arignote.layers.merge",
    "Multiply": "arignote.layers.merge", "Subtract": "arignote.layers.merge", "add": "arignote.layers.merge",
    "average": "arignote.layers.merge", "concatenate": "arignote.layers.merge",
    "dot": "arignote.layers.merge", "maximum": "arignote.layers.merge", "minimum": "arignote.layers.merge",
    "multiply": "arignote.layers.merge", "subtract": "arignote.layers.merge",
    "AlphaDropout": "arignote.layers.noise", "GaussianDropout": "arignote.layers.noise",
    "GaussianNoise": "arignote.layers.noise",
    "BatchNormalization": "arignote.layers.normalization",
    "AveragePooling1D": "arignote.layers.pooling", "AveragePooling2D": "arignote.layers.pooling",
    "AveragePooling3D": "arignote.layers.pooling", "AvgPool1D": "arignote.layers.pooling",
    "AvgPool2D": "arignote.layers.pooling", "AvgPool3D": "arignote.layers.pooling",
    "GlobalAveragePooling1D": "arignote.layers.pooling", "GlobalAveragePooling2D": "arignote.layers.pooling",
    "GlobalAveragePooling3D": "arignote.layers.pooling", "GlobalAvgPool1D": "arignote.layers.pooling",
    "GlobalAvgPool2D": "arignote.layers.pooling", "GlobalAvgPool3D": "arignote.layers.pooling",
    "GlobalMaxPool1D": "arignote.layers.pooling", "GlobalMaxPool2D": "arignote.layers.pooling",
    "GlobalMaxPool3D": "arignote.layers.pooling", "GlobalMaxPooling1D": "arignote.layers.pooling",
    "GlobalMaxPooling2D": "arignote.layers.pooling", "GlobalMaxPooling3D": "arignote.layers.pooling",
    "MaxPool1D": "arignote.layers.pooling", "MaxPool2D": "arignote.layers.pooling",
    "MaxPool3D": "arignote.layers.pooling", "MaxPooling1D": "arignote.layers.pooling",
    "MaxPooling2D": "arignote.layers.pooling", "MaxPooling3D": "arignote.layers.pooling",
    "GRU": "arignote.layers.recurrent", "LSTM": "arignote.layers.recurrent",
    "RNN": "arignote.layers.recurrent", "GRUCell": "arignote.layers.recurrent",
    "LSTMCell": "arignote.layers.recurrent", "SimpleRNN": "arignote.layers.recurrent",
    "SimpleRNNCell": "arignote.layers.recurrent", "StackedRNNCells": "arignote.layers.recurrent",
    "Bidirectional": "arignote.layers.wrappers", "TimeDistributed": "arignote.layers.wrappers",
    "Wrapper": "arignote.layers.wrappers",
    "wrappers": "arignote.layers.wrappers",  # Keras code writes layers.wrappers.TimeDistributed too
}
__getattr__, __dir__ = lazy_namespace(
    __name__, _NAMES, globals(), fallback=legacy_getattr("arignote.layers", ["Recurrent", "ConvRecurrent2D"]))
defer_builtin_modules(sorted(set(_NAMES.values())))


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
