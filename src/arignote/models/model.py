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

This module holds construction, ``compile``, ``fit``/``evaluate``/``predict`` and ``summary``; the
rest of ``Model`` comes from one mixin per concern: :mod:`.weights_and_saving` (weights, saving
hooks, training state), :mod:`.batch_methods` (``*_on_batch``), :mod:`.fit_data` (packing the user's
arrays, sample and class weights), :mod:`.trainer_setup` (device, strategy, trainer),
:mod:`.compiled_state` (what ``compile`` fixed), :mod:`.generators` (``*_generator``) and
:mod:`arignote.models.functional` (the Keras 2 ``Network`` side); fit's callbacks and fast-path facts
are in :mod:`.fit_setup`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from arignote import config
from arignote.config.safe_mode import scope as safe_mode_scope
from arignote.layers.base import register_model_class
from arignote.layers.bookkeeping import is_metric, is_model, track_metric
from arignote.legacy import conversions as legacy_interfaces
from arignote.models import functional
from arignote.models.batch_methods import BatchMethods
from arignote.models.compiled_state import CompiledState
from arignote.models.construction import construction_args
from arignote.models.fit_data import FitData
from arignote.models.functional import Functional
from arignote.models.generators import GeneratorMethods
from arignote.models.trainer_setup import TrainerSetup
from arignote.models.weights_and_saving import WeightsAndSaving

if TYPE_CHECKING:
    from arignote.callbacks.base import History

# What compile, fit, evaluate, predict and summary use (the training loop, losses, metrics,
# optimizers, callbacks, device setup, the memory plan) is imported inside them: building a model
# does not pay for it (issue 32, the first-use import time; tests/test_first_use_imports.py).

__all__ = ["Model"]


class Model(WeightsAndSaving, BatchMethods, FitData, TrainerSetup, CompiledState, Functional,
            GeneratorMethods):
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
        inputs arrive packed side by side (:mod:`arignote.graph.network`)."""
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

    def _output_layer_name(self) -> str:
        """The name Keras 2 keys a one-output model's compile arguments by: its last layer's."""
        layers = getattr(self, "layers", None) or []
        return getattr(layers[-1], "name", "output") if layers else "output"

    # ------------------------------------------------------------------ compile

    def _one_output_loss(self, loss: Any) -> Any:
        """The compiled ``loss`` of a one-output model, scaled by its ``loss_weights`` (None: no loss)."""
        from arignote import losses  # why: the losses load with the first compile (issue 32)
        from arignote.models.compiled_state import scaled_loss  # why: as losses

        base = losses.compiled(loss) if loss is not None else None
        return scaled_loss(base, self._loss_weight) if base is not None and self._loss_weight != 1.0 else base

    def _with_model_losses(self, base: Any, wrap: bool | None = None) -> Any:
        """``base`` plus the model-level losses (``add_loss``) when it has some when compiled, or is
        subclassed (its call adds them at each forward); ``wrap``: that decision, kept for an unpickled
        copy to rebuild the same loss."""
        from arignote.models import output_losses as model_losses  # why: as the losses (issue 32)

        if wrap is None:
            wrap = self._is_graph or self._subclassed or bool(self._model_losses)
        self._loss_wrapped = wrap
        return model_losses.with_model_losses(self, base) if self._loss_wrapped else base

    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Any = None,
                loss_weights: Any = None, sample_weight_mode: Any = None, weighted_metrics: Any = None,
                jit_compile: Any = None, **kwargs: Any) -> None:
        """Choose the optimizer, loss and metrics (names, or arignote objects), Keras 2 style.

        ``sample_weight_mode='temporal'``: ``fit(sample_weight=...)`` takes one weight per time step,
        shape ``(samples, steps)`` (a dict or list per output for several outputs).
        ``weighted_metrics``: metrics averaged with the sample (and class) weights, logged after the
        plain ones (a name already taken gets ``_1``, as Keras 2.3).
        ``jit_compile`` (tf.keras's name): True/'on' runs the steps through ``torch.compile``
        (``training/compiled.py``), or a ``torch.compile`` mode; False off; None: the ``jit`` flag.

        Example: ``model.compile(optimizer=RMSprop(lr=1e-4), loss="categorical_crossentropy",
        metrics=["accuracy"], jit_compile=True)``.
        """
        # losses, metrics, optimizers and the step compiler load with the first compile (issue 32)
        from arignote import metrics as metrics_mod
        from arignote import optimizers
        from arignote.models import compile_args
        from arignote.models import output_losses as model_losses
        from arignote.models.multi_output import compile_outputs
        from arignote.training import compiled as compiled_steps
        from arignote.training import sample_weights

        if kwargs.get("target_tensors") is not None:
            raise TypeError("compile(target_tensors=...) is deliberately not supported (Keras 2's targets "
                            "fed from backend tensors, a TensorFlow input-pipeline idiom): pass the targets "
                            "as y to fit / train_on_batch / evaluate (arrays, a generator, a Sequence or a "
                            "DataLoader)")
        unsupported = sorted(k for k in kwargs if kwargs[k] is not None)
        if unsupported:
            raise TypeError(f"compile() does not support {', '.join(unsupported)}; arguments: optimizer, "
                            "loss, metrics, loss_weights, sample_weight_mode, weighted_metrics, jit_compile")
        self.jit_compile = compiled_steps.check_jit_compile(jit_compile)
        # a subclassed model's call may add its losses (add_loss): checked at the first batch (Keras 2.3.1
        # compiles a subclassed model at its first fit)
        if loss is None and not self._subclassed and not model_losses.has_losses(self):
            raise ValueError("compile() needs a loss, e.g. loss='categorical_crossentropy' (loss=None "
                             "only for a model with losses of its own: add_loss or regularizers)")
        names = self.output_names if self._is_graph else ["output"]
        multi = self._is_graph and len(self.outputs) > 1
        self._loss_weight = 1.0
        if not multi:  # Keras 2.3.1 takes a one-output model's arguments keyed by its output's name too
            out = names[0] if self._is_graph else self._output_layer_name()
            loss = compile_args.single_output(loss, out, "loss")
            metrics = compile_args.single_output(metrics, out, "metrics")
            weighted_metrics = compile_args.single_output(weighted_metrics, out, "weighted_metrics")
            self._loss_weight = compile_args.loss_weight(loss_weights, out)
        if isinstance(metrics, str):
            metrics = [metrics]
        if isinstance(weighted_metrics, str):
            weighted_metrics = [weighted_metrics]
        self._weight_modes = sample_weights.modes_per_output(sample_weight_mode, names)
        self.sample_weight_mode = sample_weight_mode
        self.loss = loss
        self.optimizer = optimizers.get(optimizer)
        if multi:
            base, self.metrics_list, _ = compile_outputs(self, loss, loss_weights, metrics, weighted_metrics)
            self._metric_ids = []
        else:
            base = self._one_output_loss(loss)
            # metrics resolve against the output shape ('acc' is binary for one output unit), known once built
            self._metric_ids = ([(m, False) for m in metrics or []]
                                + [(m, True) for m in weighted_metrics or []])
            self.metrics_list = metrics_mod.resolve(self._metric_ids, loss)
        if self._is_graph:
            # a custom loss may read graph tensors, and take K.gradients with respect to them
            self.module.keep_values = model_losses.any_custom_loss(loss)
            self.module.track_gradients(model_losses.captured_tensors(loss))
        self.loss_fn = self._with_model_losses(base)
        self.metrics_names = ["loss", *[m.name for m in self.metrics_list]]
        self._compile_metrics = metrics or []  # Keras 2.3.1's name for the metrics compile was given
        self._compile_args = {"optimizer": optimizer, "loss": loss, "metrics": metrics if multi else
                              list(metrics or [])}
        if loss_weights is not None:
            self._compile_args["loss_weights"] = loss_weights
        if sample_weight_mode is not None:
            self._compile_args["sample_weight_mode"] = sample_weight_mode
        if weighted_metrics:
            self._compile_args["weighted_metrics"] = weighted_metrics
        self._trainer = None
        if self._placed:
            self.optimizer.build(list(self.module.parameters()) or [{"params": []}])
        # Keras 2 fixes here which weights train: `trainable` set after compile (the GAN recipe:
        # discriminator.trainable = False, then compile the combined model) waits for the next compile
        self._trainable_at_compile = self._trainable_now()

    # ------------------------------------------------------------------ training API

    def fit(self, x: Any = None, y: Any = None, batch_size: int | str | None = None, epochs: int = 1,
            verbose: int = 1, callbacks: list | None = None, validation_split: float = 0.0,
            validation_data: Any = None, shuffle: bool | str = True, class_weight: Any = None,
            sample_weight: Any = None, initial_epoch: int = 0,
            steps_per_epoch: int | None = None, accumulate: int = 1,
            validation_batch_size: int | None = None, validation_steps: int | None = None,
            validation_freq: Any = 1, max_queue_size: int = 10, workers: int = 1,
            use_multiprocessing: bool = False, **kwargs: Any) -> History:
        """Train for ``epochs`` epochs; returns the :class:`History` (also ``model.history``).

        ``x, y``: arrays (numpy or tensors; images channels-last ``(N, H, W, C)``), or ``x`` alone as
        a ``Sequence``, ``DataLoader``, generator or other iterable of ``(x, y)`` batches (a generator
        needs ``steps_per_epoch``, a validation generator ``validation_steps``). A ``Sequence``'s
        batches are visited in a shuffled order (``shuffle``), fetched ahead by ``workers`` threads
        (processes with ``use_multiprocessing=True``; up to ``max_queue_size``), and split over the
        ranks under data parallel.
        ``shuffle``: arrays' rows in a new order every epoch (True), in order (False), or whole
        batches in a new order (``'batch'``, as Keras 2's ``batch_shuffle``).
        ``validation_freq``: validate every N epochs, or at the listed (1-based) epochs.
        ``sample_weight`` (one weight per sample, or per time step with ``compile(sample_weight_mode=
        'temporal')``; a list or dict per output), ``class_weight`` (``{class: weight}``, per output
        likewise) and ``validation_data=(x_val, y_val, val_sample_weight)`` weigh the loss as Keras
        2.3.1 does (:mod:`arignote.losses.weighting`); a generator may yield ``(x, y, sample_weight)``.
        ``accumulate=k`` runs each batch as ``k`` micro-batches and one optimizer step (same
        gradients, ``1/k`` of the activation memory). ``batch_size="auto"`` searches the largest
        batch that fits the device (array data only). A step that runs out of memory is redone as
        micro-batches (``memory.on_oom``; issue 7). Keras 1's ``nb_epoch`` still means ``epochs``
        (with Keras 2.3.1's warning; :mod:`arignote.legacy.conversions`).
        """
        # the training loop, callbacks, device setup and the memory plan load with the first fit (issue 32)
        from arignote.callbacks.base import CallbackList
        from arignote.callbacks.stopping import TerminateOnNaN
        from arignote.diagnostics import memory_plan
        from arignote.diagnostics.batch_size import trainer_batch_size
        from arignote.models.fit_setup import callback_validation_data, fit_callbacks, fit_facts
        from arignote.runtime import setup
        from arignote.training import batch_checks, inputs
        from arignote.training.checks import check_steps
        from arignote.training.data import is_array

        epochs = legacy_interfaces.fit_kwargs(kwargs, epochs, Model.fit)
        if not self.compiled:
            self._get_trainer()  # raises the "compile first" error
        auto = isinstance(batch_size, str) and batch_size == "auto"  # issue 7: search the batch size
        steps_per_epoch = check_steps(steps_per_epoch, "steps_per_epoch")  # len(x) / 32 runs ceil() steps
        validation_steps = check_steps(validation_steps, "validation_steps")
        batch_size = inputs.check_fit_args(None if auto else batch_size, epochs, initial_epoch, accumulate,
                                           steps_per_epoch)
        inputs.check_queue_args(validation_steps, validation_freq, max_queue_size, workers)
        w = self._sample_weights(x, y, sample_weight, class_weight)
        raw_x, raw_y, raw_validation = x, y, validation_data  # as given: callback.validation_data
        x, y = self._pack(x, y, targets=True)
        if isinstance(validation_data, (list, tuple)) and len(validation_data) in (2, 3) and (
                is_array(validation_data[0]) or isinstance(validation_data[0], (list, dict))):
            vw = self._sample_weights(validation_data[0], validation_data[1],
                                      validation_data[2] if len(validation_data) == 3 else None, None)
            layouts = self._packed_layouts()
            vx, vy = self._pack(validation_data[0], validation_data[1], targets=True)
            if self._packed_layouts() != layouts:  # one packed layout per fit (variable-length inputs)
                raise ValueError(f"validation_data: per-sample shapes {self._packed_layouts()} differ from "
                                 f"the training data's {layouts}; pad both to the same lengths")
            validation_data = (vx, vy, vw)
        plan = inputs.plan_fit(self, x, y, batch_size, validation_split, validation_data, steps_per_epoch,
                               w=w, class_weight=class_weight, validation_batch_size=validation_batch_size)
        inputs.check_stateful_samples(self, plan.samples, None if auto else batch_size)
        plan.val_steps, plan.workers, plan.max_queue_size = validation_steps, workers, max_queue_size
        plan.use_multiprocessing = use_multiprocessing
        trainer = self._get_trainer(plan.sample_shape)
        self._check_trainable_weights_consistency()
        train, val = inputs.load(plan, trainer)
        setup.fast_paths(fit_facts(self, trainer, train))
        if steps_per_epoch is None and getattr(train, "length", None) is not None:
            plan.steps = train.length  # global batches: the same for any number of processes
        trainer.accumulate = accumulate
        trainer.new_oom_guard()
        if auto:
            plan.use_batch_size(trainer_batch_size(trainer, train).batch, train.n)

        self._memory_plan = memory_plan.FitPlan.of(trainer, train, plan.batch_size)  # measured when shown
        memory_plan.announce(self._memory_plan, verbose=verbose, is_main=trainer.strategy.is_main)
        names = trainer.metric_names
        metrics = names + ([f"val_{k}" for k in names] if val is not None else [])
        cbs = fit_callbacks(self, callbacks, verbose, plan, trainer)
        cblist = CallbackList(cbs, model=self, params=plan.callback_params(epochs=epochs, verbose=verbose,
                                                                           metrics=metrics))
        given = callback_validation_data(self, raw_x, raw_y, sample_weight, class_weight, raw_validation,
                                         validation_split)
        for cb in cblist if given is not None else ():
            cb.validation_data = given  # Keras 2.3.1 sets it on every callback of the fit
        trainer.skip_nonfinite = any(isinstance(cb, TerminateOnNaN) for cb in cblist)
        if trainer.skip_nonfinite:
            batch_checks.let_nonfinite_through(train, val)
        with self._trainable_as_compiled():
            trainer.fit(train, val, plan, epochs=epochs, initial_epoch=initial_epoch, shuffle=shuffle,
                        callbacks=cblist, validation_freq=validation_freq)
        return self.history


    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = None, verbose: int = 1,
                 sample_weight: Any = None, callbacks: list | None = None, steps: int | None = None,
                 max_queue_size: int = 10, workers: int = 1, use_multiprocessing: bool = False) -> Any:
        """``[loss, *metrics]`` over the data (a scalar when the model has no metric, as Keras).
        ``sample_weight``: as in :meth:`fit` (the loss is then ``sum(w * loss) / samples``).
        ``workers``/``max_queue_size``: threads fetching a ``Sequence``'s batches ahead, as in fit."""
        # the loop's input checks and the callbacks load with the first use (import time, issue 32)
        from arignote.callbacks.base import CallbackList
        from arignote.training import inputs
        from arignote.training.checks import check_steps

        batch_size = inputs.check_batch(batch_size)
        steps = check_steps(steps)
        inputs.check_queue_args(None, 1, max_queue_size, workers)
        w = self._sample_weights(x, y, sample_weight, None)
        x, y = self._pack(x, y, targets=True)
        plan = inputs.plan_eval(self, x, y, steps, w=w)
        inputs.check_stateful_samples(self, plan.samples, batch_size)
        plan.workers, plan.max_queue_size = workers, max_queue_size
        plan.use_multiprocessing = use_multiprocessing
        trainer = self._get_trainer(plan.sample_shape)
        data = inputs.load_eval(plan, trainer)
        cblist = CallbackList(callbacks or [], model=self, params={"verbose": verbose, "steps": steps})
        cblist.on_test_begin()
        logs = trainer.evaluate(data, batch_size, cblist)
        cblist.on_test_end(logs)
        if verbose:
            print(" - ".join(f"{k}: {v:.4f}" for k, v in logs.items()))
        values = trainer.last_values  # a list: two outputs may carry the same name (Keras 2's)
        return values[0] if len(values) == 1 else values

    def predict(self, x: Any, batch_size: int | None = None, verbose: int = 0,
                callbacks: list | None = None, steps: int | None = None, max_queue_size: int = 10,
                workers: int = 1, use_multiprocessing: bool = False) -> np.ndarray:
        """Model outputs for ``x`` as a numpy array (inference mode, batch by batch on the device); for
        0 samples, an empty ``(0, *output shape)`` array."""
        # the loop's input checks and the callbacks load with the first use (import time, issue 32)
        from arignote.callbacks.base import CallbackList
        from arignote.training import inputs
        from arignote.training.checks import check_steps

        batch_size = inputs.check_batch(batch_size)
        steps = check_steps(steps)
        inputs.check_queue_args(None, 1, max_queue_size, workers)
        x, _ = self._pack(x, None)
        out = inputs.empty_prediction(self, lambda shape: self._get_trainer(shape, need_compile=False), x)
        if out is None:  # (0 samples: (0, *output shape), no batch, no callback)
            plan = inputs.plan_eval(self, x, None, steps, need_targets=False)
            inputs.check_stateful_samples(self, plan.samples, batch_size, predicting=True)
            plan.workers, plan.max_queue_size = workers, max_queue_size
            plan.use_multiprocessing = use_multiprocessing
            trainer = self._get_trainer(plan.sample_shape, need_compile=False)
            data = inputs.load_eval(plan, trainer)
            cblist = CallbackList(callbacks or [], model=self, params={"verbose": verbose, "steps": steps})
            cblist.on_predict_begin()
            out = trainer.predict(data, batch_size, cblist)
            cblist.on_predict_end()
        out = out.float() if out.dtype in (torch.bfloat16, torch.float16) else out
        if self._is_graph and len(self.outputs) > 1:  # packed side by side: one array per output
            return [t.numpy() for t in self.module.packed_outputs().unpack(out)]
        return out.numpy()

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
