"""Keras 2's ``fit_generator``, ``evaluate_generator`` and ``predict_generator``: thin spellings of
``fit``/``evaluate``/``predict`` on a generator or ``Sequence`` (mixed into :class:`Model`). Their
Keras 1 arguments (``samples_per_epoch``, ``nb_epoch``, ``nb_val_samples``, ``val_samples``, ``nb_worker``,
``pickle_safe``, ``max_q_size``) convert as in Keras 2.3.1 (:mod:`arignote.legacy.conversions`).

Example::

    >>> from arignote.models import Model
    >>> issubclass(Model, GeneratorMethods)
    True
"""

from __future__ import annotations

from typing import Any

from arignote.legacy import conversions as legacy_interfaces

__all__ = ["GeneratorMethods"]


class GeneratorMethods:
    """The Keras 2 generator methods; ``self`` is a :class:`~arignote.models.Model`."""

    fit: Any
    evaluate: Any
    predict: Any

    @legacy_interfaces.support("generator_methods", "method")
    def fit_generator(self, generator: Any, steps_per_epoch: int | None = None, epochs: int = 1,
                      verbose: int = 1, callbacks: list | None = None, validation_data: Any = None,
                      validation_steps: int | None = None, validation_freq: Any = 1,
                      class_weight: Any = None, max_queue_size: int = 10, workers: int = 1,
                      use_multiprocessing: bool = False, shuffle: bool = True,
                      initial_epoch: int = 0) -> Any:
        """Keras 2 ``fit_generator``: :meth:`fit` on a generator or ``Sequence`` of ``(x, y)`` or
        ``(x, y, sample_weight)`` batches; ``class_weight`` weighs each training batch (not the
        validation batches), as Keras 2.3.1 does.

        Example::

            >>> import numpy as np
            >>> from arignote import config; config.configure(print_active_device=False)
            >>> from arignote.layers import Dense
            >>> from arignote.models import Sequential
            >>> def batches():
            ...     while True:
            ...         yield np.zeros((4, 2), "float32"), np.zeros((4, 1), "float32")
            >>> m = Sequential([Dense(1, input_shape=(2,))]); m.compile("sgd", "mse")
            >>> len(m.fit_generator(batches(), steps_per_epoch=3, epochs=2, verbose=0).history["loss"])
            2
        """
        return self.fit(generator, None, epochs=epochs, verbose=verbose, callbacks=callbacks,
                        class_weight=class_weight,
                        validation_data=validation_data, shuffle=shuffle, initial_epoch=initial_epoch,
                        steps_per_epoch=steps_per_epoch, validation_steps=validation_steps,
                        validation_freq=validation_freq, max_queue_size=max_queue_size, workers=workers,
                        use_multiprocessing=use_multiprocessing)

    @legacy_interfaces.support("generator_methods", "method")
    def evaluate_generator(self, generator: Any, steps: int | None = None, callbacks: list | None = None,
                           max_queue_size: int = 10, workers: int = 1, use_multiprocessing: bool = False,
                           verbose: int = 0) -> Any:
        """Keras 2 ``evaluate_generator``: :meth:`evaluate` on a generator or ``Sequence`` (batches of
        ``(x, y)`` or ``(x, y, sample_weight)``)."""
        return self.evaluate(generator, None, verbose=verbose, callbacks=callbacks, steps=steps,
                             max_queue_size=max_queue_size, workers=workers,
                             use_multiprocessing=use_multiprocessing)

    @legacy_interfaces.support("generator_methods", "method")
    def predict_generator(self, generator: Any, steps: int | None = None, callbacks: list | None = None,
                          max_queue_size: int = 10, workers: int = 1, use_multiprocessing: bool = False,
                          verbose: int = 0) -> Any:
        """Keras 2 ``predict_generator``: :meth:`predict` on a generator or ``Sequence`` (batches of
        ``x`` alone or ``(x, y)`` pairs)."""
        return self.predict(generator, verbose=verbose, callbacks=callbacks, steps=steps,
                            max_queue_size=max_queue_size, workers=workers,
                            use_multiprocessing=use_multiprocessing)

