"""arignote.datasets: Keras's datasets from their official files, plus offline ones.

``mnist``, ``fashion_mnist`` and ``cifar10`` have Keras's ``load_data()`` (same shapes and dtypes),
read the official file formats, look in ``ARIGNOTE_DATA``, ``~/.arignote/datasets``,
``~/.keras/datasets`` and Debian's ``/usr/share/datasets`` before downloading, and verify the
official hashes. ``cifar100`` (``label_mode``), ``imdb`` and ``reuters`` (``num_words``, ``skip_top``,
``maxlen``, ``seed``, ``start_char``, ``oov_char``, ``index_from``, ``get_word_index``) and
``boston_housing`` go through Keras's ``get_file`` (:mod:`arignote.utils.data_utils`) as Keras 2 did.
``digits`` is UCI's real 8x8 digits, shipped in the package; :func:`synthetic` makes learnable data of any
shape without any file.

Example::

    >>> from arignote.datasets import digits, synthetic
    >>> (x_train, y_train), _ = digits.load_data()
    >>> x, y = synthetic(shape=(28, 28, 1), classes=10, samples=64)
"""

from arignote._lazy import lazy_namespace
from arignote.datasets._files import DatasetError, search_dirs
from arignote.datasets.synthetic import synthetic

__all__ = ["DatasetError", "boston_housing", "cifar", "cifar10", "cifar100", "digits", "fashion_mnist",
           "imdb", "mnist", "reuters", "search_dirs", "synthetic"]

# each dataset module loads on first use (``datasets.mnist``, ``from arignote.datasets import imdb``)
__getattr__, __dir__ = lazy_namespace(__name__, {
    m: f"{__name__}.{m}"
    for m in ("boston_housing", "cifar", "cifar10", "cifar100", "digits", "fashion_mnist", "imdb", "mnist",
              "reuters")
}, globals())
