"""``sample_weight``, ``class_weight`` and ``sample_weight_mode`` checked and turned into one weight
array per output, as Keras 2.3.1's ``training_utils`` does (``standardize_weights``,
``standardize_sample_or_class_weights``, ``prepare_sample_weights``), with its error messages.

Arrays get their weights once, before training (:func:`for_arrays`); a generator's
``(x, y, sample_weight)`` batches, and ``class_weight`` with any iterable, batch by batch on the
host (:func:`for_batches`). The weights then travel with the targets as
:class:`arignote.losses.weighting.Weighted` (see that module for the loss arithmetic). Without
``sample_weight`` and ``class_weight`` there are no weights at all: Keras's default weights of 1
give the same loss and metrics as none.

Example::

    >>> import numpy as np
    >>> standardize_weights(np.array([0, 1, 1]), None, {0: 2.0, 1: 0.5}).tolist()
    [2.0, 0.5, 0.5]
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from arignote.graph.packing import Packing

__all__ = ["modes_per_output", "per_output", "check_class_weight", "standardize_weights", "for_arrays",
           "for_batches", "targets_per_output"]


def modes_per_output(mode: Any, names: list[str]) -> list[str | None]:
    """``compile(sample_weight_mode=...)`` as one mode (None or 'temporal') per output (Keras 2.3.1
    ``prepare_sample_weights``: one value for all, a list in output order, or a dict by name).

    >>> modes_per_output({"a": "temporal", "b": None}, ["a", "b"])
    ['temporal', None]
    """
    if isinstance(mode, dict):
        unknown = set(mode) - set(names)
        if unknown:
            raise ValueError(f'Unknown entry in sample_weight_mode dictionary: "{unknown}". '
                             f"Only expected the following keys: {names}")
        missing = [n for n in names if n not in mode]
        if missing:
            raise ValueError(f"Output missing from sample_weight_modes dictionary: {missing} (give every "
                             "output a mode, None or 'temporal')")
        modes = [mode[n] for n in names]
    elif isinstance(mode, (list, tuple)):
        if len(mode) != len(names):
            raise ValueError("When passing a list as sample_weight_mode, it should have one entry per model "
                             f"output. The model has {len(names)} outputs, but you passed {len(mode)} "
                             "sample_weight_modes")
        modes = list(mode)
    else:
        modes = [mode] * len(names)
    for m in modes:
        if m not in (None, "temporal"):
            raise ValueError(f'sample_weight_mode should be None or "temporal". Found: {m!r}')
    return modes


def per_output(value: Any, names: list[str], what: str) -> list[Any]:
    """``sample_weight`` or ``class_weight`` as one entry per output (Keras 2.3.1
    ``standardize_sample_or_class_weights``; ``what`` names the argument in the errors).

    >>> per_output({"b": 1}, ["a", "b"], "sample_weight")
    [None, 1]
    """
    if value is None or (hasattr(value, "__len__") and len(value) == 0):
        return [None] * len(names)
    if len(names) == 1:
        if isinstance(value, list) and len(value) == 1:
            return value
        if isinstance(value, dict) and names[0] in value:
            return [value[names[0]]]
        return [value]
    if isinstance(value, list):
        if len(value) != len(names):
            raise ValueError(f"Provided `{what}` was a list of {len(value)} elements, but the model has "
                             f"{len(names)} outputs. You should provide one `{what}` array per model output.")
        return value
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError(f"`{what}` has entries for {unknown}, which are not outputs of the model; the "
                             f"outputs are {names}")
        return [value.get(n) for n in names]
    raise TypeError(f"The model has multiple outputs, so `{what}` should be either a list or a dict. "
                    f"Provided `{what}` type not understood: {value!r}")


def check_class_weight(class_weight: Any, names: list[str]) -> list[dict | None]:
    """``class_weight`` per output, each a ``{class: weight}`` dict or None (else a ValueError).

    A one-output model given a list of one dict uses that dict; given a list or array of numbers
    (``sklearn``'s ``compute_class_weight`` result passed as is), or a list of several dicts (a
    multi-output model's list passed to a one-output model), it trains unweighted, as Keras 2.3.1
    did (it weighs by dicts only), with a warning naming the fix; so does a model of several outputs
    given one ``{class index: weight}`` dict (Keras 2.3.1 looked the output names up in it).

    >>> check_class_weight({0: 1.0, 1: 3.0}, ["out"])
    [{0: 1.0, 1: 3.0}]
    >>> check_class_weight([{0: 1.0, 1: 3.0}], ["out"])
    [{0: 1.0, 1: 3.0}]
    """
    if len(names) > 1 and isinstance(class_weight, dict) and class_weight and not set(class_weight) & set(
            names) and all(_numbers(k) for k in class_weight):
        # {class index: weight} for a model of several outputs: Keras 2.3.1 looked each output's name up
        # in it, found none and trained unweighted
        warnings.warn(f"class_weight={class_weight!r} has class indices as keys, but the model has "
                      f"{len(names)} outputs, so it weighs nothing (Keras 2.3.1 ignored it too); pass "
                      f"{{output name: {{class index: weight}}}} with the output names {names} to weigh "
                      "their classes", stacklevel=4)
        return [None] * len(names)
    per = per_output(class_weight, names, "class_weight")
    if len(names) == 1 and per[0] is not None and not isinstance(per[0], dict) and _numbers(per[0]):
        warnings.warn(f"class_weight={per[0]!r} is not a dict, so it weighs nothing (Keras 2.3.1 ignored it "
                      "too); pass class_weight=dict(enumerate(weights)) to weigh the classes", stacklevel=4)
        return [None]
    if len(names) == 1 and isinstance(per[0], (list, tuple)) and per[0] and all(
            isinstance(cw, dict) for cw in per[0]):
        # sgan.py of eriklindernoren/Keras-GAN passes its discriminator's [cw1, cw2] to the one-output
        # combined model too: Keras 2.3.1 took the list as that output's weights and, not a dict,
        # ignored it.
        warnings.warn(f"class_weight is a list of {len(per[0])} dicts but the model has 1 output, so it "
                      "weighs nothing (Keras 2.3.1 ignored it too); pass that output's dict alone to weigh "
                      "its classes", stacklevel=4)
        return [None]
    for name, cw in zip(names, per):
        if cw is not None and not isinstance(cw, dict):
            where = f" of output '{name}'" if len(names) > 1 else ""
            raise ValueError(f"class_weight{where} must be a dict {{class index: weight}}, got "
                            f"{type(cw).__name__} {cw!r}")
    return per


def _numbers(value: Any) -> bool:
    try:
        return np.asarray(value).dtype.kind in "biuf"
    except (TypeError, ValueError):
        return False


def _numpy(a: Any) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def standardize_weights(y: Any, sample_weight: Any = None, class_weight: Any = None,
                        sample_weight_mode: str | None = None) -> np.ndarray | None:
    """One output's weights: ``(n,)``, or ``(n, steps)`` in ``'temporal'`` mode; ``sample_weight``
    times the weight of each sample's class (``class_weight``: ``{class: weight}``; the class of a
    one-hot row is its argmax, of an ``(n, 1)`` or ``(n,)`` label its value). None when neither is
    given (the mode is still checked against ``y``, as Keras 2.3.1 does). float32.

    >>> standardize_weights(np.zeros((2, 3)), np.array([1.0, 2.0])).tolist()
    [1.0, 2.0]
    """
    y_shape = tuple(np.shape(y))
    sw = None if sample_weight is None else _numpy(sample_weight)
    if sample_weight_mode is not None:
        if sample_weight_mode != "temporal":
            raise ValueError(f'"sample_weight_mode should be None or "temporal". Found: {sample_weight_mode}')
        if len(y_shape) < 3:
            raise ValueError(f"Found a sample_weight array for an input with shape {y_shape}. Timestep-wise "
                             "sample weighting (use of sample_weight_mode=\"temporal\") is restricted to "
                             "outputs that are at least 3D, i.e. that have a time dimension.")
        if sw is not None and sw.ndim != 2:
            raise ValueError(f"Found a sample_weight array with shape {sw.shape}. In order to use "
                             "timestep-wise sample weighting, you should pass a 2D sample_weight array.")
    elif sw is not None and sw.ndim != 1:
        raise ValueError(f"Found a sample_weight array with shape {sw.shape}. In order to use timestep-wise "
                         "sample weights, you should specify sample_weight_mode=\"temporal\" in compile(). "
                         "If you just mean to use sample-wise weights, make sure your sample_weight array "
                         "is 1D.")
    if sw is not None:
        if sw.dtype.kind not in "biuf":
            raise ValueError(f"sample_weight must hold numbers, got dtype {sw.dtype}")
        if y_shape[:sw.ndim] != sw.shape:
            raise ValueError(f"Found a sample_weight array with shape {sw.shape} for an input with shape "
                             f"{y_shape}. sample_weight cannot be broadcast.")
        if not np.all(np.isfinite(sw)):
            raise ValueError("sample_weight contains NaN or Inf; every weight must be a finite number")
    if class_weight is not None and not isinstance(class_weight, dict):
        raise ValueError("class_weight must be a dict {class index: weight}, got "
                         f"{type(class_weight).__name__} {class_weight!r}")
    class_sw = None if class_weight is None else _class_weights(_numpy(y), class_weight)
    if sw is not None and class_sw is not None:
        sw = sw * class_sw if sw.ndim == 1 else sw * class_sw[:, None]
    elif class_sw is not None:
        sw = class_sw
    return None if sw is None else np.ascontiguousarray(sw, dtype=np.float32)


def _class_weights(y: np.ndarray, class_weight: dict) -> np.ndarray:
    if y.ndim > 2:
        raise ValueError("`class_weight` not supported for 3+ dimensional targets.")
    if y.ndim == 2:
        classes = np.argmax(y, axis=1) if y.shape[1] > 1 else y.reshape(y.shape[0])
    else:
        classes = y
    table = {_key(k): float(v) for k, v in class_weight.items()}
    keys = [_key(c) for c in classes.tolist()]
    missing = {k for k in keys if k not in table}
    if missing:
        raise ValueError(f"`class_weight` must contain all classes in the data. The classes {missing} exist "
                         "in the data but not in `class_weight`.")
    return np.asarray([table[k] for k in keys], dtype=np.float64)


def _key(c: Any) -> Any:
    """A class label as a dict key: ``1.0`` and ``np.int64(1)`` both find the key ``1``."""
    c = c.item() if isinstance(c, np.generic) else c
    return int(c) if isinstance(c, float) and c.is_integer() else c


def targets_per_output(y: Any, names: list[str]) -> list[Any]:
    """The targets of each output, from what ``fit`` got (an array, a list, or a dict by name)."""
    if isinstance(y, dict):
        if len(names) == 1 and names[0] not in y:
            return [next(iter(y.values()))]
        return [y.get(n) for n in names]
    if isinstance(y, (list, tuple)) and len(names) > 1:
        return list(y)
    if isinstance(y, (list, tuple)) and len(y) == 1 and not np.isscalar(y[0]):
        return [y[0]]
    return [y]


def _combine(model: Any, ys: list[Any], weights: list[np.ndarray | None]) -> np.ndarray | None:
    """One weight array for the batch: the output's for one output; several outputs' side by side
    (ones where an output got none, as Keras), unpacked by ``model._w_packing``."""
    if all(w is None for w in weights):
        return None
    if len(weights) == 1:
        return weights[0]
    modes = model._weight_modes
    full = []
    for y, w, mode in zip(ys, weights, modes):
        if w is None:
            shape = np.shape(y)
            w = np.ones(shape[:2] if mode == "temporal" else shape[:1], dtype=np.float32)
        full.append(w)
    packing = Packing([w.shape[1:] for w in full], model.output_names)
    if getattr(model, "_w_packing", None) is None or model._w_packing.shapes != packing.shapes:
        model._w_packing = packing
    return Packing.pack(full)


def _names(model: Any) -> list[str]:
    return list(model.output_names) if getattr(model, "_is_graph", False) else ["output"]


def for_arrays(model: Any, y: Any, sample_weight: Any, class_weight: Any) -> np.ndarray | None:
    """The weights of array data (``fit``/``evaluate``/``*_on_batch``), None without any; ``y`` as the
    user gave it (before several outputs are packed)."""
    names = _names(model)
    modes = getattr(model, "_weight_modes", None) or [None] * len(names)
    ys = targets_per_output(y, names)
    sws = per_output(sample_weight, names, "sample_weight")
    cws = check_class_weight(class_weight, names)
    weights = [standardize_weights(yi, sw, cw, mode) if yi is not None else None
               for yi, sw, cw, mode in zip(ys, sws, cws, modes)]
    combined = _combine(model, ys, weights)
    if combined is not None and y is not None:
        n = len(ys[0])
        if len(combined) != n:
            raise ValueError(f"Sample_weight arrays should have the same number of samples as target arrays. "
                             f"Got {n} input samples and {len(combined)} target samples.")
    return combined


def for_batches(model: Any, class_weight: Any) -> Callable[[Any, Any], Any]:
    """``weigh(y, sample_weight)`` for each batch of an iterable: the batch's weights (a host array,
    as :func:`for_arrays` makes them for arrays), or None when it has none and there is no
    ``class_weight``; the batch then carries ``Weighted((y, w))``."""

    def weigh(y: Any, sample_weight: Any) -> Any:
        if sample_weight is None and class_weight is None:
            return None
        return for_arrays(model, y, sample_weight, class_weight)

    return weigh
