"""Keras 2's ``keras.applications``: ImageNet networks with their layer names and official weight files.

Each family lives in the module Keras 2 had (``arignote.applications.vgg16``, ``.resnet50``,
``.inception_v3``, ``.xception``, ``.mobilenet``, ``.mobilenet_v2``, ``.densenet``, ``.nasnet``,
``.inception_resnet_v2``, ``.resnet``, ``.resnet_v2``) with its ``preprocess_input`` and
``decode_predictions``. As in Keras 2.3.1, ``applications.ResNet50`` is the older ``resnet50``
module's network; ``applications.resnet.ResNet50`` is the one that goes with ResNet101 and ResNet152.
``weights='imagenet'`` loads the HDF5 file Keras 2 fetched (same name and hash) from
``~/.keras/models``; offline, a missing file is one error naming it and where to put it.

Example::

    >>> from arignote.applications import VGG16
    >>> conv_base = VGG16(weights=None, include_top=False, input_shape=(150, 150, 3))
    >>> conv_base.output_shape
    (None, 4, 4, 512)
"""

from arignote.applications.densenet import DenseNet121, DenseNet169, DenseNet201
from arignote.applications.inception_resnet_v2 import InceptionResNetV2
from arignote.applications.inception_v3 import InceptionV3
from arignote.applications.mobilenet import MobileNet
from arignote.applications.mobilenet_v2 import MobileNetV2
from arignote.applications.nasnet import NASNetLarge, NASNetMobile
from arignote.applications.resnet import ResNet101, ResNet152
from arignote.applications.resnet50 import ResNet50
from arignote.applications.resnet_v2 import ResNet50V2, ResNet101V2, ResNet152V2
from arignote.applications.vgg16 import VGG16
from arignote.applications.vgg19 import VGG19
from arignote.applications.xception import Xception

__all__ = [
    "VGG16",
    "VGG19",
    "ResNet50",
    "InceptionV3",
    "Xception",
    "MobileNet",
    "MobileNetV2",
    "DenseNet121",
    "DenseNet169",
    "DenseNet201",
    "NASNetMobile",
    "NASNetLarge",
    "InceptionResNetV2",
    "ResNet101",
    "ResNet152",
    "ResNet50V2",
    "ResNet101V2",
    "ResNet152V2",
]
