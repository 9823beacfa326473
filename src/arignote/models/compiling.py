"""``Model.compile`` (a mixin of :class:`arignote.models.Model`): the optimizer, loss and metrics
chosen Keras 2's way (names or arignote objects; one-output arguments keyed by the output's name;
``loss_weights``, ``sample_weight_mode``, ``weighted_metrics``, ``jit_compile``), and the model's
training loss built from them (:meth:`Compiling._with_model_losses` adds ``add_loss``'s losses).
What compile fixed for later steps is read through :mod:`.compiled_state`.

Example::

    >>> import torch
    >>> from arignote.models import Model
    >>> model = Model(torch.nn.Linear(4, 2))
    >>> model.compile("sgd", "mse", metrics=["mae"])
    >>> model.compiled, model.metrics_names
    (True, ['loss', 'mae'])
"""

from __future__ import annotations

from typing import Any

# losses, metrics, optimizers and the step compiler are imported inside compile: building a model
# does not pay for them (issue 32, the first-use import time; tests/test_first_use_imports.py)

__all__ = ["Compiling"]


class Compiling:
    """``compile`` and the loss it builds (``self`` is a :class:`~arignote.models.Model`)."""

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

    def _output_layer_name(self) -> str:
        """The name Keras 2 keys a one-output model's compile arguments by: its last layer's."""
        layers = getattr(self, "layers", None) or []
        return getattr(layers[-1], "name", "output") if layers else "output"
