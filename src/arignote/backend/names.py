"""Names of the Keras 2 backend functions (:mod:`arignote.ops.tensor`, ``backend_nn``,
``backend_control``), kept torch-free so that ``import arignote.backend`` stays light and loads them on
first use.

Example::

    >>> "l2_normalize" in TENSOR_FUNCTIONS
    True
"""

TENSOR_FUNCTIONS = (
    "abs", "all", "any", "argmax", "argmin", "batch_dot", "batch_flatten", "binary_crossentropy", "cast",
    "categorical_crossentropy", "clip", "concatenate", "cos", "cumprod", "cumsum", "dot", "dropout", "elu",
    "equal", "exp", "expand_dims", "flatten", "gather", "greater", "greater_equal", "hard_sigmoid",
    "l2_normalize", "less", "less_equal", "log", "logsumexp", "max", "maximum", "mean", "min", "minimum",
    "not_equal", "one_hot", "ones_like", "permute_dimensions", "pow", "prod", "relu", "repeat",
    "repeat_elements", "reshape", "round", "sigmoid", "sign", "sin", "softmax", "softplus", "softsign",
    "sparse_categorical_crossentropy", "sqrt", "square", "squeeze", "stack", "std", "stop_gradient", "sum",
    "switch", "tanh", "tile", "transpose", "var", "zeros_like", "int_shape", "shape", "ndim", "dtype",
    "random_normal", "random_uniform", "random_binomial", "truncated_normal", "variable", "constant", "zeros",
    "ones", "eye", "is_keras_tensor", "is_tensor", "in_train_phase", "in_test_phase", "count_params",
    "arange", "update", "update_add", "update_sub", "eval", "get_variable_shape", "slice", "placeholder",
    "is_placeholder", "is_variable", "is_sparse", "identity", "to_dense", "reverse", "size", "bias_add",
)  # fmt: skip

GRAPH_FUNCTIONS = ("function", "gradients", "learning_phase", "set_learning_phase")

# arignote.ops.nn: convolutions, pooling, padding, resizing, batch normalization
NN_FUNCTIONS = (
    "conv1d", "conv2d", "conv3d", "conv2d_transpose", "conv3d_transpose", "separable_conv1d",
    "separable_conv2d", "depthwise_conv2d", "local_conv1d", "local_conv2d", "pool2d", "pool3d",
    "resize_images", "resize_volumes",
    "temporal_padding", "spatial_2d_padding", "spatial_3d_padding", "batch_normalization",
    "normalize_batch_in_training", "moving_average_update",
)  # fmt: skip

# arignote.ops.control: loops, CTC, small helpers
CONTROL_FUNCTIONS = (
    "rnn", "map_fn", "foldl", "foldr", "control_dependencies", "in_top_k", "print_tensor",
    "random_normal_variable", "random_uniform_variable", "ctc_label_dense_to_sparse", "ctc_batch_cost",
    "ctc_decode",
)  # fmt: skip
