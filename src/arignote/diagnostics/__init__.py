"""arignote.diagnostics: looking at a training run from the outside, never part of the loop's step.

* :mod:`~arignote.diagnostics.memory_plan` — the memory plan: will this batch fit on this device?
  (``model.summary()`` and, when ``fit`` shows it, the line before the first step.)
* :mod:`~arignote.diagnostics.batch_size` — ``fit(batch_size="auto")``: the largest batch whose real
  step fits.
* :mod:`~arignote.training.oom_inject` — ``memory.oom_inject_above``: a fake out-of-memory above a
  micro-batch size, so every recovery path runs on a CPU (the one piece the loop's OOM guard calls).
* :mod:`~arignote.diagnostics.oom_selftest` — a real out-of-memory on a GPU and its recovery
  (``arignote selftest``'s ``oom-real`` item).

Each reads the engine (``training/``: the trainer, its OOM guard) and the devices; the engine imports
only ``oom_inject`` from here.

Example::

    >>> import torch
    >>> from arignote.diagnostics.batch_size import search_batch_size
    >>> def oom(): raise torch.OutOfMemoryError("out of memory")
    >>> search_batch_size(lambda b: None if b <= 48 else oom(), limit=1000).batch
    48
"""
