"""Keras 2's batch methods of :class:`~arignote.models.Model`: ``train_on_batch``, ``test_on_batch``
and ``predict_on_batch``, each one step of the model's trainer on one batch (mixed into ``Model``).

Example::

    >>> import numpy as np
    >>> from arignote.layers import Dense
    >>> from arignote.models import Sequential
    >>> model = Sequential([Dense(1, input_shape=(2,))]); model.compile("sgd", "mse")
    >>> x, y = np.ones((4, 2), "float32"), np.zeros((4, 1), "float32")
    >>> loss = model.train_on_batch(x, y)
    >>> model.test_on_batch(x, y) <= loss, model.predict_on_batch(x).shape
    (True, (4, 1))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:
    from arignote.training.loop import Trainer

__all__ = ["BatchMethods"]


class BatchMethods:
    """The Keras 2 batch methods; ``self`` is a :class:`~arignote.models.Model`."""

    module: Any
    predict: Any
    _is_graph: bool
    _feed_inputs: list

    def _make_train_function(self) -> None:
        """Keras 2 built its backend training function lazily here, and published code calls it (and
        ``_make_predict_function``, the Flask-serving idiom) to build it ahead of time; arignote's
        steps need no such preparation, so these three do nothing."""

    def _make_test_function(self) -> None:
        """See :meth:`_make_train_function`: nothing to prepare."""

    def _make_predict_function(self) -> None:
        """See :meth:`_make_train_function`: nothing to prepare."""

    def train_on_batch(self, x: Any, y: Any, sample_weight: Any = None, class_weight: Any = None) -> Any:
        """One optimizer step on one batch (the global batch: each rank runs its rows under data
        parallel); returns its loss (and metrics) like ``evaluate``. Weights as in :meth:`fit`."""
        trainer, xb, yb, rows, total = self._one_batch(x, y, self._sample_weights(x, y, sample_weight,
                                                                                   class_weight))
        if trainer.world == 1:
            rows = total = None
        self.module.train()
        trainer.reset_state()
        with self._trainable_as_compiled():
            trainer.train_step(xb, yb, rows, total)
        return self._scalars(trainer)

    def test_on_batch(self, x: Any, y: Any, sample_weight: Any = None) -> Any:
        """Loss (and metrics) on one batch without updating the weights (``sample_weight`` as in fit)."""
        trainer, xb, yb, rows, _ = self._one_batch(x, y, self._sample_weights(x, y, sample_weight, None))
        was = self.module.training
        self.module.eval()
        trainer.reset_state()
        try:
            with torch.no_grad():  # not inference_mode: metric buffers created here are reused in training
                if rows:
                    trainer.test_step(xb, yb)
        finally:
            self.module.train(was)
        return self._scalars(trainer)

    def predict_on_batch(self, x: Any) -> np.ndarray:
        """Outputs for one batch (numpy)."""
        n = len(next(iter(x.values())) if isinstance(x, dict) else x[0] if
                isinstance(x, (list, tuple)) and self._is_graph and len(self._feed_inputs) > 1 else x)
        return self.predict(x, batch_size=max(1, n))

    def _one_batch(self, x: Any, y: Any, w: Any = None) -> tuple[Trainer, Any, Any, int, int]:
        # the training loop's inputs load with the first batch, not with the model class (issue 32)
        from arignote.training import inputs

        x, y = self._pack(x, y, targets=True)
        plan = inputs.plan_eval(self, x, y, None, w=w)
        trainer = self._get_trainer(plan.sample_shape)
        data = inputs.load_eval(plan, trainer)
        xb, yb, rows, total = next(iter(data.rank_batches(None, max(1, data.n), trainer.world, trainer.rank)))
        return trainer, xb, yb, rows, total

    @staticmethod
    def _scalars(trainer: Trainer) -> Any:
        values = trainer.result_values()  # a list: two outputs may carry the same name (Keras 2's)
        return values[0] if len(values) == 1 else values
