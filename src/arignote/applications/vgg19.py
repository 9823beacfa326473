"""VGG19 (Simonyan & Zisserman 2014): VGG16 with four convolutions in blocks 3 to 5 (:mod:`.vgg16`).

Example::

    >>> VGG19(weights=None, include_top=False, input_shape=(32, 32, 3)).output_shape
    (None, 1, 1, 512)
"""

from __future__ import annotations

from typing import Any

from arignote.applications._common import reject_unknown
from arignote.applications.imagenet_utils import decode_predictions
from arignote.applications.vgg16 import build_vgg, preprocess_input
from arignote.models import Model

__all__ = ["VGG19", "preprocess_input", "decode_predictions"]


def VGG19(
    include_top: bool = True,
    weights: Any = "imagenet",
    input_tensor: Any = None,
    input_shape: Any = None,
    pooling: str | None = None,
    classes: int = 1000,
    **kwargs: Any,
) -> Model:
    """VGG19 (143,667,240 parameters with the top), Keras 2's arguments and defaults."""
    reject_unknown("VGG19", kwargs)
    return build_vgg("vgg19", include_top, weights, input_tensor, input_shape, pooling, classes)
