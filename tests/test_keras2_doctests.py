"""The docstring examples of the Keras 2 utility modules run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

from arignote import config

MODULES = [
    "arignote.metrics.names", "arignote.datasets._get_file", "arignote.datasets._sequences",
    "arignote.preprocessing.sequence", "arignote.preprocessing.text", "arignote.preprocessing.image_utils",
    "arignote.utils.np_utils", "arignote.utils.generic_utils", "arignote.utils.io_utils",
    "arignote.utils.progbar",
    "arignote.utils.layer_utils", "arignote.utils.vis_utils", "arignote.callbacks.lambda_callback",
    "arignote.callbacks.base_logger", "arignote.wrappers.scikit_learn", "arignote.backend.common",
    "arignote.models.loading", "arignote.preprocessing.affine_transformations",
    "arignote.preprocessing.iterator", "arignote.preprocessing.transforms",
    "arignote.metrics.base", "arignote.metrics", "arignote.utils.conv_utils",
    "arignote.losses", "arignote.losses.functions", "arignote.losses.classes", "arignote.losses.names",
    "arignote.losses.compile", "arignote.losses.targets", "arignote.layers.value_semantics",
    "arignote.metrics.functions", "arignote.metrics.accumulators", "arignote.metrics.wrappers",
    "arignote.metrics.lookup",
    "arignote.layers.base", "arignote.layers.layer_args", "arignote.layers.input_spec",
    "arignote.layers.layer_tensors", "arignote.layers.serialization",
    "arignote.models.model", "arignote.models.batch_methods", "arignote.models.compiled_state",
    "arignote.models.fit_data", "arignote.models.fit_setup", "arignote.models.trainer_setup",
    "arignote.models.weights_and_saving", "arignote.models.functional", "arignote.models.construction",
    "arignote.models.output_losses", "arignote.models.multi_output", "arignote.models.functional_config",
]
NEEDS = {"arignote.utils.io_utils": "h5py", "arignote.utils.vis_utils": "pydot",
         "arignote.preprocessing.image_utils": "PIL"}


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_hold(module, tmp_path, monkeypatch):
    if module in NEEDS:
        pytest.importorskip(NEEDS[module])
    monkeypatch.chdir(tmp_path)
    with config.override(device="cpu", print_active_device=False):
        result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
