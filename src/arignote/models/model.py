"""``Model``: Keras 2's compile/fit/evaluate/predict around any ``torch.nn.Module``.

Example::

    >>> import numpy as np, torch
    >>> from arignote.models import Model
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    >>> model = Model(net)
    >>> model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    >>> x, y = np.random.rand(32, 4).astype("float32"), np.random.randint(0, 3, 32)
    >>> loss, acc = model.evaluate(x, y, verbose=0)

(With a wrapped module, ``sparse_categorical_crossentropy`` and ``categorical_crossentropy``
expect probabilities, as in Keras: end the network with a softmax.)

This module holds construction, the subclassed model's hooks, ``summary`` and ``from_config``; the
rest of ``Model`` comes from one mixin per concern: :mod:`.fit_evaluate_predict` (``fit``,
``evaluate``, ``predict``), :mod:`.compiling` (``compile``), :mod:`.weights_and_saving` (weights,
saving hooks, training state), :mod:`.batch_methods` (``*_on_batch``), :mod:`.fit_data` (packing
the user's arrays, sample and class weights), :mod:`.trainer_setup` (device, strategy, trainer),
:mod:`.compiled_state` (what ``compile`` fixed), :mod:`.generators` (``*_generator``) and
:mod:`arignote.models.functional` (the Keras 2 ``Network`` side); fit's callbacks and fast-path facts
are in :mod:`.fit_setup`.
"""

from __future__ import annotations

from typing import Any

import torch

from arignote import config
from arignote.config.safe_mode import scope as safe_mode_scope
from arignote.layers.base import register_model_class
from arignote.layers.bookkeeping import is_metric, is_model, track_metric
from arignote.legacy import conversions as legacy_interfaces
from arignote.models import functional
from arignote.models.batch_methods import BatchMethods
from arignote.models.compiled_state import CompiledState
from arignote.models.compiling import Compiling
from arignote.models.construction import construction_args
from arignote.models.fit_data import FitData
from arignote.models.fit_evaluate_predict import FitEvaluatePredict
from arignote.models.functional import Functional
from arignote.models.generators import GeneratorMethods
from arignote.models.trainer_setup import TrainerSetup
from arignote.models.weights_and_saving import WeightsAndSaving

# What compile, fit, evaluate, predict and summary use (the training loop, losses, metrics,
# optimizers, callbacks, device setup, the memory plan) is imported inside them (here and in the
# mixins): building a model does not pay for it (issue 32, the first-use import time;
# tests/test_first_use_imports.py).

__all__ = ["Model"]


class Model(FitEvaluatePredict, Compiling, WeightsAndSaving, BatchMethods, FitData, TrainerSetup,
            CompiledState, Functional, GeneratorMethods):
    """Wrap ``module`` (a ``torch.nn.Module``) with the Keras 2 training API.

    Attributes: ``module`` (the torch module), ``device`` (``torch.device`` once placed),
    ``optimizer`` (an :mod:`arignote.optimizers` optimizer after ``compile``), ``history``,
    ``stop_training``, ``resume_epoch`` (set by BackupAndRestore through
    :meth:`load_training_state`), ``epochs_done`` (finished epochs; an interrupted one does not
    count), ``epoch_interrupted`` (True in ``on_epoch_end`` of an epoch that ``stop_training`` cut
    short), ``device_stats`` (the last epoch's device memory peaks: ``cpu_peak_rss_mib``,
    ``cuda0_peak_allocated_mib``...; also shown in the progress line).
    """

    @legacy_interfaces.support("model_constructor")  # Keras 1's Model(input=, output=), with Keras's warning
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """``Model(inputs, outputs, name=None)`` (the functional API, also as keywords), ``Model(module,
        name=None)`` for a torch module, or ``Model()`` from a subclass that defines ``call``."""
        kind, spec = construction_args(args, kwargs)
        self._order = None
        self._model_losses: list = []
        self._y_packing: Any = None
        self._subclassed = False
        module = spec.get("module")
        self.module = module
        self.name = spec.get("name") or (type(module).__name__.lower() if module is not None else "model")
        if kind == "empty" and type(self).call is not Model.call:
            self.module = functional._CallModule(self)
            self._subclassed = True
            self.name = spec.get("name") or functional.auto_name(type(self).__name__.lower())
        self.optimizer: Any = None
        self.loss: Any = None
        self.loss_fn: Any = None
        self.metrics_list: list[Any] = []
        self.metrics_names: list[str] = []
        self.stop_training = False
        self.resume_epoch: int | None = None
        self.epochs_done = 0
        self.epoch_interrupted = False  # the last epoch ended early (stop_training during its batches)
        self.device_stats: dict[str, float] = {}  # the last epoch's device figures (DeviceStatsMonitor)
        # the callbacks load with the first model, not with the class (import time, issue 32)
        from arignote.callbacks.base import History

        self.history = History()
        self._trainer: Any = None  # a training.loop.Trainer once compiled
        self._placed = False
        self._compile_args: dict[str, Any] = {}
        self._metric_ids: list[Any] = []
        self._pending_optimizer_state: dict | None = None  # from load_model, applied once placed
        self.dtype = spec["dtype"]  # Keras 2.3.1's Network(dtype=...); None: floatX when read
        if kind == "graph":
            self._init_functional(spec["inputs"], spec["outputs"], spec["name"])
        if not spec["trainable"]:
            self.trainable = False

    def __setattr__(self, name: str, value: Any) -> None:
        # a subclassed model's layers become children of its module (parameters, state_dict, placement)
        if self.__dict__.get("_subclassed") and isinstance(value, torch.nn.Module) and name != "module":
            self.module.add_module(name, value)
        elif self.__dict__.get("_subclassed") and is_model(value):
            self.module.add_module(name, value.module)  # a model it holds: its weights are the model's
        if is_metric(value):  # Keras 2.3.1 tracks a metric attribute (its place in order)
            track_metric(self, value)
        object.__setattr__(self, name, value)

    @property
    def dtype(self) -> str:
        """Keras 2.3.1's ``Network.dtype``: the type of the model's own weights (``add_weight``),
        ``Model(dtype=...)`` or floatX, read when asked (building a model reads no configuration)."""
        return self.__dict__.get("_dtype") or config.get("floatX")

    @dtype.setter
    def dtype(self, value: Any) -> None:
        self.__dict__["_dtype"] = value

    def add_weight(self, *args: Any, **kwargs: Any) -> torch.nn.Parameter:
        """Keras 2.3.1 ``Network.add_weight(name, shape, dtype=None, initializer=None, regularizer=None,
        trainable=True, constraint=None)``: a weight of a subclassed model's own, in ``model.dtype``
        unless ``dtype`` is given (:mod:`arignote.models.own_weights`)."""
        from arignote.models import own_weights  # why: loaded by the first add_weight (first-use imports)

        return own_weights.add_weight(self, self._own_weights_module(), *args, **kwargs)

    def _own_weights_module(self) -> torch.nn.Module:
        if self.module is None:  # a subclass of Model without call (yet): it holds its weights all the same
            self.module = functional._CallModule(self)
        if not isinstance(self.module, functional._CallModule):
            raise ValueError(f"add_weight is for a subclassed model (one defining call); {self.name} is a "
                             "functional model or wraps a torch module: give the weight to a layer of it "
                             "(a custom Layer's add_weight)")
        return self.module

    def _set_inputs(self, inputs: Any, outputs: Any = None, training: Any = None) -> None:
        """Keras 2.3.1 ``Model._set_inputs``: set the input (and output) tensors after construction
        (:mod:`arignote.models.set_inputs`)."""
        from arignote.models.set_inputs import set_inputs  # why: loaded on first use (first-use imports)

        set_inputs(self, inputs, outputs, training)

    def add_metric(self, value: Any, name: str | None = None) -> None:
        """Keras 2.3.1 ``add_metric(value, name=None)``: a tensor (its running mean is logged as
        ``name``) or ``metric(y)``; in a subclassed model's ``call``, or on a functional model's graph
        tensors (:mod:`arignote.layers.added_metrics`)."""
        from arignote.layers import added_metrics  # why: loaded by the first add_metric (first-use imports)

        added_metrics.add_metric(self, value, name)

    @property
    def metrics(self) -> list:
        """Keras 2.3.1 ``model.metrics``: the compile metrics, then those ``add_metric`` (or a metric
        attribute) gave the model, then its layers'."""
        from arignote.layers import added_metrics  # why: loaded on first use (first-use imports)

        compiled = [m for m in self.metrics_list if not isinstance(m, added_metrics.Reported)]
        return compiled + added_metrics.model_metrics(self)

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        """Subclassed models define the forward computation here (Keras 2)."""
        raise NotImplementedError(f"{type(self).__name__} must define call(inputs)")

    # ------------------------------------------------------------------ hooks for subclasses

    def _ensure_built(self, sample_shape: tuple | None) -> None:
        if self.module is None:
            raise ValueError("this Model wraps no module: pass one, Model(my_torch_module), or build a "
                             "functional model, Model(inputs, outputs)")
        if self._subclassed and not self.__dict__.get("_built_subclass"):
            if sample_shape is None:
                raise ValueError(f"{self.name} is a subclassed model: call it on data (fit/predict, or "
                                 "model(x)) before asking for its weights")
            was = self.module.training
            self.module.eval()
            with torch.no_grad():
                self.module(torch.zeros(2, *sample_shape))
            self.module.train(was)
            self._built_subclass = True

    def expected_input_shape(self) -> tuple | None:
        """Per-sample input shape the model takes (None when unknown, e.g. a wrapped module); several
        inputs arrive packed side by side (:mod:`arignote.graph.packing`)."""
        if self._is_graph:
            if len(self._feed_inputs) == 1:
                return tuple(self._feed_inputs[0].shape[1:])
            if not self._feed_inputs:  # every input is an Input(tensor=...)
                return None
            width = (self.module.input_layout or self.module.input_packing).width
            return None if width is None else (width,)
        return None

    def _sample_output_shape(self) -> tuple | None:
        """Per-sample output shape (None when unknown or several outputs)."""
        if self._is_graph and len(self.outputs) == 1:
            return tuple(self.outputs[0].shape[1:])
        return None

    @property
    def output_shape(self) -> Any:
        """Keras ``model.output_shape`` with the batch dim (None when unknown, e.g. a wrapped module)."""
        if self._is_graph:
            shapes = [t.shape for t in self.outputs]
            return shapes[0] if len(shapes) == 1 else shapes
        return None

    # ------------------------------------------------------------------ summary and config

    def summary(self, print_fn: Any = None, line_length: Any = None, positions: Any = None) -> None:
        # the table and the memory plan load with the first summary (import time, issue 32)
        from arignote.diagnostics.memory_plan import summary_lines
        from arignote.models import summary

        self._ensure_built(None)
        self._check_trainable_weights_consistency()
        if self._is_graph:
            summary.print_summary(summary.graph_summary(self), print_fn)

            summary.print_summary(summary_lines(self), print_fn)  # issue 7: the memory plan
            return
        rows = summary.module_rows(self.module, hidden=self.__dict__.get("_own_weights"),  # add_weight's
                                   held=self._held_models())
        total = sum(p.numel() for p in self.module.parameters())
        trainable = sum(p.numel() for p in self.module.parameters() if p.requires_grad)
        summary.print_summary(summary.render(rows, total, trainable, title=self.name), print_fn)

        summary.print_summary(summary_lines(self), print_fn)  # issue 7: the memory plan

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None,
                    safe_mode: bool | None = None) -> Model:
        """Rebuild a functional model from :meth:`get_config` (Keras 2 ``model_config`` layout);
        ``safe_mode`` (None: the enclosing loading call's, else the ``saving.safe_mode`` flag) refuses
        a function stored as bytecode (:mod:`arignote.config.safe_mode`)."""
        if not isinstance(config, dict) or "layers" not in config or "input_layers" not in config:
            raise ValueError("Model.from_config takes a functional model config (name, layers, input_layers, "
                             "output_layers) as get_config() returns it")
        with safe_mode_scope(safe_mode, "Model.from_config"):
            return cls._functional_from_config(config, custom_objects)


register_model_class(Model)  # a model met as a layer (TimeDistributed(vision_model)) is rebuilt by its class
