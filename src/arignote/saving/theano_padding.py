"""Keras 2's Theano ``padding='same'``, kept from a file through the model and back into files.

Keras 2's Theano backend pads ``'same'`` its own way (border mode ``'half'``, then cropped; its
pooling pads ``k - 1`` and crops): an even kernel has its odd zero *before* the image, a strided
window starts ``kernel // 2`` before TensorFlow's, a 2x2 pool of 4 values takes ``(x0, max(x1, x2))``,
a strided transposed convolution crops ``kernel // 2`` from the start.
Weights trained that way expect it, so a Theano file's ``'same'`` layers are switched to it on load
(``layer.pad_as_theano()``, see :func:`arignote.layers.convolutional.conv.theano_same_pads` and
:func:`arignote.layers.pooling.theano_pool_pads`; a ``ConvLSTM2D`` cell's
``theano_same_padding``), and saving records it the way Keras does, in the file's ``backend``: a
model with any Theano-padded layer is written as a Theano file (kernels flipped for convolution),
which real Keras 2 on Theano and arignote both read with the same predictions. A layer padding as
TensorFlow in such a model (added after loading) is named in the weights group's
``tensorflow_same_padding`` attribute, which arignote reads and Keras 2 ignores (its backend pads
that layer as Theano: ``save`` warns).

Example::

    >>> from arignote.layers import Conv2D, MaxPooling2D
    >>> conv, pool = Conv2D(1, 2, padding="same", name="c"), MaxPooling2D(padding="same", name="p")
    >>> file_backend([conv, pool])
    ('tensorflow', [])
    >>> conv.pad_as_theano()
    >>> file_backend([conv, pool])
    ('theano', ['p'])
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from arignote.saving.layouts import Origin, _nested, _wrapped, class_name

__all__ = ["apply", "file_backend", "warn_mixed", "TENSORFLOW_PADDED"]

TENSORFLOW_PADDED = "tensorflow_same_padding"  # the weights group's attribute (layer names)

_CONVS = {"Conv1D", "Conv2D", "Conv3D", "SeparableConv1D", "SeparableConv2D", "DepthwiseConv2D",
          "Conv2DTranspose", "Conv3DTranspose"}  # (transposed: the input gradient of 'same', cropped alike)
_POOLS = {f"{kind}Pooling{n}D" for kind in ("Max", "Average") for n in (1, 2, 3)}
_NOTE = "'same' padding as Keras 2's Theano backend padded (even kernels, strides, pooling)"


def _axes(layer: Any, name: str) -> np.ndarray:
    return np.atleast_1d(np.asarray(getattr(layer, name, 1)))


def _even_kernel(layer: Any) -> bool:
    kernel, dilation = _axes(layer, "kernel_size"), _axes(layer, "dilation_rate")
    return bool(np.any((dilation * (kernel - 1) + 1) % 2 == 0))


def _differs(layer: Any) -> bool:
    """Whether Theano's ``'same'`` can differ from TensorFlow's for this layer (any input size)."""
    cls = class_name(layer)
    cell = getattr(layer, "cell", None)
    if hasattr(cell, "theano_same_padding"):  # ConvLSTM2D: its recurrent convolution is always 'same'
        return bool(np.any(_axes(layer, "kernel_size") % 2 == 0))
    if getattr(layer, "padding", None) != "same":
        return False
    strided = bool(np.any(_axes(layer, "strides") != 1))
    if cls in _CONVS:
        return strided or _even_kernel(layer)
    if cls in _POOLS:  # 1 and 3 pad alike (0 and 1 each side); 2 and 4 pad k - 1 before, 5: 3, not 2
        pool = _axes(layer, "pool_size")
        return strided or bool(np.any((pool % 2 == 0) | (pool > 3)))
    return False


def _is_theano(layer: Any) -> bool:
    cell = getattr(layer, "cell", None)
    owner = cell if hasattr(cell, "theano_same_padding") else layer
    return bool(getattr(owner, "theano_same_padding", False))


def _walk(layer: Any) -> list[Any]:
    inner = _wrapped(layer) or _nested(layer)
    return [leaf for sub in inner for leaf in _walk(sub)] if inner is not None else [layer]


def apply(layers: list[Any], origin: Origin, keep: set[str] | frozenset[str] = frozenset()) -> None:
    """Switch the ``'same'`` layers of a model loaded from a Theano file (``origin``) to Theano's
    padding, but for those named in ``keep`` (the file's :data:`TENSORFLOW_PADDED`)."""
    if not origin.flips_kernels:
        return
    for layer in (leaf for top in layers for leaf in _walk(top)):
        if layer.name in keep or not _differs(layer):
            continue
        cell = getattr(layer, "cell", None)
        if hasattr(cell, "theano_same_padding"):
            cell.theano_same_padding = True
            origin.note(_NOTE)
            if layer.padding == "same" and _even_kernel(layer) and np.any(_axes(layer, "strides") != 1):
                origin.note(f"layer '{layer.name}': Theano's 'same' padding of the input convolution "
                            "with an even kernel and strides > 1 is not reproduced (outputs differ at the "
                            "borders)")
        elif class_name(layer).startswith("Separable") and _even_kernel(layer):
            origin.note(f"layer '{layer.name}': Keras 2's Theano backend gives an even-kernel 'same' "
                        "SeparableConv one more row/column per axis than its output shape says; arignote "
                        "pads it as TensorFlow (outputs differ at the borders)")
        else:
            layer.pad_as_theano(True)
            origin.note(_NOTE)


def file_backend(layers: list[Any]) -> tuple[str, list[str]]:
    """``(backend, names)`` to record for ``layers``: ``'theano'`` when any layer pads ``'same'`` as
    Theano (then ``names`` are the layers whose padding differs but pad as TensorFlow), else
    ``'tensorflow'`` (arignote correlates as TensorFlow does)."""
    padded = [(leaf.name, _is_theano(leaf)) for top in layers for leaf in _walk(top) if _differs(leaf)]
    if not any(theano for _, theano in padded):
        return "tensorflow", []
    return "theano", [name for name, theano in padded if not theano]


def warn_mixed(path: str, names: list[str]) -> None:
    """Keras 2 pads every layer as its backend does: the TensorFlow-padded ones of a Theano file
    compute otherwise there (arignote reads them back as they are)."""
    if names:
        warnings.warn(
            f"{path}: layers {names} pad 'same' as TensorFlow in a model whose other layers pad as "
            "Keras 2's Theano backend did; the file is written as a Theano file, which arignote reads back "
            f"exactly, but Keras 2 pads {names} as its own backend does (outputs differ at the borders)",
            stacklevel=3)
