"""Keras 2 ``preprocessing``: ``image.ImageDataGenerator`` for real-time image augmentation.

Example::

    >>> from arignote.preprocessing.image import ImageDataGenerator
    >>> ImageDataGenerator(horizontal_flip=True).horizontal_flip
    True
"""

from arignote.preprocessing import image

__all__ = ["image"]
