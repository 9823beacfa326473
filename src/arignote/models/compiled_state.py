"""What ``compile`` fixes for later steps of :class:`~arignote.models.Model` (mixed into ``Model``):
whether the model is compiled, which weights train (as when it was compiled: Keras 2's GAN recipe
freezes a discriminator for the combined model only), the output masks the loss and metrics apply,
and a one-output model's ``loss_weights``.

Example::

    >>> import torch
    >>> loss = scaled_loss(lambda y_true, y_pred: (y_true - y_pred).abs().mean(), 0.5)
    >>> float(loss(torch.zeros(2), torch.ones(2)))
    0.5
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import torch

__all__ = ["CompiledState", "scaled_loss"]


class CompiledState:
    """The compiled state of a model; ``self`` is a :class:`~arignote.models.Model`."""

    module: Any
    loss_fn: Any
    trainable_weights: Any
    _has_layers: Any

    def _mask_targets(self) -> Any:
        """``yb -> yb`` with the masks of the outputs from the module's last forward
        (:func:`arignote.losses.weighting.with_masks`), which compile's loss and metrics apply as Keras 2.3.1;
        None when no output of the model carries a mask (the trainer then passes targets as they are).
        """
        module = self.module
        flags = getattr(module, "out_masked", None)
        if not flags or not any(flags):
            return None
        single = len(flags) == 1

        # Keras's weighting rules load with the first masked output (issue 32)
        from arignote.losses import weighting

        def attach(yb: Any) -> Any:
            masks = module.output_masks
            return weighting.with_masks(yb, masks[0] if single else masks)

        return attach

    @contextlib.contextmanager
    def _trainable_as_compiled(self) -> Iterator[None]:
        """Within the block, the weights train as they did when this model was compiled (weights
        shared with another model may have been frozen or unfrozen since, through ``trainable``)."""
        compiled = getattr(self, "_trainable_at_compile", {})
        if compiled is not None and isinstance(self.module, torch.nn.Module) and sum(
                1 for _ in self.module.parameters()) != len(compiled):
            # weights created since compile (a model built by its first fit): as the flags say now
            compiled = self._trainable_at_compile = {**self._trainable_now(), **compiled}
        flip = [p for p, want in compiled.items() if p.requires_grad != want]
        for p, want in compiled.items():  # a gradient left by another model's step (the GAN's
            if not want and p.grad is not None:  # discriminator, unfrozen for its own) must not count
                p.grad = None
        for p in flip:  # a gradient left by the other model's step must not reach this optimizer
            p.requires_grad_(not p.requires_grad)
            p.grad = None
        try:
            yield
        finally:
            for p in flip:
                p.requires_grad_(not p.requires_grad)
                p.grad = None

    def _check_trainable_weights_consistency(self) -> None:
        """Keras 2.3.1's warning (``summary``, ``fit``): ``trainable`` changed since ``compile``, so the
        weights that train (those of compile time) are not ``trainable_weights`` now."""
        compiled = getattr(self, "_trainable_at_compile", None)
        if not compiled or not self._has_layers():
            return
        if sum(compiled.values()) != len(self.trainable_weights):
            message = ("Discrepancy between trainable weights and collected trainable weights, did you set "
                       "`model.trainable` without calling `model.compile` after ?")
            warnings.warn(UserWarning(message), stacklevel=3)

    def _trainable_now(self) -> dict:
        """``{parameter: trains}`` for this model as Keras 2.3.1's compile collects it: its own
        ``trainable_weights`` (the flags of the model and of every layer inside it; not those of a
        model that holds this one), or ``requires_grad`` for a wrapped torch module."""
        module = self.module
        if not isinstance(module, torch.nn.Module):
            return {}
        if not self._has_layers():
            return {p: p.requires_grad for p in module.parameters()}
        trainable = {id(p) for p in self.trainable_weights}
        return {p: id(p) in trainable for p in module.parameters()}

    @property
    def compiled(self) -> bool:
        return self.loss_fn is not None

def scaled_loss(loss_fn: Any, weight: float) -> Any:
    """``weight * loss_fn(y_true, y_pred)``: a one-output model's ``compile(loss_weights=...)``."""
    def weighted(y_true: Any, y_pred: Any) -> Any:
        return loss_fn(y_true, y_pred) * weight

    return weighted
