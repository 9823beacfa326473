"""How :class:`~arignote.models.Model` takes the user's data before its trainer sees it (mixed into
``Model``): the inputs (outputs) of a functional model with several as one packed array
(:mod:`arignote.graph.packing`), targets shaped as Keras 2 feeds a loss, and the sample and class
weights of array data, checked as Keras 2.3.1 checks them.

Example::

    >>> import numpy as np
    >>> from arignote.layers import Input, Dense
    >>> from arignote.models import Model
    >>> a, b = Input(shape=(3,), name="a"), Input(shape=(2,), name="b")
    >>> model = Model([a, b], [Dense(1, name="p")(a), Dense(4, name="q")(b)])
    >>> x, y = model._pack([np.ones((5, 3)), np.ones((5, 2))], [np.ones((5, 1)), np.ones((5, 4))])
    >>> x.shape, y.shape, model._packed_layouts()
    ((5, 5), (5, 5), ([(3,), (2,)], [(1,), (4,)]))
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from arignote.graph.packing import Packing

__all__ = ["FitData", "pack_data"]


def pack_data(model: Any, x: Any, names: list[str], what: str, first_sets_length: bool = False) -> Any:
    """Several arrays for a multi-input (or multi-output) model, as one packed ``(n, features)`` array.

    ``first_sets_length`` (``predict``): as Keras 2.3, the first array's length is the number of
    samples and longer arrays give only their first rows (with a warning)."""
    if x is None:
        return None
    if isinstance(x, dict):
        missing = [n for n in names if n not in x]
        if missing:
            raise ValueError(f"{what}: no data for {missing}; the dict has {sorted(x)} (keys are the model's "
                             f"{'input' if what == 'x' else 'output'} names {names})")
        x = [x[n] for n in names]
    if not isinstance(x, (list, tuple)) or len(x) != len(names):
        kind = "inputs" if what == "x" else "outputs"
        raise ValueError(f"{what}: the model has {len(names)} {kind} {names}; "
                         f"pass a list of {len(names)} arrays (or a dict keyed by name)")
    arrays = [np.asarray(a) if not isinstance(a, torch.Tensor) else a for a in x]
    n = {len(a) for a in arrays}
    if len(n) > 1 and first_sets_length and all(len(a) >= len(arrays[0]) for a in arrays):
        lengths, first = [len(a) for a in arrays], len(arrays[0])
        warnings.warn(f"{what}: the inputs {names} have {lengths} samples; predicting for the first input's "
                      f"{first}, as Keras 2.3 (the other rows are not used)", stacklevel=3)
        arrays, n = [a[:first] for a in arrays], {first}
    if len(n) > 1:
        raise ValueError(f"{what}: all arrays need the same number of samples, got "
                         f"{[len(a) for a in arrays]}")
    return Packing.pack(arrays), [tuple(a.shape[1:]) for a in arrays]


def _frames_as_arrays(data: Any) -> Any:
    """pandas DataFrames in a list or dict of arrays as their values (Keras 2.3.1's
    ``standardize_input_data`` takes ``x.values`` of each ``DataFrame``); anything else unchanged."""
    if isinstance(data, (list, tuple)):
        return type(data)(_frame_values(d) for d in data)
    if isinstance(data, dict):
        return {k: _frame_values(v) for k, v in data.items()}
    return data


def _one_array_of_list(data: Any) -> Any:
    """``[array]`` as ``array`` (an array, tensor or DataFrame; a nested Python list stays the data)."""
    if isinstance(data, (list, tuple)) and len(data) == 1 and hasattr(data[0], "shape") and hasattr(
            data[0], "__len__"):
        return data[0]
    return data


def _frame_values(item: Any) -> Any:
    return item.values if type(item).__name__ == "DataFrame" and hasattr(item, "values") else item


class FitData:
    """Data preparation for fit/evaluate/predict; ``self`` is a :class:`~arignote.models.Model`."""

    module: Any
    loss: Any
    compiled: bool
    _is_graph: bool
    _y_packing: Any

    def _packed_layouts(self) -> tuple:
        """Per-sample shapes of the last packed inputs and targets of a multi-input/output model."""
        if not self._is_graph:
            return ()
        return tuple(p.shapes if p is not None else None for p in (self.module.input_layout, self._y_packing))

    def _pack(self, x: Any, y: Any, targets: bool = False) -> tuple[Any, Any]:
        """Several inputs (outputs) of a functional model as one packed array (see graph.packing).
        A model trained only on ``add_loss`` terms (``compile(loss=None)``) gets placeholder targets;
        1-D targets of a custom loss become ``(n, 1)``, as Keras 2 feeds them (its placeholder has the
        output's rank, so ``y_true * y_pred`` does not broadcast to ``(n, n)``). Sparse (scipy) inputs
        and targets are made dense."""
        # the loop's data helpers and the custom-loss test load with the first data (issue 32)
        from arignote.models.output_losses import is_custom_loss
        from arignote.training.data import densified

        x, y = densified(_frames_as_arrays(x)), densified(_frames_as_arrays(y))
        if (targets and self.compiled and is_custom_loss(self.loss) and y is not None
                and getattr(y, "ndim", None) == 1):
            y = y.reshape(-1, 1)
        if not self._is_graph or len(self._feed_input_names) == 1:
            x = _one_array_of_list(x)  # Keras 2: a list of one array for a one-input model
        if not self._is_graph:  # a subclassed model trained on what its call adds: placeholder targets too
            return x, self._placeholder_targets(x, _one_array_of_list(y), targets)
        names = self._feed_input_names  # an Input(tensor=...) takes no data
        if x is None and not names and y is not None:  # every input is a tensor (Keras 2: x=None)
            first = next(iter(y.values())) if isinstance(y, dict) else y[0] if isinstance(y, (list, tuple)) \
                else y
            x = np.zeros((len(first), 0), dtype=np.float32)  # rows to batch the targets by, no features
        if len(names) > 1 and isinstance(x, (list, tuple, dict)):
            x, shapes = pack_data(self, x, names, "x", first_sets_length=not targets)
            self.module.input_layout = self.module.input_packing.concrete(shapes)
        elif len(names) == 1 and isinstance(x, dict):
            x = x[names[0]] if names[0] in x else next(iter(x.values()))
        elif len(names) == 1 and isinstance(x, (list, tuple)) and len(x) == 1 and len(self.inputs) > 1:
            x = x[0]
        if y is not None and len(self.outputs) > 1:
            y = self._with_skipped_targets(y)
            y, shapes = pack_data(self, y, self.output_names, "y")

            self._y_packing = Packing(shapes, self.output_names)
        elif y is not None and isinstance(y, dict):
            y = y[self.output_names[0]] if self.output_names[0] in y else next(iter(y.values()))
        elif y is not None and isinstance(y, (list, tuple)) and len(y) == 1 and not np.isscalar(y[0]):
            y = y[0]
        return x, self._placeholder_targets(x, y, targets)

    def _placeholder_targets(self, x: Any, y: Any, targets: bool) -> Any:
        """``y``, or zeros a model trained only on its ``add_loss`` terms gets (the loss reads no targets)."""
        if y is None and targets and self.compiled and self.loss is None and x is not None and \
                not isinstance(x, (list, tuple, dict)) and hasattr(x, "__len__") and hasattr(x, "shape"):
            y = np.zeros((len(x), 1), dtype=np.float32)
        return y

    def _with_skipped_targets(self, y: Any) -> Any:
        """Keras 2.3.1 takes targets only for the outputs that have a loss (``loss={'out1': ...}``):
        the others get a placeholder column that no loss or metric reads."""
        if not self.compiled or self.loss is None:
            return y
        from arignote.models.multi_output import per_output  # compile's tables load with compile (issue 32)

        has_loss = [v is not None for v in per_output(self, self.loss, "loss")]
        if all(has_loss) or not any(has_loss):
            return y
        kept = [n for n, h in zip(self.output_names, has_loss) if h]
        if isinstance(y, dict):
            given = {n: y[n] for n in kept if n in y}
            if len(given) < len(kept) or any(n in y for n in self.output_names if n not in kept):
                return y  # pack_data names what is missing; a full dict is used as it is
        elif isinstance(y, (list, tuple)) and len(y) == len(kept) and len(kept) < len(self.output_names):
            given = dict(zip(kept, y))
        elif len(kept) == 1 and hasattr(y, "shape"):
            given = {kept[0]: y}
        else:
            return y
        rows = len(next(iter(given.values())))
        return [given.get(n, np.zeros((rows, 1), dtype=np.float32)) for n in self.output_names]

    def _sample_weights(self, x: Any, y: Any, sample_weight: Any, class_weight: Any) -> Any:
        """The weights of array data (None without any); for an iterable, Keras 2's errors."""
        # the training loop's weighting loads with the first data, not with the model class (issue 32)
        from arignote.training import sample_weights
        from arignote.training.data import is_array

        if y is None and x is not None and not is_array(x) and not isinstance(x, (list, tuple, dict)):
            if sample_weight is not None:
                raise ValueError("`sample_weight` argument is not supported when data is a generator or "
                                 "Sequence instance. Instead pass sample weights as the third element of "
                                 "the generator.")
            if class_weight is not None:  # checked now; applied to each batch (inputs.load)
                sample_weights.check_class_weight(class_weight, self.output_names if self._is_graph
                                                  else ["output"])
            return None  # an iterable: its batches are weighted one by one
        if y is None or not self.compiled:
            return None
        return sample_weights.for_arrays(self, y, sample_weight, class_weight)
