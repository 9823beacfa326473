"""``compile`` arguments of a one-output model written the many-output way, as Keras 2.3.1 takes
them: ``loss={'ctc': fn}`` or ``loss=[fn]`` (keyed by the output layer's name), ``loss_weights``
as a number, a one-entry list or a dict, ``metrics={'out': ['acc']}``.

Example::

    >>> single_output({"ctc": "mse"}, "ctc", "loss")
    'mse'
    >>> single_output([0.5], "out", "loss_weights")
    0.5
    >>> single_output(["acc", "mse"], "out", "metrics")  # a list of metrics is a list of metrics
    ['acc', 'mse']
"""

from __future__ import annotations

from typing import Any

from arignote.utils.generic_utils import check_for_unexpected_keys

__all__ = ["single_output", "loss_weight"]


def _stored_object(value: dict) -> bool:
    return "class_name" in value and "config" in value  # a serialized Loss object, not per output


def single_output(value: Any, output_name: str, what: str) -> Any:
    """``value`` for the model's one output named ``output_name``: a dict's entry for it (other keys
    are an error, as in Keras 2.3.1), a one-entry list's entry for ``loss``/``loss_weights``, else
    ``value`` itself. ``what`` names the argument in errors."""
    if isinstance(value, dict) and not _stored_object(value):
        check_for_unexpected_keys(what, value, [output_name])
        if output_name not in value:
            if what == "loss":
                raise ValueError(f"compile(loss={{...}}): the dictionary has no entry for the model's output "
                                 f"'{output_name}'; pass loss={{'{output_name}': ...}} or the loss itself")
            return None
        return value[output_name]
    if what in ("loss", "loss_weights") and isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"When passing a list as {what}, it should have one entry per model outputs. "
                             f"The model has 1 outputs, but you passed {what}={value!r}")
        return value[0]
    return value


def loss_weight(value: Any, output_name: str) -> float:
    """The one output's loss weight (1.0 when None), checked to be a number."""
    weight = single_output(value, output_name, "loss_weights")
    if weight is None:
        return 1.0
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise ValueError(f"compile(loss_weights=...): a weight is a number, got {weight!r}")
    return float(weight)
