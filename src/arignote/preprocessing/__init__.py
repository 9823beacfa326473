"""Keras 2 ``preprocessing``: ``image`` (``ImageDataGenerator``, ``flow_from_directory``, ``load_img``...),
``sequence`` (``pad_sequences``, ``skipgrams``, ``TimeseriesGenerator``) and ``text`` (``Tokenizer``).

Example::

    >>> from arignote.preprocessing.image import ImageDataGenerator
    >>> ImageDataGenerator(horizontal_flip=True).horizontal_flip
    True
"""

from arignote.preprocessing import image, sequence, text

__all__ = ["image", "sequence", "text"]
