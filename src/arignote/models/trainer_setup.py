"""Where :class:`~arignote.models.Model` runs (mixed into ``Model``): the strategy the ``device`` flag
picks (one device or data parallel), the module placed on its device (``floatX``, channels-last
convolution kernels per the ``memory_format`` flag, placement contexts), the optimizer built for
the weights that train, and the one :class:`~arignote.training.loop.Trainer` every fit, evaluate,
predict and batch method hands over to.

Example::

    >>> from arignote.layers import Dense
    >>> from arignote.models import Sequential
    >>> model = Sequential([Dense(1, input_shape=(2,))]); model.compile("sgd", "mse")
    >>> model.strategy is None, model.is_main
    (True, True)
    >>> trainer = model._get_trainer((2,))
    >>> str(model.device), model.strategy is trainer.strategy
    ('cpu', True)
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import torch

from arignote import config
from arignote.runtime.precision import Precision, dtype_of

if TYPE_CHECKING:
    from arignote.training.loop import Trainer

__all__ = ["TrainerSetup"]


class TrainerSetup:
    """The device, strategy and trainer of a model; ``self`` is a :class:`~arignote.models.Model`."""

    module: Any
    optimizer: Any
    loss: Any
    metrics_list: list
    compiled: bool
    _trainer: Trainer | None
    _placed: bool
    _metric_ids: list
    _pending_optimizer_state: dict | None
    _ensure_built: Any
    _sample_output_shape: Any
    _trainable_as_compiled: Any

    # the memory_format decision of the last placement (devices.fastpaths.memory_format)
    _memory_format: str | None = None

    @property
    def _image_input(self) -> bool:
        """Whether 4-D inputs should be stored channels-last (wrapped modules with convolutions,
        unless ``memory_format=contiguous``)."""
        return self._memory_format != "contiguous" and any(
            isinstance(m, torch.nn.Conv2d) for m in self.module.modules())

    def _conv_modules(self) -> list[torch.nn.Module]:
        """The modules holding a 4-D (2-D convolution) kernel."""
        return [m for m in self.module.modules()
                if isinstance(getattr(m, "weight", None), torch.nn.Parameter) and m.weight.dim() == 4]


    @property
    def strategy(self) -> Any:
        """The strategy ``fit`` trains with (``SingleDevice`` or data parallel); None before the first use.

        Callbacks ask it who writes files: ``model.strategy.is_main`` is True on rank 0 only.
        """
        return self._trainer.strategy if self._trainer is not None else None

    @property
    def is_main(self) -> bool:
        """True on the process that prints and writes files (rank 0, or the only process)."""
        strategy = self.strategy
        return True if strategy is None else bool(strategy.is_main)

    @property
    def device(self) -> torch.device | None:
        for p in self.module.parameters() if self.module is not None else ():
            return p.device
        return self._trainer.device if self._trainer is not None else None

    def _place(self, device: torch.device) -> None:
        self.module.to(device=device, dtype=dtype_of())
        # convolution weights in channels-last memory format (NHWC kernels; cuDNN/oneDNN fast path)
        # unless memory_format says otherwise
        convs = self._conv_modules()
        from arignote.devices import fastpaths  # the fast-path rules load with the first placement (issue 32)

        self._memory_format = fastpaths.memory_format(config.get, bool(convs)).value
        fmt = torch.channels_last if self._memory_format == "channels_last" else torch.contiguous_format
        for m in convs:
            m.to(memory_format=fmt)
        from arignote.parallel.placement import apply_placement  # layers under `with arignote.device(..)`

        apply_placement(self.module, getattr(self, "layers", ()), device)
        self._placed = True
        if self.optimizer is not None:
            # the optimizer takes the weights that trained at compile: a model compiled, then frozen
            # for another model (the GAN's discriminator), first placed by its own train_on_batch
            with self._trainable_as_compiled():
                self.optimizer.build(list(self.module.parameters()) or [{"params": []}])
            if self._pending_optimizer_state is not None:
                self.optimizer.load_state_dict(self._pending_optimizer_state)
                self._pending_optimizer_state = None

    def _get_trainer(self, sample_shape: tuple | None = None, need_compile: bool = True) -> Trainer:
        if need_compile and not self.compiled:
            raise RuntimeError("the model must be compiled before training or evaluation: call "
                               "model.compile(optimizer='rmsprop', loss='categorical_crossentropy') first")
        # the metrics' tables, the strategies and the training loop load with the first trainer (issue 32)
        from arignote import metrics as metrics_mod
        from arignote import parallel
        from arignote.layers import added_metrics  # why: add_metric bookkeeping, with the first trainer
        from arignote.runtime import setup
        from arignote.training.loop import Trainer

        self._ensure_built(sample_shape)
        if self.compiled and self._metric_ids:
            self.metrics_list = metrics_mod.resolve(self._metric_ids, self.loss, self._sample_output_shape())
            self._metric_ids = []
        added_metrics.refresh(self)  # add_metric's metrics, logged after the compile metrics
        if self._trainer is None:
            # multi_gpu_model(model, gpus=N) names this model's GPUs as the device flag would
            spec = getattr(self, "device_spec", None)
            with config.override(device=spec) if spec else contextlib.nullcontext():
                chosen = setup.configured_devices()
            strategy = parallel.strategy_for(chosen)
            device = next((d for d in chosen if str(d.torch) == str(strategy.device)), chosen[0])
            setup.prepare(device, layout=getattr(strategy, "layout", None))
            for gpu in parallel.placed_gpus(getattr(self, "layers", ()), strategy.device):
                setup.prepare(gpu)  # memory policy and banner line on each GPU the layers are placed on
            precision = Precision.from_config(strategy.device)
            if not self._placed or self.device != strategy.device:
                self._place(strategy.device)
            self._trainer = Trainer(self, strategy, precision)
        return self._trainer
