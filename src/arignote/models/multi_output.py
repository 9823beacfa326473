"""Keras 2 ``compile`` of a model with several outputs: ``loss``, ``loss_weights``, ``metrics`` and
``weighted_metrics`` given once for all outputs, as a list in output order, or as a dict by output
name; one total loss over the packed targets and predictions, and the metric objects under the
names Keras 2.3 logs (``{output}_loss``, ``{output}_{metric}``).

Example::

    >>> from arignote.layers import Input, Dense
    >>> from arignote.models import Model
    >>> x = Input(shape=(3,))
    >>> model = Model(x, [Dense(1, name="a")(x), Dense(2, name="b")(x)])
    >>> per_output(model, {"b": 0.5}, "loss_weights")
    [None, 0.5]
    >>> model.compile("sgd", loss=["mse", "mae"], metrics=["mae"])
    >>> model.metrics_names
    ['loss', 'a_loss', 'b_loss', 'a_mae', 'b_mae']
"""

from __future__ import annotations

from typing import Any

import torch

from arignote import losses as losses_mod
from arignote import metrics as metrics_mod
from arignote.graph import state
from arignote.losses import weighting

__all__ = ["per_output", "compile_outputs"]


def per_output(model: Any, value: Any, what: str) -> list:
    """A compile argument given once, as a list, or as a dict by output name -> one per output."""
    names = model.output_names
    if isinstance(value, dict):
        unknown = [k for k in value if k not in names]
        if unknown:
            raise ValueError(f"compile: unknown output names {unknown} in {what}; the outputs are {names}")
        return [value.get(n) for n in names]
    if isinstance(value, (list, tuple)) and what != "metrics":
        if len(value) != len(names):
            raise ValueError(f"compile: {what} has {len(value)} entries, the model has {len(names)} outputs "
                             f"{names}")
        return list(value)
    return [value] * len(names)


def compile_outputs(model: Any, loss: Any, loss_weights: Any, metrics: Any,
                    weighted_metrics: Any = None) -> tuple[Any, list, list]:
    """Keras 2 ``compile`` of a model with several outputs: per-output ``loss``/``loss_weights``/
    ``metrics``/``weighted_metrics`` (a value for all, a list in output order, or a dict by output
    name). Returns the total loss ``fn(packed y_true, packed y_pred)`` and the metric objects
    (``{output}_loss`` per output first, then per output its metrics and its weighted metrics,
    ``{output}_{metric}``: the names Keras 2.3 logs). Targets with sample weights
    (:class:`arignote.losses.weighting.Weighted`, the weights packed by ``model._w_packing``) give each
    output its own weights."""
    names = model.output_names
    raw = per_output(model, loss, "loss")
    fns = [losses_mod.compiled(v) if v is not None else None for v in raw]
    if loss_weights is not None and not isinstance(loss_weights, (dict, list)):
        # Keras 2.3.1 (training_utils.prepare_loss_weights): a list or a dict by output name
        raise TypeError(f"Could not interpret loss_weights argument: {loss_weights!r} - expected a list of "
                        f"one weight per output {names} or a dict by output name")
    weights = per_output(model, 1.0 if loss_weights is None else loss_weights, "loss_weights")
    weights = [1.0 if w is None else float(w) for w in weights]

    def per_metrics(value: Any) -> list:
        if isinstance(value, dict):
            return per_output(model, value, "metrics")
        if isinstance(value, (list, tuple, metrics_mod.Metric)):
            # Keras 2.3.1: metric objects listed for all outputs are cloned, one state per output
            return [metrics_mod.clone_metrics(list(value) if isinstance(value, (list, tuple)) else [value])
                    for _ in names]
        return [value] * len(names)

    def split(y_true: Any, y_pred: Any) -> tuple[list, list]:
        """Per-output targets (each ``Weighted`` with its own weights when the batch has some) and
        predictions."""
        packed, w, masks = weighting.parts(y_true)
        layout = model._y_packing
        outputs = model.module.packed_outputs()
        if layout is None and outputs is not None and isinstance(packed, torch.Tensor) and \
                packed.shape[1:] == (outputs.width,):  # targets shaped like the outputs, packed no data yet
            layout = outputs
        trues = layout.unpack(packed) if layout is not None else [None] * len(names)
        if w is not None or masks is not None:
            ws = model._w_packing.unpack(w) if w is not None else [None] * len(trues)
            ms = masks if masks is not None else [None] * len(trues)
            trues = [weighting.Weighted((t, wi, mi)) for t, wi, mi in zip(trues, ws, ms)]
        return trues, model.module.packed_outputs().unpack(y_pred)

    computed: dict = {}  # (output, its prediction's storage) -> that output's loss in the total

    def fn(y_true: Any, y_pred: Any) -> Any:
        trues, preds = split(y_true, y_pred)
        total = None
        computed.clear()
        for i, (f, w, t, p) in enumerate(zip(fns, weights, trues, preds)):
            if f is None:
                continue
            value = f(t, p)
            value = value.mean() if value.dim() else value
            computed[(i, p.data_ptr(), tuple(p.shape))] = value.detach()
            total = value * w if total is None else total + value * w
        return total

    objs: list = []
    for i, (name, f) in enumerate(zip(names, fns)):
        if f is not None:
            objs.append(metrics_mod.FunctionMean(_picked(f, i, split, computed), name=f"{name}_loss",
                                                 select=_whole))
    taken = ["loss", *[m.name for m in objs]]
    pairs = zip(per_metrics(metrics), per_metrics(weighted_metrics))
    # Keras 2.3.1 skips an output without a loss (skip_target_indices): no targets, no metrics; with
    # loss=None for every output (a model trained on add_loss / regularizers) none has metrics
    skipped = {i for i, f in enumerate(fns) if f is None}
    for i, (name, (plain, weighted)) in enumerate(zip(names, pairs)):
        if i in skipped:
            continue
        shape = model.outputs[i].shape[1:]
        for ms, is_weighted in ((plain, False), (weighted, True)):
            for m in [ms] if isinstance(ms, str) or callable(ms) else list(ms or []):
                metric = metrics_mod.get(m, raw[i] if isinstance(raw[i], str) else fns[i], shape)
                metric.weighted, metric.select = is_weighted, _output(i, split)
                metric.name = metrics_mod.unique_name(f"{name}_{metric.name}", taken)
                objs.append(metric)
                taken.append(objs[-1].name)
    return fn, objs, fns


def _whole(y_true: Any, y_pred: Any) -> tuple[Any, Any, None, None]:
    """A metric that reads the packed targets (weights and masks included) itself: the per-output losses."""
    return y_true, y_pred, None, None


def _output(i: int, split: Any) -> Any:
    def select(y_true: Any, y_pred: Any) -> tuple[Any, Any, Any, Any]:
        trues, preds = split(y_true, y_pred)
        y, w, mask = weighting.parts(trues[i])
        return y, preds[i], w, mask

    return select


def _picked(f: Any, i: int, split: Any, computed: dict | None = None) -> Any:
    def on_output(y_true: Any, y_pred: Any) -> Any:
        trues, preds = split(y_true, y_pred)
        try:
            return f(trues[i], preds[i])
        except state.NeedsAutograd:  # a loss taking K.gradients (WGAN-GP's penalty) on the detached
            # prediction: the value it had in the total loss of the same forward, as Keras reports it
            key = (i, preds[i].data_ptr(), tuple(preds[i].shape))
            if computed is None or key not in computed:
                raise
            return computed[key]

    on_output.__name__ = getattr(f, "__name__", "metric")
    return on_output
