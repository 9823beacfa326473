"""arignote.training: the loop behind ``Model.fit`` / ``evaluate`` / ``predict``.

* :mod:`~arignote.training.loop` — :class:`~arignote.training.loop.Trainer`: epochs, validation,
  callbacks; its per-batch train/test/predict steps (``_forward_backward`` + ``_optimizer_step``)
  are :mod:`~arignote.training.batch_steps`, its running loss and metrics
  :mod:`~arignote.training.running_totals`, the optimizer as the fp16 grad scaler sees it
  :mod:`~arignote.training.scaler_view`.
* :mod:`~arignote.training.inputs` — checks every argument and array before the first step.
* :mod:`~arignote.training.checks` — the individual checks (lengths, NaN/Inf, shapes, batch size).
* :mod:`~arignote.training.data` — arrays moved to the device once and sliced there, or any
  iterable of ``(x, y)`` batches.
* :mod:`~arignote.training.oom` — out-of-memory recovery (issue 7); the memory plan, the batch-size
  finder and OOM injection are in :mod:`arignote.diagnostics`.

Example::

    >>> from arignote.training.data import split_validation
    >>> split_validation([1, 2, 3, 4], [5, 6, 7, 8], 0.25)[2]
    [4]
"""
