"""From ``fit``/``evaluate``/``predict`` arguments to checked data, before any device work.

:func:`plan_fit` and :func:`plan_eval` validate everything (argument values, lengths, shapes,
NaN/Inf, targets against the loss) and return a :class:`Plan`; :func:`load` then moves the data
to the trainer's device once.

Example::

    >>> check_fit_args(None, 1, 0, 1, None)   # Keras's default batch size
    32
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from arignote import losses
from arignote.runtime import memory
from arignote.runtime.precision import dtype_of
from arignote.training import batch_checks, sample_weights
from arignote.training.checks import check_batch_size, check_finite, check_input_shape, check_lengths
from arignote.training.data import ArrayData, IterableData, as_tensor, is_array, split_batch, split_validation
from arignote.training.rank_split import for_rank
from arignote.utils.data_utils import PeekedSequence, is_sequence

__all__ = ["Plan", "check_fit_args", "check_batch", "check_stateful_samples", "plan_fit", "plan_eval", "load",
           "load_eval", "empty_prediction"]


@dataclass
class Plan:
    """Checked data: host tensors (arrays) or an iterable, and, for a ``fit``, the one holder of its
    batch size and steps (``batch_size="auto"`` sets them through :meth:`use_batch_size`; the trainer
    reads them here; the callbacks' ``params`` are made from them by :meth:`callback_params`).

    Example::

        >>> plan = Plan(samples=100, steps=4, batch_size=32)
        >>> plan.use_batch_size(10, 100); plan.steps, plan.val_batch_size
        (10, 10)
        >>> plan.callback_params(epochs=2, verbose=0, metrics=["loss"])["batch_size"]
        10
    """

    x: Any = None
    y: Any = None
    w: Any = None  # sample weights (host array, one row per sample) or None
    x_val: Any = None
    y_val: Any = None
    w_val: Any = None
    class_weight: Any = None  # applied to each training batch of an iterable
    iterable: Any = None
    val_iterable: Any = None
    sample_shape: tuple | None = None
    samples: int | None = None
    val_samples: int | None = None
    steps: int | None = None
    steps_per_epoch: int | None = None
    val_steps: int | None = None
    targets: bool = True  # batches of an iterable must carry y (False for predict)
    workers: int = 0  # threads fetching a Sequence's batches ahead
    max_queue_size: int = 10
    use_multiprocessing: bool = False  # the workers are processes (a Sequence's batches)
    batch_size: int | None = None  # fit's global batch (arrays; an iterable makes its own batches)
    validation_batch_size: int | None = None  # None: batch_size

    @property
    def val_batch_size(self) -> int | None:
        """The validation data's batch (``validation_batch_size``, else the training batch)."""
        return self.validation_batch_size or self.batch_size

    def use_batch_size(self, batch_size: int, samples: int) -> None:
        """Train with ``batch_size`` (what ``batch_size="auto"`` found) on ``samples`` rows: the steps
        follow, unless ``steps_per_epoch`` fixed them."""
        self.batch_size = batch_size
        self.steps = self.steps_per_epoch or -(-samples // batch_size)

    def callback_params(self, *, epochs: int, verbose: int, metrics: list[str]) -> dict[str, Any]:
        """Keras 2's ``callback.params`` for this fit (``val_samples`` is arignote's, for the
        progress bar's "validate on N samples")."""
        do_validation = self.x_val is not None or self.val_iterable is not None
        return {"epochs": epochs, "steps": self.steps, "samples": self.samples,
                "val_samples": self.val_samples, "batch_size": self.batch_size, "verbose": verbose,
                "do_validation": do_validation, "metrics": metrics}


def _float_dtype() -> torch.dtype:
    return dtype_of()


def check_batch(batch_size: Any) -> int:
    return 32 if batch_size is None else check_batch_size(batch_size)


def check_stateful_samples(model: Any, samples: int | None, batch_size: int | None,
                           predicting: bool = False) -> None:
    """Keras 2.3.1's check: a model with a ``stateful`` layer takes only a number of samples that the
    batch size divides (each batch continues the previous one's rows); ``predict`` also takes fewer
    samples than one batch."""
    if not samples or not batch_size or samples % batch_size == 0 or (predicting and samples < batch_size):
        return
    if any(getattr(layer, "stateful", False) is True for layer in _all_layers(model)):
        raise ValueError(
            "In a stateful network, you should only pass inputs with a number of samples that can be "
            f"divided by the batch size. Found: {samples} samples (batch_size={batch_size})")


def _all_layers(model: Any) -> list:
    out = []
    for layer in getattr(model, "layers", None) or []:
        out.append(layer)
        out += _all_layers(layer)
        inner = getattr(layer, "layer", None)  # a wrapper's layer
        if inner is not None:
            out.append(inner)
    return out


def check_fit_args(batch_size: Any, epochs: Any, initial_epoch: Any, accumulate: Any,
                   steps_per_epoch: Any) -> int:
    """Validate fit's scalar arguments; returns the batch size (32 when None, as Keras)."""
    bs = check_batch(batch_size)
    check_batch_size(accumulate, "accumulate")
    for name, value in (("epochs", epochs), ("initial_epoch", initial_epoch)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    if steps_per_epoch is not None:
        check_batch_size(steps_per_epoch, "steps_per_epoch")
    if accumulate > bs:
        raise ValueError(f"accumulate={accumulate} is larger than batch_size={bs}: each micro-batch "
                         "needs at least one sample")
    return bs


def check_queue_args(validation_steps: Any, validation_freq: Any, max_queue_size: Any, workers: Any) -> None:
    """Validate fit's Keras 2 data-feeding arguments (``validation_steps``, ``validation_freq``,
    ``workers``, ``max_queue_size``; ``use_multiprocessing`` is any truth value, as in Keras 2)."""
    if validation_steps is not None:
        check_batch_size(validation_steps, "validation_steps")
    check_batch_size(max_queue_size, "max_queue_size")
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 0:
        raise ValueError(f"workers must be a whole number >= 0 (threads fetching Sequence batches), "
                         f"got {workers!r}")
    freqs = [validation_freq] if isinstance(validation_freq, (int, np.integer)) else validation_freq
    try:
        ok = len(freqs) > 0 and all(not isinstance(f, bool) and isinstance(f, (int, np.integer)) and f >= 1
                                    for f in freqs)
    except TypeError:
        ok = False
    if not ok:
        raise ValueError("validation_freq must be a whole number >= 1 (validate every N epochs) or a list "
                         f"of 1-based epoch numbers, got {validation_freq!r}")


def _check_targets(model: Any, y: Any, what: str) -> None:
    out = model._sample_output_shape()
    if out is None or y is None or model.loss is None:
        return
    if None in out:  # a variable dim (Input(shape=(None, n))): the targets' own size stands in for it
        given = tuple(y.shape[1:])
        if any(d is None and i >= len(given) for i, d in enumerate(out)):
            return
        out = tuple(given[i] if d is None else d for i, d in enumerate(out))
    try:
        losses.check_targets(model.loss, y, out)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None


def _arrays(x: Any, y: Any, names: tuple[str, str]) -> tuple[torch.Tensor, Any]:
    if isinstance(x, (list, tuple)) and not is_array(x):
        x = np.asarray(x)
    dtype = _float_dtype()
    xt = as_tensor(x, dtype, names[0])
    yt = None if y is None else as_tensor(y, dtype, names[1])
    if xt.dim() == 0:
        raise ValueError(f"{names[0]} must have a batch dimension, got a scalar")
    check_lengths(xt, yt, f"{names[0]} and {names[1]}")
    return xt, yt


def _check_arrays(model: Any, xt: torch.Tensor, yt: Any, names: tuple[str, str]) -> None:
    check_input_shape(xt, model.expected_input_shape(), names[0])
    check_finite(xt, names[0])
    if yt is not None:
        check_finite(yt, names[1])
        _check_targets(model, yt, names[1])


def peekable(data: Any) -> Any:
    """A ``Sequence`` as a :class:`PeekedSequence` (its batch 0 looked at once, then trained on);
    any other data as it is."""
    return PeekedSequence(data) if is_sequence(data) and not isinstance(data, PeekedSequence) else data


def _check_first_batch(model: Any, data: Any, name: str, targets: bool = True) -> tuple | None:
    """Checks on the first batch of a re-iterable (a DataLoader; a Sequence given through
    :func:`peekable`, which keeps the batch for training); returns its per-sample shape.
    ``targets=False`` (predict): the batch's targets, if any, are not looked at (Keras 2.3.1
    ignores them)."""
    if iter(data) is data:
        return None  # a one-shot iterator: nothing can be looked at without consuming it
    peek = getattr(data, "peek", None)
    for batch in [peek()] if isinstance(data, PeekedSequence) and callable(peek) else data:
        xb, yb, _ = split_batch(batch)
        yb = yb if targets else None
        xb, yb = model._pack(xb, yb, targets=yb is not None)  # several inputs/outputs: one array each
        xt, yt = _arrays(xb, yb, (f"{name} x batch", f"{name} y batch"))
        model._ensure_built(tuple(xt.shape[1:]))
        _check_arrays(model, xt, yt, (f"{name} x batch", f"{name} y batch"))
        return tuple(xt.shape[1:])
    raise ValueError(f"{name} is empty: the iterable yielded no batch")


def plan_fit(model: Any, x: Any, y: Any, batch_size: int, validation_split: float,
             validation_data: Any, steps_per_epoch: int | None, w: Any = None,
             class_weight: Any = None, validation_batch_size: int | None = None) -> Plan:
    """Validate fit's data; the model is built (on the host) from the data's shape if needed.
    The plan holds the batch sizes and steps of the fit.
    ``w``: the sample weights of array data (:func:`sample_weights.for_arrays`); ``class_weight``
    is applied to each batch of an iterable (arrays have it in ``w`` already)."""
    if x is None:
        raise ValueError("fit needs training data: fit(x, y) with arrays, or fit(loader) with an "
                         "iterable of (x, y) batches")
    plan = Plan(steps_per_epoch=steps_per_epoch, w=w, batch_size=batch_size,
                validation_batch_size=validation_batch_size)
    if y is None and not is_array(x):
        if validation_split:
            raise ValueError("validation_split needs array data; with a DataLoader/iterable pass "
                             "validation_data=(x_val, y_val) or another iterable")
        plan.iterable = x = peekable(x)
        plan.class_weight = class_weight
        plan.sample_shape = _check_first_batch(model, x, "x")
        try:
            plan.steps = steps_per_epoch or len(x)
        except TypeError:
            plan.steps = steps_per_epoch
    else:
        if y is None:
            raise ValueError("fit(x, y): y (the targets) is missing")
        xt, yt = _arrays(x, y, ("x", "y"))
        if validation_data is None and validation_split:
            xt, yt, xv, yv = split_validation(xt, yt, float(validation_split))
            plan.x_val, plan.y_val = xv, yv
            if w is not None:  # Keras slices the weights (class weights included) the same way
                plan.w, _, plan.w_val, _ = split_validation(w, w, float(validation_split))
        model._ensure_built(tuple(xt.shape[1:]))
        _check_arrays(model, xt, yt, ("x", "y"))
        plan.x, plan.y = xt, yt
        plan.sample_shape = tuple(xt.shape[1:])
        plan.samples = len(xt) if steps_per_epoch is None else None
        plan.steps = steps_per_epoch or -(-len(xt) // batch_size)
        if plan.x_val is not None:
            _check_arrays(model, plan.x_val, plan.y_val, ("validation x", "validation y"))
            plan.val_samples = len(plan.x_val)
    if validation_data is not None:
        _plan_validation(model, plan, validation_data)
    return plan


def _plan_validation(model: Any, plan: Plan, validation_data: Any) -> None:
    if isinstance(validation_data, (tuple, list)) and len(validation_data) in (2, 3) and (
            is_array(validation_data[0]) or isinstance(validation_data[0], list)):
        xv, yv = validation_data[0], validation_data[1]
        xt, yt = _arrays(xv, yv, ("validation x", "validation y"))
        _check_arrays(model, xt, yt, ("validation x", "validation y"))
        plan.x_val, plan.y_val, plan.val_samples = xt, yt, len(xt)
        # (x_val, y_val, weights): the weights as sample_weights.for_arrays made them
        plan.w_val = validation_data[2] if len(validation_data) == 3 else None
        return
    if isinstance(validation_data, (tuple, list)) and len(validation_data) not in (2, 3):
        raise ValueError(f"validation_data must be (x_val, y_val) or an iterable of batches, got a "
                         f"{type(validation_data).__name__} of length {len(validation_data)}")
    plan.val_iterable = validation_data = peekable(validation_data)
    _check_first_batch(model, validation_data, "validation_data")


def plan_eval(model: Any, x: Any, y: Any, steps: int | None, need_targets: bool = True,
              w: Any = None) -> Plan:
    """Validate evaluate/predict/…_on_batch data (``w``: the sample weights of array data)."""
    if x is None:
        raise ValueError("no data given: pass x (and y), or an iterable of (x, y) batches")
    plan = Plan(steps_per_epoch=steps, targets=need_targets, w=w if need_targets else None)
    if y is None and not is_array(x):
        plan.iterable = x = peekable(x)
        plan.sample_shape = _check_first_batch(model, x, "x", targets=need_targets)
        return plan
    if need_targets and y is None:
        raise ValueError("targets y are missing: evaluate(x, y)")
    xt, yt = _arrays(x, y if need_targets else None, ("x", "y"))
    model._ensure_built(tuple(xt.shape[1:]))
    _check_arrays(model, xt, yt, ("x", "y"))
    plan.x, plan.y, plan.sample_shape, plan.samples = xt, yt, tuple(xt.shape[1:]), len(xt)
    return plan


def empty_prediction(model: Any, trainer_for: Any, x: Any) -> torch.Tensor | None:
    """The outputs for an array ``x`` of 0 samples: ``(0, *output shape)`` from one forward of the
    empty batch (Keras 2.3.1's ``predict_on_batch`` gives that; its ``predict`` an empty list, which
    its scikit-learn regressor squeezes to ``(0,)`` as ours does); None when ``x`` has samples or is
    not an array. ``trainer_for(sample_shape)`` is the model's trainer."""
    if not is_array(x) or len(x) != 0:
        return None
    xt = as_tensor(x, _float_dtype(), "x")
    model._ensure_built(tuple(xt.shape[1:]))
    trainer = trainer_for(tuple(xt.shape[1:]))
    module = model.module
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            return trainer._predict(xt.to(trainer.device)).cpu()
    finally:
        module.train(was_training)


def _free_bytes(trainer: Any) -> int | None:
    """What this process can still allocate on the trainer's GPU now, under its ``memory.limit`` cap
    and counting its ``memory.preallocate`` reservation (None on CPU, where arrays stay in place)."""
    device = trainer.device
    if device.type != "cuda":
        return None
    return memory.offer_bytes(device.index or 0)


def _array_data(trainer: Any, x: Any, y: Any, image_input: bool, w: Any = None) -> ArrayData:
    data = ArrayData(x, y, trainer.device, _float_dtype(), _free_bytes(trainer), w=w)
    if image_input and data.x.dim() == 4:
        # a wrapped module takes NCHW: store the arrays channels-last once so batches are too
        data.x = data.x.contiguous(memory_format=torch.channels_last)
    return data


def _iterable(data: Any, trainer: Any, steps: int | None, **kwargs: Any) -> IterableData:
    """An iterable on the trainer's device, split for this rank under data parallel
    (:mod:`arignote.training.rank_split`: a DataLoader loads only this rank's rows)."""
    source, shares, user_sharded = for_rank(data, trainer.strategy)
    data = IterableData(source, trainer.device, _float_dtype(), steps, shares=shares,
                        user_sharded=user_sharded, **kwargs)
    model = trainer.model
    data.pack = lambda x, y: model._pack(x, y, targets=y is not None)  # as fit(x, y) packs arrays
    return data


def load(plan: Plan, trainer: Any) -> tuple[Any, Any]:
    """Training and validation data on the trainer's device (arrays moved once)."""
    image = trainer.model._image_input
    queue = {"workers": plan.workers, "max_queue_size": plan.max_queue_size,
             "use_multiprocessing": plan.use_multiprocessing}
    if plan.iterable is not None:
        train = _iterable(plan.iterable, trainer, plan.steps_per_epoch, **queue)
        train.check = batch_checks.for_model(trainer.model, "x")
        train.weigh = sample_weights.for_batches(trainer.model, plan.class_weight)
    else:
        train = _array_data(trainer, plan.x, plan.y, image, plan.w)
    val = None
    if plan.val_iterable is not None:
        val = _iterable(plan.val_iterable, trainer, plan.val_steps, name="validation_data",
                        steps_name="validation_steps", **queue)
        val.check = batch_checks.for_model(trainer.model, "validation_data")
        val.weigh = sample_weights.for_batches(trainer.model, None)  # Keras: no class_weight there
    elif plan.x_val is not None:
        val = _array_data(trainer, plan.x_val, plan.y_val, image, plan.w_val)
    return train, val


def load_eval(plan: Plan, trainer: Any) -> Any:
    if plan.iterable is not None:
        data = _iterable(plan.iterable, trainer, plan.steps_per_epoch, targets=plan.targets,
                         steps_name="steps", workers=plan.workers, max_queue_size=plan.max_queue_size,
                         use_multiprocessing=plan.use_multiprocessing)
        data.check = batch_checks.for_model(trainer.model, "x", plan.targets)
        data.weigh = sample_weights.for_batches(trainer.model, None) if plan.targets else None
        return data
    return _array_data(trainer, plan.x, plan.y, trainer.model._image_input, plan.w)
