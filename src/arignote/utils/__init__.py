"""Keras 2 ``utils``: ``to_categorical``, ``normalize``, ``Sequence``, ``get_file``, ``HDF5Matrix``,
``get_custom_objects`` / ``CustomObjectScope``, ``Progbar``, ``print_summary``, ``plot_model`` /
``model_to_dot`` and ``multi_gpu_model``, under the same module names as Keras 2 (``np_utils``,
``data_utils``, ``io_utils``, ``generic_utils``, ``layer_utils``, ``vis_utils``, ``multi_gpu_utils``).

Example::

    >>> from arignote.utils import to_categorical, np_utils
    >>> to_categorical([1], 2).tolist(), np_utils.to_categorical is to_categorical
    ([[0.0, 1.0]], True)
"""

from arignote.errors import keras_names_missing
from arignote.utils import (
                            data_utils,
                            generic_utils,
                            io_utils,
                            layer_utils,
                            multi_gpu_utils,
                            np_utils,
                            vis_utils,
)
from arignote.utils.data_utils import Sequence, get_file
from arignote.utils.enqueuers import GeneratorEnqueuer, OrderedEnqueuer, SequenceEnqueuer
from arignote.utils.generic_utils import CustomObjectScope, custom_object_scope, get_custom_objects
from arignote.utils.io_utils import HDF5Matrix
from arignote.utils.layer_utils import convert_all_kernels_in_model, get_source_inputs, print_summary
from arignote.utils.multi_gpu_utils import multi_gpu_model
from arignote.utils.np_utils import normalize, to_categorical
from arignote.utils.progbar import Progbar
from arignote.utils.vis_utils import model_to_dot, plot_model

__all__ = ["CustomObjectScope", "GeneratorEnqueuer", "HDF5Matrix", "OrderedEnqueuer", "Progbar", "Sequence",
           "SequenceEnqueuer", "convert_all_kernels_in_model", "custom_object_scope", "data_utils",
           "generic_utils", "get_custom_objects", "get_file", "get_source_inputs", "io_utils", "layer_utils",
           "model_to_dot", "multi_gpu_model", "multi_gpu_utils", "normalize", "np_utils", "plot_model",
           "print_summary", "to_categorical", "vis_utils"]


# Keras 2.3.1 names not provided yet: a clear error instead of a bare AttributeError
__getattr__ = keras_names_missing('arignote.utils', {
})
