"""A loss as ``compile`` trains with it: :func:`compiled` (the batch mean with plain targets, weighted
and masked as Keras 2.3.1 with :class:`arignote.losses.weighting.Weighted` targets), the :func:`per_sample`
values that weights and masks multiply, the :func:`batch_mean` in the fewest kernels, and
:func:`from_logits`, the loss fused with the output activation (:mod:`arignote.losses.logits`).

Example::

    >>> float(batch_mean("mae")(torch.zeros(2, 2), torch.tensor([[1.0, 3.0], [2.0, 2.0]])))
    2.0
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from arignote.layers.value_semantics import augments, is_user_function, with_value_semantics
from arignote.losses import logits as logit_losses
from arignote.losses import weighting
from arignote.losses.classes import Loss
from arignote.losses.functions import _FORMS, _huber_mean, huber_loss
from arignote.losses.names import deserialize, get, name_of

__all__ = ["per_sample", "batch_mean", "compiled", "from_logits"]


def per_sample(loss: str | Callable) -> Callable | None:
    """The values of a built-in loss that sample weights and masks multiply: one per sample (the mean,
    or the sum for the cross-entropies and KL, over the last axis; a 1-D output is one value per
    sample already), one per time step for sequences; None for a loss whose own values are those
    (a custom one, and ``categorical_hinge``, ``logcosh``, ``huber_loss``, ``cosine_proximity``).

    Example::

        >>> per_sample("mse")(torch.zeros(2, 2), torch.tensor([[1.0, 3.0], [0.0, 2.0]])).tolist()
        [5.0, 2.0]
    """
    try:
        fn = get(loss)
    except ValueError:
        return None
    forms = _FORMS.get(fn)
    return forms[0] if forms else None


def batch_mean(loss: str | Callable) -> Callable:
    """``fn(y_true, y_pred) -> 0-d``: the batch mean of the loss's values (Keras's
    ``SUM_OVER_BATCH_SIZE`` without weights), computed in as few kernels as possible for a built-in
    loss; a custom loss's values averaged.

    Example::

        >>> float(batch_mean("mse")(torch.zeros(2, 2), torch.tensor([[1.0, 3.0], [0.0, 2.0]])))
        3.5
    """
    fn = get(loss)
    forms = _FORMS.get(fn)
    if forms is not None:
        return forms[1]
    if fn is huber_loss:  # its values are per element (no per-sample form): their mean, in one operator
        return _huber_mean

    def mean(y_true: torch.Tensor, y_pred: torch.Tensor) -> torch.Tensor:
        value = fn(y_true, y_pred)
        return value.mean() if value.dim() else value

    mean.__name__ = getattr(fn, "__name__", type(fn).__name__)
    return mean


def compiled(loss: str | Callable) -> Callable:
    """The loss ``compile`` trains with: the batch mean of the loss's values with plain targets (fast),
    weighted and masked as Keras 2.3.1 with :class:`arignote.losses.weighting.Weighted` targets.

    Example::

        >>> from arignote.losses.weighting import Weighted
        >>> fn = compiled("mae")
        >>> y, p = torch.zeros(2, 2), torch.tensor([[1.0, 3.0], [2.0, 2.0]])
        >>> float(fn(y, p)), float(fn(Weighted((y, None, torch.tensor([True, False]))), p))
        (2.0, 1.0)
    """
    if isinstance(loss, dict):  # a stored Loss object: {'class_name': ..., 'config': ...}
        loss = deserialize(loss)
    if isinstance(loss, Loss):
        return loss._compiled()
    fn = get(loss)
    if is_user_function(fn) and augments(fn):  # `y_pred /= K.sum(...)` rebinds y_pred, as on Keras 2's
        fn = with_value_semantics(fn)
    return weighting.weighted_loss(per_sample(fn) or fn, batch_mean(fn), name_of(fn))


# --------------------------------------------------------------------------- fused with the output activation


def _sparse_cce_logits(y_true: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    logp = logit_losses.clip(torch.log_softmax(logits, dim=-1))
    # cross_entropy renormalizes the clipped probabilities exactly like the TF-backend route
    return F.cross_entropy(logp.reshape(-1, logits.shape[-1]), y_true.reshape(-1).long())


_FUSED = {
    ("softmax", "categorical_crossentropy"): logit_losses.categorical,
    ("softmax", "sparse_categorical_crossentropy"): _sparse_cce_logits,
    ("sigmoid", "binary_crossentropy"): logit_losses.binary,
}


def from_logits(loss: str | Callable, activation: str | None) -> Callable | None:
    """The loss computed from the pre-activation output, or None when there is no fused form.

    For a model ending in ``softmax`` (or ``sigmoid``) trained with a cross-entropy, the training
    loop may skip the final activation and call this instead: ``fused(y_true, logits)`` equals the
    batch mean of ``loss(y_true, activation(logits))`` with Keras's clipping (``log p`` clamped to
    ``[log eps, log(1 - eps)]``, zero gradient where clipped, like ``clip``), but saves the
    softmax backward and a few elementwise ops per step (:mod:`arignote.losses.logits`: the clamps'
    backward in one operator, the categorical loss as one autograd function). Accuracy metrics on
    logits need care: argmax is unchanged by softmax; the 0.5 threshold of a sigmoid is 0 on logits.

    Example::

        >>> from arignote.losses.functions import categorical_crossentropy
        >>> z, y = torch.tensor([[2.0, 0.5, -1.0]]), torch.tensor([[0.0, 1.0, 0.0]])
        >>> fused = from_logits("categorical_crossentropy", "softmax")
        >>> bool(torch.isclose(fused(y, z), categorical_crossentropy(y, torch.softmax(z, -1))))
        True
    """
    if not isinstance(activation, str) or isinstance(loss, Loss):  # a Loss object: its own options
        return None
    try:
        name = name_of(loss)
    except ValueError:
        return None
    return _FUSED.get((activation, name))
