"""Keras 2 ``utils``: ``to_categorical``, ``normalize``, ``Sequence``, ``get_file``, ``HDF5Matrix``,
``get_custom_objects`` / ``CustomObjectScope``, ``Progbar``, ``print_summary``, ``plot_model`` /
``model_to_dot`` and ``multi_gpu_model``, under the same module names as Keras 2 (``np_utils``,
``data_utils``, ``io_utils``, ``generic_utils``, ``layer_utils``, ``vis_utils``, ``multi_gpu_utils``).

Example::

    >>> from arignote.utils import to_categorical, np_utils
    >>> to_categorical([1], 2).tolist(), np_utils.to_categorical is to_categorical
    ([[0.0, 1.0]], True)
"""

from arignote._lazy import lazy_namespace
from arignote.errors import keras_names_missing

# public name -> submodule defining it, imported on first use (data_utils brings every dataset,
# io_utils h5py, vis_utils pydot: a model's compile needs only generic_utils)
_NAMES = {
    **{m: m for m in ("data_utils", "generic_utils", "io_utils", "layer_utils", "multi_gpu_utils", "np_utils",
                      "vis_utils")},
    "Sequence": "data_utils", "get_file": "data_utils",
    "GeneratorEnqueuer": "enqueuers", "OrderedEnqueuer": "enqueuers", "SequenceEnqueuer": "enqueuers",
    "CustomObjectScope": "generic_utils", "custom_object_scope": "generic_utils",
    "get_custom_objects": "generic_utils",
    "HDF5Matrix": "io_utils",
    "convert_all_kernels_in_model": "layer_utils", "get_source_inputs": "layer_utils",
    "print_summary": "layer_utils",
    "multi_gpu_model": "multi_gpu_utils",
    "normalize": "np_utils", "to_categorical": "np_utils",
    "Progbar": "progbar",
    "model_to_dot": "vis_utils", "plot_model": "vis_utils",
}

__all__ = ["CustomObjectScope", "GeneratorEnqueuer", "HDF5Matrix", "OrderedEnqueuer", "Progbar", "Sequence",
           "SequenceEnqueuer", "convert_all_kernels_in_model", "custom_object_scope", "data_utils",
           "generic_utils", "get_custom_objects", "get_file", "get_source_inputs", "io_utils", "layer_utils",
           "model_to_dot", "multi_gpu_model", "multi_gpu_utils", "normalize", "np_utils", "plot_model",
           "print_summary", "to_categorical", "vis_utils"]


# Keras 2.3.1 names not provided yet: a clear error instead of a bare AttributeError
__getattr__, __dir__ = lazy_namespace(
    __name__, {k: f"{__name__}.{v}" for k, v in _NAMES.items()}, globals(),
    keras_names_missing('arignote.utils', {
    }))
