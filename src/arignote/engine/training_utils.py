"""Keras 2's ``keras.engine.training_utils``: the helpers published Keras 2 code imports from it.

``make_batches``, ``check_array_length_consistency``, ``check_loss_and_target_compatibility``,
``standardize_weights`` and ``weighted_masked_objective`` behave as in Keras 2.3.1 (messages
included). The rest of that module is the internals of Keras's own training loop; asking for one of
those names raises :class:`arignote.errors.KerasNameMissing` (an ImportError) saying what to use.

Example::

    >>> make_batches(5, 2)
    [(0, 2), (2, 4), (4, 5)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arignote import backend as K
from arignote import losses
from arignote.errors import keras_names_missing
from arignote.losses import classes as loss_classes
from arignote.training.sample_weights import standardize_weights

__all__ = ["make_batches", "check_array_length_consistency", "check_loss_and_target_compatibility",
           "standardize_weights", "weighted_masked_objective"]


def make_batches(size: int, batch_size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` index pairs of ``size`` samples cut into batches of ``batch_size`` (the last
    one shorter)."""
    count = (size + batch_size - 1) // batch_size
    return [(i * batch_size, min(size, (i + 1) * batch_size)) for i in range(count)]


def _lengths(arrays: Any) -> set[int]:
    if arrays is None:
        return {0}
    return {0 if a is None else int(a.shape[0]) for a in arrays}


def check_array_length_consistency(inputs: Any, targets: Any, weights: Any = None) -> None:
    """ValueError unless the inputs, targets and sample weights (lists of arrays, or None) all have
    the same number of samples."""
    xs, ys, ws = _lengths(inputs), _lengths(targets), _lengths(weights)
    if len(xs) > 1:
        raise ValueError("All input arrays (x) should have the same number of samples. Got array shapes: "
                         f"{[x.shape for x in inputs]}")
    if len(ys) > 1:
        raise ValueError("All target arrays (y) should have the same number of samples. Got array shapes: "
                         f"{[y.shape for y in targets]}")
    if xs and ys and next(iter(xs)) != next(iter(ys)):
        raise ValueError("Input arrays should have the same number of samples as target arrays. Found "
                         f"{next(iter(xs))} input samples and {next(iter(ys))} target samples.")
    if len(ws) > 1:
        raise ValueError("All sample_weight arrays should have the same number of samples. Got array "
                         f"shapes: {[w.shape for w in weights]}")
    if ys and ws and next(iter(ys)) != next(iter(ws)):
        raise ValueError("Sample_weight arrays should have the same number of samples as target arrays. "
                         f"Got {next(iter(ys))} input samples and {next(iter(ws))} target samples.")


_SAME_SHAPE_FUNCTIONS = (losses.mean_squared_error, losses.binary_crossentropy,
                         losses.categorical_crossentropy)
_SAME_SHAPE_CLASSES = (loss_classes.MeanSquaredError, loss_classes.BinaryCrossentropy,
                       loss_classes.CategoricalCrossentropy)


def check_loss_and_target_compatibility(targets: list, loss_fns: list, output_shapes: list) -> None:
    """ValueError for a categorical cross-entropy target with one column (integer labels), or a target
    whose shape differs from its output's for mse / binary / categorical cross-entropy."""
    for y, loss, shape in zip(targets, loss_fns, output_shapes):
        if y is None or loss is None:
            continue
        if loss_classes.is_categorical_crossentropy(loss) and y.shape[-1] == 1:
            raise ValueError(
                f"You are passing a target array of shape {y.shape} while using as loss "
                "`categorical_crossentropy`. `categorical_crossentropy` expects targets to be binary "
                "matrices (1s and 0s) of shape (samples, classes). If your targets are integer classes, "
                "you can convert them to the expected format with arignote.utils.to_categorical(y_int), "
                "or use the loss `sparse_categorical_crossentropy` instead, which does expect integer "
                "targets.")
        wrapped = isinstance(loss, loss_classes.LossFunctionWrapper)
        if isinstance(loss, _SAME_SHAPE_CLASSES) or (wrapped and loss.fn in _SAME_SHAPE_FUNCTIONS):
            for target_dim, out_dim in zip(y.shape[1:], shape[1:]):
                if out_dim is not None and target_dim != out_dim:
                    name = loss.name or (loss.fn if wrapped else type(loss)).__name__
                    raise ValueError(
                        f"A target array with shape {y.shape} was passed for an output of shape {shape} "
                        f"while using as loss `{name}`. This loss expects targets to have the same shape "
                        "as the output.")


def weighted_masked_objective(fn: Callable | None) -> Callable | None:
    """``fn(y_true, y_pred)`` as ``weighted(y_true, y_pred, weights, mask=None)``: the per-sample
    scores times the mask (rescaled by the unmasked fraction), averaged down to the weights' rank,
    times the weights (rescaled by the fraction of non-zero weights), then the mean."""
    if fn is None:
        return None

    def weighted(y_true: Any, y_pred: Any, weights: Any, mask: Any = None) -> Any:
        scores = fn(y_true, y_pred)
        if mask is not None:
            mask = K.cast(mask, K.floatx())
            scores = scores * mask / (K.mean(mask) + K.epsilon())
        if weights is not None:
            ndim, weight_ndim = K.ndim(scores), K.ndim(weights)
            if ndim > weight_ndim:
                scores = K.mean(scores, axis=list(range(weight_ndim, ndim)))
            scores = scores * weights / K.mean(K.cast(K.not_equal(weights, 0), K.floatx()))
        return K.mean(scores)

    return weighted


_INTERNAL = ("standardize_single_array", "standardize_input_data", "standardize_sample_or_class_weights",
             "standardize_class_weights", "standardize_sample_weights", "check_generator_arguments",
             "batch_shuffle", "check_num_samples", "iter_sequence_infinite", "is_sequence",
             "is_generator_or_sequence", "should_run_validation", "get_static_batch_size",
             "get_input_shape_and_dtype", "get_loss_function", "get_output_sample_weight_and_mode",
             "prepare_sample_weights", "prepare_loss_functions", "prepare_loss_weights",
             "collect_per_output_metric_info", "get_metric_name", "get_metric_function",
             "call_metric_function")
__getattr__ = keras_names_missing(
    "arignote.engine.training_utils",
    {name: "Model.fit/evaluate/predict, which do this work (Keras 2's training-loop internals are not "
           "part of arignote)" for name in _INTERNAL}, deliberate=True)
