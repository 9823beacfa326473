"""Old module names of the house move (issue 33), aliased for one release so pickles still load.

A pickle names the module of every class and function it holds (``arignote.layers._conv.Conv2D``);
the move gave many modules new names. :class:`MovedModules` is a meta-path finder, installed by
``import arignote``, that answers only the old names below: importing one imports the module under
its new name and returns that same object (nothing is imported until an old name is asked for, and
no module is loaded twice). Code should use the new names: the old ones warn
(``DeprecationWarning``) and go in the next release.

Example::

    >>> import importlib, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     old = importlib.import_module("arignote.metric_names")
    >>> old is importlib.import_module("arignote.metrics.names")
    True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

__all__ = ["MOVED", "MovedModules", "install"]

# old dotted name -> new dotted name (modules that only became packages keep their names)
MOVED = {
    "arignote.backend_common": "arignote.backend.common",
    "arignote._backend_names": "arignote.backend.names",
    "arignote.hyperparameter": "arignote.backend.variables",
    "arignote.backend_ops": "arignote.ops.tensor",
    "arignote.backend_nn": "arignote.ops.nn",
    "arignote.backend_control": "arignote.ops.control",
    "arignote.graph.kfunction": "arignote.ops.function",
    "arignote._flag_types": "arignote.config.types",
    "arignote.theanorc": "arignote.config.theanorc",
    "arignote.safe_mode": "arignote.config.safe_mode",
    "arignote.devices.setup": "arignote.runtime.setup",
    "arignote.memory": "arignote.runtime.memory",
    "arignote.precision": "arignote.runtime.precision",
    "arignote.legacy_interfaces": "arignote.legacy.conversions",
    "arignote.loss_functions": "arignote.losses.functions",
    "arignote.loss_classes": "arignote.losses.classes",
    "arignote.loss_names": "arignote.losses.names",
    "arignote.loss_compile": "arignote.losses.compile",
    "arignote.loss_targets": "arignote.losses.targets",
    "arignote.logit_losses": "arignote.losses.logits",
    "arignote.weighting": "arignote.losses.weighting",
    "arignote.metric_base": "arignote.metrics.base",
    "arignote.metric_classes": "arignote.metrics.confusion",
    "arignote.metric_functions": "arignote.metrics.functions",
    "arignote.metric_accumulators": "arignote.metrics.accumulators",
    "arignote.metric_wrappers": "arignote.metrics.wrappers",
    "arignote.metric_lookup": "arignote.metrics.lookup",
    "arignote.metric_names": "arignote.metrics.names",
    "arignote.metric_hits": "arignote.metrics.hits",
    "arignote.predictions": "arignote.metrics.predictions",
    "arignote.optim_kernels": "arignote.optimizers.kernels",
    "arignote.value_semantics": "arignote.layers.value_semantics",
    "arignote.graph.ops": "arignote.layers.op_layer",
    "arignote.layers._conv": "arignote.layers.convolutional.conv",
    "arignote.layers._conv_extra": "arignote.layers.convolutional.separable",
    "arignote.layers._reshaping": "arignote.layers.convolutional.reshaping",
    "arignote.layers._core_extra": "arignote.layers.core.lambda_layer",
    "arignote.layers._dropout": "arignote.layers.core.dropout",
    "arignote.layers._rnn_base": "arignote.layers.recurrent.rnn",
    "arignote.layers._rnn_cells": "arignote.layers.recurrent.cells",
    "arignote.layers._conv_rnn": "arignote.layers.recurrent.conv_rnn",
    "arignote.graph.functional": "arignote.models.functional",
    "arignote.graph.model_construction": "arignote.models.construction",
    "arignote.graph.model_config": "arignote.models.functional_config",
    "arignote.graph.model_losses": "arignote.models.output_losses",
    "arignote.graph.multi_output": "arignote.models.multi_output",
    "arignote.diagnostics.oom_inject": "arignote.training.oom_inject",
}


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module of its new name: the same object, its own spec kept."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} is now {self.new} (arignote moved it; the old name goes in the next "
                      "release)", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(self.new)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the import system set the alias's spec on the shared module: give it back its own
        module.__spec__ = self.own_spec


class MovedModules(importlib.abc.MetaPathFinder):
    """Finds the old names of :data:`MOVED` (and only those), after every other finder."""

    def __init__(self, table: dict[str, str]) -> None:
        self.table = table

    def find_spec(self, fullname: str, path=None, target=None) -> importlib.machinery.ModuleSpec | None:
        new = self.table.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Add the finder to ``sys.meta_path`` once (``import arignote`` calls this)."""
    if not any(isinstance(f, MovedModules) for f in sys.meta_path):
        sys.meta_path.append(MovedModules(MOVED))
